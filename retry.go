// Package retry calls a function again when it fails, waiting between
// attempts with capped exponential backoff and jitter, within a number of
// attempts and a time limit:
//
//	err := retry.Do(ctx, func(ctx context.Context) error {
//		return client.Ping(ctx)
//	}, retry.Policy{
//		MaxAttempts:    4,                // calls in all, the first included
//		AttemptTimeout: 2 * time.Second,  // each call of fn; a timed-out call is retried
//		Timeout:        10 * time.Second, // the whole call, attempts and waits included
//		IsRetryable:    func(err error) bool { return !errors.Is(err, ErrAuth) },
//	})
//	// err is nil, ErrAuth as Ping returned it, or a *retry.RetryExhausted.
//
// The zero [Policy] makes 5 attempts, waiting from 100ms to 30s with
// [DecorrelatedJitter], and retries every error. fn marks an error that no
// retry can fix with [Permanent], and asks for a wait with [After], as an
// HTTP Retry-After header does ([ParseRetryAfter] reads one). When [Do]
// gives up, a *[RetryExhausted] says why, after how many attempts, and what
// failed last.
//
// Start with [Do] and [Policy]. The README has recipes for HTTP, gRPC, a
// circuit breaker, metrics, and tests on fake time.
package retry

import (
	"context"
	"errors"
	"math"
	"time"
)

var (
	errNilContext = errors.New("retry: nil context")
	errNilFunc    = errors.New("retry: nil fn")
)

