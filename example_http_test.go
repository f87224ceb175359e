package retry_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/quietwire/retry"
)

// statusError is an HTTP response with a failing status code.
type statusError struct {
	code  int
	after time.Duration // from the Retry-After header; 0 if none
}

func (e *statusError) Error() string {
	return strconv.Itoa(e.code) + " " + http.StatusText(e.code)
}

// RetryAfter is the hint that Do honours: it never calls again sooner.
func (e *statusError) RetryAfter() time.Duration { return e.after }

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP-date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if s, err := strconv.Atoi(v); err == nil {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return t.Sub(now)
	}
	return 0
}

// get fetches url once and turns a failing status into a *statusError.
func get(ctx context.Context, url string, clock retry.Clock) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	switch code := resp.StatusCode; {
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		return "", &statusError{code, parseRetryAfter(resp.Header.Get("Retry-After"), clock.Now())}
	case code >= 400: // the same request will fail the same way
		return "", retry.Permanent(&statusError{code: code})
	}
	return string(body), err
}

// An HTTP client that retries network errors, timeouts, 5xx, 408 and 429
// responses, honours Retry-After in seconds and as an HTTP-date, and
// fails fast on other 4xx, which it marks Permanent.
func Example_http() {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
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
		MaxDelay: 10 * time.Second,
		Jitter:   retry.FullJitter,
		OnRetry: func(_ context.Context, attempt int, err error, wait time.Duration) {
			fmt.Printf("attempt %d: %v; retrying in %v\n", attempt, err, wait)
		},
		Clock:   ft, // fake time keeps the example instant; real code leaves
		Sleeper: ft, // Clock and Sleeper nil
	}
	fetch := func(url string) func(context.Context) (string, error) {
		return func(ctx context.Context) (string, error) { return get(ctx, url, ft) }
	}

	body, err := retry.DoValue(context.Background(), fetch(srv.URL+"/hello"), p)
	fmt.Println(body, err)

	_, err = retry.DoValue(context.Background(), fetch(srv.URL+"/missing"), p)
	fmt.Println(err)
	// Output:
	// attempt 1: 503 Service Unavailable; retrying in 2s
	// attempt 2: 429 Too Many Requests; retrying in 3s
	// hello <nil>
	// 404 Not Found
}
