//go:build unix

package postgres

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/quietwire/retry"
)

const initialBalance = 1000 // of every account that newDB makes

// TestTransferConcurrent makes transfers from 16 goroutines at once among 4
// accounts, so that PostgreSQL aborts many of them, and checks that each is
// made exactly once.
func TestTransferConcurrent(t *testing.T) {
	const accounts, workers, perWorker = 4, 16, 20
	db := newDB(t, accounts)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	// Random transfers, between two accounts in either order, so that two
	// transactions can each lock the row that the other needs next.
	rng := rand.New(rand.NewPCG(1, 2))
	work := make([][]transferReq, workers)
	wantBalances := slices.Repeat([]int64{initialBalance}, accounts)
	var wantKeys []string
	for w := range work {
		for i := range perWorker {
			from := rng.Int64N(accounts) + 1
			to := (from+rng.Int64N(accounts-1))%accounts + 1 // any account but from
			tr := transferReq{key: fmt.Sprintf("w%02d-%02d", w, i), from: from, to: to, amount: rng.Int64N(100) + 1}
			work[w] = append(work[w], tr)
			wantBalances[from-1] -= tr.amount
			wantBalances[to-1] += tr.amount
			wantKeys = append(wantKeys, tr.key)
		}
	}

	var mu sync.Mutex
	retried := map[string]int{} // failed attempts that Do retried, by SQLSTATE or error
	var failed []string         // transfers that returned an error
	p := txPolicy
	p.OnRetry = func(_ context.Context, _ int, err error, _ time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		retried[sqlState(err)]++
	}
	start := time.Now()
	var wg sync.WaitGroup
	for _, trs := range work {
		wg.Go(func() {
			for _, tr := range trs {
				if err := transfer(ctx, db, tr, p); err != nil {
					mu.Lock()
					failed = append(failed, fmt.Sprintf("transfer(%s) = %v", tr.key, err))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d transfers in %v; retries: %v", len(wantKeys), time.Since(start).Round(time.Millisecond), retried)

	if len(failed) > 0 {
		t.Errorf("%d of %d transfers failed; want none. The first: %s", len(failed), len(wantKeys), failed[0])
	}

	if n := retried["40001"]; n < 1 {
		t.Errorf("retries after 40001 serialization_failure = %d; want at least 1", n)
	}
	// 40P01 comes in most runs, not all: TestTransferDeadlock makes one for sure.
	checkState(t, db, wantBalances, wantKeys)
}

// TestTransferDeadlock makes two transfers in opposite directions wait for
// each other's row lock, so that PostgreSQL aborts one for a deadlock.
func TestTransferDeadlock(t *testing.T) {
	db := newDB(t, 2)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	retried := map[string]int{} // failed attempts that Do retried, by SQLSTATE or error
	p := txPolicy
	p.OnRetry = func(_ context.Context, _ int, err error, _ time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		retried[sqlState(err)]++
	}

	trs := []transferReq{{key: "1-to-2", from: 1, to: 2, amount: 100}, {key: "2-to-1", from: 2, to: 1, amount: 30}}
	updated := []chan struct{}{make(chan struct{}), make(chan struct{})}
	var wg sync.WaitGroup
	for i, tr := range trs {
		waited := false
		// Once only, after the first UPDATE, wait until the other transfer has made its own.
		waitForOther := hookDB{db: db, afterExec: func(ctx context.Context, sql string) error {
			if waited || !strings.HasPrefix(sql, "UPDATE") {
				return nil
			}
			waited = true
			close(updated[i])
			select {
			case <-updated[1-i]:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}}
		wg.Go(func() {
			if err := transfer(ctx, waitForOther, tr, p); err != nil {
				t.Errorf("transfer(%s) = %v; want nil", tr.key, err)
			}
		})
	}
	wg.Wait()

	t.Logf("retries: %v", retried)
	if n := retried["40P01"]; n != 1 {
		t.Errorf("retries after 40P01 deadlock_detected = %d; want 1", n)
	}
	checkState(t, db, []int64{initialBalance - 70, initialBalance + 70}, []string{"1-to-2", "2-to-1"})
}

// TestTransferOtherUniqueViolation checks that a unique violation on another
// constraint than the transfer's key is returned at once, as PostgreSQL gave it.
func TestTransferOtherUniqueViolation(t *testing.T) {
	db := newDB(t, 2)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	mustExec(t, db, "CREATE TABLE invoices (id text PRIMARY KEY)")
	mustExec(t, db, "INSERT INTO invoices (id) VALUES ('inv-1')")

	// Each transaction also records that it paid invoice inv-1, which is paid already.
	payInvoice := hookDB{db: db, commit: func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO invoices (id) VALUES ('inv-1')"); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}}
	p := txPolicy
	var attempts int
	p.OnDone = func(_ context.Context, n int, _ time.Duration, _ error) { attempts = n }
	err := transfer(ctx, payInvoice, transferReq{key: "t-1", from: 1, to: 2, amount: 100}, p)

	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" || pgErr.ConstraintName != "invoices_pkey" {
		t.Errorf("transfer() = %v; want the unique violation (23505) of invoices_pkey", err)
	}
	if attempts != 1 {
		t.Errorf("transfer() attempts = %d; want 1", attempts)
	}
	checkState(t, db, []int64{initialBalance, initialBalance}, nil)
}

// TestTransferCommitReplyLost checks that a transfer whose COMMIT succeeded
// but whose reply was lost is counted as made, once, when the retry finds its
// key, and so is a transfer that the caller tries again.
func TestTransferCommitReplyLost(t *testing.T) {
	db := newDB(t, 2)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	p := txPolicy
	var attempts int
	p.OnDone = func(_ context.Context, n int, _ time.Duration, _ error) { attempts = n }

	var keys []string
	for i := range 3 {
		lost := false
		loseReply := hookDB{db: db, commit: func(ctx context.Context, tx pgx.Tx) error {
			err := tx.Commit(ctx)
			if err == nil && !lost {
				lost = true // the first COMMIT only, as if its attempt timed out just after it
				return fmt.Errorf("commit: reply lost: %w", context.DeadlineExceeded)
			}
			return err
		}}
		tr := transferReq{key: fmt.Sprintf("t-%d", i), from: 1, to: 2, amount: 100}
		keys = append(keys, tr.key)
		if err := transfer(ctx, loseReply, tr, p); err != nil {
			t.Errorf("transfer(%s) = %v; want nil", tr.key, err)
		}
		if attempts != 2 {
			t.Errorf("transfer(%s) attempts = %d; want 2", tr.key, attempts)
		}
	}

	// The caller tries t-0 again, say after a crash: nothing more happens.
	if err := transfer(ctx, db, transferReq{key: "t-0", from: 1, to: 2, amount: 100}, p); err != nil {
		t.Errorf("transfer(t-0) again = %v; want nil", err)
	}
	if attempts != 1 {
		t.Errorf("transfer(t-0) again: attempts = %d; want 1", attempts)
	}
	checkState(t, db, []int64{initialBalance - 300, initialBalance + 300}, keys)
}

// TestTransferDeadline checks that attempts that time out are retried, and
// that the caller's deadline ends the retries.
func TestTransferDeadline(t *testing.T) {
	db := newDB(t, 2)
	holder := holdRow1(t, db) // until the end

	const deadline = 600 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	p := txPolicy
	p.AttemptTimeout = 150 * time.Millisecond
	start := time.Now()
	err := transfer(ctx, db, transferReq{key: "t-1", from: 1, to: 2, amount: 100}, p)
	elapsed := time.Since(start)

	var re *retry.RetryExhausted
	if !errors.As(err, &re) || re.Reason != retry.DeadlineReached {
		t.Fatalf("transfer() = %v; want a *retry.RetryExhausted for DeadlineReached", err)
	}
	if re.Attempts < 2 || !errors.Is(re.Last, context.DeadlineExceeded) {
		t.Errorf("transfer() attempts = %d, last error %v; want at least 2, the last timed out", re.Attempts, re.Last)
	}
	if elapsed > deadline+500*time.Millisecond {
		t.Errorf("transfer() took %v; want at most the deadline, %v, and a little", elapsed, deadline)
	}
	if err := holder.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	checkState(t, db, []int64{initialBalance, initialBalance}, nil)
}

// TestTransferTimedOutAttempt: an attempt that waits on a row lock runs out of
// AttemptTimeout, and the lock is released 300ms in. On a pool the retry succeeds, whether
// pgx closes the timed-out connection (its default) or has PostgreSQL cancel the query, which
// fails with 57014; a 57014 from statement_timeout, not from the attempt's ctx, is not
// retried; on a lone *pgx.Conn, which pgx closes, the retry fails with "conn closed".
func TestTransferTimedOutAttempt(t *testing.T) {
	cancelRequest := func(cfg *pgxpool.Config) {
		cfg.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
			return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: time.Second}
		}
	}
	for _, tt := range []struct {
		name      string
		configure func(*pgxpool.Config)
		conn      bool   // a *pgx.Conn of the pool's config, not the pool
		want      string // SQLSTATE or message of transfer's error; "" for nil
		attempts  int    // the least
	}{
		{"pool, connection closed", nil, false, "", 2},
		{"pool, query cancelled", cancelRequest, false, "", 2},
		{"pool, statement_timeout", func(cfg *pgxpool.Config) {
			cancelRequest(cfg)
			cfg.ConnConfig.RuntimeParams["statement_timeout"] = "100"
		}, false, "57014", 1},
		{"a lone *pgx.Conn", nil, true, "conn closed", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := newDB(t, 2, tt.configure)
			holder := holdRow1(t, db)
			released := make(chan struct{})
			time.AfterFunc(300*time.Millisecond, func() { holder.Rollback(context.Background()); close(released) })
			defer func() { <-released }() // before holdRow1's Rollback: a pgx.Tx is not for concurrent use
			var target beginner = db
			if tt.conn {
				conn, err := pgx.ConnectConfig(t.Context(), db.Config().ConnConfig)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close(context.Background())
				target = conn
			}
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			p, attempts := txPolicy, 1
			p.AttemptTimeout = 200 * time.Millisecond
			p.OnRetry = func(context.Context, int, error, time.Duration) { attempts++ }
			err := transfer(ctx, target, transferReq{key: "t-1", from: 1, to: 2, amount: 100}, p)
			if err != nil && !strings.Contains(sqlState(err), tt.want) || err == nil && tt.want != "" || attempts < tt.attempts {
				t.Errorf("transfer() = %v after %d attempts; want %q after at least %d", err, attempts, tt.want, tt.attempts)
			}
		})
	}
}

// holdRow1 begins a transaction of db that locks account 1's row until it
// ends, rolled back at the end of the test if not before.
func holdRow1(t *testing.T, db *pgxpool.Pool) pgx.Tx {
	holder, err := db.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Rollback(context.Background()) })
	if _, err := holder.Exec(t.Context(), "UPDATE accounts SET balance = balance WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	return holder
}

// hookDB is a beginner whose transactions call afterExec after each Exec that
// succeeds, and commit in place of Commit, where not nil.
type hookDB struct {
	db        beginner
	afterExec func(ctx context.Context, sql string) error
	commit    func(ctx context.Context, tx pgx.Tx) error
}

func (h hookDB) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	tx, err := h.db.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return hookTx{tx, h}, nil
}

type hookTx struct {
	pgx.Tx
	hooks hookDB
}

func (h hookTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := h.Tx.Exec(ctx, sql, args...)
	if err == nil && h.hooks.afterExec != nil {
		err = h.hooks.afterExec(ctx, sql)
	}
	return tag, err
}

func (h hookTx) Commit(ctx context.Context) error {
	if h.hooks.commit != nil {
		return h.hooks.commit(ctx, h.Tx)
	}
	return h.Tx.Commit(ctx)
}

// sqlState returns err's SQLSTATE, or its message if PostgreSQL did not send it.
func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return err.Error()
}

