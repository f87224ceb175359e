package retry

// The README's section "From a blank screen" shows the whole retry
// algorithm in at most 30 lines, for someone to learn by heart. The code
// between the two markers below is that block, byte for byte;
// TestBlankScreenMatchesREADME keeps the two the same, and the other tests
// here run it on fake time.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// BEGIN blank-screen

// retryDo calls fn at most attempts times, the first call included, and
// waits between calls with decorrelated jitter capped at maxWait. It gives
// up rather than start a wait that would end at or after deadline, counted
// from the first call. In production now is time.Now, sleep is sleepCtx
// and random is rand.Float64; tests pass fakes.
func retryDo(ctx context.Context, fn func(context.Context) error, retryable func(error) bool,
	attempts int, base, maxWait, deadline time.Duration,
	now func() time.Time, sleep func(context.Context, time.Duration) error, random func() float64) error {
	start, err := now(), fn(ctx) // Go calls now() first: left to right
	// n counts the calls made; wait is the previous wait, base before the first.
	for n, wait := 1, base; err != nil && retryable(err); n++ {
		wait = min(maxWait, base+time.Duration(random()*float64(3*max(wait, base)-base)))
		if n >= attempts || now().Sub(start)+wait >= deadline || sleep(ctx, wait) != nil {
			return &retryError{Attempts: n, Elapsed: now().Sub(start), Last: err}
		}
		err = fn(ctx)
	}
	return err // nil, or an error that retrying cannot fix, as fn returned it
}

// retryError says that retryDo gave up: out of attempts, out of time, or ctx is done.
type retryError struct {
	Attempts int           // calls of fn
	Elapsed  time.Duration // from the first call until retryDo gave up
	Last     error         // the last error fn returned
}

func (e *retryError) Error() string { return fmt.Sprintf("retry: %d attempts: %v", e.Attempts, e.Last) }

func (e *retryError) Unwrap() error { return e.Last }

// sleepCtx waits for d or until ctx is done, and returns ctx.Err().
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return ctx.Err()
}

// END blank-screen

const (
	blankBegin   = "// BEGIN blank-screen\n"
	blankEnd     = "// END blank-screen\n"
	blankHeading = "## From a blank screen\n"
	blankMax     = 30 // lines of code: blank and comment-only lines are not counted
)

// blankCode returns the lines of code in block: the lines that are neither
// blank nor only a comment.
func blankCode(block string) int {
	n := 0
	for _, line := range strings.Split(block, "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "//") {
			n++
		}
	}
	return n
}

// blankBetween returns the text of s after the line begin and before the line
// end, or an error if either is missing.
func blankBetween(s, begin, end string) (string, error) {
	_, after, ok := strings.Cut(s, begin)
	if !ok {
		return "", fmt.Errorf("no line %q", strings.TrimSpace(begin))
	}
	inside, _, ok := strings.Cut(after, end)
	if !ok {
		return "", fmt.Errorf("no line %q after %q", strings.TrimSpace(end), strings.TrimSpace(begin))
	}
	return inside, nil
}

func TestBlankScreenMatchesREADME(t *testing.T) {
	src, err := os.ReadFile("blank_test.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	code, err := blankBetween(string(src), "\n"+blankBegin, "\n"+blankEnd)
	if err != nil {
		t.Fatalf("blank_test.go: %v", err)
	}
	code = strings.TrimPrefix(code, "\n") // the blank lines next to the markers are not part of it
	section, err := blankBetween(string(readme), "\n"+blankHeading, "\n## ")
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	block, err := blankBetween(section, "\n```go\n", "\n```\n")
	if err != nil {
		t.Fatalf("README.md, section %q: %v", strings.TrimSpace(blankHeading), err)
	}
	block += "\n"

	if block != code {
		a, b := bufio.NewScanner(strings.NewReader(block)), bufio.NewScanner(strings.NewReader(code))
		for line := 1; ; line++ {
			okA, okB := a.Scan(), b.Scan()
			if !okA && !okB {
				t.Fatalf("README.md and blank_test.go differ, but not line by line (line endings?)")
			}
			if okA != okB || !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Fatalf("README.md's block differs from blank_test.go's at line %d of the block:\nREADME.md:     %q\nblank_test.go: %q",
					line, a.Text(), b.Text())
			}
		}
	}
	if n := blankCode(code); n > blankMax {
		t.Errorf("the blank-screen block has %d lines of code; want at most %d", n, blankMax)
	}
}

