package retry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// After attaches a hint that Do honours like any
// RetryAfter method: the wait is max(jitter, d), and a hint the policy
// cannot honour ends the run at once.
func TestAfterThroughDo(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		p          Policy
		ctxTimeout time.Duration
		wantWaits  []time.Duration // as the Sleeper records them and OnRetry reports them
		wantReason Reason
	}{
		{"hint longer than the jitter", After(5*time.Second, errBoom), Policy{MaxAttempts: 3}, 0,
			[]time.Duration{5 * time.Second, 5 * time.Second}, MaxAttemptsReached},
		{"hint shorter than the jitter", After(time.Millisecond, errBoom), Policy{MaxAttempts: 2}, 0,
			[]time.Duration{100 * time.Millisecond}, MaxAttemptsReached},
		{"1ns hint", After(1, errBoom), Policy{MaxAttempts: 2, Jitter: zeroJitter}, 0,
			[]time.Duration{1}, MaxAttemptsReached},
		{"hint equal to MaxDelay", After(time.Second, errBoom), Policy{MaxAttempts: 2, MaxDelay: time.Second}, 0,
			[]time.Duration{time.Second}, MaxAttemptsReached},
		{"hint above MaxDelay", After(31*time.Second, errBoom), Policy{}, 0,
			nil, HintTooLong},
		{"hint 1ns above MaxDelay", After(time.Second+1, errBoom), Policy{MaxDelay: time.Second}, 0,
			nil, HintTooLong},
		{"hint that ends at the Timeout", After(5*time.Second, errBoom), Policy{Timeout: 5 * time.Second}, 0,
			nil, HintTooLong},
		{"hint beyond the Timeout", After(10*time.Second, errBoom), Policy{Timeout: 5 * time.Second}, 0,
			nil, HintTooLong},
		{"hint that ends before the Timeout", After(4*time.Second, errBoom), Policy{MaxAttempts: 2, Timeout: 5 * time.Second}, 0,
			[]time.Duration{4 * time.Second}, MaxAttemptsReached},
		{"hint beyond ctx's deadline", After(10*time.Second, errBoom), Policy{}, 5 * time.Second,
			nil, HintTooLong},
		{"hint wrapped with %w", fmt.Errorf("get: %w", After(2*time.Second, errBoom)), Policy{MaxAttempts: 2}, 0,
			[]time.Duration{2 * time.Second}, MaxAttemptsReached},
		{"hint joined", errors.Join(errors.New("other"), After(2*time.Second, errBoom)), Policy{MaxAttempts: 2}, 0,
			[]time.Duration{2 * time.Second}, MaxAttemptsReached},
		{"longer hint outside a shorter one", After(3*time.Second, After(2*time.Second, errBoom)), Policy{MaxAttempts: 2}, 0,
			[]time.Duration{3 * time.Second}, MaxAttemptsReached},
		{"shorter hint outside a longer one", After(2*time.Second, After(3*time.Second, errBoom)), Policy{MaxAttempts: 2}, 0,
			[]time.Duration{2 * time.Second}, MaxAttemptsReached}, // the outermost counts, not the longest
		{"short hint outside one above MaxDelay", After(time.Second, After(time.Hour, errBoom)), Policy{MaxAttempts: 2}, 0,
			[]time.Duration{time.Second}, MaxAttemptsReached},
		{"zero hint outside a positive one", wrapHint{0, After(2*time.Second, errBoom)}, Policy{MaxAttempts: 2}, 0,
			[]time.Duration{2 * time.Second}, MaxAttemptsReached},
		{"no hint: After(0, err)", After(0, errBoom), Policy{MaxAttempts: 2}, 0,
			[]time.Duration{100 * time.Millisecond}, MaxAttemptsReached},
		{"no hint: After(-1h, err)", After(-time.Hour, errBoom), Policy{MaxAttempts: 2}, 0,
			[]time.Duration{100 * time.Millisecond}, MaxAttemptsReached},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			ctx := ft.deadlineCtx(t, tt.ctxTimeout)
			fn := &flaky{n: 100, err: tt.err}
			p := ft.with(tt.p)
			p.Rand = constRand(0) // the default Jitter then waits BaseDelay, 100ms
			var reported []time.Duration
			p.OnRetry = func(_ context.Context, _ int, _ error, wait time.Duration) { reported = append(reported, wait) }
			err := Do(ctx, fn.call, p)
			if got := ft.Waits(); !slices.Equal(got, tt.wantWaits) {
				t.Errorf("Do() waits = %v; want %v", got, tt.wantWaits)
			}
			if !slices.Equal(reported, tt.wantWaits) {
				t.Errorf("OnRetry waits = %v; want %v", reported, tt.wantWaits)
			}
			wantAttempts := len(tt.wantWaits) + 1
			var re *RetryExhausted
			switch {
			case !errors.As(err, &re) || re.Reason != tt.wantReason:
				t.Errorf("Do() = %v; want a *RetryExhausted for %v", err, tt.wantReason)
			case re.Attempts != wantAttempts || fn.calls != wantAttempts:
				t.Errorf("Do() attempts, calls = %d, %d; want %d, %d", re.Attempts, fn.calls, wantAttempts, wantAttempts)
			case re.Last != tt.err || !errors.Is(err, errBoom):
				t.Errorf("Do() Last = %v; want fn's error, through which errors.Is reaches boom", re.Last)
			}
		})
	}
}

