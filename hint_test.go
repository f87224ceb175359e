package retry

import (
	"context"
	"errors"
	"fmt"
	"go/build"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
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

// ParseRetryAfter as RFC 9110 writes Retry-After (10.2.3) and HTTP-date
// (5.6.7), with the differences that its doc lists. Every want is worked
// out by hand.
func TestParseRetryAfter(t *testing.T) {
	const longest = time.Duration(math.MaxInt64)
	plus14 := parseNow.In(time.FixedZone("UTC+14", 14*3600)) // the same instant
	tests := []struct {
		name  string
		value string
		now   time.Time // parseNow if zero
		want  time.Duration
		ok    bool
	}{
		// delay-seconds = 1*DIGIT, with OWS (spaces and tabs) around the field value
		{"zero", "0", time.Time{}, 0, true},
		{"seconds", "120", time.Time{}, 120 * time.Second, true},
		{"leading zeros", "00000000000000000000000000000120", time.Time{}, 120 * time.Second, true},
		{"OWS", " \t120\t ", time.Time{}, 120 * time.Second, true},
		{"longest whole seconds", "9223372036", time.Time{}, 9223372036 * time.Second, true},
		{"1s more saturates", "9223372037", time.Time{}, longest, true},
		{"MaxInt64 seconds saturate", "9223372036854775807", time.Time{}, longest, true},
		{"2^64 seconds saturate", "18446744073709551616", time.Time{}, longest, true},
		{"empty", "", time.Time{}, 0, false},
		{"OWS only", " \t ", time.Time{}, 0, false},
		{"negative", "-1", time.Time{}, 0, false},
		{"negative zero", "-0", time.Time{}, 0, false},
		{"plus sign", "+3", time.Time{}, 0, false},
		{"fraction", "1.5", time.Time{}, 0, false},
		{"unit", "120s", time.Time{}, 0, false},
		{"two numbers", "1 20", time.Time{}, 0, false},
		{"newline is not OWS", "120\n", time.Time{}, 0, false},
		{"full-width digits", "１２０", time.Time{}, 0, false},

		// IMF-fixdate = day-name "," SP day SP month SP year SP hour ":" minute ":" second SP "GMT"
		{"IMF-fixdate now", "Sun, 06 Nov 1994 08:49:37 GMT", time.Time{}, 0, true},
		{"IMF-fixdate 2m ahead", "Sun, 06 Nov 1994 08:51:37 GMT", time.Time{}, 2 * time.Minute, true},
		{"IMF-fixdate 1ns ahead", "Sun, 06 Nov 1994 08:49:37 GMT", parseNow.Add(-1), 1, true},
		{"IMF-fixdate 1s ago", "Sun, 06 Nov 1994 08:49:36 GMT", time.Time{}, 0, true},
		{"IMF-fixdate 24 days ahead", "Wed, 30 Nov 1994 08:49:37 GMT", time.Time{}, 24 * 24 * time.Hour, true},
		{"IMF-fixdate year 9999 saturates", "Fri, 31 Dec 9999 23:59:59 GMT", time.Time{}, longest, true},
		{"IMF-fixdate year 0001 from 9999", "Mon, 01 Jan 0001 00:00:00 GMT", time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), 0, true},
		{"IMF-fixdate in OWS", " \tSun, 06 Nov 1994 08:51:37 GMT\t ", time.Time{}, 2 * time.Minute, true},
		{"IMF-fixdate, now in UTC+14", "Sun, 06 Nov 1994 08:51:37 GMT", plus14, 2 * time.Minute, true},
		{"day name not checked", "Mon, 06 Nov 1994 08:51:37 GMT", time.Time{}, 2 * time.Minute, true},
		{"names in any case", "SUN, 06 nov 1994 08:51:37 GMT", time.Time{}, 2 * time.Minute, true},
		{"one-digit hour", "Sun, 06 Nov 1994 8:51:37 GMT", time.Time{}, 2 * time.Minute, true},
		{"fractional second", "Sun, 06 Nov 1994 08:51:37.5 GMT", time.Time{}, 2*time.Minute + 500*time.Millisecond, true},
		{"runs of spaces", "Sun,  06 Nov  1994 08:51:37 GMT", time.Time{}, 2 * time.Minute, true},
		{"no second 60", "Sun, 06 Nov 1994 08:50:60 GMT", time.Time{}, 0, false},
		{"31 Nov", "Thu, 31 Nov 1994 08:49:37 GMT", time.Time{}, 0, false},
		{"hour 24", "Mon, 07 Nov 1994 24:00:00 GMT", time.Time{}, 0, false},
		{"two-digit year", "Sun, 06 Nov 94 08:51:37 GMT", time.Time{}, 0, false},
		{"UTC", "Sun, 06 Nov 1994 08:51:37 UTC", time.Time{}, 0, false},
		{"no zone", "Sun, 06 Nov 1994 08:51:37", time.Time{}, 0, false},
		{"trailing seconds", "Sun, 06 Nov 1994 08:51:37 GMT 120", time.Time{}, 0, false},
		{"truncated", "Sun, 06 Nov 1994 08:51", time.Time{}, 0, false},

		// rfc850-date = day-name-l "," SP day "-" month "-" 2DIGIT SP time-of-day SP "GMT";
		// the doc: 69-99 is 19xx, 00-68 is 20xx, and GMT only
		{"RFC 850 1s ahead", "Sunday, 06-Nov-94 08:49:38 GMT", time.Time{}, time.Second, true},
		{"RFC 850 68 is 2068", "Sunday, 01-Jan-68 00:00:00 GMT", time.Date(2067, 12, 31, 23, 59, 59, 0, time.UTC), time.Second, true},
		{"RFC 850 69 is 1969", "Wednesday, 01-Jan-69 00:00:00 GMT", time.Date(1968, 12, 31, 23, 59, 59, 0, time.UTC), time.Second, true},
		{"RFC 850, now in UTC+14", "Sunday, 06-Nov-94 08:51:37 GMT", plus14, 2 * time.Minute, true},
		{"RFC 850 in UTC", "Sunday, 06-Nov-94 08:51:37 UTC", time.Time{}, 0, false},
		{"RFC 850 in EST", "Sunday, 06-Nov-94 03:51:37 EST", time.Time{}, 0, false},
		{"RFC 850 four-digit year", "Sunday, 06-Nov-1994 08:51:37 GMT", time.Time{}, 0, false},

		// asctime-date = day-name SP month SP ( 2DIGIT / ( SP DIGIT ) ) SP time-of-day SP year
		{"asctime 1m ahead", "Sun Nov  6 08:50:37 1994", time.Time{}, time.Minute, true},
		{"asctime 06", "Sun Nov 06 08:50:37 1994", time.Time{}, time.Minute, true},
		{"asctime 16", "Wed Nov 16 08:49:37 1994", time.Time{}, 10 * 24 * time.Hour, true},
		{"asctime, now in UTC+14", "Sun Nov  6 08:50:37 1994", plus14, time.Minute, true},
		{"asctime with GMT", "Sun Nov  6 08:50:37 1994 GMT", time.Time{}, 0, false},
		{"asctime two-digit year", "Sun Nov  6 08:50:37 94", time.Time{}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := tt.now
			if now.IsZero() {
				now = parseNow
			}
			if d, ok := ParseRetryAfter(tt.value, now); d != tt.want || ok != tt.ok {
				t.Errorf("ParseRetryAfter(%q, %v) = %v, %v; want %v, %v", tt.value, now, d, ok, tt.want, tt.ok)
			}
		})
	}
}

