// Package pgtest gives each test its own real Postgres database, cloned from
// a migrated template so a fresh database costs a file copy, not a migration.
//
// The server is DATABASE_URL when set (any superuser URL); otherwise a
// throwaway server from pglocal (Docker, else local binaries), started by
// the first test that asks for a database, shared by the package's tests
// and removed when they end (or when the test binary is interrupted). A
// test binary whose selected tests need no database (a fuzz run's
// coordinator and workers, a -run that matches nothing) starts none. There
// is no skip path: without a server the tests fail with the reason.
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pglocal"
	sqlfiles "github.com/gosync/gosync/sql"
)

// server is the package-wide test server, started on first use. Test
// support is the one place that holds state across tests: the server is
// expensive.
var server struct {
	once     sync.Once
	main     bool // Main is running the tests
	adminURL string
	template string
	err      error
	mu       sync.Mutex
	stop     func() error // nil: DATABASE_URL, or not started
}

// Main runs a test package against a real server. Use it from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// Run is Main without the exit, for a TestMain with cleanup of its own
// after the tests: it returns the exit code.
func Run(m *testing.M) int {
	server.main = true
	code := m.Run()
	if err := stopServer(); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest: stop the throwaway server:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// start brings the server up once, on the first test that needs it. Lazily,
// because a process killed before its deferred cleanup leaves its cluster's
// directory behind: the fuzz coordinator interrupts a worker that takes
// over a second to exit, and every worker ran TestMain (each started a
// cluster no fuzz target used).
func start() error {
	server.once.Do(func() {
		if !server.main {
			server.err = errors.New("pgtest: no server: call pgtest.Main from TestMain")
			return
		}
		ctx := context.Background()
		if url := os.Getenv("DATABASE_URL"); url != "" {
			server.adminURL = url
		} else {
			srv, err := pglocal.Start(ctx)
			if err != nil {
				server.err = fmt.Errorf("pgtest: %w", err)
				return
			}
			server.mu.Lock()
			server.stop = srv.Stop
			server.mu.Unlock()
			server.adminURL = srv.URL
			// Ctrl-C or a SIGTERM of the test binary: remove the cluster
			// before dying (the default action would skip every cleanup).
			sigs := make(chan os.Signal, 1)
			signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
			go func() {
				sig := <-sigs
				_ = stopServer()
				fmt.Fprintf(os.Stderr, "pgtest: %v: stopped the throwaway server\n", sig)
				os.Exit(1)
			}()
		}
		if server.template, server.err = ensureTemplate(ctx, server.adminURL); server.err != nil {
			server.err = fmt.Errorf("pgtest: %w", server.err)
		}
	})
	return server.err
}

// stopServer stops the throwaway server, once; nil when there is none.
func stopServer() error {
	server.mu.Lock()
	stop := server.stop
	server.stop = nil
	server.mu.Unlock()
	if stop == nil {
		return nil
	}
	return stop()
}

// DB is one test's database.
type DB struct {
	Name string
	URL  string
	Pool *pgxpool.Pool
}

// New returns a fresh migrated database for t, dropped when t ends.
func New(t testing.TB) *DB { return newDB(t, true) }

// NewEmpty returns a fresh database with no migrations applied.
func NewEmpty(t testing.TB) *DB { return newDB(t, false) }

// Conn opens a dedicated connection to the test's database, closed when t
// ends: concurrency tests need separate sessions, not a shared pool.
func (d *DB) Conn(t testing.TB) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), d.URL)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// AdminURL is the server's superuser URL (for tests that create roles or
// databases themselves); "" when the server could not start.
func AdminURL() string {
	if start() != nil {
		return ""
	}
	return server.adminURL
}

func newDB(t testing.TB, migrated bool) *DB {
	t.Helper()
	d, drop, err := create(migrated)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	return d
}

// ForExample returns a fresh migrated database for an Example function
// (which has no testing.T) and the function that drops it.
func ForExample() (*DB, func(), error) { return create(true) }

