package retry

import (
	"math"
	"math/big"
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

// Each formula where an off-by-one or a wrong clamp shows (base·2ⁿ near maxDelay, shifts near 63,
// durations near math.MaxInt64, u at its ends); wants worked by hand. TestJitterEdges clamps.
func TestJitterExact(t *testing.T) {
	const (
		top = time.Duration(math.MaxInt64)
		ms  = time.Millisecond
	)
	tests := []struct {
		name                 string
		f                    Jitter
		n                    int
		base, maxDelay, prev time.Duration
		u                    float64
		want                 time.Duration
	}{
		{"NoJitter n=0", NoJitter, 0, 100 * ms, 10 * time.Second, 0, 0.7, 100 * ms},
		{"NoJitter n=3", NoJitter, 3, 100 * ms, 10 * time.Second, 0, 0.7, 800 * ms},
		{"NoJitter capped", NoJitter, 7, 100 * ms, 10 * time.Second, 0, 0.7, 10 * time.Second},
		{"NoJitter base·2ⁿ below maxDelay", NoJitter, 1, 1, 3, 0, 0, 2},
		{"NoJitter base·2ⁿ above maxDelay", NoJitter, 2, 1, 3, 0, 0, 3},
		{"NoJitter base·2ⁿ at maxDelay", NoJitter, 1, 1, 2, 0, 0, 2},
		{"NoJitter 5·2³ at maxDelay", NoJitter, 3, 5, 40, 0, 0, 40},
		{"NoJitter 5·2³ just below maxDelay", NoJitter, 3, 5, 41, 0, 0, 40},
		{"NoJitter 5·2³ just above maxDelay", NoJitter, 3, 5, 39, 0, 0, 39},
		{"NoJitter n=1 at maxDelay", NoJitter, 1, 1, 1, 0, 0, 1},
		{"NoJitter 2⁶²", NoJitter, 62, 1, top, 0, 0, 1 << 62},
		{"NoJitter 2⁶² at maxDelay", NoJitter, 62, 1, 1 << 62, 0, 0, 1 << 62},
		{"NoJitter 2⁶¹ below maxDelay", NoJitter, 61, 1, 1 << 62, 0, 0, 1 << 61},
		{"NoJitter 2⁶³ above MaxInt64", NoJitter, 63, 1, top, 0, 0, top},
		{"NoJitter 2⁶⁴ above MaxInt64", NoJitter, 64, 1, top, 0, 0, top},
		{"NoJitter 3·2⁶¹", NoJitter, 61, 3, top, 0, 0, 3 << 61},
		{"NoJitter 3·2⁶² above MaxInt64", NoJitter, 62, 3, top, 0, 0, top},
		{"NoJitter ⌊MaxInt64/2⌋·2", NoJitter, 1, top / 2, top, 0, 0, top - 1},
		{"NoJitter 2⁶²·2 above MaxInt64", NoJitter, 1, 1 << 62, top, 0, 0, top},
		{"NoJitter MaxInt64·2", NoJitter, 1, top, top, 0, 0, top},
		{"NoJitter n=MaxInt", NoJitter, math.MaxInt, 1, top, 0, 0, top},
		{"NoJitter base 0", NoJitter, 5, 0, 10, 0, 0, 0},
		{"NoJitter base 0, n=MaxInt", NoJitter, math.MaxInt, 0, 10, 0, 0, 0},
		{"NoJitter n=MinInt", NoJitter, math.MinInt, 7, 10, 0, 0, 7},
		{"NoJitter base above maxDelay, n=1", NoJitter, 1, 11, 10, 0, 0, 10},
		{"NoJitter maxDelay 0", NoJitter, 1, 1, 0, 0, 0, 0},

		{"FullJitter u=0", FullJitter, 3, 100 * ms, time.Second, 0, 0, 0},
		{"FullJitter u=0.5", FullJitter, 3, 100 * ms, time.Second, 0, 0.5, 400 * ms},
		{"FullJitter u just below 1", FullJitter, 3, 100 * ms, time.Second, 0, justBelow1, 800*ms - 1},
		{"FullJitter u=1", FullJitter, 3, 100 * ms, time.Second, 0, 1, 800 * ms},
		{"FullJitter 1.5ns", FullJitter, 0, 3, 10, 0, 0.5, 1},
		{"FullJitter u=1, d=3", FullJitter, 0, 3, 10, 0, 1, 3},
		{"FullJitter u=1, d=MaxInt64", FullJitter, 63, 1, top, 0, 1, top},
		{"FullJitter u=0, d=MaxInt64", FullJitter, 63, 1, top, 0, 0, 0},
		{"FullJitter u=0.5, d=2⁶²", FullJitter, 62, 1, top, 0, 0.5, 1 << 61},
		{"FullJitter u just below 1, d=2⁶²", FullJitter, 62, 1, top, 0, justBelow1, 1<<62 - 1<<9},
		{"FullJitter u=1, d=2⁶²+1", FullJitter, 0, 1<<62 + 1, top, 0, 1, 1<<62 + 1},
		{"FullJitter capped", FullJitter, 20, 100 * ms, 10 * time.Second, 0, 0.5, 5 * time.Second},

		{"EqualJitter u=0", EqualJitter, 3, 100 * ms, time.Second, 0, 0, 400 * ms},
		{"EqualJitter u=0.5", EqualJitter, 3, 100 * ms, time.Second, 0, 0.5, 600 * ms},
		{"EqualJitter u just below 1", EqualJitter, 3, 100 * ms, time.Second, 0, justBelow1, 800*ms - 1},
		{"EqualJitter u=1", EqualJitter, 3, 100 * ms, time.Second, 0, 1, 800 * ms},
		{"EqualJitter u=0, d=1", EqualJitter, 0, 1, 10, 0, 0, 0},
		{"EqualJitter u=1, d=1", EqualJitter, 0, 1, 10, 0, 1, 1},
		{"EqualJitter u=0, d=3", EqualJitter, 0, 3, 10, 0, 0, 1},
		{"EqualJitter u=0.5, d=3", EqualJitter, 0, 3, 10, 0, 0.5, 2},
		{"EqualJitter u=1, d=3", EqualJitter, 0, 3, 10, 0, 1, 3},
		{"EqualJitter u=0, d=MaxInt64", EqualJitter, 63, 1, top, 0, 0, top / 2},
		{"EqualJitter u=1, d=MaxInt64", EqualJitter, 63, 1, top, 0, 1, top},

		{"DecorrelatedJitter u=0", DecorrelatedJitter, 0, 100 * ms, time.Second, 100 * ms, 0, 100 * ms},
		{"DecorrelatedJitter u=0.5", DecorrelatedJitter, 0, 100 * ms, time.Second, 100 * ms, 0.5, 200 * ms},
		{"DecorrelatedJitter u=1", DecorrelatedJitter, 0, 100 * ms, time.Second, 100 * ms, 1, 300 * ms},
		{"DecorrelatedJitter prev -1s", DecorrelatedJitter, 0, 100 * ms, time.Second, -time.Second, 1, 300 * ms},
		{"DecorrelatedJitter prev 0, below base", DecorrelatedJitter, 0, 100 * ms, 10 * time.Second, 0, 0.5, 200 * ms},
		{"DecorrelatedJitter u=0.5, prev 1s", DecorrelatedJitter, 0, 100 * ms, 10 * time.Second, time.Second, 0.5, 1550 * ms},
		{"DecorrelatedJitter u just below 1, prev 1s", DecorrelatedJitter, 0, 100 * ms, 10 * time.Second, time.Second, justBelow1, 3*time.Second - 1},
		{"DecorrelatedJitter capped", DecorrelatedJitter, 0, 100 * ms, 10 * time.Second, 5 * time.Second, 0.9, 10 * time.Second},
		{"DecorrelatedJitter ignores n", DecorrelatedJitter, 40, 100 * ms, 10 * time.Second, 100 * ms, 0, 100 * ms},
		{"DecorrelatedJitter at maxDelay", DecorrelatedJitter, 0, 1, 9, 3, 1, 9},
		{"DecorrelatedJitter just above maxDelay", DecorrelatedJitter, 0, 1, 8, 3, 1, 8},
		{"DecorrelatedJitter prev above maxDelay, u=0", DecorrelatedJitter, 0, 100 * ms, time.Second, 20 * time.Second, 0, 100 * ms},
		{"DecorrelatedJitter prev above maxDelay, u=0.5", DecorrelatedJitter, 0, 100 * ms, time.Second, 20 * time.Second, 0.5, time.Second},
		{"DecorrelatedJitter base at maxDelay", DecorrelatedJitter, 0, 10, 10, 50, 0.5, 10},
		{"DecorrelatedJitter prev ⌊MaxInt64/3⌋+1, u=1", DecorrelatedJitter, 0, 1, top, top/3 + 1, 1, top},
		{"DecorrelatedJitter prev MaxInt64, u just below 1", DecorrelatedJitter, 0, 1, top, top, justBelow1, top},
		{"DecorrelatedJitter base MaxInt64", DecorrelatedJitter, 0, top, top, 0, 0.5, top},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f(tt.n, tt.base, tt.maxDelay, tt.prev, tt.u); got != tt.want {
				t.Errorf("%s: f(%d, %d, %d, %d, %v) = %d; want %d", tt.name, tt.n, tt.base, tt.maxDelay, tt.prev, tt.u, got, tt.want)
			}
		})
	}
}

