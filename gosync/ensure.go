package gosync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gosync/gosync/db"
)

// SchemaChangeOptions tune EnsureSchema's schema bump.
type SchemaChangeOptions struct {
	// DDL runs inside the bump transaction, after the migration lock and
	// before the marker: create or alter the application tables here.
	DDL func(ctx context.Context, tx pgx.Tx) error
	// LockTimeout bounds each attempt to take the migration lock (default
	// 500ms). A waiting LOCK TABLE queues every writer behind it, so the bump
	// gives up quickly and retries rather than stall production.
	LockTimeout time.Duration
	// MaxWait bounds all attempts together (default 2 minutes).
	MaxWait time.Duration
	// OnRetry, when set, hears about every attempt that found the lock busy.
	OnRetry func(attempt int, err error)
}

func (o *SchemaChangeOptions) withDefaults() SchemaChangeOptions {
	out := SchemaChangeOptions{}
	if o != nil {
		out = *o
	}
	if out.LockTimeout <= 0 {
		out.LockTimeout = 500 * time.Millisecond
	}
	if out.MaxWait <= 0 {
		out.MaxWait = 2 * time.Minute
	}
	return out
}

// EnsureSchema makes the database serve schema, in upstream's order:
//
//  1. a checkpoint at this version that is not activated and that the
//     caller did not declare → ErrCheckpointIncomplete (an empty
//     declaration set declares nothing);
//  2. a stored version newer than schema.Version → ErrSchemaTooNew;
//  3. the same version → the stored layouts and the physical columns of
//     every table must match, else ErrSchemaMismatch naming table and column
//     (2 and 3 are SQL's rules, sync_check_schema_version, with the
//     upstream server's words); a marker an older gosync wrote with
//     Postgres type names that the configured codec types explain (text
//     for string or blob_ref, bytea for bytes or crdt, ...) is rewritten in
//     the codec vocabulary under the migration lock, then checked again;
//  4. an older marker the schema changes other than by appending nullable
//     columns to its tables → ErrSchemaMismatch with upstream's words
//     (removing, retyping or inserting a column); dropping a table is
//     allowed (the caller's DDL drops it);
//  5. an older or absent marker → one transaction that takes the migration
//     lock first (sync_begin_schema_change), runs opts.DDL, writes the
//     marker with the layouts and installs the declared checkpoints with
//     their fences, so nobody sees the new marker without its fence; in
//     that transaction, after the DDL, every row of an upstream-shaped table
//     (one with _sync_payload) whose layout gained columns has its payload
//     re-encoded with NULL appended for each, as upstream's bump does.
func (s *Store) EnsureSchema(ctx context.Context, schema Schema, declared []CheckpointDeclaration, opts *SchemaChangeOptions) error {
	if err := schema.Validate(); err != nil {
		return err
	}
	o := opts.withDefaults()
	deadline := time.Now().Add(o.MaxWait)
	backoff := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		if err := s.checkIncomplete(ctx, schema.Version, declared); err != nil {
			return err
		}
		// The marker rules are SQL's (sync_check_schema_version, which the
		// bump runs too): 'absent' or 'older' → bump; 'same' → physical
		// columns; a newer marker or other layouts → its refusal, mapped to
		// ErrSchemaTooNew / ErrSchemaMismatch.
		relation, err := s.q.CheckSchemaVersion(ctx, s.conn, db.CheckSchemaVersionParams{SchemaVersion: schema.Version, Layouts: schema.Layouts()})
		if err != nil {
			return MapError(err)
		}
		if relation == "same" {
			return s.checkSameVersion(ctx, schema)
		}
		// 'legacy': an older gosync wrote this version's marker with Postgres
		// type names; the configured codec types say which each one was, so
		// the marker is rewritten at the same version (no DDL, no
		// declarations: the version's bump ran already) and checked again.
		err = s.bump(ctx, schema, declared, o, relation == "legacy")
		if err == nil && relation == "legacy" {
			continue
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, errRaced):
			continue // re-run the checks against the marker another server wrote
		case !errors.Is(err, ErrLockBusy):
			return err
		}
		if o.OnRetry != nil {
			o.OnRetry(attempt, err)
		}
		if time.Now().Add(backoff).After(deadline) {
			var busy *LockBusyError
			if errors.As(err, &busy) {
				last := *busy
				last.Attempts, last.Waited = attempt, o.MaxWait
				return &last
			}
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff + rand.N(backoff/2)):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

