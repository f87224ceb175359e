// Package interview is the README's interview loop, the Go block of its
// section "From a blank screen: the interview", as a file a learner can open
// and run: a retry loop with a cap, decorrelated jitter, a deadline, a ctx and
// a predicate, in the standard library alone. interview_test.go runs it
// through the tests an interviewer asks for, on fake time: from the
// repository root, cd testdata/interview && go test -v .
//
// The code below the imports is the README's block, byte for byte
// (TestREADMEGoBlocks in the root package checks it).
package interview

import (
	"cmp"
	"context"
	"fmt"
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
	// start is read before the first call; wait is the previous wait, base before the first;
	// err is fn's last error.
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
		wait = min(r.cap, uniform(r.base, 3*wait, r.random())) // decorrelated jitter
		// Full jitter instead, the fewest writes under contention (2ⁿ⁻¹ in float64 cannot overflow):
		// wait = uniform(0, time.Duration(min(float64(r.cap), float64(r.base)*math.Exp2(float64(n-1)))), r.random())
		if r.deadline > 0 && r.now().Sub(start)+wait >= r.deadline {
			return &retryError{Attempts: n, Elapsed: r.now().Sub(start), Last: err}
		}
		select { // if both are ready, select picks at random: the check before the call decides
		case <-r.after(wait):
		case <-ctx.Done():
		}
	}
}

// uniform returns a duration in [a, b]: a at u = 0, b at u = 1.
func uniform(a, b time.Duration, u float64) time.Duration { return a + time.Duration(u*float64(b-a)) }

// retryError says that do gave up: out of attempts, out of time, or ctx is done.
type retryError struct {
	Attempts int           // calls of fn
	Elapsed  time.Duration // from just before the first call until do gave up
	Last     error         // the last error fn returned; ctx's if there was no call
}

func (e *retryError) Error() string { return fmt.Sprintf("retry: %d attempts: %v", e.Attempts, e.Last) }

func (e *retryError) Unwrap() error { return e.Last }
