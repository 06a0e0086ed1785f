// Package sql embeds gosync's SQL: the goose migrations and the canonical
// function bodies, so Go code applies exactly the files that the goose CLI
// and sqlc read from disk.
package sql

import (
	"embed"
	"io/fs"
)

//go:embed migrations/*.sql functions/*.sql
var files embed.FS

// Migrations returns the goose migrations, at the root of the FS as goose's
// Provider expects.
func Migrations() fs.FS { return sub("migrations") }

// Functions returns the canonical function bodies, one file per function.
func Functions() fs.FS { return sub("functions") }

func sub(dir string) fs.FS {
	f, err := fs.Sub(files, dir)
	if err != nil {
		// Unreachable: dir is a constant that the embed pattern includes.
		panic(err)
	}
	return f
}
