package retry

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
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
