//go:build !race

package retry_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/quietwire/retry"
)

// The README's observability recipe, as written, makes
// no allocation for a call that succeeds. (The race detector allocates on
// its own, hence the build tag.)
func TestObserveRecipeAllocatesNothingOnSuccess(t *testing.T) {
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
