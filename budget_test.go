package retry

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// NewBudget's bad arguments make a Budget that fails Validate, and so Do,
// with a message that names the argument.
func TestNewBudgetRejectsBadArguments(t *testing.T) {
	tests := []struct {
		ratio float64
		burst int
		want  string // after "retry: invalid policy: NewBudget "; "" for valid arguments
	}{
		{-0.1, 10, "ratio is -0.1; want it in [0, 1]"},
		{1.5, 1, "ratio is 1.5; want it in [0, 1]"},
		{math.NaN(), 10, "ratio is NaN; want it in [0, 1]"},
		{math.Inf(1), 10, "ratio is +Inf; want it in [0, 1]"},
		{0.1, -1, "burst is -1; want 1 or more"},
		{0.1, 0, "burst is 0; want 1 or more"}, // a balance capped at 0 can never hold a token
		{1, 0, "burst is 0; want 1 or more"},
		{0, 0, "burst is 0; want 1 or more"},
		{0.1, math.MaxInt, "burst is 9223372036854775807; want at most 9223372036854"},
		{0, 1, ""}, {1, 1, ""}, {0.1, 10, ""}, {0.5, math.MaxInt64 / tokenScale, ""},
	}
	for _, tt := range tests {
		p := Policy{Budget: NewBudget(tt.ratio, tt.burst)}
		if err := p.Validate(); tt.want == "" {
			if err != nil {
				t.Errorf("NewBudget(%v, %d): Validate() = %v; want nil", tt.ratio, tt.burst, err)
			}
		} else if want := "retry: invalid policy: NewBudget " + tt.want; !errors.Is(err, ErrInvalidPolicy) || err.Error() != want {
			t.Errorf("NewBudget(%v, %d): Validate() = %v; want ErrInvalidPolicy, %q", tt.ratio, tt.burst, err, want)
		}
		fn := &flaky{}
		if err := Do(context.Background(), fn.call, p); tt.want != "" && (!errors.Is(err, ErrInvalidPolicy) || fn.calls != 0) {
			t.Errorf("NewBudget(%v, %d): Do() = %v after %d calls; want ErrInvalidPolicy after 0", tt.ratio, tt.burst, err, fn.calls)
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
	for _, tt := range []struct {
		ratio float64
		want  int64
	}{{0.000249 + 2e-9, 249}, {0.000250 - 2e-9, 249}, {0.000250 - 0.5e-9, 250}} {
		b := NewBudget(tt.ratio, 1)
		b.balance.Store(0)
		Do(context.Background(), func(context.Context) error { return nil }, Policy{Budget: b})
		if got := b.balance.Load(); got != tt.want {
			t.Errorf("NewBudget(%v, 1) earns %d millionths in a Do; want %d", tt.ratio, got, tt.want)
		}
	}
}

// Once the Budget is spent, Do gives up with BudgetExhausted and does not wait.
func TestBudgetExhausted(t *testing.T) {
	ft := newFakeTime()
	b := NewBudget(0, 2)
	fn := &flaky{n: 100, err: errBoom}
	err := Do(context.Background(), fn.call, ft.with(Policy{Budget: b, Jitter: NoJitter}))
	if wantExhausted(t, err, BudgetExhausted, 3); !errors.Is(err, ErrBudgetExhausted) || !errors.Is(err, errBoom) {
		t.Fatalf("Do() = %v; want it to reach ErrBudgetExhausted and boom", err)
	}
	if got := len(ft.Waits()); got != 2 {
		t.Errorf("Do() waits = %d; want 2: no wait after the budget runs out", got)
	}
	if want := "retry: gave up after 3 attempts in 300ms (retry budget exhausted): boom"; err.Error() != want {
		t.Errorf("Do().Error() = %q; want %q", err, want)
	}
	if got := b.Tokens(); got != 0 {
		t.Errorf("Tokens() = %v; want 0", got)
	}
}

// Calls that always fail retry at most ratio × calls + burst times, the rest meeting the Budget,
// which goroutines spend to below one token; refunded tokens all return.
func TestBudgetConcurrent(t *testing.T) {
	const goroutines, each, ratio, burst = 50, 200, 0.1, 10
	b, refunded := NewBudget(ratio, burst), NewBudget(0, 3)
	var retries, met atomic.Int64
	p := Policy{MaxAttempts: 3, Budget: b, Jitter: zeroJitter}
	p.OnRetry = func(context.Context, int, error, time.Duration) { retries.Add(1) }
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
	if got > limit || met.Load() == 0 || b.Tokens() >= 1 || b.Tokens() < 0 {
		t.Errorf("retries, calls that met the Budget, tokens left = %d, %d, %v; want at most %d, some, under one", got, met.Load(), b.Tokens(), limit)
	}
	if got := refunded.Tokens(); got != 3 {
		t.Errorf("Tokens() after every spend was refunded = %v; want 3, the burst", got)
	}
}

// A ratio that is not a whole number of millionths rounds down, keeping retries ≤ ratio × calls + burst.
func TestBudgetDepositRoundsDown(t *testing.T) {
	const calls, burst = 3_000_000, 1
	for _, ratio := range []float64{5e-7, 1.5e-6} {
		b := NewBudget(ratio, burst)
		retries := 0
		for range calls { // as Do does for a call that always fails, with MaxAttempts 3
			b.earn()
			for range 2 {
				if !b.spend() {
					break
				}
				retries++
			}
		}
		if limit := ratio*calls + burst; float64(retries) > limit {
			t.Errorf("NewBudget(%v, %d) over %d failing calls: retries = %d; want at most ratio × calls + burst = %v", ratio, burst, calls, retries, limit)
		}
	}
}

// A new Budget is full and a nil one has +Inf tokens; a refund gives back exactly the token
// that spend took, keeping a fraction; neither a refund nor a deposit, such as a successful
// Do's, lifts the balance above the burst, nor wraps it past math.MaxInt64 at the largest burst.
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
	for range 10 {
		Do(context.Background(), (&flaky{}).call, Policy{Budget: b})
	}
	if got := b.Tokens(); got != 2 {
		t.Errorf("Tokens() after 10 successes = %v; want 2, the burst", got)
	}
	top := NewBudget(1, math.MaxInt64/tokenScale) // within a token of math.MaxInt64
	for _, add := range []func(){top.refund, top.earn} {
		if add(); top.balance.Load() != top.capacity {
			t.Fatalf("balance after adding to the largest full Budget = %d; want %d, the capacity", top.balance.Load(), top.capacity)
		}
	}
	fn := &flaky{n: 1, err: errBoom}
	if err := Do(context.Background(), fn.call, newFakeTime().with(Policy{Budget: top})); err != nil || fn.calls != 2 {
		t.Errorf("Do() = %v after %d calls; want nil after 2: the full Budget pays for the retry", err, fn.calls)
	}
	if got, want := top.balance.Load(), top.capacity-tokenScale; got != want {
		t.Errorf("balance after one retry = %d; want %d, one token below the capacity", got, want)
	}
}

// With 5% of 100,000 calls failing once, NewBudget(0.1, 10) refused none of the 4,988 failing
// calls, but NewBudget(0.5, 1) refused 4.95%: its one token, once spent, takes two calls to earn
// back. So choose a ratio above the failure rate and a burst of several tokens (-v prints the figures).
func TestBudgetMetByCallsFailingOnce(t *testing.T) {
	const calls = 100_000
	tests := []struct {
		ratio    float64
		burst    int
		failRate float64
		lo, hi   float64 // bounds on the percentage of failing calls that met the Budget
	}{
		{0.1, 10, 0.05, 0, 0},
		{0.1, 10, 0.10, 2, 8},
		{0.5, 1, 0.05, 3.5, 6.5}, // near 5/105: met when the call before retried
		{0.5, 1, 0.10, 7.5, 10.5},
	}
	for _, tt := range tests {
		r := rand.New(rand.NewPCG(1, 10))
		p := Policy{Budget: NewBudget(tt.ratio, tt.burst), Rand: constRand(0.5),
			Sleeper: SleeperFunc(func(context.Context, time.Duration) error { return nil }),
			Clock:   ClockFunc(func() time.Time { return time.Time{} })}
		failing, met := 0, 0
		for range calls {
			fn := &flaky{err: errBoom}
			if r.Float64() < tt.failRate {
				fn.n, failing = 1, failing+1
			}
			if errors.Is(Do(context.Background(), fn.call, p), ErrBudgetExhausted) {
				met++
			}
		}
		pct := 100 * float64(met) / float64(failing)
		t.Logf("NewBudget(%v, %d), %v%% of %d calls failing once: %d of %d failing calls met the Budget (%.2f%%)",
			tt.ratio, tt.burst, 100*tt.failRate, calls, met, failing, pct)
		if pct < tt.lo || pct > tt.hi {
			t.Errorf("NewBudget(%v, %d), failure rate %v: %.2f%% of failing calls met the Budget; want it in [%v, %v]",
				tt.ratio, tt.burst, tt.failRate, pct, tt.lo, tt.hi)
		}
	}
}

// A retry takes a token only once attempts, hints and deadlines allow it, and gives it back if
// the retry does not happen (ctx ends the wait, the Sleeper fails, or a panic unwinds Do, without
// OnDone); a retry that happens keeps its token, even if fn then panics.
func TestBudgetTokenReturnedWhenTheRetryDoesNotHappen(t *testing.T) {
	errSleep := errors.New("sleeper broke")
	panicky := func(context.Context, time.Duration) error { panic(errSleep) }
	noSleep := SleeperFunc(func(context.Context, time.Duration) error { return nil })
	fake := func(p Policy) func(context.CancelFunc) Policy {
		return func(context.CancelFunc) Policy { return newFakeTime().with(p) }
	}
	fails := func(err error) func(context.Context) error { return func(context.Context) error { return err } }
	tests := []struct {
		name   string
		p      func(cancel context.CancelFunc) Policy
		fn     func(context.Context) error
		tokens float64 // of 2
		panics bool
		reason Reason // 0: not checked
	}{
		{"attempts ran out", fake(Policy{MaxAttempts: 1}), failOnce, 2, false, MaxAttemptsReached},
		{"hint above MaxDelay", fake(Policy{MaxDelay: time.Second}), fails(hintErr(time.Minute)), 2, false, HintTooLong},
		{"hint past Timeout", fake(Policy{Timeout: time.Second}), fails(hintErr(2 * time.Second)), 2, false, HintTooLong},
		{"wait past Timeout", fake(Policy{Timeout: time.Second, BaseDelay: 2 * time.Second}), failOnce, 2, false, DeadlineReached},
		{"ctx cancelled during the wait", func(cancel context.CancelFunc) Policy {
			return Policy{Sleeper: SleeperFunc(func(ctx context.Context, d time.Duration) error { cancel(); return ctx.Err() })}
		}, failOnce, 2, false, Canceled},
		{"ctx cancelled during the default Sleeper's wait", func(cancel context.CancelFunc) Policy {
			return Policy{BaseDelay: time.Hour, MaxDelay: time.Hour, OnRetry: func(context.Context, int, error, time.Duration) { cancel() }}
		}, failOnce, 2, false, Canceled},
		{"the Sleeper failed", func(context.CancelFunc) Policy {
			return Policy{Sleeper: SleeperFunc(func(context.Context, time.Duration) error { return errSleep })}
		}, failOnce, 2, false, SleepFailed},
		{"the Sleeper panicked", func(context.CancelFunc) Policy { return Policy{Sleeper: SleeperFunc(panicky)} }, failOnce, 2, true, 0},
		{"OnRetry panicked", func(context.CancelFunc) Policy {
			return Policy{OnRetry: func(context.Context, int, error, time.Duration) { panic(errSleep) }}
		}, failOnce, 2, true, 0},
		{"the Clock panicked after the wait", func(context.CancelFunc) Policy {
			slept := false
			return Policy{Timeout: time.Hour, Sleeper: SleeperFunc(func(context.Context, time.Duration) error { slept = true; return nil }),
				Clock: ClockFunc(func() time.Time {
					if slept {
						panic(errSleep)
					}
					return time.Now()
				})}
		}, failOnce, 2, true, 0},
		{"fn panicked on the retry", func(context.CancelFunc) Policy { return Policy{Sleeper: noSleep} }, func() func(context.Context) error {
			calls := 0
			return func(context.Context) error {
				if calls++; calls > 1 {
					panic(errSleep)
				}
				return errBoom
			}
		}(), 1, true, 0},
		{"the retry happened", fake(Policy{}), (&flaky{n: 1, err: errBoom}).call, 1, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBudget(0, 2) // earns nothing: only a spent token changes the balance
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p := tt.p(cancel)
			p.Budget = b
			done := false
			p.OnDone = func(context.Context, int, time.Duration, error) { done = true }
			var recovered any
			var err error // set unless Do panics
			func() {
				defer func() { recovered = recover() }()
				err = Do(ctx, tt.fn, p)
			}()
			if got := b.Tokens(); got != tt.tokens {
				t.Errorf("Tokens() = %v; want %v", got, tt.tokens)
			}
			if tt.panics && (recovered != errSleep || done) {
				t.Errorf("recovered %v, OnDone called %v; want %v, false", recovered, done, errSleep)
			}
			if tt.reason != 0 {
				wantExhausted(t, err, tt.reason, 1)
			}
		})
	}
}
