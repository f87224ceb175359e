//go:build go1.25

// go.mod names Go 1.22, whose timers keep asynchronous channels; synctest
// needs the synchronous ones of Go 1.23 and later.
//go:debug asynctimerchan=0

package retry_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quietwire/retry"
)

// TestRealTimersOnSynctest runs the default Sleeper and real ctx timers on
// synctest's fake clock, which moves only when every goroutine in the
// bubble is blocked, so that the waits take no real time.
func TestRealTimersOnSynctest(t *testing.T) {
	fail := func(context.Context) error { return errUnavailable }
	hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	succeed := func(context.Context) error { return nil }
	const ms = time.Millisecond
	for _, tt := range []struct {
		name     string
		p        retry.Policy
		timeout  time.Duration // of ctx, if not 0
		cancelAt time.Duration // cancels ctx, if not 0
		fns      []func(context.Context) error
		calls    []time.Duration // when fn is called
		end      time.Duration   // when Do returns
		want     string
	}{
		{"each wait as chosen", retry.Policy{MaxAttempts: 4, BaseDelay: 10 * ms}, 0, 0,
			[]func(context.Context) error{fail}, []time.Duration{0, 10 * ms, 30 * ms, 70 * ms}, 70 * ms,
			"max attempts reached after 4 in 70ms, cause <nil>: service unavailable"},
		{"a zero wait is not waited", retry.Policy{MaxAttempts: 3, Jitter: func(int, time.Duration, time.Duration, time.Duration, float64) time.Duration { return 0 }}, 0, 0,
			[]func(context.Context) error{fail}, []time.Duration{0, 0, 0}, 0,
			"max attempts reached after 3 in 0s, cause <nil>: service unavailable"},
		{"a 1ns wait is waited", retry.Policy{MaxAttempts: 3, BaseDelay: 1, MaxDelay: 1}, 0, 0,
			[]func(context.Context) error{fail}, []time.Duration{0, 1, 2}, 2,
			"max attempts reached after 3 in 2ns, cause <nil>: service unavailable"},
		{"ctx cancelled mid-wait", retry.Policy{BaseDelay: time.Hour, MaxDelay: time.Hour}, 0, 3 * time.Second,
			[]func(context.Context) error{fail}, []time.Duration{0}, 3 * time.Second,
			"canceled after 1 in 3s, cause context canceled: service unavailable"},
		{"Timeout ends a hung call", retry.Policy{BaseDelay: 100 * ms, Timeout: 300 * ms}, 0, 0,
			[]func(context.Context) error{fail, hang}, []time.Duration{0, 100 * ms}, 300 * ms,
			"deadline reached after 2 in 300ms, cause context deadline exceeded: context deadline exceeded"},
		{"AttemptTimeout ends each hung attempt", retry.Policy{BaseDelay: time.Second, MaxDelay: time.Second, AttemptTimeout: 2 * time.Second}, 0, 0,
			[]func(context.Context) error{hang, hang, succeed}, []time.Duration{0, 3 * time.Second, 6 * time.Second}, 6 * time.Second,
			"<nil>"},
		{"AttemptTimeout within Timeout", retry.Policy{BaseDelay: time.Second, MaxDelay: time.Second, AttemptTimeout: 2 * time.Second, Timeout: 4 * time.Second}, 0, 0,
			[]func(context.Context) error{hang}, []time.Duration{0, 3 * time.Second}, 4 * time.Second,
			"deadline reached after 2 in 4s, cause context deadline exceeded: context deadline exceeded"},
		{"AttemptTimeout, with an allow-list predicate that leaves timeouts out", retry.Policy{BaseDelay: time.Second, AttemptTimeout: 2 * time.Second,
			IsRetryable: func(err error) bool { return errors.Is(err, errUnavailable) }}, 0, 0,
			[]func(context.Context) error{hang, succeed}, []time.Duration{0}, 2 * time.Second, "context deadline exceeded"},
		{"AttemptTimeout, with an allow-list predicate that lists them", retry.Policy{BaseDelay: time.Second, AttemptTimeout: 2 * time.Second,
			IsRetryable: func(err error) bool {
				return errors.Is(err, errUnavailable) || errors.Is(err, context.DeadlineExceeded)
			}}, 0, 0,
			[]func(context.Context) error{hang, succeed}, []time.Duration{0, 3 * time.Second}, 3 * time.Second, "<nil>"},
		{"a predicate that refuses timeouts", retry.Policy{Timeout: 300 * ms, IsRetryable: func(err error) bool { return !errors.Is(err, context.DeadlineExceeded) }}, 0, 0,
			[]func(context.Context) error{hang}, []time.Duration{0}, 300 * ms,
			"deadline reached after 1 in 300ms, cause context deadline exceeded: context deadline exceeded"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tt.timeout != 0 {
					ctx, cancel = context.WithTimeout(ctx, tt.timeout)
					defer cancel()
				}
				if tt.cancelAt != 0 {
					time.AfterFunc(tt.cancelAt, cancel)
				}
				start := time.Now()
				var calls []time.Duration
				if tt.p.Jitter == nil {
					tt.p.Jitter = retry.NoJitter
				}
				err := retry.Do(ctx, func(ctx context.Context) error {
					calls = append(calls, time.Since(start))
					return tt.fns[min(len(calls), len(tt.fns))-1](ctx)
				}, tt.p)
				got := fmt.Sprint(err)
				var re *retry.RetryExhausted
				if errors.As(err, &re) {
					got = fmt.Sprintf("%v after %d in %v, cause %v: %v", re.Reason, re.Attempts, re.Elapsed, re.Cause, re.Last)
				}
				if end := time.Since(start); got != tt.want || end != tt.end || !slices.Equal(calls, tt.calls) {
					t.Errorf("Do() = %q at %v, calls at %v; want %q at %v, calls at %v", got, end, calls, tt.want, tt.end, tt.calls)
				}
			})
		})
	}
}

