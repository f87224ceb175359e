//go:build go1.25

package retry_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
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
	srv := busy(t, 2)
	ft := &fakeTime{now: time.Now()} // not a fixed date: Do measures ctx's deadline on Clock
	start := ft.now
	p := retry.Policy{Clock: ft, Sleeper: ft}

	body, err := getBody(context.Background(), srv.Client(), srv.URL, p)
	if string(body) != "ok" || err != nil {
		t.Fatalf("getBody() = %q, %v; want ok", body, err)
	}
	if waited := ft.now.Sub(start); waited < 4*time.Second {
		t.Errorf("getBody() waited %v; want at least 4s, as Retry-After asked twice", waited)
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
