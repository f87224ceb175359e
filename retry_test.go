package retry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Do and DoValue refuse a nil ctx or fn, without calling OnDone.
func TestNilArguments(t *testing.T) {
	onDone := 0
	p := Policy{OnDone: func(context.Context, int, time.Duration, error) { onDone++ }}
	//lint:ignore SA1012 a nil context is the input under test
	if err := Do(nil, failOnce, p); err == nil || err.Error() != "retry: nil context" {
		t.Errorf("Do(nil ctx) = %v; want %q", err, "retry: nil context")
	}
	if err := Do(context.Background(), nil, p); err == nil || err.Error() != "retry: nil fn" {
		t.Errorf("Do(nil fn) = %v; want %q", err, "retry: nil fn")
	}
	if _, err := DoValue[int](context.Background(), nil, p); err == nil || err.Error() != "retry: nil fn" {
		t.Errorf("DoValue(nil fn) = %v; want %q", err, "retry: nil fn")
	}
	if onDone != 0 {
		t.Errorf("OnDone calls = %d; want 0", onDone)
	}
}

// fn is called at most MaxAttempts times, the first call included, with a wait between each
// two; then Do gives up with MaxAttemptsReached. By default every error is retried, timeouts too.
func TestDoAttempts(t *testing.T) {
	tests := []struct {
		name        string
		maxAttempts int
		failures    int
		calls       int
		err         error // fn's; nil for boom
	}{
		{"success at once", 5, 0, 1, nil},
		{"success on the third call", 5, 2, 3, nil},
		{"success on the last call", 5, 4, 5, nil},
		{"exhausted", 5, 10, 5, nil},
		{"zero means five", 0, 10, 5, nil},
		{"one means no retries", 1, 10, 1, nil},
		{"two", 2, 10, 2, nil},
		{"context.DeadlineExceeded is retried", 0, 2, 3, context.DeadlineExceeded},
		{"a wrapped timeout is retried", 0, 2, 3, fmt.Errorf("get: %w", context.DeadlineExceeded)},
		{"context.Canceled from an attempt's own ctx is retried", 0, 2, 3, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			fn := &flaky{n: tt.failures, err: cmp.Or(tt.err, errBoom)}
			err := Do(context.Background(), fn.call, ft.with(Policy{MaxAttempts: tt.maxAttempts}))
			waits := ft.Waits()
			if fn.calls != tt.calls || len(waits) != tt.calls-1 {
				t.Errorf("Do() calls, waits = %d, %d; want %d, %d", fn.calls, len(waits), tt.calls, tt.calls-1)
			}
			var elapsed time.Duration
			for _, w := range waits {
				elapsed += w
			}
			var re *RetryExhausted
			if tt.failures < tt.calls && err != nil || tt.failures >= tt.calls && (!errors.As(err, &re) || re.Reason != MaxAttemptsReached ||
				re.Attempts != tt.calls || re.Elapsed != elapsed || re.Last != errBoom || re.Cause != nil) {
				t.Errorf("Do() = %#v; want nil, or MaxAttemptsReached after %d attempts in %v, Last boom, no Cause", err, tt.calls, elapsed)
			}
		})
	}
}

// DoValue returns the value of the call that succeeded, or the zero value
// with Do's error; OnDone sees the call once.
func TestDoValue(t *testing.T) {
	ft := newFakeTime()
	var done []doneCall
	p := ft.with(Policy{OnDone: func(ctx context.Context, attempts int, elapsed time.Duration, err error) {
		done = append(done, doneCall{ctx, attempts, elapsed, err})
	}})
	calls := 0
	v, err := DoValue(context.Background(), func(context.Context) (string, error) {
		if calls++; calls < 3 {
			return "partial", errBoom
		}
		return "done", nil
	}, p)
	if v != "done" || err != nil || calls != 3 || len(done) != 1 || done[0].attempts != 3 || done[0].err != nil {
		t.Errorf("DoValue() = %q, %v after %d calls, OnDone calls %+v; want \"done\", nil after 3, one OnDone with 3 attempts", v, err, calls, done)
	}
	v, err = DoValue(context.Background(), func(context.Context) (string, error) { return "partial", errBoom }, ft.with(Policy{MaxAttempts: 2}))
	if v != "" || !errors.Is(err, errBoom) {
		t.Errorf("DoValue() = %q, %v; want the zero value and an error that wraps boom", v, err)
	}
}

// TestOneRetry is Do's path on the zero Policy when fn fails once, then succeeds: issue 22
// counts the functions it enters (go test -run '^TestOneRetry$' -coverprofile=c.out .).
func TestOneRetry(t *testing.T) {
	calls := 0
	err := Do(context.Background(), func(context.Context) error {
		if calls++; calls == 1 {
			return errors.New("x")
		}
		return nil
	}, Policy{})
	if err != nil || calls != 2 {
		t.Errorf("Do() = %v after %d calls; want nil after 2", err, calls)
	}
}

// A non-retryable error comes back after one attempt, as fn returned it,
// Permanent mark included.
func TestNonRetryableErrorReturnedAsIs(t *testing.T) {
	notFound := &customErr{"not found"}
	tests := []struct {
		name string
		err  error // what fn returns
		p    Policy
	}{
		{"predicate says no", notFound, Policy{IsRetryable: func(err error) bool { return err != notFound }}},
		{"Permanent, outermost", Permanent(notFound), Policy{}},
		{"Permanent, wrapped", fmt.Errorf("get: %w", Permanent(notFound)), Policy{}},
		{"Permanent, joined", errors.Join(errBoom, Permanent(notFound)), Policy{}},
		{"Permanent, joined before another error", errors.Join(Permanent(notFound), errBoom), Policy{}},
		{"Permanent, deep, beside an Unwrap that returns nil", errors.Join(unwrapsToNil{}, fmt.Errorf("a: %w", fmt.Errorf("b: %w", Permanent(errBoom)))), Policy{}},
		{"Permanent wins over IsRetryable", Permanent(notFound), Policy{IsRetryable: func(error) bool { return true }}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			onRetry := 0
			p := ft.with(tt.p)
			p.OnRetry = func(context.Context, int, error, time.Duration) { onRetry++ }
			fn := &flaky{n: 10, err: tt.err}
			if err := Do(context.Background(), fn.call, p); err != tt.err {
				t.Errorf("Do() = %#v; want %#v, the same value", err, tt.err)
			}
			if fn.calls != 1 || len(ft.Waits()) != 0 || onRetry != 0 {
				t.Errorf("Do() calls, waits, OnRetry = %d, %d, %d; want 1, 0, 0", fn.calls, len(ft.Waits()), onRetry)
			}
		})
	}
}

// An http.Client timeout, on a real server, is retried.
func TestHTTPClientTimeoutIsRetried(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			select { // slow once: hold the response until the client gives up
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	client := &http.Client{Timeout: 200 * time.Millisecond}
	var errs []error
	p := Policy{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}
	p.OnRetry = func(_ context.Context, _ int, err error, _ time.Duration) { errs = append(errs, err) }
	body, err := DoValue(context.Background(), func(ctx context.Context) (string, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil) // srv.URL is valid
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}, p)
	if body != "ok" || err != nil || hits.Load() != 2 || len(errs) != 1 || !errors.Is(errs[0], context.DeadlineExceeded) {
		t.Errorf("DoValue() = %q, %v after %d requests, retried %v; want \"ok\", nil after 2, retrying the client's timeout", body, err, hits.Load(), errs)
	}
}

// fn that succeeds is a success even if ctx was cancelled while it ran.
func TestSuccessAfterCtxCancelIsSuccess(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := Do(ctx, func(context.Context) error { cancel(); return nil }, newFakeTime().with(Policy{})); err != nil {
		t.Errorf("Do() = %v; want nil, since fn succeeded", err)
	}
}

// brokenCtx breaks the Context contract: Done is closed, Err is nil.
type brokenCtx struct{ context.Context }

func (brokenCtx) Done() <-chan struct{} { done := make(chan struct{}); close(done); return done }

// unwrapHook calls hook as errors.Unwrap reaches through it.
type unwrapHook struct {
	error
	hook func()
}

func (e unwrapHook) Unwrap() error { e.hook(); return e.error }

