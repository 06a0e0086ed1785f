package tests

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// The head rule, attacked (issue 17, sections 1, 2 and 7): a commit lands at
// seq N only in the transaction that raised max_commit_seq to N; the row
// triggers call no function their schema's owner could replace; a change's
// op is 1 or 2. Each attack was accepted before migration 00016; after it,
// each is refused and changes nothing.

// isoLevels are the isolation levels every rule must hold under.
var isoLevels = []pgx.TxIsoLevel{pgx.ReadCommitted, pgx.RepeatableRead, pgx.Serializable}

// makeHole leaves partition's next seq allocated without a commit (a
// transaction that allocates and commits nothing else), on its own
// connection, and returns the seq: the head now has no commit.
func makeHole(t *testing.T, writer *pgxpool.Pool, partition string) int64 {
	t.Helper()
	ctx := context.Background()
	var seq int64
	if err := pgx.BeginFunc(ctx, writer, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `UPDATE sync_partitions SET max_commit_seq = max_commit_seq + 1
			WHERE partition = $1 RETURNING max_commit_seq`, partition).Scan(&seq)
	}); err != nil {
		t.Fatalf("allocate without a commit: %v", err)
	}
	return seq
}

// seedPartition gives partition one commit by an upstream-shaped push.
func seedPartition(t *testing.T, writer *pgxpool.Pool, partition string) {
	t.Helper()
	ctx := context.Background()
	if err := pgx.BeginFunc(ctx, writer, func(tx pgx.Tx) error {
		_, err := upstreamPushTx(ctx, tx, partition, "seed-"+partition, v(1))
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// lateCommit is the filler's commit at seq, with a change under it.
func lateCommit(ctx context.Context, tx pgx.Tx, partition string, seq int64) error {
	if _, err := tx.Exec(ctx, `INSERT INTO sync_commits VALUES ($1, $2, 'c', 'late', 'a', 0, 9)`, partition, seq); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO sync_changes VALUES ($1, $2, 0, 'todos', 'late', 1, 1, '{}', NULL)`, partition, seq)
	return err
}

// multiLogin is a login role in every group given (loginAs takes one).
func multiLogin(t *testing.T, d *pgtest.DB, suffix string, groups ...string) (*pgxpool.Pool, string) {
	t.Helper()
	ctx := context.Background()
	name := d.Name + "_" + suffix
	ident := pgx.Identifier{name}.Sanitize()
	var in []string
	for _, g := range groups {
		in = append(in, pgx.Identifier{g}.Sanitize())
	}
	mustExec(t, d.Pool, fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD 'pw' IN ROLE %s", ident, strings.Join(in, ", ")))
	t.Cleanup(func() {
		_, _ = d.Pool.Exec(context.Background(), "DROP OWNED BY "+ident+"; DROP ROLE "+ident)
	})
	cfg, err := pgxpool.ParseConfig(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.User, cfg.ConnConfig.Password = name, "pw"
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool, name
}

// refusedWith fails t unless err carries want (a message or a SQLSTATE).
func refusedWith(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want one of %v", want)
	}
	for _, w := range want {
		if sqlState(err) == w || strings.Contains(err.Error(), w) {
			return
		}
	}
	t.Fatalf("err = %v (SQLSTATE %s), want one of %v", err, sqlState(err), want)
}

// TestRedTeamTouchFillsHole: a sync_writer login fills a seq left without a
// commit by first "touching" the partition row (a write that leaves
// max_commit_seq as it is), so the row version is its own, then appending
// the commit there: below the head a client has already read. Under every
// isolation level, with the touch as an UPDATE and as an upstream-style
// upsert, on two real sessions (the hole is another writer's); in READ
// COMMITTED also while the hole's transaction is still open (the touch waits
// for it). The touch is refused and nothing changes.
func TestRedTeamTouchFillsHole(t *testing.T) {
	ctx := context.Background()
	d := pgtest.New(t)
	writer := loginAs(t, d, "sync_writer", nil)
	attacker, _ := multiLogin(t, d, "attacker", "sync_writer")
	touches := map[string]string{
		"UPDATE max_commit_seq = max_commit_seq": `UPDATE sync_partitions SET max_commit_seq = max_commit_seq WHERE partition = $1`,
		"upsert setting max_commit_seq to itself": `INSERT INTO sync_partitions AS p (partition, max_commit_seq) VALUES ($1, 0)
			ON CONFLICT (partition) DO UPDATE SET max_commit_seq = p.max_commit_seq`,
	}
	n := 0
	for _, iso := range isoLevels {
		for touchName, touch := range touches {
			for _, open := range []bool{false, true} {
				if open && iso != pgx.ReadCommitted {
					continue // RR/SERIALIZABLE: a snapshot older than the hole fails with 40001 anyway
				}
				n++
				partition := fmt.Sprintf("h%d", n)
				t.Run(fmt.Sprintf("%s/%s/hole still open %v", iso, touchName, open), func(t *testing.T) {
					seedPartition(t, writer, partition)
					var hole int64
					var holeTx pgx.Tx
					if open {
						var err error
						if holeTx, err = writer.Begin(ctx); err != nil {
							t.Fatal(err)
						}
						defer holeTx.Rollback(ctx)
						if err := holeTx.QueryRow(ctx, `UPDATE sync_partitions SET max_commit_seq = max_commit_seq + 1
							WHERE partition = $1 RETURNING max_commit_seq`, partition).Scan(&hole); err != nil {
							t.Fatal(err)
						}
					} else {
						hole = makeHole(t, writer, partition)
					}
					tx, err := attacker.BeginTx(ctx, pgx.TxOptions{IsoLevel: iso})
					if err != nil {
						t.Fatal(err)
					}
					defer tx.Rollback(ctx)
					mustExec(t, tx, "SELECT count(*) FROM sync_partitions") // the snapshot
					var before string
					touched := make(chan error, 1)
					if open {
						go func() { _, err := tx.Exec(ctx, touch, partition); touched <- err }()
						waitForLockWaiters(t, d, 1)
						if err := holeTx.Commit(ctx); err != nil {
							t.Fatal(err)
						}
						before = attackState(t, d)
					} else {
						before = attackState(t, d)
						_, err := tx.Exec(ctx, touch, partition)
						touched <- err
					}
					err = within(t, "the touch", touched)
					if err == nil {
						if err = lateCommit(ctx, tx, partition, hole); err == nil {
							err = tx.Commit(ctx)
						}
					}
					refusedWith(t, err, "sync.storage.partition_seq_rejected")
					if !errors.Is(gosync.MapError(err), gosync.ErrPartitionSeqRejected) {
						t.Fatalf("err = %v, want ErrPartitionSeqRejected", err)
					}
					_ = tx.Rollback(ctx)
					if after := attackState(t, d); after != before {
						t.Fatalf("a refused fill changed the database:\nbefore %s\nafter  %s", before, after)
					}
					// The empty seq stays empty; the next push goes above it.
					if seq := mustPush(t, writer, partition, "todos", 1); seq != hole+1 {
						t.Fatalf("next push at %d, want %d", seq, hole+1)
					}
				})
			}
		}
	}
}

// TestRedTeamAdminWriterFillsHole: a login that is both sync_admin and
// sync_writer calls an admin function that writes the partition row
// without allocating (the fence raise of a declare or a bump, the horizon
// raise of a prune; they run as the owner, which may), then appends a commit
// at the empty head in the same transaction (or in a savepoint after it).
// Refused under every isolation level; nothing changes. (The raise in a
// savepoint rolled back is a control: ROLLBACK TO undoes the touch, so the
// row version is the hole's again; it held before 00016 too.) A prune of a
// partition without a fence row, whose head has no commit, is itself
// passes and raises the horizon to that head (nothing to mark the
// transaction with otherwise), so the fill is refused as below the horizon.
func TestRedTeamAdminWriterFillsHole(t *testing.T) {
	ctx := context.Background()
	d := pgtest.New(t)
	writer := loginAs(t, d, "sync_writer", nil)
	both, _ := multiLogin(t, d, "adminwriter", "sync_admin", "sync_writer")
	type attack struct {
		name, raise string
		declared    bool // the partition has a fence row before the attack
		savepoint   bool // SAVEPOINT after the raise ("rollback": ROLLBACK TO one taken before it)
		rollback    bool
		after       []string // more statements between the raise and the fill ($1: the partition)
		want        string
	}
	attacks := []attack{
		{"declare (fence raise), then fill", `SELECT sync_declare_checkpoint($1, 'proj', 2)`, false, false, false, nil, "sync.storage.commit_not_at_head"},
		{"declare, savepoint, then fill", `SELECT sync_declare_checkpoint($1, 'proj', 2)`, false, true, false, nil, "sync.storage.commit_not_at_head"},
		{"declare in a savepoint rolled back, then fill", `SELECT sync_declare_checkpoint($1, 'proj', 2)`, false, false, true, nil, "sync.storage.commit_not_at_head"},
		{"bump install over a declared partition, then fill", `SELECT sync_install_checkpoints(ARRAY[$1::text], '{proj2}', 2)`, true, false, false, nil, "sync.storage.commit_not_at_head"},
		{"re-declare at the same version, then fill", `SELECT sync_install_checkpoint($1, 'proj', 2)`, true, false, false, nil, "sync.storage.commit_not_at_head"},
		{"prune (fenced partition), then fill", `SELECT sync_prune_log($1, 1)`, true, false, false, nil, "sync.storage.commit_not_at_head"},
		{"prune (fenced partition), savepoint, then fill", `SELECT sync_prune_log($1, 1)`, true, true, false, nil, "sync.storage.commit_not_at_head"},
		{"prune (fenced partition) in a savepoint rolled back, then fill", `SELECT sync_prune_log($1, 1)`, true, false, true, nil, "sync.storage.commit_not_at_head"},
		{"declare, an allocation rolled back to a savepoint, then fill", `SELECT sync_declare_checkpoint($1, 'proj', 2)`, false, false, false,
			[]string{"SAVEPOINT s", "UPDATE sync_partitions SET max_commit_seq = max_commit_seq + 1 WHERE partition = $1", "ROLLBACK TO SAVEPOINT s"}, "sync.storage.commit_not_at_head"},
		// No fence row to mark with: since 00025 the prune passes and raises
		// the horizon to the empty head, so the fill is at or below it.
		{"prune (no fence row), then fill", `SELECT sync_prune_log($1, 1)`, false, false, false, nil, "sync.storage.commit_not_at_head"},
	}
	n := 0
	for _, iso := range isoLevels {
		for _, a := range attacks {
			n++
			partition := fmt.Sprintf("a%d", n)
			t.Run(fmt.Sprintf("%s/%s", iso, a.name), func(t *testing.T) {
				seedPartition(t, writer, partition)
				if a.declared {
					mustExec(t, d.Pool, `SELECT sync_declare_checkpoint($1, 'proj', 2)`, partition)
				}
				hole := makeHole(t, writer, partition)
				before := attackState(t, d)
				err := pgx.BeginTxFunc(ctx, both, pgx.TxOptions{IsoLevel: iso}, func(tx pgx.Tx) error {
					steps := []string{a.raise}
					if a.savepoint {
						steps = append(steps, "SAVEPOINT s")
					}
					if a.rollback {
						steps = []string{"SAVEPOINT s", a.raise, "ROLLBACK TO SAVEPOINT s"}
					}
					steps = append(steps, a.after...)
					for _, step := range steps {
						var args []any
						if strings.Contains(step, "$1") {
							args = append(args, partition)
						}
						if _, err := tx.Exec(ctx, step, args...); err != nil {
							return err
						}
					}
					return lateCommit(ctx, tx, partition, hole)
				})
				refusedWith(t, err, a.want)
				if after := attackState(t, d); after != before {
					t.Fatalf("a refused fill changed the database:\nbefore %s\nafter  %s", before, after)
				}
			})
		}
	}

	// Well-behaved: the raise alone commits; a prune over a head that has
	// its commit, then a push, in one transaction; a push after the raise
	// in a transaction of its own.
	t.Run("well-behaved", func(t *testing.T) {
		seedPartition(t, writer, "ok")
		hole := makeHole(t, writer, "ok")
		mustExec(t, both, `SELECT sync_declare_checkpoint('ok', 'proj', 2)`)
		seq := mustPush(t, writer, "ok", "todos", 2)
		if seq != hole+1 {
			t.Fatalf("push after the declare at %d, want %d", seq, hole+1)
		}
		// Decided: a push in the (sub)transaction that wrote the partition's
		// fence row (a declare that raised it) is refused: the partition
		// row version cannot tell its allocation from the declare's touch.
		// After a SAVEPOINT, or in a transaction of its own, it passes.
		hole = makeHole(t, writer, "ok")
		before := attackState(t, d)
		err := pgx.BeginFunc(ctx, both, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT sync_declare_checkpoint('ok', 'proj3', 3)`); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `SELECT sync_append_commit('ok', 'c', 'same-tx', 'a', 0, 3, '{todos}', '{r}', '{1}', '{1}', '{"{}"}', '{NULL}')`)
			return err
		})
		if !errors.Is(gosync.MapError(err), gosync.ErrCommitNotAtHead) {
			t.Fatalf("push in the declaring transaction: err = %v, want ErrCommitNotAtHead", err)
		}
		if after := attackState(t, d); after != before {
			t.Fatalf("the refused push changed the database:\nbefore %s\nafter  %s", before, after)
		}
		var seqs []int64
		if err := pgx.BeginFunc(ctx, both, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT sync_declare_checkpoint('ok', 'proj3', 3)`); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `SAVEPOINT push`); err != nil {
				return err
			}
			for _, id := range []string{"after-savepoint-1", "after-savepoint-2"} { // two allocations in one transaction
				var seq int64
				if err := tx.QueryRow(ctx, `SELECT (sync_append_commit('ok', 'c', $1, 'a', 0, 3, '{todos}', '{r}', '{1}', '{1}', '{"{}"}', '{NULL}') ->> 'commitSeq')::bigint`, id).Scan(&seq); err != nil {
					return err
				}
				seqs = append(seqs, seq)
			}
			return nil
		}); err != nil {
			t.Fatalf("declare, savepoint, push: %v", err)
		}
		if len(seqs) != 2 || seqs[0] != hole+1 || seqs[1] != hole+2 {
			t.Fatalf("pushes after the declare at %v, want [%d %d]", seqs, hole+1, hole+2)
		}
		if err := pgx.BeginFunc(ctx, both, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT sync_prune_log('ok', 1)`); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `SELECT sync_append_commit('ok', 'c', 'after-prune', 'a', 0, 3, '{todos}', '{r}', '{1}', '{1}', '{"{}"}', '{NULL}')`)
			return err
		}); err != nil {
			t.Fatalf("prune then push in one transaction (head has its commit): %v", err)
		}
	})
}

