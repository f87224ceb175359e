package retry

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCtxDoneWinsOverPermanent: when fn returns a Permanent error after
// ctx was cancelled, Do reports that ctx is done, not fn's error as it
// is, and the permanent error is still reachable as the last error.
func TestCtxDoneWinsOverPermanent(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ft := newFakeTime()
	err := Do(ctx, func(context.Context) error {
		cancel()
		return Permanent(errBoom)
	}, ft.with(Policy{}))
	var re *RetryExhausted
	if !errors.As(err, &re) || re.Reason != ContextDone {
		t.Fatalf("Do() = %v; want a *RetryExhausted with Reason ContextDone", err)
	}
	if !errors.Is(err, errBoom) || !errors.Is(err, context.Canceled) {
		t.Errorf("Do() = %v; want it to reach boom and context.Canceled", err)
	}
}

// TestSuccessAfterCtxCancelIsSuccess: fn that succeeds is a success even
// if ctx was cancelled while it ran: Do returns nil.
func TestSuccessAfterCtxCancelIsSuccess(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ft := newFakeTime()
	err := Do(ctx, func(context.Context) error {
		cancel()
		return nil
	}, ft.with(Policy{}))
	if err != nil {
		t.Errorf("Do() = %v; want nil, since fn succeeded", err)
	}
}

// TestCancelCauseDuringAttempt: when ctx is cancelled with a cause while
// fn runs, the error Do returns reaches that cause, not only
// context.Canceled.
func TestCancelCauseDuringAttempt(t *testing.T) {
	errShutdown := errors.New("shutting down")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	ft := newFakeTime()
	err := Do(ctx, func(context.Context) error {
		cancel(errShutdown)
		return errBoom
	}, ft.with(Policy{}))
	var re *RetryExhausted
	if !errors.As(err, &re) || re.Reason != ContextDone {
		t.Fatalf("Do() = %v; want a *RetryExhausted with Reason ContextDone", err)
	}
	if !errors.Is(err, errShutdown) || !errors.Is(err, context.Canceled) || !errors.Is(err, errBoom) {
		t.Errorf("Do() = %v; want it to reach the cause, context.Canceled and boom", err)
	}
}

// TestFirstAttemptCtxEndsAtCtxDeadlineOnClock: when ctx's deadline is
// nearer than Policy.Timeout on Clock, the first attempt's ctx ends when
// the time that Clock says is left before ctx's deadline has run out in
// real time, even if ctx's own deadline lies later in real time.
func TestFirstAttemptCtxEndsAtCtxDeadlineOnClock(t *testing.T) {
	ft := &fakeTime{now: time.Now().Add(time.Hour)} // Clock runs an hour ahead
	ctx := ft.deadlineCtx(t, time.Minute)           // a minute left on Clock, an hour and a minute in real time
	var got time.Time
	var ok bool
	err := Do(ctx, func(ctx context.Context) error {
		got, ok = ctx.Deadline()
		return nil
	}, ft.with(Policy{Timeout: 2 * time.Hour}))
	if err != nil || !ok {
		t.Fatalf("Do() = %v, fn's ctx has a deadline: %v; want nil, true", err, ok)
	}
	if limit := time.Now().Add(2 * time.Minute); !got.Before(limit) {
		t.Errorf("fn's ctx deadline is %v from now; want at most a minute", time.Until(got))
	}
}

// backwardsClock reads start first, then an hour before it ever after.
func backwardsClock(start time.Time) ClockFunc {
	reads := 0
	return func() time.Time {
		reads++
		if reads == 1 {
			return start
		}
		return start.Add(-time.Hour)
	}
}

