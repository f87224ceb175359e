package retry

import (
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

// fn is called at most MaxAttempts times, the first call included, with a
// wait between each two; then Do gives up with MaxAttemptsReached.
func TestDoAttempts(t *testing.T) {
	tests := []struct {
		name        string
		maxAttempts int
		failures    int
		calls       int
	}{
		{"success at once", 5, 0, 1},
		{"success on the third call", 5, 2, 3},
		{"success on the last call", 5, 4, 5},
		{"exhausted", 5, 10, 5},
		{"zero means five", 0, 10, 5},
		{"one means no retries", 1, 10, 1},
		{"two", 2, 10, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			fn := &flaky{n: tt.failures, err: errBoom}
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

func TestDoValue(t *testing.T) {
	ft := newFakeTime()
	calls := 0
	v, err := DoValue(context.Background(), func(context.Context) (string, error) {
		calls++
		if calls < 3 {
			return "partial", errBoom
		}
		return "done", nil
	}, ft.with(Policy{}))
	if v != "done" || err != nil || calls != 3 {
		t.Errorf("DoValue() = %q, %v after %d calls; want \"done\", nil after 3", v, err, calls)
	}

	v, err = DoValue(context.Background(), func(context.Context) (string, error) {
		return "partial", errBoom
	}, ft.with(Policy{MaxAttempts: 2}))
	if v != "" || !errors.Is(err, errBoom) {
		t.Errorf("DoValue() = %q, %v; want the zero value and an error that wraps boom", v, err)
	}
}

// TestNonRetryableErrorReturnedAsIs: a non-retryable error comes back at
// once, after one attempt, as fn returned it, Permanent mark included.
func TestNonRetryableErrorReturnedAsIs(t *testing.T) {
	notFound := &customErr{"not found"}
	wrapped := fmt.Errorf("get: %w", Permanent(notFound))
	joined := errors.Join(errBoom, Permanent(notFound))
	retryAll := func(error) bool { return true }
	tests := []struct {
		name string
		err  error // what fn returns
		p    Policy
	}{
		{"predicate says no", notFound, Policy{IsRetryable: func(err error) bool { return err != notFound }}},
		{"Permanent, outermost", Permanent(notFound), Policy{}},
		{"Permanent, wrapped", wrapped, Policy{}},
		{"Permanent, joined", joined, Policy{}},
		{"Permanent wins over IsRetryable", Permanent(notFound), Policy{IsRetryable: retryAll}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			onRetry := 0
			p := ft.with(tt.p)
			p.OnRetry = func(context.Context, int, error, time.Duration) { onRetry++ }
			fn := &flaky{n: 10, err: tt.err}
			err := Do(context.Background(), fn.call, p)
			if err != tt.err {
				t.Errorf("Do() = %#v; want %#v, the same value", err, tt.err)
			}
			if fn.calls != 1 || len(ft.Waits()) != 0 || onRetry != 0 {
				t.Errorf("Do() calls, waits, OnRetry = %d, %d, %d; want 1, 0, 0", fn.calls, len(ft.Waits()), onRetry)
			}
		})
	}
}

// TestTimeout: the Timeout ends the retries without clipping a wait,
// bounds fn's ctx, and still lets fn run once.
func TestTimeout(t *testing.T) {
	t.Run("a wait that would outlast the deadline is not started", func(t *testing.T) {
		ft := newFakeTime()
		fn := &flaky{n: 100, err: errBoom}
		p := ft.with(Policy{MaxAttempts: 100, BaseDelay: time.Second, MaxDelay: time.Minute, Timeout: 10 * time.Second, Jitter: NoJitter})
		err := Do(context.Background(), fn.call, p)
		// waits 1s, 2s, 4s; at 7s the next wait, 8s, would end after the deadline
		want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
		if got := ft.Waits(); !slices.Equal(got, want) {
			t.Errorf("Do() waits = %v; want %v", got, want)
		}
		var re *RetryExhausted
		if !errors.As(err, &re) || re.Reason != DeadlineReached || re.Attempts != 4 || re.Elapsed != 7*time.Second {
			t.Errorf("Do() = %v; want DeadlineReached after 4 attempts in 7s", err)
		}
	})
	t.Run("a wait ending exactly at the deadline is not started", func(t *testing.T) {
		ft := newFakeTime()
		p := ft.with(Policy{BaseDelay: time.Second, MaxDelay: time.Second, Timeout: time.Second, Jitter: NoJitter})
		fn := &flaky{n: 100, err: errBoom}
		err := Do(context.Background(), fn.call, p)
		var re *RetryExhausted
		if !errors.As(err, &re) || re.Reason != DeadlineReached || fn.calls != 1 || len(ft.Waits()) != 0 {
			t.Errorf("Do() = %v after %d calls, waits %v; want DeadlineReached after 1 call, no wait", err, fn.calls, ft.Waits())
		}
	})
	t.Run("a 1ns deadline", func(t *testing.T) {
		ft := newFakeTime()
		p := ft.with(Policy{Timeout: time.Nanosecond})
		fn := &flaky{n: 100, err: errBoom}
		err := Do(context.Background(), fn.call, p)
		var re *RetryExhausted
		if !errors.As(err, &re) || re.Reason != DeadlineReached || fn.calls != 1 {
			t.Errorf("Do() = %v after %d calls; want DeadlineReached after 1", err, fn.calls)
		}
	})
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
	t.Run("no wait ends at or after the deadline", func(t *testing.T) {
		for seed := range 50 {
			ft := newFakeTime()
			start := ft.Now()
			deadline := 3 * time.Second
			p := ft.with(Policy{MaxAttempts: 1000, BaseDelay: 10 * time.Millisecond, MaxDelay: time.Second, Timeout: deadline, Rand: seqRand(uint64(seed))})
			p.OnRetry = func(_ context.Context, _ int, _ error, wait time.Duration) {
				if end := ft.Now().Add(wait); end.Sub(start) >= deadline {
					t.Fatalf("seed %d: a wait of %v ends %v after the start; want before %v", seed, wait, end.Sub(start), deadline)
				}
			}
			Do(context.Background(), (&flaky{n: 1000, err: errBoom}).call, p)
		}
	})
	t.Run("fn runs once even when the deadline has passed", func(t *testing.T) {
		ft := newFakeTime()
		calls := 0
		fn := func(context.Context) error {
			calls++
			ft.advance(time.Hour) // the first call outlasts the whole budget
			return errBoom
		}
		err := Do(context.Background(), fn, ft.with(Policy{Timeout: time.Second}))
		var re *RetryExhausted
		if calls != 1 || !errors.As(err, &re) || re.Reason != DeadlineReached || len(ft.Waits()) != 0 {
			t.Errorf("Do() = %v after %d calls and %d waits; want DeadlineReached after 1 call, no wait", err, calls, len(ft.Waits()))
		}
	})
}

// TestContext: ctx stops the run, and the error reaches both ctx's error
// and the last error.
func TestContext(t *testing.T) {
	t.Run("done before the first call", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		fn := &flaky{n: 1, err: errBoom}
		if err := Do(ctx, fn.call, Policy{}); err != context.Canceled || fn.calls != 0 {
			t.Errorf("Do() = %v after %d calls; want context.Canceled after 0", err, fn.calls)
		}
	})
	t.Run("canceled during fn", func(t *testing.T) {
		ft := newFakeTime()
		ctx, cancel := context.WithCancel(context.Background())
		calls, retries := 0, 0
		fn := func(context.Context) error { calls++; cancel(); return errBoom }
		p := ft.with(Policy{})
		p.OnRetry = func(context.Context, int, error, time.Duration) { retries++ }
		err := Do(ctx, fn, p)
		assertCanceled(t, err, context.Canceled, 1)
		if calls != 1 || len(ft.Waits()) != 0 || retries != 0 {
			t.Errorf("Do() calls, waits, OnRetry calls = %d, %d, %d; want 1, 0, 0", calls, len(ft.Waits()), retries)
		}
	})
	t.Run("canceled during the wait", func(t *testing.T) {
		ft := newFakeTime()
		ctx, cancel := context.WithCancel(context.Background())
		p := ft.with(Policy{})
		p.Sleeper = SleeperFunc(func(ctx context.Context, d time.Duration) error {
			cancel() // as if ctx ended halfway through the wait
			return ctx.Err()
		})
		fn := &flaky{n: 10, err: errBoom}
		err := Do(ctx, fn.call, p)
		assertCanceled(t, err, context.Canceled, 1)
		if fn.calls != 1 {
			t.Errorf("Do() calls = %d; want 1: no attempt after ctx is done", fn.calls)
		}
	})
	t.Run("ctx deadline before the next wait ends", func(t *testing.T) {
		ft := newFakeTime()
		ctx := ft.deadlineCtx(t, time.Hour)
		fn := &flaky{n: 10, err: errBoom}
		p := ft.with(Policy{BaseDelay: 40 * time.Minute, MaxDelay: 2 * time.Hour, Jitter: NoJitter})
		err := Do(ctx, fn.call, p)
		// 40m fits in the hour; the next wait, 80m, would outlast it
		assertDeadlineReached(t, err, 2)
		if got, want := ft.Waits(), []time.Duration{40 * time.Minute}; !slices.Equal(got, want) {
			t.Errorf("Do() waits = %v; want %v", got, want)
		}
	})
}

// TestOnRetry: OnRetry sees the failed attempt, its error and the wait.
func TestOnRetry(t *testing.T) {
	ft := newFakeTime()
	type call struct {
		attempt int
		err     error
		wait    time.Duration
	}
	var got []call
	p := ft.with(Policy{MaxAttempts: 4, Rand: seqRand(1)})
	p.OnRetry = func(_ context.Context, attempt int, err error, wait time.Duration) {
		got = append(got, call{attempt, err, wait})
	}
	errs := []error{errors.New("e1"), errors.New("e2"), errors.New("e3"), errors.New("e4")}
	i := 0
	Do(context.Background(), func(context.Context) error { i++; return errs[i-1] }, p)

	waits := ft.Waits()
	if len(got) != 3 || len(waits) != 3 {
		t.Fatalf("OnRetry calls, waits = %d, %d; want 3, 3", len(got), len(waits))
	}
	for i, c := range got {
		if c.attempt != i+1 || c.err != errs[i] || c.wait != waits[i] {
			t.Errorf("OnRetry call %d = %d, %v, %v; want %d, %v, %v", i, c.attempt, c.err, c.wait, i+1, errs[i], waits[i])
		}
	}
}

// TestScheduleIsDeterministic: a seeded Rand gives the same schedule, and
// every wait of the default Jitter lies in [BaseDelay, MaxDelay].
func TestScheduleIsDeterministic(t *testing.T) {
	schedule := func(seed uint64) []time.Duration {
		ft := newFakeTime()
		p := ft.with(Policy{MaxAttempts: 20, MaxDelay: 5 * time.Second, Rand: seqRand(seed)})
		Do(context.Background(), (&flaky{n: 100, err: errBoom}).call, p)
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

func TestNilArguments(t *testing.T) {
	//lint:ignore SA1012 a nil context is the input under test
	if err := Do(nil, func(context.Context) error { return nil }, Policy{}); err == nil || !strings.Contains(err.Error(), "nil context") {
		t.Errorf("Do(nil ctx) = %v; want an error about the nil context", err)
	}
	if err := Do(context.Background(), nil, Policy{}); err == nil || !strings.Contains(err.Error(), "nil fn") {
		t.Errorf("Do(nil fn) = %v; want an error about the nil fn", err)
	}
	if _, err := DoValue[int](context.Background(), nil, Policy{}); err == nil || !strings.Contains(err.Error(), "nil fn") {
		t.Errorf("DoValue(nil fn) = %v; want an error about the nil fn", err)
	}
}

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
	}
	for _, tt := range tests {
		t.Run(tt.where, func(t *testing.T) {
			defer func() {
				tok, ok := recover().(*token)
				if !ok || tok.where != tt.where {
					t.Errorf("recover() = %v; want the token panicked in %s", tok, tt.where)
				}
			}()
			Do(context.Background(), tt.fn, newFakeTime().with(tt.p))
			t.Errorf("Do() returned; want the panic from %s", tt.where)
		})
	}
}

// TestConcurrentCallsShareOnePolicy: one Policy shared by concurrent
// calls, and no goroutines.
func TestConcurrentCallsShareOnePolicy(t *testing.T) {
	ft := newFakeTime()
	p := ft.with(Policy{MaxAttempts: 3})
	var wg sync.WaitGroup
	errs := make([]error, 100)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = Do(context.Background(), (&flaky{n: 10, err: errBoom}).call, p)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		var re *RetryExhausted
		if !errors.As(err, &re) || re.Attempts != 3 {
			t.Fatalf("Do() in goroutine %d = %v; want 3 attempts", i, err)
		}
	}
	if got := len(ft.Waits()); got != 200 {
		t.Errorf("waits = %d; want 200", got)
	}
}

// TestRealTimer runs the default Sleeper on the real clock, briefly. CI
// runs it under both timer implementations (GODEBUG asynctimerchan=0
// and 1), since the main module's go line chooses between them.
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

func TestDoStartsNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	var during []int
	p := Policy{MaxAttempts: 3, BaseDelay: time.Microsecond, MaxDelay: time.Microsecond} // the real timer
	p.OnRetry = func(context.Context, int, error, time.Duration) { during = append(during, runtime.NumGoroutine()) }
	Do(context.Background(), func(context.Context) error {
		during = append(during, runtime.NumGoroutine())
		return errBoom
	}, p)
	// Other tests' goroutines may still be ending, so the count may fall;
	// only a rise would be Do's doing.
	for _, n := range during {
		if n > before {
			t.Errorf("goroutines during Do = %v; want at most %d throughout", during, before)
			break
		}
	}
}

