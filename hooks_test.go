package retry

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

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
		Jitter: func(n int, base, maxDelay, prev time.Duration, u float64) time.Duration {
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
			wantExhausted(t, err, tt.reason, 2)
		})
	}
}

// A Sleeper's error ends Do with SleepFailed, unless the deadline passed during the
// sleep or before it, in OnRetry: the deadline comes first; a Sleeper that returns early
// is trusted, and MaxAttempts still bounds the calls.
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
		{"fails as the deadline passes", Policy{Timeout: time.Second, BaseDelay: 10 * time.Millisecond}, 0, time.Hour, errSleep, DeadlineReached, 1},
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
			re := wantExhausted(t, err, tt.reason, tt.attempts)
			if fn.calls != tt.attempts || re.Elapsed != tt.onRetry+tt.advance || re.Cause != cause || !errors.Is(err, errBoom) {
				t.Errorf("Do() = %v after %d calls; want %d calls, it in %v, Cause %v, reaching boom", err, fn.calls, tt.attempts, tt.onRetry+tt.advance, cause)
			}
		})
	}
}

// OnDone runs exactly once on every way out of a valid call, with the
// calls of fn, the elapsed time on Clock and the error Do returns.
func TestOnDone(t *testing.T) {
	errSleep := errors.New("sleeper broke")
	notFound := &customErr{"not found"}
	permNotFound := Permanent(notFound)
	tests := []struct {
		name       string
		fn         *flaky
		p          Policy
		ctxTimeout time.Duration
		attempts   int
		elapsed    time.Duration
		reason     Reason // 0: the error is not a *RetryExhausted
		want       error  // for reason 0: the error Do returns
	}{
		{"success at once", &flaky{}, Policy{}, 0, 1, 0, 0, nil},
		{"success after retries", &flaky{n: 2, err: errBoom}, Policy{Jitter: NoJitter}, 0, 3, 300 * time.Millisecond, 0, nil},
		{"non-retryable", &flaky{n: 9, err: notFound}, Policy{IsRetryable: func(error) bool { return false }}, 0, 1, 0, 0, notFound},
		{"Permanent", &flaky{n: 9, err: permNotFound}, Policy{}, 0, 1, 0, 0, permNotFound},
		{"MaxAttemptsReached", &flaky{n: 9, err: errBoom}, Policy{MaxAttempts: 2, Jitter: NoJitter}, 0, 2, 100 * time.Millisecond, MaxAttemptsReached, nil},
		{"DeadlineReached", &flaky{n: 9, err: errBoom}, Policy{Timeout: 250 * time.Millisecond, Jitter: NoJitter}, 0, 2, 100 * time.Millisecond, DeadlineReached, nil},
		{"DeadlineReached, ctx's", &flaky{n: 9, err: errBoom}, Policy{Jitter: NoJitter}, 250 * time.Millisecond, 2, 100 * time.Millisecond, DeadlineReached, nil},
		{"HintTooLong", &flaky{n: 9, err: hintErr(time.Hour)}, Policy{}, 0, 1, 0, HintTooLong, nil},
		{"SleepFailed", &flaky{n: 9, err: errBoom}, Policy{Sleeper: SleeperFunc(func(context.Context, time.Duration) error { return errSleep })}, 0, 1, 0, SleepFailed, nil},
		{"BudgetExhausted", &flaky{n: 9, err: errBoom}, Policy{Budget: NewBudget(0, 1), Jitter: NoJitter}, 0, 2, 100 * time.Millisecond, BudgetExhausted, nil},
	}
	type key struct{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			ctx := context.WithValue(ft.deadlineCtx(t, tt.ctxTimeout), key{}, tt.name)
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
			if tt.reason == 0 && err != tt.want {
				t.Errorf("Do() = %v; want %v", err, tt.want)
			}
			if tt.reason != 0 {
				if re := wantExhausted(t, err, tt.reason, d.attempts); re.Elapsed != d.elapsed {
					t.Errorf("Do() Elapsed = %v; want OnDone's %v", re.Elapsed, d.elapsed)
				}
			}
		})
	}
}
