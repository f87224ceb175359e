package retry

import (
	"fmt"
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

// Each jitter where an off-by-one or a wrong clamp shows: base·2ⁿ near maxDelay, shifts near
// 63, durations near math.MaxInt64, u at its ends, arguments out of range; wants worked by hand.
func TestJitter(t *testing.T) {
	const top, ms, s = time.Duration(math.MaxInt64), time.Millisecond, time.Second
	tests := []struct {
		name                  string
		n                     int
		base, maxDelay, prev  time.Duration
		u                     float64
		no, full, equal, deco time.Duration
	}{
		{"n=3, u=0, prev 0", 3, 100 * ms, s, 0, 0, 800 * ms, 0, 400 * ms, 100 * ms},
		{"n=3, u=0.5, prev 1s", 3, 100 * ms, 10 * s, s, 0.5, 800 * ms, 400 * ms, 600 * ms, 1550 * ms},
		{"n=3, u just below 1, prev 1s", 3, 100 * ms, 10 * s, s, justBelow1, 800 * ms, 800*ms - 1, 800*ms - 1, 3*s - 1},
		{"n=3, u=1", 3, 100 * ms, s, 100 * ms, 1, 800 * ms, 800 * ms, 800 * ms, 300 * ms},
		{"capped", 7, 100 * ms, 10 * s, 5 * s, 0.9, 10 * s, 9 * s, 9500 * ms, 10 * s},
		{"DecorrelatedJitter ignores n", 40, 100 * ms, 10 * s, 100 * ms, 0, 10 * s, 0, 5 * s, 100 * ms},
		{"base·2ⁿ below maxDelay", 1, 1, 3, 0, 1, 2, 2, 2, 3},
		{"base·2ⁿ above maxDelay", 2, 1, 3, 0, 1, 3, 3, 3, 3},
		{"base·2ⁿ at maxDelay", 1, 1, 2, 0, 0.5, 2, 1, 1, 2},
		{"5·2³ at maxDelay", 3, 5, 40, 0, 0.5, 40, 20, 30, 10},
		{"5·2³ just below maxDelay", 3, 5, 41, 0, 0.5, 40, 20, 30, 10},
		{"5·2³ just above maxDelay", 3, 5, 39, 0, 0.5, 39, 19, 29, 10},
		{"n=1 at maxDelay", 1, 1, 1, 0, 1, 1, 1, 1, 1},
		{"d=3, u=0", 0, 3, 10, 3, 0, 3, 0, 1, 3},
		{"d=3, u=0.5", 0, 3, 10, 3, 0.5, 3, 1, 2, 6},
		{"d=3, u=1", 0, 3, 10, 3, 1, 3, 3, 3, 9},
		{"2⁶¹ below maxDelay", 61, 1, 1 << 62, 0, 0, 1 << 61, 0, 1 << 60, 1},
		{"2⁶² at maxDelay", 62, 1, 1 << 62, 0, 0, 1 << 62, 0, 1 << 61, 1},
		{"2⁶²", 62, 1, top, 0, 0.5, 1 << 62, 1 << 61, 3 << 60, 2},
		{"2⁶², u just below 1", 62, 1, top, top, justBelow1, 1 << 62, 1<<62 - 1<<9, 1<<62 - 1<<8, top},
		{"2⁶³ above MaxInt64", 63, 1, top, 0, 0, top, 0, top / 2, 1},
		{"2⁶⁴ above MaxInt64", 64, 1, top, 0, 1, top, top, top, 3},
		{"3·2⁶¹", 61, 3, top, 0, 0, 3 << 61, 0, 3 << 60, 3},
		{"3·2⁶² above MaxInt64", 62, 3, top, 0, 0, top, 0, top / 2, 3},
		{"⌊MaxInt64/2⌋·2", 1, top / 2, top, 0, 1, top - 1, top - 1, top - 1, top},
		{"2⁶²·2 above MaxInt64", 1, 1 << 62, top, 0, 0, top, 0, top / 2, 1 << 62},
		{"MaxInt64·2", 1, top, top, 0, 1, top, top, top, top},
		{"d=2⁶²+1, u=1", 0, 1<<62 + 1, top, 0, 1, 1<<62 + 1, 1<<62 + 1, 1<<62 + 1, top},
		{"n=MaxInt", math.MaxInt, 1, top, 0, 0, top, 0, top / 2, 1},
		{"base 0", 5, 0, 10, 0, 0.5, 0, 0, 0, 0},
		{"base 0, n=MaxInt", math.MaxInt, 0, 10, 0, 1, 0, 0, 0, 0},
		{"base + 3·prev at maxDelay", 0, 1, 9, 3, 1, 1, 1, 1, 9},
		{"base + 3·prev above maxDelay", 0, 1, 8, 3, 1, 1, 1, 1, 8},
		{"prev above maxDelay, u=0", 0, 100 * ms, s, 20 * s, 0, 100 * ms, 0, 50 * ms, 100 * ms},
		{"prev above maxDelay, u=0.5", 0, 100 * ms, s, 20 * s, 0.5, 100 * ms, 50 * ms, 75 * ms, s},
		{"base at maxDelay", 0, 10, 10, 50, 0.5, 10, 5, 7, 10},
		{"prev ⌊MaxInt64/3⌋+1, u=1", 0, 1, top, top/3 + 1, 1, 1, 1, 1, top},
		{"prev MaxInt64, u just below 1", 0, 1, top, top, justBelow1, 1, 0, 0, top},
		{"negative n counts as 0", -5, 100 * ms, s, 100 * ms, 0.5, 100 * ms, 50 * ms, 75 * ms, 200 * ms},
		{"n=MinInt counts as 0", math.MinInt, 7, 10, 0, 0, 7, 0, 3, 7},
		{"+Inf counts as 1", 1, 100 * ms, s, 100 * ms, math.Inf(1), 200 * ms, 200 * ms, 200 * ms, 300 * ms},
		{"negative u counts as 0", 1, 100 * ms, s, 100 * ms, -3, 200 * ms, 0, 100 * ms, 100 * ms},
		{"NaN counts as 0", 1, 100 * ms, s, 100 * ms, math.NaN(), 200 * ms, 0, 100 * ms, 100 * ms},
		{"negative prev counts as 0", 0, 100 * ms, s, -s, 1, 100 * ms, 100 * ms, 100 * ms, 300 * ms},
		{"base above maxDelay counts as maxDelay", 0, 2 * s, s, 0, 0, s, 0, 500 * ms, s},
		{"negative maxDelay counts as 0", 3, 100 * ms, -s, 0, 0.5, 0, 0, 0, 0},
		{"negative base counts as 0", 3, -100 * ms, s, -s, 0.5, 0, 0, 0, 0},
		{"maxDelay 0", 1, 1, 0, 0, 0, 0, 0, 0, 0},
		{"top of the range", math.MaxInt, 1, top, top/3 + 1, 1, top, top, top, top},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, want := range []time.Duration{tt.no, tt.full, tt.equal, tt.deco} {
				j := jitters[i]
				if got := j.f(tt.n, tt.base, tt.maxDelay, tt.prev, tt.u); got != want {
					t.Errorf("%s(%d, %d, %d, %d, %v) = %d; want %d", j.name, tt.n, tt.base, tt.maxDelay, tt.prev, tt.u, got, want)
				}
			}
		})
	}
}

