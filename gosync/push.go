package gosync

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/gosync/gosync/db"
)

// Commit is one client commit to append.
type Commit struct {
	ClientID, ClientCommitID, ActorID string
	CreatedAtMs                       int64
	Changes                           []Change
}

// The ops of a change (Change.Op), as the upstream server stores them.
const (
	OpUpsert int16 = 1 // the row was inserted or updated; Payload holds it
	OpDelete int16 = 2 // the row was deleted; Payload is usually nil
)

// Change is one row change of a commit.
type Change struct {
	Table, RowID string
	Op           int16               // OpUpsert or OpDelete
	RowVersion   *int64              // nil: none
	Scopes       map[string][]string // scope variable → values, indexed in sync_change_scopes
	Payload      []byte              // nil: none
}

// PushResult says where the commit landed.
type PushResult struct {
	CommitSeq int64
	Replayed  bool // the commit was pushed before; nothing was appended
}

// Push appends a commit in one SQL call (sync_push), so one round trip:
// the partition lock, the refusal rule applied after the lock is granted (a
// refusal changes nothing and returns a *NotReadyError), then the commit
// stamped with the running schema version, its changes, change scopes and
// push result. Replaying a pushed (ClientID, ClientCommitID) returns its
// stored result and appends nothing.
func (s *Store) Push(ctx context.Context, partition string, c Commit, srv Server) (PushResult, error) {
	check, err := serveCheckParams(partition, srv)
	if err != nil {
		return PushResult{}, err
	}
	arg := db.PushParams{
		Partition: partition, RunningSchemaVersion: check.RunningSchemaVersion, ExpectedLogEpoch: check.ExpectedLogEpoch,
		DeclaredNames: check.DeclaredNames, DeclaredPartitions: check.DeclaredPartitions,
		DeclaredPartitionNames: check.DeclaredPartitionNames,
		ClientID:               c.ClientID, ClientCommitID: c.ClientCommitID, ActorID: c.ActorID, CreatedAtMs: c.CreatedAtMs,
		Tbls: make([]string, len(c.Changes)), RowIds: make([]string, len(c.Changes)),
		Ops: make([]int16, len(c.Changes)), RowVersions: make([]*int64, len(c.Changes)),
		Scopes: make([][]byte, len(c.Changes)), Payloads: make([][]byte, len(c.Changes)),
	}
	for i, ch := range c.Changes {
		// A nil row version is NULL; sync_append_commit refuses a negative one (22023).
		arg.Tbls[i], arg.RowIds[i], arg.Ops[i], arg.RowVersions[i], arg.Payloads[i] = ch.Table, ch.RowID, ch.Op, ch.RowVersion, ch.Payload
		scopes := ch.Scopes
		if scopes == nil {
			scopes = map[string][]string{}
		}
		b, err := json.Marshal(scopes)
		if err != nil {
			return PushResult{}, err
		}
		arg.Scopes[i] = b
	}
	r, err := s.q.Push(ctx, s.conn, arg)
	if err != nil {
		return PushResult{}, MapError(err)
	}
	if err := notReady(r.Refusal, r.StoredSchemaVersion, srv.SchemaVersion, r.CheckpointPartition, r.CheckpointName); err != nil {
		return PushResult{}, err
	}
	var out struct {
		CommitSeq int64 `json:"commitSeq"`
		Replayed  bool  `json:"replayed"`
	}
	if err := json.Unmarshal(r.Result, &out); err != nil {
		return PushResult{}, fmt.Errorf("gosync: push result: %w", err)
	}
	return PushResult(out), nil
}