// When ctx is done as Do stops, the Reason is DeadlineReached if its deadline passed, else
// Canceled, whatever else stopped Do; Cause reaches ctx's cause, and OnDone sees the same error.
func TestCtxDoneReason(t *testing.T) {
	errShutdown, errSlow := errors.New("shutting down"), errors.New("too slow")
	hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	type call struct {
		ctx    context.Context
		cancel func()
	}
	cancelled := func() call {
		ctx, cancel := context.WithCancelCause(context.Background())
		return call{ctx, func() { cancel(errShutdown) }}
	}
	timed := func() call {
		ctx, cancel := context.WithDeadlineCause(context.Background(), time.Now().Add(20*time.Millisecond), errSlow)
		return call{ctx, cancel}
	}
	broken := func() call { return call{brokenCtx{context.Background()}, func() {}} }
	sleeper := func(f func(c call, ctx context.Context) error) func(c call) Policy {
		return func(c call) Policy {
			return Policy{BaseDelay: time.Millisecond, Sleeper: SleeperFunc(func(ctx context.Context, _ time.Duration) error { return f(c, ctx) })}
		}
	}
	fails := func(call) func(context.Context) error { return failOnce }
	// onRead cancels ctx as the Clock is read for the nth time (OnRetry reads it twice).
	onRead := func(n int, p Policy) func(c call) Policy {
		return func(c call) Policy {
			start, reads := time.Now(), 0
			p.Clock = ClockFunc(func() time.Time {
				if reads++; reads == n {
					c.cancel()
				}
				return start
			})
			return p
		}
	}
	sleepFails := SleeperFunc(func(context.Context, time.Duration) error { return errSlow })
	const shutdown = "(canceled: context canceled: shutting down): boom"
	const slow = "(deadline reached: ctx's deadline passed: too slow): boom"
	tests := []struct {
		name    string
		call    func() call
		p       func(c call) Policy
		fn      func(c call) func(context.Context) error
		reason  Reason
		reach   []error
		suffix  string
		retries int // calls of OnRetry
	}{
		{"cancelled during fn", cancelled, func(call) Policy { return Policy{} },
			func(c call) func(context.Context) error {
				return func(context.Context) error { c.cancel(); return errBoom }
			}, Canceled, []error{context.Canceled, errShutdown, errBoom}, shutdown, 0},
		{"cancelled during fn, which returns Permanent", cancelled, func(call) Policy { return Policy{} },
			func(c call) func(context.Context) error {
				return func(context.Context) error { c.cancel(); return Permanent(errBoom) }
			}, Canceled, []error{context.Canceled, errShutdown, errBoom}, shutdown, 0},
		{"cancelled while fn hangs, with a predicate that retries nothing", cancelled,
			func(call) Policy { return Policy{IsRetryable: func(error) bool { return false }} },
			func(c call) func(context.Context) error {
				return func(ctx context.Context) error { c.cancel(); return hang(ctx) }
			}, Canceled, []error{context.Canceled, errShutdown}, "(canceled: context canceled: shutting down): context canceled", 0},
		{"cancelled during the wait", cancelled, sleeper(func(c call, ctx context.Context) error { c.cancel(); return ctx.Err() }),
			fails, Canceled, []error{context.Canceled, errShutdown, errBoom}, shutdown, 1},
		{"cancelled during a wait that returns nil", cancelled, sleeper(func(c call, _ context.Context) error { c.cancel(); return nil }),
			fails, Canceled, []error{context.Canceled, errShutdown, errBoom}, shutdown, 1},
		{"cancelled in IsRetryable, on the last attempt", cancelled,
			func(c call) Policy {
				return Policy{MaxAttempts: 1, IsRetryable: func(error) bool { c.cancel(); return true }}
			}, fails, Canceled, []error{context.Canceled, errBoom}, shutdown, 0},
		{"cancelled in the Jitter, with a hint too long", cancelled,
			func(c call) Policy {
				return Policy{MaxDelay: time.Second, Jitter: func(n int, base, max, prev time.Duration, u float64) time.Duration { c.cancel(); return 0 }}
			},
			func(call) func(context.Context) error {
				return func(context.Context) error { return After(time.Hour, errBoom) }
			}, Canceled, []error{context.Canceled, errBoom}, shutdown, 0},
		{"cancelled in IsRetryable, which refuses", cancelled,
			func(c call) Policy { return Policy{IsRetryable: func(error) bool { c.cancel(); return false }} },
			fails, Canceled, []error{context.Canceled, errShutdown, errBoom}, shutdown, 0},
		{"cancelled in IsRetryable, with no Budget left", cancelled,
			func(c call) Policy {
				b := NewBudget(0, 1)
				b.spend()
				return Policy{Budget: b, IsRetryable: func(error) bool { c.cancel(); return true }}
			}, fails, Canceled, []error{context.Canceled, errBoom}, shutdown, 0},
		{"cancelled as Policy.Timeout passes", cancelled,
			func(c call) Policy {
				start, reads := time.Now(), 0
				return Policy{Timeout: time.Second, Clock: ClockFunc(func() time.Time {
					if reads++; reads == 1 {
						return start
					}
					c.cancel() // the caller leaves as the Timeout passes
					return start.Add(2 * time.Second)
				})}
			}, fails, Canceled, []error{context.Canceled, errShutdown, errBoom}, shutdown, 0},
		{"cancelled in Unwrap of fn's error, on the way to a Permanent mark", cancelled, func(call) Policy { return Policy{} },
			func(c call) func(context.Context) error {
				return func(context.Context) error { return unwrapHook{Permanent(errBoom), c.cancel} }
			}, Canceled, []error{context.Canceled, errShutdown, errBoom}, shutdown, 0},
		{"cancelled as the Clock is read after the wait", cancelled, onRead(6, Policy{Timeout: time.Hour, Sleeper: SleeperFunc(func(context.Context, time.Duration) error { return nil })}),
			fails, Canceled, []error{context.Canceled, errShutdown, errBoom}, shutdown, 1},
		{"cancelled as the Clock is read on the last attempt", cancelled, onRead(3, Policy{Timeout: time.Hour, MaxAttempts: 1}),
			fails, Canceled, []error{context.Canceled, errShutdown, errBoom}, shutdown, 0},
		{"cancelled as the Clock is read after the Sleeper failed", cancelled, onRead(4, Policy{Sleeper: sleepFails}),
			fails, Canceled, []error{context.Canceled, errShutdown, errBoom}, shutdown, 1},
		{"cancelled as the Clock is read after a Permanent error", cancelled, onRead(2, Policy{}),
			func(call) func(context.Context) error {
				return func(context.Context) error { return Permanent(errBoom) }
			}, Canceled, []error{context.Canceled, errShutdown, errBoom}, shutdown, 0},
		{"a broken ctx ends the wait", broken, func(call) Policy { return Policy{BaseDelay: time.Hour, MaxDelay: time.Hour} },
			fails, Canceled, []error{errBrokenCtx, errBoom}, "(canceled: retry: ctx.Done was closed while ctx.Err was nil): boom", 1},
		{"fn hangs until ctx's deadline", timed, func(call) Policy { return Policy{Timeout: time.Hour} },
			func(call) func(context.Context) error { return hang }, DeadlineReached, []error{context.DeadlineExceeded, errSlow},
			"(deadline reached: ctx's deadline passed: too slow): context deadline exceeded", 0},
		{"ctx's deadline ends the wait", timed, sleeper(func(_ call, ctx context.Context) error { <-ctx.Done(); return ctx.Err() }),
			fails, DeadlineReached, []error{context.DeadlineExceeded, errSlow, errBoom}, slow, 1},
		{"the Sleeper fails as ctx's deadline passes", timed, sleeper(func(_ call, ctx context.Context) error { <-ctx.Done(); return errShutdown }),
			fails, DeadlineReached, []error{context.DeadlineExceeded, errBoom}, slow, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.call()
			defer c.cancel()
			var done error
			retries := 0
			p := tt.p(c)
			p.OnRetry = func(context.Context, int, error, time.Duration) { retries++ }
			p.OnDone = func(_ context.Context, _ int, _ time.Duration, err error) { done = err }
			err := Do(c.ctx, tt.fn(c), p)
			var re *RetryExhausted
			if !errors.As(err, &re) || re.Reason != tt.reason || re.Attempts != 1 || retries != tt.retries || done != err {
				t.Fatalf("Do() = %v after %d OnRetry calls, OnDone got %v; want %v after 1 attempt, %d OnRetry calls, the same in both",
					err, retries, done, tt.reason, tt.retries)
			}
			for _, want := range tt.reach {
				if !errors.Is(err, want) {
					t.Errorf("Do() = %v; want it to reach %v", err, want)
				}
			}
			if !strings.HasSuffix(err.Error(), tt.suffix) {
				t.Errorf("Do().Error() = %q; want it to end with %q", err, tt.suffix)
			}
		})
	}
}