// TestClockGoingBackDoesNotStretchTheDeadline: a Clock that goes back
// before the start of Do counts as standing still, so Policy.Timeout is
// not lengthened by the hour it went back: a wait longer than the Timeout
// still does not fit.
func TestClockGoingBackDoesNotStretchTheDeadline(t *testing.T) {
	fn := &flaky{n: 10, err: errBoom}
	p := Policy{
		BaseDelay: 2 * time.Second, MaxDelay: 6 * time.Second, Timeout: time.Second,
		Clock:   backwardsClock(time.Now()),
		Sleeper: SleeperFunc(func(context.Context, time.Duration) error { return nil }),
	}
	err := Do(context.Background(), fn.call, p)
	var re *RetryExhausted
	if !errors.As(err, &re) || re.Reason != DeadlineReached || fn.calls != 1 {
		t.Errorf("Do() = %v after %d calls; want DeadlineReached after 1", err, fn.calls)
	}
}

// TestJitterSeesUInUnitRange: a Jitter always receives u in [0, 1], even
// when Policy.Rand returns a value above 1, below 0, or NaN.
func TestJitterSeesUInUnitRange(t *testing.T) {
	values := []float64{7, -3, math.NaN()}
	var seen []float64
	calls := 0
	p := newFakeTime().with(Policy{
		MaxAttempts: len(values) + 1,
		Rand: func() float64 {
			calls++
			return values[calls-1]
		},
		Jitter: func(n int, base, max, prev time.Duration, u float64) time.Duration {
			seen = append(seen, u)
			return base
		},
	})
	fn := &flaky{n: 10, err: errBoom}
	Do(context.Background(), fn.call, p)
	if want := []float64{1, 0, 0}; !slices.Equal(seen, want) {
		t.Errorf("Jitter saw u = %v; want %v", seen, want)
	}
}

// TestNoTokenForARetryThatIsRefused: a Budget loses no token when Do gives
// up before a retry because the attempts ran out, a hint was too long, or
// the wait would not end before the deadline.
func TestNoTokenForARetryThatIsRefused(t *testing.T) {
	tests := []struct {
		name string
		p    Policy
		err  error
		want Reason
	}{
		{"attempts ran out", Policy{MaxAttempts: 1}, errBoom, MaxAttemptsReached},
		{"hint above MaxDelay", Policy{MaxDelay: time.Second}, hintErr(time.Minute), HintTooLong},
		{"hint past Timeout", Policy{Timeout: time.Second}, hintErr(2 * time.Second), HintTooLong},
		{"wait past Timeout", Policy{Timeout: time.Second, BaseDelay: 2 * time.Second}, errBoom, DeadlineReached},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBudget(0, 3) // earns nothing: only a spent token would change the balance
			p := tt.p
			p.Budget = b
			err := Do(context.Background(), func(context.Context) error { return tt.err }, newFakeTime().with(p))
			var re *RetryExhausted
			if !errors.As(err, &re) || re.Reason != tt.want {
				t.Fatalf("Do() = %v; want Reason %v", err, tt.want)
			}
			if got := b.Tokens(); got != 3 {
				t.Errorf("Budget.Tokens() = %v after Do; want 3, untouched", got)
			}
		})
	}
}

// TestHintPastBothLimitsNamesMaxDelay: a hint that is both above MaxDelay
// and past the deadline is reported as above MaxDelay.
func TestHintPastBothLimitsNamesMaxDelay(t *testing.T) {
	ft := newFakeTime()
	err := Do(context.Background(), func(context.Context) error {
		return hintErr(time.Minute)
	}, ft.with(Policy{MaxDelay: 10 * time.Second, Timeout: time.Second}))
	want := "retry: gave up after 1 attempt in 0s (retry-after hint too long: 1m0s, above MaxDelay 10s): slow down"
	if err == nil || err.Error() != want {
		t.Errorf("Do() = %v; want %q", err, want)
	}
}

// TestSleeperErrorWinsOverDeadlinePassedDuringTheWait: a Sleeper that
// fails is reported as SleepFailed, with its error, even when the clock
// passed the deadline during that wait.
func TestSleeperErrorWinsOverDeadlinePassedDuringTheWait(t *testing.T) {
	errSleep := errors.New("sleeper broke")
	ft := newFakeTime()
	p := Policy{
		Timeout: time.Second,
		Clock:   ft,
		Sleeper: SleeperFunc(func(context.Context, time.Duration) error {
			ft.advance(time.Hour)
			return errSleep
		}),
		BaseDelay: 10 * time.Millisecond,
	}
	err := Do(context.Background(), failOnce, p)
	var re *RetryExhausted
	if !errors.As(err, &re) || re.Reason != SleepFailed || !errors.Is(err, errSleep) {
		t.Errorf("Do() = %v; want SleepFailed reaching the Sleeper's error", err)
	}
}