// DecorrelatedJitter within a few ns of math.MaxInt64, where float64 counts
// in steps of 1024ns: the wait is the exact value within two steps.
func TestJitterNearTheTop(t *testing.T) {
	const top = time.Duration(math.MaxInt64)
	const slack = 2048
	tests := []struct {
		name string
		prev time.Duration
		u    float64
		want time.Duration // 1 + u·(3·prev − 1), rounded down
	}{
		// 3·⌊MaxInt64/3⌋ = MaxInt64 − 1 = 2⁶³ − 2
		{"prev ⌊MaxInt64/3⌋, u=1", top / 3, 1, top - 1},
		// 1 + (1 − 2⁻⁵³)·(2⁶³ − 3) = 2⁶³ − 1026 + 3·2⁻⁵³
		{"prev ⌊MaxInt64/3⌋, u just below 1", top / 3, justBelow1, top - 1025},
		// 1 + (1 − 2⁻⁵³)·2⁶³ = 2⁶³ − 1023
		{"prev ⌊MaxInt64/3⌋+1, u just below 1", top/3 + 1, justBelow1, top - 1022},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DecorrelatedJitter(0, 1, top, tt.prev, tt.u)
			if diff := got - tt.want; got < 0 || diff < -slack || diff > slack { // got ≥ 0: no overflow in diff
				t.Errorf("DecorrelatedJitter(0, 1, MaxInt64, %d, %v) = %d; want %d ± %d", tt.prev, tt.u, got, tt.want, slack)
			}
		})
	}
}

