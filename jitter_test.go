package retry

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

var jitters = []struct {
	name string
	f    Jitter
}{
	{"NoJitter", NoJitter},
	{"FullJitter", FullJitter},
	{"EqualJitter", EqualJitter},
	{"DecorrelatedJitter", DecorrelatedJitter},
}

// justBelow1 is the largest float64 below 1, the most math/rand/v2 returns.
const justBelow1 = 1 - 1.0/(1<<53)

func TestJitterFormulas(t *testing.T) {
	const (
		ms   = time.Millisecond
		base = 100 * ms
		max  = 10 * time.Second
	)
	tests := []struct {
		name string
		f    Jitter
		n    int
		prev time.Duration
		u    float64
		want time.Duration
	}{
		{"NoJitter n=0", NoJitter, 0, base, 0.7, 100 * ms},
		{"NoJitter n=3", NoJitter, 3, base, 0.7, 800 * ms},
		{"NoJitter capped", NoJitter, 7, base, 0.7, max},
		{"FullJitter u=0", FullJitter, 3, base, 0, 0},
		{"FullJitter u=0.5", FullJitter, 3, base, 0.5, 400 * ms},
		{"FullJitter u<1", FullJitter, 3, base, justBelow1, 800*ms - 1},
		{"FullJitter capped", FullJitter, 20, base, 0.5, max / 2},
		{"EqualJitter u=0", EqualJitter, 3, base, 0, 400 * ms},
		{"EqualJitter u=0.5", EqualJitter, 3, base, 0.5, 600 * ms},
		{"EqualJitter u<1", EqualJitter, 3, base, justBelow1, 800*ms - 1},
		{"Decorrelated u=0", DecorrelatedJitter, 0, base, 0, base},
		{"Decorrelated u=0.5", DecorrelatedJitter, 0, 1 * time.Second, 0.5, 1550 * ms},
		{"Decorrelated u<1", DecorrelatedJitter, 0, 1 * time.Second, justBelow1, 3*time.Second - 1},
		{"Decorrelated prev below base", DecorrelatedJitter, 0, 0, 0.5, 200 * ms},
		{"Decorrelated capped", DecorrelatedJitter, 0, 5 * time.Second, 0.9, max},
		{"Decorrelated ignores n", DecorrelatedJitter, 40, base, 0, base},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f(tt.n, base, max, tt.prev, tt.u); got != tt.want {
				t.Errorf("%s(%d, %v, %v, %v, %v) = %v; want %v", tt.name, tt.n, base, max, tt.prev, tt.u, got, tt.want)
			}
		})
	}
}

// TestJitterBounds checks every jitter function at the edges where retry
// libraries overflow: huge n, durations near math.MaxInt64, u at its ends.
func TestJitterBounds(t *testing.T) {
	durations := []time.Duration{0, 1, time.Millisecond, time.Second, time.Hour, math.MaxInt64 / 3, math.MaxInt64/2 + 1, math.MaxInt64 - 1, math.MaxInt64}
	ns := []int{0, 1, 2, 30, 62, 63, 64, 100, 1 << 20, math.MaxInt - 1, math.MaxInt}
	us := []float64{0, 1e-300, 0.25, 0.5, justBelow1, 1, 1.5, math.Inf(1), math.Inf(-1), -0.5, math.NaN()}
	for _, j := range jitters {
		for _, max := range durations {
			for _, base := range durations {
				if base > max {
					continue
				}
				for _, n := range ns {
					for _, prev := range durations {
						for _, u := range us {
							checkJitterBounds(t, j.name, j.f, n, base, max, prev, u)
						}
					}
				}
			}
		}
	}
}