// After's value: nil stays nil, d <= 0 returns err itself, and otherwise
// the result reads as err does.
func TestAfterValue(t *testing.T) {
	if err := After(time.Second, nil); err != nil {
		t.Errorf("After(1s, nil) = %v; want nil", err)
	}
	for _, d := range []time.Duration{0, -1, -time.Hour, math.MinInt64} {
		if err := After(d, errBoom); err != errBoom {
			t.Errorf("After(%v, boom) = %#v; want boom itself", d, err)
		}
	}
	inner := &apiError{"too many requests"}
	err := After(3*time.Second, inner)
	if err == error(inner) {
		t.Fatalf("After(3s, err) = err; want err with a hint")
	}
	if got, want := err.Error(), inner.Error(); got != want {
		t.Errorf("After(3s, err).Error() = %q; want %q", got, want)
	}
	var target *apiError
	if !errors.Is(err, inner) || !errors.As(err, &target) || target != inner {
		t.Errorf("After(3s, err): errors.Is, errors.As do not reach err")
	}
	if got := errors.Unwrap(err); got != error(inner) {
		t.Errorf("errors.Unwrap(After(3s, err)) = %v; want err", got)
	}
	h, ok := err.(interface{ RetryAfter() time.Duration })
	if !ok || h.RetryAfter() != 3*time.Second {
		t.Errorf("After(3s, err) has no RetryAfter() of 3s")
	}
	if got := fmt.Errorf("get: %w", err).Error(); got != "get: too many requests" {
		t.Errorf("wrapped message = %q; want %q", got, "get: too many requests")
	}
}

type apiError struct{ msg string }

func (e *apiError) Error() string { return e.msg }

// retryAfter, which Do asks for the hint, finds the first positive hint in
// the chain, as errors.As walks it; a negative one counts as none.
func TestRetryAfterOfAChain(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want time.Duration
	}{
		{"nil", nil, 0},
		{"no hint", errBoom, 0},
		{"After", After(2*time.Second, errBoom), 2 * time.Second},
		{"negative hint", hintErr(-time.Second), 0},
		{"negative hints only", wrapHint{-time.Second, hintErr(-2 * time.Second)}, 0},
		{"negative outside positive", wrapHint{-time.Second, After(2*time.Second, errBoom)}, 2 * time.Second},
		{"outermost of two", After(3*time.Second, After(2*time.Second, errBoom)), 3 * time.Second},
		{"first of a join", errors.Join(errBoom, After(time.Second, errBoom), After(2*time.Second, errBoom)), time.Second},
	}
	for _, tt := range tests {
		if got := retryAfter(tt.err); got != tt.want {
			t.Errorf("retryAfter(%s) = %v; want %v", tt.name, got, tt.want)
		}
	}
}

// A Permanent error is not retried whatever its hint, on either side of
// After: one attempt, no wait, and Do returns what Permanent's doc says.
func TestAfterWithPermanent(t *testing.T) {
	hinted := After(time.Second, errBoom)
	inner := After(time.Second, Permanent(errBoom))
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"Permanent(After(d, err))", Permanent(hinted), nil},
		{"After(d, Permanent(err))", inner, nil},
		{"wrapped Permanent(After(d, err))", fmt.Errorf("get: %w", Permanent(hinted)), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			fn := &flaky{n: 100, err: tt.err}
			err := Do(context.Background(), fn.call, ft.with(Policy{}))
			want := tt.want
			if want == nil {
				want = tt.err
			}
			if err != want || fn.calls != 1 || len(ft.Waits()) != 0 {
				t.Errorf("Do() = %v after %d calls, %d waits; want %v after 1 call, 0 waits", err, fn.calls, len(ft.Waits()), want)
			}
			if !errors.Is(err, errBoom) {
				t.Errorf("Do() = %v; want errors.Is to reach boom", err)
			}
		})
	}
}

// parseNow is the RFC's own example instant, Sun, 06 Nov 1994 08:49:37 GMT.
var parseNow = time.Date(1994, time.November, 6, 8, 49, 37, 0, time.UTC)

