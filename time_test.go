package retry

import (
	"cmp"
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// An http.Client timeout, on a real server, is retried.
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
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil) // srv.URL is valid
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}, p)
	if body != "ok" || err != nil || hits.Load() != 2 || len(errs) != 1 || !errors.Is(errs[0], context.DeadlineExceeded) {
		t.Errorf("DoValue() = %q, %v after %d requests, retried %v; want \"ok\", nil after 2, retrying the client's timeout", body, err, hits.Load(), errs)
	}
}

// The Timeout or ctx's deadline ends the retries without clipping a wait.
func TestTimeout(t *testing.T) {
	for _, tt := range []struct {
		name       string
		p          Policy
		ctxTimeout time.Duration
	}{
		{"Timeout", Policy{Timeout: 10 * time.Second}, 0},
		{"ctx deadline", Policy{}, 10 * time.Second},
	} {
		t.Run("a wait that would outlast the "+tt.name+" is not started", func(t *testing.T) {
			ft := newFakeTime()
			p := tt.p
			p.MaxAttempts, p.BaseDelay, p.MaxDelay, p.Jitter = 100, time.Second, time.Minute, NoJitter
			err := Do(ft.deadlineCtx(t, tt.ctxTimeout), (&flaky{n: 100, err: errBoom}).call, ft.with(p))
			// waits 1s, 2s, 4s; at 7s the next wait, 8s, would end after the deadline
			if got, want := ft.Waits(), []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}; !slices.Equal(got, want) {
				t.Errorf("Do() waits = %v; want %v", got, want)
			}
			if re := wantExhausted(t, err, DeadlineReached, 4); re.Elapsed != 7*time.Second || re.Cause != context.DeadlineExceeded {
				t.Errorf("Do() Elapsed, Cause = %v, %v; want 7s, context.DeadlineExceeded", re.Elapsed, re.Cause)
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

// With 1ns left before a deadline a wait of 0 fits, but not a hint nor a wait of all the
// time left; with nothing left, the deadline has passed.
func TestTimeLeftAtTheEdge(t *testing.T) {
	tests := []struct {
		name       string
		p          Policy
		ctxTimeout time.Duration
		callCost   time.Duration // fake time the first call takes
		wait       time.Duration // the Jitter's
		err        error         // what fn returns
		reason     Reason
		attempts   int
		waits      []time.Duration
	}{
		{"1ns before Timeout", Policy{Timeout: time.Second}, 0, time.Second - 1, 0, errBoom, MaxAttemptsReached, 2, []time.Duration{0}},
		{"1ns before Timeout, 1ns hint", Policy{Timeout: time.Second}, 0, time.Second - 1, 0, hintErr(1), HintTooLong, 1, nil},
		{"a wait of all the time left before Timeout", Policy{Timeout: time.Second}, 0, 0, time.Second, errBoom, DeadlineReached, 1, nil},
		{"at Timeout", Policy{Timeout: time.Second}, 0, time.Second, 0, errBoom, DeadlineReached, 1, nil},
		{"past Timeout", Policy{Timeout: time.Second}, 0, time.Hour, 0, errBoom, DeadlineReached, 1, nil},
		{"1ns before ctx deadline", Policy{}, time.Hour, time.Hour - 1, 0, errBoom, MaxAttemptsReached, 2, []time.Duration{0}},
		{"1ns before ctx deadline, 1ns hint", Policy{}, time.Hour, time.Hour - 1, 0, hintErr(1), HintTooLong, 1, nil},
		{"a wait of all the time left before ctx deadline", Policy{}, time.Hour, 0, time.Hour, errBoom, DeadlineReached, 1, nil},
		{"at ctx deadline", Policy{}, time.Hour, time.Hour, 0, errBoom, DeadlineReached, 1, nil},
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
			p := tt.p
			p.MaxAttempts, p.MaxDelay = 2, 2*time.Hour
			p.Jitter = func(int, time.Duration, time.Duration, time.Duration, float64) time.Duration { return tt.wait }
			err := Do(ft.deadlineCtx(t, tt.ctxTimeout), fn, ft.with(p))
			re := wantExhausted(t, err, tt.reason, tt.attempts)
			if !slices.Equal(ft.Waits(), tt.waits) {
				t.Errorf("Do() waits = %v; want %v", ft.Waits(), tt.waits)
			}
			if (re.Reason == DeadlineReached) != (re.Cause == context.DeadlineExceeded) {
				t.Errorf("Do() = %v with Cause %v; want Cause context.DeadlineExceeded for DeadlineReached alone", err, re.Cause)
			}
		})
	}
}

// fn is never called after a deadline, however late OnRetry or the Sleeper makes the next
// attempt; the token of the retry that did not happen is given back.
func TestNoCallAfterADeadline(t *testing.T) {
	tests := []struct {
		name       string
		p          Policy
		ctxTimeout time.Duration
		onRetry    time.Duration // fake time OnRetry takes
		late       time.Duration // how late the Sleeper returns
		calls      []time.Duration
		limit      string // the deadline named in the message
	}{
		// 300ms waits: OnRetry ends the first at 600ms, the second at 1.2s, past the deadline
		{"Timeout, slow OnRetry", Policy{Timeout: time.Second, BaseDelay: 300 * time.Millisecond}, 0, 600 * time.Millisecond, 0,
			[]time.Duration{0, 600 * time.Millisecond}, "Policy.Timeout passed"},
		{"ctx deadline, slow OnRetry", Policy{BaseDelay: 300 * time.Millisecond}, time.Second, 600 * time.Millisecond, 0,
			[]time.Duration{0, 600 * time.Millisecond}, "ctx's deadline passed"},
		// a 990ms wait fits a 1s deadline; the Sleeper ends it at 1.005s
		{"Timeout, late Sleeper", Policy{Timeout: time.Second, BaseDelay: 990 * time.Millisecond}, 0, 0, 15 * time.Millisecond,
			[]time.Duration{0}, "Policy.Timeout passed"},
		{"ctx deadline, late Sleeper", Policy{BaseDelay: 990 * time.Millisecond}, time.Second, 0, 15 * time.Millisecond,
			[]time.Duration{0}, "ctx's deadline passed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			start := ft.Now()
			p := tt.p
			p.MaxDelay, p.Jitter, p.Budget, p.Clock = p.BaseDelay, NoJitter, NewBudget(0, 5), ft
			p.OnRetry = func(context.Context, int, error, time.Duration) { ft.advance(tt.onRetry) }
			p.Sleeper = SleeperFunc(func(ctx context.Context, d time.Duration) error { return ft.Sleep(ctx, d+tt.late) })
			var at []time.Duration
			err := Do(ft.deadlineCtx(t, tt.ctxTimeout), func(ctx context.Context) error {
				at = append(at, ft.Now().Sub(start))
				return errBoom
			}, p)
			if !slices.Equal(at, tt.calls) {
				t.Errorf("fn called at %v; want %v", at, tt.calls)
			}
			re := wantExhausted(t, err, DeadlineReached, len(tt.calls))
			if re.Cause != context.DeadlineExceeded || !strings.Contains(err.Error(), "(deadline reached: "+tt.limit+"): boom") {
				t.Errorf("Do() = %q with Cause %v; want it to say %q, Cause context.DeadlineExceeded", err, re.Cause, tt.limit)
			}
			// the tokens of the retries made are spent; the last one is given back
			if got, want := p.Budget.Tokens(), float64(5-len(tt.calls)+1); got != want {
				t.Errorf("Budget.Tokens() = %v; want %v", got, want)
			}
		})
	}
}

// A wait that ends just before ctx's deadline races its timer on the default Sleeper;
// whichever wins, Do ends DeadlineReached.
func TestDeadlineRaceEndsDeadlineReached(t *testing.T) {
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
}

// Without a deadline only MaxDelay limits a wait or a hint: the longest Duration, which
// ParseRetryAfter gives for a huge number of seconds, is not time left.
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
			wantExhausted(t, err, MaxAttemptsReached, 2)
			if !slices.Equal(ft.Waits(), []time.Duration{math.MaxInt64}) {
				t.Errorf("Do() waits = %v; want one of %v", ft.Waits(), time.Duration(math.MaxInt64))
			}
		})
	}
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
	const years = 150 * 365 * 24 * time.Hour
	for attempts := range 2 {
		ft := newFakeTime()
		ctx := ft.deadlineCtx(t, time.Hour)
		jump := func() { ft.advance(years); ft.advance(years) } // 300 years: more than a Duration holds
		if attempts == 0 {
			jump()
		}
		err := Do(ctx, func(context.Context) error { jump(); return errBoom }, ft.with(Policy{}))
		wantExhausted(t, err, DeadlineReached, attempts)
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

// Without a deadline or OnRetry, Do reads the Clock at its start, and again only for
// Elapsed when it gives up: a call that succeeds pays one reading, however many retries.
func TestClockReads(t *testing.T) {
	sleepFails := SleeperFunc(func(context.Context, time.Duration) error { return errBoom })
	tests := []struct {
		name     string
		failures int
		err      error // fn's; nil for boom
		p        Policy
		most     int
	}{
		{"success", 0, nil, Policy{}, 1},
		{"3 retries, then success", 3, nil, Policy{}, 1},
		{"MaxAttemptsReached", 10, nil, Policy{MaxAttempts: 3}, 2},
		{"refused", 10, nil, Policy{IsRetryable: func(error) bool { return false }}, 2},
		{"Permanent", 10, Permanent(errBoom), Policy{}, 2},
		{"HintTooLong", 10, After(time.Hour, errBoom), Policy{}, 2},
		{"BudgetExhausted", 10, nil, Policy{Budget: NewBudget(0, 1)}, 2},
		{"SleepFailed", 10, nil, Policy{Sleeper: sleepFails}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			reads := 0
			p := ft.with(tt.p)
			p.Clock = ClockFunc(func() time.Time { reads++; return ft.Now() })
			if tt.p.Sleeper != nil {
				p.Sleeper = tt.p.Sleeper
			}
			Do(context.Background(), (&flaky{n: tt.failures, err: cmp.Or(tt.err, errBoom)}).call, p)
			if reads > tt.most {
				t.Errorf("Clock reads = %d; want at most %d", reads, tt.most)
			}
		})
	}
}

