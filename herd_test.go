package retry

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// Simulations on virtual time of what jitter and a Budget do for the
// downstream, with this package's own jitter functions, Budget and Do.
// Each is seeded and deterministic; `go test -run TestHerd -v` prints the
// tables and the chart that README.md quotes.

// schedule is a way to wait between attempts; a nil Jitter retries at once.
type schedule struct {
	name string
	f    Jitter
}

var schedules = []schedule{
	{"no backoff", nil},
	{"exponential, no jitter", NoJitter},
	{"full jitter", FullJitter},
	{"equal jitter", EqualJitter},
	{"decorrelated jitter", DecorrelatedJitter},
}

// backoff is one client's retry state.
type backoff struct {
	n    int           // retries made
	prev time.Duration // the previous wait, base before the first
}

// next returns the wait before the client's next attempt, as Do chooses it.
func (b *backoff) next(s schedule, base, maxDelay time.Duration, r *rand.Rand) time.Duration {
	if s.f == nil {
		return 0
	}
	wait := s.f(b.n, base, maxDelay, b.prev, r.Float64())
	b.n, b.prev = b.n+1, wait
	return wait
}

func TestHerd(t *testing.T) {
	t.Run("Contention", testContention)
	t.Run("Recovery", testRecovery)
	t.Run("Amplification", testAmplification)
	t.Run("SharedDeadline", testSharedDeadline)
}

func printf(format string, args ...any) {
	if testing.Verbose() {
		fmt.Printf(format, args...)
	}
}

// ---- Contention: Brooker's optimistic-concurrency model ----

type contentionResult struct {
	writes int           // writes the server received
	done   time.Duration // when the last client learnt of its success
}

// simulateContention runs 100 clients that each make one optimistic
// write to one versioned row: read the version, then write; the write
// lands only if no other write landed since the read. A client whose
// write fails waits and starts again with a new read. Every network hop
// takes |Normal(10ms, 2ms)|.
func simulateContention(s schedule, seed uint64) contentionResult {
	const (
		clients  = 100
		base     = 5 * time.Millisecond
		maxDelay = 2 * time.Second
	)
	r := rand.New(rand.NewPCG(seed, 1))
	hop := func() time.Duration {
		return time.Duration(math.Abs(float64(10*time.Millisecond) + float64(2*time.Millisecond)*r.NormFloat64()))
	}
	type client struct {
		backoff
		readVersion int
	}
	cs := make([]client, clients)
	var q events
	for i := range cs {
		cs[i].prev = base
		q.add(hop(), i, readArrives)
	}
	var res contentionResult
	version := 0
	for q.Len() > 0 {
		e := heap.Pop(&q).(event)
		c := &cs[e.who]
		switch e.kind {
		case readArrives:
			c.readVersion = version
			q.add(e.at+hop()+hop(), e.who, writeArrives) // the reply, then the write
		case writeArrives:
			res.writes++
			if c.readVersion == version {
				version++
				res.done = max(res.done, e.at+hop())
				continue
			}
			wait := c.next(s, base, maxDelay, r)
			q.add(e.at+hop()+wait+hop(), e.who, readArrives) // the reply, the wait, a new read
		}
	}
	return res
}

func testContention(t *testing.T) {
	results := map[string]contentionResult{}
	printf("\nContention: 100 clients, one optimistic write each to one row; hops |N(10ms, 2ms)|, base 5ms, cap 2s\n")
	printf("%-24s %8s %12s\n", "schedule", "writes", "last done")
	for _, s := range schedules {
		res := simulateContention(s, 1)
		results[s.name] = res
		printf("%-24s %8d %12v\n", s.name, res.writes, res.done.Round(time.Millisecond))
	}
	exp, full := results["exponential, no jitter"], results["full jitter"]
	if full.writes*2 >= exp.writes {
		t.Errorf("writes with full jitter = %d; want under half of %d, those without jitter", full.writes, exp.writes)
	}
	if full.done*3 >= exp.done {
		t.Errorf("last success with full jitter at %v; want at least 3× sooner than without jitter, %v", full.done, exp.done)
	}
	if again := simulateContention(schedules[2], 1); again != full {
		t.Errorf("full jitter, seed 1, run twice = %+v, then %+v; want the same", full, again)
	}
}

// ---- Recovery: a herd of clients against a server that comes back ----

type recoveryResult struct {
	arrivals []int // attempts per tick, from the recovery on
	peak     int   // most attempts in one tick after the recovery
	drain    int   // ticks from the recovery until the last client is served
	attempts int   // attempts in all
}

