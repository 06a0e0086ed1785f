#!/usr/bin/env bash
# Prints a goose migration that installs functions from their canonical
# files, verbatim (the canonical-body test demands it): body, SECURITY
# DEFINER, the pinned search_path, the grants and comments, with @extschema@
# replaced by the migrated schema at run time. Up and Down end by recording
# the installed catalog for the audit (every migration from 00020 on must).
# The Down undoes the Up exactly: a new function is dropped; a function that
# exists gets back the definition of the latest earlier migration that
# defined it, with the SECURITY, search_path, grants and comment the
# migrations left it with (read from sql/migrations/ by
# internal/fnmigration; tests/function_migration_test.go and
# tests/migration_down_test.go check the result on a real database).
#
#   scripts/function-migration.sh "what it changes" sql/functions/a.sql ... > sql/migrations/000NN_name.sql
#
# MIGRATIONS=dir reads the earlier migrations from dir instead.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 'description' sql/functions/f.sql..." >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
migrations=$(realpath "${MIGRATIONS:-$root/sql/migrations}")
desc=$1; shift
files=()
for f in "$@"; do files+=("$(realpath "$f")"); done
cd "$root"
exec go run ./internal/fnmigration/cmd/function-migration -migrations "$migrations" "$desc" "${files[@]}"