// When a deadline has passed as fn fails, or while the predicate runs, Do
// reports it whatever the predicate and a hint say; a Permanent error is
// still returned as it is.
func TestDeadlineBeforeThePredicate(t *testing.T) {
	errFinal := errors.New("final")
	permFinal := Permanent(errFinal)
	refuse := func(error) bool { return false }
	tests := []struct {
		name        string
		p           Policy
		ctxTimeout  time.Duration
		err         error // fn's error
		inPredicate bool  // whether the 2s pass in IsRetryable (true if p's is nil) rather than in fn
		want        error // nil: a DeadlineReached, with err as Last
	}{
		{"Timeout, a timeout refused by IsRetryable", Policy{Timeout: time.Second, IsRetryable: func(err error) bool { return !errors.Is(err, context.DeadlineExceeded) }},
			0, context.DeadlineExceeded, false, nil},
		{"Timeout, every error refused", Policy{Timeout: time.Second, IsRetryable: refuse}, 0, errFinal, false, nil},
		{"ctx deadline, every error refused", Policy{IsRetryable: refuse}, time.Second, errFinal, false, nil},
		{"Timeout, Permanent", Policy{Timeout: time.Second}, 0, permFinal, false, permFinal},
		{"before the Timeout, refused", Policy{Timeout: time.Hour, IsRetryable: refuse}, 0, errFinal, false, errFinal},
		{"Timeout passes in IsRetryable, which refuses", Policy{Timeout: time.Second, IsRetryable: refuse}, 0, errFinal, true, nil},
		{"ctx deadline passes on Clock in IsRetryable, which refuses", Policy{IsRetryable: refuse}, time.Second, errFinal, true, nil},
		{"Timeout passes in IsRetryable, hint above MaxDelay", Policy{Timeout: time.Second, MaxDelay: time.Second}, 0, After(time.Minute, errFinal), true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			calls := 0
			p := ft.with(tt.p)
			if tt.inPredicate {
				p.IsRetryable = func(err error) bool {
					ft.advance(2 * time.Second)
					return tt.p.IsRetryable == nil || tt.p.IsRetryable(err)
				}
			}
			err := Do(ft.deadlineCtx(t, tt.ctxTimeout), func(context.Context) error {
				if calls++; !tt.inPredicate {
					ft.advance(2 * time.Second)
				}
				return tt.err
			}, p)
			var re *RetryExhausted
			if tt.want != nil && err != tt.want || tt.want == nil && (!errors.As(err, &re) || re.Reason != DeadlineReached ||
				re.Attempts != 1 || re.Last != tt.err || !errors.Is(err, context.DeadlineExceeded)) || calls != 1 {
				t.Errorf("Do() = %v after %d calls; want %v, or DeadlineReached with Last %v, after 1", err, calls, tt.want, tt.err)
			}
		})
	}
}

// A Clock read about 300 years past ctx's deadline, where time.Time.Sub
// saturates, ends the retries at the first failure.
func TestClockFarPastTheDeadline(t *testing.T) {
	ft := newFakeTime()
	ctx := ft.deadlineCtx(t, time.Hour)
	ft.advance(150 * 365 * 24 * time.Hour)
	ft.advance(150 * 365 * 24 * time.Hour) // 300 years: more than a Duration holds
	calls := 0
	err := Do(ctx, func(context.Context) error { calls++; ft.advance(time.Second); return errBoom }, ft.with(Policy{}))
	var re *RetryExhausted
	if !errors.As(err, &re) || re.Reason != DeadlineReached || calls != 1 {
		t.Errorf("Do() = %v after %d calls; want DeadlineReached after 1", err, calls)
	}
}

// A seeded Rand gives the same schedule, and every wait of the default
// Jitter lies in [BaseDelay, MaxDelay].
func TestScheduleIsDeterministic(t *testing.T) {
	schedule := func(seed uint64) []time.Duration {
		ft := newFakeTime()
		Do(context.Background(), (&flaky{n: 100, err: errBoom}).call, ft.with(Policy{MaxAttempts: 20, MaxDelay: 5 * time.Second, Rand: seqRand(seed)}))
		return ft.Waits()
	}
	a, b := schedule(7), schedule(7)
	if !slices.Equal(a, b) {
		t.Errorf("waits with seed 7 = %v, then %v; want the same", a, b)
	}
	if c := schedule(8); slices.Equal(a, c) {
		t.Errorf("waits with seeds 7 and 8 = %v; want different schedules", a)
	}
	for _, w := range a {
		if w < DefaultBaseDelay || w > 5*time.Second {
			t.Errorf("wait %v; want it in [%v, 5s]", w, DefaultBaseDelay)
		}
	}
}

// The Jitter sees u in [0, 1] whatever Rand returns; Do keeps its
// invariants with such a Rand.
func TestRandOutOfRange(t *testing.T) {
	values := []float64{7, -3, math.NaN(), math.Inf(1), math.Inf(-1), 1, 0.5}
	var seen []float64
	calls := 0
	p := newFakeTime().with(Policy{
		MaxAttempts: len(values) + 1,
		Rand:        func() float64 { calls++; return values[calls-1] },
		Jitter: func(n int, base, max, prev time.Duration, u float64) time.Duration {
			seen = append(seen, u)
			return base
		},
	})
	Do(context.Background(), (&flaky{n: 10, err: errBoom}).call, p)
	if want := []float64{1, 0, 0, 1, 0, 1, 0.5}; !slices.Equal(seen, want) {
		t.Errorf("Jitter saw u = %v; want %v", seen, want)
	}
	for _, u := range values {
		for _, j := range []Jitter{FullJitter, DecorrelatedJitter} {
			checkDo(t, Policy{MaxAttempts: 10, BaseDelay: 100 * time.Millisecond, MaxDelay: 10 * time.Second, Jitter: j, Rand: constRand(u)}, doInput{failures: 100})
		}
	}
}

// Do clamps what a Jitter returns into [0, MaxDelay], for the wait,
// OnRetry and the next call's prev alike.
func TestJitterOutOfRange(t *testing.T) {
	for _, tt := range []struct{ w, want time.Duration }{
		{-time.Hour, 0}, {math.MinInt64, 0}, {time.Hour, time.Second}, {math.MaxInt64, time.Second},
	} {
		ft := newFakeTime()
		var prevs, chosen []time.Duration
		bad := func(_ int, _, _, prev time.Duration, _ float64) time.Duration {
			prevs = append(prevs, prev)
			return tt.w
		}
		p := ft.with(Policy{MaxAttempts: 3, MaxDelay: time.Second, Jitter: bad})
		p.OnRetry = func(_ context.Context, _ int, _ error, wait time.Duration) { chosen = append(chosen, wait) }
		Do(context.Background(), (&flaky{n: 5, err: errBoom}).call, p)
		want := []time.Duration{tt.want, tt.want}
		if got := ft.Waits(); !slices.Equal(got, want) || !slices.Equal(chosen, want) || !slices.Equal(prevs, []time.Duration{DefaultBaseDelay, tt.want}) {
			t.Errorf("Jitter returning %v: waits, OnRetry waits, prevs = %v, %v, %v; want %v, %v, [%v %v]",
				tt.w, got, chosen, prevs, want, want, DefaultBaseDelay, tt.want)
		}
	}
}

