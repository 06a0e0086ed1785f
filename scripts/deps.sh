#!/usr/bin/env bash
# Installs what the tests need and the machine lacks: the Postgres server
# binaries (the harness starts a throwaway cluster from them), psql, pgTAP
# and pg_prove. Debian packages; as root it installs them, otherwise it says
# what to install. It never lets the database tests be skipped.
set -euo pipefail

have_server() {
  local dir
  dir=$(pg_config --bindir 2>/dev/null || true)
  [ -n "$dir" ] && [ -x "$dir/initdb" ] && [ -x "$dir/postgres" ] && return 0
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null
}

pg_major() {
  # The newest installed server's major version (Debian layout).
  ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -1
}

have_pgtap() {
  local major
  major=$(pg_major)
  [ -n "$major" ] && [ -f "/usr/share/postgresql/$major/extension/pgtap.control" ]
}

missing=()
have_server || missing+=(postgresql)
command -v psql >/dev/null || missing+=(postgresql-client)
command -v pg_prove >/dev/null || missing+=(libtap-parser-sourcehandler-pgtap-perl)
if [ ${#missing[@]} -eq 0 ] && have_pgtap; then
  exit 0
fi

install() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "deps: missing Debian packages: $*" >&2
    echo "deps: install them with: sudo apt-get install -y $*" >&2
    exit 1
  fi
  echo "deps: installing $*" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

[ ${#missing[@]} -eq 0 ] || install "${missing[@]}"
have_pgtap || install "postgresql-$(pg_major)-pgtap"

have_server || { echo "deps: Postgres server binaries still missing" >&2; exit 1; }
have_pgtap || { echo "deps: pgTAP still missing" >&2; exit 1; }
command -v pg_prove >/dev/null || { echo "deps: pg_prove still missing" >&2; exit 1; }
