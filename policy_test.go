package retry

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

// Validate names the first field out of range in Policy's order, a MaxDelay below BaseDelay
// last; Do returns the same error, calling neither fn nor OnDone.
func TestValidate(t *testing.T) {
	const prefix = "retry: invalid policy: "
	tests := []struct {
		name string
		p    Policy
		want string // after prefix
	}{
		{"MaxAttempts -1", Policy{MaxAttempts: -1}, "MaxAttempts is -1; want 0 (meaning 5) or more"},
		{"BaseDelay -1ns", Policy{BaseDelay: -1}, "BaseDelay is -1ns; want 0 (meaning 100ms) or more"},
		{"MaxDelay -1ns", Policy{MaxDelay: -1}, "MaxDelay is -1ns; want 0 (meaning 30s) or more"},
		{"Timeout -1ns", Policy{Timeout: -1}, "Timeout is -1ns; want 0 (meaning none) or more"},
		{"AttemptTimeout -1ns", Policy{AttemptTimeout: -1}, "AttemptTimeout is -1ns; want 0 (meaning none) or more"},
		{"MinAttemptTime -1ns", Policy{MinAttemptTime: -1}, "MinAttemptTime is -1ns; want 0 (meaning none) or more"},
		{"MinAttemptTime at Timeout", Policy{Timeout: 1, MinAttemptTime: 1}, "MinAttemptTime 1ns is not below Timeout 1ns: no retry would fit"},
		{"MinAttemptTime above Timeout", Policy{Timeout: time.Second, MinAttemptTime: time.Minute}, "MinAttemptTime 1m0s is not below Timeout 1s: no retry would fit"},
		{"nil ClockFunc", Policy{Clock: ClockFunc(nil)}, "Clock is a nil ClockFunc; want a function, or a nil Clock for the real clock"},
		{"nil SleeperFunc", Policy{Sleeper: SleeperFunc(nil)}, "Sleeper is a nil SleeperFunc; want a function, or a nil Sleeper for the real timer"},
		{"zero Budget", Policy{Budget: &Budget{}}, "Budget was not made by NewBudget; make one with NewBudget(ratio, burst)"},
		{"MaxDelay 1ns below BaseDelay", Policy{BaseDelay: time.Second, MaxDelay: time.Second - 1}, "MaxDelay 999.999999ms is below BaseDelay 1s"},
		{"MaxDelay below BaseDelay above the default", Policy{BaseDelay: time.Minute, MaxDelay: 30 * time.Second}, "MaxDelay 30s is below BaseDelay 1m0s"},
		{"MaxAttempts before BaseDelay and Clock", Policy{MaxAttempts: -1, BaseDelay: -1, Clock: ClockFunc(nil)}, "MaxAttempts is -1; want 0 (meaning 5) or more"},
		{"AttemptTimeout before Sleeper", Policy{AttemptTimeout: -1, Sleeper: SleeperFunc(nil)}, "AttemptTimeout is -1ns; want 0 (meaning none) or more"},
		{"MaxDelay before Timeout and Budget", Policy{MaxDelay: -time.Second, Timeout: -time.Second, Budget: NewBudget(2, 1)}, "MaxDelay is -1s; want 0 (meaning 30s) or more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.p.Validate(); !errors.Is(err, ErrInvalidPolicy) || err.Error() != prefix+tt.want {
				t.Errorf("Validate() = %v; want ErrInvalidPolicy, %q", err, prefix+tt.want)
			}
			fn, onDone := &flaky{}, 0
			p := tt.p
			p.OnDone = func(context.Context, int, time.Duration, error) { onDone++ }
			if err := Do(context.Background(), fn.call, p); !errors.Is(err, ErrInvalidPolicy) || err.Error() != prefix+tt.want || fn.calls+onDone != 0 {
				t.Errorf("Do() = %v after %d calls, %d OnDone calls; want %q after 0, 0", err, fn.calls, onDone, prefix+tt.want)
			}
		})
	}
}

