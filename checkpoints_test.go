package retry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
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

// A Permanent error comes back after one attempt, as fn returned it, mark included, wherever
// the mark lies in its chain.
func TestNonRetryableErrorReturnedAsIs(t *testing.T) {
	notFound := &customErr{"not found"}
	for _, tt := range []struct {
		name string
		err  error // what fn returns
	}{
		{"outermost", Permanent(notFound)},
		{"wrapped", fmt.Errorf("get: %w", Permanent(notFound))},
		{"joined", errors.Join(errBoom, Permanent(notFound))},
		{"joined before another error", errors.Join(Permanent(notFound), errBoom)},
		{"deep, beside an Unwrap that returns nil", errors.Join(unwrapsToNil{}, fmt.Errorf("a: %w", fmt.Errorf("b: %w", Permanent(errBoom))))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			onRetry := 0
			p := ft.with(Policy{OnRetry: func(context.Context, int, error, time.Duration) { onRetry++ }})
			fn := &flaky{n: 10, err: tt.err}
			if err := Do(context.Background(), fn.call, p); err != tt.err || fn.calls != 1 || len(ft.Waits()) != 0 || onRetry != 0 {
				t.Errorf("Do() = %#v after calls, waits, OnRetry = %d, %d, %d; want %#v, the same value, after 1, 0, 0",
					err, fn.calls, len(ft.Waits()), onRetry, tt.err)
			}
		})
	}
}

// unwrapHook calls hook as errors.Unwrap reaches through it; hintHook, as
// Do asks it for a hint.
type unwrapHook struct {
	error
	hook func()
}

func (e *unwrapHook) Unwrap() error { e.hook(); return e.error }

type hintHook unwrapHook

func (e *hintHook) RetryAfter() time.Duration { e.hook(); return 0 }

