package retry_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"

	"github.com/quietwire/retry"
)

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
	ft := &fakeTime{} // fake time keeps the example instant and its output fixed
	p := instrument(retry.Policy{MaxAttempts: 3, Jitter: retry.NoJitter, Clock: ft, Sleeper: ft},
		m, slog.New(requestIDHandler{text}))

	failing := func(failures int, err error) func(context.Context) error {
		calls := 0
		return func(context.Context) error {
			if calls++; calls <= failures {
				return err
			}
			return nil
		}
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for id, call := range []struct {
		ctx context.Context
		fn  func(context.Context) error
	}{
		{context.Background(), failing(0, nil)},
		{context.Background(), failing(2, errUnavailable)},
		{context.Background(), failing(9, errUnavailable)},
		{context.Background(), failing(9, retry.Permanent(errors.New("404 not found")))},
		{cancelled, failing(0, nil)},
	} {
		ctx := withRequestID(call.ctx, "r"+strconv.Itoa(id+1))
		retry.Do(ctx, call.fn, p)
	}
	fmt.Println(m.outcomes)
	fmt.Println(m.attempts)
	fmt.Println(m.elapsed)
	// Output:
	// level=DEBUG msg=retrying attempt=1 err="service unavailable" wait=100ms request_id=r2
	// level=DEBUG msg=retrying attempt=2 err="service unavailable" wait=200ms request_id=r2
	// level=DEBUG msg=retrying attempt=1 err="service unavailable" wait=100ms request_id=r3
	// level=DEBUG msg=retrying attempt=2 err="service unavailable" wait=200ms request_id=r3
	// level=WARN msg="call failed" outcome="exhausted/max attempts reached" attempts=3 elapsed=300ms err="retry: gave up after 3 attempts in 300ms (max attempts reached): service unavailable" request_id=r3
	// level=WARN msg="call failed" outcome=non_retryable attempts=1 elapsed=0s err="404 not found" request_id=r4
	// level=WARN msg="call failed" outcome=not_started attempts=0 elapsed=0s err="context canceled" request_id=r5
	// {"exhausted/max attempts reached": 1, "non_retryable": 1, "not_started": 1, "success_after_retry": 1, "success_first_try": 1}
	// {"0": 1, "1": 2, "3": 2}
	// {"le_100ms": 3, "le_1s": 2}
}
