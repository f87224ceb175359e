//go:build go1.25

// go.mod names Go 1.22, whose timers keep asynchronous channels; synctest
// needs the synchronous ones of Go 1.23 and later.
//go:debug asynctimerchan=0

package retry

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// These tests run the default Sleeper, a real timer, on synctest's fake
// clock: time.Now and timers inside the bubble advance only when every
// goroutine in it is blocked, so the waits take no real time.

func TestDefaultSleeperWaitsTheChosenDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var want, got []time.Duration
		last := time.Now()
		p := Policy{MaxAttempts: 6, BaseDelay: 10 * time.Millisecond, MaxDelay: time.Second, Rand: seqRand(3)}
		p.OnRetry = func(_ context.Context, _ int, _ error, wait time.Duration) { want = append(want, wait) }
		Do(context.Background(), func(context.Context) error {
			now := time.Now()
			got = append(got, now.Sub(last))
			last = now
			return errBoom
		}, p)
		// the first call comes at once; each later one exactly one wait later
		if want = append([]time.Duration{0}, want...); !slices.Equal(got, want) {
			t.Errorf("time before each call = %v; want %v", got, want)
		}
	})
}

func TestDefaultSleeperEndsWhenCtxIsCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(3*time.Second, cancel)
		start := time.Now()
		fn := &flaky{n: 10, err: errBoom}
		err := Do(ctx, fn.call, Policy{BaseDelay: time.Hour, MaxDelay: time.Hour})
		if elapsed := time.Since(start); elapsed != 3*time.Second {
			t.Errorf("Do() returned after %v; want 3s, when ctx was canceled mid-wait", elapsed)
		}
		assertCanceled(t, err, context.Canceled, 1)
	})
}

func TestDefaultSleeperGivesUpBeforeCtxDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		err := Do(ctx, (&flaky{n: 10, err: errBoom}).call, Policy{BaseDelay: 10 * time.Second, MaxDelay: time.Minute})
		if elapsed := time.Since(start); elapsed != 0 {
			t.Errorf("Do() returned after %v; want 0s: a 10s wait cannot end before a 5s deadline", elapsed)
		}
		assertDeadlineReached(t, err, 1)
	})
}

func TestDefaultSleeperZeroWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := Policy{MaxAttempts: 4, Jitter: func(int, time.Duration, time.Duration, time.Duration, float64) time.Duration { return 0 }}
		var re *RetryExhausted
		err := Do(context.Background(), (&flaky{n: 10, err: errBoom}).call, p)
		if !errors.As(err, &re) || re.Attempts != 4 || time.Since(start) != 0 {
			t.Errorf("Do() = %v after %v; want 4 attempts in 0s", err, time.Since(start))
		}
	})
}

func TestDefaultSleeperOneNanosecondWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var at []time.Duration
		fn := func(context.Context) error { at = append(at, time.Since(start)); return errBoom }
		Do(context.Background(), fn, Policy{MaxAttempts: 3, BaseDelay: 1, MaxDelay: 1, Jitter: NoJitter})
		// the shortest wait is still waited
		if want := []time.Duration{0, 1, 2}; !slices.Equal(at, want) {
			t.Errorf("calls at %v; want %v", at, want)
		}
	})
}

// hang is an fn that blocks until its ctx ends, then returns ctx's error.
func hang(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

func TestTimeoutBoundsAHungCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		calls := 0
		fn := func(ctx context.Context) error {
			if calls++; calls == 1 {
				return errBoom // fails fast, then the second call hangs
			}
			return hang(ctx)
		}
		p := Policy{BaseDelay: 100 * time.Millisecond, Timeout: 300 * time.Millisecond, Jitter: NoJitter}
		err := Do(context.Background(), fn, p)
		if elapsed := time.Since(start); elapsed != 300*time.Millisecond {
			t.Errorf("Do() returned after %v; want 300ms, the Timeout", elapsed)
		}
		var re *RetryExhausted
		if !errors.As(err, &re) || re.Reason != DeadlineReached || re.Attempts != 2 || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Do() = %v; want DeadlineReached after 2 attempts, the last one timed out", err)
		}
	})
}

func TestAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var at []time.Duration
		fn := func(ctx context.Context) error {
			at = append(at, time.Since(start))
			if len(at) <= 2 {
				return hang(ctx) // the first two attempts run out of time
			}
			return nil
		}
		p := Policy{BaseDelay: time.Second, MaxDelay: time.Second, AttemptTimeout: 2 * time.Second, Jitter: NoJitter}
		if err := Do(context.Background(), fn, p); err != nil {
			t.Fatalf("Do() = %v; want nil", err)
		}
		// each timed-out attempt takes 2s and is followed by a 1s wait
		if want := []time.Duration{0, 3 * time.Second, 6 * time.Second}; !slices.Equal(at, want) {
			t.Errorf("calls at %v; want %v", at, want)
		}
	})
}

func TestAttemptTimeoutWithinTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := Policy{BaseDelay: time.Second, MaxDelay: time.Second, AttemptTimeout: 2 * time.Second, Timeout: 4 * time.Second, Jitter: NoJitter}
		err := Do(context.Background(), hang, p)
		// 2s attempt, 1s wait, then the second attempt gets the 1s left
		if elapsed := time.Since(start); elapsed != 4*time.Second {
			t.Errorf("Do() returned after %v; want 4s", elapsed)
		}
		var re *RetryExhausted
		if !errors.As(err, &re) || re.Reason != DeadlineReached || re.Attempts != 2 {
			t.Errorf("Do() = %v; want DeadlineReached after 2 attempts", err)
		}
	})
}

// On real timers: with a 1s Timeout, 300ms waits and
// an OnRetry that takes 600ms, fn is called at 0s and 600ms, and not at
// 1.2s, after the Timeout.
func TestNoCallAfterTheDeadlineOnRealTimers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var at []time.Duration
		p := Policy{Timeout: time.Second, BaseDelay: 300 * time.Millisecond, MaxDelay: 300 * time.Millisecond, Jitter: NoJitter}
		p.OnRetry = func(context.Context, int, error, time.Duration) { time.Sleep(600 * time.Millisecond) }
		err := Do(context.Background(), func(ctx context.Context) error {
			at = append(at, time.Since(start))
			return errBoom
		}, p)
		if want := []time.Duration{0, 600 * time.Millisecond}; !slices.Equal(at, want) {
			t.Errorf("fn called at %v; want %v", at, want)
		}
		assertDeadlineReached(t, err, 2)
		if elapsed := time.Since(start); elapsed != 1200*time.Millisecond {
			t.Errorf("Do() returned after %v; want 1.2s, when OnRetry returned", elapsed)
		}
	})
}

// On real timers: fn hangs until the Timeout ends its
// ctx, and IsRetryable refuses timeouts; Do still says that its Timeout
// ended the call.
func TestHungCallWithAPredicateThatRefusesTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := Policy{Timeout: 300 * time.Millisecond, IsRetryable: func(err error) bool { return !errors.Is(err, context.DeadlineExceeded) }}
		err := Do(context.Background(), hang, p)
		var re *RetryExhausted
		if !errors.As(err, &re) || re.Reason != DeadlineReached || re.Attempts != 1 || re.Last != context.DeadlineExceeded || re.Elapsed != 300*time.Millisecond {
			t.Errorf("Do() = %#v; want DeadlineReached after 1 attempt in 300ms, Last context.DeadlineExceeded", err)
		}
		if elapsed := time.Since(start); elapsed != 300*time.Millisecond {
			t.Errorf("Do() returned after %v; want 300ms", elapsed)
		}
	})
}
