package gosync

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
	"github.com/pressly/goose/v3/lock"

	sqlfiles "github.com/gosync/gosync/sql"
)

// DefaultVersionTable records gosync's migrations. It is not goose's default
// (goose_db_version), which stays the application's own.
const DefaultVersionTable = "gosync_db_version"

// DefaultLockTimeout bounds how long Up and Down wait for the migration lock
// held by another session.
const DefaultLockTimeout = 2 * time.Minute

// MigrateOption configures NewMigrator, Migrate and GrantVersionTable. An
// option checks its value when applied: a bad one is ErrInvalidArgument
// from the call it is given to, before anything touches the database.
type MigrateOption interface {
	apply(*migrateConfig) error
}

type migrateOptionFunc func(*migrateConfig) error

func (f migrateOptionFunc) apply(c *migrateConfig) error { return f(c) }

type migrateConfig struct {
	versionTable       string
	owner              string
	lockTimeout        time.Duration
	foreignSchemaOwner bool
}

// newMigrateConfig applies opts, in order, to the defaults: the one place
// options are parsed (Migrate goes through NewMigrator).
func newMigrateConfig(opts []MigrateOption) (migrateConfig, error) {
	cfg := migrateConfig{versionTable: DefaultVersionTable, lockTimeout: DefaultLockTimeout}
	for i, opt := range opts {
		if opt == nil {
			return cfg, fmt.Errorf("%w: migrate option %d is nil", ErrInvalidArgument, i)
		}
		if err := opt.apply(&cfg); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// validName: a role name Postgres can hold (it truncates beyond 63 bytes,
// which would name another role).
func validName(s string) bool {
	return s != "" && len(s) <= 63 && !strings.ContainsRune(s, 0)
}

// WithVersionTable records gosync's migrations in table (a plain lower-case
// identifier in the current schema) instead of DefaultVersionTable.
func WithVersionTable(table string) MigrateOption {
	return migrateOptionFunc(func(c *migrateConfig) error {
		if !plainIdentifier.MatchString(table) {
			return fmt.Errorf("%w: version table %q is not a plain lower-case identifier", ErrInvalidArgument, table)
		}
		c.versionTable = table
		return nil
	})
}

// WithOwner makes role the owner of every object the migrations create or
// adopt: Up and Down run as role (SET ROLE, so the migrating login must be a
// member of it), and refuse objects under gosync names owned by anyone else.
// Without it the owner role is the migrating login itself. A NOLOGIN role
// that owns the schema too, with no service logging in as it or as a member,
// is the deployment SECURITY.md recommends.
func WithOwner(role string) MigrateOption {
	return migrateOptionFunc(func(c *migrateConfig) error {
		if !validName(role) {
			return fmt.Errorf("%w: owner role %q is empty, too long or not valid text", ErrInvalidArgument, role)
		}
		c.owner = role
		return nil
	})
}

// WithLockTimeout bounds the wait for the migration lock (DefaultLockTimeout
// without it; 0 tries once). A lock held by a prepared transaction, which
// never ends by itself, fails at once. Either way the *MigrationLockError
// names the holder.
func WithLockTimeout(d time.Duration) MigrateOption {
	return migrateOptionFunc(func(c *migrateConfig) error {
		if d < 0 {
			return fmt.Errorf("%w: lock timeout %s is negative", ErrInvalidArgument, d)
		}
		c.lockTimeout = d
		return nil
	})
}

// WithForeignSchemaOwner lets Up and Down run in a schema whose owner is
// neither the owner role nor a superuser; without it they refuse with
// ErrSchemaOwner, because that owner (on Postgres 15, for `public`, the
// database's owner) can drop gosync's functions and tables. The database
// then raises a warning instead.
func WithForeignSchemaOwner() MigrateOption {
	return migrateOptionFunc(func(c *migrateConfig) error {
		c.foreignSchemaOwner = true
		return nil
	})
}

// goose writes the version table's name into its SQL as is.
var plainIdentifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Migrator runs gosync's embedded migrations on a database: the same files
// the goose CLI applies from sql/migrations, recorded in gosync's own
// version table. Constructing it and its read-only verbs (Status,
// GetVersions, GetDBVersion, ListSources) write nothing: no version table
// is created, no history carried over, no upstream database adopted. The
// verbs that migrate (Up, UpTo, Down, DownTo) first take the migration lock
// (bounded, see WithLockTimeout), become the owner role, and then, in one
// transaction, check ownership (refusing, before anything runs, objects under
// gosync names owned by another role and a schema owned by another role),
// copy an earlier gosync build's history out of goose_db_version, and adopt
// an upstream database; only then does goose run the migrations. Close it
// when done; it does not close the pool.
type Migrator struct {
	cfg     migrateConfig
	db      *sql.DB
	p       *goose.Provider
	sources []*goose.Source
	// restoredFence: the body the last migrating verb replaced in
	// syncular_writer_fence() (restoreFenceBody).
	restoredFence FenceBody
}

// NewMigrator returns a Migrator over the pool's database. It writes nothing.
func NewMigrator(ctx context.Context, pool *pgxpool.Pool, opts ...MigrateOption) (*Migrator, error) {
	cfg, err := newMigrateConfig(opts)
	if err != nil {
		return nil, err
	}
	m := &Migrator{cfg: cfg, db: stdlib.OpenDBFromPool(pool)}
	p, err := goose.NewProvider(goose.DialectPostgres, m.db, sqlfiles.Migrations(),
		goose.WithSessionLocker(&migrationSession{m: m}), goose.WithTableName(cfg.versionTable))
	if err != nil {
		m.db.Close()
		return nil, fmt.Errorf("gosync: migrations: %w", err)
	}
	m.p = p
	m.sources = p.ListSources()
	return m, nil
}

// Close releases the migrator's database handle (not the pool).
func (m *Migrator) Close() error { return m.p.Close() }

// ListSources lists the embedded migrations.
func (m *Migrator) ListSources() []*goose.Source { return m.p.ListSources() }

// Up applies every pending migration.
func (m *Migrator) Up(ctx context.Context) (r []*goose.MigrationResult, err error) {
	err = m.migrating(ctx, func() (err error) { r, err = m.p.Up(ctx); return err })
	return r, err
}

// UpTo applies the pending migrations up to version.
func (m *Migrator) UpTo(ctx context.Context, version int64) (r []*goose.MigrationResult, err error) {
	err = m.migrating(ctx, func() (err error) { r, err = m.p.UpTo(ctx, version); return err })
	return r, err
}

// Down rolls back the latest migration.
func (m *Migrator) Down(ctx context.Context) (r *goose.MigrationResult, err error) {
	err = m.migrating(ctx, func() (err error) { r, err = m.p.Down(ctx); return err })
	return r, err
}

// DownTo rolls back the migrations above version.
func (m *Migrator) DownTo(ctx context.Context, version int64) (r []*goose.MigrationResult, err error) {
	err = m.migrating(ctx, func() (err error) { r, err = m.p.DownTo(ctx, version); return err })
	return r, err
}

// migrating runs fn (a goose verb) under the migration lock, held on a
// connection of its own for the whole run, after the prepare transaction on
// that connection. goose's own steps that run before its locker (HasPending
// creates a missing version table) then find the table prepare made, as the
// owner role, after the checks: a refusal leaves nothing behind.
func (m *Migrator) migrating(ctx context.Context, fn func() error) (err error) {
	conn, err := m.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("gosync: migrate: %w", err)
	}
	defer conn.Close()
	if err := acquireMigrationLock(ctx, conn, m.cfg.lockTimeout); err != nil {
		return err
	}
	defer func() {
		done := context.WithoutCancel(ctx)
		if err == nil {
			err = grantVersionTable(done, conn, m.cfg.versionTable)
		}
		err = errors.Join(err, releaseMigrationLock(done, conn))
	}()
	if err := becomeOwner(ctx, conn, m.cfg.owner); err != nil {
		return err
	}
	if err := m.prepare(ctx, conn); err != nil {
		return err
	}
	start := time.Now()
	m.restoredFence = FenceBodyNone
	defer func() {
		// gosync's fence function back where an upstream boot replaced it
		// (its rules are sync_commits_writer_guard's either way).
		if err == nil {
			m.restoredFence, err = restoreFenceBody(ctx, conn)
		}
	}()
	if err := fn(); err != nil {
		var pg *pgconn.PgError
		if !errors.As(err, &pg) || pg.Code != "55P03" {
			return err
		}
		holders, herr := syncTableLockHolders(ctx, conn, m.cfg.versionTable)
		return errors.Join(&MigrationLockError{What: "a lock on the sync tables", Holders: holders,
			Waited: time.Since(start), Cause: err}, herr)
	}
	return nil
}

// becomeOwner makes the session the owner role (nothing without WithOwner:
// the login is the owner role).
func becomeOwner(ctx context.Context, conn *sql.Conn, owner string) error {
	if owner == "" {
		return nil
	}
	if _, err := conn.ExecContext(ctx, "SET ROLE "+pgx.Identifier{owner}.Sanitize()); err != nil {
		return fmt.Errorf("%w: cannot become the owner role %s (the migrating login must be a member of it): %v",
			ErrForeignOwner, owner, err)
	}
	return nil
}

// Migrate applies every pending migration and returns the database's version.
// Existing sync tables of an incompatible shape fail with ErrCannotAdopt;
// objects owned by another role with ErrForeignOwner, ErrSchemaOwner or
// ErrCannotTakeOwnership; a migration lock held elsewhere with a
// *MigrationLockError. Nothing is changed by a refusal.
func Migrate(ctx context.Context, pool *pgxpool.Pool, opts ...MigrateOption) (int64, error) {
	m, err := NewMigrator(ctx, pool, opts...)
	if err != nil {
		return 0, err
	}
	defer m.Close()
	if _, err := m.Up(ctx); err != nil {
		return 0, fmt.Errorf("gosync: migrate up: %w", MapError(err))
	}
	return m.GetDBVersion(ctx)
}

// GrantVersionTable lets sync_reader, and so every sync_* role, read the
// version table: `gosync status` and `migrate status` check the migration
// version, and a monitoring login is not the table's owner. Up and Down do
// it themselves, as the owner role; it is kept for callers that ran goose
// otherwise. It does nothing before the table and the roles (migration
// 00006) exist.
func GrantVersionTable(ctx context.Context, pool *pgxpool.Pool, opts ...MigrateOption) error {
	cfg, err := newMigrateConfig(opts)
	if err != nil {
		return err
	}
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	return grantVersionTable(ctx, db, cfg.versionTable)
}

type queryExecer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func grantVersionTable(ctx context.Context, q queryExecer, table string) error {
	var ready bool
	if err := q.QueryRowContext(ctx, `SELECT to_regclass(quote_ident($1)) IS NOT NULL
		AND EXISTS (SELECT FROM pg_roles WHERE rolname = 'sync_reader')`, table).Scan(&ready); err != nil {
		return fmt.Errorf("gosync: version table: %w", err)
	}
	if !ready {
		return nil
	}
	// A checked plain identifier, never caller text as such.
	if _, err := q.ExecContext(ctx, "GRANT SELECT ON "+pgx.Identifier{table}.Sanitize()+" TO sync_reader"); err != nil {
		return fmt.Errorf("gosync: let sync_reader read %s: %w", table, err)
	}
	return nil
}

// ---- Read-only verbs: plain reads of the history, no lock, no DDL ----

// appliedRow is one version the history records: goose counts a version
// applied when its table has a row for it (Down deletes the row).
type appliedRow struct {
	version int64
	at      time.Time
}

// history reads the applied versions from the version table, or, when that
// records nothing and goose_db_version holds an earlier gosync build's
// history (what Up would carry over), from there: the answer Up would give
// without writing it. No table: nothing applied.
func (m *Migrator) history(ctx context.Context) ([]appliedRow, error) {
	table := m.cfg.versionTable
	tx, err := m.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("gosync: version table: %w", err)
	}
	defer tx.Rollback()
	carried, err := legacyHistoryApplies(ctx, tx, table, m.sources)
	if err != nil {
		return nil, err
	}
	if carried {
		table = legacyVersionTable
	}
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = $1)`,
		table).Scan(&exists); err != nil {
		return nil, fmt.Errorf("gosync: version table: %w", err)
	}
	if !exists {
		return nil, nil
	}
	// goose's own reading: the newest row of each version.
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT ON (version_id) version_id, tstamp FROM `+
		pgx.Identifier{table}.Sanitize()+` ORDER BY version_id, tstamp DESC`)
	if err != nil {
		return nil, fmt.Errorf("gosync: read %s: %w", table, err)
	}
	defer rows.Close()
	var out []appliedRow
	for rows.Next() {
		var r appliedRow
		if err := rows.Scan(&r.version, &r.at); err != nil {
			return nil, fmt.Errorf("gosync: read %s: %w", table, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("gosync: read %s: %w", table, err)
	}
	return out, nil
}

// Status lists every migration, applied or pending. It writes nothing.
func (m *Migrator) Status(ctx context.Context) ([]*goose.MigrationStatus, error) {
	h, err := m.history(ctx)
	if err != nil {
		return nil, err
	}
	at := map[int64]time.Time{}
	for _, r := range h {
		at[r.version] = r.at
	}
	out := make([]*goose.MigrationStatus, len(m.sources))
	for i, s := range m.sources {
		st := &goose.MigrationStatus{Source: s, State: goose.StatePending}
		if t, ok := at[s.Version]; ok {
			st.State, st.AppliedAt = goose.StateApplied, t
		}
		out[i] = st
	}
	return out, nil
}

// GetDBVersion is the highest version the history records (0: none). It
// writes nothing.
func (m *Migrator) GetDBVersion(ctx context.Context) (int64, error) {
	h, err := m.history(ctx)
	if err != nil {
		return 0, err
	}
	var v int64
	for _, r := range h {
		v = max(v, r.version)
	}
	return v, nil
}

// GetVersions is the database's version and the newest embedded one. It
// writes nothing.
func (m *Migrator) GetVersions(ctx context.Context) (current, target int64, err error) {
	if current, err = m.GetDBVersion(ctx); err != nil {
		return 0, 0, err
	}
	for _, s := range m.sources {
		target = max(target, s.Version)
	}
	return current, target, nil
}

// ---- The migration session: lock, owner role, checks, carry-over, adoption ----

// migrationSession is goose's session locker: the migration lock itself is
// held by Migrator.migrating on its own connection; on goose's connection
// this only becomes the owner role, so everything the migrations create is
// the owner role's, and leaves it again before the connection returns to the
// pool.
type migrationSession struct{ m *Migrator }

var _ lock.SessionLocker = (*migrationSession)(nil)

func (s *migrationSession) SessionLock(ctx context.Context, conn *sql.Conn) error {
	if err := becomeOwner(ctx, conn, s.m.cfg.owner); err != nil {
		return err
	}
	// The migrations' own DDL waits for the sync tables' locks, which any
	// reader can hold (in a prepared transaction, for good): bound it like
	// the migration lock, and name the holders when it gives up (migrating).
	if _, err := conn.ExecContext(ctx, "SELECT set_config('lock_timeout', $1, false)",
		fmt.Sprintf("%dms", max(s.m.cfg.lockTimeout.Milliseconds(), 1))); err != nil {
		return fmt.Errorf("gosync: migrate: %w", err)
	}
	// Migration 00017 runs the same check as prepare, with the same settings.
	if err := checkSettings(ctx, conn, s.m.cfg, false); err != nil {
		_, _ = conn.ExecContext(ctx, "RESET ROLE") // goose only closes the connection
		return err
	}
	return nil
}

func (s *migrationSession) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx, "RESET ROLE; RESET lock_timeout; RESET gosync.version_table; RESET gosync.allow_foreign_schema_owner")
	return err
}

