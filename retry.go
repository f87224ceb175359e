// Package retry calls a function again when it fails, waiting between
// attempts with capped exponential backoff and jitter, within a number of
// attempts and a total deadline.
//
// Do calls fn at once. If fn returns nil, Do returns nil. If fn returns an
// error that Policy.IsRetryable rejects, Do returns that error as it is,
// at once. Otherwise Do waits and calls fn again: the wait is chosen by
// Policy.Jitter, is at least as long as a hint in the error (see below),
// and never longer than Policy.MaxDelay.
//
// Do gives up, without a last useless wait, when fn has been called
// Policy.MaxAttempts times, when Policy.Deadline has passed, when ctx is
// done or its deadline would pass during the next wait, when a hint asks
// for a longer wait than the policy allows, or when Policy.Budget has no
// token left for a retry. It then returns a *RetryExhausted with the
// number of attempts, the time they took, the reason, and the last error,
// which errors.Is and errors.As still reach.
//
// An error can ask for a minimum wait, as an HTTP Retry-After header does,
// by having a method
//
//	RetryAfter() time.Duration
//
// anywhere in its chain of wrapped errors. A positive result is honoured:
// Do never calls fn again sooner, and gives up at once if the hint is
// longer than MaxDelay or than the time left.
//
// Policy.Clock and Policy.Sleeper replace the real clock and timer, so
// code that retries can be tested on fake time. Do starts no goroutines.
package retry

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

var (
	errNilContext = errors.New("retry: nil context")
	errNilFunc    = errors.New("retry: nil fn")
)

// Do calls fn until it succeeds, fails with an error that is not
// retryable, or p allows no more attempts; see the package doc for the
// whole contract. It returns nil, fn's non-retryable error unchanged, or a
// *RetryExhausted.
//
// Do returns an error without calling fn if ctx or fn is nil, if p is
// invalid (one that wraps ErrInvalidPolicy), or if ctx is already done
// (ctx's error, unchanged). A panic in fn, IsRetryable or OnRetry is not
// recovered. Do is safe for concurrent use with one shared Policy.
//
// Like any err != nil check, Do counts a typed nil pointer returned as an
// error as a failure, and keeps it as RetryExhausted.Last.
func Do(ctx context.Context, fn func(context.Context) error, p Policy) error {
	switch {
	case ctx == nil:
		return errNilContext
	case fn == nil:
		return errNilFunc
	}
	if err := p.validate(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	p.fillDefaults()
	var t timer
	defer t.stop()
	r := run{p: &p, start: p.now(), prev: p.BaseDelay, timer: &t}
	if p.Budget != nil {
		p.Budget.earn()
	}
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil || !p.retryable(err) {
			return err // success, or a failure that retrying cannot fix
		}
		wait, stop := r.backoff(ctx, attempt, err)
		if stop == nil {
			if p.OnRetry != nil {
				p.OnRetry(attempt, err, wait)
			}
			stop = r.sleep(ctx, wait)
		}
		if stop != nil {
			stop.Attempts, stop.Last, stop.Elapsed = attempt, err, r.since(p.now())
			return stop
		}
	}
}

