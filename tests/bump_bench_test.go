package tests

import (
	"context"
	"fmt"
	"testing"

	"github.com/gosync/gosync/gosync"
)

// BenchmarkBump: a schema bump declaring 20,000 checkpoints (one projection
// in 20,000 partitions, as pairs) through EnsureSchema — the migration lock,
// the marker, the set-based install with fences and partition rows, commit —
// against the bare INSERT ... SELECT of the same 20,000 checkpoint rows in a
// transaction. Each round bumps to the next version with a new projection
// name, so every round declares 20,000 new rows and raises 20,000 fences
// (the bare rows sit at a version no bump reaches).
func BenchmarkBump(b *testing.B) {
	ctx := context.Background()
	const n = 20_000
	partitions := make([]string, n)
	for i := range partitions {
		partitions[i] = fmt.Sprintf("t%06d", i)
	}
	_, pool := benchPool(b)
	mustExec(b, pool, `INSERT INTO sync_partitions (partition) SELECT unnest($1::text[])`, partitions)
	store := gosync.New(pool)
	if err := store.EnsureSchema(ctx, todosSchema(1), nil, todosDDL(1)); err != nil {
		b.Fatal(err)
	}
	version := int64(1)
	bump := func() error {
		version++
		decl := make([]gosync.CheckpointDeclaration, n)
		for i, p := range partitions {
			decl[i] = gosync.CheckpointDeclaration{Partition: p, Name: fmt.Sprintf("proj_%d", version), SchemaVersion: version}
		}
		schema := todosSchema(2)
		schema.Version = version
		return store.EnsureSchema(ctx, schema, decl, nil)
	}
	rounds := 0
	bare := func() error {
		rounds++
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, `INSERT INTO sync_backfill_checkpoints (partition, name, schema_version, state, updated_at_ms)
			SELECT unnest($1::text[]), $2, 1000000, 'declared', 0`, partitions, fmt.Sprintf("bare_%d", rounds)); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}
	// The part of the bump that holds the migration lock, alone: the bump
	// transaction's statements as EnsureSchema sends them.
	locked := func() error {
		version++
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, "SELECT sync_begin_schema_change()"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SELECT sync_set_schema_version($1)", version); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SELECT sync_install_checkpoints($1, array_fill($2::text, ARRAY[$3::int]), $4)",
			partitions, fmt.Sprintf("proj_%d", version), n, version); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}
	m := benchInterleaved(b, variant{"bare_insert", bare}, variant{"bump_20k", bump}, variant{"lock_held_20k", locked})
	ratioLine(b, "EnsureSchema declaring 20,000 / bare INSERT ... SELECT", m[1]/m[0], "report")
	ratioLine(b, "bump transaction (lock held) of 20,000 / bare", m[2]/m[0], "<= 3")
}
