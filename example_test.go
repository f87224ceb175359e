package retry_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"go/ast"
	"go/doc"
	"go/format"
	"go/parser"
	"go/token"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quietwire/retry"
)

// noWait is a Sleeper that returns at once, so that these examples run
// instantly. Real code leaves Policy.Sleeper nil.
var noWait = retry.SleeperFunc(func(ctx context.Context, d time.Duration) error {
	return ctx.Err()
})

var errUnavailable = errors.New("service unavailable")

// fakeTime is a Clock and a Sleeper on virtual time: Sleep returns at
// once and moves the clock forward by the wait.
type fakeTime struct{ now time.Time }

func (f *fakeTime) Now() time.Time { return f.now }

func (f *fakeTime) Sleep(ctx context.Context, d time.Duration) error {
	f.now = f.now.Add(d)
	return ctx.Err()
}

// getBody is the README's GET client, as a function for the examples.
func getBody(ctx context.Context, client *http.Client, url string, p retry.Policy) ([]byte, error) {
	body, err := retry.DoValue(ctx, func(ctx context.Context) ([]byte, error) {
		req, err := newRequest(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		return read(client.Do(req))
	}, p)
	return body, err
}

// postOrder is the README's POST client, as a function for the examples.
func postOrder(ctx context.Context, client *http.Client, url, key string, order []byte,
	p retry.Policy) ([]byte, error) {
	body, err := retry.DoValue(ctx, func(ctx context.Context) ([]byte, error) {
		req, err := newRequest(ctx, http.MethodPost, url, bytes.NewReader(order))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Idempotency-Key", key) // the server answers a repeat with its first answer
		return read(client.Do(req))
	}, p)
	return body, err
}

// newRequest is http.NewRequestWithContext, whose error, like a URL that is
// not http or https or has no host, is Permanent: no retry fixes the URL.
func newRequest(ctx context.Context, method, url string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err == nil && (req.URL.Scheme != "http" && req.URL.Scheme != "https" || req.URL.Host == "") {
		err = fmt.Errorf("want an http or https URL with a host, not %q", url)
	}
	return req, retry.Permanent(err) // Permanent(nil) is nil
}

// maxDrain is how much is read of a body that is retried or refused: all
// of a short one, so that its connection serves again.
const maxDrain = 64 << 10

// read returns the body of a response, or an error that Do retries or not.
func read(resp *http.Response, err error) ([]byte, error) {
	var untrusted *tls.CertificateVerificationError
	switch {
	case errors.As(err, &untrusted):
		return nil, retry.Permanent(err) // a certificate that no retry makes trusted
	case err != nil:
		return nil, err // a network error or a timeout: retried
	}
	defer resp.Body.Close()
	if resp.StatusCode < 400 {
		return io.ReadAll(resp.Body) // inside fn: a reset mid-body is retried too
	}
	io.CopyN(io.Discard, resp.Body, maxDrain)
	wait, _ := retry.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	if code := resp.StatusCode; code == 408 || code == 429 || code >= 500 {
		return nil, retry.After(wait, errors.New(resp.Status)) // retried, no sooner than asked
	}
	return nil, retry.Permanent(errors.New(resp.Status)) // would fail the same way again
}

// Do calls fn again after an error, here until the third call succeeds.
func ExampleDo() {
	calls := 0
	err := retry.Do(context.Background(), func(ctx context.Context) error {
		calls++
		if calls < 3 {
			return errUnavailable
		}
		return nil
	}, retry.Policy{MaxAttempts: 4, Sleeper: noWait})
	fmt.Println(calls, err)
	// Output: 3 <nil>
}

// DoValue returns the value of the call that succeeded.
func ExampleDoValue() {
	calls := 0
	n, err := retry.DoValue(context.Background(), func(ctx context.Context) (int, error) {
		calls++
		if calls < 2 {
			return 0, errUnavailable
		}
		return 42, nil
	}, retry.Policy{Sleeper: noWait})
	fmt.Println(n, err)
	// Output: 42 <nil>
}

// ErrAuth is the error of a client whose credentials are refused.
var ErrAuth = errors.New("authentication failed")

// pinger is a client whose Ping fails with the errors it holds, in turn.
type pinger struct{ errs []error }

func (c *pinger) Ping(ctx context.Context) error {
	if len(c.errs) == 0 {
		return nil
	}
	err := c.errs[0]
	c.errs = c.errs[1:]
	return err
}

// The README's first example: an error that no retry can fix comes back
// after one call, as Ping returned it.
func Example() {
	ctx := context.Background()
	client := &pinger{errs: []error{ErrAuth}}

	err := retry.Do(ctx, func(ctx context.Context) error {
		return client.Ping(ctx)
	}, retry.Policy{
		MaxAttempts:    4,                // calls in all, the first included
		AttemptTimeout: 2 * time.Second,  // each call of fn; a timed-out call is retried
		Timeout:        10 * time.Second, // the whole call, attempts and waits included
		IsRetryable:    func(err error) bool { return !errors.Is(err, ErrAuth) },
	})
	// err is nil, ErrAuth as Ping returned it, or a *retry.RetryExhausted.

	fmt.Println(err == ErrAuth)
	// Output: true
}

// Errors a service usually does not retry, because the same request will
// fail the same way.
var (
	ErrInvalid         = errors.New("invalid argument")
	ErrUnauthenticated = errors.New("unauthenticated")
	ErrForbidden       = errors.New("permission denied")
	ErrNotFound        = errors.New("not found")
	ErrConflict        = errors.New("unique constraint violated")
)

// isRetryable retries everything but the errors a retry cannot fix.
func isRetryable(err error) bool {
	return !slices.ContainsFunc([]error{ErrInvalid, ErrUnauthenticated, ErrForbidden, ErrNotFound,
		ErrConflict}, func(permanent error) bool { return errors.Is(err, permanent) })
}

// A predicate makes errors that another attempt cannot fix fail fast:
// Do returns them unchanged after one call.
func ExamplePolicy_isRetryable() {
	p := retry.Policy{IsRetryable: isRetryable, Sleeper: noWait}
	for _, errs := range [][]error{
		{errUnavailable, errUnavailable},             // retried: succeeds on the third call
		{fmt.Errorf("insert user: %w", ErrConflict)}, // fails fast
	} {
		client := &pinger{errs: errs}
		calls := 0
		err := retry.Do(context.Background(), func(ctx context.Context) error {
			calls++
			return client.Ping(ctx)
		}, p)
		fmt.Println(calls, err)
	}
	// Output:
	// 3 <nil>
	// 1 insert user: unique constraint violated
}

// Where fn knows that an error is final, it says so with Permanent: Do
// returns it at once, mark included, and errors.Is sees through the mark.
func ExamplePermanent() {
	calls := 0
	err := retry.Do(context.Background(), func(ctx context.Context) error {
		calls++
		return retry.Permanent(fmt.Errorf("get user 7: %w", ErrNotFound))
	}, retry.Policy{Sleeper: noWait})
	fmt.Println(calls, err, errors.Is(err, ErrNotFound))
	// Output: 1 get user 7: not found true
}

// When Do gives up, errors.As finds the *RetryExhausted, which says after
// how many attempts and why, and errors.Is reaches fn's last error. A
// deadline that ends the retries while ctx is alive gives DeadlineReached,
// whichever deadline it was, and reaches context.DeadlineExceeded, so one
// errors.Is maps it to a 504; the message says which deadline. Canceled is
// kept for a ctx that is done.
func ExampleRetryExhausted() {
	ft := &fakeTime{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	unavailable := func(ctx context.Context) error {
		ft.now = ft.now.Add(500 * time.Millisecond) // each call takes 500ms
		return errUnavailable
	}
	for _, p := range []retry.Policy{{MaxAttempts: 3}, {Timeout: time.Second}} {
		p.Jitter, p.Clock, p.Sleeper = retry.NoJitter, ft, ft
		err := retry.Do(context.Background(), unavailable, p)
		var re *retry.RetryExhausted
		if errors.As(err, &re) {
			fmt.Println(re.Attempts, re.Reason, re.Last,
				errors.Is(err, errUnavailable), errors.Is(err, context.DeadlineExceeded))
		}
		fmt.Println(err)
	}
	// Output:
	// 3 max attempts reached service unavailable true false
	// retry: gave up after 3 attempts in 1.8s (max attempts reached): service unavailable
	// 2 deadline reached service unavailable true true
	// retry: gave up after 2 attempts in 1.1s (deadline reached: Policy.Timeout passed): service unavailable
}

// NoJitter doubles the wait after each retry, up to MaxDelay.
func ExampleNoJitter() {
	for n := range 6 {
		fmt.Print(retry.NoJitter(n, 100*time.Millisecond, time.Second, 0, 0), " ")
	}
	// Output: 100ms 200ms 400ms 800ms 1s 1s
}

// FullJitter draws the wait from zero up to the capped exponential.
func ExampleFullJitter() {
	// n = 3: the capped exponential is 800ms; the wait is u of it.
	for _, u := range []float64{0, 0.25, 0.5, 0.999} {
		fmt.Print(retry.FullJitter(3, 100*time.Millisecond, time.Second, 0, u), " ")
	}
	// Output: 0s 200ms 400ms 799.2ms
}

// EqualJitter draws the wait from the upper half of the capped exponential.
func ExampleEqualJitter() {
	// n = 3: the capped exponential is 800ms; the wait lies in [400ms, 800ms].
	for _, u := range []float64{0, 0.25, 0.5, 0.999} {
		fmt.Print(retry.EqualJitter(3, 100*time.Millisecond, time.Second, 0, u), " ")
	}
	// Output: 400ms 500ms 600ms 799.6ms
}

// DecorrelatedJitter draws each wait between base and three times the
// previous one, capped at MaxDelay.
func ExampleDecorrelatedJitter() {
	prev := 100 * time.Millisecond
	for _, u := range []float64{0.5, 0.5, 0.5, 0.9, 0.9} {
		prev = retry.DecorrelatedJitter(0, 100*time.Millisecond, 2*time.Second, prev, u)
		fmt.Print(prev, " ")
	}
	// Output: 200ms 350ms 575ms 1.5625s 2s
}

// Code that retries is tested on fake time: inject a Clock and a Sleeper,
// and NoJitter for a fixed schedule. This run spends 7s of fake time
// and no real time: after the call at 7s, the next wait (8s) would end
// after the 8s Timeout, so Do gives up at once instead of sleeping.
func ExamplePolicy_fakeTime() {
	ft := &fakeTime{now: time.Now()} // not a fixed date: Do measures ctx's deadline on Clock
	start := ft.now
	p := retry.Policy{BaseDelay: time.Second, Timeout: 8 * time.Second, Jitter: retry.NoJitter,
		Clock: ft, Sleeper: ft}
	err := retry.Do(context.Background(), func(ctx context.Context) error {
		fmt.Println("call at", ft.now.Sub(start))
		return errors.New("503")
	}, p)
	fmt.Println(err)
	// Output:
	// call at 0s
	// call at 1s
	// call at 3s
	// call at 7s
	// retry: gave up after 4 attempts in 7s (deadline reached: next wait 8s, with 1s left before Policy.Timeout): 503
}

// One Budget per downstream service, shared by every call to it: during
// an outage, retries add at most 10% to the load, after a burst of 2.
func ExampleNewBudget() {
	budget := retry.NewBudget(0.1, 2)
	p := retry.Policy{MaxAttempts: 3, Budget: budget, Sleeper: noWait}
	down := func(ctx context.Context) error { return errUnavailable }
	for i := range 3 {
		err := retry.Do(context.Background(), down, p)
		var re *retry.RetryExhausted
		errors.As(err, &re)
		fmt.Printf("call %d: %v, attempts: %d\n", i+1, re.Reason, re.Attempts)
	}
	fmt.Println(errors.Is(retry.Do(context.Background(), down, p), retry.ErrBudgetExhausted))
	// Output:
	// call 1: max attempts reached, attempts: 3
	// call 2: retry budget exhausted, attempts: 1
	// call 3: retry budget exhausted, attempts: 1
	// true
}

// A server that answers "busy, come back in 2s" gets its 2 seconds: Do
// waits at least as long as the hint that After attaches. When Do gives up
// with a hint in fn's last error, above MaxDelay (HintTooLong) or on the
// last attempt (MaxAttemptsReached), a worker reads it there and runs the
// job again that long after Do returned: job 2 waited 2s, as asked, and
// runs again in 5s, not 3s.
func ExampleAfter() {
	errBusy := errors.New("busy")
	for job, errs := range [][]error{ // that the job's fn returns, one per call
		{retry.After(time.Minute, errBusy)},                                        // above MaxDelay
		{retry.After(2*time.Second, errBusy), retry.After(5*time.Second, errBusy)}, // on the last attempt
	} {
		ft := &fakeTime{now: time.Now()}
		p := retry.Policy{MaxAttempts: 2, MaxDelay: 10 * time.Second, Clock: ft, Sleeper: ft}
		work(fmt.Sprint("job ", job+1), (&pinger{errs: errs}).Ping, p)
	}
	// Output:
	// job 1: retry: gave up after 1 attempt in 0s (retry-after hint too long: 1m0s, above MaxDelay 10s): busy
	// job 1 runs in 1m0s
	// job 2: retry: gave up after 2 attempts in 2s (max attempts reached): busy
	// job 2 runs in 5s
}

// work runs a job through Do, as a worker does; when fn's last error
// carries a server's wait, whatever the Reason, it schedules the job again
// that long after Do returned.
func work(job string, fn func(context.Context) error, p retry.Policy) {
	err := retry.Do(context.Background(), fn, p)
	fmt.Printf("%s: %v\n", job, err)
	var hint interface{ RetryAfter() time.Duration }
	if errors.As(err, &hint) { // in fn's last error
		schedule(job, time.Now().Add(hint.RetryAfter())) // from now: Do returns as fn returns it
	}
}

// schedule stands for a job queue's.
func schedule(job string, t time.Time) { fmt.Println(job, "runs in", time.Until(t).Round(time.Second)) }

// ParseRetryAfter reads both forms of a Retry-After header, and says
// whether there was a valid one at all.
func ExampleParseRetryAfter() {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for _, v := range []string{
		"120",
		"Thu, 03 Dec 2026 12:00:30 GMT",
		"Thu, 03 Dec 2026 11:00:00 GMT", // in the past
		"",
		"soon",
	} {
		d, ok := retry.ParseRetryAfter(v, now)
		fmt.Printf("%q: %v %v\n", v, d, ok)
	}
	// Output:
	// "120": 2m0s true
	// "Thu, 03 Dec 2026 12:00:30 GMT": 30s true
	// "Thu, 03 Dec 2026 11:00:00 GMT": 0s true
	// "": 0s false
	// "soon": 0s false
}

// A GET retried on a 503 and a 429, each with a Retry-After header: each
// wait is the server's. Fake time, which starts at time.Now(), keeps the
// example instant.
func Example_retryAfterHeader() {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := hits.Add(1); n <= 2 {
			w.Header().Set("Retry-After", fmt.Sprint(n+1)) // 2s, then 3s
			w.WriteHeader([]int{http.StatusServiceUnavailable, http.StatusTooManyRequests}[n-1])
			return
		}
		fmt.Fprint(w, "hello")
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
		Clock: ft, Sleeper: ft, // real code leaves them nil
	}
	body, err := getBody(context.Background(), srv.Client(), srv.URL, p)
	fmt.Printf("%s %v\n", body, err)
	// Output:
	// attempt 1: 503 Service Unavailable; retrying in 2s
	// attempt 2: 429 Too Many Requests; retrying in 3s
	// hello <nil>
}

// A 404 is Permanent: Do returns it after one call, without a wait.
func Example_notFound() {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.NotFound(w, r)
	}))
	defer srv.Close()
	p := retry.Policy{Sleeper: noWait}
	_, err := getBody(context.Background(), srv.Client(), srv.URL+"/missing", p)
	fmt.Println(err, "after", hits.Load(), "call")
	// Output: 404 Not Found after 1 call
}

