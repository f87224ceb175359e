package interview

// interview.go is the README's interview block, byte for byte (TestREADMEGoBlocks in the root
// package checks it): a whole file, which builds where it is pasted. The tests run it on fake
// time, or a real timer where it matters: cd testdata/interview && go test -v .

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// fakeClock is fake time for the block: After records the wait, moves now by it and returns
// a ready channel. Start it at time.Unix(0, 0), which has no monotonic reading.
type fakeClock struct {
	now   time.Time
	waits []time.Duration
	ends  []time.Duration // when each wait ended, from the start
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	c.ends = append(c.ends, c.now.Sub(time.Unix(0, 0)))
	ready := make(chan time.Time, 1)
	ready <- c.now
	return ready
}

var errFatal = errors.New("bad request")

func isRetryable(err error) bool { return !errors.Is(err, errFatal) }

// seqRand returns a seeded Rand, for one goroutine at a time.
func seqRand(seed uint64) func() float64 { return rand.New(rand.NewPCG(seed, 0)).Float64 }

// newRetrier returns a retrier on fake time c with a seeded random.
func newRetrier(c *fakeClock) retrier {
	return retrier{
		attempts:  5,
		base:      10 * time.Millisecond,
		cap:       time.Second,
		retryable: isRetryable,
		now:       c.Now,
		after:     c.After,
		random:    seqRand(1),
	}
}

// fakeFn returns an fn that takes call on c, returns errs[i] on call i+1 and nil after.
func fakeFn(c *fakeClock, call time.Duration, errs ...error) (fn func(context.Context) error, calls *int) {
	calls = new(int)
	fn = func(context.Context) error {
		*calls++
		c.now = c.now.Add(call)
		if *calls <= len(errs) {
			return errs[*calls-1]
		}
		return nil
	}
	return fn, calls
}

// callErrs returns n distinct errors, one per call.
func callErrs(n int) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = fmt.Errorf("connection refused (call %d)", i+1)
	}
	return errs
}

// gaveUp checks that err is a *retryError after attempts calls, reaching last, and returns it.
func gaveUp(t *testing.T, err error, attempts int, last error) *retryError {
	t.Helper()
	var re *retryError
	if !errors.As(err, &re) {
		t.Fatalf("do() = %v (%T); want a *retryError", err, err)
	}
	if re.Attempts != attempts {
		t.Errorf("do() Attempts = %d; want %d", re.Attempts, attempts)
	}
	if re.Last != last || !errors.Is(err, last) {
		t.Errorf("do() Last = %v; want %v, reachable with errors.Is", re.Last, last)
	}
	if want := fmt.Sprintf("retry: %d attempts: %v", attempts, last); err.Error() != want {
		t.Errorf("do() = %q; want %q", err, want)
	}
	return re
}

// decorrelatedJitter is the formula of retry.DecorrelatedJitter's doc,
// min(maxDelay, base + u·(3·p − base)) where p = max(prev, base), summed in
// float64 as the library does, written apart from the block so that the
// module needs nothing but the standard library.
func decorrelatedJitter(base, maxDelay, prev time.Duration, u float64) time.Duration {
	p := max(prev, base)
	return min(maxDelay, time.Duration(float64(base)+u*float64(3*p-base)))
}

// fullJitter is the formula of retry.FullJitter's doc, u·min(base·2ⁿ, maxDelay)
// where n counts the retries made, with an integer shift where the block uses
// math.Exp2.
func fullJitter(n int, base, maxDelay time.Duration, u float64) time.Duration {
	d := maxDelay
	if n < 63 && base <= maxDelay>>n {
		d = base << n
	}
	return time.Duration(u * float64(d))
}

