package tests

import (
	"context"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// TestServeCheckMatchesOracle: on randomized databases and declarations,
// sync_serve_check answers what the Go rule it replaced answers, given the
// same pending list (sync_serve_gate) with the requested partition's rows
// first — the one deliberate change: a pending checkpoint of the requested
// partition refuses before any other partition's. Declarations for every
// partition are handed to the oracle as the pairs they cover.
func TestServeCheckMatchesOracle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	s := gosync.New(d.Pool)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	pick := func(prefix string, n int) string { return prefix + strconv.Itoa(rng.IntN(n)) }
	kinds := map[gosync.RefusalKind]int{}
	for iter := 0; iter < 400; iter++ {
		tx, err := d.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		running := int64(1 + rng.IntN(2))
		// Mostly at the running version, so the later rules get exercised.
		if v := rng.IntN(8); v > 1 {
			mustExec(t, tx, `INSERT INTO sync_schema_meta VALUES (1, $1, '{}')`, running)
		} else if v == 1 {
			mustExec(t, tx, `INSERT INTO sync_schema_meta VALUES (1, $1, '{}')`, 3-running)
		}
		for i := rng.IntN(4); i > 0; i-- {
			mustExec(t, tx, `INSERT INTO sync_partition_registry VALUES ($1, $2, false, 0) ON CONFLICT DO NOTHING`, pick("p", 6), pick("e", 2))
		}
		for i := rng.IntN(12); i > 0; i-- {
			mustExec(t, tx, `INSERT INTO sync_backfill_checkpoints (partition, name, schema_version, state, updated_at_ms)
				VALUES ($1, $2, $3, $4, 0) ON CONFLICT DO NOTHING`,
				pick("p", 6), pick("n", 4), 1+rng.IntN(2), []string{"declared", "backfilling", "activated"}[rng.IntN(3)])
		}
		srv := gosync.Server{SchemaVersion: running}
		if rng.IntN(4) == 0 {
			srv.ExpectedEpoch = pick("e", 3)
		}
		var everywhere, pairs []gosync.CheckpointRef
		for i := rng.IntN(6); i > 0; i-- {
			if rng.IntN(3) == 0 {
				n := pick("n", 4)
				everywhere = append(everywhere, gosync.CheckpointRef{Name: n})
				srv.Declared = append(srv.Declared, gosync.CheckpointDeclaration{AllPartitions: true, Name: n, SchemaVersion: running})
			} else {
				r := gosync.CheckpointRef{Partition: pick("p", 6), Name: pick("n", 4)}
				pairs = append(pairs, r)
				srv.Declared = append(srv.Declared, gosync.CheckpointDeclaration{Partition: r.Partition, Name: r.Name, SchemaVersion: running})
			}
		}
		partition := pick("p", 7)

		gate, err := s.WithTx(tx).ServeGate(ctx, partition, gosync.Server{SchemaVersion: running})
		if err != nil {
			t.Fatal(err)
		}
		declared := append([]gosync.CheckpointRef{}, pairs...)
		var own, others []gosync.CheckpointRef
		for _, p := range gate.Pending {
			for _, e := range everywhere {
				if e.Name == p.Name {
					declared = append(declared, p)
				}
			}
			if p.Partition == partition {
				own = append(own, p)
			} else {
				others = append(others, p)
			}
		}
		gate.Pending = append(own, others...)
		want := evaluateGateOracle(gate, running, declared, partition, srv.ExpectedEpoch)
		got, err := s.WithTx(tx).ServeCheck(ctx, partition, srv)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("iteration %d (seed %d): partition %s, %+v, gate %+v:\nsync_serve_check %+v\noracle           %+v",
				iter, seed, partition, srv, gate, got, want)
		}
		k := gosync.RefusalKind("open")
		if got != nil {
			k = got.Kind
		}
		kinds[k]++
	}
	t.Logf("verdicts: %v", kinds)
	for _, k := range []gosync.RefusalKind{"open", gosync.RefusalSchema, gosync.RefusalEpoch, gosync.RefusalCheckpoint} {
		if kinds[k] == 0 {
			t.Errorf("no randomized case ended %q: the generator does not cover the rule", k)
		}
	}
}

// TestServeCheckDoesNotScanPending proves the rule is index-driven: with
// 100,000 pending checkpoints declared by name, auto_explain (with ANALYZE)
// reports the plans of the statements inside sync_serve_check — custom plans
// first, then plpgsql's cached generic plan — and every read of
// sync_backfill_checkpoints is an index scan returning at most one row.
func TestServeCheckDoesNotScanPending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	fillPending(t, d.Pool, 100_000)

	conn, plans := explainingConn(t, d.URL, "SET auto_explain.log_analyze = on")
	// More than five calls: plpgsql switches to a generic plan after five.
	for i := 0; i < 8; i++ {
		var refusal *string
		err := conn.QueryRow(ctx, `SELECT refusal FROM sync_serve_check('elsewhere', 2, NULL, '{proj}', '{w0100000}', '{other}')`).Scan(&refusal)
		if err != nil || refusal != nil {
			t.Fatalf("serve check = %v, %v; want open", refusal, err)
		}
	}
	// Per call: the own partition, then the names proj, other and the end.
	assertOneRowIndexReads(t, plans(), "", 8*4)
}

// TestServeCheckArguments: bad arguments are refused with 22023.
func TestServeCheckArguments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	for _, q := range []string{
		`SELECT * FROM sync_serve_check('', 1)`,
		`SELECT * FROM sync_serve_check('p', -1)`,
		`SELECT * FROM sync_serve_check('p', 1, NULL, NULL)`,
		`SELECT * FROM sync_serve_check('p', 1, NULL, '{}', '{a}', '{}')`,
		`SELECT * FROM sync_serve_check('p', 1, NULL, '{}', '{a}', ARRAY[NULL])`,
		`SELECT * FROM sync_serve_check('p', 1, NULL, ARRAY[NULL])`,
	} {
		_, err := d.Pool.Exec(ctx, q)
		if code := sqlState(err); code != "22023" {
			t.Errorf("%s: SQLSTATE %q (%v), want 22023", q, code, err)
		}
	}
}