// A POST with a body and an Idempotency-Key, retried after a 503: each
// attempt builds its own request, so the server gets the whole body twice,
// with the same key.
func Example_postIdempotencyKey() {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		fmt.Printf("server: %s, %d bytes of %d, key %s, %v\n",
			body, len(body), r.ContentLength, r.Header.Get("Idempotency-Key"), err)
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
	order := []byte(`{"n":1}`)
	body, err := postOrder(context.Background(), srv.Client(), srv.URL, "order-7", order, p)
	fmt.Printf("%s %v\n", body, err)
	// Output:
	// server: {"n":1}, 7 bytes of 7, key order-7, <nil>
	// attempt 1: 503 Service Unavailable; retrying in 1s
	// server: {"n":1}, 7 bytes of 7, key order-7, <nil>
	// created <nil>
}

// An attempt that outlives AttemptTimeout, or the http.Client's Timeout,
// fails with context.DeadlineExceeded, which an allow-list IsRetryable must
// list to retry it. This example waits for real, 200ms each time.
func Example_attemptTimeout() {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1)%2 == 1 {
			<-r.Context().Done() // no answer: the client gives up first
			return
		}
		fmt.Fprint(w, "hello")
	}))
	defer srv.Close()

	p := retry.Policy{
		IsRetryable: func(err error) bool { return errors.Is(err, context.DeadlineExceeded) },
		OnRetry: func(_ context.Context, attempt int, err error, _ time.Duration) {
			msg := strings.ReplaceAll(err.Error(), srv.URL, "$URL")
			fmt.Printf("attempt %d: %v; retrying\n", attempt, msg)
		},
		Sleeper: noWait,
	}
	client := srv.Client()
	p.AttemptTimeout = 200 * time.Millisecond
	body, err := getBody(context.Background(), client, srv.URL, p)
	fmt.Printf("%s %v\n", body, err)
	client.Timeout, p.AttemptTimeout = 200*time.Millisecond, 0
	body, err = getBody(context.Background(), client, srv.URL, p)
	fmt.Printf("%s %v\n", body, err)
	// Output:
	// attempt 1: Get "$URL": context deadline exceeded; retrying
	// hello <nil>
	// attempt 1: Get "$URL": context deadline exceeded (Client.Timeout exceeded while awaiting headers); retrying
	// hello <nil>
}