// Do calls fn until it succeeds, fails with an error that must not be
// retried, or p allows no more attempts. It returns nil, fn's error as it
// is (when the error is marked with Permanent or p.IsRetryable rejects
// it, and ctx is not done), or a *RetryExhausted that reaches fn's last
// error.
//
// Between attempts Do waits for what p.Jitter chooses, capped at
// p.MaxDelay, and at least as long as a hint in fn's error (see After).
// It stops, without a last useless wait, when fn has been called
// p.MaxAttempts times, when p.Timeout or ctx's deadline has passed or the
// next wait would not end before it, when ctx is cancelled, when a hint
// is too long, when p.Sleeper fails, or when p.Budget has no token. The
// Reason says which; when ctx is done as Do stops, it is DeadlineReached
// or Canceled, whatever else stopped Do.
//
// fn's ctx ends at ctx's deadline, at p.Timeout after Do was called and at
// p.AttemptTimeout after the attempt began, whichever comes first; Do's
// limits are measured on p.Clock and end fn's ctx in real time. With
// either limit set, fn's ctx is cancelled when fn returns.
//
// Do returns an error without calling fn if ctx or fn is nil, if p is
// invalid, or if ctx is already done (ctx's error). It does not recover
// panics. It is safe for concurrent use with one shared Policy.
func Do(ctx context.Context, fn func(context.Context) error, p Policy) error {
	switch {
	case ctx == nil:
		return errNilContext
	case fn == nil:
		return errNilFunc
	}
	if err := p.prepare(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil { // the caller left before the first attempt
		if p.OnDone != nil {
			p.OnDone(ctx, 0, 0, err)
		}
		return err
	}
	dl := deadline{clock: p.Clock, timeout: p.Timeout}
	dl.begin(ctx)
	if p.Budget != nil {
		p.Budget.earn()
	}
	prev := p.BaseDelay // the jitter's previous choice
	for attempt := 1; ; attempt++ {
		// Call fn.
		err := dl.call(ctx, fn, p.AttemptTimeout)

		// Decide, in this order: a done ctx and a passed deadline are Do's
		// to report, whatever fn's error and the predicate say.
		if err == nil {
			return done(ctx, &p, &dl, attempt, nil, nil)
		}
		if ctx.Err() != nil {
			return done(ctx, &p, &dl, attempt, err, interrupted(ctx))
		}
		if isPermanent(err) {
			return done(ctx, &p, &dl, attempt, err, nil)
		}
		if stop := dl.fits(0, 0); stop != nil {
			return done(ctx, &p, &dl, attempt, err, stop)
		}
		if p.IsRetryable != nil && !p.IsRetryable(err) {
			return done(ctx, &p, &dl, attempt, err, nil)
		}
		if attempt >= p.MaxAttempts {
			return done(ctx, &p, &dl, attempt, err, &RetryExhausted{Reason: MaxAttemptsReached})
		}

		// Choose the wait: the jitter's, raised by a hint for this wait only.
		wait := min(max(p.Jitter(attempt-1, p.BaseDelay, p.MaxDelay, prev, unit(p.Rand())), 0), p.MaxDelay)
		prev = wait
		hint := retryAfter(err)
		wait = max(wait, hint)

		// Check that it fits the deadline and MaxDelay (a hint above MaxDelay
		// names it), then, in pause, the Budget. Call OnRetry, and sleep.
		stop := dl.fits(wait, hint)
		switch {
		case hint > p.MaxDelay: // the first limit that the server's hint broke
			stop = overrun(HintTooLong, hint, p.MaxDelay, maxDelayName)
		case stop == nil:
			stop = pause(ctx, &p, &dl, attempt, err, wait)
		}
		if stop != nil {
			return done(ctx, &p, &dl, attempt, err, stop)
		}
	}
}

// DoValue is [Do] for a function that returns a value with its error. It
// returns the value of the call that succeeded, or the zero T with the
// error that Do would return.
func DoValue[T any](ctx context.Context, fn func(context.Context) (T, error), p Policy) (T, error) {
	var v T
	if fn == nil {
		return v, Do(ctx, nil, p) // Do's error for the nil arguments
	}
	err := Do(ctx, func(ctx context.Context) (err error) {
		v, err = fn(ctx)
		return err
	}, p)
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// deadline is the one place where Do handles time limits: the nearer of
// Policy.Timeout and ctx's deadline, chosen once when Do starts, and
// measured on Clock. Both are fixed instants, so the nearer stays nearer.
type deadline struct {
	clock   Clock
	start   time.Time
	at      time.Duration // since start, at the last reading; never less than before
	end     time.Duration // since start
	name    string        // the deadline's name for the message; "" if there is none
	timeout time.Duration // Policy.Timeout, which also ends fn's ctx
}

// begin reads the clock for the start of Do, and picks the nearer of the
// two deadlines, if there is one.
func (d *deadline) begin(ctx context.Context) {
	d.start = d.now()
	if d.timeout > 0 {
		d.end, d.name = d.timeout, timeoutName
	}
	if t, ok := ctx.Deadline(); ok && (d.name == "" || t.Sub(d.start) < d.end) { // on a tie, Policy.Timeout is named
		d.end, d.name = t.Sub(d.start), ctxDeadlineName
	}
}

// now reads Policy.Clock, or the real clock if there is none.
func (d *deadline) now() time.Time {
	if d.clock == nil {
		return time.Now()
	}
	return d.clock.Now()
}

// call calls fn once, with a ctx that also ends at Policy.Timeout and at
// attemptTimeout after the call begins, if they are set.
func (d *deadline) call(ctx context.Context, fn func(context.Context) error, attemptTimeout time.Duration) error {
	if d.timeout == 0 && attemptTimeout == 0 {
		return fn(ctx) // no limit of Do's own: spare the context; ctx's deadline ends ctx itself
	}
	limit := time.Duration(math.MaxInt64)
	if d.timeout > 0 {
		limit = d.timeout - d.at // at was measured just before: at the start, or after the wait
	}
	if attemptTimeout > 0 {
		limit = min(limit, attemptTimeout)
	}
	ctx, cancel := context.WithTimeout(ctx, limit) // measured on Clock, it runs in real time from now
	defer cancel()
	return fn(ctx)
}

// fits reads the clock and says why a wait, at least as long as hint,
// cannot be made: the deadline has passed, or the hint or the wait would
// not end before it. It returns nil if the wait fits or there is no
// deadline.
func (d *deadline) fits(wait, hint time.Duration) *RetryExhausted {
	if d.name == "" {
		return nil
	}
	d.at = max(d.at, d.now().Sub(d.start)) // a Clock that went back must not stretch the deadline
	left := d.end - d.at
	switch { // in this order: a hint, which the server asked for, wins over the jitter
	case left <= 0:
		return overrun(DeadlineReached, 0, left, d.name)
	case hint >= left:
		return overrun(HintTooLong, hint, left, d.name)
	case wait >= left:
		return overrun(DeadlineReached, wait, left, d.name)
	}
	return nil
}

// pause takes a Budget token for the retry, calls OnRetry, sleeps until
// the wait chosen for the attempt ends, and checks that the deadline did
// not pass meanwhile. The wait counts from when it was chosen, so time
// spent in OnRetry comes off the sleep.
func pause(ctx context.Context, p *Policy, dl *deadline, attempt int, err error, wait time.Duration) *RetryExhausted {
	refund := false // whether a token was taken for a retry that has not happened
	defer func() {  // deferred, so that a panic in OnRetry, the Sleeper or the Clock gives it back too
		if refund {
			p.Budget.refund()
		}
	}()
	if p.Budget != nil {
		if !p.Budget.spend() {
			return &RetryExhausted{Reason: BudgetExhausted, Cause: ErrBudgetExhausted}
		}
		refund = true
	}
	if p.OnRetry != nil {
		before := dl.now()
		p.OnRetry(ctx, attempt, err, wait)
		wait -= max(dl.now().Sub(before), 0)
	}
	var serr error
	if p.Sleeper != nil {
		serr = p.Sleeper.Sleep(ctx, max(wait, 0))
	} else if sleep(ctx, wait) {
		return interrupted(ctx) // ctx.Done closed, even with a nil Err: ctx broke its contract; stop all the same
	}
	stop := dl.fits(0, 0) // a slow OnRetry or a late Sleeper may have run past the deadline
	switch {
	case ctx.Err() != nil:
		stop = interrupted(ctx)
	case serr != nil:
		stop = &RetryExhausted{Reason: SleepFailed, Cause: serr}
	}
	refund = refund && stop != nil // with no stop, fn is called next: the retry happens
	return stop
}

// sleep is the default Sleeper: it waits for d, and reports whether
// ctx.Done ended the wait first.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return false
	case <-ctx.Done():
		return true
	}
}