// checkState checks that accounts 1, 2, ... hold balances, and that transfers
// holds the keys in any order.
func checkState(t *testing.T, db *pgxpool.Pool, balances []int64, keys []string) {
	t.Helper()
	ctx := context.Background() // t.Context() may be done by now
	got, err := queryAll[int64](ctx, db, "SELECT balance FROM accounts ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, balances) {
		t.Errorf("balances = %v; want %v", got, balances)
	}
	var sum, wantSum int64
	for i := range got {
		sum += got[i]
		wantSum += initialBalance
	}
	if sum != wantSum {
		t.Errorf("total balance = %d; want %d", sum, wantSum)
	}
	gotKeys, err := queryAll[string](ctx, db, "SELECT key FROM transfers ORDER BY key")
	if err != nil {
		t.Fatal(err)
	}
	if missing, extra := difference(keys, gotKeys), difference(gotKeys, keys); len(missing)+len(extra) > 0 {
		t.Errorf("transfers: %d keys, without %s, with %s more; want %d keys", len(gotKeys), first5(missing), first5(extra), len(keys))
	}
}

// difference returns the elements of a that are not in b.
func difference(a, b []string) []string {
	return slices.DeleteFunc(slices.Clone(a), func(s string) bool { return slices.Contains(b, s) })
}