// DoValue is Do for a function that returns a value with its error. It
// returns the value of the call that succeeded, or the zero T with the
// error that Do would return.
func DoValue[T any](ctx context.Context, fn func(context.Context) (T, error), p Policy) (T, error) {
	var v T
	if fn == nil {
		return v, errNilFunc
	}
	err := Do(ctx, func(ctx context.Context) error {
		var err error
		v, err = fn(ctx)
		return err
	}, p)
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// run is the state of one call of Do.
type run struct {
	p     *Policy // Do's copy, with defaults filled in
	start time.Time
	prev  time.Duration // the previous wait, BaseDelay before the first
	timer *timer        // the default Sleeper
}

// backoff returns the wait before the next attempt, or why there is none.
func (r *run) backoff(ctx context.Context, attempt int, err error) (time.Duration, *RetryExhausted) {
	if cerr := ctx.Err(); cerr != nil {
		return 0, stopped(ContextDone, cerr)
	}
	if attempt >= r.p.MaxAttempts {
		return 0, stopped(MaxAttemptsReached, nil)
	}
	wait := r.p.Jitter(attempt-1, r.p.BaseDelay, r.p.MaxDelay, r.prev, unit(r.p.rand()))
	wait = clamp(wait, 0, r.p.MaxDelay) // a custom Jitter may misbehave
	hint := retryAfter(err)
	if hint > r.p.MaxDelay {
		return 0, stopped(HintTooLong, nil)
	}
	wait, stop := r.fit(ctx, max(wait, hint), hint)
	if stop == nil && r.p.Budget != nil && !r.p.Budget.spend() {
		stop = stopped(BudgetExhausted, ErrBudgetExhausted)
	}
	r.prev = wait
	return wait, stop
}

// fit shortens wait so that it ends by Policy.Deadline, or says why there
// is no time for it: a deadline passed, or wait or hint outlasts one.
func (r *run) fit(ctx context.Context, wait, hint time.Duration) (time.Duration, *RetryExhausted) {
	ctxDeadline, hasCtxDeadline := ctx.Deadline()
	if r.p.Deadline == 0 && !hasCtxDeadline {
		return wait, nil // nothing to fit: spare the clock read
	}
	now := r.p.now()
	if r.p.Deadline > 0 {
		left := r.p.Deadline - r.since(now)
		switch {
		case left <= 0:
			return 0, stopped(DeadlineReached, nil)
		case hint > left:
			return 0, stopped(HintTooLong, nil)
		}
		wait = min(wait, left)
	}
	if hasCtxDeadline {
		left := ctxDeadline.Sub(now)
		switch {
		case hint > 0 && hint >= left:
			return 0, stopped(HintTooLong, nil)
		case wait >= left: // ctx would end during the wait: do not sleep in vain
			return 0, stopped(ContextDone, context.DeadlineExceeded)
		}
	}
	return wait, nil
}

// sleep waits for d, and says why retrying must stop if ctx is done or the
// Sleeper failed.
func (r *run) sleep(ctx context.Context, d time.Duration) *RetryExhausted {
	var err error
	if r.p.Sleeper != nil {
		err = r.p.Sleeper.Sleep(ctx, d)
	} else {
		r.timer.sleep(ctx, d)
	}
	if cerr := ctx.Err(); cerr != nil {
		return stopped(ContextDone, cerr)
	}
	if err != nil {
		return stopped(SleepFailed, err)
	}
	return nil
}

// timer is the default Sleeper of one run: one time.Timer, made at the
// first wait and then reused. It is a separate variable, not a field of
// run, so that escape analysis keeps Do's Policy on the stack.
type timer struct{ t *time.Timer }

// sleep waits for d or until ctx is done. The timer is only ever reset
// after it fired and was received from: once ctx ends a wait, Do returns.
func (t *timer) sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	if t.t == nil {
		t.t = time.NewTimer(d)
	} else {
		t.t.Reset(d)
	}
	select {
	case <-t.t.C:
	case <-ctx.Done():
	}
}

func (t *timer) stop() {
	if t.t != nil {
		t.t.Stop()
	}
}

// since returns the time from the start of the run to now, or 0 if the
// Clock went backwards.
func (r *run) since(now time.Time) time.Duration {
	return max(now.Sub(r.start), 0)
}

func (p *Policy) now() time.Time {
	if p.Clock != nil {
		return p.Clock.Now()
	}
	return time.Now()
}

func (p *Policy) rand() float64 {
	if p.Rand != nil {
		return p.Rand()
	}
	return rand.Float64()
}

func stopped(reason Reason, cause error) *RetryExhausted {
	return &RetryExhausted{Reason: reason, Cause: cause}
}