// ParseRetryAfter as RFC 9110 writes Retry-After
// (10.2.3) and HTTP-date (5.6.7). Every want is worked out by hand from
// the RFC; day counts are spelled out.
func TestParseRetryAfter(t *testing.T) {
	const day = 24 * time.Hour
	const longest = time.Duration(math.MaxInt64)
	y2000 := time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)
	y2050 := time.Date(2050, time.January, 1, 0, 0, 0, 0, time.UTC)
	y2080 := time.Date(2080, time.January, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		value string
		now   time.Time // parseNow if zero
		want  time.Duration
		ok    bool
	}{
		// delay-seconds = 1*DIGIT
		{"zero", "0", time.Time{}, 0, true},
		{"seconds", "120", time.Time{}, 120 * time.Second, true},
		{"leading zeros", "00120", time.Time{}, 120 * time.Second, true},
		{"many leading zeros", "00000000000000000000000000000001", time.Time{}, time.Second, true},
		{"leading space", " 120", time.Time{}, 120 * time.Second, true},
		{"trailing space", "120 ", time.Time{}, 120 * time.Second, true},
		{"tabs", "\t120\t", time.Time{}, 120 * time.Second, true},
		{"spaces and tabs", " \t \t120\t \t ", time.Time{}, 120 * time.Second, true},
		{"empty", "", time.Time{}, 0, false},
		{"one space", " ", time.Time{}, 0, false},
		{"spaces and tabs only", " \t\t ", time.Time{}, 0, false},
		{"negative", "-1", time.Time{}, 0, false},
		{"negative zero", "-0", time.Time{}, 0, false},
		{"plus sign", "+3", time.Time{}, 0, false},
		{"fraction", "1.5", time.Time{}, 0, false},
		{"exponent", "1e3", time.Time{}, 0, false},
		{"hexadecimal", "0x10", time.Time{}, 0, false},
		{"unit", "120s", time.Time{}, 0, false},
		{"space inside", "1 20", time.Time{}, 0, false},
		{"comma list", "120, 60", time.Time{}, 0, false},
		{"newline is not OWS", "120\n", time.Time{}, 0, false},
		{"CR is not OWS", "\r120", time.Time{}, 0, false},
		{"no-break space is not OWS", "\u00a0120", time.Time{}, 0, false},
		{"full-width digits", "１２０", time.Time{}, 0, false},
		{"Arabic-Indic digit", "٣", time.Time{}, 0, false},
		{"longest whole seconds", "9223372036", time.Time{}, 9223372036 * time.Second, true},
		{"1s more saturates", "9223372037", time.Time{}, longest, true},
		{"MaxInt64 seconds", "9223372036854775807", time.Time{}, longest, true},
		{"2^64 seconds", "18446744073709551616", time.Time{}, longest, true},
		{"30 nines", strings.Repeat("9", 30), time.Time{}, longest, true},
		{"a thousand nines", strings.Repeat("9", 1000), time.Time{}, longest, true},

		// IMF-fixdate = day-name "," SP day SP month SP year SP hour ":" minute ":" second SP "GMT"
		{"IMF-fixdate now", "Sun, 06 Nov 1994 08:49:37 GMT", time.Time{}, 0, true},
		{"IMF-fixdate 2m ahead", "Sun, 06 Nov 1994 08:51:37 GMT", time.Time{}, 2 * time.Minute, true},
		{"IMF-fixdate 1s ahead", "Sun, 06 Nov 1994 08:49:38 GMT", time.Time{}, time.Second, true},
		{"IMF-fixdate 24 days ahead", "Wed, 30 Nov 1994 08:49:37 GMT", time.Time{}, 24 * day, true},
		{"IMF-fixdate 1s ago", "Sun, 06 Nov 1994 08:49:36 GMT", time.Time{}, 0, true},
		{"IMF-fixdate years ago", "Mon, 01 Jan 1990 00:00:00 GMT", time.Time{}, 0, true},
		{"IMF-fixdate year 0000", "Sat, 01 Jan 0000 00:00:00 GMT", time.Time{}, 0, true},
		{"IMF-fixdate year 9999 saturates", "Fri, 31 Dec 9999 23:59:59 GMT", time.Time{}, longest, true},
		{"IMF-fixdate year 0001 from 9999", "Mon, 01 Jan 0001 00:00:00 GMT", time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), 0, true},
		{"IMF-fixdate trimmed", " \tSun, 06 Nov 1994 08:51:37 GMT\t ", time.Time{}, 2 * time.Minute, true},
		{"IMF-fixdate nanoseconds of now", "Sun, 06 Nov 1994 08:49:38 GMT", parseNow.Add(1), time.Second - 1, true},
		{"weekday not checked", "Mon, 06 Nov 1994 08:51:37 GMT", time.Time{}, 2 * time.Minute, true},
		{"lowercase day name", "sun, 06 Nov 1994 08:51:37 GMT", time.Time{}, 0, false},
		{"lowercase month", "Sun, 06 nov 1994 08:51:37 GMT", time.Time{}, 0, false},
		{"uppercase month", "Sun, 06 NOV 1994 08:51:37 GMT", time.Time{}, 0, false},
		{"lowercase gmt", "Sun, 06 Nov 1994 08:51:37 gmt", time.Time{}, 0, false},
		{"thu", "thu, 10 Nov 1994 08:49:37 GMT", time.Time{}, 0, false},
		{"UTC", "Sun, 06 Nov 1994 08:51:37 UTC", time.Time{}, 0, false},
		{"PST", "Sun, 06 Nov 1994 08:51:37 PST", time.Time{}, 0, false},
		{"numeric zone", "Sun, 06 Nov 1994 08:51:37 +0000", time.Time{}, 0, false},
		{"no zone", "Sun, 06 Nov 1994 08:51:37", time.Time{}, 0, false},
		{"GMT+1", "Sun, 06 Nov 1994 08:51:37 GMT+1", time.Time{}, 0, false},
		{"long day name", "Sunday, 06 Nov 1994 08:51:37 GMT", time.Time{}, 0, false},
		{"no comma", "Sun 06 Nov 1994 08:51:37 GMT", time.Time{}, 0, false},
		{"two spaces", "Sun,  06 Nov 1994 08:51:37 GMT", time.Time{}, 0, false},
		{"tab inside", "Sun,\t06 Nov 1994 08:51:37 GMT", time.Time{}, 0, false},
		{"one-digit day", "Sun, 6 Nov 1994 08:51:37 GMT", time.Time{}, 0, false},
		{"one-digit hour", "Sun, 06 Nov 1994 8:51:37 GMT", time.Time{}, 0, false},
		{"two-digit year", "Sun, 06 Nov 94 08:51:37 GMT", time.Time{}, 0, false},
		{"five-digit year", "Sun, 06 Nov 01994 08:51:37 GMT", time.Time{}, 0, false},
		{"fractional second", "Sun, 06 Nov 1994 08:51:37.5 GMT", time.Time{}, 0, false},
		{"trailing garbage", "Sun, 06 Nov 1994 08:51:37 GMTx", time.Time{}, 0, false},
		{"trailing seconds", "Sun, 06 Nov 1994 08:51:37 GMT 120", time.Time{}, 0, false},
		{"trailing newline", "Sun, 06 Nov 1994 08:51:37 GMT\n", time.Time{}, 0, false},
		{"truncated", "Sun, 06 Nov 1994 08:51", time.Time{}, 0, false},
		{"hour 24", "Mon, 07 Nov 1994 24:00:00 GMT", time.Time{}, 0, false},
		{"minute 60", "Sun, 06 Nov 1994 08:60:00 GMT", time.Time{}, 0, false},
		{"second 61", "Sun, 06 Nov 1994 08:51:61 GMT", time.Time{}, 0, false},
		{"day 00", "Tue, 00 Nov 1994 08:51:37 GMT", time.Time{}, 0, false},
		{"day 32", "Thu, 32 Dec 1994 08:51:37 GMT", time.Time{}, 0, false},
		{"31 Nov", "Thu, 31 Nov 1994 08:49:37 GMT", time.Time{}, 0, false},
		{"31 Apr", "Mon, 31 Apr 1995 08:49:37 GMT", time.Time{}, 0, false},
		{"31 Dec", "Sat, 31 Dec 1994 08:49:37 GMT", time.Time{}, 55 * day, true}, // 24 days to 30 Nov, 31 more
		// 6 Nov 1994 08:49:37 to 7 Nov 00:00:00 is 15h10m23s; then 24 days
		// of November, 31 of December, 365 of 1995, 31 of January, 28 of
		// February: 479 days to 29 Feb 1996.
		{"29 Feb of leap 1996", "Thu, 29 Feb 1996 00:00:00 GMT", time.Time{}, 479*day + 15*time.Hour + 10*time.Minute + 23*time.Second, true},
		{"29 Feb of 1995", "Wed, 29 Feb 1995 00:00:00 GMT", time.Time{}, 0, false},
		{"29 Feb of 2000, divisible by 400", "Tue, 29 Feb 2000 00:00:00 GMT", y2000, (31 + 28) * day, true},
		{"29 Feb of 1900", "Thu, 29 Feb 1900 00:00:00 GMT", time.Time{}, 0, false},
		{"29 Feb of 2100", "Mon, 29 Feb 2100 00:00:00 GMT", time.Time{}, 0, false},
		{"30 Feb", "Fri, 30 Feb 1996 00:00:00 GMT", time.Time{}, 0, false},
		{"leap second", "Thu, 31 Dec 1998 23:59:60 GMT", time.Date(1998, 12, 31, 23, 59, 59, 0, time.UTC), time.Second, true},
		{"leap second is 00:00:00 of the next day", "Thu, 31 Dec 1998 23:59:60 GMT", time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC), 0, true},
		{"23:59:59", "Thu, 31 Dec 1998 23:59:59 GMT", time.Date(1998, 12, 31, 23, 59, 58, 0, time.UTC), time.Second, true},

		// rfc850-date = day-name-l "," SP day "-" month "-" 2DIGIT SP time-of-day SP "GMT"
		{"RFC 850 1s ahead", "Sunday, 06-Nov-94 08:49:38 GMT", time.Time{}, time.Second, true},
		{"RFC 850 a day ago", "Saturday, 05-Nov-94 08:49:37 GMT", time.Time{}, 0, true},
		{"RFC 850 24 days ahead", "Wednesday, 30-Nov-94 08:49:37 GMT", time.Time{}, 24 * day, true},
		{"RFC 850 29 Feb 96", "Thursday, 29-Feb-96 00:00:00 GMT", time.Time{}, 479*day + 15*time.Hour + 10*time.Minute + 23*time.Second, true},
		{"RFC 850 29 Feb 95", "Wednesday, 29-Feb-95 00:00:00 GMT", time.Time{}, 0, false},
		{"RFC 850 31 Nov", "Thursday, 31-Nov-94 08:49:37 GMT", time.Time{}, 0, false},
		{"RFC 850 leap second", "Thursday, 31-Dec-98 23:59:60 GMT", time.Date(1998, 12, 31, 23, 59, 59, 0, time.UTC), time.Second, true},
		{"RFC 850 hour 24", "Monday, 07-Nov-94 24:00:00 GMT", time.Time{}, 0, false},
		{"RFC 850 lowercase", "sunday, 06-Nov-94 08:49:38 GMT", time.Time{}, 0, false},
		{"RFC 850 uppercase", "SUNDAY, 06-Nov-94 08:49:38 GMT", time.Time{}, 0, false},
		{"RFC 850 gmt", "Sunday, 06-Nov-94 08:49:38 gmt", time.Time{}, 0, false},
		{"RFC 850 UTC", "Sunday, 06-Nov-94 08:49:38 UTC", time.Time{}, 0, false},
		{"RFC 850 short day name", "Sun, 06-Nov-94 08:49:38 GMT", time.Time{}, 0, false},
		{"RFC 850 four-digit year", "Sunday, 06-Nov-1994 08:49:38 GMT", time.Time{}, 0, false},
		{"RFC 850 spaces for dashes", "Sunday, 06 Nov 94 08:49:38 GMT", time.Time{}, 0, false},
		{"RFC 850 trailing garbage", "Sunday, 06-Nov-94 08:49:38 GMT;", time.Time{}, 0, false},
		// The two-digit year is the one at most 50 years after now's (here
		// 1994): 44 is 2044 and 45 is 1945. 6 Nov 1994 to 6 Nov 2044 is
		// 50*365 days and 13 leap days (29 Feb of 1996, 2000, ..., 2044).
		{"RFC 850 year 44 is 2044", "Sunday, 06-Nov-44 08:49:37 GMT", time.Time{}, (50*365 + 13) * day, true},
		{"RFC 850 year 44 is 2044 to its end", "Saturday, 31-Dec-44 23:59:59 GMT", time.Time{}, (50*365+13+55)*day + 15*time.Hour + 10*time.Minute + 22*time.Second, true},
		{"RFC 850 year 45 is 1945", "Tuesday, 01-Jan-45 00:00:00 GMT", time.Time{}, 0, true},
		{"RFC 850 year 94 is 1994", "Sunday, 06-Nov-94 08:51:37 GMT", time.Time{}, 2 * time.Minute, true},
		// From 2000, 50 is 2050 (50 years ahead) and 51 is 1951; 1 Jan 2000
		// to 1 Jan 2050 is 50*365 days and 13 leap days (2000, ..., 2048).
		{"RFC 850 year 50 from 2000 is 2050", "Saturday, 01-Jan-50 00:00:00 GMT", y2000, (50*365 + 13) * day, true},
		{"RFC 850 year 51 from 2000 is 1951", "Monday, 01-Jan-51 00:00:00 GMT", y2000, 0, true},
		{"RFC 850 year 00 from 2000 is 2000", "Saturday, 01-Jan-00 00:00:01 GMT", y2000, time.Second, true},
		// From 2050, 00 is 2100 (50 years ahead) and 01 is 2001; 1 Jan 2050
		// to 1 Jan 2100 holds 12 leap days (2052, ..., 2096).
		{"RFC 850 year 00 from 2050 is 2100", "Friday, 01-Jan-00 00:00:00 GMT", y2050, (50*365 + 12) * day, true},
		{"RFC 850 year 01 from 2050 is 2001", "Monday, 01-Jan-01 00:00:00 GMT", y2050, 0, true},
		{"RFC 850 year 50 from 2050 is 2050", "Saturday, 01-Jan-50 00:00:01 GMT", y2050, time.Second, true},
		{"RFC 850 year 49 from 2050 is 2049", "Friday, 31-Dec-49 23:59:59 GMT", y2050, 0, true},
		// From 2080, 30 is 2130 and 31 is 2031; 1 Jan 2080 to 1 Jan 2130
		// holds 12 leap days (2080, ..., 2128, but not 2100).
		{"RFC 850 year 30 from 2080 is 2130", "Sunday, 01-Jan-30 00:00:00 GMT", y2080, (50*365 + 12) * day, true},
		{"RFC 850 year 31 from 2080 is 2031", "Wednesday, 01-Jan-31 00:00:00 GMT", y2080, 0, true},
		{"RFC 850 year 29 from 2080 is 2129", "Monday, 01-Jan-29 00:00:00 GMT", y2080, (49*365 + 12) * day, true},

		// asctime-date = day-name SP month SP ( 2DIGIT / ( SP DIGIT ) ) SP time-of-day SP year
		{"asctime 1m ahead", "Sun Nov  6 08:50:37 1994", time.Time{}, time.Minute, true},
		{"asctime 06", "Sun Nov 06 08:50:37 1994", time.Time{}, time.Minute, true},
		{"asctime wrong 6", "Sun Nov 6 08:50:37 1994", time.Time{}, 0, false},
		{"asctime space and 06", "Sun Nov  06 08:50:37 1994", time.Time{}, 0, false},
		{"asctime space and 16", "Wed Nov  16 08:49:37 1994", time.Time{}, 0, false},
		{"asctime 16", "Wed Nov 16 08:49:37 1994", time.Time{}, 10 * day, true},
		{"asctime 1s ago", "Sun Nov  6 08:49:36 1994", time.Time{}, 0, true},
		{"asctime years ago", "Mon Jan  1 00:00:00 1990", time.Time{}, 0, true},
		{"asctime 29 Feb 1996", "Thu Feb 29 00:00:00 1996", time.Time{}, 479*day + 15*time.Hour + 10*time.Minute + 23*time.Second, true},
		{"asctime 29 Feb 1995", "Wed Feb 29 00:00:00 1995", time.Time{}, 0, false},
		{"asctime 31 Nov", "Thu Nov 31 08:49:37 1994", time.Time{}, 0, false},
		{"asctime leap second", "Thu Dec 31 23:59:60 1998", time.Date(1998, 12, 31, 23, 59, 59, 0, time.UTC), time.Second, true},
		{"asctime hour 24", "Mon Nov  7 24:00:00 1994", time.Time{}, 0, false},
		{"asctime with GMT", "Sun Nov  6 08:50:37 1994 GMT", time.Time{}, 0, false},
		{"asctime lowercase", "sun nov  6 08:50:37 1994", time.Time{}, 0, false},
		{"asctime long day name", "Sunday Nov  6 08:50:37 1994", time.Time{}, 0, false},
		{"asctime two-digit year", "Sun Nov  6 08:50:37 94", time.Time{}, 0, false},
		{"asctime trimmed", "\t Sun Nov  6 08:50:37 1994 \t", time.Time{}, time.Minute, true},
		{"asctime trailing garbage", "Sun Nov  6 08:50:37 19945", time.Time{}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := tt.now
			if now.IsZero() {
				now = parseNow
			}
			d, ok := ParseRetryAfter(tt.value, now)
			if d != tt.want || ok != tt.ok {
				t.Errorf("ParseRetryAfter(%q, %v) = %v, %v; want %v, %v", tt.value, now, d, ok, tt.want, tt.ok)
			}
			// The oracle, written from the grammar, must agree with the
			// hand-worked answer too.
			if d, ok := oracleRetryAfter(tt.value, now); d != tt.want || ok != tt.ok {
				t.Errorf("oracleRetryAfter(%q, %v) = %v, %v; want %v, %v", tt.value, now, d, ok, tt.want, tt.ok)
			}
		})
	}
}