// Every jitter meets checkJitter at seeded random arguments, half of them at the edges where
// retry libraries overflow (huge n, durations near math.MaxInt64, u at its ends or out of range).
func TestJitterSpec(t *testing.T) {
	const top = math.MaxInt64
	edges := []time.Duration{-1, 0, 1, 2, 3, 7, 1<<53 + 1, top/3 - 1, top / 3, top/3 + 1, top / 2, top/2 + 1, 1<<62 + 1, top - 1, top}
	ns := []int{-1, 0, 1, 2, 3, 52, 53, 61, 62, 63, 64, 1 << 20, math.MaxInt}
	us := []float64{0, 1e-300, 0.5, justBelow1, 1, 1.5, math.Inf(1), math.Inf(-1), -0.5, math.NaN()}
	r := rand.New(rand.NewPCG(10, 10))
	duration := func() time.Duration {
		if r.IntN(2) == 0 {
			return edges[r.IntN(len(edges))]
		}
		return time.Duration(r.Int64() >> r.IntN(63)) // every magnitude
	}
	for range 5000 {
		n, u := ns[r.IntN(len(ns))], us[r.IntN(len(us))]
		if r.IntN(2) == 0 {
			n, u = r.IntN(70), r.Float64()
		}
		base, maxDelay, prev := duration(), duration(), duration()
		for _, j := range jitters {
			checkJitter(t, j.name, j.f, n, base, maxDelay, prev, u)
		}
	}
}

