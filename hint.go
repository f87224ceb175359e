package retry

import (
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
// HTTP-date in any of the three forms that a recipient must accept
// (section 5.6.7: IMF-fixdate, such as "Sun, 06 Nov 1994 08:49:37 GMT",
// the obsolete RFC 850 form and asctime's form), measured from now. It
// does not import net/http; use it as
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
// The value is read as the RFC's grammar writes it, case included, after
// trimming spaces and tabs at either end. The two-digit year of the RFC
// 850 form is taken to be at most 50 years after now's, as the RFC
// requires. A second of 60 (a leap second) is accepted, and the day of the
// week is read but not checked against the date.
func ParseRetryAfter(value string, now time.Time) (d time.Duration, ok bool) {
	value = strings.Trim(value, " \t")
	if d, ok := parseSeconds(value); ok {
		return d, true
	}
	if t, ok := parseHTTPDate(value, now); ok {
		return max(t.Sub(now), 0), true // Sub saturates; it never overflows
	}
	return 0, false
}

// parseSeconds parses delay-seconds: one or more ASCII digits, saturating
// at the longest time.Duration.
func parseSeconds(s string) (time.Duration, bool) {
	const most = int64(forever / time.Second)
	var secs int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		secs = min(secs*10+int64(s[i]-'0'), most+1) // most+1 marks too large; ×10 cannot overflow
	}
	switch {
	case s == "":
		return 0, false
	case secs > most:
		return forever, true
	}
	return time.Duration(secs) * time.Second, true
}

// httpDates are the three forms of an HTTP-date (RFC 9110, section 5.6.7),
// written as layouts of package time: IMF-fixdate, RFC 850 and asctime.
var httpDates = [...]string{
	"Mon, 02 Jan 2006 15:04:05 GMT",
	"Monday, 02-Jan-06 15:04:05 GMT",
	"Mon Jan _2 15:04:05 2006",
}

var (
	days   = []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}
	longer = []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
	months = []string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}
	// elements are the layout elements that httpDates use, longest first.
	elements = []string{"Monday", "Mon", "Jan", "2006", "06", "02", "_2", "15", "04", "05"}
)

// parseHTTPDate parses s as an HTTP-date in any of its forms.
func parseHTTPDate(s string, now time.Time) (time.Time, bool) {
	for _, layout := range httpDates {
		if t, ok := parseLayout(s, layout, now); ok {
			return t, true
		}
	}
	return time.Time{}, false
}

// parseLayout reads s as layout strictly, as the RFC's grammar does: a
// name in its own case, a number with exactly its digits (but "_2", a
// space and one digit, or two digits), and any other byte as itself.
func parseLayout(s, layout string, now time.Time) (time.Time, bool) {
	var year, month, day, hour, minute, sec int
	ok := true
	for layout != "" && ok {
		elem := layout[:1]
		for _, e := range elements {
			if strings.HasPrefix(layout, e) {
				elem = e
				break
			}
		}
		layout = layout[len(elem):]
		switch elem {
		case "Monday":
			_, s, ok = name(s, longer)
		case "Mon":
			_, s, ok = name(s, days)
		case "Jan":
			month, s, ok = name(s, months)
		case "2006":
			year, s, ok = digits(s, 4)
		case "06":
			year, s, ok = digits(s, 2)
			year = century(year, now)
		case "02":
			day, s, ok = digits(s, 2)
		case "_2":
			if rest, space := strings.CutPrefix(s, " "); space {
				day, s, ok = digits(rest, 1)
			} else {
				day, s, ok = digits(s, 2)
			}
		case "15":
			hour, s, ok = digits(s, 2)
		case "04":
			minute, s, ok = digits(s, 2)
		case "05":
			sec, s, ok = digits(s, 2)
		default:
			s, ok = strings.CutPrefix(s, elem)
		}
	}
	if !ok || s != "" || hour > 23 || minute > 59 || sec > 60 { // 60: a leap second
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month+1), day, hour, minute, 0, 0, time.UTC)
	if t.Day() != day { // a day the month lacks, such as 31 Nov, moved to 1 Dec
		return time.Time{}, false
	}
	return t.Add(time.Duration(sec) * time.Second), true
}

// century returns the year whose last two digits are yy within the 100
// years that end 50 years after now's: a year that would be more than 50
// years ahead is the one a century earlier (RFC 9110, section 5.6.7).
func century(yy int, now time.Time) int {
	this := now.UTC().Year() // an HTTP-date is in GMT
	year := this - this%100 + yy
	switch {
	case year > this+50:
		return year - 100
	case year <= this-50:
		return year + 100
	}
	return year
}

// name reads one of names from the start of s, and returns its index.
func name(s string, names []string) (int, string, bool) {
	for i, n := range names {
		if rest, ok := strings.CutPrefix(s, n); ok {
			return i, rest, true
		}
	}
	return 0, s, false
}

// digits reads exactly n ASCII digits from the start of s.
func digits(s string, n int) (int, string, bool) {
	if len(s) < n {
		return 0, s, false
	}
	v := 0
	for _, c := range []byte(s[:n]) {
		if c < '0' || c > '9' {
			return 0, s, false
		}
		v = v*10 + int(c-'0')
	}
	return v, s[n:], true
}