func TestSleeperError(t *testing.T) {
	errSleep := errors.New("sleeper broke")
	p := Policy{Sleeper: SleeperFunc(func(context.Context, time.Duration) error { return errSleep })}
	fn := &flaky{n: 10, err: errBoom}
	err := Do(context.Background(), fn.call, p)
	var re *RetryExhausted
	if !errors.As(err, &re) || re.Reason != SleepFailed || !errors.Is(err, errSleep) || !errors.Is(err, errBoom) || fn.calls != 1 {
		t.Errorf("Do() = %v after %d calls; want SleepFailed wrapping both errors after 1", err, fn.calls)
	}
}

// TestOneRetry is Do's path on the zero Policy when fn fails once and then
// succeeds; issue 22 counts the functions it enters with
// go test -run '^TestOneRetry$' -coverprofile=c.out . && go tool cover -func=c.out.
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

// TestClockReads: the clock is read once at the start, then only where a
// deadline, a hook or the final error needs it. With a deadline, the
// reading after each wait serves both the check that no deadline has
// passed and the next attempt's ctx.
func TestClockReads(t *testing.T) {
	tests := []struct {
		name       string
		failures   int
		p          Policy
		ctxTimeout time.Duration
		want       int
	}{
		{"success", 0, Policy{}, 0, 1},
		{"3 retries, then success", 3, Policy{}, 0, 1},
		{"exhausted", 10, Policy{MaxAttempts: 3}, 0, 2},                                                                          // start, Elapsed
		{"3 retries with a Timeout", 3, Policy{Timeout: time.Hour}, 0, 10},                                                       // start, then per failure: the decision, the wait's check, after the wait
		{"3 retries with a ctx deadline", 3, Policy{}, time.Hour, 10},                                                            // the same
		{"exhausted with a Timeout", 10, Policy{MaxAttempts: 3, Timeout: time.Hour}, 0, 9},                                       // start, 2 failures × 3, the last decision, Elapsed
		{"3 retries with OnRetry", 3, Policy{OnRetry: func(context.Context, int, error, time.Duration) {}}, 0, 7},                // start, two around each OnRetry
		{"success with OnDone", 0, Policy{OnDone: func(context.Context, int, time.Duration, error) {}}, 0, 2},                    // start, elapsed
		{"exhausted with OnDone", 10, Policy{MaxAttempts: 3, OnDone: func(context.Context, int, time.Duration, error) {}}, 0, 2}, // start, Elapsed shared with OnDone
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

// TestDefaultRetriesEveryError: by default every error is retried, timeouts
// included, as long as the caller's ctx is alive.
func TestDefaultRetriesEveryError(t *testing.T) {
	for _, err := range []error{
		context.DeadlineExceeded,
		fmt.Errorf("get: %w", context.DeadlineExceeded),
		context.Canceled, // an attempt's own ctx, cancelled inside fn
		errBoom,
	} {
		ft := newFakeTime()
		fn := &flaky{n: 2, err: err}
		if got := Do(context.Background(), fn.call, ft.with(Policy{})); got != nil || fn.calls != 3 {
			t.Errorf("Do() with %v = %v after %d calls; want nil after 3", err, got, fn.calls)
		}
	}
}

// TestFnCtxEndsAtTheTimeout: fn's ctx ends when the time that Clock says
// is left before the Timeout runs out, counted in real time.
func TestFnCtxEndsAtTheTimeout(t *testing.T) {
	ft := newFakeTime()
	start := ft.Now()
	const deadline = 10 * time.Second
	p := ft.with(Policy{MaxAttempts: 4, BaseDelay: time.Second, MaxDelay: time.Second, Timeout: deadline, Jitter: NoJitter})
	calls := 0
	Do(context.Background(), func(ctx context.Context) error {
		calls++
		left := deadline - ft.Now().Sub(start) // on the fake clock
		dl, ok := ctx.Deadline()
		if got := time.Until(dl); !ok || got > left || got < left-time.Second {
			t.Errorf("call %d: fn's ctx ends in %v (has deadline %v); want %v, the time left", calls, got, ok, left)
		}
		ft.advance(2 * time.Second) // each call takes 2s of fake time
		return errBoom
	}, p)
	if calls != 4 {
		t.Errorf("calls = %d; want 4", calls)
	}
}

// TestSlowOnRetryCountsAgainstTheWait: a slow OnRetry shortens the sleep,
// so no wait ends after either deadline.
func TestSlowOnRetryCountsAgainstTheWait(t *testing.T) {
	for _, tt := range []struct {
		name       string
		p          Policy
		ctxTimeout time.Duration
		reason     Reason
	}{
		{"Timeout", Policy{Timeout: 1500 * time.Millisecond}, 0, DeadlineReached},
		{"ctx deadline", Policy{}, 1500 * time.Millisecond, DeadlineReached},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			start := ft.Now()
			ctx := ft.deadlineCtx(t, tt.ctxTimeout)
			p := tt.p
			p.BaseDelay, p.MaxDelay, p.Jitter = time.Second, time.Minute, NoJitter
			p = ft.with(p)
			p.OnRetry = func(context.Context, int, error, time.Duration) { ft.advance(800 * time.Millisecond) }
			var at []time.Duration
			err := Do(ctx, func(context.Context) error { at = append(at, ft.Now().Sub(start)); return errBoom }, p)
			// the 1s wait chosen at 0s ends at 1s: OnRetry takes 800ms of it
			if want := []time.Duration{0, time.Second}; !slices.Equal(at, want) {
				t.Errorf("calls at %v; want %v", at, want)
			}
			if got, want := ft.Waits(), []time.Duration{200 * time.Millisecond}; !slices.Equal(got, want) {
				t.Errorf("sleeps = %v; want %v", got, want)
			}
			var re *RetryExhausted
			if !errors.As(err, &re) || re.Reason != tt.reason || re.Attempts != 2 {
				t.Errorf("Do() = %v; want %v after 2 attempts", err, tt.reason)
			}
		})
	}
}

