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
	// gaveUp runs Do on fake time: each call takes 1.5s and asks for hint.
	gaveUp := func(p Policy, ctxTimeout, hint time.Duration) error {
		ft := newFakeTime()
		p.MaxAttempts, p.Jitter = 2, NoJitter
		return Do(ft.deadlineCtx(t, ctxTimeout), func(context.Context) error {
			ft.advance(1500 * time.Millisecond)
			return hintErr(hint)
		}, ft.with(p))
	}
	const gaveUp1 = "retry: gave up after 1 attempt in 1.5s "
	const gaveUp2 = "retry: gave up after 2 attempts in 0s "
	rounded := func(d time.Duration) error {
		return &RetryExhausted{Attempts: 2, Elapsed: d, Reason: MaxAttemptsReached}
	}
	last := func(msg string) error {
		return &RetryExhausted{Attempts: 2, Reason: MaxAttemptsReached, Last: errors.New(msg)}
	}
	// sleepFails runs Do with a Sleeper that fails with err, after one call that fails with last.
	sleepFails := func(err, last error) error {
		return Do(context.Background(), func(context.Context) error { return last }, Policy{
			Sleeper: SleeperFunc(func(context.Context, time.Duration) error { return err }),
			Clock:   newFakeTime(),
		})
	}
	const sleptOnce = "retry: gave up after 1 attempt in 0s "
	base := time.Duration(1234567891)
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"one attempt", &RetryExhausted{Attempts: 1, Last: errBoom, Reason: HintTooLong},
			"retry: gave up after 1 attempt in 0s (retry-after hint too long): boom"},
		{"a value not made by Do names its Reason", &RetryExhausted{Attempts: 2, Elapsed: time.Second, Last: errBoom, Reason: Canceled, Cause: context.Canceled},
			"retry: gave up after 2 attempts in 1s (canceled): boom"},
		{"the Sleeper's error", sleepFails(errors.New("clock device gone"), errBoom), sleptOnce + "(sleep failed: clock device gone): boom"},
		{"ErrBudgetExhausted is not repeated", &RetryExhausted{Attempts: 3, Last: errBoom, Reason: BudgetExhausted, Cause: ErrBudgetExhausted},
			"retry: gave up after 3 attempts in 0s (retry budget exhausted): boom"},
		{"a minute", &RetryExhausted{Attempts: 4, Elapsed: time.Minute, Last: errBoom, Reason: DeadlineReached},
			"retry: gave up after 4 attempts in 1m0s (deadline reached): boom"},
		{"unknown Reason, before the first attempt", &RetryExhausted{Reason: Reason(99)}, "retry: gave up before the first attempt (Reason(99))"},
		{"joined errors", sleepFails(errors.Join(errors.New("a"), errors.New("b")), errors.Join(errBoom, errors.New("bang"))),
			sleptOnce + "(sleep failed: a; b): boom; bang"},
		{"\\r\\n is one break", last("a\r\nb"), gaveUp2 + "(max attempts reached): a; b"},
		{"a lone \\r is a break", last("a\rb\n\nc"), gaveUp2 + "(max attempts reached): a; b; ; c"},
		{"a break in Cause", sleepFails(errors.New("x\ry"), errBoom), sleptOnce + "(sleep failed: x; y): boom"},
		{"vertical breaks", last("a\vb\fc\u0085d\u2028e\u2029f"), gaveUp2 + "(max attempts reached): a; b; c; d; e; f"},
		{"control characters escaped, tab kept", last("\x1b[31mred\x00\x7f\u009b\tx"),
			gaveUp2 + `(max attempts reached): \x1b[31mred\x00\x7f\u009b` + "\tx"},
		{"bytes that are not UTF-8 escaped", last("a\xffb\xe2\x80c\u00e9"), gaveUp2 + `(max attempts reached): a\xffb\xe2\x80c` + "\u00e9"},
		{"ms rounded", rounded(285353606), "retry: gave up after 2 attempts in 285ms (max attempts reached)"},
		{"ms rounded at a power of ten", rounded(1000500), "retry: gave up after 2 attempts in 1ms (max attempts reached)"},
		{"s rounded", rounded(1294999999), "retry: gave up after 2 attempts in 1.29s (max attempts reached)"},
		{"rounded up", rounded(1295000000), "retry: gave up after 2 attempts in 1.3s (max attempts reached)"},
		{"minutes rounded to the second", rounded(83456 * time.Millisecond), "retry: gave up after 2 attempts in 1m23s (max attempts reached)"},
		{"hours rounded up to the second", rounded(48*time.Hour - 400*time.Millisecond), "retry: gave up after 2 attempts in 48h0m0s (max attempts reached)"},
		{"just below a minute", rounded(59940 * time.Millisecond), "retry: gave up after 2 attempts in 59.9s (max attempts reached)"},
		{"ns kept", rounded(999), "retry: gave up after 2 attempts in 999ns (max attempts reached)"},
		{"the longest", rounded(math.MaxInt64), "retry: gave up after 2 attempts in 2562047h47m16s (max attempts reached)"},
		{"hint above MaxDelay", gaveUp(Policy{MaxDelay: 10 * time.Second}, 0, 2*time.Minute),
			gaveUp1 + "(retry-after hint too long: 2m0s, above MaxDelay 10s): slow down"},
		{"hint above MaxDelay that rounds to it", gaveUp(Policy{MaxDelay: 2 * time.Second}, 0, 2001*time.Millisecond),
			gaveUp1 + "(retry-after hint too long: 2.001s, above MaxDelay 2s): slow down"},
		{"hint that rounds to the time left", gaveUp(Policy{Timeout: 5 * time.Second}, 0, 3500400*time.Microsecond),
			gaveUp1 + "(retry-after hint too long: 3.5004s, with 3.5s left before Policy.Timeout): slow down"},
		{"wait that rounds to the time left", gaveUp(Policy{BaseDelay: base, Timeout: 1500*time.Millisecond + 1234500*time.Microsecond}, 0, 0),
			gaveUp1 + "(deadline reached: next wait 1.234567891s, with 1.2345s left before Policy.Timeout): slow down"},
		{"hint past Policy.Timeout", gaveUp(Policy{Timeout: 5 * time.Second}, 0, 4*time.Second),
			gaveUp1 + "(retry-after hint too long: 4s, with 3.5s left before Policy.Timeout): slow down"},
		{"hint past ctx's deadline", gaveUp(Policy{}, 5*time.Second, 4*time.Second),
			gaveUp1 + "(retry-after hint too long: 4s, with 3.5s left before ctx's deadline): slow down"},
		{"the shortest Timeout, passed", gaveUp(Policy{Timeout: 1}, 0, 0),
			gaveUp1 + "(deadline reached: Policy.Timeout passed): slow down"},
		{"wait past Policy.Timeout, rounded", gaveUp(Policy{Timeout: 2700 * time.Millisecond, BaseDelay: base}, 0, 0),
			gaveUp1 + "(deadline reached: next wait 1.23s, with 1.2s left before Policy.Timeout): slow down"},
		{"wait past ctx's deadline", gaveUp(Policy{BaseDelay: base}, 2700*time.Millisecond, 0),
			gaveUp1 + "(deadline reached: next wait 1.23s, with 1.2s left before ctx's deadline): slow down"},
		{"the nearer deadline is named, ctx's", gaveUp(Policy{Timeout: 2800 * time.Millisecond, BaseDelay: base}, 2700*time.Millisecond, 0),
			gaveUp1 + "(deadline reached: next wait 1.23s, with 1.2s left before ctx's deadline): slow down"},
		{"both deadlines at once: Policy.Timeout is named", gaveUp(Policy{Timeout: 2700 * time.Millisecond, BaseDelay: base}, 2700*time.Millisecond, 0),
			gaveUp1 + "(deadline reached: next wait 1.23s, with 1.2s left before Policy.Timeout): slow down"},
		{"the nearer deadline is named, Policy's", gaveUp(Policy{Timeout: 2700 * time.Millisecond, BaseDelay: base}, 2800*time.Millisecond, 0),
			gaveUp1 + "(deadline reached: next wait 1.23s, with 1.2s left before Policy.Timeout): slow down"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil || tt.err.Error() != tt.want {
				t.Errorf("Error() = %v; want %q", tt.err, tt.want)
			}
			// Do's every DeadlineReached, and no HintTooLong, reaches context.DeadlineExceeded.
			if re, ok := tt.err.(*RetryExhausted); ok && re.detail != "" && errors.Is(re, context.DeadlineExceeded) != (re.Reason == DeadlineReached) {
				t.Errorf("errors.Is(%v, context.DeadlineExceeded) = %v; want %v", re, !(re.Reason == DeadlineReached), re.Reason == DeadlineReached)
			}
		})
	}
	// Whatever fn's error says, Error() is valid UTF-8 with no control character but tab.
	var msg strings.Builder
	for r := rune(0); r < 0x3000; r++ {
		msg.WriteRune(r)
	}
	for b := 0; b < 256; b++ {
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
}

