#!/usr/bin/env bash
# Start a throwaway redis-server for tests and benches.
#
#   scripts/start-redis.sh [PORT]
#
# Binds 127.0.0.1 only, no persistence (no RDB snapshots, no AOF), DEBUG allowed from loopback
# (for DEBUG SLEEP in the tests), no systemd, not daemonized
# (the server is a child of this script's shell and is orphaned when the script exits).
# Without PORT it picks a random free high port (20000-59999) and retries on a collision; with
# PORT it uses exactly that port (used to restart a server "in the same place").
# On success prints "PORT PID" on one line to stdout and exits 0; otherwise exits 1.
#
#   read -r REDIS_PORT REDIS_PID < <(scripts/start-redis.sh)
#   export REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
#   ...; kill "$REDIS_PID"
#
# Stop it by its PID (SIGTERM). Do not wait with `kill -0`: the orphan can linger as a zombie for
# a second or two; wait for the port to refuse connections instead.
set -euo pipefail

command -v redis-server >/dev/null 2>&1 || { echo "redis-server is not installed (apt-get install -y --no-install-recommends redis-server)" >&2; exit 1; }
command -v redis-cli >/dev/null 2>&1 || { echo "redis-cli is not installed (package redis-tools)" >&2; exit 1; }

# Redis 7 refuses DEBUG (the tests freeze the server with DEBUG SLEEP) unless started with
# --enable-debug-command; older servers allow it and do not know the option. "local": loopback only.
DEBUG_ARGS=()
REDIS_MAJOR=$(redis-server --version | sed -n 's/.* v=\([0-9]*\)\..*/\1/p')
if [[ "${REDIS_MAJOR:-0}" -ge 7 ]]; then DEBUG_ARGS=(--enable-debug-command local); fi

FIXED_PORT="${1:-}"
if [[ -n "$FIXED_PORT" && ! "$FIXED_PORT" =~ ^[0-9]+$ ]]; then
  echo "usage: $0 [PORT]" >&2; exit 2
fi

DIR=$(mktemp -d "${TMPDIR:-/tmp}/mcp-confirm-redis.XXXXXX")
ATTEMPTS=8
[[ -n "$FIXED_PORT" ]] && ATTEMPTS=1

for _ in $(seq 1 "$ATTEMPTS"); do
  PORT="${FIXED_PORT:-$(( 20000 + RANDOM % 40000 ))}"
  # Skip ports where something already answers (cheap pre-check; the pid check below is the real one).
  if [[ -z "$FIXED_PORT" ]] && (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
    continue
  fi
  redis-server --bind 127.0.0.1 --port "$PORT" --save '' --appendonly no \
    --daemonize no --protected-mode yes --dir "$DIR" --logfile "$DIR/redis.log" "${DEBUG_ARGS[@]}" \
    </dev/null >/dev/null 2>&1 &
  PID=$!
  for _ in $(seq 1 500); do   # up to ~5 s
    # A PONG alone could come from another server on that port: require our own pid.
    if redis-cli -h 127.0.0.1 -p "$PORT" info server 2>/dev/null | grep -q "^process_id:$PID"; then
      echo "$PORT $PID"
      exit 0
    fi
    kill -0 "$PID" 2>/dev/null || break   # exited (port taken?): next port
    sleep 0.01
  done
  kill "$PID" 2>/dev/null || true
done
echo "redis-server failed to start; see $DIR/redis.log" >&2
exit 1
