package interview

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"time"
)

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
	// start is read before the first call; wait is the last wait, base at first; err, fn's last error
	start, wait := r.now(), r.base
	var err error
	for n := 1; ; n++ { // n counts the calls of fn, this one included
		if ctx.Err() != nil { // a done ctx gives up before each call, the first included
			return &retryError{Attempts: n - 1, Elapsed: r.now().Sub(start), Last: cmp.Or(err, ctx.Err())}
		}
		err = fn(ctx)
		switch {
		case err == nil || !r.retryable(err):
			return err // nil, or fn's error as it returned it
		case n >= r.attempts:
			return &retryError{Attempts: n, Elapsed: r.now().Sub(start), Last: err}
		}
		wait = min(r.cap, uniform(r.base, 3*min(wait, math.MaxInt64/3), r.random())) // decorrelated jitter
		// Full jitter instead, the fewest writes under contention (2ⁿ⁻¹ in float64 cannot overflow):
		// wait = time.Duration(r.random() * min(float64(r.cap), float64(r.base)*math.Exp2(float64(n-1))))
		if r.deadline > 0 && wait >= r.deadline-r.now().Sub(start) { // not elapsed+wait, which can overflow
			return &retryError{Attempts: n, Elapsed: r.now().Sub(start), Last: err}
		}
		select { // if both are ready, select picks at random: the check before the call decides
		case <-r.after(wait):
		case <-ctx.Done():
		}
	}
}

// uniform returns a duration in [a, b] for u in [0, 1): a at u = 0, near b as u nears 1.
func uniform(a, b time.Duration, u float64) time.Duration { return a + time.Duration(u*float64(b-a)) }

// retryError says that do gave up: out of attempts, out of time, or ctx is done.
type retryError struct {
	Attempts int           // calls of fn
	Elapsed  time.Duration // from just before the first call until do gave up
	Last     error         // the last error fn returned; ctx's if there was no call
}

func (e *retryError) Error() string { return fmt.Sprintf("retry: %d attempts: %v", e.Attempts, e.Last) }

func (e *retryError) Unwrap() error { return e.Last }
