package breaker

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quietwire/retry"
	"github.com/sony/gobreaker/v2"
)

var errUnavailable = errors.New("service unavailable")

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
	permanent   step = "permanent"    // fn's error is Permanent: the dependency answered
	up          step = "up"           // the first attempt succeeds
	wait        step = "wait"         // gobreaker's Timeout passes
)

// notIdempotent refuses to retry a timeout, as the README's gRPC predicate
// does for a call that is not idempotent.
func notIdempotent(err error) bool { return !errors.Is(err, context.DeadlineExceeded) }

// run makes the call of s through cb, as the README's call does, and
// returns the number of calls of fn and the call's error.
func run(cb *gobreaker.TwoStepCircuitBreaker[any], s step) (int, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := retry.Policy{MaxAttempts: 3, AttemptTimeout: time.Second, Jitter: retry.NoJitter}
	calls := 0
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
	case permanent:
		fn = func(context.Context) error { return retry.Permanent(errors.New("404 not found")) }
	case up:
		fn = func(context.Context) error { return nil }
	}
	err := call(ctx, cb, func(ctx context.Context) error { calls++; return fn(ctx) }, p)
	return calls, err
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
					calls := 0
					if s == wait {
						time.Sleep(time.Minute + time.Nanosecond) // gobreaker's Timeout, passed
					} else {
						calls, err = run(cb, s)
					}
					if got := cb.State(); got != tt.want[i] {
						t.Fatalf("step %d (%s): breaker %v; want %v (error %v)", i+1, s, got, tt.want[i], err)
					}
					neither := counts // the request, excluded: neither a success nor a failure
					neither.Requests++
					neither.TotalExclusions++
					switch {
					case (s == done || s == expired) && (cb.Counts() != neither || calls != 0):
						t.Fatalf("step %d (%s): counts %+v, %d calls of fn; want %+v and 0 calls", i+1, s, cb.Counts(), calls, neither)
					case before == open && s != wait && (!errors.Is(err, gobreaker.ErrOpenState) || calls != 0):
						t.Fatalf("step %d (%s), open: %v, %d calls of fn; want %v and 0 calls", i+1, s, err, calls, gobreaker.ErrOpenState)
					}
				}
			})
		})
	}
}