// TestHTTPRecipes checks, against a server, what getBody (whose read
// postOrder shares) and retryTransport return and read of each response,
// which they close, and that a wrong URL or certificate fails at once.
func TestHTTPRecipes(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 8<<20)
	var hits, resets atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/missing":
			w.WriteHeader(http.StatusNotFound)
		case r.URL.Path == "/reset" && resets.Add(1) == 1:
			conn, _, _ := w.(http.Hijacker).Hijack()
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel") // 3 bytes of 5
			conn.Close()
			return
		case r.URL.Path == "/down" || r.URL.Path == "/" && hits.Add(1) <= 2:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			fmt.Fprint(w, "ok")
			return
		}
		w.Write(big)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes that the client breaks off
	srv.StartTLS()
	defer srv.Close()
	p := retry.Policy{MaxAttempts: 3, Sleeper: noWait}
	get := func(c *http.Client, url string) string {
		body, err := getBody(context.Background(), c, url, p)
		if err != nil {
			return err.Error()
		}
		return string(body)
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
	dollars := strings.NewReplacer("$URL", srv.URL, "$HOST", strings.TrimPrefix(srv.URL, "https://"))
	for _, tt := range []struct {
		name, url string // $URL is the server's, $HOST its host
		call      func(c *http.Client, url string) string
		untrusted bool   // the client does not trust the server's certificate
		want      string // a prefix, with $URL and $HOST
		reads     []int  // of each response's body
	}{
		{"getBody", "$URL/", get, false, "ok", []int{maxDrain, maxDrain, 2}},
		{"getBody, refused", "$URL/missing", get, false, "404 Not Found", []int{maxDrain}},
		{"getBody, reset mid-body", "$URL/reset", get, false, "ok", []int{3, 2}},
		{"retryTransport, gave up", "$URL/down", transport, false, "503 Service Unavailable, 8388608 bytes, <nil>", []int{maxDrain, maxDrain, 8 << 20}},
		{"no scheme", "//$HOST/x", get, false, `want an http or https URL with a host, not "//$HOST/x"`, nil},
		{"a mistyped scheme", "htps://$HOST/x", get, false, `want an http or https URL with a host, not "htps://$HOST/x"`, nil},
		{"ftp", "ftp://$HOST/x", get, false, `want an http or https URL with a host, not "ftp://$HOST/x"`, nil},
		{"no host", "https:///x", get, false, `want an http or https URL with a host, not "https:///x"`, nil},
		{"no URL", "$HOST/x", get, false, `parse "$HOST/x": first path segment in URL cannot contain colon`, nil},
		{"untrusted certificate", "$URL/x", get, true, `Get "$URL/x": tls: failed to verify certificate`, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hits.Store(0)
			resets.Store(0)
			base, bodies := srv.Client().Transport, []*bodyRecorder(nil)
			if tt.untrusted {
				base = &http.Transport{}
			}
			c := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				resp, err := base.RoundTrip(r)
				if err == nil {
					bodies = append(bodies, &bodyRecorder{ReadCloser: resp.Body})
					resp.Body = bodies[len(bodies)-1]
				}
				return resp, err
			})}
			if got, want := tt.call(c, dollars.Replace(tt.url)), dollars.Replace(tt.want); !strings.HasPrefix(got, want) {
				t.Errorf("got %q; want %q", got, want)
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
	io.ReadCloser
	read   int
	closed bool
}

