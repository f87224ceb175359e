package retry

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// After returns err with a hint that asks [Do] to wait at least d before
// it calls fn again, as an HTTP Retry-After header does: Do honours it for
// that one wait, or gives up with [HintTooLong]. The error has a method
// RetryAfter() time.Duration, which Do looks for in fn's error chain. The
// message is err's, and [errors.Is] and [errors.As] see through the hint.
// After returns err itself if err is nil or d is not positive.
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

// ParseRetryAfter returns the wait that an HTTP Retry-After header's value
// asks for: a number of seconds, or an HTTP-date measured from now. ok
// reports whether the value is valid; it is false, with d 0, for an
// empty, malformed or negative value. d is never negative, and a number
// of seconds too large for a Duration gives the longest one. Use it as
//
//	d, ok := retry.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
//
// Dates are read with [time.Parse] in the layouts of [net/http.ParseTime],
// but an RFC 850 date only in GMT. Unlike RFC 9110: a two-digit year is
// 19xx from 69 and 20xx below, a second 60 is refused, and the day name is
// not checked; a one-digit hour, fractional seconds, runs of spaces and
// day and month names in any case pass, but not "gmt", as net/http refuses it.
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
