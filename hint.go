package retry

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// After returns err with a hint that asks Do to wait at least d before it
// calls fn again, as an HTTP Retry-After header or a gRPC pushback does.
// Do honours the hint for that one wait, and gives up at once, with
// HintTooLong, if d is longer than Policy.MaxDelay or would not end before
// a deadline.
//
// The message is err's, and errors.Is and errors.As see through the hint
// to err. After(d, nil) is nil, and a d of 0 or less adds no hint: After
// returns err itself. The hint composes with Permanent, which wins (a
// Permanent error is not retried, whatever its hint), and with wrapping by
// fmt.Errorf and %w. The error has the method RetryAfter() time.Duration,
// which returns d, so that errors.As can tell whether an error carries a
// hint. When an error's chain holds several hints, Do honours the first
// positive one, walking the chain as errors.As does.
func After(d time.Duration, err error) error {
	if err == nil || d <= 0 {
		return err
	}
	return &afterError{err, d}
}

type afterError struct {
	err error
	d   time.Duration
}

func (e *afterError) Error() string             { return e.err.Error() }
func (e *afterError) Unwrap() error             { return e.err }
func (e *afterError) RetryAfter() time.Duration { return e.d }

// retryAfter returns the first positive RetryAfter hint in err's chain, or 0.
func retryAfter(err error) time.Duration {
	var hint time.Duration
	find(err, func(err error) bool {
		if h, ok := err.(interface{ RetryAfter() time.Duration }); ok {
			hint = max(h.RetryAfter(), 0)
		}
		return hint > 0
	})
	return hint
}

// ParseRetryAfter returns the wait that the value of an HTTP Retry-After
// header asks for (RFC 9110, section 10.2.3): a number of seconds, or an
// HTTP-date measured from now, in the layouts that net/http's ParseTime
// reads, without importing net/http. Use it as
//
//	d, ok := retry.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
//
// ok reports whether value is a valid Retry-After at all, so that a caller
// can act on its presence, such as retrying a 429 only if the server said
// when. It is false, with d 0, for an empty, malformed or negative value.
// It is true, with d 0, for "0" or a date that is not after now. A number
// of seconds too large for a time.Duration gives the longest one. d is
// never negative.
//
// Dates are read by time.Parse, after trimming spaces and tabs at either
// end: an RFC 850 date only in GMT, its two-digit year 69–99 as 19xx and
// 00–68 as 20xx, no second 60, and with time.Parse's leniency, such as a
// one-digit hour, fractional seconds and names in any case.
func ParseRetryAfter(value string, now time.Time) (d time.Duration, ok bool) {
	value = strings.Trim(value, " \t")
	if value != "" && strings.Trim(value, "0123456789") == "" { // delay-seconds
		secs, err := strconv.ParseInt(value, 10, 64) // digits only: an error means too many
		if err != nil || secs > math.MaxInt64/int64(time.Second) {
			return math.MaxInt64, true
		}
		return time.Duration(secs) * time.Second, true
	}
	for _, layout := range httpDates {
		if t, err := time.Parse(layout, value); err == nil {
			return max(t.Sub(now), 0), true // Sub saturates; it never overflows
		}
	}
	return 0, false
}

// httpDates are the layouts of net/http's ParseTime: IMF-fixdate,
// time.RFC850 with its zone fixed to GMT, and time.ANSIC.
var httpDates = [...]string{
	"Mon, 02 Jan 2006 15:04:05 GMT",
	"Monday, 02-Jan-06 15:04:05 GMT",
	time.ANSIC,
}
