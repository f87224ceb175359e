package retry_test

import (
	"bytes"
	"cmp"
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
// bytes.Reader, a bytes.Buffer or a strings.Reader). Before each retry it
// reads at most 64 KiB of the response it retries, and closes it. When it
// gives up on a status, at a deadline too, it returns the last response,
// unread, as a client without retries would: once ctx's deadline has
// passed, reading its body fails with ctx's error. When ctx is cancelled,
// it returns Do's error.
//
// It sends any other request once, such as a POST without an
// Idempotency-Key, or one with a body and no GetBody (every inbound request
// that an httputil.ReverseProxy forwards, unless replayable sets it), and
// hides its GetBody from net/http.
//
// net/http's Transport itself sends a request again, once, when a reused
// connection breaks before the answer, if it is a GET, HEAD, OPTIONS or
// TRACE or has an Idempotency-Key or X-Idempotency-Key header, even an
// empty one, and its body, if any, can be rebuilt with GetBody. So a
// request with a body that retryTransport sends once reaches the server at
// most once; one without a body that has such a header may reach it twice,
// and so may one that it retries, with MaxAttempts 1 too: MaxAttempts
// counts Do's attempts, not requests.
//
// Policy must leave AttemptTimeout and Timeout 0: the caller reads the
// body after RoundTrip returns, and Do cancels the attempt's ctx when fn
// returns. Bound the whole exchange with http.Client.Timeout or the
// request's ctx instead.
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
		once := req.Clone(req.Context())
		once.GetBody = nil // so that net/http does not send its body again
		return base.RoundTrip(once)
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
// sent again, its whole body each time; a POST without one is sent once; a
// GET that keeps failing returns its last response, as it would without
// retries.
func Example_roundTripper() {
	var seen sync.Map // the paths that had a request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Printf("server: %s %s %q\n", r.Method, r.URL.Path, body)
		if _, again := seen.LoadOrStore(r.URL.Path, true); !again || r.URL.Path == "/down" {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "done")
	}))
	defer srv.Close()

	client := &http.Client{Transport: &retryTransport{Policy: retry.Policy{
		MaxAttempts: 2,
		Sleeper: retry.SleeperFunc(func(ctx context.Context, wait time.Duration) error {
			fmt.Println("  waits", wait) // and returns at once; real code leaves Sleeper nil
			return ctx.Err()
		}),
	}}}
	show := func(req *http.Request) {
		resp, _ := client.Do(req)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("  = %s %q\n", resp.Status, body)
	}

	keyed, _ := http.NewRequest(http.MethodPost, srv.URL+"/keyed", strings.NewReader("order 7"))
	keyed.Header.Set("Idempotency-Key", "order-7")
	show(keyed)
	unkeyed, _ := http.NewRequest(http.MethodPost, srv.URL+"/unkeyed", strings.NewReader("order 8"))
	show(unkeyed)
	down, _ := http.NewRequest(http.MethodGet, srv.URL+"/down", nil)
	show(down)
	// Output:
	// server: POST /keyed "order 7"
	//   waits 1s
	// server: POST /keyed "order 7"
	//   = 200 OK "done"
	// server: POST /unkeyed "order 8"
	//   = 503 Service Unavailable "busy\n"
	// server: GET /down ""
	//   waits 1s
	// server: GET /down ""
	//   = 503 Service Unavailable "busy\n"
}