// ParseRetryAfter reads now in its own location: the answer is a duration,
// the same for one instant in any zone.
func TestParseRetryAfterNowInAnyZone(t *testing.T) {
	zone := time.FixedZone("UTC+14", 14*3600)
	for _, v := range []string{"Sun, 06 Nov 1994 08:51:37 GMT", "Sunday, 06-Nov-94 08:51:37 GMT", "Sun Nov  6 08:51:37 1994"} {
		if d, ok := ParseRetryAfter(v, parseNow.In(zone)); d != 2*time.Minute || !ok {
			t.Errorf("ParseRetryAfter(%q, now in UTC+14) = %v, %v; want 2m0s, true", v, d, ok)
		}
	}
}

// httpDateForms are the three forms of an HTTP-date as http.ParseTime
// knows them, each with a zone that formats as the RFC's "GMT".
var httpDateForms = []struct {
	name, layout string
}{
	{"IMF-fixdate", http.TimeFormat},
	{"RFC 850", time.RFC850},
	{"asctime", time.ANSIC},
}

var gmt = time.FixedZone("GMT", 0)

// ParseRetryAfter re-implements http.ParseTime's three layouts without
// importing net/http. For random instants in each form, both accept the
// value and agree on the instant. http.ParseTime reads an RFC 850 year
// with Go's pivot (69 to 99 are 1969 to 1999, 00 to 68 are 2000 to 2068),
// ParseRetryAfter with the RFC's window around now's year, so the RFC 850
// instants here lie in 1970 to 2068 and now within 40 years before them,
// where the two readings agree; TestParseRetryAfterDiffersFromHTTPParseTime
// shows where they do not.
func TestParseRetryAfterMatchesHTTPParseTime(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 2))
	const year = 365 * 24 * time.Hour
	for i := range 1500 {
		form := httpDateForms[i%3]
		lo, hi := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
		before := 250 * year // within a time.Duration of the instant
		if form.layout == time.RFC850 {
			lo, hi = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2069, 1, 1, 0, 0, 0, 0, time.UTC)
			before = 40 * year
		}
		at := time.Unix(lo.Unix()+r.Int64N(hi.Unix()-lo.Unix()), 0).In(gmt)
		value := at.Format(form.layout)
		want, err := http.ParseTime(value)
		if err != nil || !want.Equal(at) {
			t.Fatalf("http.ParseTime(%q) = %v, %v; want %v (the test's own formatting is wrong)", value, want, err, at)
		}
		now := at.Add(-time.Duration(r.Int64N(int64(before)))).Add(time.Duration(r.Int64N(1e9)))
		if d, ok := ParseRetryAfter(value, now); d != max(want.Sub(now), 0) || !ok {
			t.Fatalf("ParseRetryAfter(%q, %v) = %v, %v; want %v, true, as http.ParseTime says", value, now, d, ok, max(want.Sub(now), 0))
		}
		if d, ok := ParseRetryAfter(value, at.Add(time.Second)); d != 0 || !ok {
			t.Fatalf("ParseRetryAfter(%q, 1s after it) = %v, %v; want 0, true", value, d, ok)
		}
	}
}

