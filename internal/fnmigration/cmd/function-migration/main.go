// Command function-migration prints a goose migration that installs the
// given canonical function files (see package fnmigration). Run it through
// scripts/function-migration.sh.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gosync/gosync/internal/fnmigration"
)

func main() {
	migrations := flag.String("migrations", "sql/migrations", "the existing migrations, read for each function's previous definition")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: function-migration [-migrations dir] 'description' sql/functions/f.sql...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() < 2 {
		flag.Usage()
		os.Exit(2)
	}
	out, err := fnmigration.Generate(flag.Arg(0), *migrations, flag.Args()[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "function-migration:", err)
		os.Exit(1)
	}
	fmt.Print(out)
}
