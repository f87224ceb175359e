package retry

import (
	"context"
	"errors"
	"math"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzJitter checks every jitter function over arbitrary arguments: no
// panic; with base and maxDelay clamped as the Jitter doc says, the wait is in
// [0, maxDelay] (and at least base for DecorrelatedJitter); out of range, the
// wait is exactly that at the clamped arguments; and it is the value of
// the documented formula, which checkJitterSpec computes with math/big
// and not with the package's helpers.
func FuzzJitter(f *testing.F) {
	f.Add(0, int64(time.Millisecond), int64(time.Second), int64(0), 0.5)
	f.Add(62, int64(1), int64(math.MaxInt64), int64(math.MaxInt64), 0.999)
	f.Add(math.MaxInt, int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64/3+1), 1.0)
	f.Add(-1, int64(-5), int64(-1), int64(math.MinInt64), math.NaN())
	f.Add(3, int64(time.Hour), int64(time.Second), int64(time.Minute), math.Inf(1))
	f.Add(1, int64(100), int64(1000), int64(-100), math.Inf(-1))
	f.Add(1, int64(1), int64(3), int64(0), 0.0)
	f.Add(1, int64(math.MaxInt64/2), int64(math.MaxInt64), int64(math.MaxInt64/3), 1.0)
	f.Fuzz(func(t *testing.T, n int, b, m, p int64, u float64) {
		base, maxDelay, prev := time.Duration(b), time.Duration(m), time.Duration(p)
		cn, cbase, cmaxDelay, cprev, cu := specArgs(n, base, maxDelay, prev, u)
		for _, j := range jitters {
			got := checkJitterBounds(t, j.name, j.f, n, base, maxDelay, prev, u)
			if want := j.f(cn, cbase, cmaxDelay, cprev, cu); got != want {
				t.Fatalf("%s(%d, %d, %d, %d, %v) = %d; want %d, its value at the clamped arguments", j.name, n, base, maxDelay, prev, u, got, want)
			}
			checkJitterSpec(t, j.name, n, base, maxDelay, prev, u, got)
		}
	})
}

// FuzzDo runs Do on fake time with arbitrary Policy fields, failures,
// hints, call durations, Rand values, a ctx deadline, and (from the bits
// of kind) failures marked Permanent, a predicate that retries nothing, a
// Budget of one retry or an AttemptTimeout, and checks the invariants that
// hold whatever the input.
func FuzzDo(f *testing.F) {
	f.Add(0, int64(0), int64(0), int64(0), int64(0), uint8(3), int64(0), int64(0), uint8(0), 0.5)
	f.Add(3, int64(time.Second), int64(time.Minute), int64(10*time.Second), int64(time.Hour), uint8(10), int64(2*time.Second), int64(time.Second), uint8(1), 0.9)
	f.Add(-1, int64(0), int64(0), int64(0), int64(0), uint8(1), int64(0), int64(0), uint8(0), 0.0)
	f.Add(100, int64(1), int64(math.MaxInt64), int64(math.MaxInt64), int64(0), uint8(200), int64(math.MaxInt64), int64(0), uint8(2), 1.0)
	f.Add(5, int64(time.Minute), int64(time.Second), int64(0), int64(0), uint8(9), int64(0), int64(0), uint8(3), math.NaN())
	f.Add(50, int64(time.Millisecond), int64(time.Second), int64(3*time.Second), int64(2*time.Second), uint8(255), int64(0), int64(300*time.Millisecond), uint8(4), -1.0)
	f.Fuzz(func(t *testing.T, maxAttempts int, base, maxDelay, timeout, ctxTimeout int64, failures uint8, hint, callCost int64, kind uint8, u float64) {
		maxAttempts %= 1000 // keep each run short
		p := Policy{
			MaxAttempts: maxAttempts,
			BaseDelay:   time.Duration(base),
			MaxDelay:    time.Duration(maxDelay),
			Timeout:     time.Duration(timeout),
			Jitter:      jitters[int(kind)%len(jitters)].f,
			Rand:        constRand(u),
		}
		checkDo(t, p, doInput{
			failures:   int(failures),
			hint:       time.Duration(hint),
			callCost:   time.Duration(callCost),
			ctxTimeout: time.Duration(ctxTimeout),
			permanent:  kind&0x80 != 0,
			budget:     kind&0x40 != 0,
			timeout:    kind&0x20 != 0,
			refuse:     kind&0x10 != 0,
		})
	})
}

type doInput struct {
	failures   int           // calls that fail before one succeeds
	hint       time.Duration // the RetryAfter of each failure
	callCost   time.Duration // fake time each call of fn takes
	ctxTimeout time.Duration // a ctx deadline on the fake clock, if positive
	permanent  bool          // failures are marked Permanent
	refuse     bool          // IsRetryable refuses every error
	budget     bool          // a Budget allows one retry
	timeout    bool          // AttemptTimeout is callCost/2 + 1ns, if that is positive
}

