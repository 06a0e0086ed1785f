package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gosync/gosync/gosync"
)

// errGateClosed: the gate refuses; exit status 3, so scripts can wait on it.
var errGateClosed = errors.New("gate closed")

// errNotActivated: an activation answered stale or unverifiable (it printed
// which); exit status 3 as well, the database's "not yet".
var errNotActivated = errors.New("checkpoint not activated")

func runGate(e env, args []string) error {
	fs := flags("gate", e)
	partition := fs.String("partition", "", "partition (required)")
	running := fs.Int64("running", 0, "the running schema version (required)")
	declared := fs.String("declared", "", "checkpoints the server declares, as partition/name,... (*/name: in every partition)")
	epoch := fs.String("epoch", "", "the log epoch the client expects")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *partition == "" || *running < 1 {
		return usagef("gate: --partition and --running (>= 1) are required")
	}
	srv := gosync.Server{SchemaVersion: *running, ExpectedEpoch: *epoch}
	for _, d := range strings.Split(*declared, ",") {
		if d == "" {
			continue
		}
		p, n, ok := strings.Cut(d, "/")
		if !ok || p == "" || n == "" {
			return usagef("gate: --declared %q is not partition/name or */name", d)
		}
		decl := gosync.CheckpointDeclaration{Partition: p, Name: n, SchemaVersion: *running}
		if p == "*" {
			decl.Partition, decl.AllPartitions = "", true
		}
		srv.Declared = append(srv.Declared, decl)
	}
	return e.withPool(func(pool *pgxpool.Pool) error {
		s := gosync.New(pool)
		if err := requirePartition(e, s, *partition); err != nil {
			return err
		}
		refusal, err := s.ServeCheck(e.ctx, *partition, srv)
		if err != nil {
			return err
		}
		// The pending list is for the operator; the verdict above is the rule's.
		g, err := s.ReadServeGate(e.ctx, *partition, *running)
		if err != nil {
			return err
		}
		if *asJSON {
			out := map[string]any{"stored_schema_version": g.StoredSchemaVersion, "log_epoch": nil,
				"pending": g.Pending, "open": refusal == nil}
			if g.Registered {
				out["log_epoch"] = g.LogEpoch
			}
			if refusal != nil {
				out["refusal"] = map[string]any{"kind": refusal.Kind, "details": (&gosync.NotReadyError{Refusal: *refusal}).Details()}
			}
			if err := writeJSON(e.stdout, out); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(e.stdout, "stored schema version %d, log epoch %q, %d pending\n", g.StoredSchemaVersion, g.LogEpoch, len(g.Pending))
			const shown = 20 // at 10^5 partitions the list is for --json or `gosync status`
			for i, p := range g.Pending {
				if i == shown {
					fmt.Fprintf(e.stdout, "  ... and %d more\n", len(g.Pending)-shown)
					break
				}
				fmt.Fprintf(e.stdout, "  pending %s/%s\n", p.Partition, p.Name)
			}
			if refusal == nil {
				fmt.Fprintln(e.stdout, "open")
			} else {
				fmt.Fprintf(e.stdout, "closed: %s %v\n", refusal.Kind, (&gosync.NotReadyError{Refusal: *refusal}).Details())
			}
		}
		if refusal != nil {
			return errGateClosed
		}
		return nil
	})
}
