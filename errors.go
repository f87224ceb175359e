package retry

import (
	"strconv"
	"time"
)

// RetryExhausted is the error Do returns when fn failed with a retryable
// error and Do stopped trying. It says how many attempts ran, for how long,
// why Do stopped, and what failed last.
//
// errors.Is and errors.As reach both Last and Cause through it, so
// errors.Is(err, context.Canceled) and errors.As(err, &myErr) work as if
// the wrapping were not there.
type RetryExhausted struct {
	Attempts int           // calls of fn made, the first included
	Elapsed  time.Duration // from Do's call to giving up, on Policy.Clock
	Last     error         // the last error fn returned
	Reason   Reason        // why Do stopped
	Cause    error         // what stopped it from outside: ctx's or the Sleeper's error, ErrBudgetExhausted, or nil
}

// Error returns one line that starts with "retry: " and names the
// attempts, the elapsed time, the reason and the last error.
func (e *RetryExhausted) Error() string {
	why := e.Reason.String()
	if e.Cause != nil && e.Reason != BudgetExhausted { // ErrBudgetExhausted says no more
		why = e.Cause.Error()
	}
	s := "retry: gave up after " + strconv.Itoa(e.Attempts) + " attempt"
	if e.Attempts != 1 {
		s += "s"
	}
	s += " in " + e.Elapsed.String() + " (" + why + ")"
	if e.Last != nil {
		s += ": " + e.Last.Error()
	}
	return s
}

// Unwrap returns Last and Cause, leaving out the nil ones.
func (e *RetryExhausted) Unwrap() []error {
	errs := make([]error, 0, 2)
	for _, err := range [...]error{e.Last, e.Cause} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// Reason says why Do stopped retrying.
type Reason int

// The reasons a RetryExhausted gives.
const (
	// MaxAttemptsReached means fn was called Policy.MaxAttempts times.
	MaxAttemptsReached Reason = iota + 1
	// DeadlineReached means Policy.Deadline had passed when fn failed.
	DeadlineReached
	// ContextDone means ctx was done, or its deadline would have passed
	// before the next wait ended. Cause is ctx's error, or
	// context.DeadlineExceeded when Do gave up ahead of the deadline.
	ContextDone
	// HintTooLong means fn's error asked, through a RetryAfter method, for
	// a wait longer than MaxDelay or than the time left before a deadline.
	HintTooLong
	// SleepFailed means the Sleeper returned an error of its own while
	// ctx was not done. Cause is that error.
	SleepFailed
	// BudgetExhausted means Policy.Budget had less than one token for the
	// next retry. Cause is ErrBudgetExhausted.
	BudgetExhausted
)

var reasons = [...]string{
	MaxAttemptsReached: "max attempts reached",
	DeadlineReached:    "deadline reached",
	ContextDone:        "context done",
	HintTooLong:        "retry-after hint too long",
	SleepFailed:        "sleep failed",
	BudgetExhausted:    "retry budget exhausted",
}

// String returns a short lowercase phrase, such as "max attempts reached".
func (r Reason) String() string {
	if r > 0 && int(r) < len(reasons) {
		return reasons[r]
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}

// retryAfter returns the first positive RetryAfter hint in err's chain,
// depth first as errors.As searches, or 0. A type switch, not errors.As,
// keeps the lookup free of reflection and allocation.
func retryAfter(err error) time.Duration {
	for err != nil {
		if h, ok := err.(interface{ RetryAfter() time.Duration }); ok {
			if d := h.RetryAfter(); d > 0 {
				return d
			}
		}
		switch x := err.(type) {
		case interface{ Unwrap() error }:
			err = x.Unwrap()
		case interface{ Unwrap() []error }:
			for _, err := range x.Unwrap() {
				if d := retryAfter(err); d > 0 {
					return d
				}
			}
			return 0
		default:
			return 0
		}
	}
	return 0
}
