package retry

// The code between the markers is the README's "From a blank screen" block, byte for byte
// (TestREADMEGoBlocks checks it); the tests run it on fake time, or a real timer where it matters.

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

// BEGIN blank-screen

// retrier holds the knobs of a retry loop. It is a plain value that
// concurrent calls may share: each call keeps its state in local variables.
// In production now is time.Now, after is time.After and random is
// rand.Float64; tests pass fakes.
type retrier struct {
	attempts            int           // calls of fn, the first included
	base, cap, deadline time.Duration // deadline bounds the whole call; 0 means none
	retryable           func(error) bool
	now                 func() time.Time
	after               func(time.Duration) <-chan time.Time
	random              func() float64 // uniform in [0, 1)
}

// do calls fn until it succeeds, fails for good, or runs out of attempts,
// time or ctx. It returns nil, fn's error as is, or a *retryError.
func (r retrier) do(ctx context.Context, fn func(context.Context) error) error {
	// start is read before the first call; wait is the previous wait, base before the first.
	start, wait := r.now(), r.base
	for n := 1; ; n++ { // n counts the calls of fn
		err := fn(ctx)
		switch {
		case err == nil:
			return nil
		case !r.retryable(err):
			return err // as fn returned it
		case n >= r.attempts:
			return &retryError{Attempts: n, Elapsed: r.now().Sub(start), Last: err}
		}
		wait = min(r.cap, uniform(r.base, 3*wait, r.random())) // decorrelated jitter
		// Full jitter instead, the fewest writes under contention (2ⁿ⁻¹ in float64 cannot overflow):
		// wait = uniform(0, time.Duration(min(float64(r.cap), float64(r.base)*math.Exp2(float64(n-1)))), r.random())
		if r.deadline > 0 && r.now().Sub(start)+wait >= r.deadline {
			return &retryError{Attempts: n, Elapsed: r.now().Sub(start), Last: err}
		}
		select {
		case <-r.after(wait):
		case <-ctx.Done():
			return &retryError{Attempts: n, Elapsed: r.now().Sub(start), Last: err}
		}
	}
}

// uniform returns a duration in [a, b]: a at u = 0, b at u = 1.
func uniform(a, b time.Duration, u float64) time.Duration { return a + time.Duration(u*float64(b-a)) }

// retryError says that do gave up: out of attempts, out of time, or ctx is done.
type retryError struct {
	Attempts int           // calls of fn
	Elapsed  time.Duration // from just before the first call until do gave up
	Last     error         // the last error fn returned
}

func (e *retryError) Error() string { return fmt.Sprintf("retry: %d attempts: %v", e.Attempts, e.Last) }

func (e *retryError) Unwrap() error { return e.Last }

// END blank-screen

// blankClock is fake time for the block: After records the wait, moves now by it and returns
// a ready channel. Start it at time.Unix(0, 0), which has no monotonic reading.
type blankClock struct {
	now   time.Time
	waits []time.Duration
	ends  []time.Duration // when each wait ended, from the start
}

func (c *blankClock) Now() time.Time { return c.now }

func (c *blankClock) After(d time.Duration) <-chan time.Time {
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	c.ends = append(c.ends, c.now.Sub(time.Unix(0, 0)))
	ready := make(chan time.Time, 1)
	ready <- c.now
	return ready
}

var errBlankFatal = errors.New("bad request")

func blankRetryable(err error) bool { return !errors.Is(err, errBlankFatal) }

// blankRetrier returns a retrier on fake time c with a seeded random.
func blankRetrier(c *blankClock) retrier {
	return retrier{
		attempts:  5,
		base:      10 * time.Millisecond,
		cap:       time.Second,
		retryable: blankRetryable,
		now:       c.Now,
		after:     c.After,
		random:    seqRand(1),
	}
}

// blankFn returns an fn that takes call on c, returns errs[i] on call i+1 and nil after.
func blankFn(c *blankClock, call time.Duration, errs ...error) (fn func(context.Context) error, calls *int) {
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

// blankErrs returns n distinct errors, one per call.
func blankErrs(n int) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = fmt.Errorf("connection refused (call %d)", i+1)
	}
	return errs
}

