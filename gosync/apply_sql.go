package gosync

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// ApplyRangeSQL turns one set-based SQL statement of the operator's own
// into a Backfill.ApplyRange, so a projection can be backfilled without
// writing Go. The statement runs once per batch, inside the batch's
// transaction (the watermark advances with it), with these parameters:
//
//	$1 text    the partition
//	$2 bigint  after: the batch covers the changes with commit_seq > $2
//	$3 bigint  through: ... and commit_seq <= $3
//	$4 text[]  the source tables (Backfill.Sources)
//
// It may use any prefix of them ($1 to $k). The rows it affects count as
// the batch's rows. Like every apply, it sees each change range once: a
// batch commits with its watermark or rolls back whole.
func ApplyRangeSQL(statement string, sources []string) (func(ctx context.Context, tx pgx.Tx, partition string, after, through int64) (int64, error), error) {
	if strings.TrimSpace(statement) == "" {
		return nil, fmt.Errorf("%w: the apply statement is empty", ErrInvalidArgument)
	}
	if word := firstKeyword(statement); transactionControl[word] {
		return nil, fmt.Errorf("%w: the apply statement is %s: it runs inside the batch's transaction, which it must not end or nest", ErrInvalidArgument, word)
	}
	if sources == nil {
		sources = []string{}
	}
	return func(ctx context.Context, tx pgx.Tx, partition string, after, through int64) (int64, error) {
		// Prepared once per connection (pgx caches it by name): the
		// description says how many of the parameters the statement uses.
		sd, err := tx.Conn().Prepare(ctx, statement, statement)
		if err != nil {
			return 0, fmt.Errorf("gosync: apply statement: %w", err)
		}
		args := []any{partition, after, through, sources}
		if len(sd.ParamOIDs) > len(args) {
			return 0, fmt.Errorf("%w: the apply statement uses %d parameters; only $1 (partition), $2 (after), $3 (through) and $4 (sources) exist",
				ErrInvalidArgument, len(sd.ParamOIDs))
		}
		tag, err := tx.Exec(ctx, statement, args[:len(sd.ParamOIDs)]...)
		if err != nil {
			return 0, err
		}
		return tag.RowsAffected(), nil
	}, nil
}

// transactionControl are the statements that would end (or nest in) the
// batch's transaction, letting the watermark advance outside it. Refused up
// front; the batch's advance also checks it still runs in the transaction
// the batch opened (ErrBatchTransactionEnded), whatever ran.
var transactionControl = map[string]bool{"BEGIN": true, "START": true, "COMMIT": true, "END": true,
	"ROLLBACK": true, "ABORT": true, "SAVEPOINT": true, "RELEASE": true, "PREPARE": true}

// firstKeyword is the statement's first word, upper-cased, past white space
// and comments (-- to the end of the line, nested /* */).
func firstKeyword(sql string) string {
	for {
		sql = strings.TrimLeft(sql, " \t\r\n\f\v")
		switch {
		case strings.HasPrefix(sql, "--"):
			i := strings.IndexByte(sql, '\n')
			if i < 0 {
				return ""
			}
			sql = sql[i+1:]
		case strings.HasPrefix(sql, "/*"):
			depth, i := 0, 0
			for i < len(sql) {
				if strings.HasPrefix(sql[i:], "/*") {
					depth, i = depth+1, i+2
				} else if strings.HasPrefix(sql[i:], "*/") {
					depth, i = depth-1, i+2
					if depth == 0 {
						break
					}
				} else {
					i++
				}
			}
			sql = sql[i:]
		default:
			end := strings.IndexFunc(sql, func(r rune) bool {
				return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
			})
			if end < 0 {
				end = len(sql)
			}
			return strings.ToUpper(sql[:end])
		}
	}
}
