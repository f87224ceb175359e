// Package retry calls a function again when it fails, waiting between
// attempts with capped exponential backoff and jitter, within a number of
// attempts and a time limit.
//
// Do runs the loop; Policy says how many attempts, how long to wait and
// what to retry; a *RetryExhausted says why Do gave up. Jitter, Clock and
// Sleeper can be replaced, so that code which retries can be tested on
// fake time, and a Budget shared by many calls keeps retries from
// multiplying an outage.
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
// retried, or p allows no more attempts. It returns nil, fn's error, or a
// *RetryExhausted.
//
// Do calls fn at once. When fn fails, Do returns fn's error as it is if
// the error is marked with Permanent or p.IsRetryable rejects it.
// Otherwise it waits and calls fn again. The wait is chosen by p.Jitter,
// is never longer than p.MaxDelay, and is at least as long as a hint in
// the error: an error anywhere in fn's chain with a method
//
//	RetryAfter() time.Duration
//
// that returns a positive wait, as an HTTP Retry-After header asks for
// one. After adds such a hint to an error, and ParseRetryAfter reads the
// header.
//
// Do gives up, without a last useless wait, when fn has been called
// p.MaxAttempts times, when ctx is done, when p.Timeout or ctx's deadline
// has passed or the next wait would not end before it, when a hint asks
// for a wait longer than p.MaxDelay or one that would not end before a
// deadline, when p.Sleeper fails, or when p.Budget has no token for the
// retry. It then returns a *RetryExhausted that reaches fn's last error
// through errors.Is and errors.As. A ctx that is done and a deadline that
// has passed are checked before p.IsRetryable is asked, and fn is never
// called once either is so. When ctx is done as Do stops, whatever else
// stopped it, RetryExhausted.Reason is DeadlineReached if ctx's deadline
// passed and Canceled if ctx was cancelled.
//
// Do tells the time by p.Clock: p.Timeout runs from the call of Do, and
// ctx's deadline is the instant it names. The ctx that fn receives ends at
// ctx's deadline, at p.Timeout after Do was called and at p.AttemptTimeout
// after the attempt began, whichever comes first; Do's two limits end it
// in real time once the time that Clock says is left has run out. With
// either set, fn's ctx is cancelled as soon as fn returns.
//
// Do returns an error without calling fn if ctx or fn is nil, if p is
// invalid (the error wraps ErrInvalidPolicy), or if ctx is already done
// (ctx's error, unchanged); otherwise it calls fn at least once, however
// short p.Timeout is. It does not recover a panic in fn or in p's
// functions. It is safe for concurrent use with one shared Policy, and it
// starts no goroutine of its own: with p.Timeout or p.AttemptTimeout set,
// each attempt's ctx comes from context.WithTimeout, which starts one
// goroutine for the attempt, ending with it, when ctx's Done channel was
// not made by package context.
//
// Since Do calls fn once per attempt, everything an attempt needs must be
// made inside fn: build a request inside fn, since the first attempt
// consumes its body, and read and close the response inside fn. Retry an
// operation that may already have taken effect, such as a POST that
// reached the server, only if it is idempotent.
//
// Like any err != nil check, Do counts a typed nil pointer returned as an
// error as a failure. Do calls the Unwrap and RetryAfter methods of the
// errors in fn's chain, as errors.Is would.
func Do(ctx context.Context, fn func(context.Context) error, p Policy) error {
	switch {
	case ctx == nil:
		return errNilContext
	case fn == nil:
		return errNilFunc
	}
	p.fillDefaults() // first, so that validate sees the delays that Do will use
	if err := p.validate(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return p.done(ctx, 0, 0, err)
	}
	var t timer
	defer t.stop()
	r := run{p: &p, prev: p.BaseDelay, timer: &t}
	r.begin(ctx)
	if p.Budget != nil {
		p.Budget.earn()
	}
	for attempt := 1; ; attempt++ {
		err := r.call(ctx, fn)
		switch {
		case err == nil:
			return p.done(ctx, attempt, r.elapsed(), nil)
		case ctx.Err() != nil: // the caller is gone or out of time: whatever fn said, stop
			return r.giveUp(ctx, interrupted(ctx), attempt, err)
		case isPermanent(err):
			return p.done(ctx, attempt, r.elapsed(), err)
		}
		if stop := r.measure(); stop != nil { // before IsRetryable: a deadline is Do's to report, not fn's error
			return r.giveUp(ctx, stop, attempt, err)
		}
		if p.IsRetryable != nil && !p.IsRetryable(err) {
			return p.done(ctx, attempt, r.elapsed(), err)
		}
		wait, stop := r.backoff(attempt, err)
		if stop != nil {
			return r.giveUp(ctx, stop, attempt, err)
		}
		if stop := r.pause(ctx, attempt, err, wait); stop != nil {
			return r.giveUp(ctx, stop, attempt, err)
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
//
// Do reads the clock once when it starts, then only where a deadline,
// OnRetry, OnDone or the final error needs it: with a deadline, when fn
// fails and after each wait (TestClockReads counts them; the README's
// performance section measures what a read costs).
type run struct {
	p        *Policy // Do's copy, with defaults filled in
	start    time.Time
	deadline time.Time     // the nearer of Policy.Timeout and ctx's deadline, on Clock
	bounded  bool          // whether there is a deadline
	byCtx    bool          // whether the deadline is ctx's
	at       time.Duration // since the start, at the last reading; never less than before
	left     time.Duration // before the deadline, at the last reading; forever if none
	prev     time.Duration // the jitter's previous choice, BaseDelay before the first
	timer    *timer        // the default Sleeper
}

// forever stands for the time left when there is no deadline.
const forever = time.Duration(math.MaxInt64)

// begin reads the clock for the start of the run, and picks the nearer
// deadline: both are fixed instants on Clock, so the nearer one stays
// nearer. The first attempt's ctx reuses the start's reading.
func (r *run) begin(ctx context.Context) {
	start := r.p.now() // a local, not r.start: storing r's own field into r would move Do's Policy to the heap
	r.start, r.left = start, forever
	if r.p.Timeout > 0 {
		r.deadline, r.bounded, r.left = start.Add(r.p.Timeout), true, r.p.Timeout
	}
	if d, ok := ctx.Deadline(); ok && d.Sub(start) < r.left { // on a tie, Policy.Timeout is named
		r.deadline, r.bounded, r.byCtx, r.left = d, true, true, d.Sub(start)
	}
}

// limitName names the deadline, for RetryExhausted's message. It returns
// constants, not a field of r, so that Do's Policy stays on the stack.
func (r *run) limitName() string {
	if r.byCtx {
		return ctxDeadlineName
	}
	return timeoutName
}

// measure reads the clock for the time left before the deadline, and says
// if it has passed; without a deadline it spares the clock read.
func (r *run) measure() *RetryExhausted {
	if !r.bounded {
		return nil
	}
	r.at = max(r.at, r.since(r.p.now())) // a Clock that went back must not stretch the deadline
	if r.left = r.deadline.Sub(r.start.Add(r.at)); r.left > 0 {
		return nil
	}
	return overrun(DeadlineReached, 0, r.left, r.limitName())
}

// call calls fn once, with a ctx that ends at Policy.Timeout and at
// AttemptTimeout after the call begins, when the Policy has them.
func (r *run) call(ctx context.Context, fn func(context.Context) error) error {
	if r.p.Timeout == 0 && r.p.AttemptTimeout == 0 {
		return fn(ctx) // no limit of its own: spare the context
	}
	limit := forever // ctx's own deadline ends fn's ctx in real time; Do adds its own limits
	if r.p.Timeout > 0 {
		limit = r.p.Timeout - r.at // measured just before the call: at the start, or after the wait
	}
	if r.p.AttemptTimeout > 0 {
		limit = min(limit, r.p.AttemptTimeout)
	}
	// The limit is measured on Policy.Clock; fn's ctx ends that long from
	// now in real time.
	actx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	return fn(actx)
}

// backoff chooses the wait before the next attempt, or says why there is
// none.
func (r *run) backoff(attempt int, err error) (time.Duration, *RetryExhausted) {
	if attempt >= r.p.MaxAttempts {
		return 0, stopped(MaxAttemptsReached, nil)
	}
	wait := r.p.Jitter(attempt-1, r.p.BaseDelay, r.p.MaxDelay, r.prev, unit(r.p.rand()))
	wait = clamp(wait, 0, r.p.MaxDelay) // a custom Jitter may misbehave
	r.prev = wait                       // a hint raises this wait only, not the ones after it
	hint := retryAfter(err)
	wait = max(wait, hint)
	if stop := r.fit(wait, hint); stop != nil {
		return 0, stop
	}
	return wait, nil
}

// fit says why a wait, at least as long as hint, cannot be made: the hint
// asks for too long, or the wait would not end before the deadline, with
// time for an attempt. It returns nil if the wait fits.
func (r *run) fit(wait, hint time.Duration) *RetryExhausted {
	switch { // in this order: a hint, which the server asked for, wins over the jitter
	case hint > r.p.MaxDelay:
		return overrun(HintTooLong, hint, r.p.MaxDelay, maxDelayName)
	case r.bounded && hint >= r.left:
		return overrun(HintTooLong, hint, r.left, r.limitName())
	case r.bounded && wait >= r.left:
		return overrun(DeadlineReached, wait, r.left, r.limitName())
	}
	return nil
}

// pause takes a Budget token for the retry, calls OnRetry, waits until the
// wait chosen for the attempt ends, and checks that the deadline did not
// pass meanwhile. The end was fixed when the wait was chosen, so time
// spent in OnRetry counts against it.
func (r *run) pause(ctx context.Context, attempt int, err error, wait time.Duration) *RetryExhausted {
	refund := false // whether a Budget token was taken for a retry that has not happened
	defer func() {  // deferred, so that a panic in OnRetry, the Sleeper or the Clock gives it back too
		if refund {
			r.p.Budget.refund()
		}
	}()
	if r.p.Budget != nil {
		if !r.p.Budget.spend() {
			return stopped(BudgetExhausted, ErrBudgetExhausted)
		}
		refund = true
	}
	if r.p.OnRetry != nil {
		before := r.p.now()
		r.p.OnRetry(ctx, attempt, err, wait)
		wait -= max(r.p.now().Sub(before), 0)
	}
	stop := r.sleep(ctx, max(wait, 0))
	if stop == nil { // a slow OnRetry or a late Sleeper may have run past the deadline
		stop = r.measure()
	}
	refund = refund && stop != nil // with no stop, fn is called next: the retry happens
	return stop
}

// sleep waits for d, and says why retrying must stop if ctx is done or the
// Sleeper failed.
func (r *run) sleep(ctx context.Context, d time.Duration) *RetryExhausted {
	var err error
	var ended bool // ctx.Done ended the default timer's wait
	if r.p.Sleeper != nil {
		err = r.p.Sleeper.Sleep(ctx, d)
	} else {
		ended = r.timer.sleep(ctx, d)
	}
	if ended || ctx.Err() != nil { // ended with Err nil: ctx broke its contract; stop all the same
		return interrupted(ctx)
	}
	if err != nil {
		return stopped(SleepFailed, err)
	}
	return nil
}

// giveUp fills in stop with what the run did, and returns it through
// Policy.done.
func (r *run) giveUp(ctx context.Context, stop *RetryExhausted, attempts int, last error) error {
	if ctx.Err() != nil { // the caller's state wins over whatever else stopped Do
		stop = interrupted(ctx)
	}
	stop.Attempts, stop.Last, stop.Elapsed = attempts, last, r.since(r.p.now())
	return r.p.done(ctx, attempts, stop.Elapsed, stop)
}

// elapsed returns the time since the start for OnDone, and spares the
// clock read when there is no OnDone.
func (r *run) elapsed() time.Duration {
	if r.p.OnDone == nil {
		return 0
	}
	return r.since(r.p.now())
}

// since returns the time from the start of the run to now, or 0 if the
// Clock went backwards.
func (r *run) since(now time.Time) time.Duration {
	return max(now.Sub(r.start), 0)
}

// timer is the default Sleeper of one run: one time.Timer, made at the
// first wait and reused for the others, which saves an allocation per
// wait. It is a separate variable, not a field of run, so that escape
// analysis keeps Do's Policy on the stack.
type timer struct{ t *time.Timer }

// sleep waits for d or until ctx is done, and reports whether ctx ended
// the wait. The timer is only ever reset after it fired and was received
// from: once ctx ends a wait, Do returns.
func (t *timer) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return false
	}
	if t.t == nil {
		t.t = time.NewTimer(d)
	} else {
		t.t.Reset(d)
	}
	select {
	case <-t.t.C:
		return false
	case <-ctx.Done():
		return true
	}
}

// stop stops the timer, if one was made, so that it does not outlive Do.
func (t *timer) stop() {
	if t.t != nil {
		t.t.Stop()
	}
}

func stopped(reason Reason, cause error) *RetryExhausted {
	return &RetryExhausted{Reason: reason, Cause: cause}
}

// overrun says that a wait (or a hint; 0 if the deadline had passed) broke
// a limit: MaxDelay, or the time left before the deadline named.
func overrun(reason Reason, wait, limit time.Duration, name string) *RetryExhausted {
	stop := stopped(reason, nil)
	if reason == DeadlineReached {
		stop.Cause = context.DeadlineExceeded // one rule for callers that map errors to a 504
	}
	stop.wait, stop.limit, stop.limitName = wait, limit, name
	return stop
}
