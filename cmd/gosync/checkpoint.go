package main

import (
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gosync/gosync/gosync"
)

func runCheckpoint(e env, args []string) error {
	if len(args) == 0 {
		return usagef("usage: gosync checkpoint declare|claim|activate|list [flags]")
	}
	verb := args[0]
	fs := flags("checkpoint "+verb, e)
	partition := fs.String("partition", "", "partition")
	name := fs.String("name", "", "checkpoint (projection) name")
	version := fs.Int64("version", 0, "schema version (declare, claim)")
	epoch := fs.Int64("epoch", -1, "owner epoch from the claim (activate)")
	watermark := fs.Int64("watermark", -1, "watermark (activate)")
	sources := fs.String("sources", "", "comma-separated source tables whose changes the projection reads (activate; required: the coverage check runs over them)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	need := func(ok bool, what string) error {
		if !ok {
			return usagef("checkpoint %s: %s is required", verb, what)
		}
		return nil
	}
	switch verb {
	case "declare", "claim":
		if err := firstErr(need(*partition != "", "--partition"), need(*name != "", "--name"), need(*version > 0, "--version")); err != nil {
			return err
		}
	case "activate":
		if err := firstErr(need(*partition != "", "--partition"), need(*name != "", "--name"),
			need(*epoch >= 0, "--epoch"), need(*watermark >= 0, "--watermark"), need(*sources != "", "--sources")); err != nil {
			return err
		}
	case "list":
	default:
		return usagef("unknown checkpoint command %q (declare|claim|activate|list)", verb)
	}
	return e.withPool(func(pool *pgxpool.Pool) error {
		s := gosync.New(pool)
		switch verb {
		case "declare", "claim":
			call := s.DeclareCheckpoint
			if verb == "claim" {
				call = s.ClaimCheckpoint
			}
			cp, err := call(e.ctx, *partition, *name, *version)
			if err != nil {
				return err
			}
			return printCheckpoints(e, []gosync.Checkpoint{cp}, *asJSON)
		case "activate":
			r, err := s.ActivateCheckpoint(e.ctx, *partition, *name, *epoch, *watermark, strings.Split(*sources, ","))
			if err != nil {
				return err
			}
			if *asJSON {
				err = writeJSON(e.stdout, map[string]string{"result": string(r)})
			} else {
				_, err = e.stdout.Write([]byte(string(r) + "\n"))
			}
			if err == nil && r != gosync.Activated {
				return errNotActivated
			}
			return err
		default: // list
			if err := requirePartition(e, s, *partition); err != nil {
				return err
			}
			cps, err := s.Checkpoints(e.ctx, *partition)
			if err != nil {
				return err
			}
			return printCheckpoints(e, cps, *asJSON)
		}
	})
}

func printCheckpoints(e env, cps []gosync.Checkpoint, asJSON bool) error {
	if asJSON {
		type row struct {
			Partition     string `json:"partition"`
			Name          string `json:"name"`
			SchemaVersion int64  `json:"schema_version"`
			State         string `json:"state"`
			Watermark     int64  `json:"watermark"`
			OwnerEpoch    int64  `json:"owner_epoch"`
			ObservedRows  int64  `json:"observed_rows"`
			UpdatedAtMs   int64  `json:"updated_at_ms"`
		}
		rows := make([]row, len(cps))
		for i, c := range cps {
			rows[i] = row{c.Partition, c.Name, c.SchemaVersion, string(c.State), c.Watermark, c.OwnerEpoch, c.ObservedRows, c.UpdatedAtMs}
		}
		return writeJSON(e.stdout, rows)
	}
	out := make([][]string, len(cps))
	for i, c := range cps {
		out[i] = []string{c.Partition, c.Name, string(c.State), strconv.FormatInt(c.SchemaVersion, 10),
			strconv.FormatInt(c.OwnerEpoch, 10), strconv.FormatInt(c.Watermark, 10), strconv.FormatInt(c.ObservedRows, 10)}
	}
	return table(e.stdout, []string{"PARTITION", "NAME", "STATE", "VERSION", "EPOCH", "WATERMARK", "ROWS"}, out)
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
