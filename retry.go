// Package retry calls a function again when it fails, waiting between
// attempts with capped exponential backoff and jitter, within a number of
// attempts and a total deadline.
//
// Do calls fn at once. If fn returns nil, Do returns nil. If fn returns an
// error marked with Permanent, or one that Policy.IsRetryable rejects, Do
// returns it at once (unless a deadline has passed: see below). Otherwise Do waits and calls fn again: the wait is
// chosen by Policy.Jitter, is at least as long as a hint in the error (see
// below), and never longer than Policy.MaxDelay. By default every error is
// retried, timeouts included: an attempt that ran out of time is worth
// another while the caller still waits.
//
// Do gives up, without a last useless wait, when fn has been called
// Policy.MaxAttempts times, when ctx is done, when Policy.Timeout or
// ctx's deadline has passed or the next wait would end at or after it,
// when a hint asks for a longer wait than the policy allows, or when
// Policy.Budget has no token left for a retry. It then returns a
// *RetryExhausted with the number of attempts, the time they took, the
// reason, and the last error, which errors.Is and errors.As still reach.
// Its Reason is ContextDone if and only if ctx was done when Do stopped; a
// deadline that ended the retries while ctx was alive is DeadlineReached,
// whose Cause is context.DeadlineExceeded.
//
// Policy.Timeout bounds the whole call, attempts included: the ctx that
// fn receives ends at the Timeout, and at Policy.AttemptTimeout after
// the attempt began, whichever comes first. Deadlines are measured on
// Policy.Clock, when fn fails and again before each attempt after the
// first: fn is never called once a deadline has passed, however late
// OnRetry or the Sleeper returned. A deadline that has passed when fn
// fails ends the retries before IsRetryable is asked, so a predicate that
// refuses timeouts does not hide that the Timeout ended the call.
//
// An error can ask for a minimum wait, as an HTTP Retry-After header does:
// fn returns After(d, err), or any error with a method
//
//	RetryAfter() time.Duration
//
// anywhere in its chain of wrapped errors. A positive result is honoured
// for that one wait: Do never calls fn again sooner, and gives up at once
// if the hint is longer than MaxDelay or does not end before a deadline.
// ParseRetryAfter reads the wait from an HTTP Retry-After header.
//
// Policy.OnRetry and Policy.OnDone observe each retry and each call, with
// the ctx of the call they report on. Policy.Clock and Policy.Sleeper
// replace the real clock and timer, so code that retries can be tested on
// fake time.
//
// Do starts no goroutine of its own. With Policy.Timeout or
// Policy.AttemptTimeout set, each attempt's ctx comes from
// context.WithTimeout, which starts one goroutine for the attempt, ending
// with it, when ctx's Done channel was not made by package context (a
// framework's own Context type with a Done of its own, say).
//
// # fn must be safe to call again
//
// Do calls fn once per attempt, so everything an attempt needs must be
// made inside fn: build the request inside fn (a request body is consumed
// by the first attempt), and read and close the response body inside fn
// (a connection reset while reading the body is then retried too; and with
// a Timeout or AttemptTimeout, fn's ctx is cancelled as soon as fn
// returns). Retry an operation that may already have taken effect, such as
// a POST that reached the server, only if it is idempotent.
package retry

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"time"
)

var (
	errNilContext = errors.New("retry: nil context")
	errNilFunc    = errors.New("retry: nil fn")
	errBrokenCtx  = errors.New("retry: ctx.Done was closed while ctx.Err was nil")
)