// Every jitter stays in [0, maxDelay] (DecorrelatedJitter in [base, maxDelay]) where
// retry libraries overflow: huge n, durations near math.MaxInt64, u at its ends.
func TestJitterBounds(t *testing.T) {
	durations := []time.Duration{0, 1, time.Millisecond, time.Second, time.Hour, math.MaxInt64 / 3, math.MaxInt64/2 + 1, math.MaxInt64 - 1, math.MaxInt64}
	ns := []int{0, 1, 2, 30, 62, 63, 64, 100, 1 << 20, math.MaxInt - 1, math.MaxInt}
	us := []float64{0, 1e-300, 0.25, 0.5, justBelow1, 1, 1.5, math.Inf(1), math.Inf(-1), -0.5, math.NaN()}
	for _, j := range jitters {
		for _, maxDelay := range durations {
			for _, base := range durations {
				if base > maxDelay {
					continue
				}
				for _, n := range ns {
					for _, prev := range durations {
						for _, u := range us {
							checkJitterBounds(t, j.name, j.f, n, base, maxDelay, prev, u)
						}
					}
				}
			}
		}
	}
}

// checkJitterBounds returns f's wait, failing t outside [0, maxDelay] ([base, maxDelay] for DecorrelatedJitter).
func checkJitterBounds(t *testing.T, name string, f Jitter, n int, base, maxDelay, prev time.Duration, u float64) time.Duration {
	t.Helper()
	got := f(n, base, maxDelay, prev, u)
	_, lo, hi, _, _ := specArgs(n, base, maxDelay, prev, u)
	if name != "DecorrelatedJitter" {
		lo = 0
	}
	if got < lo || got > hi {
		t.Fatalf("%s(%d, %d, %d, %d, %v) = %d; want it in [%d, %d]", name, n, base, maxDelay, prev, u, got, lo, hi)
	}
	return got
}