// Every value ParseRetryAfter accepts as a date, http.ParseTime accepts
// too, with the same instant (http.ParseTime accepts more: any case,
// runs of spaces, a fraction of a second, other zones in RFC 850), but
// for the two documented differences:
//   - a second of 60, which the RFC allows for a leap second and
//     http.ParseTime rejects: ParseRetryAfter reads it as :59 and one
//     second more, the next minute's :00;
//   - the RFC 850 two-digit year, which ParseRetryAfter places at most
//     50 years after now's year (RFC 9110, 5.6.7) and http.ParseTime by
//     Go's fixed pivot; here now is an hour before http.ParseTime's
//     instant, where both agree (see the test below for where they do not).
func TestParseRetryAfterDatesAreHTTPDates(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 3))
	dates, leaps := 0, 0
	for range 5000 {
		value := genRetryAfter(r)
		trimmed := strings.Trim(value, " \t")
		if _, ok := ParseRetryAfter(value, parseNow); !ok || isDigits(trimmed) {
			continue // not a date
		}
		dates++
		goValue, extra := trimmed, time.Duration(0)
		ht, err := http.ParseTime(goValue)
		if err != nil && leapSecond.MatchString(trimmed) {
			leaps++
			goValue, extra = leapSecond.ReplaceAllString(trimmed, ":59$1"), time.Second
			ht, err = http.ParseTime(goValue)
		}
		if err != nil {
			t.Fatalf("ParseRetryAfter accepts %q; http.ParseTime(%q) = %v", value, goValue, err)
		}
		now := ht.Add(-time.Hour)
		if d, ok := ParseRetryAfter(value, now); d != time.Hour+extra || !ok {
			t.Fatalf("ParseRetryAfter(%q, an hour before http.ParseTime's %v) = %v, %v; want %v, true", value, ht, d, ok, time.Hour+extra)
		}
	}
	if dates < 1000 || leaps == 0 {
		t.Errorf("%d dates, %d of them with a leap second, in 5000 generated values; want more", dates, leaps)
	}
}