// checkDo runs Do with p on fake time and fails t if an invariant breaks.
func checkDo(t *testing.T, p Policy, in doInput) {
	ft := newFakeTime()
	start := ft.Now()
	var ctxDeadline time.Time
	if in.ctxTimeout > 0 {
		// at least an hour ahead on the real clock, so that the real
		// timer behind ctx never fires during the run
		in.ctxTimeout = max(in.ctxTimeout, time.Hour)
		ctxDeadline = start.Add(in.ctxTimeout)
	} else {
		in.ctxTimeout = 0 // no ctx deadline
	}
	ctx := ft.deadlineCtx(t, in.ctxTimeout)
	errFail, returned := error(hintErr(in.hint)), error(hintErr(in.hint))
	p.Clock, p.Sleeper = ft, ft
	if in.permanent {
		returned = Permanent(errFail)
	}
	if in.refuse {
		p.IsRetryable = func(error) bool { return false }
	}
	if in.timeout && in.callCost >= 0 {
		p.AttemptTimeout = in.callCost/2 + 1
	}
	if in.budget {
		p.Budget = NewBudget(0.5, 1) // full at 1 token; the deposit is capped
	}
	q := p
	q.prepare()
	valid := p.MaxAttempts >= 0 && p.BaseDelay >= 0 && p.MaxDelay >= 0 && p.Timeout >= 0 && q.MaxDelay >= q.BaseDelay
	var waitErr string
	p.OnRetry = func(_ context.Context, _ int, _ error, wait time.Duration) {
		now := ft.Now()
		switch {
		case wait < 0 || wait > q.MaxDelay:
			waitErr = "a wait outside [0, MaxDelay]"
		case in.hint > 0 && wait < in.hint:
			waitErr = "a wait shorter than the hint"
		case p.Timeout > 0 && !now.Add(wait).Before(start.Add(p.Timeout)):
			waitErr = "a wait that does not end before Timeout"
		case !ctxDeadline.IsZero() && !now.Add(wait).Before(ctxDeadline):
			waitErr = "a wait that does not end before ctx's deadline"
		}
	}
	var done []doneCall
	p.OnDone = func(ctx context.Context, attempts int, elapsed time.Duration, err error) {
		done = append(done, doneCall{ctx, attempts, elapsed, err})
	}
	calls := 0
	var ctxErr string
	err := Do(ctx, func(ctx context.Context) error {
		calls++
		// fn's ctx ends, in real time, when the time left on the fake
		// clock runs out, or AttemptTimeout from now
		dl, ok := ctx.Deadline()
		left := time.Until(dl)
		switch {
		case calls > 1 && (p.Timeout > 0 && ft.Now().Sub(start) >= p.Timeout || !ctxDeadline.IsZero() && !ft.Now().Before(ctxDeadline)):
			ctxErr = "fn called again after a deadline"
		case p.Timeout > 0 && (!ok || left > p.Timeout-ft.Now().Sub(start)):
			ctxErr = "fn's ctx outlives the Timeout"
		case p.AttemptTimeout > 0 && (!ok || left > p.AttemptTimeout):
			ctxErr = "fn's ctx outlives AttemptTimeout"
		}
		ft.advance(in.callCost)
		if calls <= in.failures {
			return returned
		}
		return nil
	}, p)

	waits := len(ft.Waits())
	var re *RetryExhausted
	switch {
	case !valid:
		if !errors.Is(err, ErrInvalidPolicy) || calls != 0 || len(done) != 0 {
			t.Fatalf("Do(%+v) = %v after %d calls, %d OnDone calls; want ErrInvalidPolicy after 0, 0", p, err, calls, len(done))
		}
		return
	case len(done) != 1 || done[0].attempts != calls || done[0].err != err || done[0].ctx != ctx:
		t.Fatalf("Do(%+v, %+v) = %v after %d calls; OnDone calls %+v; want one, with the calls, Do's error and ctx", p, in, err, calls, done)
	case waitErr != "":
		t.Fatalf("Do(%+v, %+v) made %s", p, in, waitErr)
	case ctxErr != "":
		t.Fatalf("Do(%+v, %+v): %s", p, in, ctxErr)
	case calls < 1 || calls > q.MaxAttempts || waits > calls-1 || in.budget && waits > 1:
		t.Fatalf("Do(%+v, %+v) calls, waits = %d, %d; want 1 to %d calls and fewer waits", p, in, calls, waits, q.MaxAttempts)
	case err == nil:
		if calls != in.failures+1 {
			t.Fatalf("Do() = nil after %d calls; want nil only after the success at call %d", calls, in.failures+1)
		}
	case in.refuse && !in.permanent && errors.As(err, &re):
		if re.Reason != DeadlineReached || calls != 1 || re.Last != errFail {
			t.Fatalf("Do() = %v after %d calls; want fn's error, or DeadlineReached (ahead of IsRetryable), after 1", err, calls)
		}
	case in.permanent || in.refuse:
		if err != returned || calls != 1 {
			t.Fatalf("Do() = %v after %d calls; want fn's error as fn returned it, after 1", err, calls)
		}
	case errors.As(err, &re):
		if re.Attempts != calls || re.Last != errFail {
			t.Fatalf("Do() = %+v after %d calls; want Attempts = calls, Last = fn's error", re, calls)
		}
	default:
		t.Fatalf("Do() = %v; want nil, fn's error or a *RetryExhausted", err)
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