// Without a deadline only MaxDelay limits a wait or a hint: the longest Duration, which
// ParseRetryAfter gives for a huge number of seconds, is not time left.
func TestNoDeadlineOnlyMaxDelayLimits(t *testing.T) {
	longest, _ := ParseRetryAfter("99999999999", time.Now())
	tests := []struct {
		name string
		p    Policy
		err  error
	}{
		{"a hint of the longest Duration", Policy{MaxDelay: math.MaxInt64}, After(longest, errBoom)},
		{"a wait of the longest Duration", Policy{BaseDelay: math.MaxInt64, Jitter: NoJitter}, errBoom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			p := ft.with(tt.p)
			p.MaxAttempts = 2
			err := Do(context.Background(), func(context.Context) error { return tt.err }, p)
			var re *RetryExhausted
			if !errors.As(err, &re) || re.Reason != MaxAttemptsReached || !slices.Equal(ft.Waits(), []time.Duration{math.MaxInt64}) {
				t.Errorf("Do() = %v after waits %v; want MaxAttemptsReached after one wait of %v", err, ft.Waits(), time.Duration(math.MaxInt64))
			}
		})
	}
}

// The Timeout or ctx's deadline ends the retries without clipping a wait.
func TestTimeout(t *testing.T) {
	for _, tt := range []struct {
		name       string
		p          Policy
		ctxTimeout time.Duration
	}{
		{"Timeout", Policy{Timeout: 10 * time.Second}, 0},
		{"ctx deadline", Policy{}, 10 * time.Second},
	} {
		t.Run("a wait that would outlast the "+tt.name+" is not started", func(t *testing.T) {
			ft := newFakeTime()
			p := tt.p
			p.MaxAttempts, p.BaseDelay, p.MaxDelay, p.Jitter = 100, time.Second, time.Minute, NoJitter
			err := Do(ft.deadlineCtx(t, tt.ctxTimeout), (&flaky{n: 100, err: errBoom}).call, ft.with(p))
			// waits 1s, 2s, 4s; at 7s the next wait, 8s, would end after the deadline
			if got, want := ft.Waits(), []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}; !slices.Equal(got, want) {
				t.Errorf("Do() waits = %v; want %v", got, want)
			}
			assertDeadlineReached(t, err, 4)
			var re *RetryExhausted
			if errors.As(err, &re) && re.Elapsed != 7*time.Second {
				t.Errorf("Do() Elapsed = %v; want 7s", re.Elapsed)
			}
		})
	}
	t.Run("herd spreads: waits are not clipped to end together", func(t *testing.T) {
		ends := map[time.Duration]int{}
		for seed := range 20 {
			ft := newFakeTime()
			start := ft.Now()
			p := ft.with(Policy{MaxAttempts: 1000, BaseDelay: 100 * time.Millisecond, Timeout: 5 * time.Second, Rand: seqRand(uint64(seed))})
			Do(context.Background(), (&flaky{n: 1000, err: errBoom}).call, p)
			ends[ft.Now().Sub(start)]++
		}
		for end, n := range ends {
			if n > 2 {
				t.Errorf("%d of 20 clients made their last attempt at %v; want them spread", n, end)
			}
		}
	})
	t.Run("no wait ends at or after the deadline", func(t *testing.T) { // checkDo checks each wait
		for seed := range 50 {
			p := Policy{MaxAttempts: 1000, BaseDelay: 10 * time.Millisecond, MaxDelay: time.Second, Timeout: 3 * time.Second, Rand: seqRand(uint64(seed))}
			checkDo(t, p, doInput{failures: 1000})
		}
	})
}

// With 1ns left before a deadline a wait of 0 fits, but not a hint nor a wait of all the
// time left; with nothing left, the deadline has passed.
func TestTimeLeftAtTheEdge(t *testing.T) {
	tests := []struct {
		name       string
		p          Policy
		ctxTimeout time.Duration
		callCost   time.Duration // fake time the first call takes
		wait       time.Duration // the Jitter's
		err        error         // what fn returns
		reason     Reason
		attempts   int
		waits      []time.Duration
	}{
		{"1ns before Timeout", Policy{Timeout: time.Second}, 0, time.Second - 1, 0, errBoom, MaxAttemptsReached, 2, []time.Duration{0}},
		{"1ns before Timeout, 1ns hint", Policy{Timeout: time.Second}, 0, time.Second - 1, 0, hintErr(1), HintTooLong, 1, nil},
		{"a wait of all the time left before Timeout", Policy{Timeout: time.Second}, 0, 0, time.Second, errBoom, DeadlineReached, 1, nil},
		{"at Timeout", Policy{Timeout: time.Second}, 0, time.Second, 0, errBoom, DeadlineReached, 1, nil},
		{"past Timeout", Policy{Timeout: time.Second}, 0, time.Hour, 0, errBoom, DeadlineReached, 1, nil},
		{"1ns before ctx deadline", Policy{}, time.Hour, time.Hour - 1, 0, errBoom, MaxAttemptsReached, 2, []time.Duration{0}},
		{"1ns before ctx deadline, 1ns hint", Policy{}, time.Hour, time.Hour - 1, 0, hintErr(1), HintTooLong, 1, nil},
		{"a wait of all the time left before ctx deadline", Policy{}, time.Hour, 0, time.Hour, errBoom, DeadlineReached, 1, nil},
		{"at ctx deadline", Policy{}, time.Hour, time.Hour, 0, errBoom, DeadlineReached, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			calls := 0
			fn := func(context.Context) error {
				if calls++; calls == 1 {
					ft.advance(tt.callCost)
				}
				return tt.err
			}
			p := tt.p
			p.MaxAttempts, p.MaxDelay = 2, 2*time.Hour
			p.Jitter = func(int, time.Duration, time.Duration, time.Duration, float64) time.Duration { return tt.wait }
			err := Do(ft.deadlineCtx(t, tt.ctxTimeout), fn, ft.with(p))
			var re *RetryExhausted
			if !errors.As(err, &re) || re.Reason != tt.reason || re.Attempts != tt.attempts || !slices.Equal(ft.Waits(), tt.waits) {
				t.Errorf("Do() = %v after waits %v; want %v after %d attempts, waits %v", err, ft.Waits(), tt.reason, tt.attempts, tt.waits)
			}
			if re != nil && (re.Reason == DeadlineReached) != (re.Cause == context.DeadlineExceeded) {
				t.Errorf("Do() = %v with Cause %v; want Cause context.DeadlineExceeded for DeadlineReached alone", err, re.Cause)
			}
		})
	}
}

// fn is never called after a deadline, however late OnRetry or the Sleeper makes the next
// attempt; the token of the retry that did not happen is given back.
func TestNoCallAfterADeadline(t *testing.T) {
	tests := []struct {
		name       string
		p          Policy
		ctxTimeout time.Duration
		onRetry    time.Duration // fake time OnRetry takes
		late       time.Duration // how late the Sleeper returns
		calls      []time.Duration
		limit      string // the deadline named in the message
	}{
		// 300ms waits: OnRetry ends the first at 600ms, the second at 1.2s, past the deadline
		{"Timeout, slow OnRetry", Policy{Timeout: time.Second, BaseDelay: 300 * time.Millisecond}, 0, 600 * time.Millisecond, 0,
			[]time.Duration{0, 600 * time.Millisecond}, "Policy.Timeout passed"},
		{"ctx deadline, slow OnRetry", Policy{BaseDelay: 300 * time.Millisecond}, time.Second, 600 * time.Millisecond, 0,
			[]time.Duration{0, 600 * time.Millisecond}, "ctx's deadline passed"},
		// a 990ms wait fits a 1s deadline; the Sleeper ends it at 1.005s
		{"Timeout, late Sleeper", Policy{Timeout: time.Second, BaseDelay: 990 * time.Millisecond}, 0, 0, 15 * time.Millisecond,
			[]time.Duration{0}, "Policy.Timeout passed"},
		{"ctx deadline, late Sleeper", Policy{BaseDelay: 990 * time.Millisecond}, time.Second, 0, 15 * time.Millisecond,
			[]time.Duration{0}, "ctx's deadline passed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			start := ft.Now()
			p := tt.p
			p.MaxDelay, p.Jitter, p.Budget, p.Clock = p.BaseDelay, NoJitter, NewBudget(0, 5), ft
			p.OnRetry = func(context.Context, int, error, time.Duration) { ft.advance(tt.onRetry) }
			p.Sleeper = SleeperFunc(func(ctx context.Context, d time.Duration) error { return ft.Sleep(ctx, d+tt.late) })
			var at []time.Duration
			err := Do(ft.deadlineCtx(t, tt.ctxTimeout), func(ctx context.Context) error {
				at = append(at, ft.Now().Sub(start))
				return errBoom
			}, p)
			if !slices.Equal(at, tt.calls) {
				t.Errorf("fn called at %v; want %v", at, tt.calls)
			}
			assertDeadlineReached(t, err, len(tt.calls))
			if err != nil && !strings.Contains(err.Error(), "(deadline reached: "+tt.limit+")") {
				t.Errorf("Do() = %q; want it to say %q", err, tt.limit)
			}
			// the tokens of the retries made are spent; the last one is given back
			if got, want := p.Budget.Tokens(), float64(5-len(tt.calls)+1); got != want {
				t.Errorf("Budget.Tokens() = %v; want %v", got, want)
			}
		})
	}
}