func TestFirstTry(t *testing.T) {
	clock := &fakeClock{now: time.Unix(0, 0)}
	r := newRetrier(clock)
	r.random = func() float64 { t.Error("do() drew a random number without a failure"); return 0 }
	fn, calls := fakeFn(clock, 0)
	if err := r.do(context.Background(), fn); err != nil {
		t.Errorf("do() = %v; want nil", err)
	}
	if *calls != 1 || len(clock.waits) != 0 {
		t.Errorf("do() calls = %d, waits = %v; want 1 call and no wait", *calls, clock.waits)
	}
}

func TestSuccessAfterFailures(t *testing.T) {
	clock := &fakeClock{now: time.Unix(0, 0)}
	r := newRetrier(clock)
	r.cap = 40 * time.Millisecond
	fn, calls := fakeFn(clock, time.Millisecond, callErrs(3)...)
	if err := r.do(context.Background(), fn); err != nil {
		t.Errorf("do() = %v; want nil", err)
	}
	if *calls != 4 {
		t.Errorf("do() calls = %d; want 4", *calls)
	}
	if len(clock.waits) != 3 {
		t.Errorf("do() waits = %v; want 3, one between each two calls", clock.waits)
	}
	for i, d := range clock.waits {
		if d < r.base || d > r.cap {
			t.Errorf("do() wait %d = %v; want it in [%v, %v]", i+1, d, r.base, r.cap)
		}
	}
}

func TestNonRetryableShortCircuits(t *testing.T) {
	clock := &fakeClock{now: time.Unix(0, 0)}
	fatal := fmt.Errorf("get /users/7: %w", errFatal)
	fn, calls := fakeFn(clock, 0, fatal)
	if err := newRetrier(clock).do(context.Background(), fn); err != fatal {
		t.Errorf("do() = %v (%T); want fn's own error, %v", err, err, fatal)
	}
	if *calls != 1 || len(clock.waits) != 0 {
		t.Errorf("do() calls = %d, waits = %v; want 1 call and no wait", *calls, clock.waits)
	}
}

func TestExhaustionWrapsLastError(t *testing.T) {
	clock := &fakeClock{now: time.Unix(0, 0)}
	r := newRetrier(clock) // deadline 0: none
	r.attempts, r.cap = 3, r.base
	errs := callErrs(5)
	fn, calls := fakeFn(clock, 0, errs...)
	re := gaveUp(t, r.do(context.Background(), fn), 3, errs[2])
	if *calls != 3 {
		t.Errorf("do() calls = %d; want 3", *calls)
	}
	if want := []time.Duration{r.base, r.base}; !slices.Equal(clock.waits, want) {
		t.Errorf("do() waits = %v; want %v: none after the last attempt", clock.waits, want)
	}
	if want := 2 * r.base; re.Elapsed != want {
		t.Errorf("do() Elapsed = %v; want %v", re.Elapsed, want)
	}
}

// Calls of 100ms and waits of 1s end at 0.1s, 1.2s, 2.3s and 3.4s; the fourth wait would end at 4.4s.
func TestDeadlineRespected(t *testing.T) {
	tests := []struct {
		name      string
		deadline  time.Duration
		wantCalls int
	}{
		{"the next wait would end after the deadline", 3500 * time.Millisecond, 4},
		{"the next wait would end at the deadline", 4400 * time.Millisecond, 4},
		{"a fifth call fits before the deadline", 4600 * time.Millisecond, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{now: time.Unix(0, 0)}
			r := newRetrier(clock)
			r.attempts, r.base, r.cap, r.deadline = 10, time.Second, time.Second, tt.deadline
			errs := callErrs(10)
			fn, calls := fakeFn(clock, 100*time.Millisecond, errs...)
			re := gaveUp(t, r.do(context.Background(), fn), tt.wantCalls, errs[tt.wantCalls-1])
			if *calls != tt.wantCalls {
				t.Errorf("do() calls = %d; want %d", *calls, tt.wantCalls)
			}
			if want := time.Duration(tt.wantCalls)*1100*time.Millisecond - time.Second; re.Elapsed != want {
				t.Errorf("do() Elapsed = %v; want %v", re.Elapsed, want)
			}
			if re.Elapsed >= tt.deadline {
				t.Errorf("do() Elapsed = %v; want it within the deadline, %v", re.Elapsed, tt.deadline)
			}
			for i, end := range clock.ends {
				if end >= tt.deadline {
					t.Errorf("do() wait %d ends at %v; want it to end before the deadline, %v", i+1, end, tt.deadline)
				}
			}
		})
	}
}

