// Package db is the sqlc-generated Go wrapper of gosync's SQL API: one
// method of Queries per operation, each one statement that calls the SQL
// function it is named after (ClaimCheckpoint is sync_claim_checkpoint,
// Push is sync_push) or reads one of gosync's tables and views. It is for Go
// services that want the SQL API without the typed layer of package gosync,
// which is built on it.
//
// The queries take the connection as an argument (DBTX: a *pgxpool.Pool, a
// *pgx.Conn or a pgx.Tx), so one Queries serves every connection and
// transaction:
//
//	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
//	...
//	q := db.New()
//	cp, err := q.ClaimCheckpoint(ctx, pool, db.ClaimCheckpointParams{
//		Partition: "p1", Name: "todos_by_owner", SchemaVersion: 2})
//
// The database must be migrated first (gosync.Migrate, or `gosync up`).
// Nullable columns and optional arguments are pointers (nil is NULL);
// schema versions are int32 where the column is integer (checkpoints,
// fences) and int64 where it is bigint (the schema marker). The columns of
// a function's OUT record (ServeCheck, Push, ServeGate) are typed by a cast,
// which sqlc reads as NOT NULL: those read "" or 0 for NULL, as each query
// says. A query that returns at most one row returns pgx.ErrNoRows when
// there is none.
//
// Errors come back as pgx returns them: a refusal is a *pgconn.PgError with
// upstream's message (sync.storage.writer_fence_rejected, ...) or SQLSTATE
// 22023 for a bad argument. gosync.MapError turns them into gosync's typed
// errors, for errors.Is:
//
//	_, err := q.DeclareCheckpoint(ctx, pool, db.DeclareCheckpointParams{...})
//	if errors.Is(gosync.MapError(err), gosync.ErrInvalidArgument) { ... }
//
// The code is generated from sql/queries by `make generate`; do not edit it
// by hand (this file excepted).
package db
