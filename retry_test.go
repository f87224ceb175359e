package retry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeTime is a Clock and a Sleeper: Sleep records the wait and moves Now by it at once.
type fakeTime struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

// newFakeTime starts at the real time, so that a ctx deadline made from it
// lies in the real future and its timer does not fire during the test.
func newFakeTime() *fakeTime { return &fakeTime{now: time.Now()} }

func (f *fakeTime) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeTime) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	f.waits = append(f.waits, d)
	return nil
}

func (f *fakeTime) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

func (f *fakeTime) Waits() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.waits...)
}

// deadlineCtx returns a ctx that ends d after f's now (none if d is 0), cancelled with the test.
func (f *fakeTime) deadlineCtx(t testing.TB, d time.Duration) context.Context {
	if d == 0 {
		return context.Background()
	}
	ctx, cancel := context.WithDeadline(context.Background(), f.Now().Add(d))
	t.Cleanup(cancel)
	return ctx
}

// with returns p running on f's time.
func (f *fakeTime) with(p Policy) Policy {
	p.Clock, p.Sleeper = f, f
	return p
}

// flaky is an fn that fails with err for its first n calls, then succeeds.
type flaky struct {
	n     int
	err   error
	calls int
}

func (f *flaky) call(context.Context) error {
	f.calls++
	if f.calls <= f.n {
		return f.err
	}
	return nil
}

var errBoom = errors.New("boom")

func failOnce(context.Context) error { return errBoom }

// hintErr is an error that asks for a wait through RetryAfter.
type hintErr time.Duration

func (h hintErr) Error() string             { return "slow down" }
func (h hintErr) RetryAfter() time.Duration { return time.Duration(h) }

// wrapHint is an error with a RetryAfter hint that wraps another error.
type wrapHint struct {
	d   time.Duration
	err error
}

func (w wrapHint) Error() string             { return "wrapped: " + w.err.Error() }
func (w wrapHint) RetryAfter() time.Duration { return w.d }
func (w wrapHint) Unwrap() error             { return w.err }

type customErr struct{ s string }

func (e *customErr) Error() string { return e.s }

// unwrapsToNil wraps nothing: its Unwrap returns nil.
type unwrapsToNil struct{}

func (unwrapsToNil) Error() string { return "wraps nothing" }
func (unwrapsToNil) Unwrap() error { return nil }

// constRand returns a Rand that always answers u.
func constRand(u float64) func() float64 { return func() float64 { return u } }

// seqRand returns a seeded Rand, for one goroutine at a time.
func seqRand(seed uint64) func() float64 { return rand.New(rand.NewPCG(seed, 0)).Float64 }

func zeroJitter(int, time.Duration, time.Duration, time.Duration, float64) time.Duration { return 0 }

// doneCall is one call of OnDone.
type doneCall struct {
	ctx      context.Context
	attempts int
	elapsed  time.Duration
	err      error
}

// wantExhausted checks that err is a *RetryExhausted with reason after
// attempts calls of fn, and returns it.
func wantExhausted(t testing.TB, err error, reason Reason, attempts int) *RetryExhausted {
	t.Helper()
	re, ok := err.(*RetryExhausted) // Do returns it unwrapped
	if !ok {
		t.Fatalf("Do() = %v; want a *RetryExhausted: %v after %d attempts", err, reason, attempts)
	}
	if re.Reason != reason || re.Attempts != attempts {
		t.Errorf("Do() = %v: %v after %d attempts; want %v after %d", err, re.Reason, re.Attempts, reason, attempts)
	}
	return re
}

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
		{"exhausted", 5, 10, 5, nil},
		{"zero means five", 0, 10, 5, nil},
		{"one means no retries", 1, 10, 1, nil},
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
			switch {
			case tt.failures < tt.calls && err != nil:
				t.Errorf("Do() = %v; want nil", err)
			case tt.failures >= tt.calls:
				if re := wantExhausted(t, err, MaxAttemptsReached, tt.calls); re.Elapsed != elapsed || re.Last != errBoom || re.Cause != nil {
					t.Errorf("Do() = %#v; want it in %v, Last boom, no Cause", re, elapsed)
				}
			}
		})
	}
}

// DoValue returns the value of the call that succeeded, even as ctx ends, or the zero
// value with Do's error; OnDone sees the call once.
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if v, err = DoValue(ctx, func(context.Context) (string, error) { cancel(); return "late", nil }, Policy{}); v != "late" || err != nil {
		t.Errorf("DoValue() = %q, %v; want \"late\", nil: a call that succeeds as ctx ends is a success", v, err)
	}
}

// unwrapHook calls hook as errors.Unwrap reaches through it; hintHook, as
// Do asks it for a hint; valueHook is a ctx whose Value method calls hook,
// as context.WithTimeout calls it when it makes fn's ctx.
type unwrapHook struct {
	error
	hook func()
}

func (e *unwrapHook) Unwrap() error { e.hook(); return e.error }

type hintHook unwrapHook

func (e *hintHook) RetryAfter() time.Duration { e.hook(); return 0 }

type valueHook struct {
	context.Context
	hook func()
}

func (c *valueHook) Value(key any) any { c.hook(); return c.Context.Value(key) }

// ends stands, in TestRule, for the Reason of the end that a row makes.
const ends Reason = -1

