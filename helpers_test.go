package retry

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeTime is a Clock and a Sleeper on virtual time: Sleep records the
// wait and moves Now forward by it at once.
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
	f.advance(d)
	f.mu.Lock()
	defer f.mu.Unlock()
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

// deadlineCtx returns a context that ends d after f's now, or
// context.Background if d is 0. The test cancels it when it ends.
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

// hintErr is an error that asks for a wait through RetryAfter.
type hintErr time.Duration

func (h hintErr) Error() string             { return "slow down" }
func (h hintErr) RetryAfter() time.Duration { return time.Duration(h) }

var errBoom = errors.New("boom")

// constRand returns a Rand that always answers u.
func constRand(u float64) func() float64 { return func() float64 { return u } }
