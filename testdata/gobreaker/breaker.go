// Package breaker is the README's circuit breaker recipe, as the README
// shows it, wired into github.com/sony/gobreaker/v2. Its tests run it on
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
// returned says nothing about the dependency: fn was not called, the caller left
// (Canceled, or ctx's error from fn, even marked Permanent), or its Sleeper failed.
func breakerExcluded(err error) bool {
	re, gaveUp := err.(*retry.RetryExhausted) // Do returns it unwrapped
	return !gaveUp && errors.Is(err, context.Canceled) || gaveUp && (re.Attempts == 0 ||
		re.Reason == retry.Canceled || re.Reason == retry.SleepFailed)
}

// breakerSuccessful, for gobreaker's Settings.IsSuccessful, reports whether what Do
// returned, if not excluded, is a success: nil, or fn's error as it is but a timeout.
func breakerSuccessful(err error) bool {
	_, gaveUp := err.(*retry.RetryExhausted)
	// With gRPC, add status.Code(err) == codes.DeadlineExceeded, and failures of your own.
	return !gaveUp && err != errPanicked && !errors.Is(err, context.DeadlineExceeded)
}

// errPanicked is what the breaker is told of a call that panicked: a failure.
var errPanicked = errors.New("the call panicked")

// call makes one call of Do through cb, which it asks once and tells once,
// whatever happens: a half-open breaker that is never told waits for its probe
// forever. A panic is told as a failure, and goes on up.
func call(ctx context.Context, cb *gobreaker.TwoStepCircuitBreaker[any],
	fn func(context.Context) error, p retry.Policy) error {
	done, err := cb.Allow()
	if err != nil {
		return err // open, or half-open with its probe out: no attempt, no wait
	}
	err = errPanicked // until Do returns
	defer func() { done(err) }()
	err = retry.Do(ctx, fn, p)
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