// blankGaveUp checks that err is a *retryError after attempts calls, reaching last, and returns it.
func blankGaveUp(t *testing.T, err error, attempts int, last error) *retryError {
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

func TestBlankFirstTry(t *testing.T) {
	clock := &blankClock{now: time.Unix(0, 0)}
	r := blankRetrier(clock)
	r.random = func() float64 { t.Error("do() drew a random number without a failure"); return 0 }
	fn, calls := blankFn(clock, 0)
	if err := r.do(context.Background(), fn); err != nil {
		t.Errorf("do() = %v; want nil", err)
	}
	if *calls != 1 || len(clock.waits) != 0 {
		t.Errorf("do() calls = %d, waits = %v; want 1 call and no wait", *calls, clock.waits)
	}
}

func TestBlankSuccessAfterFailures(t *testing.T) {
	clock := &blankClock{now: time.Unix(0, 0)}
	r := blankRetrier(clock)
	r.cap = 40 * time.Millisecond
	fn, calls := blankFn(clock, time.Millisecond, blankErrs(3)...)
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

func TestBlankNonRetryableShortCircuits(t *testing.T) {
	clock := &blankClock{now: time.Unix(0, 0)}
	fatal := fmt.Errorf("get /users/7: %w", errBlankFatal)
	fn, calls := blankFn(clock, 0, fatal)
	if err := blankRetrier(clock).do(context.Background(), fn); err != fatal {
		t.Errorf("do() = %v (%T); want fn's own error, %v", err, err, fatal)
	}
	if *calls != 1 || len(clock.waits) != 0 {
		t.Errorf("do() calls = %d, waits = %v; want 1 call and no wait", *calls, clock.waits)
	}
}

func TestBlankExhaustionWrapsLastError(t *testing.T) {
	clock := &blankClock{now: time.Unix(0, 0)}
	r := blankRetrier(clock) // deadline 0: none
	r.attempts, r.cap = 3, r.base
	errs := blankErrs(5)
	fn, calls := blankFn(clock, 0, errs...)
	re := blankGaveUp(t, r.do(context.Background(), fn), 3, errs[2])
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
func TestBlankDeadlineRespected(t *testing.T) {
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
			clock := &blankClock{now: time.Unix(0, 0)}
			r := blankRetrier(clock)
			r.attempts, r.base, r.cap, r.deadline = 10, time.Second, time.Second, tt.deadline
			errs := blankErrs(10)
			fn, calls := blankFn(clock, 100*time.Millisecond, errs...)
			re := blankGaveUp(t, r.do(context.Background(), fn), tt.wantCalls, errs[tt.wantCalls-1])
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
func TestBlankDecorrelatedJitter(t *testing.T) {
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
		clock := &blankClock{now: time.Unix(0, 0)}
		r := blankRetrier(clock)
		r.base, r.cap, r.random = base, maxWait, func() float64 { return tt.u }
		fn, _ := blankFn(clock, 0, blankErrs(5)...)
		r.do(context.Background(), fn)
		if !slices.Equal(clock.waits, tt.want) {
			t.Errorf("do() waits at u = %v: %v; want %v", tt.u, clock.waits, tt.want)
		}
		prev := base
		for i, got := range clock.waits {
			if want := DecorrelatedJitter(i, base, maxWait, prev, tt.u); got != want {
				t.Errorf("do() wait %d at u = %v: %v; DecorrelatedJitter gives %v", i+1, tt.u, got, want)
			}
			prev = got
		}
	}
}

// The block's full-jitter comment, u·min(cap, base·2ⁿ⁻¹) after call n, does not overflow and
// gives FullJitter's waits (whose n counts retries).
func TestBlankFullJitter(t *testing.T) {
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
			got := uniform(0, time.Duration(min(float64(r.cap), float64(r.base)*math.Exp2(float64(n-1)))), r.random())
			if got != tt.want[i] {
				t.Errorf("full jitter after call %d at u = %v: %v; want %v", n, tt.u, got, tt.want[i])
			}
			if want := FullJitter(n-1, base, maxWait, 0, tt.u); got != want {
				t.Errorf("full jitter after call %d at u = %v: %v; FullJitter gives %v", n, tt.u, got, want)
			}
		}
	}
}

// On the production time.Now, time.After and rand.Float64, a wait of an hour ends when ctx
// does, 20ms in, and no call follows.
func TestBlankDoneCtxEndsTheWait(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	r := retrier{
		attempts: 5, base: time.Hour, cap: time.Hour,
		retryable: blankRetryable, now: time.Now, after: time.After, random: rand.Float64,
	}
	last := errors.New("connection refused")
	fn, calls := blankFn(&blankClock{}, 0, last, last)
	begin := time.Now()
	err := r.do(ctx, fn)
	took := time.Since(begin)
	re := blankGaveUp(t, err, 1, last)
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

// A ctx that ends during a call ends the retries before the wait, whatever the wait.
func TestBlankCtxDoneDuringCall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	clock := &blankClock{now: time.Unix(0, 0)}
	r := blankRetrier(clock)
	r.after = func(time.Duration) <-chan time.Time { return nil } // a wait that never ends
	last := errors.New("connection refused")
	fn, calls := blankFn(clock, 0, last, last)
	err := r.do(ctx, func(ctx context.Context) error { cancel(); return fn(ctx) }) // the caller gives up during the call
	blankGaveUp(t, err, 1, last)
	if *calls != 1 {
		t.Errorf("do() calls = %d; want 1", *calls)
	}
}
