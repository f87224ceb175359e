// Package grpcrecipe is the README's gRPC recipe, as the README shows it:
// Do around a unary call, retrying as gRFC A6 says, with the server's
// pushback. Its tests run it against a real grpc-go server.
package grpcrecipe

import (
	"context"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/quietwire/retry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// pushback is a call's error with the server's grpc-retry-pushback-ms: retry
// no sooner than the delay, 0 included (retry.After(0, err) would drop it).
type pushback struct {
	err   error
	delay time.Duration
}

func (e *pushback) Error() string             { return e.err.Error() }
func (e *pushback) Unwrap() error             { return e.err }
func (e *pushback) RetryAfter() time.Duration { return e.delay }

// withPushback reads the server's pushback from the call's trailer (gRFC A6):
// a delay of 0 or more is the least wait, a negative or unreadable one means
// "do not retry".
func withPushback(err error, trailer metadata.MD) error {
	v := trailer.Get("grpc-retry-pushback-ms")
	if err == nil || len(v) == 0 {
		return err
	}
	ms, perr := strconv.ParseInt(v[0], 10, 64) // above the largest int64: that, and ErrRange
	if perr != nil && !errors.Is(perr, strconv.ErrRange) || ms < 0 {
		return retry.Permanent(err)
	}
	d := time.Duration(math.MaxInt64) // the longest, for a pushback that no Duration holds
	if ms <= math.MaxInt64/int64(time.Millisecond) {
		d = time.Duration(ms) * time.Millisecond
	}
	return &pushback{err, d}
}

// grpcRetryable retries Unavailable (the server or the connection is down),
// ResourceExhausted only when the server pushed back, and DeadlineExceeded
// only for idempotent calls: the server may have done the work after the
// client stopped waiting.
func grpcRetryable(idempotent bool) func(error) bool {
	return func(err error) bool {
		var pb *pushback
		switch status.Code(err) {
		case codes.Unavailable:
			return true
		case codes.ResourceExhausted:
			return errors.As(err, &pb)
		case codes.DeadlineExceeded:
			return idempotent
		}
		return false
	}
}

// policy is for an idempotent call that a caller waits for.
var policy = retry.Policy{
	MaxAttempts:    4,
	AttemptTimeout: time.Second,
	Timeout:        3 * time.Second,
	MaxDelay:       2 * time.Second, // a longer pushback ends the retries: HintTooLong
	IsRetryable:    grpcRetryable(true),
}

// check asks the server's health service about service, with p.
func check(ctx context.Context, client healthpb.HealthClient, service string, p retry.Policy) (
	*healthpb.HealthCheckResponse, error) {
	return retry.DoValue(ctx, func(ctx context.Context) (*healthpb.HealthCheckResponse, error) {
		var trailer metadata.MD
		req := &healthpb.HealthCheckRequest{Service: service}
		resp, err := client.Check(ctx, req, grpc.Trailer(&trailer))
		return resp, withPushback(err, trailer)
	}, p)
}
