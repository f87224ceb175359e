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
// is, or a *[RetryExhausted] that reaches fn's last error.
//
// Between attempts Do waits for what [Policy.Jitter] chooses, capped at
// [Policy.MaxDelay], and at least as long as a hint in fn's error ([After]).
// Once fn has been called, Do returns the first of these that holds,
// checking ctx and the deadline after p's functions and the methods of
// fn's error run:
//
//  1. fn succeeded: nil;
//  2. ctx is done: [Canceled], or [DeadlineReached] for its deadline;
//  3. fn's error is marked with [Permanent]: that error as it is;
//  4. [Policy.Timeout] or ctx's deadline has passed: DeadlineReached;
//  5. [Policy.IsRetryable] refuses fn's error: that error as it is;
//  6. [MaxAttemptsReached]; [HintTooLong], for a hint above MaxDelay or past
//     the deadline; DeadlineReached, for a wait past it; [BudgetExhausted];
//     [SleepFailed] if [Policy.Sleeper] failed, even as the deadline passed.
//
// fn's ctx ends at ctx's deadline, at Timeout after Do was called and at
// [Policy.AttemptTimeout] after the attempt began, whichever comes first;
// Do's limits are measured on [Policy.Clock] and end fn's ctx in real time. With
// either limit set, fn's ctx is cancelled when fn returns.
//
// Do returns an error without calling fn if ctx or fn is nil, if p is
// invalid, or if ctx is already done ([context.Context.Err]). It does not
// recover panics. It is safe for concurrent use with one shared [Policy].
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
	tl := timeLimit{clock: p.Clock, timeout: p.Timeout}
	tl.begin(ctx)
	if p.Budget != nil {
		p.Budget.earn()
	}
	prev := p.BaseDelay // the jitter's previous choice
	for attempt := 1; ; attempt++ {
		// Call fn.
		err := tl.call(ctx, fn, p.AttemptTimeout)
		if err == nil {
			return answer(ctx, &p, &tl, attempt, nil, false, nil)
		}

		// Decide whether rules 2 to 5 of Do's doc stop Do here, in their
		// order; answer checks ctx and the deadline again, after the user's code.
		if ctx.Err() != nil {
			return answer(ctx, &p, &tl, attempt, err, false, nil)
		}
		permanent, hint := inspect(err, 0)
		if permanent || tl.passed() || p.IsRetryable != nil && !p.IsRetryable(err) {
			return answer(ctx, &p, &tl, attempt, err, permanent, nil)
		}
		if attempt >= p.MaxAttempts {
			return answer(ctx, &p, &tl, attempt, err, false, &RetryExhausted{Reason: MaxAttemptsReached})
		}

		// Choose the wait: the jitter's, raised by a hint for this wait only.
		wait := min(max(p.Jitter(attempt-1, p.BaseDelay, p.MaxDelay, prev, unit(p.Rand())), 0), p.MaxDelay)
		prev = wait
		wait = max(wait, hint)

		// Check that it is not too long for MaxDelay and the deadline; then
		// take a Budget token, call OnRetry, sleep, and check again.
		if stop := tl.tooLong(wait, hint, p.MaxDelay); stop != nil {
			return answer(ctx, &p, &tl, attempt, err, false, stop)
		}
		if stop, why := sleepBeforeRetry(ctx, &p, &tl, attempt, err, wait); stop {
			return answer(ctx, &p, &tl, attempt, err, false, why)
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
	err := Do(ctx, func(ctx context.Context) error {
		w, err := fn(ctx)
		if err == nil { // only the call that succeeded gives the value
			v = w
		}
		return err
	}, p)
	return v, err
}

// timeLimit is Do's time: the clock, when Do started, and the nearer of
// Policy.Timeout and ctx's deadline, chosen once when Do starts, and
// measured on Clock. Both are fixed instants, so the nearer stays nearer.
type timeLimit struct {
	clock   Clock
	start   time.Time
	at      time.Duration // since start, at the last reading; never less than before
	end     time.Duration // the deadline, since start
	name    string        // the deadline's name for the message; "" if there is none
	timeout time.Duration // Policy.Timeout, which also ends fn's ctx
}

// begin reads the clock for the start of Do, and picks the nearer of the
// two deadlines, if there is one.
func (t *timeLimit) begin(ctx context.Context) {
	t.start = t.now()
	if t.timeout > 0 {
		t.end, t.name = t.timeout, timeoutName
	}
	if d, ok := ctx.Deadline(); ok && (t.name == "" || d.Sub(t.start) < t.end) { // on a tie, Policy.Timeout is named
		t.end, t.name = d.Sub(t.start), ctxDeadlineName
	}
}

// now reads Policy.Clock, or the real clock if there is none.
func (t *timeLimit) now() time.Time {
	if t.clock == nil {
		return time.Now()
	}
	return t.clock.Now()
}

// call calls fn once, with a ctx that also ends at Policy.Timeout and at
// attemptTimeout after the call begins, if they are set.
func (t *timeLimit) call(ctx context.Context, fn func(context.Context) error, attemptTimeout time.Duration) error {
	if t.timeout == 0 && attemptTimeout == 0 {
		return fn(ctx) // no limit of Do's own: spare the context; ctx's deadline ends ctx itself
	}
	limit := time.Duration(math.MaxInt64)
	if t.timeout > 0 {
		limit = t.timeout - t.at // at was measured just before: at the start, or after the wait
	}
	if attemptTimeout > 0 {
		limit = min(limit, attemptTimeout)
	}
	ctx, cancel := context.WithTimeout(ctx, limit) // measured on Clock, it runs in real time from now
	defer cancel()
	return fn(ctx)
}

// read reads the clock and returns the time since Do started.
func (t *timeLimit) read() time.Duration {
	t.at = max(t.at, t.now().Sub(t.start)) // a Clock that went back must not stretch the deadline
	return t.at
}

// passed reads the clock, if there is a deadline, and reports whether the
// deadline has passed.
func (t *timeLimit) passed() bool { return t.name != "" && t.read() >= t.end }

// over reports whether the deadline had passed at the last reading.
func (t *timeLimit) over() bool { return t.name != "" && t.at >= t.end }

// tooLong says which limit a wait, at least as long as hint, breaks: a
// hint above maxDelay, or a hint or a wait that would not end before the
// deadline. It returns nil if the wait fits.
func (t *timeLimit) tooLong(wait, hint, maxDelay time.Duration) *RetryExhausted {
	switch {
	case hint > maxDelay: // the first limit that the server's hint broke
		return overrun(HintTooLong, hint, maxDelay, maxDelayName)
	case t.name == "":
		return nil
	}
	// Do saw the deadline ahead (0 ≤ at < end), so this cannot overflow; left
	// is not positive if the deadline has passed since, which answer reports.
	switch left := t.end - t.read(); { // in this order: a hint, which the server asked for, wins over the jitter
	case hint >= left:
		return overrun(HintTooLong, hint, left, t.name)
	case wait >= left:
		return overrun(DeadlineReached, wait, left, t.name)
	}
	return nil
}

// sleepBeforeRetry takes a Budget token for the retry, calls OnRetry, and
// sleeps until the wait chosen for the attempt ends. It reports whether Do
// must stop, and why: what ended the retry, or nil if ctx ended or the
// deadline passed, which answer names. The wait counts from when it was
// chosen, so time spent in OnRetry comes off the sleep.
func sleepBeforeRetry(ctx context.Context, p *Policy, tl *timeLimit, attempt int, err error, wait time.Duration) (stop bool, why *RetryExhausted) {
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
		before := tl.read()
		p.OnRetry(ctx, attempt, err, wait)
		wait -= tl.read() - before
	}
	late := tl.over() // the deadline passed before the sleep, in OnRetry
	if p.Sleeper != nil {
		if serr := p.Sleeper.Sleep(ctx, max(wait, 0)); serr != nil && !late {
			why = &RetryExhausted{Reason: SleepFailed, Cause: serr}
		}
	} else if sleep(ctx, wait) && ctx.Err() == nil {
		why = interrupted(ctx) // ctx.Done closed with a nil Err: ctx broke its contract; stop all the same
	}
	stop = why != nil || tl.passed() || ctx.Err() != nil // the Clock first: ctx may end while it runs
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

// answer returns what Do returns when it stops after attempts calls of
// fn, err being the last one's error, and calls OnDone with it first. stop
// is what Do's checks found (nil: fn's error as it is). answer applies the
// rules of Do's doc: ctx done, then the mark of Permanent, then a passed
// deadline, then stop, checking ctx and the deadline again, since the
// user's code may have run since Do checked them.
func answer(ctx context.Context, p *Policy, tl *timeLimit, attempts int, err error, permanent bool, stop *RetryExhausted) error {
	var elapsed time.Duration
	read := stop != nil || p.OnDone != nil || err != nil && !permanent && tl.name != ""
	if read { // before ctx is checked: ctx may end while the Clock runs
		elapsed = tl.read() // never less than a deadline that was seen to pass
	}
	switch {
	case err == nil:
	case ctx.Err() != nil:
		stop = interrupted(ctx)
	case permanent: // and stop is nil
	case stop != nil && (stop.Reason == SleepFailed || stop.Reason == Canceled): // the Sleeper's own error, or a Done closed with a nil Err
	case tl.over():
		stop = overrun(DeadlineReached, 0, 0, tl.name)
	}
	if !read && stop != nil { // ctx is done, after a Permanent or a refused error
		elapsed = tl.read()
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
