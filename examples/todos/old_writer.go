package todos

import (
	"context"
	"time"

	"github.com/gosync/gosync/internal/demodb"
)

// OldWriterCommit appends one commit the way an upstream server's push does
// (internal/demodb/queries.sql): no partition lock, no gate, writer_version as
// given (nil: an upstream server from before the fence). The demo's old
// binary and the tests that play an upstream server use it: the writer
// fence refuses it below the fence.
func OldWriterCommit(ctx context.Context, conn demodb.DBTX, partition, clientCommitID string, writerVersion *int64) (commitSeq int64, err error) {
	c, err := demodb.New().DemoOldWriterCommit(ctx, conn, demodb.DemoOldWriterCommitParams{
		Partition: partition, ClientID: "old-binary", ClientCommitID: clientCommitID,
		ActorID: "u1", CreatedAtMs: time.Now().UnixMilli(), WriterVersion: writerVersion,
	})
	return c.CommitSeq, err
}
