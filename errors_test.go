package retry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// The message is one line that a terminal shows as it is, with durations
// rounded for reading; when Do gives up on a limit it names the limit.
func TestErrorMessage(t *testing.T) {
	maxed := func(d time.Duration, last error) error {
		return &RetryExhausted{Attempts: 2, Elapsed: d, Reason: MaxAttemptsReached, Last: last}
	}
	const lastIs, in, maxAttempts = "retry: gave up after 2 attempts in 0s (max attempts reached): ", "retry: gave up after 2 attempts in ", " (max attempts reached)"
	// a Sleeper that fails with err, after a call that fails with last
	sleepFails := func(err, last error) error {
		return Do(context.Background(), func(context.Context) error { return last }, Policy{
			Sleeper: SleeperFunc(func(context.Context, time.Duration) error { return err }),
			Clock:   newFakeTime(),
		})
	}
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"one attempt", &RetryExhausted{Attempts: 1, Last: errBoom, Reason: HintTooLong}, "retry: gave up after 1 attempt in 0s (retry-after hint too long): boom"},
		{"a value not made by Do names its Reason", &RetryExhausted{Attempts: 2, Elapsed: time.Second, Last: errBoom, Reason: Canceled, Cause: context.Canceled},
			"retry: gave up after 2 attempts in 1s (canceled): boom"},
		{"unknown Reason, before the first attempt", &RetryExhausted{Reason: Reason(99)}, "retry: gave up before the first attempt (Reason(99))"},
		{"the Sleeper's error, joined errors", sleepFails(errors.Join(errors.New("a"), errors.New("b")), errors.Join(errBoom, errors.New("bang"))),
			"retry: gave up after 1 attempt in 0s (sleep failed: a; b): boom; bang"},
		{"\\r\\n is one break, a lone \\r one", maxed(0, errors.New("a\r\nb\rc\n\nd")), lastIs + "a; b; c; ; d"},
		{"vertical breaks", maxed(0, errors.New("a\vb\fc\u0085d\u2028e\u2029f")), lastIs + "a; b; c; d; e; f"},
		{"control characters escaped, tab kept", maxed(0, errors.New("\x1b[31mred\x00\x7f\u009b\tx")), lastIs + `\x1b[31mred\x00\x7f\u009b` + "\tx"},
		{"bytes that are not UTF-8 escaped", maxed(0, errors.New("a\xffb\xe2\x80c\u00e9")), lastIs + `a\xffb\xe2\x80c` + "\u00e9"},
		{"three significant digits below a minute", maxed(285353606, nil), in + "285ms" + maxAttempts},
		{"to the second from a minute up", maxed(83500*time.Millisecond, nil), in + "1m24s" + maxAttempts},
		{"the longest", maxed(math.MaxInt64, nil), in + "2562047h47m16s" + maxAttempts},
	} {
		if tt.err == nil || tt.err.Error() != tt.want {
			t.Errorf("%s: Error() = %v; want %q", tt.name, tt.err, tt.want)
		}
	}
	// Each call takes 1.5s and asks for hint; every DeadlineReached, and no HintTooLong, reaches context.DeadlineExceeded.
	base := time.Duration(1234567891)
	for _, tt := range []struct {
		p                Policy
		ctxTimeout, hint time.Duration
		want             string // within "retry: gave up after 1 attempt in 1.5s (" and "): slow down"
	}{
		{Policy{MaxDelay: 10 * time.Second}, 0, 2 * time.Minute, "retry-after hint too long: 2m0s, above MaxDelay 10s"},
		{Policy{Timeout: 5 * time.Second}, 0, 4 * time.Second, "retry-after hint too long: 4s, with 3.5s left before Policy.Timeout"},
		{Policy{}, 5 * time.Second, 4 * time.Second, "retry-after hint too long: 4s, with 3.5s left before ctx's deadline"},
		{Policy{Timeout: 1}, 0, 0, "deadline reached: Policy.Timeout passed"},
		{Policy{Timeout: 2700 * time.Millisecond, BaseDelay: base}, 0, 0, "deadline reached: next wait 1.23s, with 1.2s left before Policy.Timeout"},
		{Policy{BaseDelay: base}, 2700 * time.Millisecond, 0, "deadline reached: next wait 1.23s, with 1.2s left before ctx's deadline"},
		// exact where a wait would read as its limit
		{Policy{BaseDelay: base, Timeout: 1500*time.Millisecond + 1234500*time.Microsecond}, 0, 0,
			"deadline reached: next wait 1.234567891s, with 1.2345s left before Policy.Timeout"},
		// the nearer deadline is named, and Policy.Timeout if both are as near
		{Policy{Timeout: 2800 * time.Millisecond, BaseDelay: base}, 2700 * time.Millisecond, 0, "deadline reached: next wait 1.23s, with 1.2s left before ctx's deadline"},
		{Policy{Timeout: 2700 * time.Millisecond, BaseDelay: base}, 2800 * time.Millisecond, 0, "deadline reached: next wait 1.23s, with 1.2s left before Policy.Timeout"},
		{Policy{Timeout: 2700 * time.Millisecond, BaseDelay: base}, 2700 * time.Millisecond, 0, "deadline reached: next wait 1.23s, with 1.2s left before Policy.Timeout"},
	} {
		ft := newFakeTime()
		p := ft.with(tt.p)
		p.MaxAttempts, p.Jitter = 2, NoJitter
		err := Do(ft.deadlineCtx(t, tt.ctxTimeout), func(context.Context) error {
			ft.advance(1500 * time.Millisecond)
			return hintErr(tt.hint)
		}, p)
		if want := "retry: gave up after 1 attempt in 1.5s (" + tt.want + "): slow down"; fmt.Sprint(err) != want ||
			errors.Is(err, context.DeadlineExceeded) != strings.HasPrefix(tt.want, "deadline reached") {
			t.Errorf("Do() = %v; want %q, reaching context.DeadlineExceeded if the deadline was reached", err, want)
		}
	}
	// Whatever fn's error says, Error() is valid UTF-8 with no control character but tab.
	var msg strings.Builder
	for r := rune(0); r < 0x3000; r++ {
		msg.WriteRune(r)
	}
	for b := range 256 {
		msg.WriteByte(byte(b))
	}
	got := (&RetryExhausted{Attempts: 1, Last: errors.New(msg.String())}).Error()
	if !utf8.ValidString(got) || strings.ContainsFunc(got, func(r rune) bool { return r != '\t' && unicode.IsControl(r) }) {
		t.Errorf("Error() of a message with every control character = %q; want valid UTF-8 with no control character but tab", got)
	}
}

