package retry

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"time"
)

// Hostile inputs and misbehaving callers. Whatever happens, Do never
// sleeps a negative or over-cap duration, never calls fn more than
// MaxAttempts times, and never loses the last error. Besides its own
// assertions, a test below that can state its input as a doInput also runs
// it through checkDo (fuzz_test.go), which asserts exactly that.

func TestClockBackwards(t *testing.T) {
	ft := newFakeTime()
	fn := &flaky{n: 100, err: errBoom}
	p := ft.with(Policy{MaxAttempts: 6, Timeout: 2 * time.Second, Jitter: NoJitter})
	p.Sleeper = SleeperFunc(func(ctx context.Context, d time.Duration) error {
		ft.advance(-time.Hour) // each wait sends the clock an hour back
		return nil
	})
	err := Do(context.Background(), fn.call, p)
	// elapsed time reads as zero, so the deadline never passes and
	// MaxAttempts ends the run
	var re *RetryExhausted
	if !errors.As(err, &re) || re.Reason != MaxAttemptsReached || re.Attempts != 6 || re.Elapsed != 0 || re.Last != errBoom {
		t.Errorf("Do() = %+v; want MaxAttemptsReached after 6 attempts, Elapsed 0, Last boom", re)
	}
	checkDo(t, Policy{MaxAttempts: 8, Timeout: time.Second}, doInput{failures: 100, callCost: -time.Hour})
}

func TestClockJumpsForwardByYears(t *testing.T) {
	const years = 200 * 365 * 24 * time.Hour
	tests := []struct {
		name       string
		p          Policy
		ctxTimeout time.Duration
		want       Reason
	}{
		{"no deadline", Policy{MaxAttempts: 3}, 0, MaxAttemptsReached},
		{"Timeout", Policy{Timeout: time.Hour}, 0, DeadlineReached},
		{"ctx deadline", Policy{}, time.Hour, DeadlineReached}, // ctx is alive: the deadline passed on Clock
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			ctx := ft.deadlineCtx(t, tt.ctxTimeout)
			fn := func(context.Context) error { ft.advance(years); return errBoom }
			err := Do(ctx, fn, ft.with(tt.p))
			var re *RetryExhausted
			if !errors.As(err, &re) || re.Reason != tt.want || re.Last != errBoom || re.Elapsed <= 0 {
				t.Errorf("Do() = %v; want %v with Last boom and a positive Elapsed", err, tt.want)
			}
			checkDo(t, tt.p, doInput{failures: 100, callCost: years, ctxTimeout: tt.ctxTimeout})
		})
	}
}

func TestHostileRand(t *testing.T) {
	const base, maxDelay = 100 * time.Millisecond, 10 * time.Second
	tests := []struct {
		name string
		u    float64
		want []time.Duration // FullJitter, then DecorrelatedJitter, first wait
	}{
		{"1.0", 1, []time.Duration{base, 300 * time.Millisecond}},
		{"negative", -0.5, []time.Duration{0, base}},
		{"NaN", math.NaN(), []time.Duration{0, base}},
		{"+Inf", math.Inf(1), []time.Duration{base, 300 * time.Millisecond}},
		{"-Inf", math.Inf(-1), []time.Duration{0, base}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, j := range []Jitter{FullJitter, DecorrelatedJitter} {
				ft := newFakeTime()
				p := ft.with(Policy{MaxAttempts: 2, BaseDelay: base, MaxDelay: maxDelay, Jitter: j, Rand: constRand(tt.u)})
				Do(context.Background(), (&flaky{n: 5, err: errBoom}).call, p)
				if got := ft.Waits(); len(got) != 1 || got[0] != tt.want[i] {
					t.Errorf("jitter %d: waits = %v; want [%v]", i, got, tt.want[i])
				}
				checkDo(t, Policy{MaxAttempts: 10, BaseDelay: base, MaxDelay: maxDelay, Jitter: j, Rand: constRand(tt.u)}, doInput{failures: 100})
			}
		})
	}
}