// ParseRetryAfter reads the three forms of an HTTP-date as http.ParseTime
// does: for random instants from year 1 to 9999, formatted in each form
// in GMT, both accept the value and agree on the instant (an RFC 850 year
// is read as 1969 to 2068 by both), from a random now before it.
func TestParseRetryAfterMatchesHTTPParseTime(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 2))
	gmt := time.FixedZone("GMT", 0) // which formats as the RFC's "GMT"; time.UTC as "UTC"
	lo, hi := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	for i := range 1500 {
		layout := []string{http.TimeFormat, time.RFC850, time.ANSIC}[i%3]
		value := time.Unix(lo+r.Int64N(hi-lo), 0).In(gmt).Format(layout)
		at, err := http.ParseTime(value)
		if err != nil {
			t.Fatalf("http.ParseTime(%q) = %v (the test's own formatting is wrong)", value, err)
		}
		now := at.Add(-time.Duration(r.Int64N(int64(100 * 365 * 24 * time.Hour)))).Add(time.Duration(r.Int64N(1e9)))
		if d, ok := ParseRetryAfter(value, now); d != max(at.Sub(now), 0) || !ok {
			t.Fatalf("ParseRetryAfter(%q, %v) = %v, %v; want %v, true, as http.ParseTime says", value, now, d, ok, max(at.Sub(now), 0))
		}
	}
}

// The package does not import net/http, whose ParseTime ParseRetryAfter
// reads like: a retry library must not pull in an HTTP stack.
func TestNoNetHTTP(t *testing.T) {
	bp, err := build.ImportDir(".", 0) // the files `go build` uses here
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(bp.Imports, "net/http") {
		t.Errorf("the package's imports = %v; want no net/http", bp.Imports)
	}
}