// TestRedTeamSchemaOwnerReplacesHelper: the database owner owns the schema
// public (Postgres 15's CREATE DATABASE ... OWNER), and that owner is a
// sync_writer member. It cannot CREATE OR REPLACE a gosync function (not its
// owner), but it can drop one and create its own under the name. Neither
// may switch off the head rule or the change rule: the triggers no longer
// call sync_xid_is_current.
func TestRedTeamSchemaOwnerReplacesHelper(t *testing.T) {
	ctx := context.Background()
	d := pgtest.New(t)
	writer := loginAs(t, d, "sync_writer", nil)
	dbo, dboName := multiLogin(t, d, "dbo", "sync_writer")
	// Postgres 15's default: public belongs to pg_database_owner, i.e. to
	// whoever owns the database.
	owner := queryOne[string](t, d.Pool, `SELECT nspowner::regrole::text FROM pg_namespace WHERE nspname = 'public'`)
	dbOwner := queryOne[string](t, d.Pool, `SELECT datdba::regrole::text FROM pg_database WHERE datname = current_database()`)
	database := pgx.Identifier{d.Name}.Sanitize()
	mustExec(t, d.Pool, "ALTER SCHEMA public OWNER TO pg_database_owner")
	mustExec(t, d.Pool, "ALTER DATABASE "+database+" OWNER TO "+pgx.Identifier{dboName}.Sanitize())
	t.Cleanup(func() { // before the role's DROP OWNED
		_, _ = d.Pool.Exec(context.Background(), "ALTER DATABASE "+database+" OWNER TO "+dbOwner+"; ALTER SCHEMA public OWNER TO "+owner)
	})

	seedPartition(t, writer, "p1")

	for _, step := range []struct{ name, ddl string }{
		{"dropped", `DROP FUNCTION public.sync_xid_is_current(xid)`},
		{"replaced by one that always says yes", `CREATE FUNCTION public.sync_xid_is_current(x xid) RETURNS boolean LANGUAGE sql AS 'SELECT true'`},
	} {
		t.Run(step.name, func(t *testing.T) {
			hole := makeHole(t, writer, "p1")
			mustExec(t, dbo, step.ddl)
			for _, a := range []struct{ name, sql, want string }{
				{"commit at the empty head without allocating", fmt.Sprintf(`INSERT INTO sync_commits VALUES ('p1', %d, 'c', 'late', 'a', 0, 1)`, hole), "sync.storage.commit_not_at_head"},
				{"change under an old commit", `INSERT INTO sync_changes VALUES ('p1', 1, 7, 'todos', 'x', 1, 1, '{}', NULL)`, "sync.storage.change_without_commit"},
				{"change scope under an old commit", `INSERT INTO sync_change_scopes VALUES ('p1', 'todos', 'owner', 'evil', 1)`, "sync.storage.change_without_commit"},
			} {
				t.Run(a.name, func(t *testing.T) {
					before := attackState(t, d)
					err := pgx.BeginFunc(ctx, dbo, func(tx pgx.Tx) error {
						_, err := tx.Exec(ctx, a.sql)
						return err
					})
					refusedWith(t, err, a.want)
					if after := attackState(t, d); after != before {
						t.Fatalf("a refused attack changed the database:\nbefore %s\nafter  %s", before, after)
					}
				})
			}
			// The upstream push still works for every writer.
			if err := pgx.BeginFunc(ctx, writer, func(tx pgx.Tx) error {
				_, err := upstreamPushTx(ctx, tx, "p1", "after-"+step.name, v(1))
				return err
			}); err != nil {
				t.Fatalf("upstream push with the helper %s: %v", step.name, err)
			}
		})
	}
}