// When ctx is done as Do stops, the Reason says how: DeadlineReached when
// its deadline passed, Canceled otherwise, whatever else stopped Do, and
// Cause reaches the cause that ctx was given. OnDone sees the same error.
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
	tests := []struct {
		name   string
		call   func() call
		p      func(c call) Policy
		fn     func(c call) func(context.Context) error
		reason Reason
		reach  []error
		suffix string
	}{
		{"cancelled during fn", cancelled, func(call) Policy { return Policy{} },
			func(c call) func(context.Context) error {
				return func(context.Context) error { c.cancel(); return errBoom }
			}, Canceled, []error{context.Canceled, errShutdown, errBoom}, "(canceled: context canceled: shutting down): boom"},
		{"cancelled during the wait", cancelled,
			func(c call) Policy {
				return Policy{Sleeper: SleeperFunc(func(ctx context.Context, d time.Duration) error { c.cancel(); return ctx.Err() })}
			},
			func(call) func(context.Context) error { return failOnce }, Canceled, []error{context.Canceled, errShutdown, errBoom}, "(canceled: context canceled: shutting down): boom"},
		{"cancelled in IsRetryable, on the last attempt", cancelled,
			func(c call) Policy {
				return Policy{MaxAttempts: 1, IsRetryable: func(error) bool { c.cancel(); return true }}
			},
			func(call) func(context.Context) error { return failOnce }, Canceled, []error{context.Canceled, errBoom}, "(canceled: context canceled: shutting down): boom"},
		{"cancelled in the Jitter, with a hint too long", cancelled,
			func(c call) Policy {
				return Policy{MaxDelay: time.Second, Jitter: func(n int, base, max, prev time.Duration, u float64) time.Duration { c.cancel(); return 0 }}
			},
			func(call) func(context.Context) error {
				return func(context.Context) error { return After(time.Hour, errBoom) }
			}, Canceled, []error{context.Canceled, errBoom}, "(canceled: context canceled: shutting down): boom"},
		{"cancelled in IsRetryable, with no Budget left", cancelled,
			func(c call) Policy {
				b := NewBudget(0, 1)
				b.spend()
				return Policy{Budget: b, IsRetryable: func(error) bool { c.cancel(); return true }}
			},
			func(call) func(context.Context) error { return failOnce }, Canceled, []error{context.Canceled, errBoom}, "(canceled: context canceled: shutting down): boom"},
		{"fn hangs until ctx's deadline", timed, func(call) Policy { return Policy{Timeout: time.Hour} },
			func(call) func(context.Context) error { return hang }, DeadlineReached, []error{context.DeadlineExceeded, errSlow},
			"(deadline reached: ctx's deadline passed: too slow): context deadline exceeded"},
		{"ctx's deadline ends the wait", timed,
			func(call) Policy { return Policy{BaseDelay: time.Millisecond, Sleeper: SleeperFunc(sleepUntilDone)} },
			func(call) func(context.Context) error { return failOnce }, DeadlineReached, []error{context.DeadlineExceeded, errSlow, errBoom},
			"(deadline reached: ctx's deadline passed: too slow): boom"},
		{"the Sleeper fails as ctx's deadline passes", timed,
			func(call) Policy {
				return Policy{BaseDelay: time.Millisecond, Sleeper: SleeperFunc(func(ctx context.Context, d time.Duration) error { <-ctx.Done(); return errShutdown })}
			},
			func(call) func(context.Context) error { return failOnce }, DeadlineReached, []error{context.DeadlineExceeded, errBoom},
			"(deadline reached: ctx's deadline passed: too slow): boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.call()
			defer c.cancel()
			var done error
			p := tt.p(c)
			p.OnDone = func(_ context.Context, _ int, _ time.Duration, err error) { done = err }
			err := Do(c.ctx, tt.fn(c), p)
			var re *RetryExhausted
			if !errors.As(err, &re) || re.Reason != tt.reason || done != err {
				t.Fatalf("Do() = %v, OnDone got %v; want %v, the same in both", err, done, tt.reason)
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

// A wait that ends just before ctx's deadline races the deadline's own
// timer. Whichever wins, the call ran out of time: every run ends
// DeadlineReached, on real timers and the default Sleeper.
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

// Without a deadline, only MaxDelay limits a wait or a hint: the longest
// Duration, which ParseRetryAfter gives for a huge number of seconds, is
// not time left.
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

// sleepUntilDone is a Sleeper that waits until ctx is done, however short
// d is.
func sleepUntilDone(ctx context.Context, d time.Duration) error { <-ctx.Done(); return ctx.Err() }

// brokenCtx breaks the Context contract: Done is closed, Err is nil.
type brokenCtx struct{ context.Context }

func (brokenCtx) Done() <-chan struct{} {
	done := make(chan struct{})
	close(done)
	return done
}

// TestBrokenCtxEndsTheWait: a ctx whose Done closes while Err is still nil
// ends the wait and the retries with Canceled.
func TestBrokenCtxEndsTheWait(t *testing.T) {
	fn := &flaky{n: 10, err: errBoom}
	err := Do(brokenCtx{context.Background()}, fn.call, Policy{BaseDelay: time.Hour, MaxDelay: time.Hour})
	var re *RetryExhausted
	if !errors.As(err, &re) || re.Reason != Canceled || re.Cause != errBrokenCtx || fn.calls != 1 {
		t.Errorf("Do() = %v after %d calls; want Canceled for a broken ctx after 1", err, fn.calls)
	}
}

// TestHTTPClientTimeoutIsRetried: an http.Client timeout, on a real
// server, is retried.
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
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		if err != nil {
			return "", err
		}
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}, p)
	if body != "ok" || err != nil || hits.Load() != 2 {
		t.Fatalf("DoValue() = %q, %v after %d requests; want \"ok\", nil after 2", body, err, hits.Load())
	}
	if len(errs) != 1 || !errors.Is(errs[0], context.DeadlineExceeded) {
		t.Errorf("retried errors = %v; want the client's timeout", errs)
	}
}

