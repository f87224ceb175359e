package retry

import (
	"context"
	"errors"
	"fmt"
	"go/build"
	"math"
	"math/big"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// Do honours a hint, from After or any RetryAfter method, as After's doc
// says: the wait is max(jitter, hint) for that one wait; the first
// positive hint in the chain counts; a hint that does not fit under
// MaxDelay, or before a deadline, ends the run at once with HintTooLong,
// whose Cause is nil; a deadline that has passed wins over any hint; and
// Permanent wins over a hint.
func TestDoHonoursHints(t *testing.T) {
	tests := []struct {
		name       string
		first, err error         // fn fails with first (if set) and then with err, every call
		cost       time.Duration // the fake time each call takes
		p          Policy        // Rand is constRand(0) if nil: the default Jitter then waits BaseDelay, 100ms
		ctxTimeout time.Duration
		waits      []time.Duration // as the Sleeper records them and OnRetry reports them
		want       Reason          // 0: Do returns err as fn returned it
		msg        string          // Do's message, if set
	}{
		{name: "hint longer than the jitter", err: After(5*time.Second, errBoom), p: Policy{MaxAttempts: 3},
			waits: []time.Duration{5 * time.Second, 5 * time.Second}, want: MaxAttemptsReached},
		{name: "hint shorter than the jitter", err: After(time.Millisecond, errBoom), p: Policy{MaxAttempts: 2},
			waits: []time.Duration{100 * time.Millisecond}, want: MaxAttemptsReached},
		{name: "1ns hint over a jitter of 0 and a deeper 2s hint", err: After(1, hintErr(2*time.Second)), p: Policy{MaxAttempts: 2, Jitter: FullJitter},
			waits: []time.Duration{1}, want: MaxAttemptsReached},
		{name: "zero hint", err: hintErr(0), p: Policy{MaxAttempts: 2},
			waits: []time.Duration{100 * time.Millisecond}, want: MaxAttemptsReached},
		{name: "negative hint", err: hintErr(-time.Second), p: Policy{MaxAttempts: 2, Timeout: time.Second},
			waits: []time.Duration{100 * time.Millisecond}, want: MaxAttemptsReached},
		// decorrelated at u = 0.5 from 10ms: 20ms (raised to the 2s hint), 35ms, 57.5ms
		{name: "hint raises one wait; the jitter goes on from its own choice", first: hintErr(2 * time.Second), err: errBoom,
			p:     Policy{MaxAttempts: 4, BaseDelay: 10 * time.Millisecond, Rand: constRand(0.5)},
			waits: []time.Duration{2 * time.Second, 35 * time.Millisecond, 57500 * time.Microsecond}, want: MaxAttemptsReached},

		// the chain, walked as errors.As walks it
		{name: "hint wrapped with %w", err: fmt.Errorf("get: %w", After(2*time.Second, errBoom)), p: Policy{MaxAttempts: 2},
			waits: []time.Duration{2 * time.Second}, want: MaxAttemptsReached},
		{name: "first hint of a join", err: errors.Join(errBoom, hintErr(time.Second), hintErr(2*time.Second)), p: Policy{MaxAttempts: 2},
			waits: []time.Duration{time.Second}, want: MaxAttemptsReached},
		{name: "shorter hint outside a longer one", err: After(2*time.Second, After(3*time.Second, errBoom)), p: Policy{MaxAttempts: 2},
			waits: []time.Duration{2 * time.Second}, want: MaxAttemptsReached}, // the outermost counts, not the longest
		{name: "short hint outside one above MaxDelay", err: After(time.Second, After(time.Hour, errBoom)), p: Policy{MaxAttempts: 2},
			waits: []time.Duration{time.Second}, want: MaxAttemptsReached},
		{name: "zero hint outside a positive one", err: wrapHint{0, After(2*time.Second, errBoom)}, p: Policy{MaxAttempts: 2},
			waits: []time.Duration{2 * time.Second}, want: MaxAttemptsReached},
		{name: "negative hint outside a positive one", err: wrapHint{-time.Second, hintErr(2 * time.Second)}, p: Policy{MaxAttempts: 2},
			waits: []time.Duration{2 * time.Second}, want: MaxAttemptsReached},

		// MaxDelay and the deadlines
		{name: "hint equal to MaxDelay", err: After(time.Second, errBoom), p: Policy{MaxAttempts: 2, MaxDelay: time.Second},
			waits: []time.Duration{time.Second}, want: MaxAttemptsReached},
		{name: "hint above MaxDelay", err: After(31*time.Second, errBoom), want: HintTooLong,
			msg: "retry: gave up after 1 attempt in 0s (retry-after hint too long: 31s, above MaxDelay 30s): boom"},
		{name: "hint that ends before the Timeout", err: After(4*time.Second, errBoom), p: Policy{MaxAttempts: 2, Timeout: 5 * time.Second},
			waits: []time.Duration{4 * time.Second}, want: MaxAttemptsReached},
		{name: "hint that ends at the Timeout", err: After(5*time.Second, errBoom), p: Policy{Timeout: 5 * time.Second}, want: HintTooLong,
			msg: "retry: gave up after 1 attempt in 0s (retry-after hint too long: 5s, with 5s left before Policy.Timeout): boom"},
		{name: "hint that ends before ctx's deadline", err: hintErr(time.Second), p: Policy{MaxAttempts: 2}, ctxTimeout: time.Hour,
			waits: []time.Duration{time.Second}, want: MaxAttemptsReached},
		{name: "hint that ends at ctx's deadline", err: hintErr(time.Hour), p: Policy{MaxDelay: 2 * time.Hour}, ctxTimeout: time.Hour, want: HintTooLong},
		{name: "hint past both limits names MaxDelay", err: hintErr(time.Minute), p: Policy{MaxDelay: 10 * time.Second, Timeout: time.Second}, want: HintTooLong,
			msg: "retry: gave up after 1 attempt in 0s (retry-after hint too long: 1m0s, above MaxDelay 10s): slow down"},
		{name: "passed Timeout wins over a 1ms hint", err: hintErr(time.Millisecond), cost: 2 * time.Hour, p: Policy{Timeout: time.Hour}, want: DeadlineReached},
		{name: "passed Timeout wins over a hint above MaxDelay", err: hintErr(time.Hour), cost: 2 * time.Hour, p: Policy{Timeout: time.Hour}, want: DeadlineReached},
		{name: "passed ctx deadline wins over a 1ms hint", err: hintErr(time.Millisecond), cost: 2 * time.Hour, ctxTimeout: time.Hour, want: DeadlineReached},
		{name: "passed ctx deadline wins over a hint above MaxDelay", err: hintErr(time.Hour), cost: 2 * time.Hour, ctxTimeout: time.Hour, want: DeadlineReached},

		// Permanent wins, on either side of After
		{name: "Permanent(After(d, err))", err: Permanent(After(time.Second, errBoom))},
		{name: "After(d, Permanent(err))", err: After(time.Second, Permanent(errBoom))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			ctx := ft.deadlineCtx(t, tt.ctxTimeout)
			calls := 0
			fn := func(context.Context) error {
				calls++
				ft.advance(tt.cost)
				if calls == 1 && tt.first != nil {
					return tt.first
				}
				return tt.err
			}
			p := ft.with(tt.p)
			if p.Rand == nil {
				p.Rand = constRand(0)
			}
			var reported []time.Duration
			p.OnRetry = func(_ context.Context, _ int, _ error, wait time.Duration) { reported = append(reported, wait) }
			err := Do(ctx, fn, p)
			if got := ft.Waits(); !slices.Equal(got, tt.waits) {
				t.Errorf("Do() waits = %v; want %v", got, tt.waits)
			}
			if !slices.Equal(reported, tt.waits) {
				t.Errorf("OnRetry waits = %v; want %v", reported, tt.waits)
			}
			if want := len(tt.waits) + 1; calls != want {
				t.Errorf("Do() calls = %d; want %d", calls, want)
			}
			if tt.msg != "" && (err == nil || err.Error() != tt.msg) {
				t.Errorf("Do() = %v; want %q", err, tt.msg)
			}
			if tt.want == 0 {
				if err != tt.err {
					t.Errorf("Do() = %v; want fn's error itself", err)
				}
				return
			}
			switch re := wantExhausted(t, err, tt.want, calls); {
			case re.Last != tt.err || !errors.Is(err, tt.err):
				t.Errorf("Do() Last = %v; want fn's last error, reached by errors.Is", re.Last)
			case errors.Is(err, context.DeadlineExceeded) != (tt.want == DeadlineReached):
				t.Errorf("errors.Is(Do(), context.DeadlineExceeded) = %v; want %v", tt.want != DeadlineReached, tt.want == DeadlineReached)
			case tt.want == HintTooLong && re.Cause != nil:
				t.Errorf("Do() Cause = %v; want nil for a hint too long", re.Cause)
			}
		})
	}
}