// The block's min(cap, uniform(base, 3·prev)), prev = base at first, gives DecorrelatedJitter's waits.
func TestDecorrelatedJitter(t *testing.T) {
	const base, maxWait = 10 * time.Millisecond, 100 * time.Millisecond
	tests := []struct {
		u    float64
		want []time.Duration
	}{
		{0, []time.Duration{base, base, base, base}},
		{0.5, []time.Duration{20 * time.Millisecond, 35 * time.Millisecond, 57500 * time.Microsecond, 91250 * time.Microsecond}},
		{1, []time.Duration{30 * time.Millisecond, 90 * time.Millisecond, maxWait, maxWait}},
	}
	for _, tt := range tests {
		clock := &fakeClock{now: time.Unix(0, 0)}
		r := newRetrier(clock)
		r.base, r.cap, r.random = base, maxWait, func() float64 { return tt.u }
		fn, _ := fakeFn(clock, 0, callErrs(5)...)
		r.do(context.Background(), fn)
		if !slices.Equal(clock.waits, tt.want) {
			t.Errorf("do() waits at u = %v: %v; want %v", tt.u, clock.waits, tt.want)
		}
		prev := base
		for i, got := range clock.waits {
			if want := decorrelatedJitter(base, maxWait, prev, tt.u); got != want {
				t.Errorf("do() wait %d at u = %v: %v; DecorrelatedJitter's formula gives %v", i+1, tt.u, got, want)
			}
			prev = got
		}
	}
}

// The block's full-jitter comment, u·min(cap, base·2ⁿ⁻¹) after call n, does not overflow and
// gives FullJitter's waits (whose n counts retries).
func TestFullJitter(t *testing.T) {
	const base, maxWait = 10 * time.Millisecond, 100 * time.Millisecond
	tests := []struct {
		u    float64
		want []time.Duration // after calls 1, 2, 3, 4, 5 and 1000
	}{
		{0, []time.Duration{0, 0, 0, 0, 0, 0}},
		{1, []time.Duration{base, 2 * base, 4 * base, 8 * base, maxWait, maxWait}},
	}
	for _, tt := range tests {
		r := retrier{base: base, cap: maxWait, random: func() float64 { return tt.u }}
		for i, n := range []int{1, 2, 3, 4, 5, 1000} {
			// the block's comment, as code
			got := time.Duration(r.random() * min(float64(r.cap), float64(r.base)*math.Exp2(float64(n-1))))
			if got != tt.want[i] {
				t.Errorf("full jitter after call %d at u = %v: %v; want %v", n, tt.u, got, tt.want[i])
			}
			if want := fullJitter(n-1, base, maxWait, tt.u); got != want {
				t.Errorf("full jitter after call %d at u = %v: %v; FullJitter's formula gives %v", n, tt.u, got, want)
			}
		}
	}
}