// done returns what Do returns, and calls OnDone with it first: err as fn
// returned it, or stop with the attempts, the time they took and fn's last
// error. When ctx is done as Do stops, the caller's state wins over
// whatever else stopped Do.
func done(ctx context.Context, p *Policy, dl *deadline, attempts int, err error, stop *RetryExhausted) error {
	var elapsed time.Duration
	if stop != nil || p.OnDone != nil {
		elapsed = max(dl.now().Sub(dl.start), dl.at) // never less than a deadline that was seen to pass
	}
	if stop != nil {
		if ctx.Err() != nil {
			stop = interrupted(ctx)
		}
		stop.Attempts, stop.Elapsed, stop.Last = attempts, elapsed, err
		err = stop
	}
	if p.OnDone != nil {
		p.OnDone(ctx, attempts, elapsed, err)
	}
	return err
}

// overrun says that a wait (or a hint; 0 if the deadline had passed) broke
// a limit: MaxDelay, or the time left before the deadline named.
func overrun(reason Reason, wait, limit time.Duration, name string) *RetryExhausted {
	stop := &RetryExhausted{Reason: reason, wait: wait, limit: limit, limitName: name}
	if reason == DeadlineReached {
		stop.Cause = context.DeadlineExceeded // one rule for callers that map errors to a 504
	}
	return stop
}
