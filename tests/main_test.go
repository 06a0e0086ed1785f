// Package tests holds gosync's integration suites. Every test runs against a
// real Postgres, each in its own database (see internal/pgtest).
package tests

import (
	"os"
	"testing"

	"github.com/gosync/gosync/internal/pgtest"
)

func TestMain(m *testing.M) {
	code := pgtest.Run(m)
	removeCLIBinary() // the temp directory keeps nothing of a run
	os.Exit(code)
}