// Do keeps the mark, so an error marked in an inner Do stops the outer Do
// too; an inner Do that gives up is retried like any other error.
func TestPermanentAcrossNestedDo(t *testing.T) {
	tests := []struct {
		name       string
		err        error // what the inner fn returns
		innerCalls int   // per outer attempt
		outerCalls int
	}{
		{"mark outermost", Permanent(errBoom), 1, 1},
		{"mark deeper", fmt.Errorf("get: %w", Permanent(errBoom)), 1, 1},
		{"no mark", errBoom, 2, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTime()
			inner, outer := 0, 0
			err := Do(context.Background(), func(ctx context.Context) error {
				outer++
				return Do(ctx, func(context.Context) error { inner++; return tt.err }, ft.with(Policy{MaxAttempts: 2}))
			}, ft.with(Policy{MaxAttempts: 3}))
			if outer != tt.outerCalls || inner != tt.innerCalls*tt.outerCalls {
				t.Errorf("outer, inner calls = %d, %d; want %d, %d", outer, inner, tt.outerCalls, tt.innerCalls*tt.outerCalls)
			}
			var re *RetryExhausted
			marked := tt.outerCalls == 1
			if marked && err != tt.err || !marked && (!errors.As(err, &re) || re.Attempts != 3 || !errors.Is(err, errBoom)) {
				t.Errorf("Do() = %v; want the marked error as the inner fn returned it, or a RetryExhausted after 3 that reaches boom", err)
			}
		})
	}
}