// Unwrap returns Last, then Cause, leaving out the nil ones, so errors.As
// finds fn's error first when both are of one type.
func TestUnwrap(t *testing.T) {
	last, cause := &customErr{"fn"}, &customErr{"sleeper"} // one error type, from fn and a Sleeper
	for _, tt := range []struct {
		err  *RetryExhausted
		want []error
	}{
		{&RetryExhausted{}, nil},
		{&RetryExhausted{Last: last}, []error{last}},
		{&RetryExhausted{Cause: cause}, []error{cause}},
		{&RetryExhausted{Last: last, Cause: cause}, []error{last, cause}},
	} {
		if got := tt.err.Unwrap(); !slices.Equal(got, tt.want) {
			t.Errorf("(%+v).Unwrap() = %v; want %v", tt.err, got, tt.want)
		}
	}
	var got *customErr
	if err := error(&RetryExhausted{Last: last, Cause: cause}); !errors.As(err, &got) || got != last || !errors.Is(err, cause) {
		t.Errorf("errors.As(RetryExhausted) found %q, errors.Is(cause) = %v; want %q, true", got, errors.Is(err, cause), last)
	}
}

// The String of each Reason is stable within v1, as metric labels and
// alerts match it; an unknown Reason reads Reason(N).
func TestReasonString(t *testing.T) {
	for r, want := range map[Reason]string{
		MaxAttemptsReached:  "max attempts reached",
		DeadlineReached:     "deadline reached",
		Canceled:            "canceled",
		HintTooLong:         "retry-after hint too long",
		SleepFailed:         "sleep failed",
		BudgetExhausted:     "retry budget exhausted",
		0:                   "Reason(0)",
		-1:                  "Reason(-1)",
		BudgetExhausted + 1: "Reason(7)", // the first value past the table
	} {
		if got := r.String(); got != want {
			t.Errorf("Reason(%d).String() = %q; want %q", int(r), got, want)
		}
	}
}