// After's value: nil stays nil, d <= 0 returns err itself, and otherwise
// the result reads as err does, unwraps to it, and has RetryAfter() d.
func TestAfterValue(t *testing.T) {
	if err := After(time.Second, nil); err != nil {
		t.Errorf("After(1s, nil) = %v; want nil", err)
	}
	for _, d := range []time.Duration{0, -1, math.MinInt64} {
		if err := After(d, errBoom); err != errBoom {
			t.Errorf("After(%v, boom) = %#v; want boom itself", d, err)
		}
	}
	inner := hintErr(time.Second)
	err := After(3*time.Second, inner)
	var target hintErr
	switch h, ok := err.(interface{ RetryAfter() time.Duration }); {
	case err == error(inner) || !ok || h.RetryAfter() != 3*time.Second:
		t.Errorf("After(3s, err) = %#v; want err with a RetryAfter() of 3s", err)
	case err.Error() != inner.Error():
		t.Errorf("After(3s, err).Error() = %q; want %q", err.Error(), inner.Error())
	case errors.Unwrap(err) != error(inner):
		t.Errorf("errors.Unwrap(After(3s, err)) = %v; want err", errors.Unwrap(err))
	case !errors.Is(err, inner) || !errors.As(err, &target) || target != inner:
		t.Errorf("After(3s, err): errors.Is, errors.As do not reach err")
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

// FuzzParseRetryAfter checks ParseRetryAfter on arbitrary values and
// instants now (from 1677 to 2262): no panic; d never negative, and 0 when
// ok is false; a value of digits in OWS is that many seconds, saturated at
// the longest Duration; any other value, OWS trimmed, is accepted exactly
// when http.ParseTime accepts it, with d from now to its instant, except
// for an RFC 850 date in a zone other than GMT, which ParseRetryAfter
// rejects whatever the machine's zone.
func FuzzParseRetryAfter(f *testing.F) {
	now := time.Date(1994, time.November, 6, 8, 49, 37, 0, time.UTC).UnixNano()
	for _, v := range []string{
		"120", " \t0\t ", "9223372036", "9223372037", "18446744073709551616", "-1", "+1", "", "\t",
		"Sun, 06 Nov 1994 08:51:37 GMT", "sun, 06 NOV 1994 8:51:37.5 GMT", "Sun,  06 Nov 1994 08:51:37 GMT\n",
		"Thu, 31 Dec 1998 23:59:60 GMT", "Thu, 31 Nov 1994 08:49:37 GMT",
		"Sunday, 06-Nov-94 08:49:38 GMT", "Sunday, 06-Nov-94 08:49:38 UTC", "Sunday, 06-Nov-94 08:49:38 GMT+1",
		"Sun Nov  6 08:50:37 1994", "Sun Nov 6 08:50:37 1994 GMT",
	} {
		f.Add(v, now)
	}
	f.Add("Fri, 31 Dec 9999 23:59:59 GMT", int64(math.MinInt64))
	f.Add("Mon, 01 Jan 0001 00:00:00 GMT", int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, value string, nowNanos int64) {
		now := time.Unix(0, nowNanos).UTC()
		d, ok := ParseRetryAfter(value, now)
		switch {
		case d < 0:
			t.Fatalf("ParseRetryAfter(%q, %v) = %v, %v; want d >= 0", value, now, d, ok)
		case !ok && d != 0:
			t.Fatalf("ParseRetryAfter(%q, %v) = %v, false; want d 0 when ok is false", value, now, d)
		}
		var want time.Duration
		v := strings.Trim(value, " \t")
		if v != "" && strings.Trim(v, "0123456789") == "" { // delay-seconds
			n, _ := new(big.Int).SetString(v, 10)
			want = math.MaxInt64
			if n.Mul(n, big.NewInt(int64(time.Second))).IsInt64() {
				want = time.Duration(n.Int64())
			}
			if d != want || !ok {
				t.Fatalf("ParseRetryAfter(%q, %v) = %v, %v; want %v, true", value, now, d, ok, want)
			}
			return
		}
		at, err := http.ParseTime(v)
		if _, err850 := time.Parse(time.RFC850, v); err850 == nil && !strings.HasSuffix(v, " GMT") {
			if ok {
				t.Fatalf("ParseRetryAfter(%q, %v) = %v, true; want false for an RFC 850 date outside GMT", value, now, d)
			}
			return // http.ParseTime reads the zone with the machine's
		}
		if err == nil {
			want = max(at.Sub(now), 0)
		}
		if d != want || ok != (err == nil) {
			t.Fatalf("ParseRetryAfter(%q, %v) = %v, %v; want %v, %v, as http.ParseTime(%q) = %v, %v", value, now, d, ok, want, err == nil, v, at, err)
		}
	})
}