// Do's rule, at each point where code of the user's runs: fn's verdict first (a Permanent
// error as it is), then ctx and the deadline, then the Policy's limits. Each row ends ctx
// (Canceled), or moves the Clock past Policy.Timeout (DeadlineReached), at one point. A call
// that stops there reaches ctx's error and cause or context.DeadlineExceeded, and says so; it
// asks IsRetryable, and announces a retry with OnRetry, only past those points; OnDone sees its
// error.
func TestRule(t *testing.T) {
	errShutdown := errors.New("shutting down")
	refuse := func(error) bool { return false }
	const hour = time.Hour
	type row struct {
		name     string
		at       string                 // where the end comes
		p        Policy                 // Timeout is an hour unless set; -1 for none
		err      func(end func()) error // fn's error; nil for boom
		want     Reason                 // ends, or 0 for fn's error as it is
		attempts int
	}
	tests := []row{
		{"before Do", "before", Policy{}, nil, ends, 0},
		{"in the Clock, at Do's start", "start", Policy{}, nil, ends, 0},
		{"in ctx's Value, as fn's ctx is made", "Value", Policy{}, nil, ends, 0},
		{"during fn", "fn", Policy{}, nil, ends, 1},
		{"during fn, Permanent", "fn", Policy{}, func(func()) error { return Permanent(errBoom) }, 0, 1},
		{"in Unwrap of fn's error", "fn's error", Policy{}, func(end func()) error { return &unwrapHook{errBoom, end} }, ends, 1},
		{"in Unwrap, on the way to a Permanent mark", "fn's error", Policy{},
			func(end func()) error { return &unwrapHook{Permanent(errBoom), end} }, 0, 1},
		{"in RetryAfter of fn's error", "fn's error", Policy{}, func(end func()) error { return &hintHook{errBoom, end} }, ends, 1},
		{"in IsRetryable, which refuses", "IsRetryable", Policy{IsRetryable: refuse}, nil, 0, 1},
		{"in IsRetryable, on the last attempt", "IsRetryable", Policy{MaxAttempts: 1}, nil, MaxAttemptsReached, 1},
		{"in OnRetry", "OnRetry", Policy{}, nil, ends, 1},
		{"in the Sleeper", "Sleeper", Policy{}, nil, ends, 1},
		{"in a Sleeper that fails", "Sleeper fails", Policy{}, nil, ends, 1},
	}
	// After IsRetryable, before the wait, whatever limit the wait would break.
	for _, at := range []string{"IsRetryable", "Jitter", "Rand", "Clock"} {
		for _, l := range []struct {
			name string
			p    Policy
			hint time.Duration
		}{
			{"no deadline", Policy{Timeout: -1}, 0},
			{"a wait that fits", Policy{}, 0},
			{"a hint above MaxDelay", Policy{MaxDelay: time.Second}, time.Minute},
			{"a hint past the Timeout", Policy{MaxDelay: 2 * hour}, 90 * time.Minute},
			{"a wait past the Timeout", Policy{Timeout: time.Second, BaseDelay: 2 * time.Second}, 0},
			{"no Budget left", Policy{Budget: NewBudget(0, 1)}, 0}, // made empty below
		} {
			hint := func(func()) error { return After(l.hint, errBoom) }
			tests = append(tests, row{"in " + at + ", " + l.name, at, l.p, hint, ends, 1})
		}
	}
	for _, end := range []Reason{Canceled, DeadlineReached} {
		for _, tt := range tests {
			if tt.p.Timeout < 0 && (end == DeadlineReached || tt.at == "Clock") || tt.at == "start" && end == DeadlineReached {
				continue // no deadline to pass, no Clock read before the wait; the start is where the Timeout counts from
			}
			t.Run(fmt.Sprint(end, " ", tt.name), func(t *testing.T) {
				ft := newFakeTime()
				ctx, cancel := context.WithCancelCause(context.Background())
				defer cancel(nil)
				asked, jittered, retries := 0, 0, 0
				hook := func(at string) {
					switch {
					case at != tt.at:
					case end == Canceled:
						cancel(errShutdown)
					default:
						ft.advance(2 * hour) // past every Timeout
					}
				}
				p := ft.with(tt.p)
				switch {
				case p.Timeout == 0:
					p.Timeout = hour
				case p.Timeout < 0:
					p.Timeout = 0
				}
				if p.Budget != nil {
					p.Budget = NewBudget(0, 1)
					p.Budget.spend() // empty
				}
				p.IsRetryable = func(err error) bool {
					asked++
					hook("IsRetryable")
					return tt.p.IsRetryable == nil || tt.p.IsRetryable(err)
				}
				p.Jitter = func(n int, base, maxDelay, prev time.Duration, u float64) time.Duration {
					jittered++
					hook("Jitter")
					return NoJitter(n, base, maxDelay, prev, u)
				}
				p.Rand = func() float64 { hook("Rand"); return 0.5 }
				reads := 0
				p.Clock = ClockFunc(func() time.Time {
					if reads++; reads == 1 {
						hook("start")
					}
					if asked > 0 {
						hook("Clock")
					}
					return ft.Now()
				})
				p.OnRetry = func(context.Context, int, error, time.Duration) { retries++; hook("OnRetry") }
				p.Sleeper = SleeperFunc(func(ctx context.Context, d time.Duration) error {
					hook("Sleeper")
					if hook("Sleeper fails"); tt.at == "Sleeper fails" {
						return errors.New("sleeper broke")
					}
					return ft.Sleep(ctx, d)
				})
				var done []doneCall
				p.OnDone = func(ctx context.Context, attempts int, elapsed time.Duration, err error) {
					done = append(done, doneCall{ctx, attempts, elapsed, err})
				}
				var fnErr error
				switch tt.at {
				case "before":
					if hook("before"); end == DeadlineReached {
						var stop func()
						ctx, stop = context.WithDeadline(ctx, time.Now().Add(-time.Second))
						defer stop()
					}
				case "Value":
					ctx = &valueHook{ctx, func() { hook("Value") }}
				}
				calls := 0
				v, err := DoValue(ctx, func(context.Context) (int, error) {
					calls++
					hook("fn")
					if fnErr = errBoom; tt.err != nil {
						fnErr = tt.err(func() { hook("fn's error") })
					}
					return 1, fnErr
				}, p)

				want := tt.want
				if want == ends {
					want = end
				}
				if want == 0 && err != fnErr || calls != tt.attempts || v != 0 {
					t.Errorf("DoValue() = %d, %v after %d calls; want 0, fn's error as it is, or %v, after %d", v, err, calls, want, tt.attempts)
				}
				if want != 0 {
					re := wantExhausted(t, err, want, tt.attempts)
					msg := map[Reason]string{Canceled: "(canceled: context canceled: shutting down)", DeadlineReached: "(deadline reached: Policy.Timeout passed)",
						MaxAttemptsReached: "(max attempts reached)"}[want]
					if tt.at == "before" && end == DeadlineReached {
						msg = "(deadline reached: ctx's deadline passed)"
					}
					if re.Last != fnErr || !strings.Contains(err.Error(), msg) {
						t.Errorf("Do() = %v, Last %v; want it to say %q, Last fn's error", err, re.Last, msg)
					}
					if want == Canceled && (!errors.Is(err, context.Canceled) || !errors.Is(err, errShutdown) || re.Cause.Error() != "context canceled: shutting down") ||
						want == DeadlineReached && !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("Do() = %v; want it to reach ctx's error and cause, or context.DeadlineExceeded", err)
					}
					if tt.attempts == 0 && (re.Elapsed != 0 || !strings.HasPrefix(err.Error(), "retry: gave up before the first attempt (")) {
						t.Errorf("Do() = %q in %v; want it before the first attempt, in 0s", err, re.Elapsed)
					}
				}
				wantAsked, wantRetries := 0, 0
				switch tt.at {
				case "OnRetry", "Sleeper", "Sleeper fails":
					wantAsked, wantRetries = 1, 1
				case "IsRetryable", "Jitter", "Rand", "Clock":
					wantAsked = 1
				}
				if asked != wantAsked || retries != wantRetries || asked == 0 && jittered != 0 {
					t.Errorf("IsRetryable, Jitter, OnRetry calls = %d, %d, %d; want %d, none before IsRetryable, %d",
						asked, jittered, retries, wantAsked, wantRetries)
				}
				if len(done) != 1 || done[0].ctx != ctx || done[0].attempts != calls || done[0].err != err {
					t.Errorf("OnDone calls %+v; want one with Do's ctx, attempts and error", done)
				}
			})
		}
	}
}

