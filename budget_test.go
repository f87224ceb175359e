package retry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// NewBudget's bad arguments make a Budget that fails Validate, and so Do
// before any call, with a message that names the argument.
func TestNewBudgetRejectsBadArguments(t *testing.T) {
	for _, tt := range []struct {
		ratio float64
		burst int
		want  string // after "retry: invalid policy: NewBudget "; "" for valid arguments
	}{
		{-0.1, 10, "ratio is -0.1; want it in [0, 1]"},
		{1.5, 1, "ratio is 1.5; want it in [0, 1]"},
		{math.NaN(), 10, "ratio is NaN; want it in [0, 1]"},
		{0.1, -1, "burst is -1; want 1 or more"},
		{0.1, 0, "burst is 0; want 1 or more"}, // a balance capped at 0 can never hold a token
		{0.1, math.MaxInt, "burst is 9223372036854775807; want at most 9223372036854"},
		{0, 1, ""}, {1, 1, ""}, {0.5, math.MaxInt64 / tokenScale, ""},
	} {
		fn, want := &flaky{}, "<nil>"
		if tt.want != "" {
			want = "retry: invalid policy: NewBudget " + tt.want
		}
		if err := Do(context.Background(), fn.call, Policy{Budget: NewBudget(tt.ratio, tt.burst)}); fmt.Sprint(err) != want ||
			err != nil && (!errors.Is(err, ErrInvalidPolicy) || fn.calls != 0) {
			t.Errorf("NewBudget(%v, %d): Do() = %v after %d calls; want %s, wrapping ErrInvalidPolicy, after 0", tt.ratio, tt.burst, err, fn.calls, want)
		}
	}
}

// A Budget earns ratio to the millionth per Do call that calls fn: each
// ratio written with six decimals exactly, one between two millionths the
// lower, unless within 1e-9 of the upper.
func TestBudgetDeposit(t *testing.T) {
	for k := int64(0); k <= tokenScale; k++ {
		if got := NewBudget(float64(k)/1e6, 1).deposit; got != k { // the float64 nearest k/10⁶, as a literal gives
			t.Fatalf("NewBudget(%v, 1) earns %d millionths per call; want %d", float64(k)/1e6, got, k)
		}
	}
	for ratio, want := range map[float64]int64{5e-7: 0, 0.000249 + 2e-9: 249, 0.000250 - 2e-9: 249, 0.000250 - 0.5e-9: 250} {
		b := NewBudget(ratio, 1)
		b.balance.Store(0)
		Do(context.Background(), func(context.Context) error { return nil }, Policy{Budget: b})
		if got := b.balance.Load(); got != want {
			t.Errorf("NewBudget(%v, 1) earns %d millionths in a Do; want %d", ratio, got, want)
		}
	}
}

// A new Budget is full and a nil one has +Inf tokens; a refund gives back exactly the token
// that spend took, keeping a fraction; neither a refund nor a deposit lifts the balance above
// the burst, nor wraps it past math.MaxInt64 at the largest burst, where a retry still pays.
func TestBudgetTokens(t *testing.T) {
	b := NewBudget(0.5, 2)
	if got, none := b.Tokens(), (*Budget)(nil).Tokens(); got != 2 || !math.IsInf(none, 1) {
		t.Errorf("new Budget, nil Budget Tokens() = %v, %v; want 2, +Inf", got, none)
	}
	b.spend()
	b.spend()
	b.earn() // 0.5 tokens: a fraction must survive the refund
	for i, want := range []float64{1.5, 2, 2} {
		if b.refund(); b.Tokens() != want {
			t.Errorf("Tokens() after refund %d = %v; want %v", i+1, b.Tokens(), want)
		}
	}
	top := NewBudget(1, math.MaxInt64/tokenScale) // within a token of math.MaxInt64
	if top.refund(); top.balance.Load() != top.capacity {
		t.Errorf("balance after a refund to the largest full Budget = %d; want %d, the capacity", top.balance.Load(), top.capacity)
	}
	fn := &flaky{n: 1, err: errBoom}
	err := Do(context.Background(), fn.call, newFakeTime().with(Policy{Budget: top})) // earns a token at the top, and spends one
	if got, want := top.balance.Load(), top.capacity-tokenScale; err != nil || fn.calls != 2 || got != want {
		t.Errorf("Do() = %v after %d calls, balance %d; want nil after 2, %d: one token below the capacity", err, fn.calls, got, want)
	}
}

// Once the Budget is spent, Do gives up with BudgetExhausted and does not wait; the message
// names the Reason once.
func TestBudgetExhausted(t *testing.T) {
	ft, b := newFakeTime(), NewBudget(0, 2)
	err := Do(context.Background(), (&flaky{n: 100, err: errBoom}).call, ft.with(Policy{Budget: b, Jitter: NoJitter}))
	if want := "retry: gave up after 3 attempts in 300ms (retry budget exhausted): boom"; fmt.Sprint(err) != want ||
		!errors.Is(err, ErrBudgetExhausted) || !errors.Is(err, errBoom) || len(ft.Waits()) != 2 || b.Tokens() != 0 {
		t.Errorf("Do() = %q after %d waits, %v tokens left; want %q, reaching ErrBudgetExhausted and boom, after 2, 0",
			err, len(ft.Waits()), b.Tokens(), want)
	}
}