// TestOnDone: OnDone runs exactly once on every way out of a valid call, with
// the calls of fn, the elapsed time on Clock and the error Do returns.
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

func TestOnDoneNotCalled(t *testing.T) {
	type token struct{}
	calls := 0
	onDone := func(context.Context, int, time.Duration, error) { calls++ }
	tests := []struct {
		name string
		p    Policy
		fn   func(context.Context) error
	}{
		{"invalid Policy", Policy{MaxAttempts: -1}, failOnce},
		{"panic in fn", Policy{}, func(context.Context) error { panic(token{}) }},
		{"panic in IsRetryable", Policy{IsRetryable: func(error) bool { panic(token{}) }}, failOnce},
		{"panic in OnRetry", Policy{OnRetry: func(context.Context, int, error, time.Duration) { panic(token{}) }}, failOnce},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls = 0
			p := newFakeTime().with(tt.p)
			p.OnDone = onDone
			func() {
				defer func() { recover() }()
				Do(context.Background(), tt.fn, p)
			}()
			if calls != 0 {
				t.Errorf("OnDone calls = %d; want 0", calls)
			}
		})
	}
	t.Run("nil fn to DoValue", func(t *testing.T) {
		calls = 0
		DoValue[int](context.Background(), nil, Policy{OnDone: onDone})
		if calls != 0 {
			t.Errorf("OnDone calls = %d; want 0", calls)
		}
	})
}

