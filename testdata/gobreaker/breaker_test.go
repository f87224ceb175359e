package breaker

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quietwire/retry"
	"github.com/sony/gobreaker/v2"
)

var errUnavailable = errors.New("service unavailable")

// noWait is a Sleeper that returns at once.
var noWait = retry.SleeperFunc(func(ctx context.Context, d time.Duration) error { return ctx.Err() })

// step is one call through the breaker, or a wait.
type step string

const (
	down        step = "down"         // every attempt fails: Do runs out of attempts
	hangRetried step = "hang/retried" // every attempt hangs until AttemptTimeout, and is retried
	hangRefused step = "hang/refused" // the first attempt hangs until AttemptTimeout, and IsRetryable refuses it
	hangCtx     step = "hang/ctx"     // the first attempt hangs until the caller's deadline
	leave       step = "leave"        // the caller cancels ctx during the first attempt
	done        step = "done"         // ctx is cancelled before the call
	expired     step = "expired"      // ctx's deadline has passed before the call
	expiring    step = "expiring"     // ctx's deadline passes after the caller's own check, before Do's
	panics      step = "panics"       // fn panics; the caller's caller recovers, as net/http does
	permanent   step = "permanent"    // fn's error is Permanent: the dependency answered
	up          step = "up"           // the first attempt succeeds
	invalid     step = "invalid"      // the Policy is invalid
	nilFn       step = "nil fn"       // fn is nil
	wait        step = "wait"         // gobreaker's Timeout passes
)

// notIdempotent refuses to retry a timeout, as the README's gRPC predicate
// does for a call that is not idempotent.
func notIdempotent(err error) bool { return !errors.Is(err, context.DeadlineExceeded) }

// expiringCtx is a ctx whose deadline passes between two looks: its Err is
// nil the first time, then context.DeadlineExceeded.
type expiringCtx struct {
	context.Context
	looked bool
}

func (c *expiringCtx) Err() error {
	if !c.looked {
		c.looked = true
		return nil
	}
	return context.DeadlineExceeded
}

// run makes the call of s through cb, as the README's call does, and
// returns the number of calls of fn, what a panic in it carried up, and the
// call's error.
func run(cb *gobreaker.TwoStepCircuitBreaker[any], s step) (calls int, panicked any, err error) {
	defer func() { panicked = recover() }()
	var ctx context.Context
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := retry.Policy{MaxAttempts: 3, AttemptTimeout: time.Second, Jitter: retry.NoJitter}
	hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	fn := func(ctx context.Context) error { return errUnavailable }
	switch s {
	case hangRetried:
		fn = hang
	case hangRefused:
		fn, p.IsRetryable = hang, notIdempotent
	case hangCtx:
		fn, p.AttemptTimeout = hang, 0
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	case leave:
		fn = func(context.Context) error { cancel(); return errUnavailable }
	case done:
		cancel()
	case expired:
		ctx, cancel = context.WithDeadline(ctx, time.Now().Add(-time.Second))
		defer cancel()
	case expiring:
		ctx = &expiringCtx{Context: ctx}
		if err := ctx.Err(); err != nil { // the caller's own check
			return 0, nil, err
		}
	case panics:
		fn = func(context.Context) error { panic(errUnavailable) }
	case permanent:
		fn = func(context.Context) error { return retry.Permanent(errors.New("404 not found")) }
	case up:
		fn = func(context.Context) error { return nil }
	case invalid:
		p.MaxAttempts = -1
	case nilFn:
		return 0, nil, call(ctx, cb, nil, p)
	}
	err = call(ctx, cb, func(ctx context.Context) error { calls++; return fn(ctx) }, p)
	return calls, nil, err
}