// simulateRecovery runs 1,000 clients that all fail at tick 0 against a
// server that rejects every attempt until tick 500, then serves 20 a tick
// and rejects the rest. A tick is 1ms; base 10ms, cap 1s.
func simulateRecovery(s schedule, seed uint64) recoveryResult {
	const (
		clients   = 1000
		recoverAt = 500
		capacity  = 20
		tick      = time.Millisecond
		base      = 10 * time.Millisecond
		maxDelay  = time.Second
	)
	r := rand.New(rand.NewPCG(seed, 2))
	state := make([]backoff, clients)
	due := map[int][]int{} // tick → clients that attempt then
	for i := range state {
		state[i].prev = base
		due[0] = append(due[0], i)
	}
	var res recoveryResult
	left := clients
	for now := 0; left > 0; now++ {
		attempts := due[now]
		delete(due, now)
		res.attempts += len(attempts)
		if now >= recoverAt {
			res.arrivals = append(res.arrivals, len(attempts))
			res.peak = max(res.peak, len(attempts))
		}
		for k, who := range attempts {
			if now >= recoverAt && k < capacity {
				left--
				res.drain = now - recoverAt
				continue
			}
			wait := state[who].next(s, base, maxDelay, r)
			at := now + max(1, int((wait+tick-1)/tick)) // the next tick at the soonest
			due[at] = append(due[at], who)
		}
	}
	return res
}

func testRecovery(t *testing.T) {
	results := map[string]recoveryResult{}
	printf("\nRecovery: 1,000 clients fail at tick 0; the server rejects all until tick 500, then serves 20 a tick (1 tick = 1ms, base 10ms, cap 1s)\n")
	printf("%-24s %14s %16s %10s\n", "schedule", "peak per tick", "drain (ticks)", "attempts")
	for _, s := range schedules {
		res := simulateRecovery(s, 1)
		results[s.name] = res
		printf("%-24s %14d %16d %10d\n", s.name, res.peak, res.drain, res.attempts)
	}
	printf("\nAttempts per tick after the recovery: the busiest tick of each 50 (█ = 20 or more, the capacity; blank = none)\n")
	for _, name := range []string{"exponential, no jitter", "full jitter", "decorrelated jitter"} {
		printf("%-24s %s\n", name, sparkline(results[name].arrivals, 50, 20, 60))
	}
	exp, full := results["exponential, no jitter"], results["full jitter"]
	if exp.peak < 10*full.peak || exp.drain < 10*full.drain {
		t.Errorf("peak, drain without jitter = %d, %d; with full jitter %d, %d; want each at least 10× higher without", exp.peak, exp.drain, full.peak, full.drain)
	}
}

// sparkline draws the largest value of each group of width values, one
// character a group, for at most cols groups: a full block for top or more,
// a blank for 0, and the smallest block for any value above 0.
func sparkline(values []int, width, top, cols int) string {
	blocks := []rune(" ▁▂▃▄▅▆▇█")
	var b strings.Builder
	for i := 0; i < len(values) && i < width*cols; i += width {
		hi := 0
		for _, v := range values[i:min(i+width, len(values))] {
			hi = max(hi, v)
		}
		level := min((hi*(len(blocks)-1)+top-1)/top, len(blocks)-1)
		b.WriteRune(blocks[level])
	}
	if len(values) > width*cols {
		b.WriteString("…")
	}
	return b.String()
}

// ---- Shared deadline: a herd with one Deadline must not meet again at it ----

// simulateSharedDeadline runs 1,000 clients through Do, each on its own
// fake clock from tick 0, against a server that always fails, with
// Deadline 5s (MaxAttempts 100, so that the Deadline ends each run). It
// returns the attempts per tick (1 tick = 1ms) and the ticks of each
// client's last attempt.
func simulateSharedDeadline(seed uint64) (perTick map[int]int, last []int) {
	const clients = 1000
	perTick = map[int]int{}
	for i := range clients {
		ft := &fakeTime{}
		p := ft.with(Policy{MaxAttempts: 100, MaxDelay: time.Second, Deadline: 5 * time.Second})
		p.Rand = rand.New(rand.NewPCG(seed, uint64(i))).Float64
		var at int
		Do(context.Background(), func(context.Context) error {
			at = int(ft.Now().Sub(time.Time{}) / time.Millisecond)
			perTick[at]++
			return errBoom
		}, p)
		last = append(last, at)
	}
	return perTick, last
}