// first5 shows the first 5 elements of a, and how many others there are.
func first5(a []string) string {
	if len(a) <= 5 {
		return fmt.Sprint(a)
	}
	return fmt.Sprintf("%v and %d others", a[:5], len(a)-5)
}

func queryAll[T any](ctx context.Context, db *pgxpool.Pool, sql string) ([]T, error) {
	rows, err := db.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[T])
}

func mustExec(t *testing.T, db *pgxpool.Pool, sql string) {
	t.Helper()
	if _, err := db.Exec(t.Context(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// newDB returns a pool of connections to a new schema on the test server,
// with the recipe's tables and accounts 1 to n, each holding initialBalance.
func newDB(t *testing.T, accounts int, configure ...func(*pgxpool.Config)) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(serverDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	schema := fmt.Sprintf("test%d", schemas.Add(1))
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.MaxConns = 20 // more than the goroutines of TestTransferConcurrent
	for _, c := range configure {
		if c != nil {
			c(cfg)
		}
	}
	db, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	mustExec(t, db, "CREATE SCHEMA "+schema)
	mustExec(t, db, "CREATE TABLE accounts (id bigint PRIMARY KEY, balance bigint NOT NULL)")
	mustExec(t, db, "CREATE TABLE transfers (key text PRIMARY KEY)")
	mustExec(t, db, fmt.Sprintf("INSERT INTO accounts SELECT generate_series(1, %d), %d", accounts, initialBalance))
	return db
}

var schemas atomic.Int64 // made by newDB, to name the next one

// server is the PostgreSQL server that the first newDB starts and TestMain stops.
var server struct {
	once sync.Once
	dsn  string // keywords and values for pgx.Connect
	stop func()
	skip string // why there is no server, if PostgreSQL cannot run here
	err  error  // why there is no server, if it failed to start
}

func TestMain(m *testing.M) {
	m.Run()
	if server.stop != nil {
		server.stop()
	}
}

// serverDSN starts the test server once, or skips t if it cannot run here.
func serverDSN(t *testing.T) string {
	t.Helper()
	server.once.Do(func() { server.dsn, server.stop, server.skip, server.err = startServer() })
	if server.skip != "" {
		t.Skip(server.skip)
	}
	if server.err != nil {
		t.Fatal(server.err)
	}
	return server.dsn
}

// startServer runs initdb and postgres in a new temporary directory, and
// returns once the server accepts connections, or why it is not running.
func startServer() (dsn string, stop func(), skip string, err error) {
	initdb, postgres, skip := findPostgres()
	if skip != "" {
		return "", nil, skip, nil
	}
	attr, skip := runAs()
	if skip != "" {
		return "", nil, skip, nil
	}
	// Not t.TempDir: the server's socket goes there, and its path is at most 107 bytes.
	dir, err := os.MkdirTemp("", "pg")
	if err != nil {
		return "", nil, "", err
	}
	data := filepath.Join(dir, "data")
	logFile, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err == nil {
		err = chownAll(dir, attr)
	}
	if err == nil {
		err = run(dir, attr, initdb, "-D", data, "--auth=trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync")
	}
	var port int
	if err == nil {
		port, err = freePort()
	}
	if err != nil {
		logFile.Close() // nil if os.Create failed, and Close says so
		os.RemoveAll(dir)
		return "", nil, "", err
	}

	cmd := exec.Command(postgres, "-D", data, "-k", dir, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "deadlock_timeout=50ms", "-c", "fsync=off")
	cmd.Dir, cmd.SysProcAttr, cmd.Stdout, cmd.Stderr = dir, attr, logFile, logFile
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if err := cmd.Start(); err != nil {
		logFile.Close()
		os.RemoveAll(dir)
		return "", nil, "", err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop = func() {
		cmd.Process.Signal(os.Interrupt) // a fast shutdown
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		logFile.Close()
		os.RemoveAll(dir)
	}

	dsn = fmt.Sprintf("host=127.0.0.1 port=%d user=postgres sslmode=disable", port)
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, dsn)
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return dsn, stop, "", nil
		}
		select {
		case <-exited:
			err = errors.New("postgres exited")
		case <-time.After(50 * time.Millisecond): // then try again, up to the deadline
			if time.Now().Before(deadline) {
				continue
			}
			err = fmt.Errorf("postgres accepted no connection in 15s: %w", err)
		}
		log, _ := os.ReadFile(logFile.Name())
		stop()
		return "", nil, "", fmt.Errorf("%w; its log:\n%s", err, log)
	}
}

// findPostgres returns the paths of initdb and postgres, found on PATH or in
// the directory that pg_config --bindir prints, or why they are not there.
func findPostgres() (initdb, postgres, skip string) {
	var dirs []string
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dirs = append(dirs, strings.TrimSpace(string(out)))
	}
	find := func(name string) string {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
		for _, dir := range dirs {
			if path := filepath.Join(dir, name); isExecutable(path) {
				return path
			}
		}
		return ""
	}
	if initdb = find("initdb"); initdb == "" {
		return "", "", "no initdb on PATH nor in pg_config --bindir: PostgreSQL is not installed (apt-get install -y postgresql)"
	}
	postgres = filepath.Join(filepath.Dir(initdb), "postgres") // the same version
	if !isExecutable(postgres) {
		postgres = find("postgres") // or exec fails, naming it
	}
	return initdb, postgres, ""
}

func isExecutable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0
}

// runAs returns how to run initdb and postgres: as root, which PostgreSQL
// refuses, they run as the user postgres, else nobody.
func runAs() (attr *syscall.SysProcAttr, skip string) {
	if os.Geteuid() != 0 {
		return nil, ""
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 == nil && err2 == nil {
			return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}, ""
		}
	}
	return nil, "running as root, which PostgreSQL refuses, and there is no user postgres or nobody to run it as"
}

// chownAll gives dir and all it holds to the user of attr, if any.
func chownAll(dir string, attr *syscall.SysProcAttr) error {
	if attr == nil {
		return nil
	}
	uid, gid := int(attr.Credential.Uid), int(attr.Credential.Gid)
	return filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chown(path, uid, gid)
	})
}

// run runs a command in dir to its end, and returns its output in the error if it fails.
func run(dir string, attr *syscall.SysProcAttr, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.SysProcAttr = dir, attr
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v\n%s", cmd, err, out)
	}
	return nil
}

// freePort returns a TCP port on 127.0.0.1 that nothing listens on, for now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