// TestGobreaker runs the README's recipe against gobreaker v2.4.0 on
// synctest's fake clock: each step is a call through the breaker, and the
// breaker's state after it is checked. A call whose ctx is done before it
// calls no fn, and is told to the breaker as neither a success nor a
// failure; an open breaker answers ErrOpenState without calling fn.
func TestGobreaker(t *testing.T) {
	const (
		closed   = gobreaker.StateClosed
		open     = gobreaker.StateOpen
		halfOpen = gobreaker.StateHalfOpen
	)
	for _, tt := range []struct {
		name  string
		steps []step
		want  []gobreaker.State // after each step
	}{
		{"down: opens",
			[]step{down, down, down}, []gobreaker.State{closed, open, open}},
		{"attempts hang until AttemptTimeout, retried: opens",
			[]step{hangRetried, hangRetried}, []gobreaker.State{closed, open}},
		{"an attempt hangs until AttemptTimeout, refused by IsRetryable: opens",
			[]step{hangRefused, hangRefused}, []gobreaker.State{closed, open}},
		{"a hang until the caller's deadline: opens",
			[]step{hangCtx, hangCtx}, []gobreaker.State{closed, open}},
		{"cancellations between failures: still opens",
			[]step{down, leave, leave, down}, []gobreaker.State{closed, closed, closed, open}},
		{"a cancelled half-open probe: stays half-open, and the next probe's failure reopens it",
			[]step{down, down, wait, leave, down}, []gobreaker.State{closed, open, halfOpen, halfOpen, open}},
		{"ctx done before Do, closed: neither",
			[]step{down, done, expired, down}, []gobreaker.State{closed, closed, closed, open}},
		{"ctx done before Do, half-open: neither",
			[]step{down, down, wait, done, expired, hangRefused}, []gobreaker.State{closed, open, halfOpen, halfOpen, halfOpen, open}},
		{"an invalid Policy or a nil fn, half-open: neither",
			[]step{down, down, wait, invalid, nilFn, down}, []gobreaker.State{closed, open, halfOpen, halfOpen, halfOpen, open}},
		{"ctx expires between the caller's check and Do's: neither",
			[]step{down, expiring, down}, []gobreaker.State{closed, closed, open}},
		{"panics are failures: opens",
			[]step{panics, panics}, []gobreaker.State{closed, open}},
		{"a half-open probe that panics: opens again",
			[]step{down, down, wait, panics, down}, []gobreaker.State{closed, open, halfOpen, open, open}},
		{"Permanent: never a failure",
			[]step{permanent, down, permanent, down, permanent, permanent}, []gobreaker.State{closed, closed, closed, closed, closed, closed}},
		{"Permanent: a half-open probe that answers closes",
			[]step{down, down, wait, permanent}, []gobreaker.State{closed, open, halfOpen, closed}},
		{"successes close",
			[]step{down, down, wait, up, down}, []gobreaker.State{closed, open, halfOpen, closed, closed}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cb := newBreaker() // in the bubble: gobreaker reads the bubble's clock
				for i, s := range tt.steps {
					before, counts := cb.State(), cb.Counts()
					var err error
					var panicked any
					calls := 0
					if s == wait {
						time.Sleep(time.Minute + time.Nanosecond) // gobreaker's Timeout, passed
					} else {
						calls, panicked, err = run(cb, s)
					}
					if (panicked == errUnavailable) != (s == panics && calls == 1) {
						t.Fatalf("step %d (%s): %d calls of fn, panic %v; want fn's panic to go on up when fn panicked", i+1, s, calls, panicked)
					}
					if got := cb.State(); got != tt.want[i] {
						t.Fatalf("step %d (%s): breaker %v; want %v (error %v)", i+1, s, got, tt.want[i], err)
					}
					neither := counts // the request, excluded: neither a success nor a failure
					neither.Requests++
					neither.TotalExclusions++
					switch {
					case s == panics && cb.State() == closed && cb.Counts().ConsecutiveFailures != counts.ConsecutiveFailures+1:
						t.Fatalf("step %d (%s): counts %+v; want one failure more than %+v", i+1, s, cb.Counts(), counts)
					case (s == done || s == expired || s == expiring || s == invalid || s == nilFn) && (cb.Counts() != neither || calls != 0):
						t.Fatalf("step %d (%s): counts %+v, %d calls of fn; want %+v and 0 calls", i+1, s, cb.Counts(), calls, neither)
					case before == open && s != wait && (!errors.Is(err, gobreaker.ErrOpenState) || calls != 0):
						t.Fatalf("step %d (%s), open: %v, %d calls of fn; want %v and 0 calls", i+1, s, err, calls, gobreaker.ErrOpenState)
					}
				}
			})
		})
	}
}

