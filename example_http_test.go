package retry_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quietwire/retry"
)

// httpCall is an HTTP request that Do can send again: each attempt builds
// the request anew from these fields, body included.
type httpCall struct {
	client      *http.Client
	method, url string
	header      http.Header // such as an Idempotency-Key
	body        []byte
	now         func() time.Time // time.Now, or a fake clock in tests
}

// attempt sends the request once and returns the response body, read in
// full, for retry.DoValue(ctx, c.attempt, p). Do retries its error unless
// it is marked Permanent: a 4xx other than 408 and 429, or any failure of
// a request that is not idempotent once the server may have it.
func (c *httpCall) attempt(ctx context.Context) ([]byte, error) {
	var reached atomic.Bool // the server may have the request: it was written, or answered
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest:         func(httptrace.WroteRequestInfo) { reached.Store(true) },
		GotFirstResponseByte: func() { reached.Store(true) },
	})
	req, err := http.NewRequestWithContext(ctx, c.method, c.url, bytes.NewReader(c.body))
	if err != nil {
		return nil, retry.Permanent(err) // a bad method or URL
	}
	maps.Copy(req.Header, c.header)
	body, err := c.send(req)
	status, _ := err.(*statusError)
	switch {
	case err == nil:
		return body, nil
	case reached.Load() && !idempotent(req): // the server may have acted on it
		return nil, retry.Permanent(err)
	case status != nil && status.code < 500 && status.code != 408 && status.code != 429:
		return nil, retry.Permanent(err) // the same request would fail the same way
	}
	return nil, err // a network error or a timeout, even mid-body; a 408, 429 or 5xx
}

// send sends req and returns the response body, read in full and closed,
// or a *statusError for a status of 400 or more.
func (c *httpCall) send(req *http.Request) ([]byte, error) {
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body) // a reset mid-body fails this attempt
	if resp.StatusCode >= 400 {
		after := parseRetryAfter(resp.Header.Get("Retry-After"), c.now())
		return nil, &statusError{resp.StatusCode, after}
	}
	return body, err
}

// idempotent reports whether sending req twice does what sending it once
// does: its method says so (RFC 9110, 9.2.2), or it has an Idempotency-Key
// by which the server recognises a repeat.
func idempotent(req *http.Request) bool {
	switch req.Method {
	case "GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE":
		return true
	}
	return req.Header.Get("Idempotency-Key") != ""
}

// statusError is a response whose status code says the request failed.
type statusError struct {
	code  int
	after time.Duration // the wait that Retry-After asks for; 0 if none
}

func (e *statusError) Error() string {
	return strconv.Itoa(e.code) + " " + http.StatusText(e.code)
}

// RetryAfter is the least wait before the next attempt: Do never calls
// sooner, and gives up at once if it is longer than Policy.MaxDelay.
func (e *statusError) RetryAfter() time.Duration { return e.after }

// parseRetryAfter returns the wait that a Retry-After header asks for, as
// delay-seconds or as an HTTP-date, or 0 if it is empty, invalid or past.
func parseRetryAfter(header string, now time.Time) time.Duration {
	if secs, err := strconv.ParseUint(header, 10, 32); err == nil || errors.Is(err, strconv.ErrRange) {
		return time.Duration(secs) * time.Second // too large: 1<<32-1 seconds, no overflow
	}
	if date, err := http.ParseTime(header); err == nil {
		return max(date.Sub(now), 0)
	}
	return 0
}

// A GET retried on a 503 and a 429, each with a Retry-After header: the
// first in seconds, the second an HTTP-date. Each wait is the server's.
func Example_http() {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch hits.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusServiceUnavailable)
		case 2:
			retryAt := time.Date(2026, 12, 2, 12, 0, 5, 0, time.UTC) // 3s after the client's clock, below
			w.Header().Set("Retry-After", retryAt.Format(http.TimeFormat))
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			fmt.Fprint(w, "hello")
		}
	}))
	defer srv.Close()

	ft := &fakeTime{now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	p := retry.Policy{
		MaxDelay:       10 * time.Second, // and no hint is trusted beyond it
		AttemptTimeout: 5 * time.Second,
		Jitter:         retry.FullJitter,
		OnRetry: func(_ context.Context, attempt int, err error, wait time.Duration) {
			fmt.Printf("attempt %d: %v; retrying in %v\n", attempt, err, wait)
		},
		Clock:   ft, // fake time keeps the example instant; real code leaves
		Sleeper: ft, // Clock and Sleeper nil
	}
	c := &httpCall{client: http.DefaultClient, method: http.MethodGet, url: srv.URL, now: ft.Now}
	body, err := retry.DoValue(context.Background(), c.attempt, p)
	fmt.Printf("%s %v\n", body, err)
	// Output:
	// attempt 1: 503 Service Unavailable; retrying in 2s
	// attempt 2: 429 Too Many Requests; retrying in 3s
	// hello <nil>
}