// With a cap of math.MaxInt64 (292 years: none) and a random near 1, the wait grows until 3·wait
// would overflow, 25 calls in, and then stays: each wait is in [base, cap] and at least the one
// before. With a deadline as long, the time spent plus the 25th wait would overflow: do gives up
// instead. Full jitter, at u near 1, stays near the cap.
func TestHugeCap(t *testing.T) {
	const base, maxWait = 10 * time.Millisecond, time.Duration(math.MaxInt64)
	for _, tt := range []struct {
		deadline  time.Duration
		wantWaits int
	}{
		{0, 44},
		{maxWait, 24},
	} {
		clock := &fakeClock{now: time.Unix(0, 0)}
		r := newRetrier(clock)
		r.attempts, r.base, r.cap, r.deadline = 45, base, maxWait, tt.deadline
		r.random = func() float64 { return math.Nextafter(1, 0) }
		fn, _ := fakeFn(clock, 0, callErrs(45)...)
		r.do(context.Background(), fn)
		if len(clock.waits) != tt.wantWaits {
			t.Errorf("do() with deadline %v: %d waits; want %d", tt.deadline, len(clock.waits), tt.wantWaits)
		}
		for i, d := range clock.waits {
			if d < base || (i > 0 && d < clock.waits[i-1]) {
				t.Errorf("do() wait %d = %v; want it in [%v, %v] and at least the one before", i+1, d, base, maxWait)
			}
			if tt.deadline > 0 && clock.ends[i] >= tt.deadline {
				t.Errorf("do() wait %d ends at %v; want it to end before the deadline, %v", i+1, clock.ends[i], tt.deadline)
			}
		}
	}
	// the block's full-jitter comment, as code, after call 45: u·float64(cap) is below 2⁶³ for u < 1
	r := retrier{base: base, cap: maxWait, random: func() float64 { return math.Nextafter(1, 0) }}
	if got := time.Duration(r.random() * min(float64(r.cap), float64(r.base)*math.Exp2(float64(45-1)))); got < maxWait/2 {
		t.Errorf("full jitter after call 45 = %v; want it near the cap, %v", got, maxWait)
	}
}

// On the production time.Now, time.After and rand.Float64, a wait of an hour ends when ctx
// does, 20ms in, and no call follows. The wait is an hour whatever rand.Float64 draws.
func TestDoneCtxEndsTheWait(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	r := retrier{
		attempts: 5, base: time.Hour, cap: time.Hour,
		retryable: isRetryable, now: time.Now, after: time.After, random: rand.Float64,
	}
	last := errors.New("connection refused")
	fn, calls := fakeFn(&fakeClock{}, 0, last, last)
	begin := time.Now()
	err := r.do(ctx, fn)
	took := time.Since(begin)
	re := gaveUp(t, err, 1, last)
	if *calls != 1 {
		t.Errorf("do() calls = %d; want 1", *calls)
	}
	if ctx.Err() == nil {
		t.Errorf("do() returned after %v, before ctx was done; want it to wait until then", took)
	}
	if took > 10*time.Second || re.Elapsed > took {
		t.Errorf("do() took %v, Elapsed = %v; want it to return when ctx ends, 20ms in", took, re.Elapsed)
	}
}

// A done ctx gives up before each call, the first included. The wait is ready at once, as a
// fake clock's is, so that the select after it has two ready cases and picks one at random:
// in 200 runs of each row, fn is never called once ctx is done.
func TestCtxDone(t *testing.T) {
	last := errors.New("connection refused")
	for _, tt := range []struct {
		name     string
		cancelIn int // the call of fn that cancels ctx; 0: ctx is done before do
		last     error
	}{
		{"before the first call", 0, context.Canceled},
		{"during the first call", 1, last},
		{"during the third call", 3, last},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for range 200 {
				ctx, cancel := context.WithCancel(context.Background())
				clock := &fakeClock{now: time.Unix(0, 0)}
				fn, calls := fakeFn(clock, 0, last, last, last, last)
				if tt.cancelIn == 0 {
					cancel()
				}
				err := newRetrier(clock).do(ctx, func(ctx context.Context) error {
					if *calls+1 == tt.cancelIn {
						cancel()
					}
					return fn(ctx)
				})
				if gaveUp(t, err, tt.cancelIn, tt.last); *calls != tt.cancelIn {
					t.Fatalf("do() calls = %d; want %d: none once ctx is done", *calls, tt.cancelIn)
				}
			}
		})
	}
}
