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
	"cmp"
	"context"
	"errors"
	"math"
	"time"
)

var (
	errNilContext = errors.New("retry: nil context")
	errNilFunc    = errors.New("retry: nil fn")
)

// Do calls fn until it succeeds and returns nil, or returns fn's error as it
// is if fn marked it [Permanent] or [Policy.IsRetryable] refuses it, or gives
// up with a *[RetryExhausted] whose Reason says why. fn's verdict (success or
// Permanent) comes first; then ctx and the deadline, checked before each call
// of fn, after each failed call and before each wait; then p's limits in
// order: IsRetryable, MaxAttempts, whether the wait fits, Budget, Sleeper. Do
// returns at the first stop it finds. The deadline is the nearer of ctx's and
// [Policy.Timeout] from Do's start, on [Policy.Clock]. fn's ctx ends at it in
// real time, at [Policy.AttemptTimeout], and when fn returns if Timeout or
// AttemptTimeout is set. A nil ctx or fn, or an invalid p, gets a plain
// error. Do does not recover panics. Concurrent calls may share a [Policy].
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
	var r run // field by field: a run{...} literal copies p through a temporary (BenchmarkDo/success)
	r.start = p.now()
	r.p, r.ctx, r.done, r.prev = p, ctx, ctx.Done(), p.BaseDelay
	r.setDeadline()
	defer r.release()    // fn's ctx, and a Budget token that no call used, panics included
	var err, slept error // fn's last error, and the Sleeper's after the wait
	for {
		// Before each call: ctx and the deadline, checked after fn's ctx is
		// made, since making it runs ctx's methods; then the Sleeper's error.
		fnCtx := r.fnCtx()
		if stop := r.expired(); stop != nil {
			return r.finish(err, stop)
		}
		if slept != nil {
			return r.finish(err, &RetryExhausted{Reason: SleepFailed, Cause: slept, detail: ": " + slept.Error()})
		}
		r.attempt++
		if p.Budget != nil {
			if r.attempt == 1 {
				p.Budget.earn() // a call that calls fn deposits
			}
			r.token.use() // the retry that it paid for happens
		}
		err = fn(fnCtx)
		r.release() // fn's ctx ends when fn returns
		if err == nil {
			return r.finish(nil, nil)
		}

		// After a failed call: fn's verdict, then ctx and the deadline, then p.
		permanent, hint := inspect(err)
		if permanent {
			return r.finish(err, nil)
		}
		if stop := r.expired(); stop != nil {
			return r.finish(err, stop)
		}
		if p.IsRetryable != nil && !p.IsRetryable(err) {
			return r.finish(err, nil)
		}
		if r.attempt >= p.MaxAttempts {
			return r.finish(err, &RetryExhausted{Reason: MaxAttemptsReached})
		}

		// Choose the wait: the jitter's, raised by a hint for this wait only.
		wait := clamp(p.Jitter(r.attempt-1, p.BaseDelay, p.MaxDelay, r.prev, unit(p.Rand())), 0, p.MaxDelay)
		r.prev = wait
		wait = max(wait, hint)

		// Before the wait: ctx and the deadline, then whether the wait fits,
		// then the Budget; then OnRetry, and the sleep.
		if stop := r.expired(); stop != nil {
			return r.finish(err, stop)
		}
		if stop := r.tooLong(wait, hint); stop != nil {
			return r.finish(err, stop)
		}
		if p.Budget != nil && !r.token.take(p.Budget) {
			return r.finish(err, &RetryExhausted{Reason: BudgetExhausted, Cause: ErrBudgetExhausted})
		}
		slept = r.pause(err, wait)
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
	p            Policy          // Do's, prepared
	start        time.Time       // when Do started, on the Clock
	at           time.Duration   // since start, at the last reading; never less than before
	hasDeadline  bool            // whether Policy.Timeout or ctx's deadline is set
	deadline     time.Duration   // the nearer of the two, since start
	deadlineName string          // its name, for the message
	attempt      int             // calls of fn so far
	prev         time.Duration   // the jitter's previous choice
	token        retryToken      // a Budget token held for the next retry
	done         <-chan struct{} // ctx's Done: nil if ctx can never be done
	cancel       func()          // fn's ctx's, if fnCtx made one
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
// they are set, whose cancel release calls. After a wait, it reads the
// Clock for what is left of the Timeout.
func (r *run) fnCtx() context.Context {
	if r.p.Timeout == 0 && r.p.AttemptTimeout == 0 {
		return r.ctx // no limit of Do's own: spare the context; ctx's deadline ends ctx itself
	}
	limit := cmp.Or(r.p.AttemptTimeout, math.MaxInt64) // no limit if AttemptTimeout is 0
	if r.p.Timeout > 0 {
		if r.attempt > 0 {
			r.readClock() // after a wait; before the first call, at is 0
		}
		limit = min(limit, r.p.Timeout-r.at)
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

// expired returns why Do must stop if ctx is done or the deadline has
// passed, and nil otherwise: it is the one check of ctx and the deadline.
func (r *run) expired() *RetryExhausted {
	if !r.hasDeadline && r.done == nil {
		return nil // nothing can end; inlined, this costs no call (BenchmarkDo/3-retries-no-wait)
	}
	return r.expiredSlow()
}

// expiredSlow is expired's check, outlined so that expired can be inlined:
// it reads the Clock, if there is a deadline, then asks ctx for its error,
// then compares the time with the deadline.
func (r *run) expiredSlow() *RetryExhausted {
	if r.hasDeadline {
		r.readClock()
	}
	switch err := r.ctx.Err(); {
	case err != nil:
		return interrupted(r.ctx, err)
	case r.hasDeadline && r.at >= r.deadline:
		return &RetryExhausted{Reason: DeadlineReached, Cause: context.DeadlineExceeded, detail: ": " + r.deadlineName + " passed"}
	}
	return nil
}

// tooLong returns why a wait, at least as long as hint, does not fit: a
// hint above MaxDelay, or a hint or a wait that would leave less than
// MinAttemptTime, or no time, before the deadline. It returns nil if the
// wait fits.
func (r *run) tooLong(wait, hint time.Duration) *RetryExhausted {
	left := r.deadline - r.at // 0 ≤ at, and at < deadline if there is one: no overflow
	// What a wait must leave: some time for an attempt, MinAttemptTime at least.
	room := max(r.p.MinAttemptTime, 1)
	switch {
	case hint > r.p.MaxDelay:
		h, m := readable(hint, r.p.MaxDelay)
		return &RetryExhausted{Reason: HintTooLong, detail: ": " + h + ", above MaxDelay " + m}
	case !r.hasDeadline:
		return nil
	case hint > 0 && left-hint < room: // the server asked for it: its hint is named, not the wait
		return &RetryExhausted{Reason: HintTooLong, detail: ": " + leaves(hint, left, r.p.MinAttemptTime, r.deadlineName)}
	case left-wait < room:
		return &RetryExhausted{Reason: DeadlineReached, Cause: context.DeadlineExceeded,
			detail: ": next wait " + leaves(wait, left, r.p.MinAttemptTime, r.deadlineName)}
	}
	return nil
}

// pause calls OnRetry, and sleeps for what is left of the wait: it counts
// from when it was chosen, so time spent in OnRetry comes off the sleep. It
// returns the Sleeper's error.
func (r *run) pause(err error, wait time.Duration) error {
	if r.p.OnRetry != nil {
		before := r.readClock()
		r.p.OnRetry(r.ctx, r.attempt, err, wait)
		wait -= r.readClock() - before
	}
	if r.p.Sleeper == nil {
		sleep(r.ctx, wait)
		return nil
	}
	return r.p.Sleeper.Sleep(r.ctx, max(wait, 0))
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

// release cancels the ctx that fnCtx made for fn, and gives back a Budget
// token that no call of fn used: Do stopped, or a panic unwound it, before
// the retry it was taken for.
func (r *run) release() {
	if r.cancel != nil {
		r.cancel() // again at Do's end: a no-op
	}
	if r.p.Budget != nil {
		r.token.release()
	}
}
