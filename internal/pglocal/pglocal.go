// Package pglocal starts a throwaway Postgres server: in Docker when a
// Docker engine answers, otherwise from the local Postgres binaries. The test
// harness, `make db` and the gosync command's embedded default all use it.
package pglocal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoPostgres means neither a Docker engine nor local Postgres binaries
// were found. It is never a reason to skip database tests.
var ErrNoPostgres = errors.New("pglocal: no Postgres available: set DATABASE_URL, " +
	"start a Docker engine, or install Debian's postgresql package " +
	"(apt-get install postgresql; `make deps` does it)")

// Server is a running throwaway Postgres. URL connects as a superuser to the
// `postgres` database.
type Server struct {
	URL  string
	stop func() error
}

// Stop shuts the server down and removes its data.
func (s *Server) Stop() error { return s.stop() }

// Start starts a throwaway Postgres: Docker first, local binaries second.
func Start(ctx context.Context) (*Server, error) {
	if s, err := startDocker(ctx); err == nil {
		return s, nil
	}
	bindir, err := FindBinDir()
	if err != nil {
		return nil, err
	}
	return startLocal(ctx, bindir)
}

// FindBinDir returns the directory holding initdb and postgres:
// `pg_config --bindir` first, then Debian's /usr/lib/postgresql/N/bin.
func FindBinDir() (string, error) {
	var candidates []string
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		candidates = append(candidates, strings.TrimSpace(string(out)))
	}
	debian, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Sort(sort.Reverse(sort.StringSlice(debian))) // newest major first (single digits aside)
	candidates = append(candidates, debian...)
	for _, dir := range candidates {
		if isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	return "", ErrNoPostgres
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// waitReady polls until the server accepts a query or ctx/timeout ends.
func waitReady(ctx context.Context, url string, timeout time.Duration, died <-chan error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		conn, err := pgx.Connect(ctx, url)
		if err == nil {
			_, err = conn.Exec(ctx, "SELECT 1")
			conn.Close(ctx)
			if err == nil {
				return nil
			}
		}
		last = err
		select {
		case err := <-died:
			return fmt.Errorf("pglocal: postgres exited during start-up: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("pglocal: postgres not ready after %s: %w", timeout, last)
}
