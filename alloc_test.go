//go:build !race

package retry

import (
	"context"
	"testing"
	"time"
)

// Allocation counts are exact, not timings, so they are tests; the race
// detector allocates on its own, hence the build tag.

func TestNoAllocationOnTheHotPath(t *testing.T) {
	ctx := context.Background()
	calls := 0
	succeed := func(context.Context) error { return nil }
	failThrice := func(context.Context) error {
		calls++
		if calls%4 != 0 {
			return errBoom
		}
		return nil
	}
	value := func(context.Context) (int, error) { return 1, nil }
	budget := NewBudget(0.1, 10)
	ctxDeadline, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	tests := []struct {
		name string
		run  func()
	}{
		{"Do success", func() { Do(ctx, succeed, Policy{}) }},
		{"DoValue success", func() { DoValue(ctx, value, Policy{}) }},
		{"Do 3 retries, no wait", func() { Do(ctx, failThrice, Policy{Jitter: zeroJitter}) }},
		{"Do success with a Budget", func() { Do(ctx, succeed, Policy{Budget: budget}) }},
		{"Do 3 retries, no wait, ctx deadline", func() { Do(ctxDeadline, failThrice, Policy{Jitter: zeroJitter}) }},
		{"Do success with hooks", func() { Do(ctx, succeed, Policy{OnRetry: onRetryNop, OnDone: onDoneNop}) }},
		{"Do 3 retries, no wait, with hooks", func() {
			Do(ctx, failThrice, Policy{Jitter: zeroJitter, OnRetry: onRetryNop, OnDone: onDoneNop})
		}},
	}
	for _, tt := range tests {
		if got := testing.AllocsPerRun(100, tt.run); got != 0 {
			t.Errorf("%s: allocations = %v; want 0", tt.name, got)
		}
	}
}