// Every jitter is its documented formula (checkJitterSpec), and pure, at seeded random
// arguments, half at the edges and half from the whole range.
func TestJitterSpec(t *testing.T) {
	const top = math.MaxInt64
	edges := []int64{-1, 0, 1, 2, 3, 7, 1<<53 + 1, top/3 - 1, top / 3, top/3 + 1, top / 2, top/2 + 1, 1<<62 + 1, top - 1, top}
	ns := []int{-1, 0, 1, 2, 3, 52, 53, 61, 62, 63, 64, math.MaxInt}
	us := []float64{0, 0.5, justBelow1, 1, 1.5, -0.5, math.NaN()}
	r := rand.New(rand.NewPCG(10, 10))
	duration := func() time.Duration {
		if r.IntN(2) == 0 {
			return time.Duration(edges[r.IntN(len(edges))])
		}
		return time.Duration(r.Int64() >> r.IntN(63)) // every magnitude
	}
	for range 3000 {
		n, u := ns[r.IntN(len(ns))], us[r.IntN(len(us))]
		if r.IntN(2) == 0 {
			n, u = r.IntN(70), r.Float64()
		}
		base, maxDelay, prev := duration(), duration(), duration()
		for _, j := range jitters {
			got := checkJitterBounds(t, j.name, j.f, n, base, maxDelay, prev, u)
			checkJitterSpec(t, j.name, n, base, maxDelay, prev, u, got)
			if again := j.f(n, base, maxDelay, prev, u); again != got {
				t.Fatalf("%s(%d, %v, %v, %v, %v) = %v, then %v; want the same", j.name, n, base, maxDelay, prev, u, got, again)
			}
		}
	}
}

// The exponential grows with n up to the cap and never falls back, as an
// overflow in base·2ⁿ would make it.
func TestJitterMonotonic(t *testing.T) {
	for _, base := range []time.Duration{1, time.Millisecond, 3 * time.Second, math.MaxInt64 / 5} {
		maxDelay, prev := time.Duration(math.MaxInt64), time.Duration(0)
		for n := range 200 {
			got := NoJitter(n, base, maxDelay, 0, 0)
			if got < prev {
				t.Fatalf("NoJitter(%d, %d, maxDelay) = %d; want at least NoJitter(%d) = %d", n, base, got, n-1, prev)
			}
			prev = got
		}
		if prev != maxDelay {
			t.Errorf("NoJitter(199, %d, maxDelay) = %d; want the cap %d", base, prev, maxDelay)
		}
	}
}

