package retry_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quietwire/retry"
)

// errOpen is the error of a call that the breaker refused.
var errOpen = errors.New("circuit breaker is open")

// breaker opens after threshold failures in a row and refuses calls for
// cooldown. It has the two-step form of the breakers in use, such as
// gobreaker's TwoStepCircuitBreaker: Allow asks to make a call and, if
// the call may go ahead, returns done, which reports how it went.
type breaker struct {
	threshold int
	cooldown  time.Duration
	now       func() time.Time

	mu        sync.Mutex
	failures  int
	openUntil time.Time
}

func (b *breaker) Allow() (done func(success bool), err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.now().Before(b.openUntil) {
		return nil, errOpen
	}
	return func(success bool) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch b.failures++; {
		case success:
			b.failures = 0
		case b.failures >= b.threshold:
			b.failures, b.openUntil = 0, b.now().Add(b.cooldown)
		}
	}, nil
}

// callThroughBreaker makes one retried call through b. The breaker sits
// outside Do and counts each Do once, whatever its attempts: one Do cannot
// trip the breaker alone, and an open breaker costs no attempt and no wait.
func callThroughBreaker(ctx context.Context, b *breaker, p retry.Policy, fn func(context.Context) error) error {
	done, err := b.Allow()
	if err != nil {
		return err
	}
	err = retry.Do(ctx, fn, p)
	done(!dependencyFailed(err))
	return err
}

// dependencyFailed reports whether err says that the dependency is
// unhealthy: Do retried, and the failures went on until it gave up, or
// the call ran out of time (DeadlineReached), whether Do saw the deadline
// coming or an attempt hung until ctx's deadline, as gRPC clients count
// DEADLINE_EXCEEDED. The caller's own cancellation (Canceled) says nothing
// about the dependency, and neither does a request that it rightly refused
// (a Permanent error, such as a 4xx): the breaker counts both as a
// success, as gobreaker's IsSuccessful lets you choose.
func dependencyFailed(err error) bool {
	re, gaveUp := err.(*retry.RetryExhausted) // Do returns it unwrapped
	return gaveUp && re.Reason != retry.Canceled
}

// A circuit breaker around Do: it counts Do's outcomes, not its attempts,
// ignores cancellations and refused requests, and once open fails calls
// fast until its cooldown is over.
func Example_breaker() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // fake time keeps the example instant
	clock := retry.ClockFunc(func() time.Time { return now })
	sleep := retry.SleeperFunc(func(ctx context.Context, d time.Duration) error { now = now.Add(d); return ctx.Err() })
	b := &breaker{threshold: 2, cooldown: time.Minute, now: clock}
	p := retry.Policy{MaxAttempts: 3, Jitter: retry.NoJitter, Clock: clock, Sleeper: sleep}
	errUnavailable := errors.New("service unavailable")

	attempts := 0
	down := func(ctx context.Context) error { attempts++; return errUnavailable }
	notFound := func(ctx context.Context) error { attempts++; return retry.Permanent(errors.New("404 not found")) }
	up := func(ctx context.Context) error { attempts++; return nil }
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	for i, call := range []struct {
		ctx context.Context
		fn  func(context.Context) error
	}{
		{context.Background(), down},     // Do gives up: one failure
		{context.Background(), notFound}, // a refused request: a success
		{cancelled, down},                // the caller gave up: a success
		{context.Background(), down},     // one failure
		{context.Background(), down},     // two in a row: the breaker opens
		{context.Background(), down},     // refused at once: no attempt, no wait
		{context.Background(), up},       // a minute later: allowed again
	} {
		if i == 6 {
			now = now.Add(time.Minute)
		}
		attempts = 0
		err := callThroughBreaker(call.ctx, b, p, call.fn)
		fmt.Printf("call %d: %d attempts: %v\n", i+1, attempts, err)
	}
	// Output:
	// call 1: 3 attempts: retry: gave up after 3 attempts in 300ms (max attempts reached): service unavailable
	// call 2: 1 attempts: 404 not found
	// call 3: 0 attempts: context canceled
	// call 4: 3 attempts: retry: gave up after 3 attempts in 300ms (max attempts reached): service unavailable
	// call 5: 3 attempts: retry: gave up after 3 attempts in 300ms (max attempts reached): service unavailable
	// call 6: 0 attempts: circuit breaker is open
	// call 7: 1 attempts: <nil>
}
