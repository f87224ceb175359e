package retry_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quietwire/retry"
)

// maxDrain is how much the HTTP clients here read of a body that they
// retry or refuse, before they close it: all of a short body, so that its
// connection serves again, and no more of a long one.
const maxDrain = 64 << 10

// getBody is the README's GET client, as a function for the examples.
func getBody(ctx context.Context, client *http.Client, url string, p retry.Policy) ([]byte, error) {
	body, err := retry.DoValue(ctx, func(ctx context.Context) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, retry.Permanent(err) // a malformed URL
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err // a network error or a timeout: retried
		}
		defer resp.Body.Close()
		if resp.StatusCode < 400 {
			return io.ReadAll(resp.Body) // inside fn: a reset mid-body is retried too
		}
		io.CopyN(io.Discard, resp.Body, maxDrain) // all of a short body, so that the connection serves again
		wait, _ := retry.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		if code := resp.StatusCode; code == 408 || code == 429 || code >= 500 {
			return nil, retry.After(wait, errors.New(resp.Status)) // retried, no sooner than asked
		}
		return nil, retry.Permanent(errors.New(resp.Status)) // would fail the same way again
	}, p)
	return body, err
}

// postOrder is the README's POST client, as a function for the examples.
func postOrder(ctx context.Context, client *http.Client, url, key string, order []byte, p retry.Policy) ([]byte, error) {
	body, err := retry.DoValue(ctx, func(ctx context.Context) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(order))
		if err != nil {
			return nil, retry.Permanent(err)
		}
		req.Header.Set("Idempotency-Key", key) // the server answers a repeat with its first answer
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode < 400 {
			return io.ReadAll(resp.Body)
		}
		io.CopyN(io.Discard, resp.Body, maxDrain)
		wait, _ := retry.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		if code := resp.StatusCode; code == 408 || code == 429 || code >= 500 {
			return nil, retry.After(wait, errors.New(resp.Status))
		}
		return nil, retry.Permanent(errors.New(resp.Status))
	}, p)
	return body, err
}

// A GET retried on a 503 and a 429, each with a Retry-After header: each
// wait is the server's. Fake time, which starts at time.Now(), keeps the
// example instant.
func Example_http() {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch hits.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusServiceUnavailable)
		case 2:
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			fmt.Fprint(w, "hello")
		}
	}))
	defer srv.Close()

	ft := &fakeTime{now: time.Now()}
	p := retry.Policy{
		MaxDelay:       10 * time.Second, // and no hint is trusted beyond it
		AttemptTimeout: 5 * time.Second,
		Jitter:         retry.FullJitter,
		OnRetry: func(_ context.Context, attempt int, err error, wait time.Duration) {
			fmt.Printf("attempt %d: %v; retrying in %v\n", attempt, err, wait)
		},
		Clock:   ft, // real code leaves Clock and Sleeper nil
		Sleeper: ft,
	}
	body, err := getBody(context.Background(), srv.Client(), srv.URL, p)
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

	_, err := getBody(context.Background(), srv.Client(), srv.URL+"/missing", retry.Policy{Sleeper: noWait})
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

	ft := &fakeTime{now: time.Now()}
	p := retry.Policy{MaxDelay: 10 * time.Second, Clock: ft, Sleeper: ft}
	_, err := getBody(context.Background(), srv.Client(), srv.URL, p)
	fmt.Println(err)
	// Output: retry: gave up after 1 attempt in 0s (retry-after hint too long: 2m0s, above MaxDelay 10s): 503 Service Unavailable
}

