package pglocal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// startLocal runs initdb and postgres from bindir in a fresh temporary
// directory. initdb refuses to run as root, so as root the cluster runs as the
// `postgres` OS user. The server is a child process with a parent-death
// signal, so it dies with the process that started it even on SIGKILL.
func startLocal(ctx context.Context, bindir string) (*Server, error) {
	sweepStale(os.TempDir())
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	// The owner's pid lets a later start remove the directory of a process
	// killed before its Stop (SIGKILL, a test binary's timeout panic).
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		cleanup()
		return nil, err
	}
	cred, err := runAs(dir)
	if err != nil {
		cleanup()
		return nil, err
	}
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bindir, "initdb"),
		"-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8",
		"--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		cleanup()
		return nil, fmt.Errorf("pglocal: initdb: %v\n%s", err, out)
	}
	// Trust for the superuser the harness uses, passwords for every other
	// role, so tests can exercise real authentication failures.
	hba := "local all all trust\nhost all postgres 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n"
	if err := os.WriteFile(filepath.Join(data, "pg_hba.conf"), []byte(hba), 0o600); err != nil {
		cleanup()
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(filepath.Join(data, "pg_hba.conf"), int(cred.Uid), int(cred.Gid)); err != nil {
			cleanup()
			return nil, err
		}
	}
	port, err := freePort()
	if err != nil {
		cleanup()
		return nil, err
	}
	// Durability is irrelevant for a throwaway cluster; connections are not:
	// the concurrency tests open 64+ at once.
	pg := exec.Command(filepath.Join(bindir, "postgres"), "-D", data,
		"-p", strconv.Itoa(port), "-k", dir,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=300", "-c", "shared_buffers=128MB", "-c", "max_prepared_transactions=10")
	log, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		cleanup()
		return nil, err
	}
	pg.Stdout, pg.Stderr = log, log
	pg.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := pg.Start(); err != nil {
		cleanup()
		return nil, fmt.Errorf("pglocal: start postgres: %w", err)
	}
	died := make(chan error, 1)
	go func() { died <- pg.Wait() }()

	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	var once sync.Once
	var stopErr error
	stop := func() error {
		once.Do(func() {
			// SIGINT is Postgres' fast shutdown: abort sessions, exit cleanly.
			_ = pg.Process.Signal(syscall.SIGINT)
			select {
			case <-died:
			case <-time.After(10 * time.Second):
				_ = pg.Process.Kill()
				<-died
			}
			log.Close()
			stopErr = os.RemoveAll(dir)
		})
		return stopErr
	}
	if err := waitReady(ctx, url, 60*time.Second, died); err != nil {
		logText, _ := os.ReadFile(filepath.Join(dir, "postgres.log"))
		stop()
		return nil, fmt.Errorf("%w\n%s", err, bytes.TrimSpace(logText))
	}
	return &Server{URL: url, stop: stop}, nil
}

// dirPrefix names a throwaway cluster's directory in the temp directory;
// ownerFile in it holds the pid of the process that started it.
const (
	dirPrefix = "gosync-pg-"
	ownerFile = "owner.pid"
)

// sweepStale removes the cluster directories under tmp whose owner and
// postmaster are both gone: what a killed process left. A directory without
// an owner file (another build's, or one being created) is left alone.
func sweepStale(tmp string) {
	dirs, _ := filepath.Glob(filepath.Join(tmp, dirPrefix+"*"))
	for _, dir := range dirs {
		if alive(pidIn(filepath.Join(dir, ownerFile))) != "dead" {
			continue
		}
		if alive(pidIn(filepath.Join(dir, "data", "postmaster.pid"))) == "alive" {
			continue // the postmaster outlived its owner: it is still going down
		}
		_ = os.RemoveAll(dir)
	}
}

// pidIn reads the pid on the first line of a pid file; 0 when there is none.
func pidIn(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	pid, err := strconv.Atoi(string(bytes.TrimSpace(line)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// alive says whether pid is a running process: "alive", "dead", or
// "unknown" (no pid).
func alive(pid int) string {
	if pid <= 0 {
		return "unknown"
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return "dead"
	}
	return "alive"
}

// runAs returns the credentials to run Postgres with: nil for a normal user,
// the `postgres` OS user (owning dir) when running as root.
func runAs(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pglocal: running as root needs the `postgres` OS user (Debian's postgresql package creates it): %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
