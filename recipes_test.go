package retry_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quietwire/retry"
)

// TestRoundTripper checks the rows of the README's table after the first,
// and that retryTransport drains a short response that it retries, so
// that one connection serves every attempt.
func TestRoundTripper(t *testing.T) {
	var conns, resets atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/reset" && resets.Add(1) > 2 {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close() // a network error, after two 503s
			return
		}
		if r.URL.Path == "/hang" { // a 503 whose body never ends
			w.WriteHeader(http.StatusServiceUnavailable)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		w.Header().Set("Retry-After", "0")
		http.Error(w, strings.Repeat("busy ", 1000), http.StatusServiceUnavailable)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	untilDone := retry.SleeperFunc(func(ctx context.Context, _ time.Duration) error { <-ctx.Done(); return ctx.Err() })
	for _, tt := range []struct {
		name, path string
		ctx        string // "": Background; "timeout": 250ms; "done": cancelled at once; "cancel": by OnRetry
		p          retry.Policy
		want       string // RoundTrip's error, or the response and what reading its body gave
		conns      int32  // if not 0
		unsent     bool   // RoundTrip must close the request's body, which it does not send
	}{
		{"drains what it retries", "/", "", retry.Policy{MaxAttempts: 4}, "503, 5001 bytes, <nil>", 1, false},
		{"the last attempt's error", "/reset", "", retry.Policy{MaxAttempts: 3}, "max attempts reached after 3", 0, false},
		{"request ctx cancelled", "/", "cancel", retry.Policy{}, "canceled after 1", 0, false},
		{"next wait past ctx's deadline", "/hang", "timeout", retry.Policy{BaseDelay: time.Hour}, "503, 0 bytes, context deadline exceeded", 0, false},
		{"ctx's timer ends the wait", "/hang", "timeout", retry.Policy{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond, Sleeper: untilDone},
			"503, 0 bytes, context deadline exceeded", 0, false},
		{"AttemptTimeout set", "/", "", retry.Policy{AttemptTimeout: time.Second}, "retryTransport: Policy.AttemptTimeout and Timeout must be 0", 0, true},
		{"invalid Policy", "/", "", retry.Policy{MaxAttempts: -1}, "retry: invalid policy", 0, true},
		{"ctx done", "/", "done", retry.Policy{}, "canceled after 0", 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			switch tt.ctx {
			case "timeout":
				ctx, cancel = context.WithTimeout(ctx, 250*time.Millisecond)
				defer cancel()
			case "done":
				cancel()
			case "cancel":
				tt.p.OnRetry = func(context.Context, int, error, time.Duration) { cancel() }
			}
			body := &bodyRecorder{Reader: strings.NewReader("x")}
			req, _ := http.NewRequestWithContext(ctx, http.MethodPut, srv.URL+tt.path, body)
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("x")), nil }
			if tt.p.Sleeper == nil {
				tt.p.Sleeper = noWait
			}
			conns.Store(0)
			resp, err := (&retryTransport{Base: srv.Client().Transport, Policy: tt.p}).RoundTrip(req)
			var re *retry.RetryExhausted
			got := fmt.Sprint(err)
			switch {
			case errors.As(err, &re):
				got = fmt.Sprintf("%v after %d", re.Reason, re.Attempts)
			case err == nil:
				if tt.ctx == "timeout" {
					<-ctx.Done()
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				got = fmt.Sprintf("%d, %d bytes, %v", resp.StatusCode, len(b), err)
			}
			if !strings.HasPrefix(got, tt.want) || tt.unsent && !body.closed {
				t.Errorf("RoundTrip() = %q, body closed %v; want %q, and closed if unsent", got, body.closed, tt.want)
			}
			if n := conns.Load(); tt.conns != 0 && n != tt.conns {
				t.Errorf("RoundTrip() used %d connections; want %d", n, tt.conns)
			}
		})
	}
}