// TestMinAttemptTime: fn takes 100ms and answers 503, unless its ctx ends first, and Do
// retries it within a Timeout of 1s, for 500 seeds of Rand. With MinAttemptTime 100ms, no
// attempt starts with less than that left, and Last is the 503 in every call; with none, some
// last attempts start with less, are cut off, and hide the 503 behind their ctx's error.
func TestMinAttemptTime(t *testing.T) {
	err503 := errors.New("503 Service Unavailable")
	for _, room := range []time.Duration{100 * time.Millisecond, 0} {
		synctest.Test(t, func(t *testing.T) {
			short, cut := 0, 0 // attempts started with less than 100ms left; calls whose Last is not the 503
			for seed := range 500 {
				p := retry.Policy{MaxAttempts: 100, BaseDelay: 50 * time.Millisecond, MaxDelay: 400 * time.Millisecond,
					Timeout: time.Second, MinAttemptTime: room, Rand: rand.New(rand.NewPCG(uint64(seed), 0)).Float64}
				err := retry.Do(t.Context(), func(ctx context.Context) error {
					if dl, _ := ctx.Deadline(); time.Until(dl) < 100*time.Millisecond {
						short++
					}
					select {
					case <-time.After(100 * time.Millisecond):
						return err503
					case <-ctx.Done():
						return ctx.Err()
					}
				}, p)
				var re *retry.RetryExhausted
				if !errors.As(err, &re) || re.Reason != retry.DeadlineReached {
					t.Fatalf("Do() = %v; want DeadlineReached", err)
				}
				if re.Last != err503 {
					cut++
				}
			}
			t.Logf("MinAttemptTime %v: %d of 500 calls end with Last not the 503; %d attempts started with less than 100ms left", room, cut, short)
			if room > 0 && (cut != 0 || short != 0) || room == 0 && (cut == 0 || short == 0) {
				t.Errorf("MinAttemptTime %v: %d calls cut, %d short attempts; want none with it, some without", room, cut, short)
			}
		})
	}
}