// A wait that ends just before ctx's deadline races its timer on the default Sleeper;
// whichever wins, Do ends DeadlineReached.
func TestDeadlineRaceEndsDeadlineReached(t *testing.T) {
	for range 40 {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		deadline, _ := ctx.Deadline()
		p := Policy{MaxAttempts: math.MaxInt, Jitter: func(int, time.Duration, time.Duration, time.Duration, float64) time.Duration {
			return max(time.Until(deadline)-200*time.Microsecond, time.Millisecond) // after the first wait, no second fits
		}}
		err := Do(ctx, failOnce, p)
		cancel()
		var re *RetryExhausted
		if !errors.As(err, &re) || re.Reason != DeadlineReached || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Do() = %v; want DeadlineReached, reaching context.DeadlineExceeded", err)
		}
	}
}

// A Clock that goes back does not stretch a deadline, nor make Elapsed
// negative or less than a deadline seen to pass; one that jumps forward by
// years passes it without overflow.
func TestClockJumps(t *testing.T) {
	const years = 200 * 365 * 24 * time.Hour
	tests := []struct {
		name       string
		p          Policy
		ctxTimeout time.Duration
		callCost   time.Duration // how far each call of fn moves the clock
		back       time.Duration // how far each wait moves it back
		reason     Reason
		attempts   int
		elapsed    time.Duration
		left       time.Duration // the most the last attempt's ctx has left; 0: no deadline
	}{
		// the elapsed time reads 0 after each wait: the Timeout never passes
		{"back an hour in each wait", Policy{MaxAttempts: 6, Timeout: 2 * time.Second, Jitter: NoJitter}, 0, 0, time.Hour,
			MaxAttemptsReached, 6, 0, 2 * time.Second},
		// the hour back does not make a 2s wait fit in a 1s Timeout
		{"back before the start", Policy{BaseDelay: 2 * time.Second, MaxDelay: 6 * time.Second, Timeout: time.Second}, 0, -time.Hour, 0,
			DeadlineReached, 1, 0, time.Second},
		// at 5s of a 10s Timeout, back to 1s: the next attempt still has at most 5s
		{"back after 5s", Policy{Timeout: 10 * time.Second, MaxAttempts: 2, BaseDelay: time.Second, MaxDelay: time.Second, Jitter: NoJitter},
			0, 5 * time.Second, 4 * time.Second, MaxAttemptsReached, 2, 6 * time.Second, 5 * time.Second},
		{"forward by years, no deadline", Policy{MaxAttempts: 3}, 0, years, 0, MaxAttemptsReached, 3, math.MaxInt64, 0},
		{"forward by years, Timeout", Policy{Timeout: time.Hour}, 0, years, 0, DeadlineReached, 1, years, time.Hour},
		{"forward by years, ctx deadline", Policy{}, time.Hour, years, 0, DeadlineReached, 1, years, 0}, // ctx is alive: the deadline passed on Clock
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			p := ft.with(tt.p)
			p.Sleeper = SleeperFunc(func(context.Context, time.Duration) error { ft.advance(-tt.back); return nil })
			var left time.Duration
			err := Do(ft.deadlineCtx(t, tt.ctxTimeout), func(ctx context.Context) error {
				dl, _ := ctx.Deadline()
				left = time.Until(dl)
				ft.advance(tt.callCost)
				return errBoom
			}, p)
			var re *RetryExhausted
			if !errors.As(err, &re) || re.Reason != tt.reason || re.Attempts != tt.attempts || re.Elapsed != tt.elapsed || re.Last != errBoom {
				t.Errorf("Do() = %+v; want %v after %d attempts in %v, Last boom", re, tt.reason, tt.attempts, tt.elapsed)
			}
			if tt.left > 0 && left > tt.left {
				t.Errorf("the last attempt's ctx ends in %v; want at most %v", left, tt.left)
			}
			if tt.back == 0 {
				checkDo(t, tt.p, doInput{failures: 100, callCost: tt.callCost, ctxTimeout: tt.ctxTimeout})
			}
		})
	}
	checkDo(t, Policy{MaxAttempts: 8, Timeout: time.Second}, doInput{failures: 100, callCost: -time.Hour})
}

// Elapsed is at least a deadline that Do saw pass, though the Clock then
// went back: reads at 0, 2s (the deadline check), then 500ms.
func TestElapsedCoversThePassedDeadline(t *testing.T) {
	start, reads := time.Now(), []time.Duration{0, 2 * time.Second, time.Second / 2}
	clock := ClockFunc(func() time.Time { d := reads[0]; reads = reads[min(1, len(reads)-1):]; return start.Add(d) })
	err := Do(context.Background(), failOnce, Policy{Timeout: time.Second, Clock: clock})
	if re := (*RetryExhausted)(nil); !errors.As(err, &re) || re.Reason != DeadlineReached || re.Elapsed != 2*time.Second {
		t.Errorf("Do() = %v; want DeadlineReached in 2s", err)
	}
}

// The clock is read once at the start, then only where a deadline, a hook
// or the final error needs it.
func TestClockReads(t *testing.T) {
	onRetry := func(context.Context, int, error, time.Duration) {}
	onDone := func(context.Context, int, time.Duration, error) {}
	refuse := func(error) bool { return false }
	tests := []struct {
		name       string
		failures   int
		p          Policy
		ctxTimeout time.Duration
		want       int
	}{
		{"success", 0, Policy{}, 0, 1},
		{"3 retries, then success", 3, Policy{}, 0, 1},
		{"exhausted", 10, Policy{MaxAttempts: 3}, 0, 2},                                       // start, Elapsed
		{"3 retries with a Timeout", 3, Policy{Timeout: time.Hour}, 0, 10},                    // start, then per failure: the decision, the wait's check, after the wait
		{"3 retries with a ctx deadline", 3, Policy{}, time.Hour, 10},                         // the same
		{"exhausted with a Timeout", 10, Policy{MaxAttempts: 3, Timeout: time.Hour}, 0, 9},    // start, 2 failures × 3, the last decision, Elapsed
		{"3 retries with OnRetry", 3, Policy{OnRetry: onRetry}, 0, 7},                         // start, two around each OnRetry
		{"success with OnDone", 0, Policy{OnDone: onDone}, 0, 2},                              // start, elapsed
		{"exhausted with OnDone", 10, Policy{MaxAttempts: 3, OnDone: onDone}, 0, 2},           // start, Elapsed shared with OnDone
		{"refused", 10, Policy{IsRetryable: refuse}, 0, 1},                                    // start: no deadline to check again
		{"refused with a Timeout", 10, Policy{Timeout: time.Hour, IsRetryable: refuse}, 0, 3}, // start, the decision, the deadline again after the predicate
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			reads := 0
			p := ft.with(tt.p)
			p.Clock = ClockFunc(func() time.Time { reads++; return ft.Now() })
			Do(ft.deadlineCtx(t, tt.ctxTimeout), (&flaky{n: tt.failures, err: errBoom}).call, p)
			if reads != tt.want {
				t.Errorf("Clock reads = %d; want %d", reads, tt.want)
			}
		})
	}
}

