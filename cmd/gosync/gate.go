package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/gosync/gosync/gosync"
)

// errGateClosed: the gate refuses; exit status 3, so scripts can wait on it.
var errGateClosed = errors.New("gate closed")

// errNotActivated: an activation answered stale or unverifiable (it printed
// which); exit status 3 as well, the database's "not yet".
var errNotActivated = errors.New("checkpoint not activated")

// refusalJSON is the gate's refusal in --json output (snake_case, as every
// document the command prints; the wire form upstream uses is Details()).
type refusalJSON struct {
	Kind                 string `json:"kind"`
	StoredSchemaVersion  *int64 `json:"stored_schema_version,omitempty"`
	RunningSchemaVersion *int64 `json:"running_schema_version,omitempty"`
	Partition            string `json:"partition,omitempty"`
	Name                 string `json:"name,omitempty"`
}

func newRefusalJSON(r gosync.Refusal) refusalJSON {
	out := refusalJSON{Kind: string(r.Kind)}
	switch r.Kind {
	case gosync.RefusalCheckpoint:
		out.Partition, out.Name = r.Checkpoint.Partition, r.Checkpoint.Name
	case gosync.RefusalEpoch:
	default:
		out.StoredSchemaVersion, out.RunningSchemaVersion = &r.StoredSchemaVersion, &r.RunningSchemaVersion
	}
	return out
}

// String is the refusal in the human line after "closed: ".
func (r refusalJSON) String() string {
	switch {
	case r.Name != "":
		return fmt.Sprintf("%s %s/%s is not activated", r.Kind, printable(r.Partition), printable(r.Name))
	case r.StoredSchemaVersion != nil:
		return fmt.Sprintf("%s: stored schema version %d, running %d", r.Kind, *r.StoredSchemaVersion, *r.RunningSchemaVersion)
	default:
		return fmt.Sprintf("%s: the log epoch changed", r.Kind)
	}
}

func gateCmd(e *env) *cobra.Command {
	var partition, declared, epoch string
	var running int64
	var asJSON bool
	c := &cobra.Command{Use: "gate", Args: cobra.NoArgs,
		Short: "may a server at --running serve --partition? (exit 3 when the gate is closed)",
		RunE: func(*cobra.Command, []string) error {
			if running < 1 {
				return usagef("gate: --running must be at least 1")
			}
			srv := gosync.Server{SchemaVersion: running, ExpectedEpoch: epoch}
			for _, d := range strings.Split(declared, ",") {
				if d == "" {
					continue
				}
				p, n, ok := strings.Cut(d, "/")
				if !ok || p == "" || n == "" {
					return usagef("gate: --declared %q is not partition/name or */name", d)
				}
				decl := gosync.CheckpointDeclaration{Partition: p, Name: n, SchemaVersion: running}
				if p == "*" {
					decl.Partition, decl.AllPartitions = "", true
				}
				srv.Declared = append(srv.Declared, decl)
			}
			return e.withPool(func(pool *pgxpool.Pool) error { return gate(e, pool, partition, srv, asJSON) })
		}}
	c.Flags().StringVar(&partition, "partition", "", "partition (required)")
	c.Flags().Int64Var(&running, "running", 0, "the running schema version (required)")
	c.Flags().StringVar(&declared, "declared", "", "checkpoints the server declares, as partition/name,... (*/name: in every partition)")
	c.Flags().StringVar(&epoch, "epoch", "", "the log epoch the client expects")
	_ = c.MarkFlagRequired("partition")
	_ = c.MarkFlagRequired("running")
	jsonFlag(c, &asJSON)
	return c
}

func gate(e *env, pool *pgxpool.Pool, partition string, srv gosync.Server, asJSON bool) error {
	s := gosync.New(pool)
	if err := requirePartition(e, s, partition); err != nil {
		return err
	}
	refusal, err := s.ServeCheck(e.ctx, partition, srv)
	if err != nil {
		return err
	}
	// The pending list is for the operator; the verdict above is the rule's.
	g, err := s.ServeGate(e.ctx, partition, srv)
	if err != nil {
		return err
	}
	var why *refusalJSON
	if refusal != nil {
		r := newRefusalJSON(*refusal)
		why = &r
	}
	if asJSON {
		out := struct {
			Open                bool                   `json:"open"`
			StoredSchemaVersion int64                  `json:"stored_schema_version"`
			LogEpoch            *string                `json:"log_epoch"`
			Pending             []gosync.CheckpointRef `json:"pending"`
			Refusal             *refusalJSON           `json:"refusal"`
		}{Open: refusal == nil, StoredSchemaVersion: g.StoredSchemaVersion, Pending: g.Pending, Refusal: why}
		if out.Pending == nil {
			out.Pending = []gosync.CheckpointRef{}
		}
		if g.Registered {
			out.LogEpoch = &g.LogEpoch
		}
		if err := writeJSON(e.stdout, out); err != nil {
			return err
		}
	} else {
		epoch := "no log epoch (unregistered)"
		if g.Registered {
			epoch = "log epoch " + strconv.Quote(g.LogEpoch)
		}
		fmt.Fprintf(e.stdout, "stored schema version %d, %s, %d pending\n", g.StoredSchemaVersion, epoch, len(g.Pending))
		const shown = 20 // at 10^5 partitions the list is for --json or `gosync status`
		for i, p := range g.Pending {
			if i == shown {
				fmt.Fprintf(e.stdout, "  ... and %d more\n", len(g.Pending)-shown)
				break
			}
			fmt.Fprintf(e.stdout, "  pending %s/%s\n", printable(p.Partition), printable(p.Name))
		}
		if why == nil {
			fmt.Fprintln(e.stdout, "open")
		} else {
			fmt.Fprintf(e.stdout, "closed: %s\n", why)
		}
	}
	if refusal != nil {
		return errGateClosed
	}
	return nil
}