func TestBlankCode(t *testing.T) {
	block := "// doc\nfunc f() {\n\n\t// inside\n\treturn // trailing\n}\n"
	if got := blankCode(block); got != 3 {
		t.Errorf("blankCode(%q) = %d; want 3", block, got)
	}
}

// blankClock is fake time for retryDo: sleep records the wait and moves
// now forward by it at once. It starts at time.Unix(0, 0), which has no
// monotonic reading, so Sub works on the wall readings it moves itself.
type blankClock struct {
	now   time.Time
	waits []time.Duration
	ends  []time.Duration // when each wait ended, from the start
}

func (c *blankClock) Now() time.Time { return c.now }

func (c *blankClock) Sleep(ctx context.Context, d time.Duration) error {
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	c.ends = append(c.ends, c.now.Sub(time.Unix(0, 0)))
	return ctx.Err()
}

var errBlankFatal = errors.New("bad request")

func blankRetryable(err error) bool { return !errors.Is(err, errBlankFatal) }

// blankErrs returns n distinct errors, so that a test can tell which call
// an error came from.
func blankErrs(n int) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = fmt.Errorf("connection refused (call %d)", i+1)
	}
	return errs
}

func TestBlankRetryDo(t *testing.T) {
	wrapped := fmt.Errorf("get /users/7: %w", errBlankFatal)
	tests := []struct {
		name                    string
		errs                    []error       // fn's result on each call; nil after the last
		call                    time.Duration // how long each call takes on the fake clock
		attempts                int
		base, maxWait, deadline time.Duration
		wantCalls               int
		wantErr                 error // the exact error retryDo returns, unless wantGaveUp
		wantGaveUp              bool  // a *retryError wrapping the last error
		wantElapsed             time.Duration
	}{
		{
			name:     "success at once",
			attempts: 5, base: 10 * time.Millisecond, maxWait: time.Second, deadline: time.Minute,
			wantCalls: 1,
		},
		{
			name:     "success after failures",
			errs:     blankErrs(3),
			call:     time.Millisecond,
			attempts: 5, base: 10 * time.Millisecond, maxWait: 40 * time.Millisecond, deadline: time.Minute,
			wantCalls: 4,
		},
		{
			name:     "non-retryable error returned after one call",
			errs:     []error{wrapped},
			attempts: 5, base: 10 * time.Millisecond, maxWait: time.Second, deadline: time.Minute,
			wantCalls: 1, wantErr: wrapped,
		},
		{
			name:     "exhaustion wraps the last error with the attempt count",
			errs:     blankErrs(5),
			attempts: 3, base: 10 * time.Millisecond, maxWait: 10 * time.Millisecond, deadline: time.Minute,
			wantCalls: 3, wantGaveUp: true, wantElapsed: 20 * time.Millisecond,
		},
		{
			// Calls end at 0.1s, 1.2s, 2.3s, 3.4s; the wait after the fourth
			// would end at 4.4s, past the deadline.
			name:     "deadline respected",
			errs:     blankErrs(10),
			call:     100 * time.Millisecond,
			attempts: 10, base: time.Second, maxWait: time.Second, deadline: 3500 * time.Millisecond,
			wantCalls: 4, wantGaveUp: true, wantElapsed: 3400 * time.Millisecond,
		},
		{
			name:     "no wait that ends exactly at the deadline",
			errs:     blankErrs(10),
			call:     100 * time.Millisecond,
			attempts: 10, base: time.Second, maxWait: time.Second, deadline: 4400 * time.Millisecond,
			wantCalls: 4, wantGaveUp: true, wantElapsed: 3400 * time.Millisecond,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &blankClock{now: time.Unix(0, 0)}
			calls := 0
			fn := func(context.Context) error {
				calls++
				clock.now = clock.now.Add(tt.call)
				if calls <= len(tt.errs) {
					return tt.errs[calls-1]
				}
				return nil
			}
			err := retryDo(context.Background(), fn, blankRetryable, tt.attempts, tt.base, tt.maxWait, tt.deadline,
				clock.Now, clock.Sleep, seqRand(1))

			if calls != tt.wantCalls {
				t.Errorf("retryDo() calls = %d; want %d", calls, tt.wantCalls)
			}
			if len(clock.waits) != calls-1 {
				t.Errorf("retryDo() waits = %v after %d calls; want one between each two calls, none after the last", clock.waits, calls)
			}
			for i, d := range clock.waits {
				if d < tt.base || d > tt.maxWait {
					t.Errorf("retryDo() wait %d = %v; want it in [%v, %v]", i+1, d, tt.base, tt.maxWait)
				}
				if end := clock.ends[i]; end >= tt.deadline {
					t.Errorf("retryDo() wait %d ends at %v; want it to end before the deadline, %v", i+1, end, tt.deadline)
				}
			}
			if !tt.wantGaveUp {
				if err != tt.wantErr {
					t.Errorf("retryDo() = %v; want %v", err, tt.wantErr)
				}
				return
			}
			var re *retryError
			if !errors.As(err, &re) {
				t.Fatalf("retryDo() = %v (%T); want a *retryError", err, err)
			}
			last := tt.errs[tt.wantCalls-1]
			if re.Attempts != tt.wantCalls {
				t.Errorf("retryDo() Attempts = %d; want %d", re.Attempts, tt.wantCalls)
			}
			if re.Last != last || !errors.Is(err, last) {
				t.Errorf("retryDo() Last = %v; want %v, reachable with errors.Is", re.Last, last)
			}
			if re.Elapsed != tt.wantElapsed {
				t.Errorf("retryDo() Elapsed = %v; want %v", re.Elapsed, tt.wantElapsed)
			}
			if want := fmt.Sprintf("retry: %d attempts: %v", tt.wantCalls, last); err.Error() != want {
				t.Errorf("retryDo() = %q; want %q", err, want)
			}
		})
	}
}