var leapSecond = regexp.MustCompile(`:60( |$)`)

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// The RFC 850 year is where ParseRetryAfter and http.ParseTime
// legitimately differ: from 2026, "70" is 2070 for the RFC (not more than
// 50 years ahead) and 1970 for Go's pivot.
func TestParseRetryAfterDiffersFromHTTPParseTime(t *testing.T) {
	now := time.Date(2026, time.December, 3, 0, 0, 0, 0, time.UTC)
	value := "Thursday, 01-Jan-70 00:00:00 GMT"
	ht, err := http.ParseTime(value)
	if err != nil || ht.Year() != 1970 {
		t.Fatalf("http.ParseTime(%q) = %v, %v; want 1970", value, ht, err)
	}
	want := time.Date(2070, time.January, 1, 0, 0, 0, 0, time.UTC).Sub(now)
	if d, ok := ParseRetryAfter(value, now); d != want || !ok {
		t.Errorf("ParseRetryAfter(%q, %v) = %v, %v; want %v (2070), true", value, now, d, ok, want)
	}
	// and the leap second
	leap := "Thu, 31 Dec 1998 23:59:60 GMT"
	if _, err := http.ParseTime(leap); err == nil {
		t.Errorf("http.ParseTime(%q) = nil error; want an error (Go has no second 60)", leap)
	}
	if d, ok := ParseRetryAfter(leap, time.Date(1998, 12, 31, 23, 59, 0, 0, time.UTC)); d != time.Minute || !ok {
		t.Errorf("ParseRetryAfter(%q, 23:59:00) = %v, %v; want 1m0s, true", leap, d, ok)
	}
}