// When ctx is done at a check point, Do stops with DeadlineReached if its deadline passed,
// else Canceled, whatever else but a Permanent error it found there; Cause reaches ctx's error and cause, and
// OnDone sees the same error.
func TestCtxDoneReason(t *testing.T) {
	errShutdown, errSlow := errors.New("shutting down"), errors.New("too slow")
	none := func(func()) Policy { return Policy{} }
	sleeper := func(f func(ctx context.Context, cancel func()) error) func(cancel func()) Policy {
		return func(cancel func()) Policy {
			return Policy{BaseDelay: time.Millisecond, Sleeper: SleeperFunc(func(ctx context.Context, _ time.Duration) error { return f(ctx, cancel) })}
		}
	}
	const shutdown, slow = "(canceled: context canceled: shutting down): ", "(deadline reached: ctx's deadline passed: too slow): "
	called := false // whether fn has been called
	tests := []struct {
		name    string
		timed   bool // ctx ends at its deadline, 20ms away, with errSlow; else cancel ends it, with errShutdown
		p       func(cancel func()) Policy
		fn      func(ctx context.Context, cancel func()) error // nil: fails with boom
		retries int                                            // calls of OnRetry
		suffix  string                                         // of the message
	}{
		{"cancelled during fn", false, none, func(_ context.Context, cancel func()) error { cancel(); return errBoom }, 0, shutdown + "boom"},
		{"cancelled while fn hangs, with a predicate that retries nothing", false,
			func(func()) Policy { return Policy{IsRetryable: func(error) bool { return false }} },
			func(ctx context.Context, cancel func()) error { cancel(); <-ctx.Done(); return ctx.Err() }, 0, shutdown + "context canceled"},
		{"cancelled in the Clock as Policy.Timeout passes, after fn", false, func(cancel func()) Policy {
			start := time.Now()
			return Policy{Timeout: time.Second, Clock: ClockFunc(func() time.Time {
				if called {
					cancel() // the caller leaves as the Timeout passes
					return start.Add(2 * time.Second)
				}
				return start
			})}
		}, nil, 0, shutdown + "boom"},
		{"cancelled during the wait", false, sleeper(func(ctx context.Context, cancel func()) error { cancel(); return ctx.Err() }), nil, 1, shutdown + "boom"},
		{"cancelled during a wait that returns nil", false, sleeper(func(_ context.Context, cancel func()) error { cancel(); return nil }), nil, 1, shutdown + "boom"},
		{"cancelled in the Clock after the wait", false, func(cancel func()) Policy {
			slept := false
			return Policy{Timeout: time.Hour, Sleeper: SleeperFunc(func(context.Context, time.Duration) error { slept = true; return nil }),
				Clock: ClockFunc(func() time.Time {
					if slept {
						cancel()
					}
					return time.Now()
				})}
		}, nil, 1, shutdown + "boom"},
		{"fn hangs until ctx's deadline", true, func(func()) Policy { return Policy{Timeout: time.Hour} },
			func(ctx context.Context, _ func()) error { <-ctx.Done(); return ctx.Err() }, 0, slow + "context deadline exceeded"},
		{"ctx's deadline ends the wait", true, sleeper(func(ctx context.Context, _ func()) error { <-ctx.Done(); return ctx.Err() }), nil, 1, slow + "boom"},
		{"the Sleeper fails as ctx's deadline passes", true, sleeper(func(ctx context.Context, _ func()) error { <-ctx.Done(); return errShutdown }),
			nil, 1, slow + "boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancelCause := context.WithCancelCause(context.Background())
			cancel, reason, ctxErr, cause := func() { cancelCause(errShutdown) }, Canceled, context.Canceled, errShutdown
			defer cancel()
			if tt.timed {
				var stop func()
				ctx, stop = context.WithDeadlineCause(ctx, time.Now().Add(20*time.Millisecond), errSlow)
				defer stop()
				reason, ctxErr, cause = DeadlineReached, context.DeadlineExceeded, errSlow
			}
			called = false
			fn := func(context.Context) error { called = true; return errBoom }
			if tt.fn != nil {
				fn = func(ctx context.Context) error { called = true; return tt.fn(ctx, cancel) }
			}
			var done error
			retries := 0
			p := tt.p(cancel)
			p.OnRetry = func(context.Context, int, error, time.Duration) { retries++ }
			p.OnDone = func(_ context.Context, _ int, _ time.Duration, err error) { done = err }
			err := Do(ctx, fn, p)
			re := wantExhausted(t, err, reason, 1)
			if msg := ctxErr.Error() + ": " + cause.Error(); re.Cause.Error() != msg {
				t.Errorf("Cause = %q; want %q", re.Cause, msg)
			}
			if retries != tt.retries || done != err || !errors.Is(err, ctxErr) || !errors.Is(err, cause) || !strings.HasSuffix(err.Error(), tt.suffix) {
				t.Errorf("Do() = %v after %d OnRetry calls, OnDone got %v; want it to end %q, reaching %v and %v, after %d, the same in both",
					err, retries, done, tt.suffix, ctxErr, cause, tt.retries)
			}
		})
	}
}

// valueHook is a ctx whose Value method calls hook, as context.WithTimeout calls it when
// it makes fn's ctx.
type valueHook struct {
	context.Context
	hook func()
}

func (c *valueHook) Value(key any) any { c.hook(); return c.Context.Value(key) }

