#!/usr/bin/env bash
# Install PostgreSQL from the distribution's packages (if missing), start a throwaway
# cluster on 127.0.0.1 and write the test URL to .ci/pg.env. No-op when
# PROFSTORE_SKIP_POSTGRES=1.
set -euo pipefail
cd "$(dirname "$0")"
rm -f pg.env
[ "${PROFSTORE_SKIP_POSTGRES:-0}" = "1" ] && exit 0
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
chown postgres:postgres "$data"
run() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
run "$bindir/initdb -D $data -A trust -U postgres >/dev/null"
run "$bindir/pg_ctl -D $data -o '-p $port -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off' -l $data/log -w start >/dev/null"
run "$bindir/createdb -h 127.0.0.1 -p $port -U postgres profstore_test"
echo "export PROFSTORE_TEST_PG_URL=postgresql+psycopg://postgres@127.0.0.1:$port/profstore_test" > pg.env
echo "PostgreSQL $($bindir/postgres --version | awk '{print $3}') on 127.0.0.1:$port ($data)"
