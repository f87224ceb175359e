package retry

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

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

// One Policy is shared by concurrent calls, each getting its own result.
func TestSharedPolicy(t *testing.T) {
	tests := []struct {
		name       string
		goroutines int
		failures   func(i int) int
	}{
		{"100 calls that give up", 100, func(int) int { return 10 }},
		{"10,000 calls, 0 to 3 failures each", 10_000, func(i int) int { return i % 4 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			var hooks, want atomic.Int64
			p := ft.with(Policy{MaxAttempts: 3, Jitter: FullJitter})
			p.OnRetry = func(context.Context, int, error, time.Duration) { hooks.Add(1) }
			var wg sync.WaitGroup
			bad := make(chan error, tt.goroutines)
			for i := range tt.goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					fn := &flaky{n: tt.failures(i), err: errBoom}
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
		})
	}
}

// ownDone is a Context whose Done channel package context did not make.
type ownDone struct {
	context.Context
	done chan struct{}
}

func (c ownDone) Done() <-chan struct{} { return c.done }

// Do starts no goroutine of its own; context.WithTimeout starts one for an
// attempt, ending with it, only for a ctx whose Done package context did not make.
func TestGoroutines(t *testing.T) {
	// started counts the goroutines alive that the calling goroutine started,
	// by their stacks' "created by ... in goroutine N" lines.
	started := func() int {
		buf := make([]byte, 64)
		id := strings.Fields(string(buf[:runtime.Stack(buf, false)]))[1] // "goroutine N [running]:"
		for buf = make([]byte, 1<<16); len(buf) == runtime.Stack(buf, true); {
			buf = make([]byte, 2*len(buf))
		}
		return strings.Count(string(buf), " in goroutine "+id+"\n")
	}
	// settled waits for the goroutines of attempts that ended to exit, and returns how many are left.
	settled := func() int {
		for i := 0; i < 10000 && started() > 0; i++ {
			runtime.Gosched()
		}
		return started()
	}
	own := func() context.Context { return ownDone{context.Background(), make(chan struct{})} }
	tests := []struct {
		name     string
		ctx      context.Context
		p        Policy
		failures int
		want     int
	}{
		{"retries on the real timer", context.Background(), Policy{MaxAttempts: 3, BaseDelay: time.Microsecond, MaxDelay: time.Microsecond}, 2, 0},
		{"no Timeout, own Done", own(), newFakeTime().with(Policy{}), 0, 0},
		{"Timeout, a ctx from package context", context.WithValue(context.Background(), ownDone{}, 1), newFakeTime().with(Policy{Timeout: time.Hour}), 0, 0},
		{"Timeout, own Done", own(), newFakeTime().with(Policy{Timeout: time.Hour}), 0, 1},
		{"AttemptTimeout, own Done", own(), newFakeTime().with(Policy{AttemptTimeout: time.Hour}), 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { // Do runs in this goroutine, which started nothing before
			var during []int
			p := tt.p
			p.OnRetry = func(context.Context, int, error, time.Duration) { during = append(during, started()) }
			fn := &flaky{n: tt.failures, err: errBoom}
			Do(tt.ctx, func(ctx context.Context) error { during = append(during, started()); return fn.call(ctx) }, p)
			for _, n := range during {
				if n != tt.want {
					t.Errorf("goroutines Do started, at each attempt and wait = %v; want %d throughout", during, tt.want)
					break
				}
			}
			if n := settled(); n != 0 {
				t.Errorf("goroutines Do started, after Do = %d; want 0", n)
			}
		})
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
	run("success-hooks", Policy{OnRetry: onRetryNop, OnDone: onDoneNop}, succeed)
	run("3-retries-no-wait-hooks", Policy{Jitter: zeroJitter, OnRetry: onRetryNop, OnDone: onDoneNop}, failThrice)
	run("3-retries-real-timer", Policy{BaseDelay: time.Microsecond, MaxDelay: time.Microsecond, Jitter: NoJitter}, failThrice)
	b.Run("DoValue-success", func(b *testing.B) {
		b.ReportAllocs()
		value := func(context.Context) (int, error) { return 42, nil }
		for range b.N {
			if v, err := DoValue(ctx, value, Policy{}); err != nil || v != 42 {
				b.Fatal(v, err)
			}
		}
	})
}