// TestRoundTripper checks retryTransport's doc, a row per claim; /break
// breaks a reused connection after the server read the request.
func TestRoundTripper(t *testing.T) {
	var resets, breaks atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch {
		case r.URL.Path == "/reset" && resets.Add(1) > 2, r.URL.Path == "/break" && breaks.Add(1) == 1:
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close() // the server has the request; the client gets no answer
		case r.URL.Path == "/hang": // a 503 whose body never ends
			w.WriteHeader(http.StatusServiceUnavailable)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		default:
			w.Header().Set("Retry-After", "0")
			http.Error(w, strings.Repeat("busy ", 1000), http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	for _, tt := range []struct {
		name, method, path string
		key                string        // the header that carries the request's idempotency key, if any
		bodiless           bool          // the request has no body
		timeout            time.Duration // of the request's ctx; a minute if 0
		cancel             string        // when the request's ctx is cancelled: "at once", "in OnRetry", or ""
		p                  retry.Policy
		want               string // RoundTrip's error, or the response and what reading its body gave
		conns, sent        int32  // if not 0: the connections opened, and the requests to /break
		unsent             bool   // RoundTrip must close the request's body, which it does not send
	}{
		{name: "drains what it retries", path: "/", p: retry.Policy{MaxAttempts: 4}, want: "503, 5001 bytes, <nil>", conns: 1},
		{name: "the last attempt's error", path: "/reset", p: retry.Policy{MaxAttempts: 3}, want: "max attempts reached after 3"},
		{name: "request ctx cancelled", path: "/", cancel: "in OnRetry", want: "canceled after 1"},
		{name: "next wait past ctx's deadline", path: "/hang", timeout: 250 * time.Millisecond, p: retry.Policy{BaseDelay: time.Hour},
			want: "503, 0 bytes, context deadline exceeded"},
		{name: "AttemptTimeout set", path: "/", p: retry.Policy{AttemptTimeout: time.Second},
			want: "error: retryTransport: Policy.AttemptTimeout and Timeout must be 0", unsent: true},
		{name: "ctx done", path: "/", cancel: "at once", want: "canceled after 0", unsent: true},
		{name: "POST with an Idempotency-Key, sent again by net/http", method: "POST", path: "/break", key: "Idempotency-Key",
			p: retry.Policy{MaxAttempts: 1}, want: "503, 5001 bytes", sent: 2},
		{name: "POST with an X-Idempotency-Key, sent once", method: "POST", path: "/break", key: "X-Idempotency-Key",
			want: "error: ", sent: 1},
		{name: "POST with an X-Idempotency-Key and no body, sent again by net/http", method: "POST", path: "/break",
			key: "X-Idempotency-Key", bodiless: true, want: "503, 5001 bytes", sent: 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(tt.timeout, time.Minute))
			defer cancel()
			if tt.cancel == "at once" {
				cancel()
			} else if tt.cancel == "in OnRetry" {
				tt.p.OnRetry = func(context.Context, int, error, time.Duration) { cancel() }
			}
			breaks.Store(0)
			var conns atomic.Int32
			tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				conns.Add(1)
				return (&net.Dialer{}).DialContext(ctx, network, addr)
			}}
			defer tr.CloseIdleConnections()
			if warm, err := (&http.Client{Transport: tr}).Get(srv.URL + "/warm"); err == nil {
				io.Copy(io.Discard, warm.Body) // which leaves an idle connection for the request
				warm.Body.Close()
			}
			body := &bodyRecorder{ReadCloser: io.NopCloser(strings.NewReader("x"))}
			req, _ := http.NewRequestWithContext(ctx, cmp.Or(tt.method, http.MethodPut), srv.URL+tt.path, body)
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("x")), nil }
			if tt.key != "" {
				req.Header.Set(tt.key, "order-7")
			}
			if tt.bodiless {
				req.Body, req.GetBody = nil, nil
			}
			tt.p.Sleeper = noWait
			resp, err := (&retryTransport{Base: tr, Policy: tt.p}).RoundTrip(req)
			var re *retry.RetryExhausted
			got := fmt.Sprint("error: ", err)
			switch {
			case errors.As(err, &re):
				got = fmt.Sprintf("%v after %d", re.Reason, re.Attempts)
			case err == nil: // a /hang body ends with the ctx
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				got = fmt.Sprintf("%d, %d bytes, %v", resp.StatusCode, len(b), err)
			}
			if !strings.HasPrefix(got, tt.want) || tt.unsent && !body.closed {
				t.Errorf("RoundTrip() = %q, body closed %v; want %q, and closed if unsent", got, body.closed, tt.want)
			}
			if c, n := conns.Load(), breaks.Load(); tt.conns != 0 && c != tt.conns || tt.sent != 0 && n != tt.sent {
				t.Errorf("RoundTrip() opened %d connections, sent %d requests to /break; want %d, %d (0: any)", c, n, tt.conns, tt.sent)
			}
		})
	}
}

// TestReverseProxyRetries: an httputil.ReverseProxy whose Transport is
// retryTransport, in front of a backend that fails twice, sends a 1 MiB PUT
// again, whole, once replayable has set its GetBody; a 3 MiB PUT, above
// replayable's limit, and a POST without an Idempotency-Key, once.
func TestReverseProxyRetries(t *testing.T) {
	var requests atomic.Int32
	var last atomic.Pointer[[]byte] // the body of the last request that the backend read
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		last.Store(&b)
		if requests.Add(1)%3 != 0 { // fails twice, then succeeds
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "stored")
	}))
	defer backend.Close()
	target, _ := url.Parse(backend.URL)
	proxy := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport: &retryTransport{Base: backend.Client().Transport, Policy: retry.Policy{Sleeper: noWait}},
	}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		replayable(r, 2<<20)
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	for _, tt := range []struct {
		method                 string
		size, status, requests int
	}{
		{http.MethodPut, 1 << 20, http.StatusOK, 3},
		{http.MethodPut, 3 << 20, http.StatusServiceUnavailable, 1},
		{http.MethodPost, 1 << 20, http.StatusServiceUnavailable, 1},
	} {
		requests.Store(0)
		body := bytes.Repeat([]byte("0123456789abcdef"), tt.size/16)
		req, _ := http.NewRequest(tt.method, front.URL+"/object", io.MultiReader(bytes.NewReader(body))) // no GetBody
		resp, err := front.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		n, intact := int(requests.Load()), bytes.Equal(*last.Load(), body)
		if resp.StatusCode != tt.status || n != tt.requests || !intact {
			t.Errorf("%s of %d bytes through the proxy: %d after %d requests, the last body intact %v; want %d after %d, intact",
				tt.method, tt.size, resp.StatusCode, n, intact, tt.status, tt.requests)
		}
	}
}
