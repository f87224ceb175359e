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
// Start with [Do] and [Policy]. The README has recipes for HTTP, gRPC,
// database transactions, a circuit breaker, metrics, and tests on fake time.
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

// Do calls fn until it succeeds, fails with an error not to retry, or p
// allows no more attempts, and returns nil, fn's error as it is, or a
// *[RetryExhausted]. It decides at two check points:
//
//   - Before each call of fn, it reads [Policy.Clock] (before a later call,
//     only if there is a deadline), and stops if ctx is done ([Canceled], or
//     [DeadlineReached] for its deadline) or the deadline has passed.
//   - After a failed call, it reads fn's error for a [Permanent] mark and a
//     hint ([After]), and the Clock if there is a deadline; it stops if ctx
//     is done, returns a Permanent error as it is, stops if the deadline has
//     passed, returns an error that [Policy.IsRetryable] refuses as it is,
//     and stops after MaxAttempts calls ([MaxAttemptsReached]).
//
// In between, it chooses a wait ([Policy.Jitter], at most MaxDelay, at
// least the hint) and stops if the deadline has passed, if the hint is
// above MaxDelay or would not end before the deadline ([HintTooLong]), if
// the wait would not (DeadlineReached), or if [Policy.Budget] is empty
// ([BudgetExhausted]); then it calls OnRetry, sleeps, and stops if
// [Policy.Sleeper] fails while ctx is alive ([SleepFailed]). A ctx that
// ends, or a deadline that passes, while other code of yours runs is seen
// by the next check that looks at it; an answer found before stands.
//
// The deadline is the nearer of ctx's and [Policy.Timeout] after Do's start,
// on the Clock. fn's ctx ends at ctx's deadline, and in real time at the
// time left before Timeout and at [Policy.AttemptTimeout]; with either set,
// it is cancelled when fn returns. A nil ctx or fn, or an invalid p, gets a
// plain error. Do does not recover panics. Concurrent calls may share a [Policy].
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
	// The state, filled in field by field after the Clock is read: the
	// literal run{ctx: ctx, p: p, ...} copies p through a temporary just as
	// the caller wrote it, and BenchmarkDo/success took 17% longer.
	var r run
	r.start = p.now() // the first check point's reading of the Clock
	r.p, r.ctx, r.prev = p, ctx, p.BaseDelay
	r.setDeadline()
	defer r.release() // a Budget token or fn's ctx that no call used, panics included
	var err error     // fn's last error
	for {
		// Check point 1, before each call of fn, on the Clock just read, and
		// after fn's ctx is made: context.WithTimeout runs ctx's methods.
		fnCtx := r.fnCtx()
		switch cerr := ctx.Err(); {
		case cerr != nil:
			return r.finish(err, interrupted(ctx, cerr))
		case r.hasDeadline && r.at >= r.deadline:
			return r.finish(err, overrun(DeadlineReached, 0, 0, r.deadlineName))
		}
		if r.attempt++; r.attempt == 1 && p.Budget != nil {
			p.Budget.earn() // a call that calls fn deposits
		}
		r.token = false // fn is called: the retry that the token paid for happens
		err = fn(fnCtx)
		r.release() // fn's ctx ends when fn returns
		if err == nil {
			return r.finish(nil, nil)
		}

		// Check point 2, after a failed call: fn's error, read once, then the Clock.
		permanent, hint := inspect(err)
		if r.hasDeadline {
			r.readClock()
		}
		switch cerr := ctx.Err(); {
		case cerr != nil:
			return r.finish(err, interrupted(ctx, cerr))
		case permanent:
			return r.finish(err, nil)
		case r.hasDeadline && r.at >= r.deadline:
			return r.finish(err, overrun(DeadlineReached, 0, 0, r.deadlineName))
		case p.IsRetryable != nil && !p.IsRetryable(err):
			return r.finish(err, nil)
		case r.attempt >= p.MaxAttempts:
			return r.finish(err, &RetryExhausted{Reason: MaxAttemptsReached})
		}

		// Choose the wait: the jitter's, raised by a hint for this wait only.
		wait := min(max(p.Jitter(r.attempt-1, p.BaseDelay, p.MaxDelay, r.prev, unit(p.Rand())), 0), p.MaxDelay)
		r.prev = wait
		wait = max(wait, hint)

		// Check that it fits; take a Budget token, call OnRetry and sleep.
		if stop := r.tooLong(wait, hint); stop != nil {
			return r.finish(err, stop)
		}
		if stop := r.pause(err, wait); stop != nil {
			return r.finish(err, stop)
		}
		if r.hasDeadline {
			r.readClock() // for check point 1
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

// run is the state of one call of Do: its arguments, its time on the
// Clock, and where its loop stands.
type run struct {
	ctx          context.Context
	p            Policy        // Do's, prepared
	start        time.Time     // when Do started, on the Clock
	at           time.Duration // since start, at the last reading; never less than before
	hasDeadline  bool          // whether Policy.Timeout or ctx's deadline is set
	deadline     time.Duration // the nearer of the two, since start
	deadlineName string        // its name, for the message
	attempt      int           // calls of fn so far
	prev         time.Duration // the jitter's previous choice
	token        bool          // whether a Budget token is held for a retry that has not happened
	cancel       func()        // fn's ctx's, if fnCtx made one that is not yet cancelled
}

// now reads Policy.Clock, or the real clock if there is none.
func (p *Policy) now() time.Time {
	if p.Clock == nil {
		return time.Now()
	}
	return p.Clock.Now()
}

// setDeadline picks the nearer of Policy.Timeout and ctx's deadline, if
// there is one, as a time since start. Both are fixed instants, so the
// nearer stays nearer.
func (r *run) setDeadline() {
	if r.p.Timeout > 0 {
		r.hasDeadline, r.deadline, r.deadlineName = true, r.p.Timeout, timeoutName
	}
	if d, ok := r.ctx.Deadline(); ok && (!r.hasDeadline || d.Sub(r.start) < r.deadline) { // on a tie, Policy.Timeout is named
		r.hasDeadline, r.deadline, r.deadlineName = true, d.Sub(r.start), ctxDeadlineName
	}
}

// fnCtx returns the ctx for the next call of fn: ctx itself, or one that
// also ends at Policy.Timeout, and at Policy.AttemptTimeout from now, if
// they are set, whose cancel release calls.
func (r *run) fnCtx() context.Context {
	if r.p.Timeout == 0 && r.p.AttemptTimeout == 0 {
		return r.ctx // no limit of Do's own: spare the context; ctx's deadline ends ctx itself
	}
	limit := time.Duration(math.MaxInt64)
	if r.p.Timeout > 0 {
		limit = r.p.Timeout - r.at // at was read just before: at the start, or after the wait
	}
	if r.p.AttemptTimeout > 0 {
		limit = min(limit, r.p.AttemptTimeout)
	}
	ctx, cancel := context.WithTimeout(r.ctx, limit) // measured on the Clock, it runs in real time from now
	r.cancel = cancel
	return ctx
}

// readClock reads the Clock and returns the time since Do started.
func (r *run) readClock() time.Duration {
	r.at = max(r.at, r.p.now().Sub(r.start)) // a Clock that went back must not stretch the deadline
	return r.at
}

// tooLong reads the Clock, if there is a deadline, and says which limit a
// wait, at least as long as hint, breaks: the deadline, passed by now; a
// hint above MaxDelay; a hint or a wait that would not end before the
// deadline. It returns nil if the wait fits.
func (r *run) tooLong(wait, hint time.Duration) *RetryExhausted {
	if r.hasDeadline {
		r.readClock()
	}
	switch {
	case r.hasDeadline && r.at >= r.deadline:
		return overrun(DeadlineReached, 0, 0, r.deadlineName)
	case hint > r.p.MaxDelay:
		return overrun(HintTooLong, hint, r.p.MaxDelay, maxDelayName)
	case !r.hasDeadline:
		return nil
	}
	switch left := r.deadline - r.at; { // 0 ≤ at < deadline: no overflow; a hint, which the server asked for, wins
	case hint >= left:
		return overrun(HintTooLong, hint, left, r.deadlineName)
	case wait >= left:
		return overrun(DeadlineReached, wait, left, r.deadlineName)
	}
	return nil
}

// pause takes a Budget token for the retry, calls OnRetry, and sleeps for
// what is left of the wait: it counts from when it was chosen, so time
// spent in OnRetry comes off the sleep. It returns why Do must stop:
// BudgetExhausted, or SleepFailed for a Sleeper's error while ctx is alive;
// nil otherwise.
func (r *run) pause(err error, wait time.Duration) *RetryExhausted {
	if r.p.Budget != nil {
		if !r.p.Budget.spend() {
			return &RetryExhausted{Reason: BudgetExhausted, Cause: ErrBudgetExhausted}
		}
		r.token = true
	}
	if r.p.OnRetry != nil {
		before := r.readClock()
		r.p.OnRetry(r.ctx, r.attempt, err, wait)
		wait -= r.readClock() - before
	}
	if r.p.Sleeper == nil {
		sleep(r.ctx, wait)
	} else if serr := r.p.Sleeper.Sleep(r.ctx, max(wait, 0)); serr != nil && r.ctx.Err() == nil {
		return &RetryExhausted{Reason: SleepFailed, Cause: serr}
	}
	return nil
}

// sleep is the default Sleeper: it waits for d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// finish returns what Do returns, and calls OnDone with it first: err as
// it is if stop is nil, else stop with the attempts, the time elapsed and
// err filled in. It decides nothing. Before the first call, the elapsed
// time is 0, and it does not read the Clock.
func (r *run) finish(err error, stop *RetryExhausted) error {
	var elapsed time.Duration
	if r.attempt > 0 && (stop != nil || r.p.OnDone != nil) {
		elapsed = r.readClock() // never less than a deadline that was seen to pass
	}
	if stop != nil {
		stop.Attempts, stop.Elapsed, stop.Last = r.attempt, elapsed, err
		err = stop
	}
	if r.p.OnDone != nil {
		r.p.OnDone(r.ctx, r.attempt, elapsed, err)
	}
	return err
}

// release cancels the ctx that fnCtx made for fn, and gives back the Budget
// token of a retry that did not happen: Do stopped, or a panic unwound it,
// before it called fn again.
func (r *run) release() {
	if r.cancel != nil {
		r.cancel() // again at Do's end: a no-op
	}
	if r.token {
		r.p.Budget.refund()
	}
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