func (s *Store) checkIncomplete(ctx context.Context, version int64, declared []CheckpointDeclaration) error {
	v, err := int32Arg("schema_version", version)
	if err != nil {
		return err
	}
	decl, err := encodeDeclarations(declared)
	if err != nil {
		return err
	}
	r, err := s.q.FirstUndeclaredCheckpoint(ctx, s.conn, db.FirstUndeclaredCheckpointParams{SchemaVersion: v,
		DeclaredNames: decl.Names, DeclaredPartitions: decl.Partitions, DeclaredPartitionNames: decl.PartitionNames})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return MapError(err)
	}
	return fmt.Errorf("%w: checkpoint %q of partition %q at schema version %d is not activated and not declared by this server",
		ErrCheckpointIncomplete, r.Name, r.Partition, version)
}

// checkSameVersion: the stored layouts match (sync_check_schema_version);
// the physical tables must have every configured column too, or the first
// write fails.
func (s *Store) checkSameVersion(ctx context.Context, schema Schema) error {
	for _, t := range schema.Tables {
		have, err := s.q.PhysicalColumns(ctx, s.conn, t.Name)
		if err != nil {
			return MapError(err)
		}
		if len(have) == 0 {
			return fmt.Errorf("%w: table %q does not exist on the search_path", ErrSchemaMismatch, t.Name)
		}
		physical := map[string]bool{}
		for _, c := range have {
			physical[c] = true
		}
		for _, c := range t.Columns {
			if !physical[c.Name] {
				return fmt.Errorf("%w: table %q column %q is missing from the database", ErrSchemaMismatch, t.Name, c.Name)
			}
		}
	}
	return nil
}

// bump is one attempt at the schema-bump transaction.
// With rewrite, it only rewrites a legacy marker of schema.Version.
func (s *Store) bump(ctx context.Context, schema Schema, declared []CheckpointDeclaration, o SchemaChangeOptions, rewrite bool) error {
	err := s.bumpTx(ctx, func(tx pgx.Tx) error {
		// Nothing is read or locked before the migration lock: the bump holds
		// nothing a writer could wait on while the bump waits for the writer.
		if err := s.q.SetLocalLockTimeout(ctx, tx, fmt.Sprintf("%dms", o.LockTimeout.Milliseconds())); err != nil {
			return MapError(err)
		}
		if err := s.q.BeginSchemaChange(ctx, tx); err != nil {
			return err
		}
		meta, err := s.q.GetSchemaMeta(ctx, tx)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return MapError(err)
		}
		switch {
		case rewrite && (err != nil || meta.SchemaVersion != schema.Version):
			return errRaced
		case rewrite: // sync_set_schema_version re-checks 'legacy' under the lock
			return MapError(s.q.SetSchemaVersion(ctx, tx, db.SetSchemaVersionParams{SchemaVersion: schema.Version, Layouts: schema.Layouts()}))
		case err == nil && meta.SchemaVersion >= schema.Version:
			return errRaced
		}
		if o.DDL != nil {
			if err := o.DDL(ctx, tx); err != nil {
				return fmt.Errorf("gosync: schema change DDL: %w", err)
			}
		}
		if err == nil { // a marker is being replaced: its layouts are the rows' old ones
			if err := s.reencodePayloads(ctx, tx, schema, meta.Layouts); err != nil {
				return err
			}
		}
		if err := s.q.SetSchemaVersion(ctx, tx, db.SetSchemaVersionParams{SchemaVersion: schema.Version, Layouts: schema.Layouts()}); err != nil {
			return MapError(err)
		}
		return s.installDeclarations(ctx, tx, declared)
	})
	// The lock timeout bounds every lock wait of the transaction (the
	// migration lock, and whatever the DDL needs): any of them is a retry.
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == "55P03" { // lock_not_available
		return s.lockBusy(ctx, err)
	}
	return err
}

