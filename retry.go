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
// The zero Policy makes 5 attempts, waiting from 100ms to 30s with
// decorrelated jitter, and retries every error. fn marks an error that no
// retry can fix with Permanent, and asks for a wait with After, as an HTTP
// Retry-After header does (ParseRetryAfter reads one). When Do gives up, a
// *RetryExhausted says why, after how many attempts, and what failed last.
//
// Start with Do and Policy. The README has recipes for HTTP, gRPC, a
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
// is, or a *RetryExhausted that reaches fn's last error.
//
// Between attempts Do waits for what p.Jitter chooses, capped at
// p.MaxDelay, and at least as long as a hint in fn's error (see After).
// Once fn has been called, Do returns the first of these that holds,
// checking ctx and the deadline after p's functions and the methods of
// fn's error run:
//
//  1. fn succeeded: nil;
//  2. ctx is done: Canceled, or DeadlineReached for its deadline;
//  3. fn's error is marked with Permanent: that error as it is;
//  4. p.Timeout or ctx's deadline has passed on p.Clock: DeadlineReached;
//  5. p.IsRetryable refuses fn's error: that error as it is;
//  6. MaxAttemptsReached; HintTooLong, for a hint above p.MaxDelay or past
//     the deadline; DeadlineReached, for a wait past it; BudgetExhausted;
//     SleepFailed if p.Sleeper failed, even as the deadline passed.
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
		if err == nil {
			return end(ctx, &p, &dl, attempt, nil, false, nil)
		}

		// Decide: rules 2 to 5 of Do's doc stop Do here, and end tells which
		// holds, checking ctx and the deadline again after the predicate.
		permanent, hint := inspect(err, 0)
		if ctx.Err() != nil || permanent || dl.passed() || p.IsRetryable != nil && !p.IsRetryable(err) {
			return end(ctx, &p, &dl, attempt, err, permanent, nil)
		}
		if attempt >= p.MaxAttempts {
			return end(ctx, &p, &dl, attempt, err, false, &RetryExhausted{Reason: MaxAttemptsReached})
		}

		// Choose the wait: the jitter's, raised by a hint for this wait only.
		wait := min(max(p.Jitter(attempt-1, p.BaseDelay, p.MaxDelay, prev, unit(p.Rand())), 0), p.MaxDelay)
		prev = wait
		wait = max(wait, hint)

		// Check that it fits MaxDelay and the deadline; then, in pause,
		// take a Budget token, call OnRetry, sleep, and check the deadline
		// again.
		if stop := dl.fits(wait, hint, p.MaxDelay); stop != nil {
			return end(ctx, &p, &dl, attempt, err, false, stop)
		}
		if stop, why := pause(ctx, &p, &dl, attempt, err, wait); stop {
			return end(ctx, &p, &dl, attempt, err, false, why)
		}
	}
}

// DoValue is Do for a function that returns a value with its error. It
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

// read reads the clock and returns the time since Do started.
func (d *deadline) read() time.Duration {
	d.at = max(d.at, d.now().Sub(d.start)) // a Clock that went back must not stretch the deadline
	return d.at
}

// passed reads the clock, if there is a deadline, and reports whether the
// deadline has passed.
func (d *deadline) passed() bool {
	return d.name != "" && d.read() >= d.end
}

// fits says which limit a wait, at least as long as hint, would break: a
// hint above maxDelay, or a hint or a wait that would not end before the
// deadline (or any, once it has passed; end reports that). It returns nil
// if the wait fits. It reads the clock if there is a deadline.
func (d *deadline) fits(wait, hint, maxDelay time.Duration) *RetryExhausted {
	if hint > maxDelay { // the first limit that the server's hint broke
		return overrun(HintTooLong, hint, maxDelay, maxDelayName)
	}
	if d.name == "" {
		return nil
	}
	var left time.Duration // 0 once the deadline has passed, which end reports
	if at := d.read(); at < d.end {
		left = d.end - at // compared first: end-at overflows for a Clock far past the deadline
	}
	switch { // in this order: a hint, which the server asked for, wins over the jitter
	case hint >= left:
		return overrun(HintTooLong, hint, left, d.name)
	case wait >= left:
		return overrun(DeadlineReached, wait, left, d.name)
	}
	return nil
}

// pause takes a Budget token for the retry, calls OnRetry, and sleeps
// until the wait chosen for the attempt ends. It reports whether Do must
// stop: why is what stopped the retry (nil if ctx ended it or the
// deadline passed meanwhile, which end names). The wait counts from when
// it was chosen, so time spent in OnRetry comes off the sleep.
func pause(ctx context.Context, p *Policy, dl *deadline, attempt int, err error, wait time.Duration) (stop bool, why *RetryExhausted) {
	refund := false // whether a token was taken for a retry that has not happened
	defer func() {  // deferred, so that a panic in OnRetry, the Sleeper or the Clock gives it back too
		if refund {
			p.Budget.refund()
		}
	}()
	if p.Budget != nil {
		if !p.Budget.spend() {
			return true, &RetryExhausted{Reason: BudgetExhausted, Cause: ErrBudgetExhausted}
		}
		refund = true
	}
	if p.OnRetry != nil {
		before := dl.read()
		p.OnRetry(ctx, attempt, err, wait)
		wait -= dl.read() - before
	}
	late := dl.name != "" && dl.at >= dl.end // the deadline passed before the sleep, in OnRetry
	if p.Sleeper != nil {
		if serr := p.Sleeper.Sleep(ctx, max(wait, 0)); serr != nil && !late {
			why = &RetryExhausted{Reason: SleepFailed, Cause: serr}
		}
	} else if sleep(ctx, wait) {
		why = interrupted(ctx) // even if ctx.Done closed with a nil Err: ctx broke its contract; stop all the same
	}
	stop = why != nil || ctx.Err() != nil || dl.passed() // a slow OnRetry or a late Sleeper may have run past the deadline
	refund = refund && stop                              // with no stop, fn is called next: the retry happens
	return stop, why
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

// end returns what Do returns when it stops after attempts calls of fn,
// err being the last one's error, and calls OnDone with it first. stop is
// what Do's checks found (nil: fn's error as it is). end decides the
// answer by the rules of Do's doc, checking ctx and the deadline again,
// since the user's code may have run since Do checked them: ctx done wins,
// then the mark of Permanent, then a passed deadline, then stop.
func end(ctx context.Context, p *Policy, dl *deadline, attempts int, err error, permanent bool, stop *RetryExhausted) error {
	var elapsed time.Duration
	read := false // whether elapsed holds a reading of the clock made here
	switch {
	case err == nil:
	case ctx.Err() != nil:
		stop = interrupted(ctx)
	case permanent: // and stop is nil
	case stop != nil && (stop.Reason == SleepFailed || stop.Reason == Canceled): // the Sleeper's own error, or a Done closed with a nil Err
	case dl.name != "":
		elapsed, read = dl.read(), true
		if elapsed >= dl.end {
			stop = overrun(DeadlineReached, 0, 0, dl.name)
		}
	}
	if !read && (stop != nil || p.OnDone != nil) {
		elapsed = dl.read() // never less than a deadline that was seen to pass
	}
	if stop != nil {
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
