package retry

import (
	"context"
	"errors"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// The edges that a trial in real services and an outside review hit: no
// call after a deadline, deadlines ahead of the predicate, Canceled only
// for a ctx that is done, readable messages and half-set delays.

// Fn is never called after a deadline has passed, however
// late OnRetry or the Sleeper makes the next attempt; the Budget token of
// the retry that did not happen is given back.
func TestNoCallAfterADeadline(t *testing.T) {
	const late = 15 * time.Millisecond
	slowOnRetry := func(ft *fakeTime) func(context.Context, int, error, time.Duration) {
		return func(context.Context, int, error, time.Duration) { ft.advance(600 * time.Millisecond) }
	}
	lateSleeper := func(ft *fakeTime) SleeperFunc {
		return func(ctx context.Context, d time.Duration) error { return ft.Sleep(ctx, d+late) }
	}
	tests := []struct {
		name       string
		p          Policy
		ctxTimeout time.Duration
		slow       bool // OnRetry takes 600ms
		late       bool // the Sleeper returns 15ms late
		calls      []time.Duration
		limit      string // the deadline named in the message
	}{
		// 300ms waits: the first fits at 0s, OnRetry ends it at 600ms; the
		// second fits at 600ms, OnRetry ends it at 1.2s, past the deadline
		{"Timeout, slow OnRetry", Policy{Timeout: time.Second, BaseDelay: 300 * time.Millisecond}, 0, true, false,
			[]time.Duration{0, 600 * time.Millisecond}, "Policy.Timeout passed"},
		{"ctx deadline, slow OnRetry", Policy{BaseDelay: 300 * time.Millisecond}, time.Second, true, false,
			[]time.Duration{0, 600 * time.Millisecond}, "ctx's deadline passed"},
		// a 990ms wait fits a 1s deadline; the Sleeper ends it at 1.005s
		{"Timeout, late Sleeper", Policy{Timeout: time.Second, BaseDelay: 990 * time.Millisecond}, 0, false, true,
			[]time.Duration{0}, "Policy.Timeout passed"},
		{"ctx deadline, late Sleeper", Policy{BaseDelay: 990 * time.Millisecond}, time.Second, false, true,
			[]time.Duration{0}, "ctx's deadline passed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			start := ft.Now()
			p := tt.p
			p.MaxDelay, p.Jitter, p.Budget = p.BaseDelay, NoJitter, NewBudget(0, 5)
			p = ft.with(p)
			if tt.slow {
				p.OnRetry = slowOnRetry(ft)
			}
			if tt.late {
				p.Sleeper = lateSleeper(ft)
			}
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

// When Policy.Timeout has passed as fn fails, Do
// reports its own deadline whatever the predicate says; a Permanent error
// is still returned as it is.
func TestDeadlineBeforeThePredicate(t *testing.T) {
	errFinal := errors.New("final")
	permFinal := Permanent(errFinal)
	noTimeouts := func(err error) bool { return !errors.Is(err, context.DeadlineExceeded) }
	tests := []struct {
		name       string
		p          Policy
		ctxTimeout time.Duration
		err        error // fn's error, returned after the call took 2s
		want       error // nil: a DeadlineReached, with err as Last
	}{
		{"Timeout, a timeout refused by IsRetryable", Policy{Timeout: time.Second, IsRetryable: noTimeouts}, 0, context.DeadlineExceeded, nil},
		{"Timeout, every error refused", Policy{Timeout: time.Second, IsRetryable: func(error) bool { return false }}, 0, errFinal, nil},
		{"ctx deadline, every error refused", Policy{IsRetryable: func(error) bool { return false }}, time.Second, errFinal, nil},
		{"Timeout, Permanent", Policy{Timeout: time.Second}, 0, permFinal, permFinal},
		{"before the Timeout, refused", Policy{Timeout: time.Hour, IsRetryable: func(error) bool { return false }}, 0, errFinal, errFinal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			calls := 0
			err := Do(ft.deadlineCtx(t, tt.ctxTimeout), func(context.Context) error {
				calls++
				ft.advance(2 * time.Second)
				return tt.err
			}, ft.with(tt.p))
			if tt.want != nil {
				if err != tt.want || calls != 1 {
					t.Errorf("Do() = %v after %d calls; want %v after 1", err, calls, tt.want)
				}
				return
			}
			var re *RetryExhausted
			if !errors.As(err, &re) || re.Reason != DeadlineReached || re.Attempts != 1 || re.Last != tt.err ||
				!errors.Is(err, context.DeadlineExceeded) || calls != 1 {
				t.Errorf("Do() = %v after %d calls; want DeadlineReached after 1, Last %v", err, calls, tt.err)
			}
		})
	}
}

// A ctx that is done when Do stops makes the reason
// Canceled, whatever else stopped Do at the same time.
func TestCanceledWinsWhenCtxIsDone(t *testing.T) {
	ft := newFakeTime()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := ft.Now()
	p := ft.with(Policy{Timeout: time.Second})
	p.Clock = ClockFunc(func() time.Time {
		if ft.Now().Sub(start) >= time.Second { // the caller leaves as the Timeout passes
			cancel()
		}
		return ft.Now()
	})
	err := Do(ctx, func(context.Context) error { ft.advance(2 * time.Second); return errBoom }, p)
	assertCanceled(t, err, context.Canceled, 1)
}

// A nil Budget is no budget, and says so.
func TestNilBudgetTokens(t *testing.T) {
	var b *Budget
	if got := b.Tokens(); !math.IsInf(got, 1) {
		t.Errorf("(*Budget)(nil).Tokens() = %v; want +Inf", got)
	}
}

// ownDone is a Context whose Done channel package context did not make,
// as some frameworks' Context types have.
type ownDone struct {
	context.Context
	done chan struct{}
}

func (c ownDone) Done() <-chan struct{} { return c.done }

// As the package doc says, Do starts no goroutine of
// its own; context.WithTimeout starts one for an attempt, ending with it,
// only for a ctx whose Done package context did not make.
func TestGoroutinePerAttempt(t *testing.T) {
	// watchers counts the goroutines that context starts to watch a
	// parent it does not know.
	watchers := func() int {
		buf := make([]byte, 1<<20)
		return strings.Count(string(buf[:runtime.Stack(buf, true)]), "context.(*cancelCtx).propagateCancel.func")
	}
	tests := []struct {
		name string
		ctx  context.Context
		p    Policy
		want int
	}{
		{"no Timeout, own Done", ownDone{context.Background(), make(chan struct{})}, Policy{}, 0},
		{"Timeout, a ctx from package context", context.WithValue(context.Background(), ownDone{}, 1), Policy{Timeout: time.Hour}, 0},
		{"Timeout, own Done", ownDone{context.Background(), make(chan struct{})}, Policy{Timeout: time.Hour}, 1},
		{"AttemptTimeout, own Done", ownDone{context.Background(), make(chan struct{})}, Policy{AttemptTimeout: time.Hour}, 1},
	}
	// settled waits for the watchers of attempts that ended to exit, as
	// they do soon after, and returns how many are left.
	settled := func() int {
		for i := 0; i < 10000 && watchers() > 0; i++ {
			runtime.Gosched()
		}
		return watchers()
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n := settled(); n != 0 {
				t.Fatalf("goroutines watching a ctx before Do = %d; want 0", n)
			}
			during := -1
			Do(tt.ctx, func(ctx context.Context) error { during = watchers(); return nil }, newFakeTime().with(tt.p))
			if during != tt.want {
				t.Errorf("goroutines watching Do's ctx during the attempt = %d; want %d", during, tt.want)
			}
			if n := settled(); n != 0 {
				t.Errorf("goroutines watching Do's ctx after Do = %d; want 0", n)
			}
		})
	}
}

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
	if !errors.As(err, &re) || re.Reason != Canceled {
		t.Fatalf("Do() = %v; want a *RetryExhausted with Reason Canceled", err)
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
// wait whose Sleeper returned nil, Do gives up with Canceled and does
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
	if !errors.As(err, &re) || re.Reason != Canceled || fn.calls != 1 {
		t.Errorf("Do() = %v after %d calls; want Canceled after 1", err, fn.calls)
	}
}