// The mark ends the call after one attempt and is found anywhere in the
// chain; errors.Is and errors.As see through it, and the message is err's.
// Do keeps the mark, so an error marked in an inner Do stops the outer Do
// too; an inner Do that gives up is retried like any other error.
func TestPermanent(t *testing.T) {
	if err := Permanent(nil); err != nil {
		t.Errorf("Permanent(nil) = %v; want nil", err)
	}
	twice := &flaky{n: 9, err: Permanent(Permanent(errBoom))}
	if err := Do(context.Background(), twice.call, Policy{}); err != twice.err || errors.Unwrap(err) != errBoom {
		t.Errorf("Do() with an error marked twice = %#v; want boom under one mark", err)
	}
	inner := &customErr{"bad request"}
	err := fmt.Errorf("post: %w", Permanent(inner))
	var ce *customErr
	if !errors.Is(err, inner) || !errors.As(err, &ce) || ce != inner || err.Error() != "post: bad request" {
		t.Errorf("Permanent: errors.Is, errors.As, Error() = %v, %v, %q; want true, true, %q", errors.Is(err, inner), ce, err, "post: bad request")
	}
	if permanent, _ := inspect(errors.Join(unwrapsToNil{}, errBoom)); permanent {
		t.Errorf("inspect(a chain without the mark) = true; want false")
	}
	for _, tt := range []struct {
		err   error // what the inner fn returns
		calls int   // of the inner fn, 2 per outer attempt unless marked
	}{{err, 1}, {errBoom, 6}} {
		ft, calls := newFakeTime(), 0
		got := Do(context.Background(), func(ctx context.Context) error {
			return Do(ctx, func(context.Context) error { calls++; return tt.err }, ft.with(Policy{MaxAttempts: 2}))
		}, ft.with(Policy{MaxAttempts: 3}))
		if calls != tt.calls || tt.calls == 1 && got != tt.err {
			t.Errorf("nested Do() = %v after %d calls of the inner fn; want %d", got, calls, tt.calls)
		}
		if tt.calls > 1 && !errors.Is(wantExhausted(t, got, MaxAttemptsReached, 3), errBoom) {
			t.Errorf("nested Do() = %v; want it to reach boom", got)
		}
	}
}

// sliceErr is an error of a type that == cannot compare.
type sliceErr []string

func (e sliceErr) Error() string { return strings.Join(e, ", ") }

// doneCtx is a custom ctx that is done with err, and has no cause of its
// own: context.Cause returns its Err again.
type doneCtx struct {
	context.Context
	err error
}

func (c doneCtx) Done() <-chan struct{} { ch := make(chan struct{}); close(ch); return ch }
func (c doneCtx) Err() error            { return c.err }

// ctx's cause is said once, after ctx's error, unless it is that error: the
// same error where == is defined, an equal one where it is not (a slice's),
// as a custom ctx may return. Do gives up with Canceled, without a panic.
func TestCtxCause(t *testing.T) {
	cancelled := func(cause error) context.Context {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		return ctx
	}
	for _, tt := range []struct {
		ctx  context.Context
		want string // Cause's message
	}{
		{doneCtx{context.Background(), sliceErr{"gone"}}, "gone"},
		{cancelled(sliceErr{"shutdown"}), "context canceled: shutdown"},
		{doneCtx{cancelled(sliceErr{"shutdown"}), sliceErr{"gone"}}, "gone: shutdown"},
		{cancelled(errors.New("context canceled")), "context canceled: context canceled"}, // not context.Canceled
	} {
		err := Do(tt.ctx, failOnce, Policy{})
		if re := wantExhausted(t, err, Canceled, 0); re.Cause == nil || re.Cause.Error() != tt.want ||
			!strings.HasSuffix(err.Error(), "(canceled: "+tt.want+")") {
			t.Errorf("Do() = %v, Cause %v; want Canceled, Cause %q", err, re.Cause, tt.want)
		}
	}
}