func TestOnDonePanicReachesTheCaller(t *testing.T) {
	type token struct{}
	defer func() {
		if _, ok := recover().(token); !ok {
			t.Errorf("recover() did not return the token panicked in OnDone")
		}
	}()
	Do(context.Background(), failOnce, Policy{MaxAttempts: 1, OnDone: func(context.Context, int, time.Duration, error) { panic(token{}) }})
	t.Errorf("Do() returned; want the panic from OnDone")
}

func TestDoValueOnDone(t *testing.T) {
	var got []doneCall
	p := newFakeTime().with(Policy{})
	p.OnDone = func(ctx context.Context, attempts int, elapsed time.Duration, err error) {
		got = append(got, doneCall{ctx, attempts, elapsed, err})
	}
	calls := 0
	v, err := DoValue(context.Background(), func(context.Context) (int, error) {
		if calls++; calls < 2 {
			return 0, errBoom
		}
		return 7, nil
	}, p)
	if v != 7 || err != nil || len(got) != 1 || got[0].attempts != 2 || got[0].err != nil {
		t.Errorf("DoValue() = %v, %v with OnDone calls %+v; want 7, nil, one call with 2 attempts", v, err, got)
	}
}

func TestOnRetryGetsDosCtx(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "request 42")
	var seen []any
	p := newFakeTime().with(Policy{MaxAttempts: 3})
	p.OnRetry = func(ctx context.Context, _ int, _ error, _ time.Duration) { seen = append(seen, ctx.Value(key{})) }
	Do(ctx, failOnce, p)
	if want := []any{"request 42", "request 42"}; !slices.Equal(seen, want) {
		t.Errorf("OnRetry ctx values = %v; want %v", seen, want)
	}
}

