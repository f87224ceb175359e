package retry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Defaults that a zero field of [Policy] stands for.
const (
	// DefaultMaxAttempts is the MaxAttempts of a Policy with MaxAttempts 0.
	DefaultMaxAttempts = 5
	// DefaultBaseDelay is the BaseDelay of a Policy with BaseDelay 0, unless
	// MaxDelay is set below 300ms.
	DefaultBaseDelay = 100 * time.Millisecond
	// DefaultMaxDelay is the MaxDelay of a Policy with MaxDelay 0, unless
	// BaseDelay is set above 10s.
	DefaultMaxDelay = 30 * time.Second
)

// Policy says how often [Do] calls fn, how long it waits in between and
// which errors it retries.
//
// A Policy is a plain value: all that changes during a call lives inside
// Do, so one Policy may be shared by concurrent calls, provided its
// functions are safe for concurrent use too. The zero Policy is valid: 5
// attempts, decorrelated waits from 100ms capped at 30s, no time limit,
// and every error retried except those marked with [Permanent].
type Policy struct {
	// MaxAttempts is the number of calls of fn, the first included: 1
	// means no retries. For no limit but time, set math.MaxInt with a
	// Timeout or a ctx deadline.
	MaxAttempts int
	// BaseDelay is the scale of the waits. 0 means DefaultBaseDelay, or
	// MaxDelay/3 if that is smaller.
	BaseDelay time.Duration
	// MaxDelay caps every wait; a hint that asks for longer ends the
	// retries. 0 means DefaultMaxDelay, or 3×BaseDelay if that is larger.
	// It must not be below BaseDelay.
	MaxDelay time.Duration
	// Timeout bounds the whole call of Do, attempts and waits included. 0
	// means none.
	Timeout time.Duration
	// AttemptTimeout bounds each call of fn: its ctx ends then, with
	// context.DeadlineExceeded, and the error fn returns is retried unless
	// IsRetryable refuses it. Retry it only if fn is idempotent or carries a
	// key that makes a repeat harmless. 0 means none.
	AttemptTimeout time.Duration
	// MinAttemptTime is the least time worth giving an attempt: with a
	// deadline, Do starts no wait, and honours no hint, after which less
	// would be left. It must be below a set Timeout. 0 means none.
	MinAttemptTime time.Duration
	// Jitter chooses each wait; Do clamps it to [0, MaxDelay]. nil means
	// DecorrelatedJitter.
	Jitter Jitter
	// IsRetryable reports whether an error of fn is worth another attempt.
	// Do says when it asks. nil means every error.
	IsRetryable func(error) bool
	// OnRetry, if not nil, is called before each wait with Do's ctx, the
	// number of the attempt that failed (the first is 1), its error and the
	// wait chosen. Time spent in it comes off the wait. The retry does not
	// follow if Do stops before the next call: count retries in OnDone.
	OnRetry func(ctx context.Context, attempt int, err error, wait time.Duration)
	// OnDone, if not nil, is called once by every call of Do with valid
	// arguments, just before it returns, with Do's ctx, the number of
	// calls of fn (0 if Do stopped before the first), the time since Do
	// was called on Clock (0 when fn was never called), and the error that
	// Do returns. It is not called when a panic unwinds Do.
	OnDone func(ctx context.Context, attempts int, elapsed time.Duration, err error)
	// Clock tells the time for the deadlines and for
	// RetryExhausted.Elapsed. nil means the real clock.
	Clock Clock
	// Sleeper waits between attempts. nil means a timer that ends early
	// when ctx is done.
	Sleeper Sleeper
	// Budget, if not nil, caps retries at a share of calls, across every
	// Policy that holds it.
	Budget *Budget
	// Rand returns a uniform random number in [0, 1) for each wait; Do
	// clamps it into [0, 1]. nil means math/rand/v2's Float64.
	Rand func() float64
}

// now reads Policy.Clock, or the real clock if there is none.
func (p *Policy) now() time.Time {
	if p.Clock == nil {
		return time.Now()
	}
	return p.Clock.Now()
}

// ErrInvalidPolicy is wrapped by the error that [Policy.Validate] and [Do]
// return for a Policy with a field out of range. The message names the field.
var ErrInvalidPolicy = errors.New("retry: invalid policy")

// Validate returns nil if p can be used, or an error that wraps
// [ErrInvalidPolicy] and names the first field out of range, in the order
// Policy declares them; a MaxDelay below BaseDelay is reported last.
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
	case p.MinAttemptTime < 0:
		return invalid("MinAttemptTime is %v; want 0 (meaning none) or more", p.MinAttemptTime)
	case p.Timeout > 0 && p.MinAttemptTime >= p.Timeout:
		return invalid("MinAttemptTime %v is not below Timeout %v: no retry would fit", p.MinAttemptTime, p.Timeout)
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

// Clock tells the time. ctx's deadline is on the real clock, so a fake
// Clock for tests must start at [time.Now](). If the Clock goes back, the
// time left before a deadline does not grow again.
type Clock interface {
	Now() time.Time
}

// Sleeper waits between attempts.
//
// Sleep waits for d, or until ctx is done, whichever comes first. It
// returns nil after a full wait and ctx's error when ctx ended it. Any
// error ends the retries: with [SleepFailed] if ctx is alive and the
// deadline has not passed. [Do] trusts a Sleeper that returns early.
type Sleeper interface {
	Sleep(ctx context.Context, d time.Duration) error
}

// ClockFunc adapts an ordinary function to the [Clock] interface.
type ClockFunc func() time.Time

// Now returns f().
func (f ClockFunc) Now() time.Time { return f() }

// SleeperFunc adapts an ordinary function to the [Sleeper] interface.
type SleeperFunc func(ctx context.Context, d time.Duration) error

// Sleep returns f(ctx, d).
func (f SleeperFunc) Sleep(ctx context.Context, d time.Duration) error { return f(ctx, d) }

var _ Clock = ClockFunc(nil)
var _ Sleeper = SleeperFunc(nil)