func TestHostileJitter(t *testing.T) {
	for _, tt := range []struct{ w, want time.Duration }{
		{-time.Hour, 0}, {math.MinInt64, 0}, {time.Hour, time.Second}, {math.MaxInt64, time.Second},
	} {
		w, want := tt.w, tt.want
		ft := newFakeTime()
		var prevs, chosen []time.Duration
		bad := func(_ int, _, _, prev time.Duration, _ float64) time.Duration { prevs = append(prevs, prev); return w }
		p := ft.with(Policy{MaxAttempts: 3, MaxDelay: time.Second, Jitter: bad})
		p.OnRetry = func(_ context.Context, _ int, _ error, wait time.Duration) { chosen = append(chosen, wait) }
		Do(context.Background(), (&flaky{n: 5, err: errBoom}).call, p)
		if got := ft.Waits(); !slices.Equal(got, []time.Duration{want, want}) {
			t.Errorf("Jitter returning %v: waits = %v; want [%v %v], clamped into [0, MaxDelay]", w, got, want, want)
		}
		// OnRetry and the next call's prev see the clamped wait too
		if !slices.Equal(chosen, []time.Duration{want, want}) {
			t.Errorf("Jitter returning %v: OnRetry waits = %v; want [%v %v]", w, chosen, want, want)
		}
		if wantPrevs := []time.Duration{DefaultBaseDelay, want}; !slices.Equal(prevs, wantPrevs) {
			t.Errorf("Jitter returning %v: prev = %v; want %v", w, prevs, wantPrevs)
		}
	}
}

func TestSleeperReturnsEarly(t *testing.T) {
	// A Sleeper that does not wait makes the next attempt come early, on
	// its own responsibility; the attempt count still bounds the run.
	ft := newFakeTime()
	p := ft.with(Policy{MaxAttempts: 4, Timeout: time.Minute})
	p.Sleeper = SleeperFunc(func(context.Context, time.Duration) error { return nil })
	fn := &flaky{n: 100, err: errBoom}
	err := Do(context.Background(), fn.call, p)
	var re *RetryExhausted
	if !errors.As(err, &re) || re.Reason != MaxAttemptsReached || fn.calls != 4 || re.Elapsed != 0 {
		t.Errorf("Do() = %v after %d calls; want MaxAttemptsReached after 4 in 0s", err, fn.calls)
	}
}

// nilSafeErr is an error type whose methods work on a nil pointer.
type nilSafeErr struct{ msg string }

func (e *nilSafeErr) Error() string {
	if e == nil {
		return "nil *nilSafeErr"
	}
	return e.msg
}

func TestTypedNilError(t *testing.T) {
	// A nil *nilSafeErr in an error interface is not a nil error: Do
	// treats it as the failure it says it is, like any `err != nil` check.
	var typedNil *nilSafeErr
	fn := func(context.Context) error { return typedNil }
	ft := newFakeTime()
	err := Do(context.Background(), fn, ft.with(Policy{MaxAttempts: 2, Jitter: NoJitter}))
	var re *RetryExhausted
	if !errors.As(err, &re) || re.Attempts != 2 || re.Last != error(typedNil) {
		t.Fatalf("Do() = %v; want a *RetryExhausted after 2 attempts with the typed nil as Last", err)
	}
	var got *nilSafeErr
	if !errors.As(err, &got) || got != nil {
		t.Errorf("errors.As(Do(), *nilSafeErr) = %v, %v; want true, nil", errors.As(err, &got), got)
	}
	if want := "retry: gave up after 2 attempts in 100ms (max attempts reached): nil *nilSafeErr"; err.Error() != want {
		t.Errorf("Do().Error() = %q; want %q", err, want)
	}
}

func TestFnBlocksUntilCtxEnds(t *testing.T) {
	blocking := func(started chan<- struct{}) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			started <- struct{}{}
			<-ctx.Done()
			return ctx.Err()
		}
	}
	for _, tt := range []struct {
		name string
		p    Policy
	}{
		{"default predicate", Policy{}},
		{"a predicate that retries everything", Policy{IsRetryable: func(error) bool { return true }}},
		{"a predicate that retries nothing", Policy{IsRetryable: func(error) bool { return false }}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			started := make(chan struct{}, 10)
			go func() { <-started; cancel() }()
			err := Do(ctx, blocking(started), tt.p)
			var re *RetryExhausted
			if !errors.As(err, &re) || re.Attempts != 1 || re.Reason != Canceled || re.Last != context.Canceled || re.Cause != context.Canceled {
				t.Errorf("Do() = %#v; want Canceled after 1 attempt, with ctx's error as Last and Cause", err)
			}
		})
	}
}

func TestWaitEndingExactlyAtCtxDeadline(t *testing.T) {
	// A wait that would end just as ctx ends leaves no time for an attempt.
	ft := newFakeTime()
	ctx := ft.deadlineCtx(t, time.Hour)
	p := ft.with(Policy{BaseDelay: time.Hour, MaxDelay: time.Hour, Jitter: NoJitter})
	err := Do(ctx, (&flaky{n: 5, err: errBoom}).call, p)
	assertDeadlineReached(t, err, 1)
	if len(ft.Waits()) != 0 {
		t.Errorf("Do() waits = %v; want none", ft.Waits())
	}
}