// checkJitterBounds returns f's wait for the arguments, after failing t
// if it lies outside [0, max], or below base for DecorrelatedJitter, with
// base and max clamped as the Jitter doc says.
func checkJitterBounds(t *testing.T, name string, f Jitter, n int, base, max, prev time.Duration, u float64) time.Duration {
	t.Helper()
	got := f(n, base, max, prev, u)
	lo, hi := bounds(base, max)
	if name != "DecorrelatedJitter" {
		lo = 0
	}
	if got < lo || got > hi {
		t.Fatalf("%s(%d, %d, %d, %d, %v) = %d; want it in [%d, %d]", name, n, base, max, prev, u, got, lo, hi)
	}
	return got
}

// TestJitterMonotonic checks that the exponential grows with n up to the
// cap and never falls back, which an overflow in base·2ⁿ would cause.
func TestJitterMonotonic(t *testing.T) {
	for _, base := range []time.Duration{1, time.Millisecond, 3 * time.Second, math.MaxInt64 / 5} {
		max := time.Duration(math.MaxInt64)
		prev := time.Duration(0)
		for n := range 200 {
			got := NoJitter(n, base, max, 0, 0)
			if got < prev {
				t.Fatalf("NoJitter(%d, %d, max) = %d; want at least NoJitter(%d) = %d", n, base, got, n-1, prev)
			}
			prev = got
		}
		if prev != max {
			t.Errorf("NoJitter(199, %d, max) = %d; want the cap %d", base, prev, max)
		}
	}
}

// TestJitterEdges documents what each function makes of arguments out of
// range (the nearest value in range) and of the top of the range.
func TestJitterEdges(t *testing.T) {
	const base, max = 100 * time.Millisecond, time.Second
	tests := []struct {
		name                  string
		n                     int
		base, max, prev       time.Duration
		u                     float64
		no, full, equal, deco time.Duration
	}{
		{"negative n counts as 0", -5, base, max, base, 0.5, base, base / 2, 75 * time.Millisecond, 200 * time.Millisecond},
		{"u above 1 counts as 1", 1, base, max, base, 7, 2 * base, 2 * base, 2 * base, 300 * time.Millisecond},
		{"+Inf counts as 1", 1, base, max, base, math.Inf(1), 2 * base, 2 * base, 2 * base, 300 * time.Millisecond},
		{"negative u counts as 0", 1, base, max, base, -3, 2 * base, 0, base, base},
		{"NaN counts as 0", 1, base, max, base, math.NaN(), 2 * base, 0, base, base},
		{"base above max counts as max", 0, 2 * max, max, 0, 0, max, 0, max / 2, max},
		{"negative max counts as 0", 3, base, -max, 0, 0.5, 0, 0, 0, 0},
		{"top of the range", math.MaxInt, 1, math.MaxInt64, math.MaxInt64/3 + 1, 1, math.MaxInt64, math.MaxInt64, math.MaxInt64, math.MaxInt64},
		{"negative base counts as 0", 3, -base, max, -max, 0.5, 0, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, want := range []time.Duration{tt.no, tt.full, tt.equal, tt.deco} {
				j := jitters[i]
				if got := j.f(tt.n, tt.base, tt.max, tt.prev, tt.u); got != want {
					t.Errorf("%s(%d, %v, %v, %v, %v) = %v; want %v", j.name, tt.n, tt.base, tt.max, tt.prev, tt.u, got, want)
				}
			}
		})
	}
}

// TestJitterIsPure checks that the same arguments give the same wait.
func TestJitterIsPure(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, j := range jitters {
		for range 1000 {
			n, u := r.IntN(70), r.Float64()
			base := time.Duration(r.Int64N(int64(time.Second)))
			max := base + time.Duration(r.Int64N(int64(time.Minute)))
			prev := time.Duration(r.Int64N(int64(max) + 1))
			if a, b := j.f(n, base, max, prev, u), j.f(n, base, max, prev, u); a != b {
				t.Fatalf("%s(%d, %v, %v, %v, %v) = %v, then %v; want the same", j.name, n, base, max, prev, u, a, b)
			}
		}
	}
}
