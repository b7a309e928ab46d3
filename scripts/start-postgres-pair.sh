#!/usr/bin/env bash
# Start a throwaway PostgreSQL primary with a synchronous standby on loopback, for the failover test
# (test/e2e/postgresFailover.test.ts) and its soak (npm run soak:failover).
#
#   scripts/start-postgres-pair.sh [TEMPLATE]
#
# TEMPLATE (optional): a directory holding a data directory made by initdb and never started; when it
# does not exist yet, this script makes it. The primary is then a copy of it (cp -a: a run of many
# pairs spends initdb's seconds once). The caller removes it.
#
# Unlike scripts/start-postgres.sh, durability is NOT turned off: fsync, full_page_writes and the
# WAL's own flushes stay on (what a failover test is about). The pair:
# - the primary: a new data directory (initdb; trust authentication for the superuser `postgres`
#   on loopback only, replication included), wal_level=replica,
#   synchronous_standby_names='FIRST 1 (standby1)', synchronous_commit=remote_apply: a commit is
#   acknowledged only once the standby has applied it;
# - the standby: a copy of the primary by `pg_basebackup -R` (standby.signal and primary_conninfo
#   with application_name=standby1), hot_standby on, on its own port, with no synchronous standby
#   of its own (once promoted it is a primary without a standby: a commit there waits for nobody).
# Both listen on 127.0.0.1 only (their Unix sockets in their data directories), not daemonized
# (children of this script's shell, orphaned when it exits). initdb and the servers refuse to run as
# root: as root they run as the `postgres` user (runuser).
# Before printing anything it waits until the primary's pg_stat_replication shows standby1
# `streaming` with sync_state `sync`.
# On success prints "PRIMARY_PORT PRIMARY_PID STANDBY_PORT STANDBY_PID DIR" on one line to stdout and
# exits 0 (the PIDs are the postmasters'); otherwise exits 1 (whatever started is stopped, DIR removed).
#
#   read -r P_PORT P_PID S_PORT S_PID PAIR_DIR < <(scripts/start-postgres-pair.sh)
#   ...; kill -INT "$P_PID" "$S_PID"; rm -rf "$PAIR_DIR"
set -euo pipefail

BIN=""
for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
  if [[ -x "$d/initdb" && -x "$d/postgres" && -x "$d/pg_basebackup" && -x "$d/psql" ]]; then BIN="$d"; break; fi
done
[[ -n "$BIN" ]] || { echo "PostgreSQL is not installed (apt-get install -y --no-install-recommends postgresql)" >&2; exit 1; }

AS=()
if [[ "$(id -u)" -eq 0 ]]; then
  id postgres >/dev/null 2>&1 || { echo "no postgres user to run PostgreSQL as" >&2; exit 1; }
  AS=(runuser -u postgres --)
fi

DIR=$(mktemp -d "${TMPDIR:-/tmp}/mcp-confirm-postgres-pair.XXXXXX")
chmod 0755 "$DIR"
[[ ${#AS[@]} -gt 0 ]] && chown postgres: "$DIR"

PIDS=()
cleanup_on_failure() {
  for p in "${PIDS[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  sleep 0.5
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  echo "keeping logs in $DIR for inspection" >&2
}
fail() { echo "$1" >&2; cleanup_on_failure; exit 1; }

# initdb's own final sync of the new files is skipped (--no-sync): the data directory is made before
# any test runs; what a test crashes is the running server, whose fsync stays on.
initdb_into() {
  "${AS[@]}" "$BIN/initdb" -D "$1" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync \
    >"$DIR/initdb.log" 2>&1 || fail "initdb failed; see $DIR/initdb.log"
}
TEMPLATE="${1:-}"
if [[ -n "$TEMPLATE" ]]; then
  if [[ ! -f "$TEMPLATE/PG_VERSION" ]]; then
    mkdir -p "$(dirname "$TEMPLATE")"
    [[ ${#AS[@]} -gt 0 ]] && chown postgres: "$(dirname "$TEMPLATE")"
    initdb_into "$TEMPLATE"
  fi
  cp -a "$TEMPLATE" "$DIR/primary" || fail "cannot copy the template $TEMPLATE"
else
  initdb_into "$DIR/primary"
fi

COMMON=(-c listen_addresses=127.0.0.1 -c max_connections=100 -c shared_buffers=32MB -c fsync=on
  -c full_page_writes=on -c wal_level=replica -c max_wal_senders=4 -c hot_standby=on
  -c wal_receiver_status_interval=1s -c wal_sender_timeout=10s -c wal_receiver_timeout=10s)

# start_server NAME DATADIR EXTRA...: starts a postmaster on a random free port; sets PORT and PMPID.
start_server() {
  local name="$1" data="$2"
  shift 2
  for _ in $(seq 1 8); do
    PORT=$(( 20000 + RANDOM % 40000 ))
    if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then continue; fi
    "${AS[@]}" "$BIN/postgres" -D "$data" -p "$PORT" -c unix_socket_directories="$data" "${COMMON[@]}" "$@" \
      </dev/null >>"$DIR/$name.log" 2>&1 &
    local pid=$!
    for _ in $(seq 1 1500); do   # up to ~15 s
      if [[ -f "$data/postmaster.pid" ]] && [[ "$(sed -n 4p "$data/postmaster.pid" 2>/dev/null)" == "$PORT" ]] \
        && "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT" -U postgres 2>/dev/null; then
        PMPID=$(sed -n 1p "$data/postmaster.pid")
        PIDS+=("$PMPID")
        return 0
      fi
      kill -0 "$pid" 2>/dev/null || break   # exited (port taken?): next port
      sleep 0.01
    done
    kill "$pid" 2>/dev/null || true
  done
  return 1
}

start_server primary "$DIR/primary" \
  -c "synchronous_standby_names=FIRST 1 (standby1)" -c synchronous_commit=remote_apply \
  || fail "the primary failed to start; see $DIR/primary.log"
P_PORT=$PORT
P_PID=$PMPID

"${AS[@]}" "$BIN/pg_basebackup" -d "host=127.0.0.1 port=$P_PORT user=postgres application_name=standby1" \
  -D "$DIR/standby" -R -X stream -c fast --no-sync >"$DIR/basebackup.log" 2>&1 \
  || fail "pg_basebackup failed; see $DIR/basebackup.log"
grep -q "application_name=standby1" "$DIR/standby/postgresql.auto.conf" \
  || fail "pg_basebackup -R wrote no application_name=standby1 into primary_conninfo"

start_server standby "$DIR/standby" -c "synchronous_standby_names=" -c synchronous_commit=on \
  || fail "the standby failed to start; see $DIR/standby.log"
S_PORT=$PORT
S_PID=$PMPID

# Synchronous and streaming before anyone relies on it.
for _ in $(seq 1 1500); do   # up to ~15 s
  state=$("$BIN/psql" -h 127.0.0.1 -p "$P_PORT" -U postgres -d postgres -Atqc \
    "SELECT state || ' ' || sync_state FROM pg_stat_replication WHERE application_name = 'standby1'" 2>/dev/null || true)
  if [[ "$state" == "streaming sync" ]]; then
    echo "$P_PORT $P_PID $S_PORT $S_PID $DIR"
    exit 0
  fi
  sleep 0.01
done
fail "the standby is not a streaming synchronous standby (pg_stat_replication: '${state:-none}'); see $DIR/*.log"