// When ctx is done, or the deadline has passed on the Clock, before the first call, Do
// calls no fn and returns a *RetryExhausted of 0 attempts that reaches ctx's error or
// context.DeadlineExceeded; it calls OnDone with that error, and deposits nothing in the
// Budget. What ctx's own methods do as fn's ctx is made counts.
func TestNoAttempt(t *testing.T) {
	errShutdown := errors.New("shutting down")
	const shutdown, deadline = "canceled: context canceled: shutting down)", "deadline reached: ctx's deadline passed)"
	for _, tt := range []struct {
		name   string
		expire time.Duration // ctx's deadline, from now, if not 0
		ahead  time.Duration // how far the Clock runs ahead of real time
		cancel string        // when ctx is cancelled: "before" Do, as the Clock is "read", in its own "value" method, or ""; or "late" if its Value moves the Clock past Policy.Timeout
		reason Reason
		reach  error
		msg    string // after "retry: gave up before the first attempt ("
	}{
		{"ctx cancelled", 0, 0, "before", Canceled, errShutdown, shutdown},
		{"ctx's deadline exceeded", -time.Second, 0, "", DeadlineReached, context.DeadlineExceeded, deadline},
		{"ctx's deadline passed on the Clock", time.Hour, 2 * time.Hour, "", DeadlineReached, context.DeadlineExceeded, deadline},
		{"ctx cancelled as the Clock is read", 0, 0, "read", Canceled, errShutdown, shutdown},
		{"ctx cancelled in its own method, as fn's ctx is made", 0, 0, "value", Canceled, errShutdown, shutdown},
		{"Policy.Timeout passed on the Clock in ctx's own method", 0, 0, "late", DeadlineReached, context.DeadlineExceeded,
			"deadline reached: Policy.Timeout passed)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancelCause := context.WithCancelCause(context.Background())
			cancel := func() { cancelCause(errShutdown) }
			defer cancel()
			if tt.expire != 0 {
				var stop func()
				ctx, stop = context.WithDeadline(ctx, time.Now().Add(tt.expire))
				defer stop()
			}
			switch tt.cancel {
			case "before":
				cancel()
			case "value":
				ctx = &valueHook{ctx, cancel}
			case "late":
				ctx = &valueHook{ctx, func() { tt.ahead += 2 * time.Hour }}
			}
			calls := 0
			var done []doneCall
			budget := NewBudget(0.5, 2)
			budget.spend()
			p := Policy{Timeout: time.Hour, Budget: budget, Clock: ClockFunc(func() time.Time {
				if tt.cancel == "read" {
					cancel()
				}
				return time.Now().Add(tt.ahead)
			}), OnDone: func(ctx context.Context, attempts int, elapsed time.Duration, err error) {
				done = append(done, doneCall{ctx, attempts, elapsed, err})
			}}
			v, err := DoValue(ctx, func(context.Context) (int, error) { calls++; return 1, nil }, p)
			re := wantExhausted(t, err, tt.reason, 0)
			if msg := "retry: gave up before the first attempt (" + tt.msg; re.Elapsed != 0 || re.Last != nil || !errors.Is(err, tt.reach) || err.Error() != msg || v != 0 {
				t.Errorf("DoValue() = %d, %q in %v, Last %v; want 0, %q in 0s, Last nil, reaching %v", v, err, re.Elapsed, re.Last, msg, tt.reach)
			}
			if calls != 0 || len(done) != 1 || done[0] != (doneCall{ctx, 0, 0, err}) || budget.Tokens() != 1 {
				t.Errorf("fn calls, OnDone calls, Budget tokens = %d, %+v, %v; want 0, [{ctx 0 0 err}], 1",
					calls, done, budget.Tokens())
			}
		})
	}
}