// ptrHint is an error whose pointer methods read a field.
type ptrHint struct{ d time.Duration }

func (h *ptrHint) Error() string             { return "hint " + h.d.String() }
func (h *ptrHint) RetryAfter() time.Duration { return h.d }

// As documented on Do, Do calls RetryAfter on a typed
// nil error, and the panic of a method that dereferences it reaches the
// caller; it is not swallowed.
func TestTypedNilWhoseRetryAfterDereferences(t *testing.T) {
	defer func() {
		if _, ok := recover().(runtime.Error); !ok {
			t.Errorf("recover() did not return the runtime error of the nil dereference")
		}
	}()
	var typedNil *ptrHint
	Do(context.Background(), func(context.Context) error { return typedNil }, newFakeTime().with(Policy{}))
	t.Errorf("Do() returned; want the panic of (*ptrHint)(nil).RetryAfter")
}

// TestTimeLeftAtTheEdge: with 1ns left before a deadline, a wait of 0
// ends before it, so Do retries at once; with nothing left, the deadline
// has passed, whatever the hint.
func TestTimeLeftAtTheEdge(t *testing.T) {
	tests := []struct {
		name       string
		p          Policy
		ctxTimeout time.Duration
		callCost   time.Duration // fake time the first call takes
		err        error         // what fn returns
		reason     Reason
		attempts   int
		waits      []time.Duration
	}{
		{"1ns before Timeout", Policy{Timeout: time.Second}, 0, time.Second - 1, errBoom, MaxAttemptsReached, 2, []time.Duration{0}},
		{"1ns before Timeout, 1ns hint", Policy{Timeout: time.Second}, 0, time.Second - 1, hintErr(1), HintTooLong, 1, nil},
		{"at Timeout", Policy{Timeout: time.Second}, 0, time.Second, errBoom, DeadlineReached, 1, nil},
		{"1ns before ctx deadline", Policy{}, time.Hour, time.Hour - 1, errBoom, MaxAttemptsReached, 2, []time.Duration{0}},
		{"1ns before ctx deadline, 1ns hint", Policy{}, time.Hour, time.Hour - 1, hintErr(1), HintTooLong, 1, nil},
		{"at ctx deadline", Policy{}, time.Hour, time.Hour, errBoom, DeadlineReached, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			ctx := ft.deadlineCtx(t, tt.ctxTimeout)
			calls := 0
			fn := func(context.Context) error {
				if calls++; calls == 1 {
					ft.advance(tt.callCost)
				}
				return tt.err
			}
			p := tt.p
			p.MaxAttempts, p.Jitter = 2, zeroJitter
			err := Do(ctx, fn, ft.with(p))
			var re *RetryExhausted
			if !errors.As(err, &re) || re.Reason != tt.reason || re.Attempts != tt.attempts {
				t.Errorf("Do() = %v; want %v after %d attempts", err, tt.reason, tt.attempts)
			}
			if got := ft.Waits(); !slices.Equal(got, tt.waits) {
				t.Errorf("Do() waits = %v; want %v", got, tt.waits)
			}
			if tt.reason == DeadlineReached && (re == nil || re.Cause != context.DeadlineExceeded) {
				t.Errorf("Do() = %v; want Cause context.DeadlineExceeded", err)
			}
		})
	}
}