// A 404 is Permanent: Do returns it after one call, without a wait.
func Example_httpNotFound() {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.NotFound(w, r)
	}))
	defer srv.Close()

	c := &httpCall{client: http.DefaultClient, method: http.MethodGet, url: srv.URL + "/missing", now: time.Now}
	_, err := retry.DoValue(context.Background(), c.attempt, retry.Policy{Sleeper: noWait})
	fmt.Println(err, "after", hits.Load(), "call")
	// Output: 404 Not Found after 1 call
}

// A Retry-After longer than MaxDelay ends the retries at once: Do neither
// waits 2 minutes nor calls again sooner than the server asked.
func Example_httpHintTooLong() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()

	ft := &fakeTime{now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	p := retry.Policy{MaxDelay: 10 * time.Second, Clock: ft, Sleeper: ft}
	c := &httpCall{client: http.DefaultClient, method: http.MethodGet, url: srv.URL, now: ft.Now}
	_, err := retry.DoValue(context.Background(), c.attempt, p)
	fmt.Println(err)
	// Output: retry: gave up after 1 attempt in 0s (retry-after hint too long: 2m0s, above MaxDelay 10s): 503 Service Unavailable
}

// A POST with a body and an Idempotency-Key, retried after a 503: each
// attempt builds its own request, so the server gets the whole body twice.
func Example_httpPost() {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		fmt.Printf("server: %s, %d bytes of %d, %v\n", body, len(body), r.ContentLength, err)
		if hits.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, "created")
	}))
	defer srv.Close()

	ft := &fakeTime{now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	p := retry.Policy{
		OnRetry: func(_ context.Context, attempt int, err error, wait time.Duration) {
			fmt.Printf("attempt %d: %v; retrying in %v\n", attempt, err, wait)
		},
		Clock: ft, Sleeper: ft,
	}
	c := &httpCall{
		client: http.DefaultClient, method: http.MethodPost, url: srv.URL,
		header: http.Header{"Idempotency-Key": {"order-7"}},
		body:   []byte(`{"n":1}`),
		now:    ft.Now,
	}
	body, err := retry.DoValue(context.Background(), c.attempt, p)
	fmt.Printf("%s %v\n", body, err)
	// Output:
	// server: {"n":1}, 7 bytes of 7, <nil>
	// attempt 1: 503 Service Unavailable; retrying in 1s
	// server: {"n":1}, 7 bytes of 7, <nil>
	// created <nil>
}

// A POST that reached the server, and whose answer was lost, is not sent
// again: the server may have acted on it. With an Idempotency-Key it is,
// since the server answers a repeat as it answered the first request.
func Example_httpIdempotencyKey() {
	var mu sync.Mutex
	answers := map[string]string{} // by Idempotency-Key
	placed := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // the whole request reached the server
		mu.Lock()
		defer mu.Unlock()
		key := r.Header.Get("Idempotency-Key")
		if answer, ok := answers[key]; ok && key != "" {
			fmt.Fprint(w, answer) // a repeat: the first answer, and no new order
			return
		}
		placed++
		answers[key] = "order " + strconv.Itoa(placed)
		fmt.Println("server: placed order", placed)
		conn, _, _ := w.(http.Hijacker).Hijack() // and the connection fails before the answer
		conn.Close()
	}))
	defer srv.Close()

	p := retry.Policy{
		OnRetry: func(_ context.Context, attempt int, err error, _ time.Duration) {
			fmt.Printf("attempt %d: %v; retrying\n", attempt, strings.ReplaceAll(err.Error(), srv.URL, "$URL"))
		},
		Sleeper: noWait,
	}
	for _, header := range []http.Header{nil, {"Idempotency-Key": {"order-8"}}} {
		c := &httpCall{
			client: http.DefaultClient, method: http.MethodPost, url: srv.URL,
			header: header,
			body:   []byte(`{"n":1}`),
			now:    time.Now,
		}
		body, err := retry.DoValue(context.Background(), c.attempt, p)
		fmt.Printf("key %q: %q, %v\n", header.Get("Idempotency-Key"), body, strings.ReplaceAll(fmt.Sprint(err), srv.URL, "$URL"))
	}
	// Output:
	// server: placed order 1
	// key "": "", Post "$URL": EOF
	// server: placed order 2
	// attempt 1: Post "$URL": EOF; retrying
	// key "order-8": "order 2", <nil>
}

