package herd

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quietwire/retry"
)

// Simulations on virtual time of what jitter and a Budget do for the
// downstream, with package retry's own jitter functions, Budget and Do,
// through its exported API only. Each is seeded and deterministic;
// `go test -run TestHerd -v .` in this folder prints the figures that the
// repository's README.md quotes, and more.

// fakeTime is a Clock and a Sleeper for one goroutine: Sleep moves Now by
// the wait at once. Its zero value starts at the zero time.
type fakeTime struct{ now time.Time }

func (f *fakeTime) Now() time.Time { return f.now }

func (f *fakeTime) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.now = f.now.Add(d)
	return nil
}

// with returns p running on f's time.
func (f *fakeTime) with(p retry.Policy) retry.Policy {
	p.Clock, p.Sleeper = f, f
	return p
}

var errBoom = errors.New("boom")

// schedule is a way to wait between attempts; a nil Jitter retries at once.
type schedule struct {
	name string
	f    retry.Jitter
}

var schedules = []schedule{
	{"no backoff", nil},
	{"exponential, no jitter", retry.NoJitter},
	{"full jitter", retry.FullJitter},
	{"equal jitter", retry.EqualJitter},
	{"decorrelated jitter", retry.DecorrelatedJitter},
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

// TestHerd answers "which jitter?" and "can retries make an outage
// worse?": DecorrelatedJitter or FullJitter for many clients, EqualJitter
// for a floor on each wait, NoJitter for one client; and one Budget per
// dependency, such as NewBudget(0.1, 10), its burst about N×k for N calls
// that may each need k retries at once.
func TestHerd(t *testing.T) {
	t.Run("Contention", testContention)
	t.Run("Recovery", testRecovery)
	t.Run("Amplification", testAmplification)
	t.Run("SharedTimeout", testSharedTimeout)
	t.Run("Policies", testPolicies)
	t.Run("Burst", testBurst)
	t.Run("Drained", testDrained)
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

// testContention is Marc Brooker's model ("Exponential Backoff And
// Jitter", 2015): 100 clients each make one optimistic write to one row,
// and a client whose write lost backs off and starts again. Without jitter
// the clients stay in lock-step, one write landing per round; full jitter
// makes under half the writes and finishes 16× sooner. No backoff finishes
// soonest against this server, which never tires, at 3× the writes.
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
	for now := 0; left > 0 && now < 10_000_000; now++ { // a cap: a broken jitter must fail the test, not hang it
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

// testRecovery is the thundering herd: 1,000 clients fail at tick 0, and
// from tick 500 the server serves 20 a tick. Without jitter all return in
// the same tick, 20 get through and the rest wait a full cap, 50 waves in
// all; with jitter the queue drains in under a second.
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

// ---- Shared timeout: a herd with one Timeout must not meet again at it ----

// simulateSharedTimeout runs 1,000 clients through Do, each on its own
// fake clock from tick 0, against a server that always fails, with
// Timeout 5s (MaxAttempts 100, so that the Timeout ends each run). It
// returns the attempts per tick (1 tick = 1ms) and the ticks of each
// client's last attempt.
func simulateSharedTimeout(seed uint64) (perTick map[int]int, last []int) {
	const clients = 1000
	perTick = map[int]int{}
	for i := range clients {
		ft := &fakeTime{}
		p := ft.with(retry.Policy{MaxAttempts: 100, MaxDelay: time.Second, Timeout: 5 * time.Second})
		p.Rand = rand.New(rand.NewPCG(seed, uint64(i))).Float64
		var at int
		retry.Do(context.Background(), func(context.Context) error {
			at = int(ft.Now().Sub(time.Time{}) / time.Millisecond)
			perTick[at]++
			return errBoom
		}, p)
		last = append(last, at)
	}
	return perTick, last
}

func testSharedTimeout(t *testing.T) {
	perTick, last := simulateSharedTimeout(1)
	busiest, busiestAt := 0, 0
	for tick, n := range perTick {
		if tick > 0 && (n > busiest || n == busiest && tick < busiestAt) { // tick 0 is the first failure, together by design
			busiest, busiestAt = n, tick
		}
	}
	first, final := slices.Min(last), slices.Max(last)
	printf("\nShared deadline: 1,000 clients fail together, Timeout 5s, MaxAttempts 100, MaxDelay 1s, decorrelated jitter\n")
	printf("busiest tick after the first: %d attempts (at %dms); last attempts spread from %dms to %dms\n", busiest, busiestAt, first, final)
	if busiest > 50 {
		t.Errorf("busiest tick after the first = %d attempts; want at most 50 of the 1,000 clients: waits must not line up at the Timeout", busiest)
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
func simulateAmplification(failRate float64, budget *retry.Budget, seed uint64) amplificationResult {
	const perTick, ticks = 100, 5000
	r := rand.New(rand.NewPCG(seed, 3))
	var res amplificationResult
	p := retry.Policy{
		MaxAttempts: 3,
		Budget:      budget,
		Rand:        r.Float64,
		Sleeper:     retry.SleeperFunc(func(context.Context, time.Duration) error { return nil }),
		Clock:       retry.ClockFunc(func() time.Time { return time.Time{} }),
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
		if retry.Do(context.Background(), fn, p) == nil {
			res.succeeded++
		}
	}
	return res
}

// testAmplification sends 100 requests a tick through Do with MaxAttempts
// 3. In a full outage 3 attempts triple the load; a Budget of 10% holds
// it to 1.1×, as the Google SRE book ("Handling Overload") describes. At a
// 5% failure rate the Budget never refuses; at 10% about 1% of requests
// lose a retry, so choose the ratio above the failure rate to ride out.
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
		var b *retry.Budget
		name := "none"
		if tt.budget {
			b, name = retry.NewBudget(0.1, 10), "0.1, 10"
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
	if with, without := simulateAmplification(0.05, retry.NewBudget(0.1, 10), 1), simulateAmplification(0.05, nil, 1); with != without {
		t.Errorf("at 5%% failures, with a budget = %+v; want %+v, the run without one", with, without)
	}
}

// ---- Burst and Drained: sizing a Budget's burst, and its empty edge ----

// testBurst: 20 calls fail together, each 3 times before it succeeds,
// sharing one Budget. NewBudget(0.1, 10) hands its tokens out one retry
// at a time, so that no call gets the 3 it needs: none succeeds. A burst
// of about N×k = 60 serves all 20, as no Budget does.
func testBurst(t *testing.T) {
	const n, k = 20, 3
	p := retry.Policy{MaxAttempts: k + 1}
	printf("\nBurst: %d calls in Do fail together at t=0, each %d times before it succeeds; MaxAttempts %d\n", n, k, k+1)
	printf("%-20s %7s %9s\n", "budget", "served", "requests")
	for _, tt := range []struct {
		name             string
		budget           *retry.Budget
		served, requests int
	}{
		{"NewBudget(0.1, 10)", retry.NewBudget(0.1, 10), 0, 31},
		{"NewBudget(0.1, 60)", retry.NewBudget(0.1, 60), n, n * (k + 1)},
		{"none", nil, n, n * (k + 1)},
	} {
		p.Budget = tt.budget
		res := runFleet(n, p, failsFirst(k), 1)
		printf("%-20s %7d %9d\n", tt.name, res.served, res.attempts)
		if res.served != tt.served || res.attempts != tt.requests {
			t.Errorf("budget %s: served %d, requests %d; want %d, %d", tt.name, res.served, res.attempts, tt.served, tt.requests)
		}
	}
	smallest := 0 // the smallest burst that serves all n
	for burst := n * k; burst > 0; burst-- {
		p.Budget = retry.NewBudget(0.1, burst)
		if runFleet(n, p, failsFirst(k), 1).served == n {
			smallest = burst
		}
	}
	printf("the smallest burst that serves all %d: %d\n", n, smallest)
	if smallest != 59 {
		t.Errorf("smallest burst that serves all %d calls = %d; want %d", n, smallest, 59)
	}
}

// simulateDrained runs one caller that makes one call a second through Do
// with requestPath and NewBudget(0.1, 10). An outage fails every attempt
// until the Budget is empty (balance 0, the worst an outage can leave); then
// each call fails once with probability 5%, and its retry succeeds. From
// the end of the outage, it returns when the Budget first held one token
// as a call began, how many failures it refused to retry before, and when
// the first retried failure began.
func simulateDrained(seed uint64) (oneToken time.Duration, lost int, firstRetried time.Duration) {
	r := rand.New(rand.NewPCG(seed, 4))
	b := retry.NewBudget(0.1, 10)
	down := requestPath
	down.Budget, down.Rand = b, r.Float64
	for i := 0; b.Tokens() > 0 && i < 1000; i++ { // the outage
		retry.Do(context.Background(), func(context.Context) error { return errBoom }, (&fakeTime{}).with(down))
	}
	for at := time.Second; firstRetried == 0 && at < time.Hour; at += time.Second {
		fails, attempts := r.Float64() < 0.05, 0
		p := (&fakeTime{now: time.Time{}.Add(at)}).with(requestPath)
		p.Budget, p.Rand = b, r.Float64
		err := retry.Do(context.Background(), func(context.Context) error {
			if attempts++; attempts == 1 && b.Tokens() >= 1 && oneToken == 0 {
				oneToken = at
			}
			if fails && attempts == 1 {
				return errBoom
			}
			return nil
		}, p)
		switch {
		case errors.Is(err, retry.ErrBudgetExhausted):
			lost++
		case fails && err == nil:
			firstRetried = at
		}
	}
	return oneToken, lost, firstRetried
}

// testDrained: after an outage empties NewBudget(0.1, 10), a caller of one
// call a second gets its next retry at its 10th call, 10s on: the 9 calls
// before it lose 0.48 failures an outage at a 5% failure rate. Calls, not
// seconds, refill a Budget: 1/ratio calls at any rate.
func testDrained(t *testing.T) {
	const trials = 1000
	lost, lostSome := 0, 0
	var firsts []time.Duration
	for seed := range uint64(trials) {
		oneToken, l, first := simulateDrained(seed)
		if oneToken != 10*time.Second {
			t.Fatalf("seed %d: the Budget held one token %v after the outage; want 10s", seed, oneToken)
		}
		lost += l
		if l > 0 {
			lostSome++
		}
		firsts = append(firsts, first)
	}
	slices.Sort(firsts)
	printf("\nDrained: one call a second, 5%% failing once, after an outage empties NewBudget(0.1, 10); %d outages\n", trials)
	printf("one token again after 10s; failures not retried: %.2f an outage (%d%% of outages lose one or more); first retried failure after %v (median), %v (90%%)\n",
		float64(lost)/trials, 100*lostSome/trials, firsts[trials/2], firsts[trials*9/10])
	if lost != 479 || lostSome != 387 || firsts[trials/2] != 24*time.Second || firsts[trials*9/10] != 55*time.Second {
		t.Errorf("failures not retried = %d in %d outages, first retried failure after %v (median), %v (90%%); want 479 in 387, 24s, 55s",
			lost, lostSome, firsts[trials/2], firsts[trials*9/10])
	}
}

// ---- a deterministic event queue ----

const (
	readArrives = iota
	writeArrives
	wakes // a client's Sleep ends
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

// ---- Policies: the real Do, 1,000 clients, one server, virtual time ----

// requestPath is the Policy that README.md recommends for a call made while
// a caller waits: few attempts, an answer within 2s, and a first retry
// 200ms to 600ms after the failure.
var requestPath = retry.Policy{MaxAttempts: 4, BaseDelay: 200 * time.Millisecond, MaxDelay: time.Second, Timeout: 2 * time.Second}

// background returns the Policy that README.md recommends for work that
// no caller waits for, sized for an outage: waits from 1s up to maxDelay,
// and enough attempts that the Timeout, not their number, ends the retries.
func background(maxDelay, timeout time.Duration) retry.Policy {
	return retry.Policy{MaxAttempts: 100, BaseDelay: time.Second, MaxDelay: maxDelay, Timeout: timeout}
}

// testPolicies: a fleet rides out an outage when its Timeout exceeds the
// outage plus MaxDelay and MaxAttempts does not end it first. Below
// 3×BaseDelay, a MaxDelay gives part of the fleet the cap as its first
// wait, all in one tick. A shared Budget bounds retries but does not
// spread them: a fleet that fails together spends its burst at once.
func testPolicies(t *testing.T) {
	const ms, s = time.Millisecond, time.Second
	printf("\nPolicies: 1,000 clients in Do fail together at t=0; the server rejects all until the outage ends, then serves 20 a tick (1 tick = 1ms)\n")
	printf("%-7s %-29s %7s %16s %13s %10s\n", "outage", "policy", "served", "attempts/client", "busiest tick", "last done")
	withBudget := background(5*s, 15*s)
	withBudget.Budget = retry.NewBudget(0.1, 10) // one Budget for the whole fleet
	results := map[string]fleetResult{}          // by outage and policy
	for _, tt := range []struct {
		outage         time.Duration
		name           string
		p              retry.Policy
		minPct, maxPct float64 // bounds on the share of clients served
		herd           bool    // whether the busiest tick after tick 0 is over capacity
	}{
		{500 * ms, "zero Policy", retry.Policy{}, 99, 100, false},
		{500 * ms, "request path", requestPath, 99, 100, false},
		{500 * ms, "background(3s, 5s)", background(3*s, 5*s), 99, 100, false},
		{5 * s, "zero Policy", retry.Policy{}, 1, 10, false},
		{5 * s, "request path", requestPath, 0, 0, false},
		{5 * s, "background(5s, 15s)", background(5*s, 15*s), 99, 100, false},
		{30 * s, "zero Policy", retry.Policy{}, 0, 0, false},
		{30 * s, "request path", requestPath, 0, 0, false},
		{30 * s, "background(10s, 1m)", background(10*s, time.Minute), 99, 100, false},
		{5 * s, "background(2s, 15s)", background(2*s, 15*s), 90, 99, true}, // MaxDelay under 3×BaseDelay
		{5 * s, "background(5s, 15s), Budget", withBudget, 0, 0, false},
	} {
		res := runFleet(fleetSize, tt.p, outage(tt.outage), 1)
		pct := float64(100*res.served) / float64(fleetSize)
		last := slices.Max(res.done)
		printf("%-7v %-29s %6.1f%% %16.2f %13d %10v\n", tt.outage, tt.name, pct, float64(res.attempts)/float64(fleetSize), res.busiest, last.Round(ms))
		if pct < tt.minPct || pct > tt.maxPct || (res.busiest > fleetCapacity) != tt.herd {
			t.Errorf("%v outage, %s: served %.1f%%, busiest tick %d; want served in [%v%%, %v%%], and busiest over capacity (%d): %v",
				tt.outage, tt.name, pct, res.busiest, tt.minPct, tt.maxPct, fleetCapacity, tt.herd)
		}
		results[fmt.Sprint(tt.outage, " ", tt.name)] = res
	}
	// The same seed, the same run: one goroutine at a time, woken in a fixed order.
	again := func() fleetResult { return runFleet(fleetSize, retry.Policy{}, outage(5*s), 1) }
	if a, b := again(), again(); !slices.Equal(a.done, b.done) || a.attempts != b.attempts {
		t.Errorf("zero Policy, 5s outage, seed 1, run twice: %d attempts, then %d; want the same run", a.attempts, b.attempts)
	}

	zero := results["30s zero Policy"] // every client fails: done is when its last attempt failed
	slices.Sort(zero.done)
	printf("zero Policy: the last of its 5 attempts comes %v after the first for the median client, %v to %v for 80%% of them\n",
		zero.done[fleetSize/2].Round(ms), zero.done[fleetSize/10].Round(ms), zero.done[fleetSize*9/10].Round(ms))

	budgetRun := results["5s background(5s, 15s), Budget"]
	retries := budgetRun.attempts - fleetSize
	printf("Budget NewBudget(0.1, 10), shared by the fleet: %d retries allowed, all paid for at t=0, %.1f tokens left after it; %d of %d calls ended by the Budget\n",
		retries, budgetRun.tokens, budgetRun.refused, fleetSize)
	if retries > 10+fleetSize/10 || budgetRun.tokens >= 1 || budgetRun.refused != fleetSize {
		t.Errorf("shared Budget: %d retries, %.1f tokens after t=0, %d calls refused; want at most 110 retries (burst 10 + 0.1 × 1,000 calls), under 1 token, all %d refused",
			retries, budgetRun.tokens, budgetRun.refused, fleetSize)
	}
}

// The fleet of testPolicies: the clients that fail together, and the
// attempts a tick that its server serves once the outage is over.
const fleetSize, fleetCapacity = 1000, 20

// A server answers an attempt of client who at now, the inTick-th attempt
// of its tick.
type server func(who int, now time.Duration, inTick int) error

// outage returns a server that rejects every attempt until d has passed,
// then serves fleetCapacity attempts a tick and rejects the rest.
func outage(d time.Duration) server {
	return func(_ int, now time.Duration, inTick int) error {
		if now < d || inTick > fleetCapacity {
			return errBoom
		}
		return nil
	}
}

// failsFirst returns a server that fails each client's first k attempts,
// then serves it.
func failsFirst(k int) server {
	tries := map[int]int{}
	return func(who int, _ time.Duration, _ int) error {
		if tries[who]++; tries[who] <= k {
			return errBoom
		}
		return nil
	}
}

// fleetResult is what one run of runFleet measured.
type fleetResult struct {
	done     []time.Duration // when each client's Do returned
	served   int             // clients whose Do returned nil
	attempts int             // calls of fn, all clients together
	busiest  int             // most attempts in one tick, tick 0 excluded
	refused  int             // Do calls that the Budget ended
	tokens   float64         // the Budget's balance once tick 0 was over
}

// runFleet runs n clients, each a goroutine calling Do with p, all making
// their first attempt at t=0, against serve (1 tick = 1ms). Do itself
// chooses every wait and when to give up, from p's MaxAttempts, Timeout,
// jitter and Budget.
//
// Time is virtual: each client's Clock reads the scheduler's now, and its
// Sleeper queues a wake-up at now+d and blocks. The scheduler wakes one
// client at a time, earliest wake-up first (ties in the order queued), and
// waits until it sleeps again or its Do returns: one goroutine runs at a
// time, handing over through channels, so the run needs no lock, and each
// seed gives the same figures.
func runFleet(n int, p retry.Policy, serve server, seed uint64) fleetResult {
	const tick = time.Millisecond
	var (
		res     = fleetResult{done: make([]time.Duration, n)}
		now     time.Duration
		q       events
		perTick = map[time.Duration]int{}
		wake    = make([]chan struct{}, n)
		yield   = make(chan struct{}) // the running client slept or returned
	)
	epoch := time.Unix(0, 0)
	p.Clock = retry.ClockFunc(func() time.Time { return epoch.Add(now) })
	for i := range n {
		p := p
		p.Rand = rand.New(rand.NewPCG(seed, uint64(i))).Float64
		p.Sleeper = retry.SleeperFunc(func(_ context.Context, d time.Duration) error {
			q.add(now+d, i, wakes)
			yield <- struct{}{}
			<-wake[i]
			return nil
		})
		wake[i] = make(chan struct{})
		q.add(0, i, wakes)
		go func() {
			<-wake[i]
			err := retry.Do(context.Background(), func(context.Context) error {
				res.attempts++
				perTick[now/tick]++
				return serve(i, now, perTick[now/tick])
			}, p)
			if err == nil {
				res.served++
			}
			if errors.Is(err, retry.ErrBudgetExhausted) {
				res.refused++
			}
			res.done[i] = now
			yield <- struct{}{}
		}()
	}
	for q.Len() > 0 {
		e := heap.Pop(&q).(event)
		if now == 0 && e.at > 0 && p.Budget != nil {
			res.tokens = p.Budget.Tokens()
		}
		now = e.at
		wake[e.who] <- struct{}{}
		<-yield
	}
	for t, n := range perTick {
		if t > 0 {
			res.busiest = max(res.busiest, n)
		}
	}
	return res
}