// TestBreakerDecidesOnReason checks the README's breaker table: what Do
// returned (or call, for a panic) is, through breakerExcluded and then
// breakerSuccessful, as gobreaker asks them, neither a success nor a
// failure, a success, or a failure.
func TestBreakerDecidesOnReason(t *testing.T) {
	unavailable := func(context.Context) error { return errUnavailable }
	hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	refuse := func(error) bool { return false } // as for a call that is not idempotent
	sleepFails := retry.SleeperFunc(func(context.Context, time.Duration) error { return errors.New("no timer") })
	const ms = time.Millisecond
	for _, tt := range []struct {
		name   string
		ctx    string // "": Background; "done": cancelled before Do; "leave": cancelled by fn; "20ms", "1h": a deadline
		p      retry.Policy
		fn     func(ctx context.Context) error
		reason retry.Reason // of the *RetryExhausted; 0 for any other error
		want   string
	}{
		{"nil", "", retry.Policy{}, func(context.Context) error { return nil }, 0, "success"},
		{"Permanent", "", retry.Policy{}, func(context.Context) error { return retry.Permanent(errUnavailable) }, 0, "success"},
		{"refused by IsRetryable", "", retry.Policy{IsRetryable: refuse}, unavailable, 0, "success"},
		{"out of attempts", "", retry.Policy{MaxAttempts: 2, Sleeper: noWait}, unavailable, retry.MaxAttemptsReached, "failure"},
		{"next wait past ctx's deadline", "1h", retry.Policy{BaseDelay: 2 * time.Hour}, unavailable, retry.DeadlineReached, "failure"},
		{"hung until ctx's deadline", "20ms", retry.Policy{}, hang, retry.DeadlineReached, "failure"},
		{"hint too long", "", retry.Policy{MaxDelay: time.Second}, func(context.Context) error { return retry.After(time.Minute, errUnavailable) },
			retry.HintTooLong, "failure"},
		{"no Budget token", "", retry.Policy{Budget: retry.NewBudget(0, 1), Sleeper: noWait}, unavailable, retry.BudgetExhausted, "failure"},
		{"hung until AttemptTimeout, refused", "", retry.Policy{AttemptTimeout: 10 * ms, IsRetryable: refuse}, hang, 0, "failure"},
		{"hung until AttemptTimeout, wrapped, refused", "", retry.Policy{AttemptTimeout: 10 * ms, IsRetryable: refuse},
			func(ctx context.Context) error { return fmt.Errorf("get: %w", hang(ctx)) }, 0, "failure"},
		{"the caller left", "leave", retry.Policy{}, unavailable, retry.Canceled, "neither"},
		{"the caller left, and fn returned ctx's error marked Permanent", "leave", retry.Policy{},
			func(ctx context.Context) error { return retry.Permanent(ctx.Err()) }, 0, "neither"},
		{"ctx cancelled before Do", "done", retry.Policy{}, unavailable, retry.Canceled, "neither"},
		{"the Sleeper failed", "", retry.Policy{Sleeper: sleepFails}, unavailable, retry.SleepFailed, "neither"},
		{"a panic", "", retry.Policy{}, func(context.Context) error { panic(errUnavailable) }, 0, "failure"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			fn := tt.fn
			switch tt.ctx {
			case "done":
				cancel()
			case "leave":
				fn = func(ctx context.Context) error { cancel(); return tt.fn(ctx) }
			case "20ms", "1h":
				d, _ := time.ParseDuration(tt.ctx)
				ctx, cancel = context.WithTimeout(ctx, d)
				defer cancel()
			}
			err := errPanicked // as call tells the breaker of a panic
			func() {
				defer func() { recover() }()
				err = retry.Do(ctx, fn, tt.p)
			}()
			var reason retry.Reason
			if re, ok := err.(*retry.RetryExhausted); ok {
				reason = re.Reason
			}
			got := "failure"
			switch {
			case breakerExcluded(err):
				got = "neither"
			case breakerSuccessful(err):
				got = "success"
			}
			if got != tt.want || reason != tt.reason {
				t.Errorf("Do() = %v: reason %v, counts as %s; want reason %v, counts as %s", err, reason, got, tt.reason, tt.want)
			}
		})
	}
}
