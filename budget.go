package retry

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
)

// ErrBudgetExhausted is reached, through errors.Is, from the
// *RetryExhausted that Do returns when Policy.Budget had no token left for
// a retry.
var ErrBudgetExhausted = errors.New("retry: retry budget exhausted")

// tokenScale is the fixed-point unit of a Budget's balance: one token is
// a million units, so that a fractional ratio is kept exactly enough in an
// int64 that atomic operations can update without a lock. Each deposit is
// ratio rounded down to a whole unit, so that retries stay within
// ratio × calls + burst; a ratio below 0.000001 earns nothing.
const tokenScale = 1_000_000

// A Budget caps retries at a share of calls, across all the Do calls that
// use it: the defence against retry storms, where every client retrying
// every failure multiplies the load on a service that is already down.
//
// Each Do call with the Budget in its Policy deposits ratio tokens, up to
// a balance of burst. Each retry takes one token when Do has decided to
// retry: after the attempt limit, the deadlines and any hint have allowed
// the wait, before OnRetry and the wait. A retry happens when fn is
// called again; until then the token is given back if Do stops instead,
// because ctx ended during the wait, the Sleeper failed or a deadline
// passed meanwhile, or if a panic in OnRetry, the Sleeper or the Clock
// unwinds Do. A panic in that next call of fn keeps it. When less than one
// token is left, Do gives up at once with ErrBudgetExhausted. So retries
// number at most ratio × calls + burst, whatever the failure rate.
//
// A failure rate below ratio does not keep every call clear of the Budget:
// failures that come closer together than the burst absorbs meet it.
// Choose a ratio above the failure rate to ride out, and a burst of
// several tokens.
//
// A Budget is safe for simultaneous use by many goroutines and Policies,
// and takes no lock. Make one with NewBudget: a Budget made otherwise, such
// as the zero Budget, fails Policy.Validate.
type Budget struct {
	deposit, capacity int64 // in tokenScale units
	balance           atomic.Int64
	err               error // why the arguments of NewBudget were rejected
}

// NewBudget returns a full Budget that earns ratio tokens per Do call and
// holds at most burst tokens. ratio must be in [0, 1] and burst at least 1;
// otherwise the Budget is invalid and any Policy using it fails
// Policy.Validate, and so Do, with an error that wraps ErrInvalidPolicy
// and says which argument was wrong. A typical Budget is
// NewBudget(0.1, 10): retries add at most 10% to the load, after a burst
// of 10.
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
		b.deposit = int64(math.Floor(ratio * tokenScale)) // down, or the bound would not hold
		b.capacity = int64(burst) * tokenScale
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

// Tokens returns the balance; each retry needs one whole token. A nil
// Budget, which is no budget and never refuses a retry, has +Inf tokens.
func (b *Budget) Tokens() float64 {
	if b == nil {
		return math.Inf(1)
	}
	return float64(b.balance.Load()) / tokenScale
}

// earn adds one call's deposit, up to the capacity.
func (b *Budget) earn() { b.add(b.deposit) }

// refund gives back the token of a retry that did not happen, up to the
// capacity.
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
