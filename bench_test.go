package retry

import (
	"context"
	"testing"
	"time"
)

// Sinks keep the compiler from optimising benchmarked results away.
var (
	timeSink     time.Time
	durationSink time.Duration
)

func zeroJitter(int, time.Duration, time.Duration, time.Duration, float64) time.Duration { return 0 }

// Hooks that capture nothing, as a shared Policy's hooks that update
// package-level metrics do.
func onRetryNop(context.Context, int, error, time.Duration) {}
func onDoneNop(context.Context, int, time.Duration, error)  {}

// BenchmarkDo measures the cost of Do around a fn that does nothing.
// baseline is what a caller without retries pays: the call and one clock
// read; compare the other sub-benchmarks with it within one run.
func BenchmarkDo(b *testing.B) {
	ctx := context.Background()
	calls := 0
	succeed := func(context.Context) error { calls++; return nil }
	failThrice := func(context.Context) error { // fails 3 times, then succeeds
		calls++
		if calls%4 != 0 {
			return errBoom
		}
		return nil
	}

	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			timeSink = time.Now()
			if err := succeed(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("success", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if err := Do(ctx, succeed, Policy{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("success-timeout", func(b *testing.B) {
		b.ReportAllocs()
		p := Policy{Timeout: time.Minute}
		for range b.N {
			if err := Do(ctx, succeed, p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("success-attempt-timeout", func(b *testing.B) {
		b.ReportAllocs()
		p := Policy{AttemptTimeout: time.Minute}
		for range b.N {
			if err := Do(ctx, succeed, p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("3-retries-no-wait", func(b *testing.B) {
		b.ReportAllocs()
		p := Policy{Jitter: zeroJitter}
		calls = 0
		for range b.N {
			if err := Do(ctx, failThrice, p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("success-hooks", func(b *testing.B) {
		b.ReportAllocs()
		p := Policy{OnRetry: onRetryNop, OnDone: onDoneNop}
		for range b.N {
			if err := Do(ctx, succeed, p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("3-retries-no-wait-hooks", func(b *testing.B) {
		b.ReportAllocs()
		p := Policy{Jitter: zeroJitter, OnRetry: onRetryNop, OnDone: onDoneNop}
		calls = 0
		for range b.N {
			if err := Do(ctx, failThrice, p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("3-retries-real-timer", func(b *testing.B) {
		b.ReportAllocs()
		p := Policy{BaseDelay: time.Microsecond, MaxDelay: time.Microsecond, Jitter: NoJitter}
		calls = 0
		for range b.N {
			if err := Do(ctx, failThrice, p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("DoValue-success", func(b *testing.B) {
		b.ReportAllocs()
		value := func(context.Context) (int, error) { return 42, nil }
		for range b.N {
			v, err := DoValue(ctx, value, Policy{})
			if err != nil || v != 42 {
				b.Fatal(v, err)
			}
		}
	})
}

func BenchmarkJitter(b *testing.B) {
	for _, j := range jitters {
		b.Run(j.name, func(b *testing.B) {
			b.ReportAllocs()
			var d time.Duration
			for i := range b.N {
				d += j.f(i&63, time.Millisecond, time.Minute, d&(1<<30-1), 0.5)
			}
			durationSink = d
		})
	}
}
