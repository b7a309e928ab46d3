#!/usr/bin/env bash
# The README's demo command: installs the npm packages when missing, builds, and runs
# `mcp-confirm demo` (pass --yes to answer the confirmation without a terminal).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d node_modules ]; then
  echo "installing npm packages (about 1-4 minutes; better-sqlite3 compiles from source)…" >&2
  npm ci --no-audit --no-fund >&2
fi
npm run --silent build >&2
exec node dist/cli/main.js demo "$@"