// A POST with a body and an Idempotency-Key, retried after a 503: each
// attempt builds its own request, so the server gets the whole body twice,
// with the same key.
func Example_httpPost() {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		fmt.Printf("server: %s, %d bytes of %d, key %s, %v\n", body, len(body), r.ContentLength, r.Header.Get("Idempotency-Key"), err)
		if hits.Add(1) == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, "created")
	}))
	defer srv.Close()

	ft := &fakeTime{now: time.Now()}
	p := retry.Policy{
		OnRetry: func(_ context.Context, attempt int, err error, wait time.Duration) {
			fmt.Printf("attempt %d: %v; retrying in %v\n", attempt, err, wait)
		},
		Clock: ft, Sleeper: ft,
	}
	body, err := postOrder(context.Background(), srv.Client(), srv.URL, "order-7", []byte(`{"n":1}`), p)
	fmt.Printf("%s %v\n", body, err)
	// Output:
	// server: {"n":1}, 7 bytes of 7, key order-7, <nil>
	// attempt 1: 503 Service Unavailable; retrying in 1s
	// server: {"n":1}, 7 bytes of 7, key order-7, <nil>
	// created <nil>
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
	body, err := getBody(context.Background(), srv.Client(), srv.URL, p)
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
	body, err := getBody(context.Background(), srv.Client(), srv.URL, p)
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
		Timeout:        2 * time.Second,
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
		body, err := getBody(context.Background(), srv.Client(), srv.URL+tt.path, p)
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

	t.Run("DrainsWhatItRetries", func(t *testing.T) {
		conns.Store(0)
		client := &http.Client{Transport: &retryTransport{Base: srv.Client().Transport, Policy: retry.Policy{MaxAttempts: 4, Sleeper: noWait}}}
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatalf("Get() error = %v; want the last response", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 503 || len(body) != 5001 {
			t.Errorf("Get() = %d with %d bytes; want 503 with 5001", resp.StatusCode, len(body))
		}
		if n := conns.Load(); n != 1 {
			t.Errorf("4 attempts used %d connections; want 1, each response drained for the next", n)
		}
	})
	t.Run("ReturnsTheLastAttemptsError", func(t *testing.T) {
		client := &http.Client{Transport: &retryTransport{Base: srv.Client().Transport, Policy: retry.Policy{MaxAttempts: 3, Sleeper: noWait}}}
		resp, err := client.Get(srv.URL + "/reset")
		if err == nil {
			resp.Body.Close()
		}
		var re *retry.RetryExhausted
		if !errors.As(err, &re) || re.Attempts != 3 {
			t.Errorf("Get() = %v; want the third attempt's network error, not the 503 before it", err)
		}
	})
	t.Run("RequestCtxEndsTheRetries", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		attempts := 0
		client := &http.Client{Transport: &retryTransport{Policy: retry.Policy{
			OnRetry: func(context.Context, int, error, time.Duration) { cancel() },
			OnDone:  func(_ context.Context, n int, _ time.Duration, _ error) { attempts = n },
			Sleeper: noWait,
		}}}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		if !errors.Is(err, context.Canceled) || attempts != 1 {
			t.Errorf("Do() = %v after %d attempts; want context.Canceled after 1", err, attempts)
		}
	})
	t.Run("ReturnsTheLastResponseAtTheDeadline", func(t *testing.T) {
		untilDone := retry.SleeperFunc(func(ctx context.Context, _ time.Duration) error { <-ctx.Done(); return ctx.Err() })
		for _, tt := range []struct {
			name string
			p    retry.Policy
		}{
			{"Do sees that the next wait does not fit", retry.Policy{BaseDelay: time.Hour}},
			{"ctx's timer ends the wait", retry.Policy{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond, Sleeper: untilDone}},
		} {
			ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/hang", nil)
			resp, err := (&retryTransport{Base: srv.Client().Transport, Policy: tt.p}).RoundTrip(req)
			if err != nil {
				t.Errorf("%s: RoundTrip() = %v; want the 503", tt.name, err)
				continue
			}
			<-ctx.Done()
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 503 || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s: RoundTrip() = %d, then reading its body = %v; want 503, then ctx's error", tt.name, resp.StatusCode, err)
			}
		}
	})
	t.Run("ClosesTheBodyItDoesNotSend", func(t *testing.T) {
		done, cancel := context.WithCancel(context.Background())
		cancel()
		for _, tt := range []struct {
			name string
			ctx  context.Context
			p    retry.Policy
		}{
			{"AttemptTimeout set", context.Background(), retry.Policy{AttemptTimeout: time.Second}},
			{"invalid Policy", context.Background(), retry.Policy{MaxAttempts: -1}},
			{"ctx done", done, retry.Policy{}},
		} {
			body := &bodyRecorder{Reader: strings.NewReader("x")}
			req, _ := http.NewRequestWithContext(tt.ctx, http.MethodPut, srv.URL, body)
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("x")), nil }
			_, err := (&retryTransport{Policy: tt.p}).RoundTrip(req)
			if err == nil || !body.closed {
				t.Errorf("%s: RoundTrip() = %v, body closed %v; want an error and the body closed", tt.name, err, body.closed)
			}
		}
	})
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
	str := func(body []byte, err error) string {
		if err != nil {
			return err.Error()
		}
		return string(body)
	}
	get := func(c *http.Client, url string) string { return str(getBody(context.Background(), c, url, p)) }
	post := func(c *http.Client, url string) string {
		return str(postOrder(context.Background(), c, url, "k", []byte("order"), p))
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