// Do calls fn until it succeeds, fails with an error that is not
// retryable, or p allows no more attempts; see the package doc for the
// whole contract. It returns nil, fn's non-retryable error (see
// Permanent), or a *RetryExhausted.
//
// Do returns an error without calling fn if ctx or fn is nil, if p is
// invalid (one that wraps ErrInvalidPolicy), or if ctx is already done
// (ctx's error, unchanged). Once fn has been called, a ctx that is done
// ends the retries with a *RetryExhausted whose Reason is ContextDone,
// whatever fn returned; a deadline that has passed, with one whose Reason
// is DeadlineReached, whatever IsRetryable says. A panic in fn, IsRetryable, OnRetry or OnDone is
// not recovered. Do is safe for concurrent use with one shared Policy.
//
// Like any err != nil check, Do counts a typed nil pointer returned as an
// error as a failure, and keeps it as RetryExhausted.Last. Do calls the
// RetryAfter and Unwrap methods of the errors in fn's error chain, so a
// method that dereferences a nil receiver panics inside Do, as it would
// inside errors.Is.
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
	p.fillDefaults()
	var t timer
	defer t.stop()
	r := run{p: &p, prev: p.BaseDelay, timer: &t}
	if err := ctx.Err(); err != nil {
		return r.done(ctx, 0, err)
	}
	r.begin(ctx)
	if p.Budget != nil {
		p.Budget.earn()
	}
	for attempt := 1; ; attempt++ {
		err := r.call(ctx, fn)
		if err == nil {
			return r.done(ctx, attempt, nil)
		}
		if ctx.Err() != nil { // the caller is gone: whatever fn said, stop
			return r.giveUp(ctx, stopped(ContextDone, ctxCause(ctx)), attempt, err)
		}
		if perm, ok := permanent(err); ok {
			return r.done(ctx, attempt, perm)
		}
		r.measure()
		if stop := r.passed(); stop != nil { // before IsRetryable: a deadline is Do's to report, not fn's error
			return r.giveUp(ctx, stop, attempt, err)
		}
		if !p.retryable(err) {
			return r.done(ctx, attempt, err)
		}
		wait, stop := r.backoff(attempt, err)
		if stop == nil {
			stop = r.pause(ctx, attempt, err, wait)
		}
		if stop != nil {
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
type run struct {
	p              *Policy // Do's copy, with defaults filled in
	start          time.Time
	ctxDeadline    time.Time     // ctx's deadline, if ctxHasDeadline
	ctxHasDeadline bool          // whether ctx has a deadline
	left           time.Duration // before Policy.Timeout, at the last reading; forever if none
	ctxLeft        time.Duration // before ctx's deadline, at the last reading; forever if none
	prev           time.Duration // the jitter's previous choice, BaseDelay before the first
	timer          *timer        // the default Sleeper
	elapsed        time.Duration // from start to giving up, once measured
	ended          bool          // whether elapsed was measured
}

// forever stands for the time left when there is no deadline.
const forever = time.Duration(math.MaxInt64)

// The names of the limits a wait can break, for RetryExhausted's message.
const (
	maxDelayName    = "MaxDelay"
	timeoutName     = "Policy.Timeout"
	ctxDeadlineName = "ctx's deadline"
)

// begin reads the clock for the start of the run and measures the time
// left before each deadline: the first attempt's ctx reuses that reading.
func (r *run) begin(ctx context.Context) {
	r.start = r.p.now()
	r.ctxDeadline, r.ctxHasDeadline = ctx.Deadline()
	r.left, r.ctxLeft = forever, forever
	r.measureAt(r.start)
}

// measure reads the clock and measures the time left before each
// deadline; without a deadline it spares the clock read.
func (r *run) measure() {
	if r.p.Timeout > 0 || r.ctxHasDeadline {
		r.measureAt(r.p.now())
	}
}

// measureAt sets the time left before each deadline that there is, at now.
func (r *run) measureAt(now time.Time) {
	if r.p.Timeout > 0 {
		r.left = r.p.Timeout - r.since(now)
	}
	if r.ctxHasDeadline {
		r.ctxLeft = r.ctxDeadline.Sub(now)
	}
}

// nearest returns the time left before the nearer deadline, and its name.
func (r *run) nearest() (time.Duration, string) {
	if r.ctxLeft < r.left {
		return r.ctxLeft, ctxDeadlineName
	}
	return r.left, timeoutName
}

// passed says which deadline had passed at the last reading, if one had.
func (r *run) passed() *RetryExhausted {
	if left, name := r.nearest(); left <= 0 {
		return overrun(DeadlineReached, 0, left, name)
	}
	return nil
}

// call calls fn once, with a ctx that ends at Policy.Timeout and at
// AttemptTimeout after the call begins, when the Policy has them.
func (r *run) call(ctx context.Context, fn func(context.Context) error) error {
	if r.p.Timeout == 0 && r.p.AttemptTimeout == 0 {
		return fn(ctx) // no limit of its own: spare the context
	}
	limit := r.left // measured just before the call: at the start, or after the wait
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
	if r.p.Budget != nil && !r.p.Budget.spend() {
		return 0, stopped(BudgetExhausted, ErrBudgetExhausted)
	}
	return wait, nil
}

// fit says why a wait, at least as long as hint, cannot be made: the hint
// asks for too long, or the wait would not end before a deadline, with
// time for an attempt. It returns nil if the wait fits.
func (r *run) fit(wait, hint time.Duration) *RetryExhausted {
	left, name := r.nearest()
	switch { // in this order: a hint, which the server asked for, wins over the jitter
	case hint > r.p.MaxDelay:
		return overrun(HintTooLong, hint, r.p.MaxDelay, maxDelayName)
	case hint >= left:
		return overrun(HintTooLong, hint, left, name)
	case wait >= left:
		return overrun(DeadlineReached, wait, left, name)
	}
	return nil
}

// pause calls OnRetry, waits until the wait chosen for the attempt ends,
// and checks that no deadline passed meanwhile. The end was fixed when
// the wait was chosen, so time spent in OnRetry counts against the wait.
func (r *run) pause(ctx context.Context, attempt int, err error, wait time.Duration) *RetryExhausted {
	if r.p.OnRetry != nil {
		before := r.p.now()
		r.p.OnRetry(ctx, attempt, err, wait)
		wait -= max(r.p.now().Sub(before), 0)
	}
	stop := r.sleep(ctx, max(wait, 0))
	if stop == nil { // a slow OnRetry or a late Sleeper may have run past a deadline
		r.measure()
		stop = r.passed()
	}
	if stop != nil && r.p.Budget != nil {
		r.p.Budget.refund() // the retry that the token paid for will not happen
	}
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
		return stopped(ContextDone, ctxCause(ctx))
	}
	if err != nil {
		return stopped(SleepFailed, err)
	}
	return nil
}

// giveUp fills in stop with what the run did, and returns it through done.
func (r *run) giveUp(ctx context.Context, stop *RetryExhausted, attempts int, last error) error {
	if stop.Reason != ContextDone && ctx.Err() != nil { // ContextDone if and only if ctx is done
		stop = stopped(ContextDone, ctxCause(ctx))
	}
	r.elapsed, r.ended = r.since(r.p.now()), true
	stop.Attempts, stop.Last, stop.Elapsed = attempts, last, r.elapsed
	return r.done(ctx, attempts, stop)
}

// done calls OnDone, if set, with what the run did, and returns err.
func (r *run) done(ctx context.Context, attempts int, err error) error {
	if r.p.OnDone == nil {
		return err
	}
	if !r.ended && attempts > 0 { // measure once: giveUp may have already
		r.elapsed = r.since(r.p.now())
	}
	r.p.OnDone(ctx, attempts, r.elapsed, err)
	return err
}

// timer is the default Sleeper of one run: one time.Timer, made at the
// first wait and then reused. It is a separate variable, not a field of
// run, so that escape analysis keeps Do's Policy on the stack.
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

// ctxCause returns why ctx is done: its error, joined with the cause it
// was cancelled with, if any, so that errors.Is reaches both.
func ctxCause(ctx context.Context) error {
	err := ctx.Err()
	if err == nil {
		return errBrokenCtx
	}
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return &causeError{err, cause}
	}
	return err
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
