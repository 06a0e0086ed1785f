package todos

import (
	"context"
	"time"

	"github.com/gosync/gosync/internal/db"
)

// OldWriterCommit appends one commit the way an upstream server's push does
// (sql/queries/demo.sql): no partition lock, no gate, writer_version as
// given (nil: an upstream server from before the fence). The demo's old
// binary and the fence tests use it to show what the writer fence refuses.
func OldWriterCommit(ctx context.Context, conn db.DBTX, partition, clientCommitID string, writerVersion *int64) (commitSeq int64, err error) {
	c, err := db.New().DemoOldWriterCommit(ctx, conn, db.DemoOldWriterCommitParams{
		Partition: partition, ClientID: "old-binary", ClientCommitID: clientCommitID,
		ActorID: "u1", CreatedAtMs: time.Now().UnixMilli(), WriterVersion: writerVersion,
	})
	return c.CommitSeq, err
}
