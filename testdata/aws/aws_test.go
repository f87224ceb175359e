package awsrecipe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/quietwire/retry"
)

// reply is how the server answers one request: an error of DynamoDB's JSON
// protocol with a status and a type, a connection closed before any answer,
// a hang until the client leaves, or the item.
type reply struct {
	status  int    // 200: the item
	errType string // the error's __type after the '#'
	closed  bool
	hang    bool
}

// server is a DynamoDB endpoint that answers GetItem as scripted, the last
// reply for every request after the script, and counts the requests.
type server struct {
	script []reply

	mu       sync.Mutex
	requests int
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body) // then the server sees the client leave
	s.mu.Lock()
	s.requests++
	rep := s.script[min(s.requests, len(s.script))-1]
	s.mu.Unlock()
	// A request that the SDK did not sign with the test's key, or not for
	// GetItem, gets what DynamoDB answers it, which no row expects.
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKID/") ||
		r.Header.Get("X-Amz-Target") != "DynamoDB_20120810.GetItem" {
		rep = reply{status: http.StatusBadRequest, errType: "UnknownOperationException"}
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	switch {
	case rep.closed:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	case rep.hang:
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	case rep.status != http.StatusOK:
		w.WriteHeader(rep.status)
		fmt.Fprintf(w, `{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":"%s"}`, rep.errType, rep.errType)
	default:
		fmt.Fprint(w, `{"Item":{"id":{"S":"1"},"name":{"S":"one"}}}`)
	}
}

// TestAWS runs the README's recipe with the real SDK against a server that
// speaks DynamoDB's protocol: which errors it retries, one request per
// attempt, and what Do returns.
func TestAWS(t *testing.T) {
	const ms = time.Millisecond
	throttled := reply{status: 400, errType: "ThrottlingException"}
	invalid := reply{status: 400, errType: "ValidationException"}
	internal := reply{status: 500, errType: "InternalServerError"}
	unavailable := reply{status: 503, errType: "ServiceUnavailable"}
	closed, hang, item := reply{closed: true}, reply{hang: true}, reply{status: 200}
	for _, tt := range []struct {
		name       string
		script     []reply
		ctxTimeout time.Duration // the caller's; 0 for none
		requests   int
		reason     retry.Reason // of the *RetryExhausted that getItem returns; 0 for none
		code       string       // the API error code of what getItem returns; "" for none
		deadline   bool         // whether getItem's error is context.DeadlineExceeded
		sdkRetries bool         // the client keeps the SDK's own retryer, as newClient does not
	}{
		{"an item at once", []reply{item}, 0, 1, 0, "", false, false},
		{"a ThrottlingException (400) is retried", []reply{throttled, item}, 0, 2, 0, "", false, false},
		{"a 500 is retried", []reply{internal, item}, 0, 2, 0, "", false, false},
		{"a 503 is retried", []reply{unavailable, item}, 0, 2, 0, "", false, false},
		{"a connection closed before the answer is retried", []reply{closed, item}, 0, 2, 0, "", false, false},
		{"an answer slower than AttemptTimeout is retried", []reply{hang, item}, 0, 2, 0, "", false, false},
		{"a ValidationException (400) is returned as it is", []reply{invalid, item}, 0, 1, 0, "ValidationException", false, false},
		{"a 500 throughout: one request per attempt", []reply{internal}, 0, 3, retry.MaxAttemptsReached, "InternalServerError", false, false},
		{"a 500 throughout, with the SDK's retryer: 4 requests per attempt", []reply{internal}, 0, 12, retry.MaxAttemptsReached,
			"InternalServerError", false, true},
		{"the caller's deadline ends the retries", []reply{hang}, 30 * ms, 1, retry.DeadlineReached, "", true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &server{script: tt.script}
			srv := httptest.NewServer(s)
			defer srv.Close()
			// A Config of its own: no shared config file or environment variable is read.
			cfg := aws.Config{
				Region:       "us-east-1",
				BaseEndpoint: aws.String(srv.URL),
				Credentials:  credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
			}
			db := newClient(cfg)
			if tt.sdkRetries {
				db = dynamodb.NewFromConfig(cfg)
			}
			ctx := t.Context()
			if tt.ctxTimeout != 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.ctxTimeout)
				defer cancel()
			}
			p := policy
			p.BaseDelay, p.MaxDelay = ms, 2*ms // the recipe's Policy, faster
			if slices.Contains(tt.script, hang) {
				p.AttemptTimeout = 100 * ms // others keep a second: the SDK's own retries would fit in it
			}
			in := &dynamodb.GetItemInput{
				TableName: aws.String("things"),
				Key:       map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "1"}},
			}
			out, err := getItem(ctx, db, in, p)

			var re *retry.RetryExhausted
			if errors.As(err, &re) != (tt.reason != 0) || re != nil && re.Reason != tt.reason {
				t.Errorf("getItem() = %v; want a *RetryExhausted with %v: %v", err, tt.reason, tt.reason != 0)
			}
			attempts := tt.requests // one request per attempt of Do, or the SDK's 4
			if tt.sdkRetries {
				attempts /= 4
			}
			if re != nil && re.Attempts != attempts {
				t.Errorf("getItem() attempts = %d; want %d", re.Attempts, attempts)
			}
			code := ""
			if apiErr := smithy.APIError(nil); errors.As(err, &apiErr) {
				code = apiErr.ErrorCode()
			}
			if code != tt.code {
				t.Errorf("getItem() = %v: code %q; want code %q", err, code, tt.code)
			}
			if errors.Is(err, context.DeadlineExceeded) != tt.deadline {
				t.Errorf("getItem() = %v; want context.DeadlineExceeded: %v", err, tt.deadline)
			}
			var name string
			if out != nil {
				if v, ok := out.Item["name"].(*types.AttributeValueMemberS); ok {
					name = v.Value
				}
			}
			if (err == nil) != (name == "one") {
				t.Errorf("getItem() = %q, %v; want the item's name %q without an error", name, err, "one")
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.requests != tt.requests {
				t.Errorf("requests = %d; want %d", s.requests, tt.requests)
			}
		})
	}
}
