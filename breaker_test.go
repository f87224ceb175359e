package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quietwire/retry"
)

// The breaker recipe decides on the Reason: Canceled only when the caller
// cancelled ctx; running out of time, whether Do gave up ahead of ctx's
// deadline or an attempt hung until it, is the dependency's failure.
func TestBreakerDecidesOnReason(t *testing.T) {
	unavailable := func(context.Context) error { return errUnavailable }
	tests := []struct {
		name   string
		ctx    func(t *testing.T) context.Context
		p      retry.Policy
		fn     func(ctx context.Context) error
		leave  bool // the caller cancels ctx while the first attempt runs
		failed bool
	}{
		{"success", background, retry.Policy{}, func(context.Context) error { return nil }, false, false},
		{"Permanent", background, retry.Policy{}, func(context.Context) error { return retry.Permanent(errUnavailable) }, false, false},
		{"out of attempts", background, retry.Policy{MaxAttempts: 2, BaseDelay: time.Nanosecond}, unavailable, false, true},
		{"next wait past ctx's deadline, ctx alive", withTimeout(time.Hour), retry.Policy{BaseDelay: 2 * time.Hour}, unavailable, false, true},
		{"hung until ctx's deadline", withTimeout(20 * time.Millisecond), retry.Policy{},
			func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, false, true},
		{"the caller left", background, retry.Policy{}, unavailable, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(tt.ctx(t))
			defer cancel()
			fn := tt.fn
			if tt.leave {
				fn = func(ctx context.Context) error { cancel(); return tt.fn(ctx) }
			}
			err := retry.Do(ctx, fn, tt.p)
			if got := dependencyFailed(err); got != tt.failed {
				t.Errorf("dependencyFailed(%v) = %v; want %v", err, got, tt.failed)
			}
			if tt.failed && ctx.Err() == nil && !errors.Is(err, errUnavailable) {
				t.Errorf("Do() = %v; want it to reach the last error", err)
			}
		})
	}
}

func background(*testing.T) context.Context { return context.Background() }

// withTimeout returns a ctx with a real deadline d from now.
func withTimeout(d time.Duration) func(t *testing.T) context.Context {
	return func(t *testing.T) context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		t.Cleanup(cancel)
		return ctx
	}
}