// A wait, or a hint, starts only if it ends before the deadline, the nearer of Timeout's and
// ctx's, and a hint only if it is within MaxDelay: else Do gives up at once, DeadlineReached
// (Cause context.DeadlineExceeded) or HintTooLong. With no deadline, only MaxDelay limits.
func TestWaitFits(t *testing.T) {
	const ms = time.Millisecond
	longest, _ := ParseRetryAfter("99999999999", time.Now()) // the longest Duration
	tests := []struct {
		name       string
		p          Policy // MaxAttempts 2; MaxDelay 2h unless a delay is set
		ctxTimeout time.Duration
		callCost   time.Duration // fake time the first call takes
		wait       time.Duration // the Jitter's, unless p has one
		err        error         // what fn returns
		reason     Reason
		attempts   int
		waits      []time.Duration
		detail     string // in the message, if not ""
	}{
		{"1ns before Timeout", Policy{Timeout: time.Second}, 0, time.Second - 1, 0, errBoom, MaxAttemptsReached, 2, []time.Duration{0}, ""},
		{"1ns before Timeout, 1ns hint", Policy{Timeout: time.Second}, 0, time.Second - 1, 0, hintErr(1), HintTooLong, 1, nil, ""},
		{"a wait of all the time left before Timeout", Policy{Timeout: time.Second}, 0, 0, time.Second, errBoom, DeadlineReached, 1, nil, ""},
		{"at Timeout", Policy{Timeout: time.Second}, 0, time.Second, 0, errBoom, DeadlineReached, 1, nil, ""},
		{"past Timeout", Policy{Timeout: time.Second}, 0, time.Hour, 0, errBoom, DeadlineReached, 1, nil, ""},
		{"1ns before ctx deadline", Policy{}, time.Hour, time.Hour - 1, 0, errBoom, MaxAttemptsReached, 2, []time.Duration{0}, ""},
		{"1ns before ctx deadline, 1ns hint", Policy{}, time.Hour, time.Hour - 1, 0, hintErr(1), HintTooLong, 1, nil, ""},
		{"a wait of all the time left before ctx deadline", Policy{}, time.Hour, 0, time.Hour, errBoom, DeadlineReached, 1, nil, ""},
		{"at ctx deadline", Policy{}, time.Hour, time.Hour, 0, errBoom, DeadlineReached, 1, nil, ""},
		{"no deadline, a hint of the longest Duration", Policy{MaxDelay: math.MaxInt64}, 0, 0, 0, After(longest, errBoom), MaxAttemptsReached, 2, []time.Duration{math.MaxInt64}, ""},
		{"no deadline, a wait of the longest Duration", Policy{BaseDelay: math.MaxInt64, Jitter: NoJitter}, 0, 0, 0, errBoom, MaxAttemptsReached, 2, []time.Duration{math.MaxInt64}, ""},
		{"MinAttemptTime, a wait that leaves less", Policy{Timeout: time.Second, MinAttemptTime: 100 * ms}, 0, 0, 900543300, errBoom, DeadlineReached, 1, nil,
			"(deadline reached: next wait 901ms would leave 99.5ms before Policy.Timeout, less than MinAttemptTime 100ms)"},
		{"MinAttemptTime, no wait, less left", Policy{Timeout: time.Second, MinAttemptTime: 100 * ms}, 0, 950 * ms, 0, errBoom, DeadlineReached, 1, nil,
			"(deadline reached: next wait 0s would leave 50ms before Policy.Timeout, less than MinAttemptTime 100ms)"},
		{"MinAttemptTime, a wait that leaves it exactly", Policy{Timeout: time.Second, MinAttemptTime: 100 * ms}, 0, 0, 900 * ms, errBoom, MaxAttemptsReached, 2, []time.Duration{900 * ms}, ""},
		{"MinAttemptTime, a wait of all the time left", Policy{Timeout: time.Second, MinAttemptTime: 100 * ms}, 0, 0, time.Second, errBoom, DeadlineReached, 1, nil,
			"(deadline reached: next wait 1s, with 1s left before Policy.Timeout)"},
		{"MinAttemptTime, a hint that leaves less", Policy{Timeout: time.Second, MinAttemptTime: 100 * ms}, 0, 0, 0, hintErr(950 * ms), HintTooLong, 1, nil,
			"(retry-after hint too long: 950ms would leave 50ms before Policy.Timeout, less than MinAttemptTime 100ms)"},
		{"MinAttemptTime, a hint that leaves it exactly", Policy{Timeout: time.Second, MinAttemptTime: 100 * ms}, 0, 0, 0, hintErr(900 * ms), MaxAttemptsReached, 2, []time.Duration{900 * ms}, ""},
		{"MinAttemptTime, ctx's deadline nearer than Timeout", Policy{Timeout: time.Hour, MinAttemptTime: 100 * ms}, time.Second, 0, 901 * ms, errBoom, DeadlineReached, 1, nil,
			"before ctx's deadline, less than MinAttemptTime 100ms"},
		{"MinAttemptTime, no deadline", Policy{MinAttemptTime: time.Hour}, 0, 0, 2 * time.Hour, errBoom, MaxAttemptsReached, 2, []time.Duration{2 * time.Hour}, ""},
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
			p := ft.with(tt.p)
			if p.MaxAttempts = 2; p.MaxDelay == 0 && p.BaseDelay == 0 {
				p.MaxDelay = 2 * time.Hour
			}
			if p.Jitter == nil {
				p.Jitter = func(int, time.Duration, time.Duration, time.Duration, float64) time.Duration { return tt.wait }
			}
			err := Do(ft.deadlineCtx(t, tt.ctxTimeout), fn, p)
			re := wantExhausted(t, err, tt.reason, tt.attempts)
			if !slices.Equal(ft.Waits(), tt.waits) {
				t.Errorf("Do() waits = %v; want %v", ft.Waits(), tt.waits)
			}
			if !strings.Contains(err.Error(), tt.detail) {
				t.Errorf("Do() = %q; want it to say %q", err, tt.detail)
			}
			if (re.Reason == DeadlineReached) != (re.Cause == context.DeadlineExceeded) {
				t.Errorf("Do() = %v with Cause %v; want Cause context.DeadlineExceeded for DeadlineReached alone", err, re.Cause)
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
			if re := wantExhausted(t, err, tt.reason, tt.attempts); re.Elapsed != tt.elapsed || re.Last != errBoom {
				t.Errorf("Do() = %+v; want it in %v, Last boom", re, tt.elapsed)
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

// A Clock read about 300 years past ctx's deadline, where time.Time.Sub saturates, stops
// Do at the next check point: before the first call, or after it.
func TestClockFarPastTheDeadline(t *testing.T) {
	for attempts := range 2 {
		ft := newFakeTime()
		ctx := ft.deadlineCtx(t, time.Hour)
		jump := func() { ft.advance(150 * 365 * 24 * time.Hour); ft.advance(150 * 365 * 24 * time.Hour) } // more than a Duration holds
		if attempts == 0 {
			jump()
		}
		wantExhausted(t, Do(ctx, func(context.Context) error { jump(); return errBoom }, ft.with(Policy{})), DeadlineReached, attempts)
	}
}

// Elapsed is at least a deadline that Do saw pass, though the Clock then
// went back: it reads 0 until fn is called, then 2s once (the check after
// the call), then 500ms.
func TestElapsedCoversThePassedDeadline(t *testing.T) {
	start, called, reads := time.Now(), false, []time.Duration{2 * time.Second, time.Second / 2}
	clock := ClockFunc(func() time.Time {
		if !called {
			return start
		}
		d := reads[0]
		reads = reads[min(1, len(reads)-1):]
		return start.Add(d)
	})
	failOnce := func(context.Context) error { called = true; return errBoom }
	err := Do(context.Background(), failOnce, Policy{Timeout: time.Second, Clock: clock})
	if re := wantExhausted(t, err, DeadlineReached, 1); re.Elapsed != 2*time.Second {
		t.Errorf("Do() Elapsed = %v; want 2s", re.Elapsed)
	}
}

// fn's ctx ends, in real time, when the Clock's time left before the Timeout runs out, or
// AttemptTimeout in; ctx's deadline on a Clock that runs ahead does not shorten it. It is
// cancelled when fn returns, before Do asks IsRetryable.
func TestFnCtxEndsAtTimeoutAndAttemptTimeout(t *testing.T) {
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
		// ctx's deadline is 2s away on the Clock, and passed on it after the first call
		{"Timeout, ctx deadline nearer on Clock only", Policy{Timeout: 5 * time.Second}, 10 * time.Second, 8 * time.Second, 3 * time.Second,
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
			var fnCtx context.Context
			p := ft.with(tt.p)
			p.IsRetryable = func(error) bool {
				if fnCtx.Err() == nil {
					t.Errorf("fn's ctx.Err() after fn returned = nil; want it cancelled")
				}
				return true
			}
			Do(ctx, func(ctx context.Context) error {
				if dl, ok := ctx.Deadline(); ok {
					lasts = append(lasts, time.Until(dl))
				}
				fnCtx = ctx
				ft.advance(tt.callCost)
				return errBoom
			}, p)
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

// TestRealTimer runs Do on the real clock, briefly, where fake time proves nothing: the
// default Sleeper waits as chosen; ctx's deadline reaches the attempt in flight or the wait
// (DeadlineReached, reaching the deadline's cause) though a Permanent error still wins; a wait
// that ends just before ctx's deadline races its timer, and whichever wins, Do ends
// DeadlineReached. CI runs it under both timer implementations (GODEBUG asynctimerchan=0, 1).
func TestRealTimer(t *testing.T) {
	t.Run("waits as chosen", func(t *testing.T) {
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
	})
	errSlow := errors.New("too slow")
	hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	sleeper := func(err error) Policy {
		return Policy{BaseDelay: time.Millisecond, Sleeper: SleeperFunc(func(ctx context.Context, _ time.Duration) error {
			<-ctx.Done()
			return cmp.Or(err, ctx.Err())
		})}
	}
	for _, tt := range []struct {
		name    string
		p       Policy
		fn      func(context.Context) error
		want    Reason // 0: fn's error as it is
		retries int
	}{
		{"ctx's deadline ends the attempt in flight", Policy{Timeout: time.Hour}, hang, DeadlineReached, 0},
		{"ctx's deadline ends the wait", sleeper(nil), failOnce, DeadlineReached, 1},
		{"the Sleeper fails as ctx's deadline passes", sleeper(errors.New("sleeper broke")), failOnce, DeadlineReached, 1},
		{"a Permanent error as ctx's deadline passes", Policy{}, func(ctx context.Context) error { hang(ctx); return Permanent(errBoom) }, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithDeadlineCause(context.Background(), time.Now().Add(20*time.Millisecond), errSlow)
			defer cancel()
			retries := 0
			tt.p.OnRetry = func(context.Context, int, error, time.Duration) { retries++ }
			var fnErr error
			err := Do(ctx, func(ctx context.Context) error { fnErr = tt.fn(ctx); return fnErr }, tt.p)
			if tt.want == 0 {
				if err != fnErr {
					t.Errorf("Do() = %v; want fn's error as it is", err)
				}
				return
			}
			re := wantExhausted(t, err, tt.want, 1)
			if retries != tt.retries || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, errSlow) ||
				re.Cause.Error() != "context deadline exceeded: too slow" || !strings.Contains(err.Error(), "(deadline reached: ctx's deadline passed: too slow): ") {
				t.Errorf("Do() = %v with Cause %q after %d OnRetry calls; want it to reach ctx's error and cause, and say so, after %d",
					err, re.Cause, retries, tt.retries)
			}
		})
	}
	t.Run("a wait that ends just before ctx's deadline", func(t *testing.T) {
		for range 40 {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			deadline, _ := ctx.Deadline()
			p := Policy{MaxAttempts: math.MaxInt, Jitter: func(int, time.Duration, time.Duration, time.Duration, float64) time.Duration {
				return max(time.Until(deadline)-200*time.Microsecond, time.Millisecond) // after the first wait, no second fits
			}}
			err := Do(ctx, failOnce, p)
			cancel()
			if re, ok := err.(*RetryExhausted); !ok || re.Reason != DeadlineReached || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Do() = %v; want DeadlineReached, reaching context.DeadlineExceeded", err)
			}
		}
	})
}

// A seeded Rand gives the same schedule, whose waits the default Jitter keeps in
// [BaseDelay, MaxDelay].
func TestScheduleIsDeterministic(t *testing.T) {
	schedule := func(seed uint64) []time.Duration {
		ft := newFakeTime()
		Do(context.Background(), (&flaky{n: 100, err: errBoom}).call, ft.with(Policy{MaxAttempts: 20, MaxDelay: 5 * time.Second, Rand: seqRand(seed)}))
		return ft.Waits()
	}
	if a, b, c := schedule(7), schedule(7), schedule(8); !slices.Equal(a, b) || slices.Equal(a, c) || slices.Min(a) < DefaultBaseDelay || slices.Max(a) > 5*time.Second {
		t.Errorf("waits with seeds 7, 7 and 8 = %v, %v, %v; want the first two the same, the third not, all in [100ms, 5s]", a, b, c)
	}
}

// Whatever Rand and the Jitter return, the Jitter sees u in [0, 1], and Do clamps its
// wait into [0, MaxDelay] for the Sleeper, OnRetry and the next call's prev alike.
func TestOutOfRange(t *testing.T) {
	for _, tt := range []struct {
		u, wantU float64 // Rand's, and what the Jitter sees
		w, want  time.Duration
	}{
		{7, 1, -time.Hour, 0}, {-3, 0, math.MinInt64, 0}, {math.NaN(), 0, time.Hour, time.Second},
		{math.Inf(1), 1, math.MaxInt64, time.Second}, {math.Inf(-1), 0, 0, 0}, {1, 1, 0, 0}, {0.5, 0.5, 0, 0},
	} {
		ft := newFakeTime()
		var us []float64
		var prevs, chosen []time.Duration
		p := ft.with(Policy{MaxAttempts: 3, MaxDelay: time.Second, Rand: constRand(tt.u)})
		p.Jitter = func(_ int, _, _, prev time.Duration, u float64) time.Duration {
			us, prevs = append(us, u), append(prevs, prev)
			return tt.w
		}
		p.OnRetry = func(_ context.Context, _ int, _ error, wait time.Duration) { chosen = append(chosen, wait) }
		Do(context.Background(), (&flaky{n: 5, err: errBoom}).call, p)
		want := []time.Duration{tt.want, tt.want}
		if got := ft.Waits(); !slices.Equal(us, []float64{tt.wantU, tt.wantU}) || !slices.Equal(got, want) || !slices.Equal(chosen, want) ||
			!slices.Equal(prevs, []time.Duration{DefaultBaseDelay, tt.want}) {
			t.Errorf("Rand %v, Jitter %v: u, waits, OnRetry waits, prevs = %v, %v, %v, %v; want %v, %v, %v, [%v %v]",
				tt.u, tt.w, us, got, chosen, prevs, tt.wantU, want, want, DefaultBaseDelay, tt.want)
		}
		for _, j := range []Jitter{FullJitter, DecorrelatedJitter} {
			checkDo(t, Policy{MaxAttempts: 10, BaseDelay: 100 * time.Millisecond, MaxDelay: 10 * time.Second, Jitter: j, Rand: constRand(tt.u)}, doInput{failures: 100})
		}
	}
}

// OnRetry sees Do's ctx, the number of the attempt that failed, its error and the wait. The
// wait counts from when it was chosen: the Sleeper gets what OnRetry left of it, at least 0 and
// no more if the Clock goes back, so no wait ends after a deadline.
func TestOnRetry(t *testing.T) {
	type key struct{}
	ms := time.Millisecond
	tests := []struct {
		name       string
		p          Policy
		ctxTimeout time.Duration
		onRetry    time.Duration // fake time OnRetry takes
		chosen     time.Duration // the waits OnRetry is given
		sleeps     []time.Duration
		reason     Reason
	}{
		{"OnRetry takes no time", Policy{MaxAttempts: 4}, 0, 0, 100 * ms, []time.Duration{100 * ms, 100 * ms, 100 * ms}, MaxAttemptsReached},
		{"OnRetry takes 30ms", Policy{MaxAttempts: 2}, 0, 30 * ms, 100 * ms, []time.Duration{70 * ms}, MaxAttemptsReached},
		{"OnRetry takes the whole wait", Policy{MaxAttempts: 2}, 0, 100 * ms, 100 * ms, []time.Duration{0}, MaxAttemptsReached},
		{"OnRetry outlasts the wait", Policy{MaxAttempts: 2}, 0, 2 * time.Second, 100 * ms, []time.Duration{0}, MaxAttemptsReached},
		{"the Clock goes back an hour in OnRetry", Policy{MaxAttempts: 2}, 0, -time.Hour, 100 * ms, []time.Duration{100 * ms}, MaxAttemptsReached},
		// the 1s wait chosen at 0s ends at 1s; the next, 1s, would end past the deadline
		{"Timeout", Policy{Timeout: 1500 * ms}, 0, 800 * ms, time.Second, []time.Duration{200 * ms}, DeadlineReached},
		{"ctx deadline", Policy{}, 1500 * ms, 800 * ms, time.Second, []time.Duration{200 * ms}, DeadlineReached},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			calls, seen := 0, 0
			fn := func(context.Context) error { calls++; return &customErr{fmt.Sprint(calls)} }
			p := ft.with(tt.p)
			p.BaseDelay, p.MaxDelay, p.Jitter = tt.chosen, tt.chosen, NoJitter
			p.OnRetry = func(ctx context.Context, attempt int, err error, wait time.Duration) {
				if seen++; ctx.Value(key{}) != tt.name || attempt != seen || err.Error() != fmt.Sprint(seen) || wait != tt.chosen {
					t.Errorf("OnRetry(%v, %d, %v, %v); want Do's ctx, %d, its error, %v", ctx.Value(key{}), attempt, err, wait, seen, tt.chosen)
				}
				ft.advance(tt.onRetry)
			}
			err := Do(context.WithValue(ft.deadlineCtx(t, tt.ctxTimeout), key{}, tt.name), fn, p)
			if seen != len(tt.sleeps) || !slices.Equal(ft.Waits(), tt.sleeps) {
				t.Errorf("OnRetry calls, Sleeper waits = %d, %v; want %d, %v", seen, ft.Waits(), len(tt.sleeps), tt.sleeps)
			}
			wantExhausted(t, err, tt.reason, seen+1)
		})
	}
}

// OnDone runs exactly once on every way out of a valid call, with Do's ctx, the calls of fn,
// the time elapsed on the Clock and the error Do returns: fn's, as fn returned it, for an error
// refused or marked Permanent wherever the mark lies in its chain; else a *RetryExhausted
// whose Cause is what stopped Do from outside (a Sleeper's error gives SleepFailed), if anything.
func TestOnDone(t *testing.T) {
	errSleep := errors.New("sleeper broke")
	notFound := &customErr{"not found"}
	permNotFound := Permanent(notFound)
	wrapped, joined := fmt.Errorf("get: %w", permNotFound), errors.Join(errBoom, permNotFound)
	deep := errors.Join(unwrapsToNil{}, fmt.Errorf("a: %w", fmt.Errorf("b: %w", Permanent(errBoom))))
	ms := time.Millisecond
	tests := []struct {
		name       string
		fn         *flaky
		p          Policy
		ctxTimeout time.Duration
		attempts   int
		elapsed    time.Duration
		reason     Reason // 0: the error is not a *RetryExhausted
		want       error  // the error Do returns, or for a reason its Cause
	}{
		{"success at once", &flaky{}, Policy{}, 0, 1, 0, 0, nil},
		{"success after retries", &flaky{n: 2, err: errBoom}, Policy{}, 0, 3, 300 * ms, 0, nil},
		{"non-retryable", &flaky{n: 9, err: notFound}, Policy{IsRetryable: func(error) bool { return false }}, 0, 1, 0, 0, notFound},
		{"Permanent", &flaky{n: 9, err: permNotFound}, Policy{}, 0, 1, 0, 0, permNotFound},
		{"Permanent, wrapped", &flaky{n: 9, err: wrapped}, Policy{}, 0, 1, 0, 0, wrapped},
		{"Permanent, joined after another error", &flaky{n: 9, err: joined}, Policy{}, 0, 1, 0, 0, joined},
		{"Permanent, deep, beside an Unwrap that returns nil", &flaky{n: 9, err: deep}, Policy{}, 0, 1, 0, 0, deep},
		{"MaxAttemptsReached", &flaky{n: 9, err: errBoom}, Policy{MaxAttempts: 2}, 0, 2, 100 * ms, MaxAttemptsReached, nil},
		{"DeadlineReached", &flaky{n: 9, err: errBoom}, Policy{Timeout: 250 * ms}, 0, 2, 100 * ms, DeadlineReached, context.DeadlineExceeded},
		{"DeadlineReached, ctx's", &flaky{n: 9, err: errBoom}, Policy{}, 250 * ms, 2, 100 * ms, DeadlineReached, context.DeadlineExceeded},
		{"HintTooLong", &flaky{n: 9, err: hintErr(time.Hour)}, Policy{}, 0, 1, 0, HintTooLong, nil},
		{"SleepFailed", &flaky{n: 9, err: errBoom}, Policy{Sleeper: SleeperFunc(func(context.Context, time.Duration) error { return errSleep })}, 0, 1, 0, SleepFailed, errSleep},
		{"BudgetExhausted", &flaky{n: 9, err: errBoom}, Policy{Budget: NewBudget(0, 1)}, 0, 2, 100 * ms, BudgetExhausted, ErrBudgetExhausted},
	}
	type key struct{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			ctx := context.WithValue(ft.deadlineCtx(t, tt.ctxTimeout), key{}, tt.name)
			var got []doneCall
			p := ft.with(tt.p)
			p.Jitter = NoJitter
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
			if tt.reason == 0 && err != tt.want {
				t.Errorf("Do() = %v; want %v", err, tt.want)
			}
			if tt.reason != 0 {
				if re := wantExhausted(t, err, tt.reason, d.attempts); re.Elapsed != d.elapsed || re.Cause != tt.want || !errors.Is(err, tt.fn.err) {
					t.Errorf("Do() Elapsed, Cause = %v, %v; want OnDone's %v, %v, reaching fn's error", re.Elapsed, re.Cause, d.elapsed, tt.want)
				}
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
			re := wantExhausted(t, err, MaxAttemptsReached, 2)
			var got *nilSafeErr
			if re.Last != tt.err || err.Error() != tt.want || !errors.As(err, &got) || got != nil {
				t.Errorf("Do() = %v; want %q, with the typed nil as Last", err, tt.want)
			}
		})
	}
}