// A hook tells an attempt cut by its own time as the README says: in
// OnRetry, which Do calls only while ctx lives and the deadline is ahead,
// fn's error is context.DeadlineExceeded; in OnDone, the same, with a
// Reason other than DeadlineReached, as ctx's deadline and a passed
// Policy.Timeout end fn's ctx too. DeadlineReached also ends a call whose
// last attempt ran out of its own time if no wait fits before the deadline.
func TestWhichTimeout(t *testing.T) {
	hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	attempt := retry.Policy{MaxAttempts: 2, AttemptTimeout: time.Second}
	for _, tt := range []struct {
		name    string
		p       retry.Policy
		timeout time.Duration // of the caller's ctx, if not 0
		want    string        // what OnRetry, then OnDone, tell
	}{
		{"AttemptTimeout", attempt, 0, "OnRetry: own; OnDone: own"},
		{"AttemptTimeout, refused", retry.Policy{AttemptTimeout: time.Second, IsRetryable: func(error) bool { return false }}, 0, "OnDone: own"},
		{"Policy.Timeout", retry.Policy{Timeout: time.Second}, 0, "OnDone: not own"},
		{"AttemptTimeout, then no wait fits", retry.Policy{AttemptTimeout: time.Second, Timeout: 1050 * time.Millisecond}, 0, "OnDone: not own"},
		{"the caller's deadline", attempt, 1500 * time.Millisecond, "OnRetry: own; OnDone: not own"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				if tt.timeout != 0 {
					ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				}
				defer cancel()
				var told []string
				own := map[bool]string{true: "own", false: "not own"}
				p := tt.p
				p.Jitter = retry.NoJitter
				p.OnRetry = func(_ context.Context, _ int, err error, _ time.Duration) {
					told = append(told, "OnRetry: "+own[errors.Is(err, context.DeadlineExceeded)])
				}
				p.OnDone = func(_ context.Context, _ int, _ time.Duration, err error) {
					var re *retry.RetryExhausted
					deadline := errors.As(err, &re) && re.Reason == retry.DeadlineReached
					told = append(told, "OnDone: "+own[errors.Is(err, context.DeadlineExceeded) && !deadline])
				}
				retry.Do(ctx, hang, p)
				if got := strings.Join(told, "; "); got != tt.want {
					t.Errorf("hooks told %q; want %q", got, tt.want)
				}
			})
		})
	}
}

// busy returns a server that answers 503 with Retry-After: 2 to its first
// n requests, then "ok".
func busy(t *testing.T, n int32) *httptest.Server {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) <= n {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestGet runs the README's GET against a server that asks twice for 2s, on a fake Clock
// and Sleeper, one per call, started at time.Now(), and under synctest, with the server
// outside the bubble.
func TestGet(t *testing.T) {
	for _, tt := range []struct {
		timeout time.Duration
		want    string
	}{
		{3 * time.Second, "retry: gave up after 2 attempts in 2s (retry-after hint too long"}, // 2s and 2s do not fit in 3s
		{5 * time.Second, "ok"},
	} {
		t.Run(fmt.Sprint("fake time, a ctx of ", tt.timeout), func(t *testing.T) {
			srv := busy(t, 2)
			ft := &fakeTime{now: time.Now()} // one per call, from time.Now(): Do measures ctx's deadline on Clock
			ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
			defer cancel()
			body, err := getBody(ctx, srv.Client(), srv.URL, retry.Policy{Clock: ft, Sleeper: ft})
			if got := fmt.Sprint(string(body), err); !strings.HasPrefix(strings.TrimSpace(got), tt.want) {
				t.Errorf("getBody() = %q; want %q", got, tt.want)
			}
		})
	}
	t.Run("synctest", func(t *testing.T) {
		srv := busy(t, 2) // outside the bubble: a goroutine blocked on a socket keeps fake time still
		synctest.Test(t, func(t *testing.T) {
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}} // no idle connection left reading in the bubble
			start := time.Now()
			body, err := getBody(t.Context(), client, srv.URL, retry.Policy{})
			if string(body) != "ok" || err != nil {
				t.Fatalf("getBody() = %q, %v; want ok", body, err)
			}
			if waited := time.Since(start); waited < 4*time.Second {
				t.Errorf("getBody() waited %v; want at least 4s, as Retry-After asked twice", waited)
			}
		})
	})
}