// Each jitter reads an argument out of range as the nearest value in range.
func TestJitterEdges(t *testing.T) {
	const base, maxDelay = 100 * time.Millisecond, time.Second
	tests := []struct {
		name                  string
		n                     int
		base, maxDelay, prev  time.Duration
		u                     float64
		no, full, equal, deco time.Duration
	}{
		{"negative n counts as 0", -5, base, maxDelay, base, 0.5, base, base / 2, 75 * time.Millisecond, 200 * time.Millisecond},
		{"u above 1 counts as 1", 1, base, maxDelay, base, 7, 2 * base, 2 * base, 2 * base, 300 * time.Millisecond},
		{"+Inf counts as 1", 1, base, maxDelay, base, math.Inf(1), 2 * base, 2 * base, 2 * base, 300 * time.Millisecond},
		{"negative u counts as 0", 1, base, maxDelay, base, -3, 2 * base, 0, base, base},
		{"NaN counts as 0", 1, base, maxDelay, base, math.NaN(), 2 * base, 0, base, base},
		{"base above maxDelay counts as maxDelay", 0, 2 * maxDelay, maxDelay, 0, 0, maxDelay, 0, maxDelay / 2, maxDelay},
		{"negative maxDelay counts as 0", 3, base, -maxDelay, 0, 0.5, 0, 0, 0, 0},
		{"top of the range", math.MaxInt, 1, math.MaxInt64, math.MaxInt64/3 + 1, 1, math.MaxInt64, math.MaxInt64, math.MaxInt64, math.MaxInt64},
		{"negative base counts as 0", 3, -base, maxDelay, -maxDelay, 0.5, 0, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, want := range []time.Duration{tt.no, tt.full, tt.equal, tt.deco} {
				j := jitters[i]
				if got := j.f(tt.n, tt.base, tt.maxDelay, tt.prev, tt.u); got != want {
					t.Errorf("%s(%d, %v, %v, %v, %v) = %v; want %v", j.name, tt.n, tt.base, tt.maxDelay, tt.prev, tt.u, got, want)
				}
			}
		})
	}
}

// specArgs clamps the arguments as the Jitter doc says; with specJitter, an oracle in exact
// math/big arithmetic that shares no code with the package.
func specArgs(n int, base, maxDelay, prev time.Duration, u float64) (int, time.Duration, time.Duration, time.Duration, float64) {
	if n < 0 {
		n = 0
	}
	if maxDelay < 0 {
		maxDelay = 0
	}
	if base < 0 {
		base = 0
	}
	if base > maxDelay {
		base = maxDelay
	}
	if prev < 0 {
		prev = 0
	}
	switch {
	case math.IsNaN(u) || u < 0:
		u = 0
	case u > 1:
		u = 1
	}
	return n, base, maxDelay, prev, u
}

// specJitter returns the exact value of the named Jitter's formula at the
// clamped arguments, in nanoseconds:
//
//	NoJitter            d = min(base·2ⁿ, maxDelay)
//	FullJitter          u·d
//	EqualJitter         d/2 + u·d/2
//	DecorrelatedJitter  min(maxDelay, base + u·(3·p − base)), p = max(prev, base)
func specJitter(name string, n int, base, maxDelay, prev time.Duration, u float64) *big.Rat {
	n, base, maxDelay, prev, u = specArgs(n, base, maxDelay, prev, u)
	b, m := big.NewInt(int64(base)), big.NewInt(int64(maxDelay))
	U := new(big.Rat).SetFloat64(u) // exact: u is finite here
	// For n ≥ 64 and base ≥ 1, base·2ⁿ ≥ 2⁶⁴ > maxDelay, so shifting by at most
	// 64 gives the same minimum (and n = math.MaxInt allocates nothing).
	shift := uint(64)
	if n < 64 {
		shift = uint(n)
	}
	d := new(big.Int).Lsh(b, shift)
	if d.Cmp(m) > 0 {
		d.Set(m)
	}
	D := new(big.Rat).SetInt(d)
	switch name {
	case "NoJitter":
		return D
	case "FullJitter":
		return D.Mul(U, D)
	case "EqualJitter":
		half := D.Quo(D, big.NewRat(2, 1))
		return new(big.Rat).Add(half, new(big.Rat).Mul(U, half))
	case "DecorrelatedJitter":
		p := big.NewInt(int64(prev))
		if prev < base {
			p.Set(b)
		}
		x := new(big.Int).Mul(big.NewInt(3), p)
		x.Sub(x, b)
		e := new(big.Rat).Mul(U, new(big.Rat).SetInt(x))
		e.Add(e, new(big.Rat).SetInt(b))
		if M := new(big.Rat).SetInt(m); e.Cmp(M) > 0 {
			return M
		}
		return e
	}
	panic("specJitter: no formula for " + name)
}