func TestBlankRetryDoStopsWhenCtxIsDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	clock := &blankClock{now: time.Unix(0, 0)}
	calls := 0
	fn := func(context.Context) error {
		calls++
		cancel() // the caller gives up during the first call
		return errors.New("connection refused")
	}
	err := retryDo(ctx, fn, blankRetryable, 5, time.Second, time.Second, time.Minute, clock.Now, clock.Sleep, seqRand(1))
	var re *retryError
	if !errors.As(err, &re) || re.Attempts != 1 {
		t.Errorf("retryDo() = %v; want a *retryError after 1 attempt", err)
	}
	if calls != 1 {
		t.Errorf("retryDo() calls = %d; want 1", calls)
	}
}

func TestBlankSleepCtx(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan error, 1)
	go func() { done <- sleepCtx(ctx, time.Hour) }()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Errorf("sleepCtx(canceled ctx, 1h) = %v; want %v", err, context.Canceled)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sleepCtx(canceled ctx, 1h) still sleeping after 10s; want it to return at once")
	}
	if err := sleepCtx(context.Background(), time.Microsecond); err != nil {
		t.Errorf("sleepCtx(ctx, 1µs) = %v; want nil", err)
	}
}

// TestBlankJitter pins the decorrelated-jitter formula, min(cap, base +
// u·(3·max(prev, base) − base)), at chosen values of u.
func TestBlankJitter(t *testing.T) {
	const base, maxWait = 10 * time.Millisecond, 100 * time.Millisecond
	tests := []struct {
		u    float64
		want []time.Duration
	}{
		{0, []time.Duration{base, base, base, base}},
		{0.5, []time.Duration{20 * time.Millisecond, 35 * time.Millisecond, 57500 * time.Microsecond, 91250 * time.Microsecond}},
		{1, []time.Duration{30 * time.Millisecond, 90 * time.Millisecond, maxWait, maxWait}},
	}
	for _, tt := range tests {
		clock := &blankClock{now: time.Unix(0, 0)}
		fail := func(context.Context) error { return errors.New("connection refused") }
		retryDo(context.Background(), fail, blankRetryable, 5, base, maxWait, time.Hour,
			clock.Now, clock.Sleep, func() float64 { return tt.u })
		if !slices.Equal(clock.waits, tt.want) {
			t.Errorf("retryDo() waits at u = %v: %v; want %v", tt.u, clock.waits, tt.want)
		}
	}
}