func testSharedDeadline(t *testing.T) {
	perTick, last := simulateSharedDeadline(1)
	busiest, busiestAt := 0, 0
	for tick, n := range perTick {
		if tick > 0 && (n > busiest || n == busiest && tick < busiestAt) { // tick 0 is the first failure, together by design
			busiest, busiestAt = n, tick
		}
	}
	first, final := slices.Min(last), slices.Max(last)
	printf("\nShared deadline: 1,000 clients fail together, Deadline 5s, MaxAttempts 100, MaxDelay 1s, decorrelated jitter\n")
	printf("busiest tick after the first: %d attempts (at %dms); last attempts spread from %dms to %dms\n", busiest, busiestAt, first, final)
	if busiest > 50 {
		t.Errorf("busiest tick after the first = %d attempts; want at most 50 of the 1,000 clients: waits must not line up at the Deadline", busiest)
	}
}

// ---- Amplification: retries during an outage, with and without a Budget ----

type amplificationResult struct {
	requests, attempts, succeeded int
}

func (a amplificationResult) ratio() float64 { return float64(a.attempts) / float64(a.requests) }

// simulateAmplification sends 100 new requests a tick for 5,000 ticks,
// each through Do with MaxAttempts 3 on a fake clock, against a service
// where each attempt fails with probability failRate.
func simulateAmplification(failRate float64, budget *Budget, seed uint64) amplificationResult {
	const perTick, ticks = 100, 5000
	r := rand.New(rand.NewPCG(seed, 3))
	var res amplificationResult
	p := Policy{
		MaxAttempts: 3,
		Budget:      budget,
		Rand:        r.Float64,
		Sleeper:     SleeperFunc(func(context.Context, time.Duration) error { return nil }),
		Clock:       ClockFunc(func() time.Time { return time.Time{} }),
	}
	fn := func(context.Context) error {
		res.attempts++
		if r.Float64() < failRate {
			return errBoom
		}
		return nil
	}
	for range perTick * ticks {
		res.requests++
		if Do(context.Background(), fn, p) == nil {
			res.succeeded++
		}
	}
	return res
}

func testAmplification(t *testing.T) {
	printf("\nAmplification: 100 requests a tick for 5,000 ticks, MaxAttempts 3; budget NewBudget(0.1, 10)\n")
	printf("%-13s %-10s %22s %12s\n", "failure rate", "budget", "attempts ÷ requests", "succeeded")
	for _, tt := range []struct {
		failRate        float64
		budget          bool
		lo, hi          float64 // bounds on attempts ÷ requests
		minSucceededPct float64
	}{
		{1, false, 3, 3, 0},
		{1, true, 1.09, 1.1 + 10.0/500_000, 0},
		{0.1, false, 1.10, 1.12, 99.8},
		{0.1, true, 1.09, 1.10 + 10.0/500_000, 98.5},
		{0.05, false, 1.05, 1.06, 99.7},
		{0.05, true, 1.05, 1.06, 99.7},
	} {
		var b *Budget
		name := "none"
		if tt.budget {
			b, name = NewBudget(0.1, 10), "0.1, 10"
		}
		res := simulateAmplification(tt.failRate, b, 1)
		pct := 100 * float64(res.succeeded) / float64(res.requests)
		printf("%-13s %-10s %22.3f %11.2f%%\n", fmt.Sprintf("%.0f%%", 100*tt.failRate), name, res.ratio(), pct)
		if res.ratio() < tt.lo || res.ratio() > tt.hi || pct < tt.minSucceededPct {
			t.Errorf("failure rate %v, budget %s: attempts ÷ requests = %.4f, succeeded %.2f%%; want it in [%v, %v], at least %v%%",
				tt.failRate, name, res.ratio(), pct, tt.lo, tt.hi, tt.minSucceededPct)
		}
	}
	// at a 5% failure rate the budget never denies a retry: same seed, same run
	if with, without := simulateAmplification(0.05, NewBudget(0.1, 10), 1), simulateAmplification(0.05, nil, 1); with != without {
		t.Errorf("at 5%% failures, with a budget = %+v; want %+v, the run without one", with, without)
	}
}

// ---- a deterministic event queue ----

const (
	readArrives = iota
	writeArrives
)

type event struct {
	at   time.Duration
	seq  int // the order of adding, which breaks ties
	who  int
	kind int
}

// events is a queue of events, earliest first, for container/heap.
type events struct {
	items []event
	added int
}

func (q *events) add(at time.Duration, who, kind int) {
	q.added++
	heap.Push(q, event{at: at, seq: q.added, who: who, kind: kind})
}

func (q *events) Len() int { return len(q.items) }
func (q *events) Less(i, j int) bool {
	a, b := q.items[i], q.items[j]
	return a.at < b.at || a.at == b.at && a.seq < b.seq
}
func (q *events) Swap(i, j int) { q.items[i], q.items[j] = q.items[j], q.items[i] }
func (q *events) Push(x any)    { q.items = append(q.items, x.(event)) }
func (q *events) Pop() any {
	e := q.items[len(q.items)-1]
	q.items = q.items[:len(q.items)-1]
	return e
}