// fn's ctx ends, in real time, when the Clock's time left before the Timeout runs out, or
// AttemptTimeout in; ctx's deadline on a Clock that runs ahead does not shorten it.
func TestFnCtx(t *testing.T) {
	tests := []struct {
		name       string
		p          Policy
		ctxTimeout time.Duration // in real time
		ahead      time.Duration // how far Clock runs ahead of real time
		callCost   time.Duration // fake time each call takes
		want       []time.Duration
	}{
		{"Timeout, 2s per call", Policy{MaxAttempts: 4, BaseDelay: time.Second, MaxDelay: time.Second, Timeout: 10 * time.Second, Jitter: NoJitter},
			0, 0, 2 * time.Second, []time.Duration{10 * time.Second, 7 * time.Second, 4 * time.Second, time.Second}},
		{"Timeout 1ns", Policy{Timeout: 1, MaxAttempts: 1}, 0, 0, 0, []time.Duration{1}},
		{"Timeout, ctx deadline passed on Clock", Policy{Timeout: 5 * time.Second, MaxAttempts: 1}, 10 * time.Second, time.Hour, 0,
			[]time.Duration{5 * time.Second}},
		{"AttemptTimeout, ctx deadline nearer on Clock only", Policy{AttemptTimeout: 5 * time.Second, MaxAttempts: 3, BaseDelay: 3 * time.Second, MaxDelay: 3 * time.Second, Jitter: NoJitter},
			10 * time.Second, 0, 0, []time.Duration{5 * time.Second, 5 * time.Second, 5 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.ctxTimeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.ctxTimeout)
				defer cancel()
			}
			ft := &fakeTime{now: time.Now().Add(tt.ahead)}
			var lasts []time.Duration
			Do(ctx, func(ctx context.Context) error {
				if dl, ok := ctx.Deadline(); ok {
					lasts = append(lasts, time.Until(dl))
				}
				ft.advance(tt.callCost)
				return errBoom
			}, ft.with(tt.p))
			if len(lasts) != len(tt.want) {
				t.Fatalf("fn's ctx ends in %v; want about %v", lasts, tt.want)
			}
			for i, d := range lasts {
				if d > tt.want[i] || d < tt.want[i]-time.Second {
					t.Errorf("attempt %d: fn's ctx ends in %v; want about %v, at most that", i+1, d, tt.want[i])
				}
			}
		})
	}
}

// OnRetry sees the ctx of the call, the failed attempt, its error and the wait.
func TestOnRetry(t *testing.T) {
	type key struct{}
	type call struct {
		ctx     any
		attempt int
		err     error
		wait    time.Duration
	}
	ft := newFakeTime()
	var got []call
	p := ft.with(Policy{MaxAttempts: 4, Rand: seqRand(1)})
	p.OnRetry = func(ctx context.Context, attempt int, err error, wait time.Duration) {
		got = append(got, call{ctx.Value(key{}), attempt, err, wait})
	}
	errs := []error{errors.New("e1"), errors.New("e2"), errors.New("e3"), errors.New("e4")}
	i := 0
	Do(context.WithValue(context.Background(), key{}, "request 42"), func(context.Context) error { i++; return errs[i-1] }, p)
	waits := ft.Waits()
	if len(got) != 3 || len(waits) != 3 {
		t.Fatalf("OnRetry calls, waits = %d, %d; want 3, 3", len(got), len(waits))
	}
	for i, c := range got {
		if want := (call{"request 42", i + 1, errs[i], waits[i]}); c != want {
			t.Errorf("OnRetry call %d = %v; want %v", i, c, want)
		}
	}
}

// The wait counts from when it was chosen: the Sleeper gets what OnRetry left of it, at
// least 0 and no more if the Clock goes back, so no wait ends after a deadline.
func TestOnRetryTimeComesOffTheWait(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name       string
		p          Policy
		ctxTimeout time.Duration
		onRetry    time.Duration // fake time OnRetry takes
		chosen     time.Duration // the wait OnRetry is given
		sleeps     []time.Duration
		reason     Reason
	}{
		{"OnRetry takes no time", Policy{MaxAttempts: 2}, 0, 0, 100 * ms, []time.Duration{100 * ms}, MaxAttemptsReached},
		{"OnRetry takes 30ms", Policy{MaxAttempts: 2}, 0, 30 * ms, 100 * ms, []time.Duration{70 * ms}, MaxAttemptsReached},
		{"OnRetry takes the whole wait", Policy{MaxAttempts: 2}, 0, 100 * ms, 100 * ms, []time.Duration{0}, MaxAttemptsReached},
		{"OnRetry outlasts the wait", Policy{MaxAttempts: 2}, 0, 2 * time.Second, 100 * ms, []time.Duration{0}, MaxAttemptsReached},
		{"the Clock goes back an hour in OnRetry", Policy{MaxAttempts: 2}, 0, -time.Hour, 100 * ms, []time.Duration{100 * ms}, MaxAttemptsReached},
		// the 1s wait chosen at 0s ends at 1s; the next, 2s, would end past the deadline
		{"Timeout", Policy{BaseDelay: time.Second, Timeout: 1500 * ms}, 0, 800 * ms, time.Second, []time.Duration{200 * ms}, DeadlineReached},
		{"ctx deadline", Policy{BaseDelay: time.Second}, 1500 * ms, 800 * ms, time.Second, []time.Duration{200 * ms}, DeadlineReached},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			var chosen []time.Duration
			p := ft.with(tt.p)
			p.MaxDelay, p.Jitter = time.Minute, NoJitter
			p.OnRetry = func(_ context.Context, _ int, _ error, wait time.Duration) {
				chosen = append(chosen, wait)
				ft.advance(tt.onRetry)
			}
			err := Do(ft.deadlineCtx(t, tt.ctxTimeout), failOnce, p)
			if len(chosen) != 1 || chosen[0] != tt.chosen || !slices.Equal(ft.Waits(), tt.sleeps) {
				t.Errorf("OnRetry waits, Sleeper waits = %v, %v; want [%v], %v", chosen, ft.Waits(), tt.chosen, tt.sleeps)
			}
			var re *RetryExhausted
			if !errors.As(err, &re) || re.Reason != tt.reason || re.Attempts != 2 {
				t.Errorf("Do() = %v; want %v after 2 attempts", err, tt.reason)
			}
		})
	}
}

// A Sleeper's error ends Do with SleepFailed, even if the deadline passed during the
// sleep, but not if it passed before, in OnRetry; a Sleeper that returns early is
// trusted, and MaxAttempts still bounds the calls.
func TestSleeper(t *testing.T) {
	errSleep := errors.New("sleeper broke")
	tests := []struct {
		name     string
		p        Policy
		onRetry  time.Duration // how far OnRetry moves the clock
		advance  time.Duration // how far the Sleeper moves the clock
		err      error         // what the Sleeper returns
		reason   Reason
		attempts int
	}{
		{"fails", Policy{}, 0, 0, errSleep, SleepFailed, 1},
		{"fails as the deadline passes", Policy{Timeout: time.Second, BaseDelay: 10 * time.Millisecond}, 0, time.Hour, errSleep, SleepFailed, 1},
		{"fails after the deadline passed in OnRetry", Policy{Timeout: time.Second, BaseDelay: 10 * time.Millisecond}, time.Hour, 0, errSleep, DeadlineReached, 1},
		{"returns at the deadline", Policy{Timeout: time.Second, BaseDelay: 10 * time.Millisecond}, 0, time.Second, nil, DeadlineReached, 1},
		{"returns early", Policy{MaxAttempts: 4, Timeout: time.Minute}, 0, 0, nil, MaxAttemptsReached, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			p := ft.with(tt.p)
			p.OnRetry = func(context.Context, int, error, time.Duration) { ft.advance(tt.onRetry) }
			p.Sleeper = SleeperFunc(func(context.Context, time.Duration) error { ft.advance(tt.advance); return tt.err })
			fn := &flaky{n: 100, err: errBoom}
			err := Do(context.Background(), fn.call, p)
			cause := tt.err
			if tt.reason == DeadlineReached {
				cause = context.DeadlineExceeded
			}
			var re *RetryExhausted
			if !errors.As(err, &re) || re.Reason != tt.reason || re.Attempts != tt.attempts || fn.calls != tt.attempts || re.Elapsed != tt.onRetry+tt.advance ||
				re.Cause != cause || !errors.Is(err, errBoom) {
				t.Errorf("Do() = %v after %d calls; want %v after %d in %v, Cause %v, reaching boom", err, fn.calls, tt.reason, tt.attempts, tt.onRetry+tt.advance, cause)
			}
		})
	}
}

