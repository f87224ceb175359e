package retry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Defaults that a zero field of Policy stands for.
const (
	// DefaultMaxAttempts is the number of calls of fn, the first included,
	// that a Policy with MaxAttempts 0 allows.
	DefaultMaxAttempts = 5
	// DefaultBaseDelay is the BaseDelay of a Policy with BaseDelay 0 and a
	// MaxDelay of 0 or at least 300ms: the scale of the waits, and the least
	// wait of the default jitter, whose first wait lies in [100ms, 300ms).
	DefaultBaseDelay = 100 * time.Millisecond
	// DefaultMaxDelay is the longest single wait of a Policy with MaxDelay 0
	// and a BaseDelay of at most 10s.
	DefaultMaxDelay = 30 * time.Second
)

// Policy says how often Do calls fn, how long it waits in between and
// which errors it retries.
//
// A Policy is a plain value with no hidden state: all that changes during a
// call lives inside Do, so one Policy may be shared by any number of
// concurrent calls, provided its functions and interfaces are safe for
// concurrent use too. Its hooks, OnRetry and OnDone, receive the ctx of
// the call they report on, so a shared Policy can still log and trace
// per request. The zero Policy is valid: 5 attempts, waits of at least
// 100ms (the first under 300ms) capped at 30s with decorrelated jitter, no
// Timeout, no AttemptTimeout, and every error retried except those marked
// with Permanent.
type Policy struct {
	// MaxAttempts is the number of calls of fn in all, the first included:
	// 1 means no retries. 0 means DefaultMaxAttempts. For no limit but
	// time, set math.MaxInt with a Timeout or a ctx deadline.
	MaxAttempts int

	// BaseDelay is the scale of the waits: the first one, and the least
	// one of DecorrelatedJitter. 0 means DefaultBaseDelay, or MaxDelay/3 if
	// that is smaller, so that setting MaxDelay alone keeps the ratio that
	// spreads a fleet.
	BaseDelay time.Duration

	// MaxDelay caps every single wait: a hint that asks for longer ends the
	// retries (HintTooLong). 0 means
	// DefaultMaxDelay, or 3×BaseDelay if that is larger (saturating at the
	// longest Duration), so that setting BaseDelay alone is never invalid.
	// Set together with BaseDelay, it must not be below it. Below
	// 3×BaseDelay, DecorrelatedJitter puts part of a fleet that failed
	// together on the cap for its first wait, all in one tick.
	MaxDelay time.Duration

	// Timeout bounds the whole call of Do, attempts and waits included,
	// from the moment Do is called, as ctx's deadline does (see Do). 0
	// means none.
	Timeout time.Duration

	// AttemptTimeout bounds each call of fn: its ctx ends AttemptTimeout
	// after the call began, or earlier at a deadline. An attempt that runs
	// out of time is retried like any other failure. 0 means none.
	AttemptTimeout time.Duration

	// Jitter chooses each wait. nil means DecorrelatedJitter.
	// Do clamps what it returns to [0, MaxDelay].
	Jitter Jitter

	// IsRetryable reports whether an error returned by fn is worth another
	// attempt. nil means every error: a timeout of the attempt itself
	// (http.Client.Timeout, a context.WithTimeout inside fn,
	// AttemptTimeout) is worth another while the caller still waits. Do
	// does not ask it about an error marked with Permanent, nor once ctx
	// is done or a deadline has passed.
	IsRetryable func(error) bool

	// OnRetry, if not nil, is called before each wait with the ctx that Do
	// was given, the number of the attempt that failed (1 for the first
	// call of fn), its error, and the wait that was chosen. The wait counts
	// from the moment it was chosen, so time spent in OnRetry shortens the
	// sleep that follows. It is the place for a DEBUG log line or a trace
	// event per retry, with the request's logger and trace taken from ctx.
	OnRetry func(ctx context.Context, attempt int, err error, wait time.Duration)

	// OnDone, if not nil, is called exactly once by every Do or DoValue
	// call whose arguments and Policy are valid, just before it returns,
	// with the ctx that Do was given, the number of calls of fn (0 when
	// ctx was done before the first), the time since Do was called
	// measured on Clock (0 when fn was never called), and the error that
	// Do returns (nil on success). It is the place to count outcomes and
	// record histograms per call site. It is not called when a panic in
	// fn, IsRetryable or OnRetry unwinds Do; a panic in OnDone reaches the
	// caller.
	OnDone func(ctx context.Context, attempts int, elapsed time.Duration, err error)

	// Clock tells the time for Timeout, for ctx's deadline and for
	// RetryExhausted.Elapsed. nil means the real clock.
	Clock Clock

	// Sleeper waits between attempts. nil means a timer that ends early
	// when ctx is done.
	Sleeper Sleeper

	// Budget, if not nil, caps retries at a share of calls across every
	// Policy that holds the same Budget. nil means no budget.
	Budget *Budget

	// Rand returns a uniform random number in [0, 1) for each wait.
	// nil means Float64 from math/rand/v2, which is safe for concurrent
	// use; a Rand shared by concurrent calls must be safe too. A value
	// outside [0, 1], or NaN, is clamped into [0, 1].
	Rand func() float64
}