// TestFnCtxWithA1nsDeadline: the smallest Timeout still bounds fn's ctx.
func TestFnCtxWithA1nsDeadline(t *testing.T) {
	ft := newFakeTime()
	var left time.Duration
	ok := false
	Do(context.Background(), func(ctx context.Context) error {
		var dl time.Time
		dl, ok = ctx.Deadline()
		left = time.Until(dl)
		return nil
	}, ft.with(Policy{Timeout: 1}))
	if !ok || left > 1 {
		t.Errorf("fn's ctx ends in %v (has deadline %v); want at most 1ns", left, ok)
	}
}

// TestOnRetryTimeComesOffTheSleep: the Sleeper is asked for the chosen
// wait less the time OnRetry took on Clock, never for less than 0, and
// never for more than the wait when the Clock goes backwards in OnRetry.
func TestOnRetryTimeComesOffTheSleep(t *testing.T) {
	tests := []struct {
		name    string
		onRetry time.Duration // fake time that OnRetry takes
		want    time.Duration // what the Sleeper is asked for
	}{
		{"OnRetry takes no time", 0, 100 * time.Millisecond},
		{"OnRetry takes 30ms", 30 * time.Millisecond, 70 * time.Millisecond},
		{"OnRetry takes the whole wait", 100 * time.Millisecond, 0},
		{"OnRetry outlasts the wait", 2 * time.Second, 0},
		{"the Clock goes back an hour in OnRetry", -time.Hour, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			var chosen []time.Duration
			p := ft.with(Policy{MaxAttempts: 2, Jitter: NoJitter})
			p.OnRetry = func(_ context.Context, _ int, _ error, wait time.Duration) {
				chosen = append(chosen, wait)
				ft.advance(tt.onRetry)
			}
			Do(context.Background(), failOnce, p)
			if want := []time.Duration{100 * time.Millisecond}; !slices.Equal(chosen, want) {
				t.Errorf("OnRetry waits = %v; want %v", chosen, want)
			}
			if got, want := ft.Waits(), []time.Duration{tt.want}; !slices.Equal(got, want) {
				t.Errorf("Sleeper waits = %v; want %v", got, want)
			}
		})
	}
}

