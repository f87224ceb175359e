package retry_test

import (
	"context"
	"errors"
	"expvar"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/quietwire/retry"
)

// callSite holds the metrics of one call site. A service publishes them
// with expvar.Publish (or registers Prometheus counters) once, at start.
type callSite struct {
	outcomes *expvar.Map // one counter per outcome
	attempts *expvar.Map // histogram: calls of fn per Do
	elapsed  *expvar.Map // histogram: time per Do, in buckets
	retries  expvar.Int  // calls of fn after the first
}

// newCallSite returns a call site's metrics, zero and not yet published.
func newCallSite() *callSite {
	return &callSite{outcomes: new(expvar.Map).Init(), attempts: new(expvar.Map).Init(),
		elapsed: new(expvar.Map).Init()}
}

// instrument returns p with hooks that count each Do's outcome and retries
// in m, log a DEBUG line per retry announced and a WARN line when a call
// fails, both with the request's ctx, so a handler can add its request or
// trace ID. Retries are counted when Do returns, not in OnRetry, whose
// retry does not follow if Do stops first. Build the Policy once per call
// site and share it: the hooks get each call's ctx. A call that succeeds
// allocates nothing here.
func instrument(p retry.Policy, m *callSite, log *slog.Logger) retry.Policy {
	p.OnRetry = func(ctx context.Context, attempt int, err error, wait time.Duration) {
		log.DebugContext(ctx, "retrying", "attempt", attempt, "err", err, "wait", wait)
	}
	p.OnDone = func(ctx context.Context, attempts int, elapsed time.Duration, err error) {
		outcome := outcomeOf(attempts, err)
		m.outcomes.Add(outcome, 1)
		m.attempts.Add(strconv.Itoa(attempts), 1) // below 100, Itoa does not allocate
		m.elapsed.Add(bucketOf(elapsed), 1)
		m.retries.Add(int64(max(attempts-1, 0)))
		if err != nil {
			log.WarnContext(ctx, "call failed", "outcome", outcome, "attempts", attempts,
				"elapsed", elapsed, "err", err)
		}
	}
	return p
}

// outcomeOf names what one Do did, from what OnDone receives.
func outcomeOf(attempts int, err error) string {
	re, exhausted := err.(*retry.RetryExhausted) // Do returns it unwrapped
	switch {
	case err == nil && attempts == 1:
		return "success_first_try"
	case err == nil:
		return "success_after_retry"
	case attempts == 0:
		return "not_started" // ctx was done, or its deadline had passed, before the first call
	case exhausted:
		return "exhausted/" + re.Reason.String()
	}
	return "non_retryable" // Permanent, or refused by IsRetryable
}

// buckets are the upper bounds of the elapsed-time histogram, with their
// labels made once, so that counting a call allocates nothing.
var buckets = []struct {
	le    time.Duration
	label string
}{
	{100 * time.Millisecond, "le_100ms"},
	{time.Second, "le_1s"},
	{10 * time.Second, "le_10s"},
}

// bucketOf is the elapsed-time bucket of a histogram.
func bucketOf(d time.Duration) string {
	for _, b := range buckets {
		if d <= b.le {
			return b.label
		}
	}
	return "le_inf"
}

type requestIDKey struct{}

// withRequestID returns ctx carrying id, for the log lines of its calls.
func withRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// requestIDHandler adds the request ID from ctx to each record, as a
// tracing handler adds the trace and span IDs. Wrap the service's handler:
// slog.New(requestIDHandler{slog.NewJSONHandler(os.Stderr, nil)}).
type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id, ok := ctx.Value(requestIDKey{}).(string); ok {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(attrs)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}

// One call site, observed through OnRetry and OnDone with one shared
// Policy: outcome counters, attempt and elapsed-time histograms, and log
// lines that carry each request's ID.
func ExamplePolicy_onDone() {
	text := slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // no timestamps, for a checked output
			}
			return a
		},
	})
	m := newCallSite()
	var now time.Time // fake time, which Sleep moves, keeps the example instant and its output fixed
	p := retry.Policy{MaxAttempts: 3, Jitter: retry.NoJitter}
	p.Clock = retry.ClockFunc(func() time.Time { return now })
	p.Sleeper = retry.SleeperFunc(func(_ context.Context, d time.Duration) error {
		now = now.Add(d)
		return nil
	})
	p = instrument(p, m, slog.New(requestIDHandler{text}))

	err503 := errors.New("503")
	for id, errs := range [][]error{ // that fn returns, one per call, the last one again and again
		{nil},
		{err503, err503, nil},
		{err503},
		{retry.Permanent(errors.New("404"))},
	} {
		ctx, calls := withRequestID(context.Background(), "r"+strconv.Itoa(id+1)), 0
		retry.Do(ctx, func(context.Context) error { calls++; return errs[min(calls, len(errs))-1] }, p)
	}
	cancelled, cancel := context.WithCancel(withRequestID(context.Background(), "r5"))
	cancel() // a ctx done before the first call
	retry.Do(cancelled, func(context.Context) error { return nil }, p)
	fmt.Printf("%v\n%v\n%v\nretries: %d\n", m.outcomes, m.attempts, m.elapsed, m.retries.Value())
	// Output:
	// level=DEBUG msg=retrying attempt=1 err=503 wait=100ms request_id=r2
	// level=DEBUG msg=retrying attempt=2 err=503 wait=200ms request_id=r2
	// level=DEBUG msg=retrying attempt=1 err=503 wait=100ms request_id=r3
	// level=DEBUG msg=retrying attempt=2 err=503 wait=200ms request_id=r3
	// level=WARN msg="call failed" outcome="exhausted/max attempts reached" attempts=3 elapsed=300ms err="retry: gave up after 3 attempts in 300ms (max attempts reached): 503" request_id=r3
	// level=WARN msg="call failed" outcome=non_retryable attempts=1 elapsed=0s err=404 request_id=r4
	// level=WARN msg="call failed" outcome=not_started attempts=0 elapsed=0s err="retry: gave up before the first attempt (canceled: context canceled)" request_id=r5
	// {"exhausted/max attempts reached": 1, "non_retryable": 1, "not_started": 1, "success_after_retry": 1, "success_first_try": 1}
	// {"0": 1, "1": 2, "3": 2}
	// {"le_100ms": 3, "le_1s": 2}
	// retries: 4
}

// The README's observability recipe, as written, makes no allocation for
// a call that succeeds.
func TestObserveRecipeAllocatesNothingOnSuccess(t *testing.T) {
	if info, _ := debug.ReadBuildInfo(); info != nil && slices.Contains(info.Settings, debug.BuildSetting{Key: "-race", Value: "true"}) {
		t.Skip("the race detector allocates on its own")
	}
	m := newCallSite()
	p := instrument(retry.Policy{}, m, slog.New(requestIDHandler{slog.NewTextHandler(io.Discard, nil)}))
	ctx := withRequestID(context.Background(), "r1")
	succeed := func(context.Context) error { return nil }
	if got := testing.AllocsPerRun(100, func() { retry.Do(ctx, succeed, p) }); got != 0 {
		t.Errorf("Do() with the recipe's hooks, success: allocations = %v; want 0", got)
	}
	if got, want := m.outcomes.Get("success_first_try").String(), "101"; got != want {
		t.Errorf(`outcomes["success_first_try"] = %s; want %s`, got, want)
	}
}