// TestCtxDoneDuringASleepThatReturnsNil: when ctx is done by the end of a
// wait whose Sleeper returned nil, Do gives up with ContextDone and does
// not call fn again.
func TestCtxDoneDuringASleepThatReturnsNil(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fn := &flaky{n: 10, err: errBoom}
	p := Policy{Sleeper: SleeperFunc(func(context.Context, time.Duration) error {
		cancel()
		return nil
	})}
	err := Do(ctx, fn.call, p)
	var re *RetryExhausted
	if !errors.As(err, &re) || re.Reason != ContextDone || fn.calls != 1 {
		t.Errorf("Do() = %v after %d calls; want ContextDone after 1", err, fn.calls)
	}
}

// TestValidateNamesTheFirstFieldOutOfRange: with several fields out of
// range, Validate names the one declared first in Policy.
func TestValidateNamesTheFirstFieldOutOfRange(t *testing.T) {
	tests := []struct {
		name string
		p    Policy
		want string
	}{
		{"MaxAttempts before BaseDelay", Policy{MaxAttempts: -1, BaseDelay: -1}, "MaxAttempts"},
		{"MaxAttempts before Clock", Policy{MaxAttempts: -1, Clock: ClockFunc(nil)}, "MaxAttempts"},
		{"AttemptTimeout before Sleeper", Policy{AttemptTimeout: -1, Sleeper: SleeperFunc(nil)}, "AttemptTimeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			if want := ErrInvalidPolicy.Error() + ": " + tt.want + " "; err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("Validate() = %v; want it to start with %q", err, want)
			}
		})
	}
}

// TestBaseDelayDerivedFromAOneNanosecondMaxDelay: a zero BaseDelay under
// a MaxDelay of 1ns is MaxDelay/3, that is 0, not DefaultBaseDelay, so
// that the Policy is valid and the Jitter gets base 0 and max 1ns.
func TestBaseDelayDerivedFromAOneNanosecondMaxDelay(t *testing.T) {
	var base, max time.Duration
	p := newFakeTime().with(Policy{
		MaxAttempts: 2,
		MaxDelay:    1,
		Jitter: func(n int, b, m, prev time.Duration, u float64) time.Duration {
			base, max = b, m
			return 0
		},
	})
	if err := Do(context.Background(), failOnce, p); !errors.Is(err, errBoom) {
		t.Fatalf("Do() = %v; want it to reach boom after two attempts", err)
	}
	if base != 0 || max != 1 {
		t.Errorf("Jitter got base %v, max %v; want 0, 1ns", base, max)
	}
}

// codeErr is an error type that both fn and a Sleeper return below.
type codeErr string

func (e codeErr) Error() string { return string(e) }

// TestErrorsAsFindsTheLastErrorBeforeTheCause: when fn's last error and
// the Cause are of the same type, errors.As on a *RetryExhausted finds
// fn's last error, which Unwrap lists first.
func TestErrorsAsFindsTheLastErrorBeforeTheCause(t *testing.T) {
	p := Policy{Sleeper: SleeperFunc(func(context.Context, time.Duration) error {
		return codeErr("sleeper")
	})}
	err := Do(context.Background(), func(context.Context) error { return codeErr("fn") }, p)
	var re *RetryExhausted
	if !errors.As(err, &re) || re.Reason != SleepFailed {
		t.Fatalf("Do() = %v; want SleepFailed", err)
	}
	var got codeErr
	if !errors.As(err, &got) || got != "fn" {
		t.Errorf("errors.As(Do(), *codeErr) found %q; want %q, fn's last error", got, "fn")
	}
}