// A connection reset halfway through the body fails the attempt that reads
// it, inside fn, and the next attempt gets the whole body.
func Example_httpResetMidBody() {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			conn, _, _ := w.(http.Hijacker).Hijack()
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel") // 3 bytes of 5
			conn.Close()
			return
		}
		fmt.Fprint(w, "hello")
	}))
	defer srv.Close()

	p := retry.Policy{
		OnRetry: func(_ context.Context, attempt int, err error, _ time.Duration) {
			fmt.Printf("attempt %d: %v; retrying\n", attempt, err)
		},
		Sleeper: noWait,
	}
	c := &httpCall{client: http.DefaultClient, method: http.MethodGet, url: srv.URL, now: time.Now}
	body, err := retry.DoValue(context.Background(), c.attempt, p)
	fmt.Printf("%s %v\n", body, err)
	// Output:
	// attempt 1: unexpected EOF; retrying
	// hello <nil>
}

// An attempt that outlives AttemptTimeout is cancelled and retried. This
// example waits for real, for one AttemptTimeout.
func Example_httpAttemptTimeout() {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			<-r.Context().Done() // no answer: the client gives up first
			return
		}
		fmt.Fprint(w, "hello")
	}))
	defer srv.Close()

	p := retry.Policy{
		AttemptTimeout: 200 * time.Millisecond,
		OnRetry: func(_ context.Context, attempt int, err error, _ time.Duration) {
			fmt.Printf("attempt %d: %v; retrying\n", attempt, strings.ReplaceAll(err.Error(), srv.URL, "$URL"))
		},
		Sleeper: noWait,
	}
	c := &httpCall{client: http.DefaultClient, method: http.MethodGet, url: srv.URL, now: time.Now}
	body, err := retry.DoValue(context.Background(), c.attempt, p)
	fmt.Printf("%s %v\n", body, err)
	// Output:
	// attempt 1: Get "$URL": context deadline exceeded; retrying
	// hello <nil>
}

// TestTour shows the library at work on real calls, with real timers,
// against a real server: `go test -run TestTour -v .` prints each retry,
// its wait and each call's result. It also checks what it prints.
func TestTour(t *testing.T) {
	var hits sync.Map // path → attempts so far
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := hits.LoadOrStore(r.URL.Path, new(atomic.Int32))
		switch attempt := n.(*atomic.Int32).Add(1); {
		case r.URL.Path == "/missing":
			http.NotFound(w, r)
		case r.URL.Path == "/down", r.URL.Path == "/flaky" && attempt <= 2:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
		case r.URL.Path == "/slow" && attempt == 1:
			<-r.Context().Done() // hangs until the attempt times out
		default:
			fmt.Fprint(w, "ok")
		}
	}))
	defer srv.Close()
	show := func(format string, args ...any) {
		if testing.Verbose() {
			fmt.Printf(format, args...)
		}
	}
	p := retry.Policy{
		MaxAttempts:    4,
		BaseDelay:      20 * time.Millisecond,
		MaxDelay:       200 * time.Millisecond,
		AttemptTimeout: 250 * time.Millisecond, // room for an answer on a loaded machine
		Deadline:       2 * time.Second,
		OnRetry: func(_ context.Context, attempt int, err error, wait time.Duration) {
			show("    attempt %d: %v; waiting %v\n", attempt, err, wait.Round(time.Millisecond))
		},
	}
	for _, tt := range []struct {
		path, want string
		attempts   int
	}{
		{"/flaky", "ok", 3},
		{"/slow", "ok", 2},
		{"/missing", "404 Not Found", 1},
		{"/down", "retry: gave up after 4 attempts", 4},
	} {
		show("GET %s\n", tt.path)
		start := time.Now()
		c := &httpCall{client: http.DefaultClient, method: http.MethodGet, url: srv.URL + tt.path, now: time.Now}
		body, err := retry.DoValue(context.Background(), c.attempt, p)
		got := string(body)
		if err != nil {
			got = strings.ReplaceAll(err.Error(), srv.URL, "$URL")
		}
		show("  = %s, after %v\n", got, time.Since(start).Round(time.Millisecond))
		n, _ := hits.Load(tt.path)
		if attempts := int(n.(*atomic.Int32).Load()); !strings.HasPrefix(got, tt.want) || attempts != tt.attempts {
			t.Errorf("GET %s = %q after %d attempts; want %q after %d", tt.path, got, attempts, tt.want, tt.attempts)
		}
	}
}
