// Package postgres is the README's database-transaction recipe, as the README
// shows it: a money transfer in one SERIALIZABLE transaction of PostgreSQL,
// made with github.com/jackc/pgx/v5, which Do runs again whenever PostgreSQL
// aborts it for a conflict with a concurrent one. Its tests run it against a
// real server that they start themselves.
//
// The recipe needs two tables:
//
//	CREATE TABLE accounts (id bigint PRIMARY KEY, balance bigint NOT NULL);
//	CREATE TABLE transfers (key text PRIMARY KEY); -- one row per transfer made
package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/quietwire/retry"
)

// A transferReq moves amount from one account to another, once per key: the
// caller makes the key once, say a UUID, and passes the same key on every try.
type transferReq struct {
	key      string
	from, to int64
	amount   int64
}

// txPolicy retries a transaction for up to 10s, or to ctx's deadline if nearer.
var txPolicy = retry.Policy{
	MaxAttempts:    math.MaxInt, // as many as the time allows
	BaseDelay:      10 * time.Millisecond,
	MaxDelay:       time.Second,
	AttemptTimeout: 2 * time.Second, // one transaction, from BEGIN to COMMIT
	Timeout:        10 * time.Second,
	IsRetryable:    txRetryable,
}

// A beginner starts transactions: a *pgxpool.Pool, not a lone *pgx.Conn, which
// pgx closes when a ctx cuts a query short, leaving the retry a closed conn.
type beginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// inTx runs fn in a SERIALIZABLE transaction of db, and all of it again
// whenever p allows: PostgreSQL aborts a whole transaction, not a statement.
func inTx(ctx context.Context, db beginner, p retry.Policy,
	fn func(context.Context, pgx.Tx) error) error {
	return retry.Do(ctx, func(ctx context.Context) error {
		opts := pgx.TxOptions{IsoLevel: pgx.Serializable}
		err := pgx.BeginTxFunc(ctx, db, opts, func(tx pgx.Tx) error { return fn(ctx, tx) })
		if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			// such as 57014, when pgx has PostgreSQL cancel the query as ctx ends
			err = fmt.Errorf("%w, as the attempt's ctx ended: %w", err, ctx.Err())
		}
		return err
	}, p)
}

// transfer makes t in one transaction, as many times as p allows.
func transfer(ctx context.Context, db beginner, t transferReq, p retry.Policy) error {
	err := inTx(ctx, db, p, func(ctx context.Context, tx pgx.Tx) error { return move(ctx, tx, t) })
	if isOwnKey(err) {
		return nil // t was made before: a COMMIT's reply was lost, or the caller retried
	}
	return err
}

// move records t's key, which fails if t was made before, then moves the money.
func move(ctx context.Context, tx pgx.Tx, t transferReq) error {
	if _, err := tx.Exec(ctx, "INSERT INTO transfers (key) VALUES ($1)", t.key); err != nil {
		return err
	}
	const add = "UPDATE accounts SET balance = balance + $2 WHERE id = $1"
	if _, err := tx.Exec(ctx, add, t.from, -t.amount); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, add, t.to, t.amount)
	return err
}

// txRetryable reports whether another attempt may succeed where err failed.
func txRetryable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true // the attempt timed out; it may have committed, and the key makes a repeat harmless
	}
	var pgErr *pgconn.PgError // 40001 serialization_failure, 40P01 deadlock_detected
	return errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01")
}

// isOwnKey reports whether err is the unique violation of a transfer's own key.
func isOwnKey(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" &&
		pgErr.ConstraintName == "transfers_pkey"
}
