package retry

import (
	"cmp"
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
	const s, ms = time.Second, time.Millisecond
	tests := []struct {
		name       string
		first, err error         // fn fails with first (if set) and then with err, every call
		cost       time.Duration // the fake time each call takes
		p          Policy        // Rand is constRand(0) if nil: the default Jitter then waits BaseDelay, 100ms
		ctxTimeout time.Duration
		waits      []time.Duration // as the Sleeper records them and OnRetry reports them; MaxAttempts is len(waits)+1
		want       Reason          // MaxAttemptsReached if waits is set; 0: Do returns err as fn returned it
		msg        string          // Do's message, if set
	}{
		{name: "hint longer than the jitter", err: After(5*s, errBoom), waits: []time.Duration{5 * s, 5 * s}},
		{name: "hint shorter than the jitter", err: After(ms, errBoom), waits: []time.Duration{100 * ms}},
		{name: "zero and negative hints", err: wrapHint{0, hintErr(-s)}, p: Policy{Timeout: s}, waits: []time.Duration{100 * ms}},
		// decorrelated at u = 0.5 from 10ms: 20ms (raised to the 2s hint), 35ms, 57.5ms
		{name: "hint raises one wait; the jitter goes on from its own choice", first: hintErr(2 * s), err: errBoom,
			p: Policy{BaseDelay: 10 * ms, Rand: constRand(0.5)}, waits: []time.Duration{2 * s, 35 * ms, 57500 * time.Microsecond}},

		// the chain, walked as errors.As walks it: the first positive hint counts
		{name: "1ns hint over a jitter of 0 and a deeper 2s hint", err: After(1, hintErr(2*s)), p: Policy{Jitter: FullJitter}, waits: []time.Duration{1}},
		{name: "%w of a short hint outside one above MaxDelay", err: fmt.Errorf("get: %w", After(s, After(time.Hour, errBoom))), waits: []time.Duration{s}},
		{name: "first hint of a join", err: errors.Join(errBoom, hintErr(s), hintErr(2*s)), waits: []time.Duration{s}},
		{name: "zero and negative hints outside a positive one", err: wrapHint{0, wrapHint{-s, hintErr(2 * s)}}, waits: []time.Duration{2 * s}},

		// MaxDelay and the deadlines
		{name: "hint equal to MaxDelay", err: After(s, errBoom), p: Policy{MaxDelay: s}, waits: []time.Duration{s}},
		{name: "hint above MaxDelay", err: After(31*s, errBoom), want: HintTooLong},
		{name: "hint that ends before the Timeout and ctx's deadline", err: After(4*s, errBoom), p: Policy{Timeout: 5 * s}, ctxTimeout: 5 * s, waits: []time.Duration{4 * s}},
		{name: "hint that ends at the Timeout", err: After(5*s, errBoom), p: Policy{Timeout: 5 * s}, want: HintTooLong},
		{name: "hint that ends at ctx's deadline", err: hintErr(time.Hour), p: Policy{MaxDelay: 2 * time.Hour}, ctxTimeout: time.Hour, want: HintTooLong},
		{name: "hint past both limits names MaxDelay", err: hintErr(time.Minute), p: Policy{MaxDelay: 10 * s, Timeout: s}, want: HintTooLong,
			msg: "retry: gave up after 1 attempt in 0s (retry-after hint too long: 1m0s, above MaxDelay 10s): slow down"},
		{name: "passed Timeout wins over a 1ms hint", err: hintErr(ms), cost: 2 * time.Hour, p: Policy{Timeout: time.Hour}, want: DeadlineReached},
		{name: "passed ctx deadline wins over a hint above MaxDelay", err: hintErr(time.Hour), cost: 2 * time.Hour, ctxTimeout: time.Hour, want: DeadlineReached},

		// Permanent wins, on either side of After
		{name: "Permanent(After(d, err))", err: Permanent(After(s, errBoom))},
		{name: "After(d, Permanent(err))", err: After(s, Permanent(errBoom))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
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
			if tt.waits != nil {
				p.MaxAttempts, tt.want = len(tt.waits)+1, MaxAttemptsReached
			}
			var reported []time.Duration
			p.OnRetry = func(_ context.Context, _ int, _ error, wait time.Duration) { reported = append(reported, wait) }
			err := Do(ft.deadlineCtx(t, tt.ctxTimeout), fn, p)
			if got := ft.Waits(); !slices.Equal(got, tt.waits) || !slices.Equal(reported, tt.waits) || calls != len(tt.waits)+1 {
				t.Errorf("Do() waits = %v, OnRetry's %v, calls %d; want %v, and a call after each", got, reported, calls, tt.waits)
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
	for _, tt := range []struct {
		d   time.Duration
		err error
	}{{time.Second, nil}, {0, errBoom}, {-1, errBoom}, {math.MinInt64, errBoom}} {
		if got := After(tt.d, tt.err); got != tt.err {
			t.Errorf("After(%v, %v) = %#v; want %v itself", tt.d, tt.err, got, tt.err)
		}
	}
	inner := hintErr(time.Second)
	err := After(3*time.Second, inner)
	var target hintErr
	if h, ok := err.(interface{ RetryAfter() time.Duration }); !ok || h.RetryAfter() != 3*time.Second ||
		err.Error() != inner.Error() || errors.Unwrap(err) != error(inner) || !errors.As(err, &target) || target != inner {
		t.Errorf("After(3s, err) = %#v; want err's message, RetryAfter() 3s, and unwrapping to err", err)
	}
}

// parseNow is the RFC's own example instant, Sun, 06 Nov 1994 08:49:37 GMT.
var parseNow = time.Date(1994, time.November, 6, 8, 49, 37, 0, time.UTC)

// parseCases are ParseRetryAfter's answers, as RFC 9110 writes Retry-After
// (10.2.3) and HTTP-date (5.6.7), with the differences that its doc lists;
// every want is worked out by hand.
var parseCases = []struct {
	name   string
	values []string
	now    time.Time // parseNow if zero
	want   time.Duration
	ok     bool
}{
	// delay-seconds = 1*DIGIT, with OWS (spaces and tabs) around the field value
	{"zero", []string{"0"}, time.Time{}, 0, true},
	{"seconds", []string{"120", "00000000000000000000000000000120", " \t120\t "}, time.Time{}, 120 * time.Second, true},
	{"longest whole seconds", []string{"9223372036"}, time.Time{}, 9223372036 * time.Second, true},
	{"more saturate", []string{"9223372037", "18446744073709551616"}, time.Time{}, math.MaxInt64, true},
	{"not delay-seconds", []string{"", " \t ", "-1", "-0", "+3", "1.5", "120s", "1 20", "120\n", "１２０"}, time.Time{}, 0, false},

	// IMF-fixdate = day-name "," SP day SP month SP year SP hour ":" minute ":" second SP "GMT";
	// the doc: the day name is not checked; one-digit hours, fractions, runs of spaces, names in any case pass
	{"IMF-fixdate 2m ahead", []string{"Sun, 06 Nov 1994 08:51:37 GMT", " \tSun, 06 Nov 1994 08:51:37 GMT\t ",
		"Mon, 06 Nov 1994 08:51:37 GMT", "SUN, 06 nov 1994 08:51:37 GMT", "Sun, 06 Nov 1994 8:51:37 GMT",
		"Sun,  06 Nov  1994 08:51:37 GMT"}, time.Time{}, 2 * time.Minute, true},
	{"IMF-fixdate 1ns ahead", []string{"Sun, 06 Nov 1994 08:49:37 GMT"}, parseNow.Add(-1), 1, true},
	{"IMF-fixdate 1s ago", []string{"Sun, 06 Nov 1994 08:49:36 GMT"}, time.Time{}, 0, true},
	{"IMF-fixdate fractional second", []string{"Sun, 06 Nov 1994 08:51:37.5 GMT"}, time.Time{}, 2*time.Minute + 500*time.Millisecond, true},
	{"IMF-fixdate year 9999 saturates", []string{"Fri, 31 Dec 9999 23:59:59 GMT"}, time.Time{}, math.MaxInt64, true},
	{"IMF-fixdate year 0001 from 9999", []string{"Mon, 01 Jan 0001 00:00:00 GMT"}, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), 0, true},
	// second 60, 31 Nov, hour 24, two-digit year, zone UTC, gmt or none, trailing text, truncated
	{"not IMF-fixdates", []string{"Thu, 31 Dec 1998 23:59:60 GMT", "Thu, 31 Nov 1994 08:49:37 GMT", "Mon, 07 Nov 1994 24:00:00 GMT",
		"Sun, 06 Nov 94 08:51:37 GMT", "Sun, 06 Nov 1994 08:51:37 UTC", "Sun, 06 Nov 1994 08:51:37 gmt", "Sun, 06 Nov 1994 08:51:37",
		"Sun, 06 Nov 1994 08:51:37 GMT 120", "Sun, 06 Nov 1994 08:51:37 GMT\n", "Sun, 06 Nov 1994 08:51"}, time.Time{}, 0, false},

	// rfc850-date = day-name-l "," SP day "-" month "-" 2DIGIT SP time-of-day SP "GMT";
	// the doc: 69-99 is 19xx, 00-68 is 20xx, and GMT only
	{"RFC 850 1s ahead", []string{"Sunday, 06-Nov-94 08:49:38 GMT"}, time.Time{}, time.Second, true},
	{"RFC 850 68 is 2068", []string{"Sunday, 01-Jan-68 00:00:00 GMT"}, time.Date(2067, 12, 31, 23, 59, 59, 0, time.UTC), time.Second, true},
	{"RFC 850 69 is 1969", []string{"Wednesday, 01-Jan-69 00:00:00 GMT"}, time.Date(1968, 12, 31, 23, 59, 59, 0, time.UTC), time.Second, true},
	{"not RFC 850 dates", []string{"Sunday, 06-Nov-94 08:51:37 UTC", "Sunday, 06-Nov-94 03:51:37 EST",
		"Sunday, 06-Nov-94 08:49:38 GMT+1", "Sunday, 06-Nov-1994 08:51:37 GMT"}, time.Time{}, 0, false},

	// asctime-date = day-name SP month SP ( 2DIGIT / ( SP DIGIT ) ) SP time-of-day SP year
	{"asctime 1m ahead", []string{"Sun Nov  6 08:50:37 1994", "Sun Nov 06 08:50:37 1994"}, time.Time{}, time.Minute, true},
	{"asctime 10 days ahead", []string{"Wed Nov 16 08:49:37 1994"}, time.Time{}, 10 * 24 * time.Hour, true},
	{"not asctime dates", []string{"Sun Nov  6 08:50:37 1994 GMT", "Sun Nov  6 08:50:37 94"}, time.Time{}, 0, false},

	{"each form, now in UTC+14", []string{"Sun, 06 Nov 1994 08:51:37 GMT", "Sunday, 06-Nov-94 08:51:37 GMT",
		"Sun Nov  6 08:51:37 1994"}, parseNow.In(time.FixedZone("UTC+14", 14*3600)), 2 * time.Minute, true},
}

func TestParseRetryAfter(t *testing.T) {
	for _, tt := range parseCases {
		now := cmp.Or(tt.now, parseNow)
		for _, v := range tt.values {
			if d, ok := ParseRetryAfter(v, now); d != tt.want || ok != tt.ok {
				t.Errorf("%s: ParseRetryAfter(%q, %v) = %v, %v; want %v, %v", tt.name, v, now, d, ok, tt.want, tt.ok)
			}
		}
	}
}

// The package does not import net/http, whose ParseTime ParseRetryAfter
// reads like: a retry library must not pull in an HTTP stack.
func TestNoNetHTTP(t *testing.T) {
	// ImportDir reads the files `go build` uses here; its *Package is never nil.
	if bp, err := build.ImportDir(".", 0); err != nil || slices.Contains(bp.Imports, "net/http") {
		t.Errorf("the package's imports = %v, %v; want no net/http", bp.Imports, err)
	}
}

// FuzzParseRetryAfter checks ParseRetryAfter on arbitrary values and
// instants now (from 1677 to 2262): no panic; d never negative, and 0 when
// ok is false; a value of digits in OWS is that many seconds, saturated at
// the longest Duration; any other value, OWS trimmed, is accepted exactly
// when http.ParseTime accepts it, with d from now to its instant, except
// for an RFC 850 date in a zone other than GMT, which ParseRetryAfter
// rejects whatever the machine's zone. Its seeds are TestParseRetryAfter's
// values, and random instants from 1780 to 2261 in each form of an
// HTTP-date, from a random now up to a century before.
func FuzzParseRetryAfter(f *testing.F) {
	for _, tt := range parseCases {
		for _, v := range tt.values {
			f.Add(v, parseNow.UnixNano())
		}
	}
	f.Add("Fri, 31 Dec 9999 23:59:59 GMT", int64(math.MinInt64))
	f.Add("Mon, 01 Jan 0001 00:00:00 GMT", int64(math.MaxInt64))
	r := rand.New(rand.NewPCG(22, 2))
	gmt := time.FixedZone("GMT", 0) // which formats as the RFC's "GMT"; time.UTC as "UTC"
	lo, hi := time.Date(1780, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	for i := range 600 {
		at := time.Unix(lo+r.Int64N(hi-lo), 0)
		now := at.Add(-time.Duration(r.Int64N(int64(100*365*24*time.Hour))) + time.Duration(r.Int64N(1e9)))
		f.Add(at.In(gmt).Format([]string{http.TimeFormat, time.RFC850, time.ANSIC}[i%3]), now.UnixNano())
	}
	f.Fuzz(func(t *testing.T, value string, nowNanos int64) {
		now := time.Unix(0, nowNanos).UTC()
		var want time.Duration // 0 unless accepted
		accepted := false
		v := strings.Trim(value, " \t")
		_, err850 := time.Parse(time.RFC850, v)
		at, err := http.ParseTime(v)
		switch {
		case v != "" && strings.Trim(v, "0123456789") == "": // delay-seconds
			n, _ := new(big.Int).SetString(v, 10)
			want, accepted = math.MaxInt64, true
			if n.Mul(n, big.NewInt(int64(time.Second))).IsInt64() {
				want = time.Duration(n.Int64())
			}
		case err850 == nil && !strings.HasSuffix(v, " GMT"): // refused; http.ParseTime reads the zone with the machine's
		case err == nil:
			want, accepted = max(at.Sub(now), 0), true
		}
		if d, ok := ParseRetryAfter(value, now); d != want || ok != accepted {
			t.Fatalf("ParseRetryAfter(%q, %v) = %v, %v; want %v, %v (http.ParseTime(%q) = %v, %v)", value, now, d, ok, want, accepted, v, at, err)
		}
	})
}
