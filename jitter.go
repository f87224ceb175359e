package retry

import (
	"math"
	"time"
)

// Jitter chooses the wait before a retry, as a pure function of its
// arguments: n is the number of retries already made (0 for the first
// wait), base and maxDelay are [Policy.BaseDelay] and [Policy.MaxDelay],
// prev is what it chose for the previous wait (before a hint raised it), or
// base before the first, and u is uniform in [0, 1].
//
// The functions in this package return a wait in [0, maxDelay] for any
// arguments, without overflow: a negative n or duration counts as 0, a
// base above maxDelay as maxDelay, and u is clamped into [0, 1] (NaN as 0).
type Jitter func(n int, base, maxDelay, prev time.Duration, u float64) time.Duration

// NoJitter returns min(base·2ⁿ, maxDelay): capped exponential backoff with
// no jitter, so clients that fail together retry together.
func NoJitter(n int, base, maxDelay, prev time.Duration, u float64) time.Duration {
	return expo(n, base, maxDelay)
}

// FullJitter returns u·min(base·2ⁿ, maxDelay), in [0, min(base·2ⁿ, maxDelay)].
func FullJitter(n int, base, maxDelay, prev time.Duration, u float64) time.Duration {
	return scale(expo(n, base, maxDelay), unit(u))
}

// EqualJitter returns d/2 + u·d/2, where d = min(base·2ⁿ, maxDelay): a
// wait in [d/2, d].
func EqualJitter(n int, base, maxDelay, prev time.Duration, u float64) time.Duration {
	d := expo(n, base, maxDelay)
	return d/2 + scale(d-d/2, unit(u))
}

// DecorrelatedJitter returns min(maxDelay, base + u·(3·p − base)), where
// p = max(prev, base): a wait in [base, maxDelay] that grows from the
// previous one. It is the default [Jitter].
func DecorrelatedJitter(n int, base, maxDelay, prev time.Duration, u float64) time.Duration {
	maxDelay = clamp(maxDelay, 0, math.MaxInt64)
	base = clamp(base, 0, maxDelay)
	p := float64(base)
	if prev > base {
		p = float64(prev)
	}
	f := float64(base) + unit(u)*(3*p-float64(base))
	if f >= float64(maxDelay) {
		return maxDelay
	}
	return clamp(time.Duration(f), base, maxDelay) // clamp absorbs float rounding
}

// expo returns min(base·2ⁿ, maxDelay) without overflow.
func expo(n int, base, maxDelay time.Duration) time.Duration {
	maxDelay = clamp(maxDelay, 0, math.MaxInt64)
	base = clamp(base, 0, maxDelay)
	switch {
	case n <= 0:
		return base
	case base == 0:
		return 0
	case base > maxDelay>>n: // base·2ⁿ > maxDelay ⟺ base > ⌊maxDelay/2ⁿ⌋, 0 for n ≥ 63
		return maxDelay
	}
	return base << n
}

// scale returns u·d for u in [0, 1], never above d.
func scale(d time.Duration, u float64) time.Duration {
	f := u * float64(d)
	if f >= float64(d) { // float64(d) may round up past math.MaxInt64
		return d
	}
	return time.Duration(f)
}

// unit clamps u into [0, 1], with NaN as 0.
func unit(u float64) float64 {
	switch {
	case u > 1:
		return 1
	case u >= 0:
		return u
	}
	return 0 // negative or NaN
}

func clamp(d, lo, hi time.Duration) time.Duration { return min(max(d, lo), hi) }