// TestRoundTripperReplay: with MaxAttempts 1, net/http's Transport still
// sends a GET, or a POST with an Idempotency-Key, a second time when the
// reused connection breaks after the server read the request; a POST
// without the key reaches the server once, as retryTransport's doc says.
func TestRoundTripperReplay(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/break" && hits.Add(1) == 1 {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close() // the server has the request; the client gets no answer
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	for _, tt := range []struct {
		name, method, key string
		hits              int32
		want              string // the response's status, or "error"
	}{
		{"GET", http.MethodGet, "", 2, "200 OK"},
		{"POST with an Idempotency-Key", http.MethodPost, "order-7", 2, "200 OK"},
		{"POST", http.MethodPost, "", 1, "error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: &retryTransport{Base: tr, Policy: retry.Policy{MaxAttempts: 1}}}
			resp, err := client.Get(srv.URL + "/warm") // leaves an idle connection for the next request
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()

			hits.Store(0)
			var body io.Reader = http.NoBody
			if tt.method == http.MethodPost {
				body = strings.NewReader("order 7") // GetBody can rebuild it
			}
			req, _ := http.NewRequest(tt.method, srv.URL+"/break", body)
			if tt.key != "" {
				req.Header.Set("Idempotency-Key", tt.key)
			}
			got := "error"
			if resp, err := client.Do(req); err == nil {
				got = resp.Status
				resp.Body.Close()
			}
			if got != tt.want || hits.Load() != tt.hits {
				t.Errorf("%s with MaxAttempts 1: %s, %d requests reached the server; want %s, %d", tt.method, got, hits.Load(), tt.want, tt.hits)
			}
		})
	}
}

// result is body, or err's message.
func result(body []byte, err error) string {
	if err != nil {
		return err.Error()
	}
	return string(body)
}

// openBodies is a RoundTripper that counts the response bodies it hands out
// and have not been closed.
type openBodies struct {
	base http.RoundTripper
	open atomic.Int32
}

func (o *openBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := o.base.RoundTrip(req)
	if err == nil {
		o.open.Add(1)
		resp.Body = &onClose{ReadCloser: resp.Body, close: func() { o.open.Add(-1) }}
	}
	return resp, err
}

// onClose calls close once, when the body is first closed.
type onClose struct {
	io.ReadCloser
	close func()
	once  sync.Once
}

func (c *onClose) Close() error { c.once.Do(c.close); return c.ReadCloser.Close() }

// TestReverseProxyRetries: an httputil.ReverseProxy whose Transport is
// retryTransport, in front of a backend that fails twice, sends a 1 MiB PUT
// again, whole, once replayable has set its GetBody; a POST without an
// Idempotency-Key, once; and leaves no response body open.
func TestReverseProxyRetries(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	var mu sync.Mutex
	var got [][]byte // what the backend read, request by request
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, b)
		n := len(got)
		mu.Unlock()
		if n%3 != 0 { // fails twice, then succeeds
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "stored")
	}))
	defer backend.Close()
	target, _ := url.Parse(backend.URL)
	transport := &openBodies{base: backend.Client().Transport}
	proxy := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport: &retryTransport{Base: transport, Policy: retry.Policy{Sleeper: noWait}},
	}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		replayable(r, 2<<20)
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	for _, tt := range []struct {
		method   string
		status   int
		requests int
	}{
		{http.MethodPut, http.StatusOK, 3},
		{http.MethodPost, http.StatusServiceUnavailable, 1},
	} {
		got = nil
		req, _ := http.NewRequest(tt.method, front.URL+"/object", io.MultiReader(bytes.NewReader(body))) // no GetBody
		resp, err := front.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		mu.Lock()
		intact := len(got) > 0 && bytes.Equal(got[len(got)-1], body)
		if resp.StatusCode != tt.status || len(got) != tt.requests || !intact {
			t.Errorf("%s through the proxy: %d after %d requests, the last body intact %v; want %d after %d, intact",
				tt.method, resp.StatusCode, len(got), intact, tt.status, tt.requests)
		}
		mu.Unlock()
	}
	front.Close() // waits for the proxy's handlers to return
	if n := transport.open.Load(); n != 0 {
		t.Errorf("response bodies left open: %d; want 0", n)
	}
}

// TestGetFailsFast: a URL without a scheme or a host, and a server whose
// certificate the client does not trust, fail after one attempt, with no
// request served.
func TestGetFailsFast(t *testing.T) {
	var served atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served.Add(1) }))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes that the client breaks off
	srv.StartTLS()
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "https://")
	for _, url := range []string{"//" + host + "/x", "https:///x", host + "/x", srv.URL + "/x"} {
		attempts := 0
		p := retry.Policy{Sleeper: noWait, OnDone: func(_ context.Context, n int, _ time.Duration, _ error) { attempts = n }}
		_, err := getBody(context.Background(), &http.Client{}, url, p) // a client that does not trust srv
		if _, isRE := err.(*retry.RetryExhausted); isRE || err == nil || attempts != 1 || served.Load() != 0 {
			t.Errorf("getBody(%q) = %v after %d attempts, %d requests served; want fn's error after 1, 0 served",
				url, err, attempts, served.Load())
		}
	}
}