// After a failed call Do returns a Permanent error as it is, whatever else happened; then
// it stops if ctx is done or a deadline has passed, though a method of fn's error ended
// ctx; only then does it ask IsRetryable, whose refusal stands, and count the attempts.
func TestAfterAFailedCall(t *testing.T) {
	type env struct {
		ft     *fakeTime
		ctx    context.Context
		cancel func()
	}
	late := func(e env) { e.ft.advance(2 * time.Second) }
	refuse := func(env, error) bool { return false }
	tests := []struct {
		name       string
		p          Policy
		ctxTimeout time.Duration
		fn         func(e env) error
		predicate  func(e env, err error) bool // nil: every error
		reason     Reason                      // 0: fn's error as it is
		asked      int                         // calls of IsRetryable
	}{
		{"an error to retry, on the last attempt", Policy{MaxAttempts: 1}, 0, func(env) error { return errBoom }, nil, MaxAttemptsReached, 1},
		{"refused", Policy{}, 0, func(env) error { return errBoom }, refuse, 0, 1},
		{"Permanent", Policy{}, 0, func(env) error { return Permanent(errBoom) }, nil, 0, 0},
		{"Permanent, Timeout passed", Policy{Timeout: time.Second}, 0, func(e env) error { late(e); return Permanent(errBoom) }, nil, 0, 0},
		{"ctx cancelled during fn", Policy{}, 0, func(e env) error { e.cancel(); return errBoom }, nil, Canceled, 0},
		{"Permanent, ctx cancelled during fn", Policy{}, 0, func(e env) error { e.cancel(); return Permanent(errBoom) }, nil, 0, 0},
		{"Permanent, ctx's deadline passed on the Clock during fn", Policy{}, time.Second, func(e env) error { late(e); return Permanent(errBoom) }, nil, 0, 0},
		{"Permanent, ctx's deadline fired during fn", Policy{}, 10 * time.Millisecond,
			func(e env) error { <-e.ctx.Done(); return Permanent(errBoom) }, nil, 0, 0},
		{"ctx cancelled in Unwrap, on the way to a Permanent mark", Policy{}, 0,
			func(e env) error { return &unwrapHook{Permanent(errBoom), e.cancel} }, nil, 0, 0},
		{"ctx cancelled in Unwrap of fn's error", Policy{}, 0, func(e env) error { return &unwrapHook{errBoom, e.cancel} }, nil, Canceled, 0},
		{"ctx cancelled in RetryAfter of fn's error", Policy{}, 0, func(e env) error { return &hintHook{errBoom, e.cancel} }, nil, Canceled, 0},
		{"Timeout passed during fn", Policy{Timeout: time.Second}, 0, func(e env) error { late(e); return errBoom }, nil, DeadlineReached, 0},
		{"Timeout passed, a timeout refused by IsRetryable", Policy{Timeout: time.Second}, 0,
			func(e env) error { late(e); return context.DeadlineExceeded }, refuse, DeadlineReached, 0},
		{"ctx's deadline passed on the Clock during fn", Policy{}, time.Second, func(e env) error { late(e); return errBoom }, refuse, DeadlineReached, 0},
		{"Timeout passes in IsRetryable, which refuses", Policy{Timeout: time.Second}, 0, func(env) error { return errBoom },
			func(e env, _ error) bool { late(e); return false }, 0, 1},
		{"ctx's deadline passes on the Clock in IsRetryable, which refuses", Policy{}, time.Second, func(env) error { return errBoom },
			func(e env, _ error) bool { late(e); return false }, 0, 1},
		{"Timeout passes in IsRetryable, with a hint above MaxDelay", Policy{Timeout: time.Second, MaxDelay: time.Second}, 0,
			func(env) error { return After(time.Minute, errBoom) }, func(e env, _ error) bool { late(e); return true }, DeadlineReached, 1},
		{"ctx cancelled in IsRetryable, which refuses", Policy{}, 0, func(env) error { return errBoom },
			func(e env, _ error) bool { e.cancel(); return false }, 0, 1},
		{"ctx cancelled in IsRetryable, on the last attempt", Policy{MaxAttempts: 1}, 0, func(env) error { return errBoom },
			func(e env, _ error) bool { e.cancel(); return true }, MaxAttemptsReached, 1},
		{"no Budget left, a hint above MaxDelay", Policy{MaxDelay: time.Second, Budget: NewBudget(0, 1)}, 0,
			func(env) error { return After(time.Hour, errBoom) }, nil, HintTooLong, 1},
		{"no Budget left, a wait past the Timeout", Policy{Timeout: time.Second, BaseDelay: 2 * time.Second, Budget: NewBudget(0, 1)}, 0,
			func(env) error { return errBoom }, nil, DeadlineReached, 1},
		{"Timeout passes in Unwrap of fn's error, which IsRetryable refuses", Policy{Timeout: time.Second}, 0,
			func(e env) error { return &unwrapHook{errBoom, func() { late(e) }} }, refuse, DeadlineReached, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			ctx, cancel := context.WithCancel(ft.deadlineCtx(t, tt.ctxTimeout))
			defer cancel()
			e := env{ft, ctx, cancel}
			if tt.p.Budget != nil {
				tt.p.Budget.spend()
			}
			calls, asked, jittered := 0, 0, 0
			var fnErr error
			p := ft.with(tt.p)
			p.IsRetryable = func(err error) bool { asked++; return tt.predicate == nil || tt.predicate(e, err) }
			p.Jitter = func(n int, base, maxDelay, prev time.Duration, u float64) time.Duration {
				jittered++
				return DecorrelatedJitter(n, base, maxDelay, prev, u)
			}
			err := Do(ctx, func(context.Context) error { calls++; fnErr = tt.fn(e); return fnErr }, p)
			if tt.asked == 0 && jittered != 0 { // Do stopped before IsRetryable: no wait is chosen
				t.Errorf("Jitter calls = %d; want 0", jittered)
			}
			if calls != 1 || asked != tt.asked || tt.reason == 0 && err != fnErr {
				t.Errorf("Do() = %v after %d calls, asking IsRetryable %d times; want %v as fn returned it, or %v, after 1 call, %d asks",
					err, calls, asked, fnErr, tt.reason, tt.asked)
			}
			if tt.reason != 0 {
				if re := wantExhausted(t, err, tt.reason, 1); re.Last != fnErr || (re.Reason == DeadlineReached) != errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Do() = %v; want Last %v, reaching context.DeadlineExceeded if DeadlineReached", err, fnErr)
				}
			}
		})
	}
}

