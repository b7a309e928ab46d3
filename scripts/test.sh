#!/usr/bin/env bash
# The README's test command. On a fresh Debian/Ubuntu machine it installs what the tests need
# (redis-server, postgresql, haproxy and chromium with apt-get when missing; npm packages with npm ci), typechecks, builds, starts a
# throwaway Redis and PostgreSQL on free loopback ports, runs every test with vitest, stops both, and ends with
# one plain line "N passed, N failed" derived from vitest's JSON report (extra arguments go to vitest):
# failed = failed tests + test files that failed to load + skipped/todo tests (a skip is a defect).
set -uo pipefail
cd "$(dirname "$0")/.."

summary_done=0
fail_early() {
  echo "test setup failed: $1" >&2
  echo "0 passed, 1 failed"
  summary_done=1
  exit 1
}

export DEBIAN_FRONTEND=noninteractive
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
  echo "installing redis-server with apt-get (usually under a minute)…" >&2
  { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends redis-server; } >&2 \
    || fail_early "apt-get install redis-server"
fi
# PostgreSQL for the PostgreSQL store's tests (test/store/postgres*.test.ts): Debian's server binaries;
# the failover test (test/e2e/postgresFailover.test.ts) also needs pg_basebackup and psql (postgresql-client-N,
# a dependency of the server package).
if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || ! ls /usr/lib/postgresql/*/bin/pg_basebackup >/dev/null 2>&1; then
  echo "installing postgresql with apt-get" >&2
  { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends postgresql; } >&2 \
    || fail_early "apt-get install postgresql"
fi
# HAProxy for test/e2e/loadBalancer.test.ts (Debian installs it in /usr/sbin, which may not be on PATH).
if ! command -v haproxy >/dev/null 2>&1 && [ ! -x /usr/sbin/haproxy ]; then
  echo "installing haproxy with apt-get (usually under a minute)…" >&2
  { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends haproxy; } >&2 \
    || fail_early "apt-get install haproxy"
fi

# The passkey tests drive Debian's chromium (headless) with playwright-core; they fail without it.
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  echo "installing chromium with apt-get (a few minutes: it is a large package)…" >&2
  { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends chromium; } >&2 \
    || fail_early "apt-get install chromium"
fi

if [ "${MCP_CONFIRM_SKIP_NPM_CI:-}" != "1" ] || [ ! -d node_modules ]; then
  echo "installing npm packages (about 1-4 minutes; better-sqlite3 compiles from source)…" >&2
  npm ci --no-audit --no-fund >&2 || fail_early "npm ci"
fi
npm run --silent build >&2 || fail_early "build (tsc -p tsconfig.build.json)"
# After the build: tests import the package by name (its exports map points into dist/).
npx tsc --noEmit -p . >&2 || fail_early "typecheck (tsc --noEmit)"
# The formatter (prettier, pinned) over the code of src/, test/, bench/ and scripts/: `npm run format` fixes it.
npm run --silent format:check >&2 || fail_early "format check (npm run format:check; npm run format fixes it)"

read -r REDIS_PORT REDIS_PID < <(scripts/start-redis.sh) || true
[ -n "${REDIS_PID:-}" ] || fail_early "start redis-server"
trap 'kill "$REDIS_PID" 2>/dev/null || true' EXIT
export REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
echo "redis-server pid $REDIS_PID on $REDIS_URL" >&2

read -r PG_PORT PG_PID PG_DATA < <(scripts/start-postgres.sh) || true
[ -n "${PG_PID:-}" ] || fail_early "start postgres"
trap 'kill "$REDIS_PID" 2>/dev/null || true; kill -INT "$PG_PID" 2>/dev/null || true; sleep 1; rm -rf "$PG_DATA"' EXIT
export PG_URL="postgres://postgres@127.0.0.1:$PG_PORT/postgres"
echo "postgres pid $PG_PID on $PG_URL" >&2

# `npm run coverage` (scripts/coverage.sh) sets MCP_CONFIRM_COVERAGE_DIR: then every Node.js process of
# the run (vitest's, the CLI the e2e tests start, and theirs) writes V8 coverage there. Unset (npm test,
# CI): nothing here changes.
coverage_env=()
if [ -n "${MCP_CONFIRM_COVERAGE_DIR:-}" ]; then
  mkdir -p "$MCP_CONFIRM_COVERAGE_DIR" || fail_early "mkdir $MCP_CONFIRM_COVERAGE_DIR"
  coverage_env=(NODE_V8_COVERAGE="$MCP_CONFIRM_COVERAGE_DIR" NODE_OPTIONS="${NODE_OPTIONS:+$NODE_OPTIONS }--import=$PWD/scripts/coverage/inherit.mjs")
  set -- --config scripts/coverage/vitest.config.ts "$@"
fi

rm -f .vitest.json
rc=0
NO_COLOR=1 env "${coverage_env[@]}" npx vitest run --reporter=default --reporter=json --outputFile.json=.vitest.json "$@" >&2 || rc=$?
node scripts/summary.mjs .vitest.json || rc=1
exit "$rc"