// checkJitterSpec fails t unless got is specJitter's exact value e: equal
// for NoJitter; for the others, which scale in float64 and truncate, in
// [e − 1ns − ε, e + ε] (1.5ns for EqualJitter's halves), ε = e·2⁻⁴⁸: their
// few float64 operations err below 2⁻⁵⁰ of e, far less than an off-by-one n
// or a wrong clamp would.
func checkJitterSpec(t *testing.T, name string, n int, base, maxDelay, prev time.Duration, u float64, got time.Duration) {
	t.Helper()
	e := specJitter(name, n, base, maxDelay, prev, u)
	g := new(big.Rat).SetInt64(int64(got))
	if name == "NoJitter" {
		if g.Cmp(e) != 0 {
			t.Fatalf("%s(%d, %d, %d, %d, %v) = %d; want %s", name, n, base, maxDelay, prev, u, got, e.RatString())
		}
		return
	}
	eps := new(big.Rat).Mul(e, big.NewRat(1, 1<<48))
	below := big.NewRat(1, 1)
	if name == "EqualJitter" {
		below = big.NewRat(3, 2)
	}
	lo := new(big.Rat).Sub(e, below)
	lo.Sub(lo, eps)
	hi := new(big.Rat).Add(e, eps)
	if g.Cmp(lo) < 0 || g.Cmp(hi) > 0 {
		t.Fatalf("%s(%d, %d, %d, %d, %v) = %d; want %s within [-%s-ε, +ε], ε = %s",
			name, n, base, maxDelay, prev, u, got, e.FloatString(3), below.FloatString(1), eps.FloatString(3))
	}
}

// durationSink keeps the compiler from optimising the jitters away.
var durationSink time.Duration

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

// FuzzJitter checks every jitter function over arbitrary arguments: no
// panic; with base and maxDelay clamped as the Jitter doc says, the wait is in
// [0, maxDelay] (and at least base for DecorrelatedJitter); out of range, the
// wait is exactly that at the clamped arguments; and it is the value of
// the documented formula, which checkJitterSpec computes with math/big
// and not with the package's helpers.
func FuzzJitter(f *testing.F) {
	f.Add(0, int64(time.Millisecond), int64(time.Second), int64(0), 0.5)
	f.Add(62, int64(1), int64(math.MaxInt64), int64(math.MaxInt64), 0.999)
	f.Add(math.MaxInt, int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64/3+1), 1.0)
	f.Add(-1, int64(-5), int64(-1), int64(math.MinInt64), math.NaN())
	f.Add(3, int64(time.Hour), int64(time.Second), int64(time.Minute), math.Inf(1))
	f.Add(1, int64(100), int64(1000), int64(-100), math.Inf(-1))
	f.Add(1, int64(1), int64(3), int64(0), 0.0)
	f.Add(1, int64(math.MaxInt64/2), int64(math.MaxInt64), int64(math.MaxInt64/3), 1.0)
	f.Fuzz(func(t *testing.T, n int, b, m, p int64, u float64) {
		base, maxDelay, prev := time.Duration(b), time.Duration(m), time.Duration(p)
		cn, cbase, cmaxDelay, cprev, cu := specArgs(n, base, maxDelay, prev, u)
		for _, j := range jitters {
			got := checkJitterBounds(t, j.name, j.f, n, base, maxDelay, prev, u)
			if want := j.f(cn, cbase, cmaxDelay, cprev, cu); got != want {
				t.Fatalf("%s(%d, %d, %d, %d, %v) = %d; want %d, its value at the clamped arguments", j.name, n, base, maxDelay, prev, u, got, want)
			}
			checkJitterSpec(t, j.name, n, base, maxDelay, prev, u, got)
		}
	})
}
