#!/usr/bin/env bash
# `npm run coverage`: the test suite as scripts/test.sh runs it (same setup: packages, build, Redis),
# with V8 coverage from every Node.js process of the run, the test processes and every process they
# start (the built CLI, its proxies' upstreams, workers), merged by c8 and mapped from dist/ back to
# src/ by the build's source maps. Prints the test summary line, then covered lines per src/ folder;
# c8's reports go to coverage/: coverage-summary.json, lcov.info and index.html (each file's lines).
# Extra arguments go to vitest (e.g. a test file, for a partial figure). Slower than `npm test`; CI
# does not run it.
# Exits non-zero when a test failed (the figures are still printed) or no coverage could be read.
set -uo pipefail
cd "$(dirname "$0")/.."

work="$(mktemp -d "${TMPDIR:-/tmp}/mcp-confirm-coverage.XXXXXX")" || exit 1
trap 'rm -rf "$work"' EXIT

rc=0
MCP_CONFIRM_COVERAGE_DIR="$work/raw" bash scripts/test.sh "$@" || rc=$?

node scripts/coverage/trim.mjs "$work/raw" "$work/trimmed" || exit 1
rm -rf coverage
# --all --src dist: a module that no process loaded is reported too, at 0 %.
# --exclude-after-remap: --include is matched against the src/ path each dist/ file maps back to.
npx c8 report --temp-directory "$work/trimmed" --reports-dir coverage \
  --reporter=json-summary --reporter=html --reporter=lcovonly \
  --all --src dist --include 'dist/**/*.js' --include 'src/**' --exclude-after-remap >&2 || exit 1
echo "coverage (lines per src/ folder; per file: coverage/index.html)"
node scripts/coverage/folders.mjs coverage/coverage-summary.json || exit 1
exit "$rc"