// A deadline that IsRetryable reaches, or passes, is seen where the wait is checked, and
// named as passed: no wait and no hint is said to break it.
func TestDeadlinePassedBeforeTheWait(t *testing.T) {
	for _, d := range []time.Duration{time.Second, time.Hour} { // to the Timeout, and past it
		ft := newFakeTime()
		p := ft.with(Policy{Timeout: time.Second, IsRetryable: func(error) bool { ft.advance(d); return true }})
		err := Do(context.Background(), failOnce, p)
		if wantExhausted(t, err, DeadlineReached, 1); !strings.Contains(err.Error(), "(deadline reached: Policy.Timeout passed): boom") {
			t.Errorf("IsRetryable taking %v: Do() = %q; want it to say that Policy.Timeout passed", d, err)
		}
	}
}

// A ctx that ends, or a deadline that passes, after a failed call and before the wait (in
// IsRetryable, Jitter, Rand or the Clock), stops Do with Canceled or DeadlineReached,
// whatever limit the wait would break, and no retry is announced with OnRetry.
func TestEndBeforeTheWait(t *testing.T) {
	limits := []struct {
		name string
		p    Policy
		hint time.Duration
	}{
		{"no deadline", Policy{}, 0},
		{"a wait that fits", Policy{Timeout: time.Hour}, 0},
		{"a hint above MaxDelay", Policy{Timeout: time.Hour, MaxDelay: time.Second}, time.Minute},
		{"a hint past the Timeout", Policy{Timeout: time.Hour, MaxDelay: 2 * time.Hour}, 90 * time.Minute},
		{"a wait past the Timeout", Policy{Timeout: time.Second, BaseDelay: 2 * time.Second}, 0},
		{"no Budget left", Policy{Timeout: time.Hour, Budget: NewBudget(0, 1)}, 0},
	}
	for _, end := range []Reason{Canceled, DeadlineReached} {
		for _, where := range []string{"IsRetryable", "Jitter", "Rand", "Clock"} {
			for _, l := range limits {
				if l.p.Timeout == 0 && (end == DeadlineReached || where == "Clock") {
					continue // no deadline to pass, and no Clock read before the wait
				}
				t.Run(fmt.Sprint(end, " in ", where, ", ", l.name), func(t *testing.T) {
					ft := newFakeTime()
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					asked, retries := false, 0
					hook := func(w string) {
						switch {
						case w != where:
						case end == Canceled:
							cancel()
						default:
							ft.advance(2 * time.Hour) // past every Timeout
						}
					}
					p := ft.with(l.p)
					if p.Budget != nil {
						p.Budget = NewBudget(0, 1)
						p.Budget.spend()
					}
					p.IsRetryable = func(error) bool { asked = true; hook("IsRetryable"); return true }
					p.Jitter = func(n int, base, maxDelay, prev time.Duration, u float64) time.Duration {
						hook("Jitter")
						return NoJitter(n, base, maxDelay, prev, u)
					}
					p.Rand = func() float64 { hook("Rand"); return 0.5 }
					p.Clock = ClockFunc(func() time.Time {
						if asked {
							hook("Clock")
						}
						return ft.Now()
					})
					p.OnRetry = func(context.Context, int, error, time.Duration) { retries++ }
					err := Do(ctx, func(context.Context) error { return After(l.hint, errBoom) }, p)
					if wantExhausted(t, err, end, 1); retries != 0 {
						t.Errorf("OnRetry calls = %d; want 0", retries)
					}
				})
			}
		}
	}
}
