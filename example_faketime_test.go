//go:build go1.25

package retry_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quietwire/retry"
)

// busy returns a server that answers 503 with Retry-After: 2 to its first
// n requests, then "ok".
func busy(t *testing.T, n int32) *httptest.Server {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) <= n {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestGetOnFakeTime(t *testing.T) {
	for _, tt := range []struct {
		timeout time.Duration
		want    string
	}{
		{3 * time.Second, "retry: gave up after 2 attempts in 2s (retry-after hint too long"}, // 2s and 2s do not fit in 3s
		{5 * time.Second, "ok"},
	} {
		srv := busy(t, 2)
		ft := &fakeTime{now: time.Now()} // one per call, from time.Now(): Do measures ctx's deadline on Clock
		ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
		defer cancel()
		body, err := getBody(ctx, srv.Client(), srv.URL, retry.Policy{Clock: ft, Sleeper: ft})
		got := string(body)
		if err != nil {
			got = err.Error()
		}
		if !strings.HasPrefix(got, tt.want) {
			t.Errorf("getBody() with a %v ctx = %q; want %q", tt.timeout, got, tt.want)
		}
	}
}

func TestGetOnSynctest(t *testing.T) {
	srv := busy(t, 2) // outside the bubble: a goroutine blocked on a socket keeps fake time still
	synctest.Test(t, func(t *testing.T) {
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}} // no idle connection left reading in the bubble
		start := time.Now()
		body, err := getBody(t.Context(), client, srv.URL, retry.Policy{})
		if string(body) != "ok" || err != nil {
			t.Fatalf("getBody() = %q, %v; want ok", body, err)
		}
		if waited := time.Since(start); waited < 4*time.Second {
			t.Errorf("getBody() waited %v; want at least 4s, as Retry-After asked twice", waited)
		}
	})
}

// A fake clock must start at time.Now(): Do compares ctx's deadline, set
// on the real clock, with Clock's readings. From a fixed date in the past,
// a 500ms deadline looks a long way off, and Do retries through it.
func TestFakeClockStartsAtTimeNow(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	for _, tt := range []struct {
		name     string
		start    time.Time
		attempts int
	}{
		{"TimeNow", time.Now(), 2},
		{"FixedDate", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ft := &fakeTime{now: tt.start}
			attempts := 0
			p := retry.Policy{
				BaseDelay: 200 * time.Millisecond, Jitter: retry.NoJitter, Clock: ft, Sleeper: ft,
				OnDone: func(_ context.Context, n int, _ time.Duration, _ error) { attempts = n },
			}
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			getBody(ctx, srv.Client(), srv.URL, p)
			if attempts != tt.attempts {
				t.Errorf("getBody() with a 500ms ctx made %d attempts; want %d", attempts, tt.attempts)
			}
		})
	}
}