// TestRealTimer runs the default Sleeper on the real clock, briefly. CI
// runs it under both timer implementations (GODEBUG asynctimerchan=0 and 1).
func TestRealTimer(t *testing.T) {
	var sum time.Duration
	p := Policy{MaxAttempts: 4, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond, Jitter: NoJitter}
	p.OnRetry = func(_ context.Context, _ int, _ error, wait time.Duration) { sum += wait }
	start := time.Now()
	fn := &flaky{n: 3, err: errBoom}
	if err := Do(context.Background(), fn.call, p); err != nil || fn.calls != 4 {
		t.Fatalf("Do() = %v after %d calls; want nil after 4", err, fn.calls)
	}
	if elapsed := time.Since(start); sum != 5*time.Millisecond || elapsed < sum {
		t.Errorf("Do() took %v for waits of %v; want waits of 5ms and at least that long", elapsed, sum)
	}
}

// OnDone runs exactly once on every way out of a valid call, with the
// calls of fn, the elapsed time on Clock and the error Do returns.
func TestOnDone(t *testing.T) {
	errSleep := errors.New("sleeper broke")
	notFound := &customErr{"not found"}
	permNotFound := Permanent(notFound)
	tests := []struct {
		name         string
		fn           *flaky
		p            Policy
		ctxTimeout   time.Duration
		cancelBefore bool
		attempts     int
		elapsed      time.Duration
		reason       Reason // 0: the error is not a *RetryExhausted
		want         error  // for reason 0: the error Do returns
	}{
		{"success at once", &flaky{}, Policy{}, 0, false, 1, 0, 0, nil},
		{"success after retries", &flaky{n: 2, err: errBoom}, Policy{Jitter: NoJitter}, 0, false, 3, 300 * time.Millisecond, 0, nil},
		{"non-retryable", &flaky{n: 9, err: notFound}, Policy{IsRetryable: func(error) bool { return false }}, 0, false, 1, 0, 0, notFound},
		{"Permanent", &flaky{n: 9, err: permNotFound}, Policy{}, 0, false, 1, 0, 0, permNotFound},
		{"ctx done before the first call", &flaky{}, Policy{}, 0, true, 0, 0, 0, context.Canceled},
		{"MaxAttemptsReached", &flaky{n: 9, err: errBoom}, Policy{MaxAttempts: 2, Jitter: NoJitter}, 0, false, 2, 100 * time.Millisecond, MaxAttemptsReached, nil},
		{"DeadlineReached", &flaky{n: 9, err: errBoom}, Policy{Timeout: 250 * time.Millisecond, Jitter: NoJitter}, 0, false, 2, 100 * time.Millisecond, DeadlineReached, nil},
		{"DeadlineReached, ctx's", &flaky{n: 9, err: errBoom}, Policy{Jitter: NoJitter}, 250 * time.Millisecond, false, 2, 100 * time.Millisecond, DeadlineReached, nil},
		{"HintTooLong", &flaky{n: 9, err: hintErr(time.Hour)}, Policy{}, 0, false, 1, 0, HintTooLong, nil},
		{"SleepFailed", &flaky{n: 9, err: errBoom}, Policy{Sleeper: SleeperFunc(func(context.Context, time.Duration) error { return errSleep })}, 0, false, 1, 0, SleepFailed, nil},
		{"BudgetExhausted", &flaky{n: 9, err: errBoom}, Policy{Budget: NewBudget(0, 1), Jitter: NoJitter}, 0, false, 2, 100 * time.Millisecond, BudgetExhausted, nil},
	}
	type key struct{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			ctx := context.WithValue(ft.deadlineCtx(t, tt.ctxTimeout), key{}, tt.name)
			if tt.cancelBefore {
				cctx, cancel := context.WithCancel(ctx)
				cancel()
				ctx = cctx
			}
			var got []doneCall
			p := ft.with(tt.p)
			if tt.p.Sleeper != nil {
				p.Sleeper = tt.p.Sleeper
			}
			p.OnDone = func(ctx context.Context, attempts int, elapsed time.Duration, err error) {
				got = append(got, doneCall{ctx, attempts, elapsed, err})
			}
			err := Do(ctx, tt.fn.call, p)
			if len(got) != 1 {
				t.Fatalf("OnDone calls = %d; want 1", len(got))
			}
			d := got[0]
			if d.ctx.Value(key{}) != tt.name || d.attempts != tt.attempts || d.attempts != tt.fn.calls || d.elapsed != tt.elapsed || d.err != err {
				t.Errorf("OnDone(%v, %d, %v, %v) after %d calls and Do() = %v; want Do's ctx, %d, %v, Do's error",
					d.ctx.Value(key{}), d.attempts, d.elapsed, d.err, tt.fn.calls, err, tt.attempts, tt.elapsed)
			}
			var re *RetryExhausted
			switch {
			case tt.reason == 0 && err != tt.want:
				t.Errorf("Do() = %v; want %v", err, tt.want)
			case tt.reason != 0 && (!errors.As(err, &re) || re.Reason != tt.reason || re.Elapsed != d.elapsed || re.Attempts != d.attempts):
				t.Errorf("Do() = %v; want %v, with OnDone's attempts and elapsed", err, tt.reason)
			}
		})
	}
}

// A panic in fn, IsRetryable, OnRetry or OnDone reaches the caller as it
// was; OnDone is not called for the others.
func TestPanicsReachTheCaller(t *testing.T) {
	type token struct{ where string }
	tests := []struct {
		where string
		p     Policy
		fn    func(context.Context) error
	}{
		{"fn", Policy{}, func(context.Context) error { panic(&token{"fn"}) }},
		{"IsRetryable", Policy{IsRetryable: func(error) bool { panic(&token{"IsRetryable"}) }}, failOnce},
		{"OnRetry", Policy{OnRetry: func(context.Context, int, error, time.Duration) { panic(&token{"OnRetry"}) }}, failOnce},
		{"OnDone", Policy{MaxAttempts: 1, OnDone: func(context.Context, int, time.Duration, error) { panic(&token{"OnDone"}) }}, failOnce},
	}
	for _, tt := range tests {
		t.Run(tt.where, func(t *testing.T) {
			onDone := 0
			p := newFakeTime().with(tt.p)
			if p.OnDone == nil {
				p.OnDone = func(context.Context, int, time.Duration, error) { onDone++ }
			}
			defer func() {
				if tok, ok := recover().(*token); !ok || tok.where != tt.where || onDone != 0 {
					t.Errorf("recover() = %v, OnDone calls = %d; want the token panicked in %s, 0", tok, onDone, tt.where)
				}
			}()
			Do(context.Background(), tt.fn, p)
			t.Errorf("Do() returned; want the panic from %s", tt.where)
		})
	}
}

// nilSafeErr is an error type whose method works on a nil pointer.
type nilSafeErr struct{}

func (*nilSafeErr) Error() string { return "nil-safe" }

// ptrHint is an error whose pointer methods read a field.
type ptrHint struct{ d time.Duration }

func (h *ptrHint) Error() string             { return "hint " + h.d.String() }
func (h *ptrHint) RetryAfter() time.Duration { return h.d }

// A typed nil error is a failure, like any err != nil; Do asks it for a
// hint, and the panic of a RetryAfter that dereferences it reaches the caller.
func TestTypedNilError(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string // the message; "" for a panic
	}{
		{"nil-safe methods", (*nilSafeErr)(nil), "retry: gave up after 2 attempts in 100ms (max attempts reached): nil-safe"},
		{"a RetryAfter that dereferences", (*ptrHint)(nil), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if _, ok := recover().(runtime.Error); ok != (tt.want == "") {
					t.Errorf("recover() = %v; want a runtime error: %v", ok, tt.want == "")
				}
			}()
			err := Do(context.Background(), func(context.Context) error { return tt.err }, newFakeTime().with(Policy{MaxAttempts: 2, Jitter: NoJitter}))
			var re *RetryExhausted
			var got *nilSafeErr
			if !errors.As(err, &re) || re.Attempts != 2 || re.Last != tt.err || err.Error() != tt.want || !errors.As(err, &got) || got != nil {
				t.Errorf("Do() = %v; want %q, with the typed nil as Last", err, tt.want)
			}
		})
	}
}