func (b *bodyRecorder) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read += n
	return n, err
}

func (b *bodyRecorder) Close() error { b.closed = true; return b.ReadCloser.Close() }

// TestExamplesWhole checks that go/doc makes of every Example the whole
// program that pkg.go.dev shows and runs, which it can only from the names
// the Example's own file declares, with no line wider than 110 columns
// (tabs as 4), about what pkg.go.dev's box shows.
func TestExamplesWhole(t *testing.T) {
	fset, files := token.NewFileSet(), []*ast.File(nil)
	names, _ := filepath.Glob("*_test.go")
	for _, name := range names {
		f, _ := parser.ParseFile(fset, name, nil, parser.ParseComments) // it compiled: it parses
		files = append(files, f)
	}
	for _, ex := range doc.Examples(files...) {
		var play strings.Builder
		if ex.Play == nil || format.Node(&play, fset, ex.Play) != nil {
			t.Errorf("Example%s: go/doc makes no whole program of it; want one: its file declares every name it uses", ex.Name)
			continue
		}
		for _, line := range strings.Split(play.String(), "\n") {
			if w := len([]rune(strings.ReplaceAll(line, "\t", "    "))); w > 110 {
				t.Errorf("Example%s: a line %d columns wide; want at most 110:\n%s", ex.Name, w, line)
			}
		}
	}
}