// One Policy is shared by 10,000 concurrent calls, failing 0 to 3 times each, each getting its
// own result.
func TestSharedPolicy(t *testing.T) {
	ft := newFakeTime()
	var hooks, want atomic.Int64
	p := ft.with(Policy{MaxAttempts: 3, Jitter: FullJitter})
	p.OnRetry = func(context.Context, int, error, time.Duration) { hooks.Add(1) }
	var wg sync.WaitGroup
	bad := make(chan error, 10_000)
	for i := range 10_000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn := &flaky{n: i % 4, err: errBoom}
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
	run("3-retries-real-timer", Policy{BaseDelay: time.Microsecond, MaxDelay: time.Microsecond, Jitter: NoJitter}, failThrice)
}

// FuzzDo runs Do on fake time with arbitrary Policy fields, failures,
// hints, call durations, Rand values, a ctx deadline, and (from the bits
// of kind) failures marked Permanent, a predicate that retries nothing, a
// Budget of one retry or an AttemptTimeout, and checks the invariants that
// hold whatever the input.
func FuzzDo(f *testing.F) {
	f.Add(0, int64(0), int64(0), int64(0), int64(0), uint8(3), int64(0), int64(0), uint8(0), 0.5)
	f.Add(3, int64(time.Second), int64(time.Minute), int64(10*time.Second), int64(time.Hour), uint8(10), int64(2*time.Second), int64(time.Second), uint8(1), 0.9)
	f.Add(-1, int64(0), int64(0), int64(0), int64(0), uint8(1), int64(0), int64(0), uint8(0), 0.0)
	f.Add(100, int64(1), int64(math.MaxInt64), int64(math.MaxInt64), int64(0), uint8(200), int64(math.MaxInt64), int64(0), uint8(2), 1.0)
	f.Add(5, int64(time.Minute), int64(time.Second), int64(0), int64(0), uint8(9), int64(0), int64(0), uint8(3), math.NaN())
	f.Add(50, int64(time.Millisecond), int64(time.Second), int64(3*time.Second), int64(2*time.Second), uint8(255), int64(0), int64(300*time.Millisecond), uint8(4), -1.0)
	f.Add(100, int64(10*time.Millisecond), int64(400*time.Millisecond), int64(time.Second), int64(0), uint8(255), int64(0), int64(100*time.Millisecond), uint8(0x08), 0.7)
	// What the seeds above do not reach, in place of a committed corpus: a Budget of one retry,
	// under DecorrelatedJitter at its cap (u above 1); Permanent failures; refused ones; a hint
	// above MaxDelay; an AttemptTimeout, and a call past the Timeout; ctx's deadline nearer than
	// the Timeout, with NoJitter at its cap for over a minute; a negative BaseDelay, MaxDelay,
	// Timeout and MinAttemptTime.
	ms := int64(time.Millisecond)
	f.Add(5, ms, 2*ms, int64(0), int64(0), uint8(9), int64(0), int64(0), uint8(0x43), 2.0)
	f.Add(5, ms, 1000*ms, int64(0), int64(0), uint8(3), int64(0), int64(0), uint8(0x80), 0.5)
	f.Add(5, ms, 1000*ms, int64(0), int64(0), uint8(3), int64(0), int64(0), uint8(0x10), 0.5)
	f.Add(5, ms, 1000*ms, int64(0), int64(0), uint8(3), 2000*ms, int64(0), uint8(3), 0.5)
	f.Add(5, ms, 1000*ms, 1000*ms, int64(0), uint8(3), int64(0), 2000*ms, uint8(0x20), 0.5)
	f.Add(20, 1000*ms, 4000*ms, int64(2*time.Hour), int64(time.Hour), uint8(30), int64(0), int64(0), uint8(0), 0.5)
	f.Add(0, int64(-1), int64(0), int64(0), int64(0), uint8(1), int64(0), int64(0), uint8(0), 0.5)
	f.Add(0, int64(0), int64(-1), int64(0), int64(0), uint8(1), int64(0), int64(0), uint8(0), 0.5)
	f.Add(0, int64(0), int64(0), int64(-1), int64(0), uint8(1), int64(0), int64(0), uint8(0), 0.5)
	f.Add(0, int64(0), int64(0), int64(0), int64(0), uint8(1), int64(0), -ms, uint8(0x08), 0.5)
	f.Fuzz(func(t *testing.T, maxAttempts int, base, maxDelay, timeout, ctxTimeout int64, failures uint8, hint, callCost int64, kind uint8, u float64) {
		maxAttempts %= 1000 // keep each run short
		p := Policy{
			MaxAttempts: maxAttempts,
			BaseDelay:   time.Duration(base),
			MaxDelay:    time.Duration(maxDelay),
			Timeout:     time.Duration(timeout),
			Jitter:      jitters[int(kind)%len(jitters)].f,
			Rand:        constRand(u),
		}
		checkDo(t, p, doInput{
			failures:   int(failures),
			hint:       time.Duration(hint),
			callCost:   time.Duration(callCost),
			ctxTimeout: time.Duration(ctxTimeout),
			permanent:  kind&0x80 != 0,
			budget:     kind&0x40 != 0,
			timeout:    kind&0x20 != 0,
			refuse:     kind&0x10 != 0,
			room:       kind&0x08 != 0,
		})
	})
}