// A zero delay derives from the other one, keeping MaxDelay at least
// 3×BaseDelay and saturating at the longest Duration: the Jitter is given
// them as base and maxDelay.
func TestDefaultDelays(t *testing.T) {
	tests := []struct {
		name      string
		p         Policy
		base, max time.Duration
	}{
		{"zero", Policy{}, DefaultBaseDelay, DefaultMaxDelay},
		{"MaxDelay below the default BaseDelay", Policy{MaxDelay: 50 * time.Millisecond}, 50 * time.Millisecond / 3, 50 * time.Millisecond},
		{"MaxDelay at 3×the default BaseDelay", Policy{MaxDelay: 300 * time.Millisecond}, DefaultBaseDelay, 300 * time.Millisecond},
		{"MaxDelay just below it", Policy{MaxDelay: 300*time.Millisecond - 3}, DefaultBaseDelay - 1, 300*time.Millisecond - 3},
		{"MaxDelay 1ns", Policy{MaxDelay: 1}, 0, 1},
		{"MaxDelay 2ns", Policy{MaxDelay: 2}, 0, 2},
		{"BaseDelay above the default MaxDelay", Policy{BaseDelay: time.Minute}, time.Minute, 3 * time.Minute},
		{"BaseDelay at a third of it", Policy{BaseDelay: 10 * time.Second}, 10 * time.Second, DefaultMaxDelay},
		{"BaseDelay just above", Policy{BaseDelay: 10*time.Second + 1}, 10*time.Second + 1, 30*time.Second + 3},
		{"BaseDelay at MaxInt64/3", Policy{BaseDelay: math.MaxInt64 / 3}, math.MaxInt64 / 3, math.MaxInt64 / 3 * 3},
		{"BaseDelay above MaxInt64/3 saturates", Policy{BaseDelay: math.MaxInt64/3 + 1}, math.MaxInt64/3 + 1, math.MaxInt64},
		{"both set, equal", Policy{BaseDelay: time.Second, MaxDelay: time.Second}, time.Second, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var base, maxDelay time.Duration
			p := newFakeTime().with(tt.p)
			p.MaxAttempts, p.Jitter = 2, func(_ int, b, m, _ time.Duration, _ float64) time.Duration {
				base, maxDelay = b, m
				return 0
			}
			if err := Do(context.Background(), failOnce, p); !errors.Is(err, errBoom) || base != tt.base || maxDelay != tt.max {
				t.Errorf("Do() = %v, Jitter's base, maxDelay = %v, %v; want boom, %v, %v", err, base, maxDelay, tt.base, tt.max)
			}
		})
	}
}

// The zero Policy makes 5 attempts with decorrelated waits from 100ms: at
// u = 0.5, base + (3·prev − base)/2.
func TestDefaultsThroughDo(t *testing.T) {
	ms := time.Millisecond
	want := []time.Duration{200 * ms, 350 * ms, 575 * ms, 912500 * time.Microsecond}
	ft := newFakeTime()
	fn := &flaky{n: 100, err: errBoom}
	err := Do(context.Background(), fn.call, ft.with(Policy{Rand: constRand(0.5)}))
	if got := ft.Waits(); !errors.Is(err, errBoom) || fn.calls != 5 || !slices.Equal(got, want) {
		t.Errorf("Do() = %v after %d calls, waits %v; want boom after 5, %v", err, fn.calls, got, want)
	}
}

// ClockFunc and SleeperFunc call the function they adapt.
func TestAdapters(t *testing.T) {
	at := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	if got := ClockFunc(func() time.Time { return at }).Now(); !got.Equal(at) {
		t.Errorf("ClockFunc.Now() = %v; want %v", got, at)
	}
	var slept time.Duration
	sleep := SleeperFunc(func(_ context.Context, d time.Duration) error { slept = d; return errBoom })
	if err := sleep.Sleep(context.Background(), 3); err != errBoom || slept != 3 {
		t.Errorf("SleeperFunc.Sleep(ctx, 3ns) = %v after sleeping %v; want boom after 3ns", err, slept)
	}
}
