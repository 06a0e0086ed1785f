package gosync

import "fmt"

// CheckpointDeclaration is a backfill checkpoint the running server knows
// about: its schema bump installs it, and its gate accepts it as pending.
// It names a projection in one partition, or in every partition
// (AllPartitions, Partition empty): a multi-tenant server declares its new
// projection once instead of once per tenant.
type CheckpointDeclaration struct {
	Partition     string // the one partition; empty with AllPartitions
	AllPartitions bool   // the projection in every partition
	Name          string // the projection
	// SchemaVersion is the version the bump installs the checkpoint at (and
	// fences writers to). The gate ignores it: it only ever looks at
	// checkpoints of the running version.
	SchemaVersion int64
}

// declarationArrays is a declaration set as sync_serve_check and
// sync_install_checkpoints take it: names declared for every partition,
// and (partition, name) pairs as two parallel arrays.
type declarationArrays struct {
	Names          []string
	Partitions     []string
	PartitionNames []string
}

// encodeDeclarations splits declarations into their SQL arrays. A
// declaration that names both a partition and AllPartitions, or neither, is
// ambiguous and refused: guessing would widen what the gate lets through.
func encodeDeclarations(ds []CheckpointDeclaration) (declarationArrays, error) {
	out := declarationArrays{Names: []string{}, Partitions: []string{}, PartitionNames: []string{}}
	for i, d := range ds {
		if d.Name == "" {
			return declarationArrays{}, fmt.Errorf("%w: declaration %d has no projection name", ErrInvalidArgument, i)
		}
		switch {
		case d.AllPartitions && d.Partition != "":
			return declarationArrays{}, fmt.Errorf("%w: declaration %d of %q names partition %q and all partitions", ErrInvalidArgument, i, d.Name, d.Partition)
		case d.AllPartitions:
			out.Names = append(out.Names, d.Name)
		case d.Partition == "":
			return declarationArrays{}, fmt.Errorf("%w: declaration %d of %q names no partition (set AllPartitions to declare it in every partition)", ErrInvalidArgument, i, d.Name)
		default:
			out.Partitions = append(out.Partitions, d.Partition)
			out.PartitionNames = append(out.PartitionNames, d.Name)
		}
	}
	return out, nil
}
