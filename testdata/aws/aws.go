// Package awsrecipe is the README's AWS SDK recipe: Do around a DynamoDB
// call, with the SDK's own retries off and its classification of errors
// kept. Its tests run it against an httptest server that speaks DynamoDB's
// JSON protocol.
package awsrecipe

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/quietwire/retry"
)

// newClient is a DynamoDB client of cfg without the SDK's own retries (4
// attempts by default; 3 for most clients): one request per attempt of Do.
func newClient(cfg aws.Config) *dynamodb.Client {
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.Retryer = aws.NopRetryer{} })
}

// sdkRetryable is the SDK's own classification: it retries throttling, 5xx
// and connection errors, and refuses a validation error.
var sdkRetryable = awsretry.NewStandard().IsErrorRetryable

// awsRetryable retries what the SDK would, and an attempt cut short by
// AttemptTimeout, which the SDK calls canceled: for idempotent calls.
func awsRetryable(err error) bool {
	return sdkRetryable(err) || errors.Is(err, context.DeadlineExceeded)
}

// policy is for an idempotent call that a caller waits for.
var policy = retry.Policy{
	MaxAttempts:    3,
	AttemptTimeout: time.Second,
	IsRetryable:    awsRetryable,
}

// getItem reads one item with p.
func getItem(ctx context.Context, db *dynamodb.Client, in *dynamodb.GetItemInput, p retry.Policy) (
	*dynamodb.GetItemOutput, error) {
	return retry.DoValue(ctx, func(ctx context.Context) (*dynamodb.GetItemOutput, error) {
		return db.GetItem(ctx, in)
	}, p)
}
