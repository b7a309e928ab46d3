#!/usr/bin/env bash
# `npm run test:interop`: the real third-party MCP clients of interop/ (the AI SDK, Mastra, mcp-use,
# mcp-remote, LangChain's adapters, the Inspector CLI) against the built CLI over stdio and --http.
# Builds dist/ (skipped with MCP_CONFIRM_SKIP_BUILD=1, as .ci/run does after scripts/test.sh built it),
# installs interop/'s pinned packages with `npm ci` there (skipped with MCP_CONFIRM_SKIP_NPM_CI=1 when
# interop/node_modules exists), typechecks interop/, runs interop/'s vitest, and ends with one plain line "N passed, N failed"
# from its JSON report (scripts/summary.mjs: a skipped or todo test counts as failed). Extra arguments
# go to vitest. Needs the root's packages for the build (npm ci at the root) and the network for npm ci.
set -uo pipefail
cd "$(dirname "$0")/.."

fail_early() {
  echo "interop setup failed: $1" >&2
  echo "0 passed, 1 failed"
  exit 1
}

if [ "${MCP_CONFIRM_SKIP_BUILD:-}" != "1" ]; then
  npm run --silent build >&2 || fail_early "build (tsc -p tsconfig.build.json)"
fi
[ -f dist/cli/main.js ] || fail_early "dist/cli/main.js is missing (npm run build)"
if [ "${MCP_CONFIRM_SKIP_NPM_CI:-}" != "1" ] || [ ! -d interop/node_modules ]; then
  (cd interop && npm ci --no-audit --no-fund) >&2 || fail_early "npm ci in interop/"
fi

# The suite's own TypeScript (interop/tsconfig.json, the pinned typescript of interop/).
(cd interop && npx tsc --noEmit -p .) >&2 || fail_early "typecheck of interop/ (tsc --noEmit -p interop)"

rm -f interop/.vitest.json
rc=0
(cd interop && NO_COLOR=1 MCP_USE_ANONYMIZED_TELEMETRY=false npx vitest run --reporter=default --reporter=json \
  --outputFile.json=.vitest.json "$@") >&2 || rc=$?
node scripts/summary.mjs interop/.vitest.json || rc=1
exit "$rc"