// specArgs clamps the arguments as the Jitter doc says.
func specArgs(n int, base, maxDelay, prev time.Duration, u float64) (int, time.Duration, time.Duration, time.Duration, float64) {
	maxDelay = max(maxDelay, 0)
	if math.IsNaN(u) || u < 0 {
		u = 0
	}
	return max(n, 0), min(max(base, 0), maxDelay), maxDelay, max(prev, 0), min(u, 1)
}

// specJitter returns, in exact math/big arithmetic that shares no code with the package, the
// named Jitter's documented formula at the clamped arguments, in nanoseconds:
//
//	NoJitter            d = min(base·2ⁿ, maxDelay)
//	FullJitter          u·d
//	EqualJitter         d/2 + u·d/2
//	DecorrelatedJitter  min(maxDelay, base + u·(3·p − base)), p = max(prev, base)
func specJitter(name string, n int, base, maxDelay, prev time.Duration, u float64) *big.Rat {
	n, base, maxDelay, prev, u = specArgs(n, base, maxDelay, prev, u)
	rat := func(d time.Duration) *big.Rat { return new(big.Rat).SetInt64(int64(d)) }
	b, m, U := rat(base), rat(maxDelay), new(big.Rat).SetFloat64(u)
	// For n ≥ 64 and base ≥ 1, base·2ⁿ ≥ 2⁶⁴ > maxDelay: shifting by at most 64 gives the same d.
	d := new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(int64(base)), uint(min(n, 64))))
	if d.Cmp(m) > 0 {
		d = m
	}
	switch name {
	case "NoJitter":
		return d
	case "FullJitter":
		return d.Mul(U, d)
	case "EqualJitter":
		half := d.Quo(d, big.NewRat(2, 1))
		return new(big.Rat).Add(half, new(big.Rat).Mul(U, half))
	case "DecorrelatedJitter":
		e := rat(max(prev, base))
		e.Mul(U, e.Sub(e.Mul(e, big.NewRat(3, 1)), b)).Add(e, b)
		if e.Cmp(m) > 0 {
			return m
		}
		return e
	}
	panic("specJitter: no formula for " + name)
}

// checkJitter fails t unless f's wait is in [0, maxDelay] ([base, maxDelay] for
// DecorrelatedJitter) at the clamped arguments, the same there and when called again, and
// specJitter's exact value e: equal for NoJitter; for the others, which scale in float64 and
// truncate, in [e − 1ns − ε, e + ε] (1.5ns for EqualJitter's halves), ε = e·2⁻⁴⁸: their few
// float64 operations err below 2⁻⁵⁰ of e, far less than an off-by-one n or a wrong clamp would.
func checkJitter(t *testing.T, name string, f Jitter, n int, base, maxDelay, prev time.Duration, u float64) {
	t.Helper()
	got := f(n, base, maxDelay, prev, u)
	call := func() string {
		return fmt.Sprintf("%s(%d, %d, %d, %d, %v) = %d", name, n, base, maxDelay, prev, u, got)
	}
	cn, cbase, cmaxDelay, cprev, cu := specArgs(n, base, maxDelay, prev, u)
	lo := time.Duration(0)
	if name == "DecorrelatedJitter" {
		lo = cbase
	}
	if got < lo || got > cmaxDelay {
		t.Fatalf("%s; want it in [%d, %d]", call(), lo, cmaxDelay)
	}
	if again, clamped := f(n, base, maxDelay, prev, u), f(cn, cbase, cmaxDelay, cprev, cu); again != got || clamped != got {
		t.Fatalf("%s, then %d, and %d at the clamped arguments; want the same", call(), again, clamped)
	}
	e := specJitter(name, n, base, maxDelay, prev, u)
	below, eps := new(big.Rat), new(big.Rat)
	switch name {
	case "EqualJitter":
		below.SetFrac64(3, 2)
	case "FullJitter", "DecorrelatedJitter":
		below.SetInt64(1)
	}
	if name != "NoJitter" {
		eps.Mul(e, big.NewRat(1, 1<<48))
	}
	g := new(big.Rat).SetInt64(int64(got))
	if lo, hi := new(big.Rat).Sub(e, below), new(big.Rat).Add(e, eps); g.Cmp(lo.Sub(lo, eps)) < 0 || g.Cmp(hi) > 0 {
		t.Fatalf("%s; want %s within [-%s-ε, +ε], ε = %s", call(), e.FloatString(3), below.FloatString(1), eps.FloatString(3))
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

// FuzzJitter runs checkJitter for every jitter over arbitrary arguments.
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
		for _, j := range jitters {
			checkJitter(t, j.name, j.f, n, time.Duration(b), time.Duration(m), time.Duration(p), u)
		}
	})
}