// Allocation counts are exact, not timings, so they are tests.
func TestNoAllocationOnTheHotPath(t *testing.T) {
	ctx := context.Background()
	calls := 0
	succeed := func(context.Context) error { return nil }
	failThrice := func(context.Context) error {
		calls++
		if calls%4 != 0 {
			return errBoom
		}
		return nil
	}
	value := func(context.Context) (int, error) { return 1, nil }
	budget := NewBudget(0.1, 10)
	ctxDeadline, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	if raceEnabled() {
		t.Skip("the race detector allocates on its own")
	}
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

// raceEnabled reports whether the test binary was built with -race.
func raceEnabled() bool {
	info, _ := debug.ReadBuildInfo()
	for _, s := range info.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// Sinks keep the compiler from optimising benchmarked results away.
var (
	timeSink     time.Time
	durationSink time.Duration
)

// Hooks that capture nothing, as a shared Policy's hooks that update
// package-level metrics do.
func onRetryNop(context.Context, int, error, time.Duration) {}
func onDoneNop(context.Context, int, time.Duration, error)  {}

// BenchmarkDo measures the cost of Do around a fn that does nothing.
// baseline is what a caller without retries pays: the call and one clock
// read; compare the other sub-benchmarks with it within one run.
func BenchmarkDo(b *testing.B) {
	ctx := context.Background()
	calls := 0
	succeed := func(context.Context) error { calls++; return nil }
	failThrice := func(context.Context) error { // fails 3 times, then succeeds
		calls++
		if calls%4 != 0 {
			return errBoom
		}
		return nil
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
	b.Run("success", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if err := Do(ctx, succeed, Policy{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("success-timeout", func(b *testing.B) {
		b.ReportAllocs()
		p := Policy{Timeout: time.Minute}
		for range b.N {
			if err := Do(ctx, succeed, p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("success-attempt-timeout", func(b *testing.B) {
		b.ReportAllocs()
		p := Policy{AttemptTimeout: time.Minute}
		for range b.N {
			if err := Do(ctx, succeed, p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("3-retries-no-wait", func(b *testing.B) {
		b.ReportAllocs()
		p := Policy{Jitter: zeroJitter}
		calls = 0
		for range b.N {
			if err := Do(ctx, failThrice, p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("success-hooks", func(b *testing.B) {
		b.ReportAllocs()
		p := Policy{OnRetry: onRetryNop, OnDone: onDoneNop}
		for range b.N {
			if err := Do(ctx, succeed, p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("3-retries-no-wait-hooks", func(b *testing.B) {
		b.ReportAllocs()
		p := Policy{Jitter: zeroJitter, OnRetry: onRetryNop, OnDone: onDoneNop}
		calls = 0
		for range b.N {
			if err := Do(ctx, failThrice, p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("3-retries-real-timer", func(b *testing.B) {
		b.ReportAllocs()
		p := Policy{BaseDelay: time.Microsecond, MaxDelay: time.Microsecond, Jitter: NoJitter}
		calls = 0
		for range b.N {
			if err := Do(ctx, failThrice, p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("DoValue-success", func(b *testing.B) {
		b.ReportAllocs()
		value := func(context.Context) (int, error) { return 42, nil }
		for range b.N {
			v, err := DoValue(ctx, value, Policy{})
			if err != nil || v != 42 {
				b.Fatal(v, err)
			}
		}
	})
}
