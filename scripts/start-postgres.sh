#!/usr/bin/env bash
# Start a throwaway PostgreSQL server for tests and benches.
#
#   scripts/start-postgres.sh [PORT [DATADIR]]
#
# Uses Debian's binaries (/usr/lib/postgresql/<newest>/bin: initdb, postgres, pg_isready, psql).
# Makes a new data directory (initdb, trust authentication for the superuser `postgres` on loopback
# only), listens on 127.0.0.1 only (no Unix socket in /var/run: the socket goes into the data
# directory), fsync off (a test server: nothing here must survive a power loss), not daemonized (the
# server is a child of this script's shell and is orphaned when the script exits).
# initdb and the server refuse to run as root: as root they run as the `postgres` user (runuser).
# Without PORT it picks a random free high port (20000-59999) and retries on a collision; with PORT
# (and DATADIR, an existing data directory) it restarts a server "in the same place".
# On success prints "PORT PID DATADIR" on one line to stdout and exits 0; otherwise exits 1.
#
#   read -r PG_PORT PG_PID PG_DATA < <(scripts/start-postgres.sh)
#   export PG_URL="postgres://postgres@127.0.0.1:$PG_PORT/postgres"
#   ...; kill "$PG_PID"; rm -rf "$PG_DATA"
#
# Stop it by its PID (SIGTERM: a "smart" shutdown; SIGINT: "fast", which the tests use). The data
# directory is left for the caller to remove (or to restart the server on).
set -euo pipefail

BIN=""
for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
  if [[ -x "$d/initdb" && -x "$d/postgres" ]]; then BIN="$d"; break; fi
done
[[ -n "$BIN" ]] || { echo "PostgreSQL is not installed (apt-get install -y --no-install-recommends postgresql)" >&2; exit 1; }

FIXED_PORT="${1:-}"
FIXED_DATA="${2:-}"
if [[ -n "$FIXED_PORT" && ! "$FIXED_PORT" =~ ^[0-9]+$ ]]; then
  echo "usage: $0 [PORT [DATADIR]]" >&2; exit 2
fi

# As root, run as the postgres user (initdb and postgres refuse root); otherwise as ourselves.
AS=()
if [[ "$(id -u)" -eq 0 ]]; then
  id postgres >/dev/null 2>&1 || { echo "no postgres user to run PostgreSQL as" >&2; exit 1; }
  AS=(runuser -u postgres --)
fi

if [[ -n "$FIXED_DATA" ]]; then
  DIR="$FIXED_DATA"
else
  DIR=$(mktemp -d "${TMPDIR:-/tmp}/mcp-confirm-postgres.XXXXXX")
  chmod 0755 "$DIR"
  [[ ${#AS[@]} -gt 0 ]] && chown postgres: "$DIR"
  "${AS[@]}" "$BIN/initdb" -D "$DIR/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync \
    >"$DIR/initdb.log" 2>&1 || { echo "initdb failed; see $DIR/initdb.log" >&2; exit 1; }
fi

ATTEMPTS=8
[[ -n "$FIXED_PORT" ]] && ATTEMPTS=1

for _ in $(seq 1 "$ATTEMPTS"); do
  PORT="${FIXED_PORT:-$(( 20000 + RANDOM % 40000 ))}"
  if [[ -z "$FIXED_PORT" ]] && (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
    continue
  fi
  "${AS[@]}" "$BIN/postgres" -D "$DIR/data" -p "$PORT" -c listen_addresses=127.0.0.1 \
    -c unix_socket_directories="$DIR/data" -c fsync=off -c synchronous_commit=off \
    -c full_page_writes=off -c max_connections=200 -c shared_buffers=32MB \
    </dev/null >>"$DIR/postgres.log" 2>&1 &
  PID=$!
  for _ in $(seq 1 1000); do   # up to ~10 s
    # Our own server: its postmaster.pid names this port, and it accepts connections.
    if [[ -f "$DIR/data/postmaster.pid" ]] && [[ "$(sed -n 4p "$DIR/data/postmaster.pid" 2>/dev/null)" == "$PORT" ]] \
      && "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT" -U postgres 2>/dev/null; then
      # The PID to signal is the postmaster's (runuser may stand between this shell and it).
      PMPID=$(sed -n 1p "$DIR/data/postmaster.pid")
      echo "$PORT $PMPID $DIR"
      exit 0
    fi
    kill -0 "$PID" 2>/dev/null || break   # exited (port taken?): next port
    sleep 0.01
  done
  kill "$PID" 2>/dev/null || true
done
echo "postgres failed to start; see $DIR/postgres.log" >&2
exit 1