// With Timeout or AttemptTimeout set, fn's ctx is cancelled when fn returns, before Do
// asks IsRetryable.
func TestFnCtxEndsWhenFnReturns(t *testing.T) {
	for _, p := range []Policy{{Timeout: time.Hour}, {AttemptTimeout: time.Hour}} {
		var fnCtx context.Context
		var seen error
		p.IsRetryable = func(error) bool { seen = fnCtx.Err(); return false }
		Do(context.Background(), func(ctx context.Context) error { fnCtx = ctx; return errBoom }, p)
		if seen != context.Canceled {
			t.Errorf("Do() with Timeout %v, AttemptTimeout %v: fn's ctx.Err() after fn returned = %v; want context.Canceled",
				p.Timeout, p.AttemptTimeout, seen)
		}
	}
}

// fn's ctx ends, in real time, when the Clock's time left before the Timeout runs out, or
// AttemptTimeout in; ctx's deadline on a Clock that runs ahead does not shorten it.
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
			Do(ctx, func(ctx context.Context) error {
				if dl, ok := ctx.Deadline(); ok {
					lasts = append(lasts, time.Until(dl))
				}
				ft.advance(tt.callCost)
				return errBoom
			}, ft.with(tt.p))
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

// TestRealTimer runs the default Sleeper on the real clock, briefly. CI
// runs it under both timer implementations (GODEBUG asynctimerchan=0 and 1).
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