// ErrInvalidPolicy is wrapped by the error that Policy.Validate and Do
// return for a Policy with a field out of range. The message names the field.
var ErrInvalidPolicy = errors.New("retry: invalid policy")

// Validate returns nil if p can be used, or an error that wraps
// ErrInvalidPolicy and names the first field out of range, in the order
// Policy declares them: a negative MaxAttempts, BaseDelay, MaxDelay,
// Timeout or AttemptTimeout, a Clock or Sleeper that is a nil ClockFunc or
// SleeperFunc, or a Budget that NewBudget rejected. A MaxDelay set below a
// BaseDelay that is set too is checked last. Do calls Validate itself.
func (p Policy) Validate() error {
	return p.prepare()
}

// prepare fills in p's defaults, then validates it. A zero delay derives
// from the other one, keeping MaxDelay at least 3×BaseDelay, so that
// DecorrelatedJitter spreads the first waits of a fleet over
// [BaseDelay, 3×BaseDelay) and does not put part of it on the cap at once.
func (p *Policy) prepare() error {
	if p.MaxAttempts == 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.BaseDelay == 0 {
		p.BaseDelay = DefaultBaseDelay
		if p.MaxDelay > 0 {
			p.BaseDelay = min(DefaultBaseDelay, p.MaxDelay/3)
		}
	}
	if p.MaxDelay == 0 {
		p.MaxDelay = max(DefaultMaxDelay, 3*p.BaseDelay)
		if p.BaseDelay > math.MaxInt64/3 {
			p.MaxDelay = math.MaxInt64 // 3×BaseDelay saturates
		}
	}
	if p.Jitter == nil {
		p.Jitter = DecorrelatedJitter
	}
	if p.Rand == nil {
		p.Rand = rand.Float64
	}
	clock, isClockFunc := p.Clock.(ClockFunc)
	if p.Clock == nil {
		p.Clock = ClockFunc(time.Now)
	}
	sleeper, isSleeperFunc := p.Sleeper.(SleeperFunc)
	switch {
	case p.MaxAttempts < 0:
		return invalid("MaxAttempts is %d; want 0 (meaning %d) or more", p.MaxAttempts, DefaultMaxAttempts)
	case p.BaseDelay < 0:
		return invalid("BaseDelay is %v; want 0 (meaning %v) or more", p.BaseDelay, DefaultBaseDelay)
	case p.MaxDelay < 0:
		return invalid("MaxDelay is %v; want 0 (meaning %v) or more", p.MaxDelay, DefaultMaxDelay)
	case p.Timeout < 0:
		return invalid("Timeout is %v; want 0 (meaning none) or more", p.Timeout)
	case p.AttemptTimeout < 0:
		return invalid("AttemptTimeout is %v; want 0 (meaning none) or more", p.AttemptTimeout)
	case isClockFunc && clock == nil:
		return invalid("Clock is a nil ClockFunc; want a function, or a nil Clock for the real clock")
	case isSleeperFunc && sleeper == nil:
		return invalid("Sleeper is a nil SleeperFunc; want a function, or a nil Sleeper for the real timer")
	case p.Budget != nil && p.Budget.invalid() != nil:
		return p.Budget.invalid()
	case p.MaxDelay < p.BaseDelay: // a derived delay never contradicts the other: only two set values can
		return invalid("MaxDelay %v is below BaseDelay %v", p.MaxDelay, p.BaseDelay)
	}
	return nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidPolicy}, args...)...)
}

// Clock tells the time. Do measures Policy.Timeout, ctx's deadline and
// RetryExhausted.Elapsed on it. ctx's deadline is set on the real clock, so
// a fake Clock for tests must start at time.Now(), or a ctx deadline looks
// nearer or farther than it is. If the Clock goes backwards, the time left
// before a deadline does not grow again, and RetryExhausted.Elapsed is
// never negative; if it jumps forward past a deadline, Do gives up with
// DeadlineReached at the next failure or the end of the next wait.
type Clock interface {
	Now() time.Time
}

// Sleeper waits between attempts.
//
// Sleep waits for d, or until ctx is done, whichever comes first. It returns
// nil after a full wait and ctx's error when ctx ended it. Any other error
// ends the retries (see SleepFailed). A Sleeper that returns early makes the
// next attempt come early: Do trusts it, and MaxAttempts still bounds the
// number of calls. One that returns late, past a deadline, ends the
// retries with DeadlineReached instead of an attempt.
type Sleeper interface {
	Sleep(ctx context.Context, d time.Duration) error
}

// ClockFunc adapts an ordinary function to the Clock interface:
// ClockFunc(f).Now() calls f().
type ClockFunc func() time.Time

// Now returns f().
func (f ClockFunc) Now() time.Time { return f() }

// SleeperFunc adapts an ordinary function to the Sleeper interface:
// SleeperFunc(f).Sleep(ctx, d) calls f(ctx, d).
type SleeperFunc func(ctx context.Context, d time.Duration) error

// Sleep returns f(ctx, d).
func (f SleeperFunc) Sleep(ctx context.Context, d time.Duration) error { return f(ctx, d) }

var (
	_ Clock   = ClockFunc(nil)
	_ Sleeper = SleeperFunc(nil)
)
