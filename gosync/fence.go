package gosync

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"

	sqlfiles "github.com/gosync/gosync/sql"
)

// FenceBody says whose body upstream's fence function syncular_writer_fence()
// has. Since migration 00025 gosync's fence and head rule are
// sync_commits_writer_guard(), fired by gosync's own trigger, which an
// upstream 0.23 boot leaves alone; the boot re-creates syncular_writer_fence()
// with upstream's body (a second check of the fence), so either body keeps
// every rule. Another body is an owner's edit (sync_security_audit fails it).
type FenceBody string

// The bodies syncular_writer_fence() may have, as sync_security_audit names them.
const (
	FenceBodyGosync   FenceBody = "gosync's body"
	FenceBodyUpstream FenceBody = "upstream's body"
	FenceBodyOther    FenceBody = "another body"
	FenceBodyNone     FenceBody = "" // a database before 00025 (the rules are still in syncular_writer_fence)
)

// fenceBodyQuery reads the audit's row for the fence function: ok is
// gosync's body, info upstream's, warn another. Only asked when
// hasGuardQuery is true (a database from 00025 on).
const (
	hasGuardQuery  = `SELECT to_regprocedure('sync_commits_writer_guard()') IS NOT NULL AND to_regprocedure('sync_security_audit()') IS NOT NULL`
	fenceBodyQuery = `SELECT (SELECT a.severity FROM sync_security_audit() a WHERE a.check_name = 'fence function syncular_writer_fence' LIMIT 1)`
)

// scanRow is a pgx row or a database/sql one.
type scanRow interface{ Scan(dest ...any) error }

func readFenceBody(query func(string) scanRow) (FenceBody, error) {
	var has bool
	if err := query(hasGuardQuery).Scan(&has); err != nil {
		return FenceBodyNone, MapError(err)
	}
	if !has {
		return FenceBodyNone, nil
	}
	var severity sql.NullString
	if err := query(fenceBodyQuery).Scan(&severity); err != nil {
		return FenceBodyNone, MapError(err)
	}
	return fenceBodyOf(severity), nil
}

func fenceBodyOf(severity sql.NullString) FenceBody {
	switch {
	case !severity.Valid:
		return FenceBodyNone
	case severity.String == "ok":
		return FenceBodyGosync
	case severity.String == "info":
		return FenceBodyUpstream
	default:
		return FenceBodyOther
	}
}

// FenceFunction reports whose body syncular_writer_fence() has (reads the
// audit: sync_reader may call it).
func (s *Store) FenceFunction(ctx context.Context) (FenceBody, error) {
	return readFenceBody(func(q string) scanRow { return s.conn.QueryRow(ctx, q) })
}

// FenceFunction reports whose body syncular_writer_fence() has now; after
// Up or UpTo, RestoredFenceBody says what they found and replaced.
func (m *Migrator) FenceFunction(ctx context.Context) (FenceBody, error) {
	return readFenceBody(func(q string) scanRow { return m.db.QueryRowContext(ctx, q) })
}

// RestoredFenceBody is the body the last Up/UpTo/Down/DownTo found in
// syncular_writer_fence() and replaced with gosync's (FenceBodyNone when it
// had gosync's already, or before 00025).
func (m *Migrator) RestoredFenceBody() FenceBody { return m.restoredFence }

// restoreFenceBody re-creates gosync's syncular_writer_fence() (its canonical
// file, as the migrations install it) where an upstream boot or an owner's
// edit replaced it, on the migration connection (the owner role, under the
// migration lock). CREATE OR REPLACE keeps the owner and grants; gosync's
// body has no SECURITY or SET clause to re-apply, so the definition is the
// recorded one again.
func restoreFenceBody(ctx context.Context, conn *sql.Conn) (FenceBody, error) {
	found, err := readFenceBody(func(q string) scanRow { return conn.QueryRowContext(ctx, q) })
	if err != nil {
		return FenceBodyNone, fmt.Errorf("gosync: migrate: reading the fence function: %w", err)
	}
	if found == FenceBodyNone || found == FenceBodyGosync {
		return FenceBodyNone, nil
	}
	body, err := fs.ReadFile(sqlfiles.Functions(), "syncular_writer_fence.sql")
	if err != nil {
		return FenceBodyNone, fmt.Errorf("gosync: migrate: restoring the fence function: %w", err)
	}
	stmt := "DO $do$ BEGIN EXECUTE replace($fn$\n" + string(body) + "$fn$, '@extschema@', quote_ident(current_schema())); END $do$;"
	if _, err := conn.ExecContext(ctx, stmt); err != nil {
		return FenceBodyNone, fmt.Errorf("gosync: migrate: restoring gosync's syncular_writer_fence(): %w", MapError(err))
	}
	return found, nil
}

// guardQuery: true unless gosync's fence function exists (00025 on) without
// its enabled trigger. Whose body syncular_writer_fence() has does not
// matter here: an upstream boot's body keeps every rule (the guard holds
// them), so a shared database starts.
const guardQuery = `SELECT to_regprocedure('sync_commits_writer_guard()') IS NULL
	OR EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t
	            WHERE t.tgrelid = to_regclass('sync_commits') AND t.tgname = 'sync_commits_writer_guard'
	              AND t.tgfoid = to_regprocedure('sync_commits_writer_guard()') AND t.tgenabled IN ('O', 'A'))`

// checkFenceGuard refuses to start over a database whose fence and head
// rule are switched off (ErrFenceGuardMissing).
func (s *Store) checkFenceGuard(ctx context.Context) error {
	var ok bool
	if err := s.conn.QueryRow(ctx, guardQuery).Scan(&ok); err != nil {
		return MapError(err)
	}
	if !ok {
		return ErrFenceGuardMissing
	}
	return nil
}
