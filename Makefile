# gosync — see README.md. `make test` is what CI runs (.ci/run).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

GOOSE_TAGS := no_clickhouse no_libsql no_mssql no_mysql no_sqlite3 no_vertica no_ydb
BIN := $(CURDIR)/bin
TOOLS := $(BIN)/sqlc $(BIN)/goose $(BIN)/benchstat

.PHONY: demo run test fuzz deps tools generate check-generated lint bench db
.PHONY: docs

## demo: the whole migration barrier, step by step (a throwaway local Postgres without DATABASE_URL; with it, an empty database)
demo: deps
	go run ./cmd/gosync demo

## run: migrate DATABASE_URL and print its status
run: deps
	go run ./cmd/gosync up

## test: everything CI checks, against real Postgres, plus a short fuzzing run;
## in a private TMPDIR, failing when a throwaway cluster (gosync-pg-*) or CLI build is left in it
test: deps tools check-generated lint
	@tmp=$$(mktemp -d -t gosync-make-test.XXXXXX); chmod 1777 "$$tmp"; status=0; \
	  TMPDIR="$$tmp" GOOSE_BIN=$(BIN)/goose go test -count=1 -timeout 30m ./... || status=$$?; \
	  if [ $$status -eq 0 ]; then TMPDIR="$$tmp" $(MAKE) fuzz FUZZTIME=5s || status=$$?; fi; \
	  left=$$(ls -d "$$tmp"/gosync-pg-* "$$tmp"/gosync-cli-* 2>/dev/null || true); \
	  if [ -n "$$left" ]; then \
	    echo "make test: FAIL: the run left throwaway clusters or builds behind (removed now):" >&2; \
	    du -sh $$left >&2; status=1; \
	  fi; \
	  rm -rf "$$tmp"; exit $$status

## fuzz: fuzz the declaration encoding, the schema validation and the row codec (FUZZTIME each, default 30s)
FUZZTIME ?= 30s
fuzz:
	go test -run '^$$' -fuzz '^FuzzEncodeDeclarations$$' -fuzztime $(FUZZTIME) ./gosync
	go test -run '^$$' -fuzz '^FuzzSchemaValidate$$' -fuzztime $(FUZZTIME) ./gosync
	go test -run '^$$' -fuzz '^FuzzDecodeRow$$' -fuzztime $(FUZZTIME) ./gosync

## deps: install the Postgres binaries, psql, pgTAP and pg_prove when missing
deps:
	bash scripts/deps.sh

## tools: the pinned sqlc, goose CLI and benchstat (versions in tools/go.mod)
tools: $(TOOLS)

$(BIN)/sqlc: tools/go.mod
	cd tools && go build -o $(BIN)/ github.com/sqlc-dev/sqlc/cmd/sqlc
$(BIN)/goose: tools/go.mod
	cd tools && go build -tags '$(GOOSE_TAGS)' -o $(BIN)/ github.com/pressly/goose/v3/cmd/goose
$(BIN)/benchstat: tools/go.mod
	cd tools && go build -o $(BIN)/ golang.org/x/perf/cmd/benchstat

## generate: regenerate db/ (sql/queries) and internal/demodb/ from the queries and sql/migrations
generate: $(BIN)/sqlc
	$(BIN)/sqlc generate

## check-generated: fail when db/ or internal/demodb/ is stale (someone edited SQL without `make generate`)
check-generated: $(BIN)/sqlc
	@$(BIN)/sqlc diff || { echo "db/ or internal/demodb/ is stale: run 'make generate' and commit the result" >&2; exit 1; }

## docs: regenerate docs/sql.md (the SQL reference) from a migrated database and sql/ (a test fails when it is stale)
docs: deps $(BIN)/goose
	GOOSE_BIN=$(BIN)/goose go test -count=1 -run '^TestSQLReferenceIsCurrent$$' ./tests -update

## lint: gofmt + go vet
lint:
	@unformatted=$$(gofmt -l .); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted" >&2; exit 1; fi
	go vet ./...

## bench: benchmarks against one real server, with benchstat's summary
bench: deps $(BIN)/benchstat
	go test -run '^$$' -bench . -benchmem -count 6 -timeout 60m ./... | tee bench.out
	$(BIN)/benchstat bench.out

## db: start a throwaway local Postgres, print its URL, stop it on Ctrl-C
db: deps
	go run ./cmd/gosync db
