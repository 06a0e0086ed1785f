// Package sqlfiles embeds gosync's SQL: the goose migrations, the canonical
// function bodies, the relation comments and the adoption script, so Go code applies exactly the
// files that the goose CLI and sqlc read from disk. It lives in sql/ (import
// path github.com/gosync/gosync/sql) because embed reaches only files below
// it; its name keeps it apart from database/sql.
package sqlfiles

import (
	"embed"
	"io/fs"
)

//go:embed migrations/*.sql functions/*.sql adopt/*.sql comments.sql
var files embed.FS

// Migrations returns the goose migrations, at the root of the FS as goose's
// Provider expects.
func Migrations() fs.FS { return sub("migrations") }

// Functions returns the canonical function bodies, one file per function.
func Functions() fs.FS { return sub("functions") }

// Comments returns sql/comments.sql: the COMMENT statements of gosync's
// tables, views, sequences and triggers (a function's is in its canonical
// file), which the migrations carry verbatim.
func Comments() string { return mustRead("comments.sql") }

// AdoptUpstream returns the script that adopts a database an upstream
// server created (sql/adopt/upstream.sql): run before goose, it leaves the
// state of migration 00001 and records it in gosync_db_version.
func AdoptUpstream() string { return mustRead("adopt/upstream.sql") }

func mustRead(name string) string {
	b, err := files.ReadFile(name)
	if err != nil {
		// Unreachable: the embed pattern includes the file.
		panic(err)
	}
	return string(b)
}

func sub(dir string) fs.FS {
	f, err := fs.Sub(files, dir)
	if err != nil {
		// Unreachable: dir is a constant that the embed pattern includes.
		panic(err)
	}
	return f
}
