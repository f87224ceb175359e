package retry_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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
