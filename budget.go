package retry

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
)

// ErrBudgetExhausted is the Cause of a [RetryExhausted] whose Reason is
// [BudgetExhausted].
var ErrBudgetExhausted = errors.New("retry: retry budget exhausted")

// tokenScale is the fixed-point unit of a Budget's balance: one token is
// a million units, so that a ratio to six decimals is kept exactly in an
// int64 that atomic operations can update without a lock. Each deposit is
// ratio in whole units: the nearest when ratio lies within 1e-9 of a
// millionth, since a float64 holds 0.000249 as 248.99999999999997 units,
// and rounded down otherwise: never more than ratio + 1e-9 tokens. A ratio
// more than 1e-9 below 0.000001 earns nothing.
const tokenScale = 1_000_000

// A Budget caps retries at a share of calls, across all the [Do] calls that
// use it, so that retries cannot multiply the load on a service that is
// already down.
//
// Each Do call that calls fn deposits ratio tokens (see [NewBudget]), up
// to a balance of burst, and each retry takes one token once the wait has
// passed every other check. The token comes back if fn is not called again
// after all: the [Sleeper] failed, ctx or the deadline stopped Do before the
// next call, or a panic in [Policy.OnRetry], the Sleeper, the [Clock] or
// ctx's methods unwound it. With less than one token, Do gives up with
// [ErrBudgetExhausted]. So retries number at most ratio × calls + burst for
// a ratio of six decimals, and (ratio + 1e-9) × calls + burst for any.
//
// A Budget is safe for concurrent use, and takes no lock. The zero Budget
// is invalid: make one with [NewBudget].
type Budget struct {
	deposit, capacity int64 // in tokenScale units
	balance           atomic.Int64
	err               error // why the arguments of NewBudget were rejected
}

// NewBudget returns a full [Budget] of at most burst tokens, which earns
// ratio tokens per [Do] call that calls fn. ratio must be in [0, 1]; it
// counts to the millionth, rounded down unless within 1e-9 of one. burst
// must be from 1 to math.MaxInt64/1e6, or a [Policy] with the Budget is
// invalid. NewBudget(0.1, 10) lets
// retries add 10% to the load, after a burst of 10.
func NewBudget(ratio float64, burst int) *Budget {
	b := &Budget{}
	switch {
	case !(ratio >= 0 && ratio <= 1): // NaN fails both comparisons
		b.err = fmt.Errorf("%w: NewBudget ratio is %v; want it in [0, 1]", ErrInvalidPolicy, ratio)
	case burst < 1: // a balance capped below one token could never pay for a retry
		b.err = fmt.Errorf("%w: NewBudget burst is %d; want 1 or more", ErrInvalidPolicy, burst)
	case burst > math.MaxInt64/tokenScale:
		b.err = fmt.Errorf("%w: NewBudget burst is %d; want at most %d", ErrInvalidPolicy, burst, math.MaxInt64/tokenScale)
	default:
		units := math.Round(ratio * tokenScale)
		if math.Abs(ratio*tokenScale-units) > 1e-9*tokenScale { // not within 1e-9 of a millionth
			units = math.Floor(ratio * tokenScale) // down, or the bound would not hold
		}
		b.deposit, b.capacity = int64(units), int64(burst)*tokenScale
		b.balance.Store(b.capacity)
	}
	return b
}

// errNotNewBudget is why a Budget that NewBudget did not make is invalid.
var errNotNewBudget = fmt.Errorf("%w: Budget was not made by NewBudget; make one with NewBudget(ratio, burst)", ErrInvalidPolicy)

// invalid returns why b cannot be used: why NewBudget rejected its
// arguments, or errNotNewBudget for a Budget that NewBudget did not make.
func (b *Budget) invalid() error {
	if b.err == nil && b.capacity == 0 {
		return errNotNewBudget
	}
	return b.err
}

// Tokens returns the balance. A nil Budget has +Inf tokens.
func (b *Budget) Tokens() float64 {
	if b == nil {
		return math.Inf(1)
	}
	return float64(b.balance.Load()) / tokenScale
}

// earn adds one call's deposit, up to the capacity.
func (b *Budget) earn() { b.add(b.deposit) }

// refund gives back a token that a retry did not use, up to the capacity.
func (b *Budget) refund() { b.add(tokenScale) }

// add adds units to the balance, up to the capacity.
func (b *Budget) add(units int64) {
	for {
		old := b.balance.Load()
		next := old + min(units, b.capacity-old) // old+units may overflow
		if next == old || b.balance.CompareAndSwap(old, next) {
			return
		}
	}
}

// spend takes one token and reports whether there was one to take.
func (b *Budget) spend() bool {
	for {
		old := b.balance.Load()
		if old < tokenScale {
			return false
		}
		if b.balance.CompareAndSwap(old, old-tokenScale) {
			return true
		}
	}
}

// A retryToken is a Budget token held by a call of Do for its next retry:
// take takes it before the wait, use keeps it spent when fn is called
// again, and release gives it back if that call never came.
type retryToken struct{ from *Budget }

// take takes a token from b, and reports whether b had one.
func (t *retryToken) take(b *Budget) (ok bool) {
	if ok = b.spend(); ok {
		t.from = b
	}
	return ok
}

// use marks the token spent: fn is called for the retry it paid for.
func (t *retryToken) use() { t.from = nil }

// release gives the token back, unless use spent it.
func (t *retryToken) release() {
	if t.from != nil {
		t.from.refund()
	}
}
