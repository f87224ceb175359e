package retry_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quietwire/retry"
)

// breakerExcluded, for gobreaker's Settings.IsExcluded, reports whether what Do
// returned says nothing about the dependency: fn was not called (ctx was done
// first), the caller left, or its Sleeper failed.
func breakerExcluded(err error) bool {
	re, gaveUp := err.(*retry.RetryExhausted) // Do returns it unwrapped
	return gaveUp && (re.Attempts == 0 || re.Reason == retry.Canceled || re.Reason == retry.SleepFailed)
}

// breakerSuccessful, for gobreaker's Settings.IsSuccessful, reports whether what Do
// returned, if not excluded, is a success: nil, or fn's error as it is but a timeout.
func breakerSuccessful(err error) bool {
	_, gaveUp := err.(*retry.RetryExhausted)
	// With gRPC, add status.Code(err) == codes.DeadlineExceeded; add your own failures,
	// such as a 5xx that IsRetryable refused for a call that is not idempotent.
	return !gaveUp && !errors.Is(err, context.DeadlineExceeded)
}

// Errors of the breaker, named as gobreaker names them.
var (
	errOpen            = errors.New("circuit breaker is open")
	errTooManyRequests = errors.New("too many requests")
)

// breaker is a circuit breaker of the shape of gobreaker v2's
// TwoStepCircuitBreaker, small enough to read. It opens after threshold
// failures in a row and refuses calls for cooldown; then, half-open, it
// lets one call through as a probe, whose success closes it and whose
// failure opens it again. isExcluded and isSuccessful sort the errors, as
// gobreaker's Settings do.
type breaker struct {
	threshold    int
	cooldown     time.Duration
	now          func() time.Time
	isExcluded   func(error) bool // neither a success nor a failure
	isSuccessful func(error) bool

	mu       sync.Mutex
	state    string    // "closed", "open" or "half-open"
	failures int       // in a row, while closed
	until    time.Time // the end of the cooldown, while open
	probing  bool      // whether the probe is out, while half-open
	gen      int       // changes of state: an outcome from an older state is ignored
}

// Allow returns done, to be told the error of the call it lets through, or
// errOpen or errTooManyRequests.
func (b *breaker) Allow() (done func(err error), err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == "open" && !b.now().Before(b.until) {
		b.set("half-open")
	}
	switch {
	case b.state == "open":
		return nil, errOpen
	case b.probing:
		return nil, errTooManyRequests
	}
	b.probing = b.state == "half-open"
	gen := b.gen
	return func(err error) { b.done(gen, err) }, nil
}

// done counts the outcome of a call that Allow let through in generation gen.
func (b *breaker) done(gen int, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case gen != b.gen: // the state changed since Allow: a stale outcome
	case b.isExcluded(err):
		b.probing = false // half-open still: the next call probes
	case b.isSuccessful(err):
		b.failures = 0
		b.set("closed")
	case b.state == "half-open" || b.failures+1 >= b.threshold:
		b.set("open")
	default:
		b.failures++
	}
}

// set moves the breaker to state, in a new generation.
func (b *breaker) set(state string) {
	if b.state != state {
		b.state, b.failures, b.probing, b.until = state, 0, false, b.now().Add(b.cooldown)
		b.gen++
	}
}

// callThroughBreaker makes one call of Do through b: it asks b once, and
// tells it once what Do returned, whatever the attempts. So one Do cannot
// trip the breaker alone, and an open breaker costs no attempt and no wait.
func callThroughBreaker(ctx context.Context, b *breaker, fn func(context.Context) error, p retry.Policy) error {
	done, err := b.Allow()
	if err != nil {
		return err // open, or half-open with its probe out: no attempt, no wait
	}
	err = retry.Do(ctx, fn, p)
	done(err) // always, or a half-open breaker waits for its probe forever
	return err
}

// A circuit breaker around Do counts each call of Do once, with the
// functions that the README puts in gobreaker's Settings: a caller who
// leaves between two failures does not keep the breaker from opening, and
// a probe whose caller leaves keeps it half-open for the next call.
func Example_breaker() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // fake time keeps the example instant
	clock := retry.ClockFunc(func() time.Time { return now })
	sleep := retry.SleeperFunc(func(ctx context.Context, d time.Duration) error { now = now.Add(d); return ctx.Err() })
	b := &breaker{threshold: 2, cooldown: time.Minute, now: clock.Now,
		isExcluded: breakerExcluded, isSuccessful: breakerSuccessful, state: "closed"}
	p := retry.Policy{MaxAttempts: 3, Jitter: retry.NoJitter, Clock: clock, Sleeper: sleep}
	errUnavailable := errors.New("service unavailable")

	attempts := 0
	var leave context.CancelFunc // the caller's, who leaves during the call
	down := func(context.Context) error { attempts++; return errUnavailable }
	leaves := func(context.Context) error { attempts++; leave(); return errUnavailable }
	notFound := func(context.Context) error { attempts++; return retry.Permanent(errors.New("404 not found")) }
	up := func(context.Context) error { attempts++; return nil }

	for i, fn := range []func(context.Context) error{
		notFound, // the dependency answered: a success
		down,     // Do gives up: one failure
		leaves,   // the caller left: neither
		down,     // two failures in a row: the breaker opens
		down,     // refused at once: no attempt, no wait
		leaves,   // a minute later, the probe's caller leaves: still half-open
		up,       // the next probe succeeds: closed
	} {
		if i == 5 {
			now = now.Add(time.Minute)
		}
		ctx, cancel := context.WithCancel(context.Background())
		attempts, leave = 0, cancel
		err := callThroughBreaker(ctx, b, fn, p)
		cancel()
		fmt.Printf("call %d: %d attempts: %v; %s\n", i+1, attempts, err, b.state)
	}
	// Output:
	// call 1: 1 attempts: 404 not found; closed
	// call 2: 3 attempts: retry: gave up after 3 attempts in 300ms (max attempts reached): service unavailable; closed
	// call 3: 1 attempts: retry: gave up after 1 attempt in 0s (canceled: context canceled): service unavailable; closed
	// call 4: 3 attempts: retry: gave up after 3 attempts in 300ms (max attempts reached): service unavailable; open
	// call 5: 0 attempts: circuit breaker is open; open
	// call 6: 1 attempts: retry: gave up after 1 attempt in 0s (canceled: context canceled): service unavailable; half-open
	// call 7: 1 attempts: <nil>; closed
}