// TestHTTPReadsAtMostMaxDrain: each client reads at most maxDrain bytes of
// an 8 MiB body that it retries or refuses, and closes it; it reads a 2xx
// body whole, and the transport leaves the response it returns unread.
func TestHTTPReadsAtMostMaxDrain(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 8<<20)
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/missing":
			w.WriteHeader(http.StatusNotFound)
		case r.URL.Path == "/down" || hits.Add(1) <= 2:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			fmt.Fprint(w, "ok")
			return
		}
		w.Write(big)
	}))
	defer srv.Close()
	p := retry.Policy{MaxAttempts: 3, Sleeper: noWait}
	get := func(c *http.Client, url string) string { return result(getBody(context.Background(), c, url, p)) }
	post := func(c *http.Client, url string) string {
		return result(postOrder(context.Background(), c, url, "k", []byte("order"), p))
	}
	transport := func(c *http.Client, url string) string {
		c.Transport = &retryTransport{Base: c.Transport, Policy: p}
		resp, err := c.Get(url)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return fmt.Sprintf("%s, %d bytes, %v", resp.Status, len(body), err)
	}
	for _, tt := range []struct {
		name, path string
		call       func(c *http.Client, url string) string
		want       string
		reads      []int // of each response's body
	}{
		{"getBody", "/", get, "ok", []int{maxDrain, maxDrain, 2}},
		{"getBody/refused", "/missing", get, "404 Not Found", []int{maxDrain}},
		{"postOrder", "/", post, "ok", []int{maxDrain, maxDrain, 2}},
		{"retryTransport", "/", transport, "200 OK, 2 bytes, <nil>", []int{maxDrain, maxDrain, 2}},
		{"retryTransport/gave up", "/down", transport, "503 Service Unavailable, 8388608 bytes, <nil>", []int{maxDrain, maxDrain, 8 << 20}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hits.Store(0)
			var bodies []*bodyRecorder
			c := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				resp, err := srv.Client().Transport.RoundTrip(r)
				if err == nil {
					bodies = append(bodies, &bodyRecorder{Reader: resp.Body})
					resp.Body = bodies[len(bodies)-1]
				}
				return resp, err
			})}
			if got := tt.call(c, srv.URL+tt.path); got != tt.want {
				t.Errorf("got %q; want %q", got, tt.want)
			}
			var reads []int
			for i, b := range bodies {
				reads = append(reads, b.read)
				if !b.closed {
					t.Errorf("response %d: body not closed", i+1)
				}
			}
			if !slices.Equal(reads, tt.reads) {
				t.Errorf("bytes read of each body: %v; want %v", reads, tt.reads)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// bodyRecorder is a body that counts the bytes read from it and records
// whether it was closed.
type bodyRecorder struct {
	io.Reader
	read   int
	closed bool
}

func (b *bodyRecorder) Read(p []byte) (int, error) {
	n, err := b.Reader.Read(p)
	b.read += n
	return n, err
}

func (b *bodyRecorder) Close() error {
	b.closed = true
	if c, ok := b.Reader.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// The README's observability recipe, as written, makes no allocation for
// a call that succeeds.
func TestObserveRecipeAllocatesNothingOnSuccess(t *testing.T) {
	if info, _ := debug.ReadBuildInfo(); info != nil && slices.Contains(info.Settings, debug.BuildSetting{Key: "-race", Value: "true"}) {
		t.Skip("the race detector allocates on its own")
	}
	m := newCallSite()
	p := instrument(retry.Policy{}, m, slog.New(requestIDHandler{slog.NewTextHandler(io.Discard, nil)}))
	ctx := withRequestID(context.Background(), "r1")
	succeed := func(context.Context) error { return nil }
	if got := testing.AllocsPerRun(100, func() { retry.Do(ctx, succeed, p) }); got != 0 {
		t.Errorf("Do() with the recipe's hooks, success: allocations = %v; want 0", got)
	}
	if got, want := m.outcomes.Get("success_first_try").String(), "101"; got != want {
		t.Errorf(`outcomes["success_first_try"] = %s; want %s`, got, want)
	}
}