// TestRedTeamBadOps: a change's op is upstream's 1 (upsert) or 2 (delete);
// any other is refused for every writer and every path, changing nothing.
func TestRedTeamBadOps(t *testing.T) {
	ctx := context.Background()
	d := pgtest.New(t)
	writer := loginAs(t, d, "sync_writer", nil)
	seedPartition(t, writer, "p1")
	mustExec(t, d.Pool, `SELECT sync_begin_schema_change(), sync_set_schema_version(1)`)
	for _, op := range []int{0, 3, -1, 32767} {
		for _, path := range []struct {
			name string
			run  func(tx pgx.Tx) error
			want string
		}{
			{"upstream-shaped push", func(tx pgx.Tx) error {
				seq, err := oldWriterCommit(ctx, tx, "p1", v(1))
				if err != nil {
					return err
				}
				_, err = tx.Exec(ctx, `INSERT INTO sync_changes VALUES ('p1', $1, 0, 'todos', 'r', $2, 1, '{}', NULL)`, seq, op)
				return err
			}, "sync.storage.change_op_rejected"},
			{"sync_append_commit", func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, `SELECT sync_append_commit('p1', 'c', 'bad-op', 'a', 0, 1, '{todos}', '{r}', ARRAY[$1::smallint], '{1}', '{"{}"}', '{NULL}')`, op)
				return err
			}, "22023"},
			{"sync_push", func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, `SELECT * FROM sync_push('p1', 1, NULL, '{}', '{}', '{}', 'c', 'bad-op', 'a', 0,
					'{todos}', '{r}', ARRAY[$1::smallint], '{1}', '{"{}"}', '{NULL}')`, op)
				return err
			}, "22023"},
		} {
			t.Run(fmt.Sprintf("op %d/%s", op, path.name), func(t *testing.T) {
				before := attackState(t, d)
				err := pgx.BeginFunc(ctx, writer, path.run)
				refusedWith(t, err, path.want)
				if path.want == "sync.storage.change_op_rejected" && !errors.Is(gosync.MapError(err), gosync.ErrChangeOpRejected) {
					t.Errorf("MapError(%v) is not ErrChangeOpRejected", err)
				}
				if after := attackState(t, d); after != before {
					t.Fatalf("a refused change changed the database:\nbefore %s\nafter  %s", before, after)
				}
			})
		}
	}
}