func TestTenThousandGoroutinesShareOnePolicy(t *testing.T) {
	const goroutines = 10_000
	ft := newFakeTime()
	var mu sync.Mutex
	hooks := 0
	p := ft.with(Policy{MaxAttempts: 3, Jitter: FullJitter})
	p.OnRetry = func(context.Context, int, error, time.Duration) { mu.Lock(); hooks++; mu.Unlock() }
	var wg sync.WaitGroup
	bad := make(chan error, goroutines)
	for i := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn := &flaky{n: i % 4, err: errBoom} // 0 to 3 failures
			err := Do(context.Background(), fn.call, p)
			if wantErr := fn.n >= 3; (err != nil) != wantErr || fn.calls != min(fn.n+1, 3) {
				bad <- err
			}
		}()
	}
	wg.Wait()
	close(bad)
	for err := range bad {
		t.Fatalf("a concurrent Do() = %v; want its own result", err)
	}
	// per 4 goroutines: 0 + 1 + 2 + 2 retries
	if want := goroutines / 4 * 5; hooks != want || len(ft.Waits()) != want {
		t.Errorf("OnRetry calls, waits = %d, %d; want %d each", hooks, len(ft.Waits()), want)
	}
}

// TestFnCtxIgnoresCtxDeadlineOnClock: fn's ctx ends at the limits Do adds,
// Timeout and AttemptTimeout, and at ctx's own deadline in real time; Do
// does not shorten it by ctx's deadline as measured on a Clock that runs
// ahead of real time.
func TestFnCtxIgnoresCtxDeadlineOnClock(t *testing.T) {
	tests := []struct {
		name string
		p    Policy
		want time.Duration // how long every attempt's ctx lasts, in real time
	}{
		{"Timeout", Policy{Timeout: 5 * time.Second, MaxAttempts: 1}, 5 * time.Second},
		{"AttemptTimeout", Policy{AttemptTimeout: 5 * time.Second, MaxAttempts: 3, BaseDelay: 3 * time.Second, MaxDelay: 3 * time.Second, Jitter: NoJitter}, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var clock *fakeTime
			if tt.name == "Timeout" {
				clock = &fakeTime{now: time.Now().Add(time.Hour)} // an hour ahead: ctx's deadline has passed on it
			} else {
				clock = newFakeTime() // the waits, 3s each, bring ctx's deadline nearer on Clock only
			}
			var lasts []time.Duration
			Do(ctx, func(ctx context.Context) error {
				dl, ok := ctx.Deadline()
				if !ok || ctx.Err() != nil {
					t.Errorf("fn's ctx: deadline %v, err %v; want a live ctx with a deadline", ok, ctx.Err())
				}
				lasts = append(lasts, time.Until(dl))
				return errBoom
			}, clock.with(tt.p))
			if len(lasts) == 0 {
				t.Fatal("fn was not called")
			}
			for i, d := range lasts {
				if d > tt.want || d < tt.want-time.Second {
					t.Errorf("attempt %d: fn's ctx ends in %v; want about %v", i+1, d, tt.want)
				}
			}
		})
	}
}

// TestClockGoingBackDoesNotStretchTheTimeout: once Clock has said that 5s
// of a 10s Timeout have passed, a Clock that then goes back does not give
// the time back: the next attempt's ctx still ends within the 5s left.
func TestClockGoingBackDoesNotStretchTheTimeout(t *testing.T) {
	ft := newFakeTime()
	start := ft.Now()
	p := ft.with(Policy{Timeout: 10 * time.Second, MaxAttempts: 2, BaseDelay: time.Second, MaxDelay: time.Second, Jitter: NoJitter})
	p.Sleeper = SleeperFunc(func(context.Context, time.Duration) error {
		ft.advance(start.Add(time.Second).Sub(ft.Now())) // back to 1s after the start
		return nil
	})
	var lasts []time.Duration
	Do(context.Background(), func(ctx context.Context) error {
		dl, _ := ctx.Deadline()
		lasts = append(lasts, time.Until(dl))
		ft.advance(5 * time.Second)
		return errBoom
	}, p)
	if len(lasts) != 2 || lasts[1] > 5*time.Second {
		t.Errorf("fn's ctx lasted %v; want 2 attempts, the second with at most 5s", lasts)
	}
}