// reencodePageSize is how many rows one keyset page of the payload rewrite
// reads (upstream's 500).
const reencodePageSize = 500

// reencodePayloads is upstream's payload rewrite of a bump (schema-bump.md
// §1–2): for each configured table whose stored layout (the marker being
// replaced, read under the migration lock) has fewer columns, every current
// row's _sync_payload is decoded with the old layout, NULL appended for each
// added column, and re-encoded with the new one (the null bitmap may grow).
// Only tables with a _sync_payload column (upstream-shaped) have payloads;
// a gosync table such as examples/todos is not read. Only _sync_payload is
// written: the materialized columns of the old layout keep their values, and
// the added ones exist only since this bump's ADD COLUMN, so they are NULL
// already, which is what the new payload says. _sync_server_version,
// _sync_scopes, sync_row_scopes and the log (sync_changes.payload, still in
// the layout it was written under) are untouched, as upstream leaves them.
func (s *Store) reencodePayloads(ctx context.Context, tx pgx.Tx, schema Schema, storedText string) error {
	var stored map[string][]json.RawMessage
	if json.Unmarshal([]byte(storedText), &stored) != nil {
		return nil // not a JSON object: it names no old layout to decode with (and constrains no bump)
	}
	// The rules again, under the lock (the marker may have moved since the
	// check before it): each stored table's columns are then the configured
	// columns' prefix, so that prefix is the old layout, in the codec
	// vocabulary even where an older gosync stored Postgres type names.
	if _, err := s.q.CheckSchemaVersion(ctx, tx, db.CheckSchemaVersionParams{SchemaVersion: schema.Version, Layouts: schema.Layouts()}); err != nil {
		return MapError(err)
	}
	for _, t := range schema.Tables {
		have, ok := stored[t.Name]
		if !ok || len(have) >= len(t.Columns) {
			continue
		}
		physical, err := s.q.PhysicalColumns(ctx, tx, t.Name)
		if err != nil {
			return MapError(err)
		}
		hasPayload := false
		for _, c := range physical {
			hasPayload = hasPayload || c == "_sync_payload"
		}
		if hasPayload {
			if err := reencodeTable(ctx, tx, t, t.Columns[:len(have)]); err != nil {
				return err
			}
		}
	}
	return nil
}

// reencodeTable rewrites one table's payloads in keyset pages by primary
// key, so no page grows with the table; the names are quoted identifiers
// resolved on the search_path like every unqualified statement of the bump.
func reencodeTable(ctx context.Context, tx pgx.Tx, t Table, old []Column) error {
	tbl := pgx.Identifier{t.Name}.Sanitize()
	first := `SELECT _sync_partition, _sync_row_id, _sync_payload FROM ` + tbl +
		` ORDER BY _sync_partition, _sync_row_id LIMIT $1`
	next := `SELECT _sync_partition, _sync_row_id, _sync_payload FROM ` + tbl +
		` WHERE (_sync_partition, _sync_row_id) > ($2, $3) ORDER BY _sync_partition, _sync_row_id LIMIT $1`
	update := `UPDATE ` + tbl + ` SET _sync_payload = $1 WHERE _sync_partition = $2 AND _sync_row_id = $3`
	type row struct {
		partition, rowID string
		payload          []byte
	}
	var last *row
	for {
		var rows pgx.Rows
		var err error
		if last == nil {
			rows, err = tx.Query(ctx, first, reencodePageSize)
		} else {
			rows, err = tx.Query(ctx, next, reencodePageSize, last.partition, last.rowID)
		}
		if err != nil {
			return fmt.Errorf("gosync: re-encoding %s: %w", tbl, MapError(err))
		}
		page, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (x row, err error) {
			err = r.Scan(&x.partition, &x.rowID, &x.payload)
			return x, err
		})
		if err != nil {
			return fmt.Errorf("gosync: re-encoding %s: %w", tbl, MapError(err))
		}
		batch := &pgx.Batch{}
		for _, r := range page {
			if r.payload == nil {
				continue // no payload to re-encode
			}
			values, err := DecodeRow(old, r.payload)
			if err != nil {
				return fmt.Errorf("gosync: re-encoding %s row %q/%q with its stored layout: %w", tbl, r.partition, r.rowID, err)
			}
			values = append(values, make([]any, len(t.Columns)-len(old))...)
			payload, err := EncodeRow(t.Columns, values)
			if err != nil {
				return fmt.Errorf("gosync: re-encoding %s row %q/%q: %w", tbl, r.partition, r.rowID, err)
			}
			batch.Queue(update, payload, r.partition, r.rowID)
		}
		if batch.Len() > 0 {
			if err := tx.SendBatch(ctx, batch).Close(); err != nil {
				return fmt.Errorf("gosync: re-encoding %s: %w", tbl, MapError(err))
			}
		}
		if len(page) < reencodePageSize {
			return nil
		}
		last = &page[len(page)-1]
	}
}

