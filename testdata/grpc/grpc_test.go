package grpcrecipe

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/quietwire/retry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// reply is how the server answers one call: an error with a code and a
// pushback trailer, a hang until the call's ctx ends, or SERVING.
type reply struct {
	code     codes.Code // OK: SERVING
	pushback string     // the trailer's grpc-retry-pushback-ms, if not ""
	hang     bool
}

// server is a health service that answers its calls as scripted, the last
// reply for every call after the script, and records each call's deadline.
type server struct {
	healthpb.UnimplementedHealthServer
	script []reply

	mu        sync.Mutex
	deadlines []time.Time // zero for a call without one
}

func (s *server) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	s.mu.Lock()
	d, _ := ctx.Deadline()
	s.deadlines = append(s.deadlines, d)
	r := s.script[min(len(s.deadlines), len(s.script))-1]
	s.mu.Unlock()
	if r.pushback != "" {
		grpc.SetTrailer(ctx, metadata.Pairs("grpc-retry-pushback-ms", r.pushback))
	}
	switch {
	case r.hang:
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	case r.code != codes.OK:
		return nil, status.Error(r.code, r.code.String())
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// serve starts a real gRPC server on a local port and returns a client of it.
func serve(t *testing.T, s *server) healthpb.HealthClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, s)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///"+lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return healthpb.NewHealthClient(conn)
}

// TestGRPC runs the README's recipe against a real grpc-go server: what it
// retries, the server's pushback as gRFC A6 reads it, and the deadlines.
func TestGRPC(t *testing.T) {
	const ms = time.Millisecond
	unavailable, exhausted := reply{code: codes.Unavailable}, reply{code: codes.ResourceExhausted}
	serving, hang := reply{}, reply{hang: true}
	with := func(r reply, pushback string) reply { r.pushback = pushback; return r }
	for _, tt := range []struct {
		name       string
		script     []reply
		idempotent bool
		ctxTimeout time.Duration // the caller's; 0 for none
		code       codes.Code    // of what check returns
		reason     retry.Reason  // of the *RetryExhausted it returns; 0 for none
		calls      int
		least      time.Duration // the least wait OnRetry reports
	}{
		{"Unavailable is retried", []reply{unavailable, unavailable, serving}, true, 0, codes.OK, 0, 3, 0},
		{"a pushback of 0 retries ResourceExhausted", []reply{with(exhausted, "0"), serving}, true, 0, codes.OK, 0, 2, 0},
		{"a pushback of 50ms: no sooner", []reply{with(unavailable, "50"), serving}, true, 0, codes.OK, 0, 2, 50 * ms},
		{"ResourceExhausted without a pushback is not retried", []reply{exhausted, serving}, true, 0, codes.ResourceExhausted, 0, 1, 0},
		{"a negative pushback stops the retries", []reply{with(unavailable, "-1"), serving}, true, 0, codes.Unavailable, 0, 1, 0},
		{"a malformed pushback stops the retries", []reply{with(unavailable, "soon"), serving}, true, 0, codes.Unavailable, 0, 1, 0},
		{"a pushback above MaxDelay ends the retries", []reply{with(unavailable, "60000"), serving}, true, 0, codes.Unavailable, retry.HintTooLong, 1, 0},
		{"a pushback of about 292 years, too long for a Duration", []reply{with(unavailable, "9223372036855"), serving}, true, 0, codes.Unavailable, retry.HintTooLong, 1, 0},
		{"a pushback of 2⁶⁴ms, too long for an int64", []reply{with(unavailable, "18446744073709551616"), serving}, true, 0, codes.Unavailable, retry.HintTooLong, 1, 0},
		{"a pushback of 18446744073710ms, a Duration that wraps to 448µs", []reply{with(unavailable, "18446744073710"), serving}, true, 0, codes.Unavailable, retry.HintTooLong, 1, 0},
		{"an idempotent call is retried after DeadlineExceeded", []reply{hang, serving}, true, 0, codes.OK, 0, 2, 0},
		{"a call that is not idempotent is not", []reply{hang, serving}, false, 0, codes.DeadlineExceeded, 0, 1, 0},
		{"the caller's deadline bounds the call", []reply{hang}, true, 100 * ms, codes.DeadlineExceeded, retry.DeadlineReached, 1, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &server{script: tt.script}
			client := serve(t, s)
			ctx := t.Context()
			if tt.ctxTimeout != 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.ctxTimeout)
				defer cancel()
			}
			p := policy
			p.BaseDelay, p.AttemptTimeout = 10*ms, 200*ms // the recipe's Policy, faster
			p.IsRetryable = grpcRetryable(tt.idempotent)
			var waits []time.Duration
			p.OnRetry = func(_ context.Context, _ int, _ error, wait time.Duration) { waits = append(waits, wait) }
			resp, err := check(ctx, client, "", p)

			var re *retry.RetryExhausted
			if errors.As(err, &re) != (tt.reason != 0) || re != nil && re.Reason != tt.reason {
				t.Errorf("check() = %v; want a *RetryExhausted with %v: %v", err, tt.reason, tt.reason != 0)
			}
			if status.Code(err) != tt.code || (err == nil) != (resp.GetStatus() == healthpb.HealthCheckResponse_SERVING) {
				t.Errorf("check() = %v, %v: code %v; want code %v, and SERVING without an error", resp, err, status.Code(err), tt.code)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if len(s.deadlines) != tt.calls || tt.least > 0 && (len(waits) == 0 || waits[0] < tt.least) {
				t.Errorf("calls, waits = %d, %v; want %d, the first at least %v", len(s.deadlines), waits, tt.calls, tt.least)
			}
			// The server's deadline is the caller's, or AttemptTimeout's, sent as a time left:
			// the server counts it from when it reads the call, a little later.
			callerDeadline, ok := ctx.Deadline()
			for i, d := range s.deadlines {
				if d.IsZero() || ok && d.After(callerDeadline.Add(20*ms)) {
					t.Errorf("call %d: the server's deadline %v; want one, no later than the caller's %v", i+1, d, callerDeadline)
				}
			}
		})
	}
}