// The oracle checks ParseRetryAfter over generated values: valid values of
// each form, the same with mutations, and random strings of the bytes
// that HTTP-dates are made of; for each, now is random, from 1600 to 2400,
// so that the RFC 850 window moves.
func TestParseRetryAfterOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 1))
	accepted := map[bool]int{}
	lo, hi := time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), time.Date(2400, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	for range 5000 { // few enough for -race; FuzzParseRetryAfter goes further
		value := genRetryAfter(r)
		now := time.Unix(lo+r.Int64N(hi-lo), r.Int64N(1e9)).UTC()
		if r.IntN(4) == 0 {
			now = time.Date(1600+r.IntN(800), time.January, 1, 0, 0, 0, 0, time.UTC) // a year's edge
		}
		d, ok := ParseRetryAfter(value, now)
		accepted[ok]++
		if wd, wok := oracleRetryAfter(value, now); d != wd || ok != wok {
			t.Fatalf("ParseRetryAfter(%q, %v) = %v, %v; want %v, %v, as the oracle says", value, now, d, ok, wd, wok)
		}
	}
	if accepted[true] < 1000 || accepted[false] < 1000 {
		t.Errorf("generated values accepted, rejected = %d, %d; want both at least 1000", accepted[true], accepted[false])
	}
}

// oracleRetryAfter is ParseRetryAfter written again from RFC 9110's
// grammar, with regular expressions and a calendar worked by hand, and
// none of hint.go's helpers:
//
//	Retry-After   = HTTP-date / delay-seconds              ; 10.2.3
//	delay-seconds = 1*DIGIT
//	HTTP-date     = IMF-fixdate / obs-date                 ; 5.6.7
//	IMF-fixdate   = day-name "," SP date1 SP time-of-day SP GMT
//	date1         = day SP month SP year
//	obs-date      = rfc850-date / asctime-date
//	rfc850-date   = day-name-l "," SP date2 SP time-of-day SP GMT
//	date2         = day "-" month "-" 2DIGIT
//	asctime-date  = day-name SP date3 SP time-of-day SP year
//	date3         = month SP ( 2DIGIT / ( SP DIGIT ) )
//	time-of-day   = hour ":" minute ":" second             ; 00:00:00 - 23:59:60
//
// with day, hour, minute and second 2DIGIT, year 4DIGIT, names and "GMT"
// case-sensitive (%s), and OWS (SP / HTAB) around a field value. The
// day must exist in its month, and the day name is not checked. An RFC
// 850 year is the one with its two digits in the 100 years that end 50
// years after now's year; a second of 60 is the next minute's :00.
func oracleRetryAfter(value string, now time.Time) (time.Duration, bool) {
	value = owsRE.FindStringSubmatch(value)[1]
	if secondsRE.MatchString(value) {
		n, _ := new(big.Int).SetString(value, 10)
		n.Mul(n, big.NewInt(int64(time.Second)))
		if !n.IsInt64() {
			return math.MaxInt64, true
		}
		return time.Duration(n.Int64()), true
	}
	var year, month, day, hour, minute, second int
	if m := imfRE.FindStringSubmatch(value); m != nil {
		day, month, year = atoi(m[1]), monthOf(m[2]), atoi(m[3])
		hour, minute, second = atoi(m[4]), atoi(m[5]), atoi(m[6])
	} else if m := rfc850RE.FindStringSubmatch(value); m != nil {
		day, month, year = atoi(m[1]), monthOf(m[2]), atoi(m[3])
		hour, minute, second = atoi(m[4]), atoi(m[5]), atoi(m[6])
		year += (now.Year() / 100) * 100
		for year > now.Year()+50 {
			year -= 100
		}
		for year <= now.Year()-50 {
			year += 100
		}
	} else if m := asctimeRE.FindStringSubmatch(value); m != nil {
		month, day = monthOf(m[1]), atoi(strings.TrimPrefix(m[2], " "))
		hour, minute, second, year = atoi(m[3]), atoi(m[4]), atoi(m[5]), atoi(m[6])
	} else {
		return 0, false
	}
	if day < 1 || day > daysIn(month, year) || hour > 23 || minute > 59 || second > 60 {
		return 0, false
	}
	unix := daysSinceEpoch(year, month, day)*86400 + int64(hour*3600+minute*60+second)
	return max(time.Unix(unix, 0).Sub(now), 0), true
}

const (
	dayRE   = `(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)`
	dayLRE  = `(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)`
	monthRE = `(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)`
	timeRE  = `([0-9]{2}):([0-9]{2}):([0-9]{2})`
)

var (
	owsRE     = regexp.MustCompile(`^[ \t]*((?s).*?)[ \t]*$`)
	secondsRE = regexp.MustCompile(`^[0-9]+$`)
	imfRE     = regexp.MustCompile(`^` + dayRE + `, ([0-9]{2}) ` + monthRE + ` ([0-9]{4}) ` + timeRE + ` GMT$`)
	rfc850RE  = regexp.MustCompile(`^` + dayLRE + `, ([0-9]{2})-` + monthRE + `-([0-9]{2}) ` + timeRE + ` GMT$`)
	asctimeRE = regexp.MustCompile(`^` + dayRE + ` ` + monthRE + ` ([0-9]{2}| [0-9]) ` + timeRE + ` ([0-9]{4})$`)
)

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err) // the regular expressions let only digits through
	}
	return n
}

// monthOf returns 1 for "Jan" through 12 for "Dec".
func monthOf(s string) int {
	return strings.Index("JanFebMarAprMayJunJulAugSepOctNovDec", s)/3 + 1
}

