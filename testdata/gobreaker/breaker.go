// Package breaker is the README's circuit breaker recipe, the rule of its
// table wired into github.com/sony/gobreaker/v2. Its tests run it on
// synctest's fake clock, which gobreaker reads through time.Now.
package breaker

import (
	"context"
	"errors"
	"time"

	"github.com/quietwire/retry"
	"github.com/sony/gobreaker/v2"
)

// breakerExcluded, for gobreaker's Settings.IsExcluded, reports whether what Do
// returned says nothing about the dependency: fn was not called (errNotCalled), the
// caller left (Canceled, or ctx's error from fn, even marked Permanent), or its
// Sleeper failed.
func breakerExcluded(err error) bool {
	re, gaveUp := err.(*retry.RetryExhausted) // Do returns it unwrapped
	return err == errNotCalled || !gaveUp && errors.Is(err, context.Canceled) ||
		gaveUp && (re.Reason == retry.Canceled || re.Reason == retry.SleepFailed)
}

// breakerSuccessful, for gobreaker's Settings.IsSuccessful, reports whether what Do
// returned, if not excluded, is a success: nil, or fn's error as it is but a timeout.
func breakerSuccessful(err error) bool {
	_, gaveUp := err.(*retry.RetryExhausted)
	// With gRPC, add status.Code(err) == codes.DeadlineExceeded, and failures of your own.
	return !gaveUp && err != errPanicked && !errors.Is(err, context.DeadlineExceeded)
}

// What the breaker is told of a call that panicked (a failure), and of one that
// never called fn, whatever Do returned: a done ctx, an invalid Policy, a nil fn.
var (
	errPanicked  = errors.New("the call panicked")
	errNotCalled = errors.New("fn was not called")
)

// call makes one call of Do through cb, which it asks once and tells once,
// whatever happens: a half-open breaker that is never told waits for its probe
// forever. A panic is told as a failure, and goes on up.
func call(ctx context.Context, cb *gobreaker.TwoStepCircuitBreaker[any],
	fn func(context.Context) error, p retry.Policy) error {
	done, err := cb.Allow()
	if err != nil {
		return err // open, or half-open with its probe out: no attempt, no wait
	}
	told, ran := errPanicked, false // until Do returns; whether fn was called
	defer func() { done(told) }()
	counted := fn
	if fn != nil {
		counted = func(ctx context.Context) error { ran = true; return fn(ctx) }
	}
	err = retry.Do(ctx, counted, p)
	if told = err; !ran {
		told = errNotCalled
	}
	return err
}

// newBreaker opens after 2 failed calls in a row and lets one probe through a minute later.
func newBreaker() *gobreaker.TwoStepCircuitBreaker[any] {
	return gobreaker.NewTwoStepCircuitBreaker[any](gobreaker.Settings{
		Timeout:      time.Minute,
		ReadyToTrip:  func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= 2 },
		IsSuccessful: breakerSuccessful,
		IsExcluded:   breakerExcluded,
	})
}