// One Policy is shared by concurrent calls, each getting its own result.
func TestSharedPolicy(t *testing.T) {
	tests := []struct {
		name       string
		goroutines int
		failures   func(i int) int
	}{
		{"100 calls that give up", 100, func(int) int { return 10 }},
		{"10,000 calls, 0 to 3 failures each", 10_000, func(i int) int { return i % 4 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			var hooks, want atomic.Int64
			p := ft.with(Policy{MaxAttempts: 3, Jitter: FullJitter})
			p.OnRetry = func(context.Context, int, error, time.Duration) { hooks.Add(1) }
			var wg sync.WaitGroup
			bad := make(chan error, tt.goroutines)
			for i := range tt.goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					fn := &flaky{n: tt.failures(i), err: errBoom}
					want.Add(int64(min(fn.n, 2)))
					err := Do(context.Background(), fn.call, p)
					var re *RetryExhausted
					if fn.calls != min(fn.n+1, 3) || fn.n < 3 && err != nil || fn.n >= 3 && (!errors.As(err, &re) || re.Attempts != 3) {
						bad <- fmt.Errorf("Do() = %v after %d calls, with %d failures", err, fn.calls, fn.n)
					}
				}()
			}
			wg.Wait()
			close(bad)
			for err := range bad {
				t.Fatalf("a concurrent %v; want its own result", err)
			}
			if hooks.Load() != want.Load() || int64(len(ft.Waits())) != want.Load() {
				t.Errorf("OnRetry calls, waits = %d, %d; want %d each", hooks.Load(), len(ft.Waits()), want.Load())
			}
		})
	}
}

// ownDone is a Context whose Done channel package context did not make.
type ownDone struct {
	context.Context
	done chan struct{}
}

func (c ownDone) Done() <-chan struct{} { return c.done }

// Do starts no goroutine of its own; context.WithTimeout starts one for an
// attempt, ending with it, only for a ctx whose Done package context did not make.
func TestGoroutines(t *testing.T) {
	// started counts the goroutines alive that the calling goroutine started,
	// by their stacks' "created by ... in goroutine N" lines.
	started := func() int {
		buf := make([]byte, 64)
		id := strings.Fields(string(buf[:runtime.Stack(buf, false)]))[1] // "goroutine N [running]:"
		for buf = make([]byte, 1<<16); len(buf) == runtime.Stack(buf, true); {
			buf = make([]byte, 2*len(buf))
		}
		return strings.Count(string(buf), " in goroutine "+id+"\n")
	}
	// settled waits for the goroutines of attempts that ended to exit, and returns how many are left.
	settled := func() int {
		for i := 0; i < 10000 && started() > 0; i++ {
			runtime.Gosched()
		}
		return started()
	}
	own := func() context.Context { return ownDone{context.Background(), make(chan struct{})} }
	tests := []struct {
		name     string
		ctx      context.Context
		p        Policy
		failures int
		want     int
	}{
		{"retries on the real timer", context.Background(), Policy{MaxAttempts: 3, BaseDelay: time.Microsecond, MaxDelay: time.Microsecond}, 2, 0},
		{"no Timeout, own Done", own(), newFakeTime().with(Policy{}), 0, 0},
		{"Timeout, a ctx from package context", context.WithValue(context.Background(), ownDone{}, 1), newFakeTime().with(Policy{Timeout: time.Hour}), 0, 0},
		{"Timeout, own Done", own(), newFakeTime().with(Policy{Timeout: time.Hour}), 0, 1},
		{"AttemptTimeout, own Done", own(), newFakeTime().with(Policy{AttemptTimeout: time.Hour}), 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { // Do runs in this goroutine, which started nothing before
			var during []int
			p := tt.p
			p.OnRetry = func(context.Context, int, error, time.Duration) { during = append(during, started()) }
			fn := &flaky{n: tt.failures, err: errBoom}
			Do(tt.ctx, func(ctx context.Context) error { during = append(during, started()); return fn.call(ctx) }, p)
			for _, n := range during {
				if n != tt.want {
					t.Errorf("goroutines Do started, at each attempt and wait = %v; want %d throughout", during, tt.want)
					break
				}
			}
			if n := settled(); n != 0 {
				t.Errorf("goroutines Do started, after Do = %d; want 0", n)
			}
		})
	}
}

// Allocation counts are exact, not timings, so they are tests.
func TestNoAllocationOnTheHotPath(t *testing.T) {
	if info, _ := debug.ReadBuildInfo(); slices.Contains(info.Settings, debug.BuildSetting{Key: "-race", Value: "true"}) {
		t.Skip("the race detector allocates on its own")
	}
	ctx := context.Background()
	calls := 0
	succeed := func(context.Context) error { return nil }
	failThrice := func(context.Context) error {
		if calls++; calls%4 != 0 {
			return errBoom
		}
		return nil
	}
	value := func(context.Context) (int, error) { return 1, nil }
	budget := NewBudget(0.1, 10)
	ctxDeadline, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	tests := []struct {
		name string
		run  func()
	}{
		{"Do success", func() { Do(ctx, succeed, Policy{}) }},
		{"DoValue success", func() { DoValue(ctx, value, Policy{}) }},
		{"Do 3 retries, no wait", func() { Do(ctx, failThrice, Policy{Jitter: zeroJitter}) }},
		{"Do success with a Budget", func() { Do(ctx, succeed, Policy{Budget: budget}) }},
		{"Do 3 retries, no wait, ctx deadline", func() { Do(ctxDeadline, failThrice, Policy{Jitter: zeroJitter}) }},
		{"Do success with hooks", func() { Do(ctx, succeed, Policy{OnRetry: onRetryNop, OnDone: onDoneNop}) }},
		{"Do 3 retries, no wait, with hooks", func() {
			Do(ctx, failThrice, Policy{Jitter: zeroJitter, OnRetry: onRetryNop, OnDone: onDoneNop})
		}},
	}
	for _, tt := range tests {
		if got := testing.AllocsPerRun(100, tt.run); got != 0 {
			t.Errorf("%s: allocations = %v; want 0", tt.name, got)
		}
	}
}

// Hooks that capture nothing, like a shared Policy's that update package-level metrics.
func onRetryNop(context.Context, int, error, time.Duration) {}
func onDoneNop(context.Context, int, time.Duration, error)  {}

// timeSink keeps the compiler from optimising the baseline's clock read away.
var timeSink time.Time

// BenchmarkDo measures Do around a fn that does nothing; baseline, the call and one clock
// read, is what a caller without retries pays.
func BenchmarkDo(b *testing.B) {
	ctx := context.Background()
	calls := 0
	succeed := func(context.Context) error { calls++; return nil }
	failThrice := func(context.Context) error { // fails 3 times, then succeeds
		if calls++; calls%4 != 0 {
			return errBoom
		}
		return nil
	}
	run := func(name string, p Policy, fn func(context.Context) error) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			calls = 0
			for range b.N {
				if err := Do(ctx, fn, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			timeSink = time.Now()
			if err := succeed(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	run("success", Policy{}, succeed)
	run("success-timeout", Policy{Timeout: time.Minute}, succeed)
	run("success-attempt-timeout", Policy{AttemptTimeout: time.Minute}, succeed)
	run("3-retries-no-wait", Policy{Jitter: zeroJitter}, failThrice)
	run("success-hooks", Policy{OnRetry: onRetryNop, OnDone: onDoneNop}, succeed)
	run("3-retries-no-wait-hooks", Policy{Jitter: zeroJitter, OnRetry: onRetryNop, OnDone: onDoneNop}, failThrice)
	run("3-retries-real-timer", Policy{BaseDelay: time.Microsecond, MaxDelay: time.Microsecond, Jitter: NoJitter}, failThrice)
	b.Run("DoValue-success", func(b *testing.B) {
		b.ReportAllocs()
		value := func(context.Context) (int, error) { return 42, nil }
		for range b.N {
			if v, err := DoValue(ctx, value, Policy{}); err != nil || v != 42 {
				b.Fatal(v, err)
			}
		}
	})
}
