package retry_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quietwire/retry"
)

// retryTransport is an http.RoundTripper that retries through retry.Do,
// for clients a program does not write itself, such as an SDK that takes
// an *http.Client:
//
//	client := &http.Client{Transport: &retryTransport{Policy: p}}
//
// It retries a network error, a 408, a 429 and a 5xx, no sooner than
// Retry-After asks, and only a request that is safe to send again: one
// whose method is idempotent or that has an Idempotency-Key, and whose
// body, if any, GetBody can rebuild (http.NewRequest sets GetBody for a
// bytes.Reader, a bytes.Buffer or a strings.Reader). It sends any other
// request once, such as one with a body and no GetBody: every inbound
// request that an httputil.ReverseProxy forwards, unless replayable sets
// it. Before each retry it reads at most 64 KiB of the response it
// retries, and closes it. When it gives up on a status, at a
// deadline too, it returns the last response, unread, as a client without
// retries would: once ctx's deadline has passed, reading its body fails
// with ctx's error. When ctx is cancelled, it returns Do's error.
//
// Policy must leave AttemptTimeout and Timeout 0: the caller reads the
// body after RoundTrip returns, and Do cancels the attempt's ctx when fn
// returns. Bound the whole exchange with http.Client.Timeout or the
// request's ctx instead.
//
// MaxAttempts counts Do's attempts, not the requests that reach the
// server: net/http's Transport itself sends a request again, once, when a
// reused connection breaks before the answer, if the request is a GET,
// HEAD, OPTIONS or TRACE or has an Idempotency-Key, and its body, if any,
// can be rebuilt. So even with MaxAttempts 1 such a request may reach the
// server twice; one that must reach it at most once has another method
// and no Idempotency-Key.
type retryTransport struct {
	Base   http.RoundTripper // nil means http.DefaultTransport
	Policy retry.Policy
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if t.Policy.AttemptTimeout != 0 || t.Policy.Timeout != 0 {
		if req.Body != nil {
			req.Body.Close() // a RoundTripper closes the body, even on an error
		}
		return nil, errors.New("retryTransport: Policy.AttemptTimeout and Timeout must be 0")
	}
	if !resendable(req) {
		return base.RoundTrip(req)
	}
	var last *http.Response // the last attempt's response, if Do may retry it
	sent := 0
	resp, err := retry.DoValue(req.Context(), func(ctx context.Context) (*http.Response, error) {
		if last != nil { // Do retries it: drain it, so that its connection may serve this attempt
			io.CopyN(io.Discard, last.Body, 64<<10) // all of a short body: its connection serves
			last.Body.Close()
			last = nil // only the last attempt's response may be returned
		}
		sent++
		r := req.Clone(ctx)
		if sent > 1 && req.GetBody != nil {
			body, err := req.GetBody() // the first attempt consumed req.Body
			if err != nil {
				return nil, retry.Permanent(err)
			}
			r.Body = body
		}
		resp, err := base.RoundTrip(r)
		if err != nil {
			return nil, err // a network error: retried
		}
		if code := resp.StatusCode; code != 408 && code != 429 && code < 500 {
			return resp, nil // a success, or a status that another attempt would not change
		}
		last = resp // left unread: the caller gets it if Do gives up
		wait, _ := retry.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		return nil, retry.After(wait, errors.New(resp.Status))
	}, t.Policy)
	var re *retry.RetryExhausted
	if last != nil { // Do gave up after a status it retries
		if !errors.As(err, &re) || re.Reason != retry.Canceled {
			return last, nil // at a deadline too: whether Do or ctx's timer saw it first
		}
		last.Body.Close()
	}
	if sent == 0 && req.Body != nil {
		req.Body.Close() // Do did not call fn: a RoundTripper closes the body, even on an error
	}
	return resp, err
}

// resendable reports whether req may be sent more than once: its method
// is idempotent (RFC 9110, section 9.2.2) or it has an Idempotency-Key,
// and it has no body or one that GetBody can rebuild.
func resendable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace,
		http.MethodPut, http.MethodDelete:
		return true
	}
	return req.Header.Get("Idempotency-Key") != ""
}

var _ http.RoundTripper = (*retryTransport)(nil)

// replayable lets retryTransport send again the body of an inbound request,
// such as one that an httputil.ReverseProxy forwards: it keeps up to limit
// bytes in memory and sets GetBody. A longer body is sent once.
func replayable(req *http.Request, limit int64) {
	if req.Body == nil || req.Body == http.NoBody || req.GetBody != nil {
		return
	}
	// Read a byte more than limit, to see a longer body; the server closes req.Body.
	buf, err := io.ReadAll(io.LimitReader(req.Body, min(limit, math.MaxInt64-1)+1))
	req.Body = io.NopCloser(io.MultiReader(bytes.NewReader(buf), req.Body))
	if err == nil && int64(len(buf)) <= limit {
		req.GetBody = func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(buf)), nil
		}
	}
}

// An http.Client whose Transport retries: a POST with an Idempotency-Key is
// sent again, its whole body each time; a POST without one, or with a body
// that cannot be rebuilt, is sent once; a GET that keeps failing returns
// its last response, as it would without retries.
func Example_roundTripper() {
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		hits[r.URL.Path]++
		n := hits[r.URL.Path]
		mu.Unlock()
		fmt.Printf("server: %s %s %q\n", r.Method, r.URL.Path, body)
		if r.URL.Path == "/down" || n == 1 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "done")
	}))
	defer srv.Close()

	client := &http.Client{Transport: &retryTransport{Policy: retry.Policy{
		MaxAttempts: 3,
		OnRetry: func(_ context.Context, attempt int, err error, wait time.Duration) {
			fmt.Printf("  attempt %d: %v; retrying in %v\n", attempt, err, wait)
		},
		// no real waits here
		Sleeper: retry.SleeperFunc(func(context.Context, time.Duration) error { return nil }),
	}}}
	show := func(req *http.Request) {
		resp, err := client.Do(req)
		if err != nil {
			fmt.Println("  error:", err)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		fmt.Printf("  = %s %q\n", resp.Status, body)
	}

	keyed, _ := http.NewRequest(http.MethodPost, srv.URL+"/keyed", strings.NewReader("order 7"))
	keyed.Header.Set("Idempotency-Key", "order-7")
	show(keyed)
	unkeyed, _ := http.NewRequest(http.MethodPost, srv.URL+"/unkeyed", strings.NewReader("order 8"))
	show(unkeyed)
	chunk := io.MultiReader(strings.NewReader("chunk")) // a body that GetBody cannot rebuild
	stream, _ := http.NewRequest(http.MethodPut, srv.URL+"/stream", chunk)
	show(stream)
	down, _ := http.NewRequest(http.MethodGet, srv.URL+"/down", nil)
	show(down)
	// Output:
	// server: POST /keyed "order 7"
	//   attempt 1: 503 Service Unavailable; retrying in 1s
	// server: POST /keyed "order 7"
	//   = 200 OK "done"
	// server: POST /unkeyed "order 8"
	//   = 503 Service Unavailable "busy\n"
	// server: PUT /stream "chunk"
	//   = 503 Service Unavailable "busy\n"
	// server: GET /down ""
	//   attempt 1: 503 Service Unavailable; retrying in 1s
	// server: GET /down ""
	//   attempt 2: 503 Service Unavailable; retrying in 1s
	// server: GET /down ""
	//   = 503 Service Unavailable "busy\n"
}

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