// checkSettings passes the version table and WithForeignSchemaOwner to the
// ownership check (00017), for the transaction (local) or the session.
func checkSettings(ctx context.Context, q queryExecer, cfg migrateConfig, local bool) error {
	allow := "off"
	if cfg.foreignSchemaOwner {
		allow = "on"
	}
	if _, err := q.ExecContext(ctx, `SELECT set_config('gosync.version_table', $1, $3),
		set_config('gosync.allow_foreign_schema_owner', $2, $3)`, cfg.versionTable, allow, local); err != nil {
		return fmt.Errorf("gosync: migrate: %w", err)
	}
	return nil
}

// migrationLockID is goose's own lock id, so gosync's migrators and any
// goose Provider with the default locker serialize.
const migrationLockID = lock.DefaultLockID

// releaseMigrationLock leaves the owner role and the lock: the connection
// goes back to the pool.
func releaseMigrationLock(ctx context.Context, conn *sql.Conn) error {
	_, resetErr := conn.ExecContext(ctx, "RESET ROLE")
	var unlocked bool
	err := conn.QueryRowContext(ctx, "SELECT pg_advisory_unlock($1)", migrationLockID).Scan(&unlocked)
	if err == nil && !unlocked {
		err = errors.New("the migration lock was not held")
	}
	if err != nil {
		err = fmt.Errorf("gosync: release the migration lock: %w", err)
	}
	return errors.Join(resetErr, err)
}

