package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/gosync/gosync/gosync"
)

// checkpointFlags are the flags the checkpoint verbs share; each verb
// registers only those it takes.
type checkpointFlags struct {
	partition, name, sources  string
	version, epoch, watermark int64
	asJSON                    bool
}

func (f *checkpointFlags) key(c *cobra.Command) {
	c.Flags().StringVar(&f.partition, "partition", "", "partition (required)")
	c.Flags().StringVar(&f.name, "name", "", "checkpoint (projection) name (required)")
	_ = c.MarkFlagRequired("partition")
	_ = c.MarkFlagRequired("name")
}

func checkpointCmd(e *env) *cobra.Command {
	return verbs("checkpoint", "declare, claim, activate, list or remove backfill checkpoints",
		declareOrClaim(e, "declare", "declare a checkpoint (and raise the partition's writer fence to --version)"),
		declareOrClaim(e, "claim", "claim a declared checkpoint: a new owner epoch, state backfilling"),
		activateCmd(e), listCmd(e), removeCmd(e))
}

func declareOrClaim(e *env, verb, short string) *cobra.Command {
	var f checkpointFlags
	c := &cobra.Command{Use: verb, Args: cobra.NoArgs, Short: short,
		RunE: func(*cobra.Command, []string) error {
			if f.version < 1 {
				return usagef("checkpoint %s: --version must be at least 1", verb)
			}
			return e.withPool(func(pool *pgxpool.Pool) error {
				s := gosync.New(pool)
				call := s.DeclareCheckpoint
				if verb == "claim" {
					call = s.ClaimCheckpoint
				}
				cp, err := call(e.ctx, f.partition, f.name, f.version)
				if err != nil {
					return err
				}
				if f.asJSON {
					return writeJSON(e.stdout, checkpointJSON(cp))
				}
				return printCheckpoints(e, []gosync.Checkpoint{cp})
			})
		}}
	f.key(c)
	c.Flags().Int64Var(&f.version, "version", 0, "schema version (required)")
	_ = c.MarkFlagRequired("version")
	jsonFlag(c, &f.asJSON)
	return c
}

func activateCmd(e *env) *cobra.Command {
	var f checkpointFlags
	c := &cobra.Command{Use: "activate", Args: cobra.NoArgs,
		Short: "activate a checkpoint at its stored watermark (exit 3 when stale or unverifiable)",
		RunE: func(*cobra.Command, []string) error {
			if f.epoch < 0 || f.watermark < 0 {
				return usagef("checkpoint activate: --epoch and --watermark must be at least 0")
			}
			return e.withPool(func(pool *pgxpool.Pool) error {
				r, err := gosync.New(pool).ActivateCheckpoint(e.ctx, gosync.CheckpointActivation{Partition: f.partition, Name: f.name, OwnerEpoch: f.epoch, Watermark: f.watermark, Sources: strings.Split(f.sources, ",")})
				if err != nil {
					return err
				}
				if f.asJSON {
					err = writeJSON(e.stdout, map[string]string{"partition": f.partition, "name": f.name, "result": string(r)})
				} else {
					_, err = e.stdout.Write([]byte(string(r) + "\n"))
				}
				if err == nil && r != gosync.ActivationActivated {
					return errNotActivated
				}
				return err
			})
		}}
	f.key(c)
	c.Flags().Int64Var(&f.epoch, "epoch", -1, "owner epoch from the claim (required)")
	c.Flags().Int64Var(&f.watermark, "watermark", -1, "the stored watermark (required)")
	c.Flags().StringVar(&f.sources, "sources", "", "comma-separated source tables whose changes the projection reads (required: the coverage check runs over them)")
	for _, n := range []string{"epoch", "watermark", "sources"} {
		_ = c.MarkFlagRequired(n)
	}
	jsonFlag(c, &f.asJSON)
	return c
}

func listCmd(e *env) *cobra.Command {
	var f checkpointFlags
	c := &cobra.Command{Use: "list", Args: cobra.NoArgs, Short: "list checkpoints (of one partition with --partition)",
		RunE: func(*cobra.Command, []string) error {
			return e.withPool(func(pool *pgxpool.Pool) error {
				s := gosync.New(pool)
				if err := requirePartition(e, s, f.partition); err != nil {
					return err
				}
				cps, err := s.Checkpoints(e.ctx, f.partition)
				if err != nil {
					return err
				}
				if f.asJSON {
					out := make([]checkpointRow, len(cps))
					for i, cp := range cps {
						out[i] = checkpointJSON(cp)
					}
					return writeJSON(e.stdout, out)
				}
				return printCheckpoints(e, cps)
			})
		}}
	c.Flags().StringVar(&f.partition, "partition", "", "list this partition's checkpoints only")
	jsonFlag(c, &f.asJSON)
	return c
}

func removeCmd(e *env) *cobra.Command {
	var f checkpointFlags
	c := &cobra.Command{Use: "remove", Args: cobra.NoArgs,
		Short: "remove a checkpoint declared by mistake (not an activated one); the writer fence stays",
		RunE: func(*cobra.Command, []string) error {
			return e.withPool(func(pool *pgxpool.Pool) error {
				cp, err := gosync.New(pool).RemoveCheckpoint(e.ctx, f.partition, f.name)
				if err != nil {
					return err
				}
				if f.asJSON {
					return writeJSON(e.stdout, checkpointJSON(cp))
				}
				fmt.Fprintf(e.stdout, "removed %s/%s (%s at schema version %d); the writer fence of %s stays as it is (fences never go down)\n",
					printable(cp.Partition), printable(cp.Name), cp.State, cp.SchemaVersion, printable(cp.Partition))
				return nil
			})
		}}
	f.key(c)
	jsonFlag(c, &f.asJSON)
	return c
}

// checkpointRow is a checkpoint in --json output.
type checkpointRow struct {
	Partition     string `json:"partition"`
	Name          string `json:"name"`
	SchemaVersion int64  `json:"schema_version"`
	State         string `json:"state"`
	Watermark     int64  `json:"watermark"`
	OwnerEpoch    int64  `json:"owner_epoch"`
	ObservedRows  int64  `json:"observed_rows"`
	UpdatedAtMs   int64  `json:"updated_at_ms"`
}

func checkpointJSON(c gosync.Checkpoint) checkpointRow {
	return checkpointRow{c.Partition, c.Name, c.SchemaVersion, string(c.State), c.Watermark, c.OwnerEpoch, c.ObservedRows, c.UpdatedAtMs}
}

func printCheckpoints(e *env, cps []gosync.Checkpoint) error {
	out := make([][]string, len(cps))
	for i, c := range cps {
		out[i] = []string{c.Partition, c.Name, string(c.State), strconv.FormatInt(c.SchemaVersion, 10),
			strconv.FormatInt(c.OwnerEpoch, 10), strconv.FormatInt(c.Watermark, 10), strconv.FormatInt(c.ObservedRows, 10)}
	}
	return table(e.stdout, []string{"PARTITION", "NAME", "STATE", "VERSION", "EPOCH", "WATERMARK", "ROWS"}, out)
}
