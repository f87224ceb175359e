package retry

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// RetryExhausted is the error [Do] returns when it gives up before fn
// succeeds, other than by returning fn's error as it is. [errors.Is] and
// [errors.As] reach both Last and Cause through it. If ctx was done, or the
// deadline had passed, before the first call, Attempts and Elapsed are 0
// and Last is nil.
type RetryExhausted struct {
	Attempts int           // calls of fn, the first included
	Elapsed  time.Duration // from Do's call to giving up, on Policy.Clock
	Last     error         // fn's last error
	Reason   Reason        // why Do stopped
	// Cause is what stopped Do from outside, if anything: ctx's error,
	// context.DeadlineExceeded, ErrBudgetExhausted, or the Sleeper's error.
	Cause error

	detail string // what the check that stopped Do found, after ": ", for the message
}

// Error returns one line that starts with "retry: ", names the attempts
// and the elapsed time (or says that fn was never called), the Reason and,
// if Do made e, what stopped it, and ends with the last error. Durations
// read to three significant digits below a minute and to the second from
// a minute up, but exactly where rounding would make a wait read as its
// limit. Line breaks in the errors' messages become "; ", and other
// control characters but tab, and bytes that are not UTF-8, are escaped
// as Go escapes them (\x1b), so that a terminal shows the line as it is.
func (e *RetryExhausted) Error() string {
	s := "retry: gave up before the first attempt"
	if e.Attempts > 0 {
		s = "retry: gave up after " + strconv.Itoa(e.Attempts) + " attempt"
		if e.Attempts != 1 {
			s += "s"
		}
		s += " in " + round(e.Elapsed).String()
	}
	s += " (" + e.Reason.String() + e.detail + ")"
	if e.Last != nil {
		s += ": " + e.Last.Error()
	}
	return oneLine(s)
}

// oneLine turns each line break in s into "; ", "\r\n" as one, and
// escapes every other control character but tab, and every byte that is
// not UTF-8, as strconv.Quote would.
func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	var b strings.Builder
	for s != "" {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case strings.ContainsRune("\r\n\v\f\u0085\u2028\u2029", r):
			b.WriteString("; ")
		case r == utf8.RuneError && n == 1, r != '\t' && unicode.IsControl(r):
			q := strconv.Quote(s[:n])
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}

// The names of the deadlines, for the message.
const (
	timeoutName     = "Policy.Timeout"
	ctxDeadlineName = "ctx's deadline"
)

// leaves says how little a wait of d leaves of the time left before the
// deadline named: nothing, or less than minAttempt, Policy.MinAttemptTime.
func leaves(d, left, minAttempt time.Duration, deadline string) string {
	if d >= left {
		w, l := readable(d, left)
		return w + ", with " + l + " left before " + deadline
	}
	after, least := readable(left-d, minAttempt)
	return round(d).String() + " would leave " + after + " before " + deadline + ", less than MinAttemptTime " + least
}

// readable returns d and its limit rounded for reading, or exact where
// rounding would make them read the same.
func readable(d, limit time.Duration) (string, string) {
	if round(d) == round(limit) {
		return d.String(), limit.String()
	}
	return round(d).String(), round(limit).String()
}

// round rounds d for reading: below a minute to three significant digits
// (285ms, not 285.353606ms), from a minute up to the second, where more
// digits would be invented ones.
func round(d time.Duration) time.Duration {
	if d >= time.Minute {
		if r := d.Round(time.Second); r%time.Second == 0 {
			return r
		}
		return d.Truncate(time.Second) // Round saturated at the longest Duration
	}
	unit := time.Duration(1)
	for x := d / 1000; x != 0; x /= 10 {
		unit *= 10
	}
	return d.Round(unit)
}

// Unwrap returns Last and Cause, leaving out the nil ones.
func (e *RetryExhausted) Unwrap() []error {
	return slices.DeleteFunc([]error{e.Last, e.Cause}, func(err error) bool { return err == nil })
}

// Reason says why [Do] stopped retrying. More Reasons may come in a minor
// version: treat one you do not know as a failure. Their [Reason.String]
// values do not change within v1, so they may serve as metric labels.
type Reason int

// The reasons a [RetryExhausted] gives.
const (
	// MaxAttemptsReached means fn was called Policy.MaxAttempts times.
	MaxAttemptsReached Reason = iota + 1
	// DeadlineReached means the call ran out of time: Policy.Timeout or
	// ctx's deadline passed, or the next wait would not end before it, or
	// would leave less than Policy.MinAttemptTime before it, whether Do saw
	// it coming or ctx's timer fired first. Cause reaches
	// context.DeadlineExceeded and, when ctx is done, the cause given to
	// context.WithDeadlineCause.
	DeadlineReached
	// Canceled means ctx was done for another reason than its deadline.
	// Cause is ctx's error, and reaches the cause given to a
	// context.CancelCauseFunc.
	Canceled
	// HintTooLong means a hint asked for a wait above MaxDelay, or one that
	// would not end before a deadline, or would leave less than
	// Policy.MinAttemptTime before it. It comes before DeadlineReached.
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
	Canceled:           "canceled",
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

// Permanent marks err as final: when fn's error has the mark anywhere in
// its chain, Do returns that error as it is, mark included, so that a Do
// around this one does not retry it either. errors.Is and errors.As see
// through the mark, and the message is err's. Permanent(nil) is nil.
func Permanent(err error) error {
	if _, marked := err.(*permanentError); marked || err == nil {
		return err
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// inspect walks err's chain, depth first as errors.As does, and reports
// whether it has the mark of Permanent, and the first positive hint of a
// RetryAfter method in it.
func inspect(err error) (permanent bool, hint time.Duration) {
	for err != nil {
		switch e := err.(type) {
		case *permanentError:
			return true, hint
		case interface{ RetryAfter() time.Duration }:
			if hint == 0 {
				hint = max(e.RetryAfter(), 0)
			}
		}
		if errs, ok := err.(interface{ Unwrap() []error }); ok {
			for _, err := range errs.Unwrap() {
				marked, h := inspect(err)
				if hint == 0 {
					hint = h
				}
				if marked {
					return true, hint
				}
			}
			return false, hint
		}
		err = errors.Unwrap(err)
	}
	return false, hint
}

// interrupted says why ctx, done with err, stopped Do: DeadlineReached
// when its deadline passed, Canceled for any other end. Cause is err,
// joined with the cause ctx was given, if any, so that errors.Is reaches
// both.
func interrupted(ctx context.Context, err error) *RetryExhausted {
	stop := &RetryExhausted{Reason: Canceled, Cause: err, detail: ": " + err.Error()}
	if errors.Is(err, context.DeadlineExceeded) {
		stop.Reason, stop.detail = DeadlineReached, ": "+ctxDeadlineName+" passed"
	}
	if c := context.Cause(ctx); c != nil && !same(c, err) {
		stop.Cause, stop.detail = &causeError{err, c}, stop.detail+": "+c.Error()
	}
	return stop
}

// same reports whether a and b are one error: a == b where == is defined
// for a, else reflect.DeepEqual(a, b), as a custom ctx may return errors of
// a type that == cannot compare (a slice's) from Err and from Cause.
func same(a, b error) bool {
	return reflect.DeepEqual(a, b) && (!reflect.ValueOf(a).Comparable() || a == b)
}

// causeError is ctx's error with the cause ctx was cancelled with.
type causeError struct{ err, cause error }

func (e *causeError) Error() string   { return e.err.Error() + ": " + e.cause.Error() }
func (e *causeError) Unwrap() []error { return []error{e.err, e.cause} }