// create makes a database: a clone of the migrated template, or an empty one.
func create(migrated bool) (*DB, func(), error) {
	if err := start(); err != nil {
		return nil, nil, err
	}
	template := "template0"
	if migrated {
		template = server.template
	}
	ctx := context.Background()
	name := "gosync_t_" + randomHex(6)
	if err := withAdmin(ctx, server.adminURL, func(c *pgx.Conn) error {
		return createDatabase(ctx, c, name, template)
	}); err != nil {
		return nil, nil, fmt.Errorf("pgtest: create database: %w", err)
	}
	drop := func() {
		_ = withAdmin(ctx, server.adminURL, func(c *pgx.Conn) error {
			_, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
			return err
		})
	}
	url, err := databaseURL(server.adminURL, name)
	if err != nil {
		drop()
		return nil, nil, err
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		drop()
		return nil, nil, err
	}
	cfg.MaxConns = 16
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		drop()
		return nil, nil, fmt.Errorf("pgtest: pool: %w", err)
	}
	return &DB{Name: name, URL: url, Pool: pool}, func() { pool.Close(); drop() }, nil
}

// ensureTemplate builds (once per migration set, shared by concurrent test
// binaries through an advisory lock) a database holding the migrated schema.
// Its name carries a hash of the migrations, so a changed migration never
// reuses a stale template; is_template marks a finished build.
func ensureTemplate(ctx context.Context, adminURL string) (string, error) {
	sum, err := migrationsHash()
	if err != nil {
		return "", err
	}
	name := "gosync_tmpl_" + sum[:12]
	err = withAdmin(ctx, adminURL, func(c *pgx.Conn) error {
		if _, err := c.Exec(ctx, "SELECT pg_advisory_lock(hashtext('gosync pgtest template'))"); err != nil {
			return err
		}
		defer c.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(hashtext('gosync pgtest template'))")
		var done *bool
		err := c.QueryRow(ctx, "SELECT datistemplate FROM pg_database WHERE datname = $1", name).Scan(&done)
		if err == nil && done != nil && *done {
			return nil
		}
		// Drop half-built templates and test databases left by killed runs.
		if err := dropLeftovers(ctx, c); err != nil {
			return err
		}
		if err := createDatabase(ctx, c, name, "template0"); err != nil {
			return err
		}
		url, err := databaseURL(adminURL, name)
		if err != nil {
			return err
		}
		pool, err := pgxpool.New(ctx, url)
		if err != nil {
			return err
		}
		_, err = gosync.Migrate(ctx, pool)
		pool.Close()
		if err != nil {
			return fmt.Errorf("migrate template: %w", err)
		}
		_, err = c.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH is_template true")
		return err
	})
	return name, err
}

// dropLeftovers removes unfinished templates and test databases older than
// an hour (a concurrent run's databases are younger and stay).
func dropLeftovers(ctx context.Context, c *pgx.Conn) error {
	rows, err := c.Query(ctx, `
		SELECT datname FROM pg_database
		 WHERE (datname LIKE 'gosync\_tmpl\_%' AND NOT datistemplate)
		    OR (datname LIKE 'gosync\_t\_%'
		        AND (pg_stat_file('base/' || oid || '/PG_VERSION')).modification < now() - interval '1 hour')`)
	if err != nil {
		return err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, n := range names {
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{n}.Sanitize()+" WITH (FORCE)"); err != nil {
			return err
		}
	}
	return nil
}

// createDatabase clones template. Postgres refuses a clone while another
// session is connected to the template (SQLSTATE 55006), which concurrent
// test binaries can briefly be: retry.
func createDatabase(ctx context.Context, c *pgx.Conn, name, template string) error {
	sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize() + " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		if _, err = c.Exec(ctx, sql); err == nil {
			return nil
		}
		var pg *pgconn.PgError
		if !errors.As(err, &pg) || pg.Code != "55006" {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

func withAdmin(ctx context.Context, url string, fn func(*pgx.Conn) error) error {
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect %s: %w", redact(url), err)
	}
	defer c.Close(context.WithoutCancel(ctx))
	return fn(c)
}

func databaseURL(adminURL, name string) (string, error) {
	return replaceDatabase(adminURL, name)
}

func migrationsHash() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(sqlfiles.Migrations(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sqlfiles.Migrations(), path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", path, len(b))
		h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil)), err
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