// prepare is the one transaction in front of goose: carry the history over,
// adopt an upstream database (taking its objects for the owner role), check
// that every object under a gosync name is the owner role's and that the
// schema's owner cannot bypass (migration 00017's check), and create the
// version table. A refusal rolls all of it back.
func (m *Migrator) prepare(ctx context.Context, conn *sql.Conn) error {
	cfg := m.cfg
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("gosync: migrate: %w", err)
	}
	defer tx.Rollback()
	if err := checkSettings(ctx, tx, cfg, true); err != nil {
		return err
	}
	if err := carryOverHistory(ctx, tx, cfg.versionTable, m.sources); err != nil {
		return err
	}
	if err := adoptUpstream(ctx, tx, cfg.versionTable); err != nil {
		return err
	}
	check, err := ownershipCheck()
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, check); err != nil {
		return MapError(err)
	}
	if err := ensureVersionTable(ctx, tx, cfg.versionTable); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("gosync: migrate: %w", err)
	}
	return nil
}

// ensureVersionTable creates the version table with goose's DDL and its
// version-0 row, as goose would, when it is missing.
func ensureVersionTable(ctx context.Context, tx *sql.Tx, table string) error {
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = $1)`,
		table).Scan(&exists); err != nil || exists {
		return err
	}
	store, err := database.NewStore(database.DialectPostgres, table)
	if err != nil {
		return fmt.Errorf("gosync: version table: %w", err)
	}
	if err := store.CreateVersionTable(ctx, tx); err != nil {
		return fmt.Errorf("gosync: create %s: %w", table, err)
	}
	if err := store.Insert(ctx, tx, database.InsertRequest{Version: 0}); err != nil {
		return fmt.Errorf("gosync: create %s: %w", table, err)
	}
	return nil
}

// ownershipMigration holds the ownership check, one DO block that the goose
// CLI runs as a migration and Up runs before every migration.
const ownershipMigration = "00017_ownership.sql"

// ownershipCheck is that DO block, read from the migration itself.
func ownershipCheck() (string, error) {
	b, err := fs.ReadFile(sqlfiles.Migrations(), ownershipMigration)
	if err != nil {
		return "", fmt.Errorf("gosync: %s: %w", ownershipMigration, err)
	}
	_, rest, ok1 := strings.Cut(string(b), "-- +goose StatementBegin\n")
	block, _, ok2 := strings.Cut(rest, "-- +goose StatementEnd")
	if !ok1 || !ok2 {
		return "", fmt.Errorf("gosync: %s has no statement block", ownershipMigration)
	}
	return block, nil
}

// ---- The migration lock ----

// acquireMigrationLock takes goose's session advisory lock on conn, waiting
// at most timeout. Any login can hold that lock (advisory locks need no
// privilege), even in a prepared transaction, which survives restarts and
// never ends by itself: then it fails at once. The error names the holder.
func acquireMigrationLock(ctx context.Context, conn *sql.Conn, timeout time.Duration) error {
	start := time.Now()
	for {
		var locked bool
		if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1)", migrationLockID).Scan(&locked); err != nil {
			return fmt.Errorf("gosync: take the migration lock: %w", err)
		}
		if locked {
			return nil
		}
		holders, err := migrationLockHolders(ctx, conn)
		if err != nil {
			return err
		}
		waited := time.Since(start)
		prepared := false
		for _, h := range holders {
			prepared = prepared || h.PreparedGID != ""
		}
		if prepared || waited >= timeout {
			return &MigrationLockError{Holders: holders, Waited: waited}
		}
		select {
		case <-ctx.Done():
			return &MigrationLockError{Holders: holders, Waited: waited, Cause: ctx.Err()}
		case <-time.After(min(250*time.Millisecond, timeout-waited)):
		}
	}
}

// migrationLockHolders reads who holds the lock: pg_locks shows a prepared
// transaction's locks with no pid; its transactionid lock, under the same
// virtualtransaction, leads to pg_prepared_xacts.
func migrationLockHolders(ctx context.Context, conn *sql.Conn) ([]LockHolder, error) {
	return lockHolders(ctx, conn, `l.locktype = 'advisory'
		   AND l.classid = ($1::bigint >> 32)::oid AND l.objid = ($1::bigint & 4294967295)::oid AND l.objsubid = 1`, migrationLockID)
}

// syncTableLockHolders reads who else holds a lock on a sync table or the
// version table: a migration's DDL waits for them.
func syncTableLockHolders(ctx context.Context, conn *sql.Conn, versionTable string) ([]LockHolder, error) {
	return lockHolders(ctx, conn, `l.locktype = 'relation' AND l.pid IS DISTINCT FROM pg_backend_pid()
		   AND l.relation IN (SELECT c.oid FROM pg_class c
		                       WHERE c.relnamespace = current_schema()::regnamespace
		                         AND (c.relname LIKE 'sync\_%' OR c.relname = $1))`, versionTable)
}

// lockHolders lists the granted locks of this database that match (a
// condition on pg_locks l with one parameter), one row per holder.
func lockHolders(ctx context.Context, conn *sql.Conn, match string, arg any) ([]LockHolder, error) {
	rows, err := conn.QueryContext(ctx, `
		SELECT DISTINCT coalesce(a.pid, 0), coalesce(a.usename::text, x.owner::text, ''),
		       coalesce(x.gid, CASE WHEN l.pid IS NULL THEN '(a prepared transaction: see pg_prepared_xacts)' END, ''),
		       coalesce(a.application_name, ''), coalesce(a.state, ''), coalesce(x.prepared::text, '')
		  FROM pg_locks l
		  LEFT JOIN pg_stat_activity a ON a.pid = l.pid
		  LEFT JOIN pg_locks xl ON l.pid IS NULL AND xl.locktype = 'transactionid' AND xl.virtualtransaction = l.virtualtransaction
		  LEFT JOIN pg_prepared_xacts x ON x.transaction = xl.transactionid
		 WHERE l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		   AND `+match+`
		 ORDER BY 1, 3`, arg)
	if err != nil {
		return nil, fmt.Errorf("gosync: who holds the lock: %w", err)
	}
	defer rows.Close()
	var out []LockHolder
	for rows.Next() {
		var h LockHolder
		if err := rows.Scan(&h.PID, &h.Role, &h.PreparedGID, &h.Application, &h.State, &h.PreparedAt); err != nil {
			return nil, fmt.Errorf("gosync: who holds the lock: %w", err)
		}
		out = append(out, h)
	}
	return out, rows.Err()
}
