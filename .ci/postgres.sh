#!/usr/bin/env bash
# Install PostgreSQL from the distribution's packages (if missing), start a throwaway
# cluster on 127.0.0.1 and write the test URL, the data directory and the binaries to
# $PROFSTORE_PG_ENV (default .ci/pg.env).
#   .ci/postgres.sh        start (PROFSTORE_SKIP_POSTGRES=1: start nothing, say so, exit 0;
#                          .ci/run refuses that setting: CI needs the PostgreSQL pass)
#   .ci/postgres.sh stop   stop the cluster the env file names and delete its data directory
set -euo pipefail
cd "$(dirname "$0")"
envfile="${PROFSTORE_PG_ENV:-$PWD/pg.env}"
run() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }

if [ "${1:-start}" = stop ]; then
  [ -f "$envfile" ] || exit 0
  # shellcheck disable=SC1090
  . "$envfile"
  if [ -n "${PROFSTORE_PG_DATA:-}" ] && [ -d "$PROFSTORE_PG_DATA" ]; then
    run "$PROFSTORE_PG_BINDIR/pg_ctl -D $PROFSTORE_PG_DATA -m fast -w stop >/dev/null" || true
    rm -rf "$PROFSTORE_PG_DATA"
    echo "PostgreSQL on 127.0.0.1:$PROFSTORE_PG_PORT stopped, $PROFSTORE_PG_DATA removed"
  fi
  rm -f "$envfile"
  exit 0
fi

rm -f "$envfile"
if [ "${PROFSTORE_SKIP_POSTGRES:-0}" = "1" ]; then
  echo "PROFSTORE_SKIP_POSTGRES=1: no PostgreSQL started (the PostgreSQL pass will not run)" >&2
  exit 0
fi
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$bindir" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq postgresql >/dev/null
  bindir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
fi
port="${PROFSTORE_PG_PORT:-55432}"
# A port something already listens on (a cluster left by an earlier run) is skipped.
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
data=$(mktemp -d /tmp/profstore-pg.XXXXXX)
if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$data"; fi
run "$bindir/initdb -D $data -A trust -U postgres >/dev/null"
run "$bindir/pg_ctl -D $data -o '-p $port -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off' -l $data/log -w start >/dev/null"
{
  echo "export PROFSTORE_PG_DATA=$data PROFSTORE_PG_BINDIR=$bindir PROFSTORE_PG_PORT=$port"
  echo "export PROFSTORE_TEST_PG_URL=postgresql+psycopg://postgres@127.0.0.1:$port/profstore_test"
} > "$envfile"
run "$bindir/createdb -h 127.0.0.1 -p $port -U postgres profstore_test"
echo "PostgreSQL $($bindir/postgres --version | awk '{print $3}') on 127.0.0.1:$port ($data)"