type doInput struct {
	failures   int           // calls that fail before one succeeds
	hint       time.Duration // the RetryAfter of each failure
	callCost   time.Duration // fake time each call of fn takes
	ctxTimeout time.Duration // a ctx deadline on the fake clock, if positive
	permanent  bool          // failures are marked Permanent
	refuse     bool          // IsRetryable refuses every error
	budget     bool          // a Budget allows one retry
	timeout    bool          // AttemptTimeout is callCost/2 + 1ns, if that is positive
	room       bool          // MinAttemptTime is callCost
}

// checkDo runs Do with p on fake time and fails t if an invariant breaks.
func checkDo(t *testing.T, p Policy, in doInput) {
	ft := newFakeTime()
	start := ft.Now()
	var ctxDeadline time.Time
	if in.ctxTimeout > 0 {
		// at least an hour ahead on the real clock, so that the real
		// timer behind ctx never fires during the run
		in.ctxTimeout = max(in.ctxTimeout, time.Hour)
		ctxDeadline = start.Add(in.ctxTimeout)
	} else {
		in.ctxTimeout = 0 // no ctx deadline
	}
	ctx := ft.deadlineCtx(t, in.ctxTimeout)
	errFail, returned := error(hintErr(in.hint)), error(hintErr(in.hint))
	p.Clock, p.Sleeper = ft, ft
	if in.permanent {
		returned = Permanent(errFail)
	}
	if in.refuse {
		p.IsRetryable = func(error) bool { return false }
	}
	if in.timeout && in.callCost >= 0 {
		p.AttemptTimeout = in.callCost/2 + 1
	}
	if in.budget {
		p.Budget = NewBudget(0.5, 1) // full at 1 token; the deposit is capped
	}
	if in.room {
		p.MinAttemptTime = in.callCost
	}
	valid := p.Validate() == nil
	// The limits, as Policy's doc gives them for a zero field
	maxAttempts, maxDelay := cmp.Or(p.MaxAttempts, DefaultMaxAttempts), p.MaxDelay
	switch {
	case maxDelay != 0:
	case p.BaseDelay > math.MaxInt64/3:
		maxDelay = math.MaxInt64 // 3×BaseDelay, saturated
	default:
		maxDelay = max(DefaultMaxDelay, 3*p.BaseDelay)
	}
	room := max(p.MinAttemptTime, 1) // the least time left after a wait
	var waitErr string
	p.OnRetry = func(_ context.Context, _ int, _ error, wait time.Duration) {
		now := ft.Now()
		switch {
		case wait < 0 || wait > maxDelay:
			waitErr = "a wait outside [0, MaxDelay]"
		case in.hint > 0 && wait < in.hint:
			waitErr = "a wait shorter than the hint"
		case p.Timeout > 0 && start.Add(p.Timeout).Sub(now.Add(wait)) < room:
			waitErr = "a wait that leaves less than MinAttemptTime, or nothing, before Timeout"
		case !ctxDeadline.IsZero() && ctxDeadline.Sub(now.Add(wait)) < room:
			waitErr = "a wait that leaves less than MinAttemptTime, or nothing, before ctx's deadline"
		}
	}
	var done []doneCall
	p.OnDone = func(ctx context.Context, attempts int, elapsed time.Duration, err error) {
		done = append(done, doneCall{ctx, attempts, elapsed, err})
	}
	calls := 0
	var ctxErr string
	err := Do(ctx, func(ctx context.Context) error {
		calls++
		// fn's ctx ends, in real time, when the time left on the fake
		// clock runs out, or AttemptTimeout from now
		dl, ok := ctx.Deadline()
		left := time.Until(dl)
		switch {
		case calls > 1 && (p.Timeout > 0 && ft.Now().Sub(start) >= p.Timeout || !ctxDeadline.IsZero() && !ft.Now().Before(ctxDeadline)):
			ctxErr = "fn called again after a deadline"
		case p.Timeout > 0 && (!ok || left > p.Timeout-ft.Now().Sub(start)):
			ctxErr = "fn's ctx outlives the Timeout"
		case p.AttemptTimeout > 0 && (!ok || left > p.AttemptTimeout):
			ctxErr = "fn's ctx outlives AttemptTimeout"
		}
		ft.advance(in.callCost)
		if calls <= in.failures {
			return returned
		}
		return nil
	}, p)

	waits := len(ft.Waits())
	var re *RetryExhausted
	switch {
	case !valid:
		if !errors.Is(err, ErrInvalidPolicy) || calls != 0 || len(done) != 0 {
			t.Fatalf("Do(%+v) = %v after %d calls, %d OnDone calls; want ErrInvalidPolicy after 0, 0", p, err, calls, len(done))
		}
		return
	case len(done) != 1 || done[0].attempts != calls || done[0].err != err || done[0].ctx != ctx:
		t.Fatalf("Do(%+v, %+v) = %v after %d calls; OnDone calls %+v; want one, with the calls, Do's error and ctx", p, in, err, calls, done)
	case waitErr != "":
		t.Fatalf("Do(%+v, %+v) made %s", p, in, waitErr)
	case ctxErr != "":
		t.Fatalf("Do(%+v, %+v): %s", p, in, ctxErr)
	case calls < 1 || calls > maxAttempts || waits > calls-1 || in.budget && waits > 1:
		t.Fatalf("Do(%+v, %+v) calls, waits = %d, %d; want 1 to %d calls and fewer waits", p, in, calls, waits, maxAttempts)
	case err == nil:
		if calls != in.failures+1 {
			t.Fatalf("Do() = nil after %d calls; want nil only after the success at call %d", calls, in.failures+1)
		}
	case in.refuse && !in.permanent && errors.As(err, &re):
		if re.Reason != DeadlineReached || calls != 1 || re.Last != errFail {
			t.Fatalf("Do() = %v after %d calls; want fn's error, or DeadlineReached (ahead of IsRetryable), after 1", err, calls)
		}
	case in.permanent || in.refuse:
		if err != returned || calls != 1 {
			t.Fatalf("Do() = %v after %d calls; want fn's error as fn returned it, after 1", err, calls)
		}
	case errors.As(err, &re):
		msg := err.Error() // one line, from "retry: " to fn's last error
		if re.Attempts != calls || re.Last != errFail || !strings.HasPrefix(msg, "retry: ") || !strings.HasSuffix(msg, ": "+errFail.Error()) ||
			strings.ContainsAny(msg, "\r\n") {
			t.Fatalf("Do() = %q, %+v after %d calls; want one line, Attempts = calls, Last = fn's error", msg, re, calls)
		}
	default:
		t.Fatalf("Do() = %v; want nil, fn's error or a *RetryExhausted", err)
	}
}
