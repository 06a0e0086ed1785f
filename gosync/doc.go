// Package gosync is the Go API of gosync: it applies the embedded migrations
// (Migrate, NewMigrator) and calls the SQL rules of the migration barrier
// through the generated queries of package db, whose types never appear in
// its API (db is public for services that want the bare SQL wrappers). A Store (New, or WithTx inside a caller's transaction) carries every
// call; DESIGN.md maps each method to its SQL function, and errors.go lists
// every error it returns.
package gosync