// daysIn returns the number of days in month (1 to 12) of the proleptic
// Gregorian year.
func daysIn(month, year int) int {
	switch {
	case month == 2 && year%4 == 0 && (year%100 != 0 || year%400 == 0):
		return 29
	case month == 2:
		return 28
	case month == 4 || month == 6 || month == 9 || month == 11:
		return 30
	}
	return 31
}

// daysSinceEpoch returns the days from 1 Jan 1970 to the date, counted
// month by month from 1 Mar of year 0 (so that a leap day ends its year).
func daysSinceEpoch(year, month, day int) int64 {
	y, m := int64(year), int64(month)
	if m <= 2 {
		y, m = y-1, m+12
	}
	// days before 1 Mar of year y, from 1 Mar of year 0
	days := 365*y + floorDiv(y, 4) - floorDiv(y, 100) + floorDiv(y, 400)
	// days from 1 Mar to the first of month m (3 to 14): 153 days a
	// five-month cycle of 31, 30, 31, 30, 31
	days += (153*(m-3) + 2) / 5
	days += int64(day) - 1
	const epoch = 719468 // 1 Mar of year 0 to 1 Jan 1970
	return days - epoch
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// genRetryAfter returns a value for a Retry-After field: a number, a date
// in one of the three forms with fields in and out of range, one of those
// mutated, or random bytes of the kinds that such values hold.
func genRetryAfter(r *rand.Rand) string {
	switch r.IntN(8) {
	case 0:
		return genSeconds(r)
	case 1, 2, 3:
		return genDate(r)
	case 4, 5, 6:
		var v string
		if r.IntN(4) == 0 {
			v = genSeconds(r)
		} else {
			v = genDate(r)
		}
		for range 1 + r.IntN(3) {
			v = mutate(r, v)
		}
		return v
	}
	b := make([]byte, r.IntN(32))
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

const alphabet = "0123456789 \t,:-+.GMTUCmontuewdhrsaiFSJbyMpAugNvDecl\n\x00\xff"

var (
	genDays   = []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}
	genLDays  = []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
	genMonths = []string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}
	ows       = []string{"", "", "", " ", "\t", " \t ", "  "}
)

func genSeconds(r *rand.Rand) string {
	n := 1 + r.IntN(12)
	if r.IntN(8) == 0 {
		n = 1 + r.IntN(40)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('0' + r.IntN(10))
	}
	return ows[r.IntN(len(ows))] + string(b) + ows[r.IntN(len(ows))]
}

// genDate returns a date in one of the three forms, its fields mostly in
// range, sometimes just out of it (day 0 or 29 to 32, hour 24, minute 60,
// second 60 or 61), around OWS.
func genDate(r *rand.Rand) string {
	pick := func(inRange, outOfRange int) int {
		if r.IntN(6) == 0 {
			return outOfRange
		}
		return inRange
	}
	year := 1600 + r.IntN(800)
	if r.IntN(10) == 0 {
		year = r.IntN(10000)
	}
	month := genMonths[r.IntN(12)]
	day := pick(1+r.IntN(28), []int{0, 29, 30, 31, 32}[r.IntN(5)])
	hour := pick(r.IntN(24), 24)
	minute := pick(r.IntN(60), 60)
	second := pick(r.IntN(60), 60+r.IntN(2))
	tod := fmt.Sprintf("%02d:%02d:%02d", hour, minute, second)
	var v string
	switch r.IntN(3) {
	case 0:
		v = fmt.Sprintf("%s, %02d %s %04d %s GMT", genDays[r.IntN(7)], day, month, year, tod)
	case 1:
		v = fmt.Sprintf("%s, %02d-%s-%02d %s GMT", genLDays[r.IntN(7)], day, month, year%100, tod)
	default:
		date3 := fmt.Sprintf("%2d", day)
		if r.IntN(3) == 0 {
			date3 = fmt.Sprintf("%02d", day)
		}
		v = fmt.Sprintf("%s %s %s %s %04d", genDays[r.IntN(7)], month, date3, tod, year)
	}
	return ows[r.IntN(len(ows))] + v + ows[r.IntN(len(ows))]
}

// mutate changes v a little: a byte replaced, removed, inserted or
// doubled, a letter's case flipped, or a character of OWS or other space
// added at an end.
func mutate(r *rand.Rand, v string) string {
	if v == "" {
		return string(alphabet[r.IntN(len(alphabet))])
	}
	i := r.IntN(len(v))
	c := string(alphabet[r.IntN(len(alphabet))])
	switch r.IntN(7) {
	case 0:
		return v[:i] + c + v[i+1:]
	case 1:
		return v[:i] + v[i+1:]
	case 2:
		return v[:i] + c + v[i:]
	case 3:
		return v[:i] + v[i:i+1] + v[i:]
	case 4:
		b := []byte(v)
		b[i] ^= 0x20 // flips the case of a letter
		return string(b)
	case 5:
		return []string{" ", "\t", "\n", "\r", "\v", "\u00a0"}[r.IntN(6)] + v
	}
	return v + []string{" ", "\t", "\n", "\r", "\v", "\u00a0", "x", "0"}[r.IntN(8)]
}

// The RFC 850 century window counts from now's year in GMT, as the date
// is: just before New Year in UTC, a zone already in the new year must not
// move the window.
func TestParseRetryAfterCenturyInGMT(t *testing.T) {
	utc := time.Date(2026, 12, 31, 23, 0, 0, 0, time.UTC) // 2027 in UTC+14; "77" is 2077 from 2027, 1977 from 2026
	now := utc.In(time.FixedZone("UTC+14", 14*3600))
	d, ok := ParseRetryAfter("Friday, 01-Jan-77 00:00:00 GMT", now)
	if !ok || d != 0 {
		t.Errorf("ParseRetryAfter(01-Jan-77, %v) = %v, %v; want 0, true (1977, in the past)", now, d, ok)
	}
}