// Calls that always fail retry at most ratio × calls + burst times, the rest meeting the Budget,
// which goroutines spend to below one token; refunded tokens all return.
func TestBudgetConcurrent(t *testing.T) {
	const goroutines, each, ratio, burst = 50, 200, 0.1, 10
	b, refunded := NewBudget(ratio, burst), NewBudget(0, 3)
	var retries, met atomic.Int64
	p := Policy{MaxAttempts: 3, Budget: b, Jitter: zeroJitter,
		OnRetry: func(context.Context, int, error, time.Duration) { retries.Add(1) }}
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if errors.Is(Do(context.Background(), failOnce, p), ErrBudgetExhausted) { // wants 2 retries
					met.Add(1)
				}
				if refunded.spend() {
					refunded.refund()
				}
			}
		}()
	}
	wg.Wait()
	got, limit := retries.Load(), int64(ratio*goroutines*each)+burst
	if got > limit || met.Load() == 0 || b.Tokens() >= 1 || b.Tokens() < 0 || refunded.Tokens() != 3 {
		t.Errorf("retries, calls that met the Budget, tokens left, refunded Budget's = %d, %d, %v, %v; want at most %d, some, under one, 3",
			got, met.Load(), b.Tokens(), refunded.Tokens(), limit)
	}
}

// A retry takes a token only once attempts, hints and deadlines allow it, and gives it back if
// the retry does not happen (ctx ends the wait, the Sleeper fails, or a panic unwinds Do, without
// OnDone); a retry that happens keeps its token, even if fn then panics.
func TestBudgetTokenReturnedWhenTheRetryDoesNotHappen(t *testing.T) {
	const panics Reason = -1
	errPanic, slept, calls := errors.New("panicked"), false, 0
	var cancel context.CancelFunc // the row's ctx's
	fake := func(p Policy) Policy { return newFakeTime().with(p) }
	sleeper := func(sleep func(ctx context.Context) error) Sleeper {
		return SleeperFunc(func(ctx context.Context, _ time.Duration) error { return sleep(ctx) })
	}
	panicIf := func(cond bool) {
		if cond {
			panic(errPanic)
		}
	}
	tests := []struct {
		name   string
		p      Policy
		fn     func(context.Context) error
		tokens float64 // of 2
		reason Reason  // after 1 attempt, or panics; 0: not checked
	}{
		{"attempts ran out", fake(Policy{MaxAttempts: 1}), failOnce, 2, MaxAttemptsReached},
		{"hint above MaxDelay", fake(Policy{MaxDelay: time.Second}), (&flaky{n: 9, err: hintErr(time.Minute)}).call, 2, HintTooLong},
		{"hint past Timeout", fake(Policy{Timeout: time.Second}), (&flaky{n: 9, err: hintErr(2 * time.Second)}).call, 2, HintTooLong},
		{"wait past Timeout", fake(Policy{Timeout: time.Second, BaseDelay: 2 * time.Second}), failOnce, 2, DeadlineReached},
		{"ctx cancelled during the wait", Policy{Sleeper: sleeper(func(ctx context.Context) error { cancel(); return ctx.Err() })}, failOnce, 2, Canceled},
		{"ctx cancelled during the default Sleeper's wait", Policy{BaseDelay: time.Hour, MaxDelay: time.Hour,
			OnRetry: func(context.Context, int, error, time.Duration) { cancel() }}, failOnce, 2, Canceled},
		{"the Sleeper failed", Policy{Sleeper: sleeper(func(context.Context) error { return errBoom })}, failOnce, 2, SleepFailed},
		{"the Sleeper panicked", Policy{Sleeper: sleeper(func(context.Context) error { panic(errPanic) })}, failOnce, 2, panics},
		{"OnRetry panicked", Policy{OnRetry: func(context.Context, int, error, time.Duration) { panic(errPanic) }}, failOnce, 2, panics},
		{"the Clock panicked after the wait", Policy{Timeout: time.Hour, Sleeper: sleeper(func(context.Context) error { slept = true; return nil }),
			Clock: ClockFunc(func() time.Time { panicIf(slept); return time.Now() })}, failOnce, 2, panics},
		{"fn panicked on the retry", fake(Policy{}), func(context.Context) error { calls++; panicIf(calls > 1); return errBoom }, 1, panics},
		{"the retry happened", fake(Policy{}), (&flaky{n: 1, err: errBoom}).call, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ctx context.Context
			ctx, cancel = context.WithCancel(context.Background())
			defer cancel()
			b, p, done := NewBudget(0, 2), tt.p, false // earns nothing: only a spent token changes it
			p.Budget, p.OnDone = b, func(context.Context, int, time.Duration, error) { done = true }
			var err error // set unless Do panics
			var recovered any
			func() { defer func() { recovered = recover() }(); err = Do(ctx, tt.fn, p) }()
			if got := b.Tokens(); got != tt.tokens {
				t.Errorf("Tokens() = %v; want %v", got, tt.tokens)
			}
			if wantPanic := tt.reason == panics; (recovered != nil) != wantPanic || wantPanic && (recovered != errPanic || done) {
				t.Errorf("recovered %v, OnDone called %v; want a panic %v, and OnDone only without one", recovered, done, wantPanic)
			}
			if tt.reason > 0 {
				wantExhausted(t, err, tt.reason, 1)
			}
		})
	}
}