// bumpTx runs fn in the bump's transaction: READ COMMITTED on a pool (a
// declaration for every partition must see every partition committed before
// the migration lock was granted; sync_install_all_partitions refuses
// another level), a savepoint in the caller's transaction under WithTx.
func (s *Store) bumpTx(ctx context.Context, fn func(pgx.Tx) error) error {
	if s.pool != nil {
		return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, fn)
	}
	return pgx.BeginFunc(ctx, s.begin, fn)
}

// lockBusy is a timed-out attempt as a *LockBusyError naming who holds a
// conflicting lock now (the bump's transaction is over: read on s.conn).
func (s *Store) lockBusy(ctx context.Context, cause error) error {
	busy := &LockBusyError{Cause: cause}
	rows, err := s.q.SchemaChangeBlockers(ctx, s.conn)
	if err != nil {
		return fmt.Errorf("%w (and listing who holds it failed: %v)", busy, err)
	}
	for _, r := range rows {
		busy.Blockers = append(busy.Blockers, LockHolder{PID: int64(r.Pid), PreparedGID: r.PreparedGid, Role: r.Role, Modes: r.LockModes})
	}
	return busy
}

// installDeclarations installs every declaration with its fence, per
// schema version (one in practice): the pairs in one sync_install_checkpoints
// call, the projections declared for every partition in one
// sync_install_all_partitions call, which also records them so partitions
// created later get them (sync_partition_created; it needs READ COMMITTED,
// so under WithTx the caller's transaction must be). The bump holds the
// migration lock for a few statements, however many partitions it declares.
func (s *Store) installDeclarations(ctx context.Context, tx pgx.Tx, declared []CheckpointDeclaration) error {
	var versions []int64
	byVersion := map[int64][]CheckpointDeclaration{}
	for _, d := range declared {
		if _, ok := byVersion[d.SchemaVersion]; !ok {
			versions = append(versions, d.SchemaVersion)
		}
		byVersion[d.SchemaVersion] = append(byVersion[d.SchemaVersion], d)
	}
	for _, version := range versions {
		v, err := int32Arg("schema_version", version)
		if err != nil {
			return err
		}
		decl, err := encodeDeclarations(byVersion[version])
		if err != nil {
			return err
		}
		// Every partition first: a partition a pair then creates is new, and
		// its trigger gives it these checkpoints activated, not declared.
		if len(decl.Names) > 0 {
			if _, err := s.q.InstallAllPartitions(ctx, tx, db.InstallAllPartitionsParams{Names: decl.Names, SchemaVersion: v}); err != nil {
				return MapError(err)
			}
		}
		if len(decl.Partitions) > 0 {
			if _, err := s.q.InstallCheckpoints(ctx, tx, db.InstallCheckpointsParams{Partitions: decl.Partitions,
				Names: decl.PartitionNames, SchemaVersion: v}); err != nil {
				return MapError(err)
			}
		}
	}
	return nil
}

// SchemaVersion reads the stored schema marker's version (sync_schema_meta),
// 0 when no server has written one yet.
func (s *Store) SchemaVersion(ctx context.Context) (int64, error) {
	meta, err := s.q.GetSchemaMeta(ctx, s.conn)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return meta.SchemaVersion, MapError(err)
}
