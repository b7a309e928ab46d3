#!/usr/bin/env bash
# The API reference check (issue 20): docs/api/ must be what the docstrings of src/ generate, with no
# warning. Installs tools/apidocs/'s pinned packages with `npm ci` there (TypeDoc, its markdown
# plugin and the TypeScript 6 it supports; the network is needed), regenerates docs/api/ in place
# (tools/apidocs/typedoc.config.mjs: every entry point of package.json's exports, warnings are
# errors), then fails when docs/api/ differs from git's index (`git diff --exit-code`) or holds a
# file git does not track. The fix for both: `npm run docs:api`, then commit docs/api/.
# Needs the root's packages (npm ci at the root): TypeDoc type-checks src/, which imports them.
#
#   bash scripts/check-api-docs.sh [--report FILE]
#
# With --report FILE (as .ci/run does) it also writes a vitest-style JSON report of one test, passed
# or failed, so scripts/summary.mjs counts the check in CI's closing line. Ends with its own line
# "N passed, N failed" on stdout, like scripts/test.sh.
set -uo pipefail
cd "$(dirname "$0")/.."

report=""
if [ "${1:-}" = "--report" ] && [ -n "${2:-}" ]; then
  report="$2"
elif [ $# -gt 0 ]; then
  echo "usage: bash scripts/check-api-docs.sh [--report FILE]" >&2
  exit 2
fi
[ -z "$report" ] || rm -f "$report"

NAME="docs/api/ is generated from src/ by TypeDoc with no warning and has no drift"
started=$(date +%s)

finish() {
  local ok="$1" message="$2"
  local seconds=$(($(date +%s) - started))
  if [ -n "$report" ]; then
    OK="$ok" MESSAGE="$message" NAME="$NAME" SECONDS_TAKEN="$seconds" node -e '
      const ok = process.env.OK === "1";
      const report = {
        numTotalTests: 1, numPassedTests: ok ? 1 : 0, numFailedTests: ok ? 0 : 1,
        numFailedTestSuites: 0, numPendingTests: 0, numTodoTests: 0, success: ok,
        testResults: [{ name: "scripts/check-api-docs.sh", status: ok ? "passed" : "failed",
          message: process.env.MESSAGE,
          assertionResults: [{ title: process.env.NAME, status: ok ? "passed" : "failed",
            duration: Number(process.env.SECONDS_TAKEN) * 1000, failureMessages: ok ? [] : [process.env.MESSAGE] }] }],
      };
      require("node:fs").writeFileSync(process.argv[1], JSON.stringify(report, null, 2) + "\n");
    ' "$report" || echo "could not write $report" >&2
  fi
  if [ "$ok" = "1" ]; then
    echo "API reference check passed in ${seconds} s" >&2
    echo "1 passed, 0 failed"
    exit 0
  fi
  echo "API reference check failed: $message" >&2
  echo "0 passed, 1 failed"
  exit 1
}

[ -d node_modules ] || finish 0 "node_modules is missing at the root (npm ci there first: TypeDoc reads src/, which imports the root's packages)"
(cd tools/apidocs && npm ci --no-audit --no-fund) >&2 || finish 0 "npm ci in tools/apidocs/"
(cd tools/apidocs && npx typedoc --options typedoc.config.mjs) >&2 \
  || finish 0 "TypeDoc stopped on an error or a warning (warnings are errors): fix the docstrings it names above"
git diff --exit-code --stat -- docs/api >&2
case $? in
  0) ;;
  1) finish 0 "docs/api/ is not what the docstrings generate (diff above): run npm run docs:api and commit docs/api/" ;;
  *) finish 0 "git diff failed (not a git checkout?): cannot compare docs/api/ with the committed pages" ;;
esac
untracked=$(git ls-files --others --exclude-standard -- docs/api) || finish 0 "git ls-files failed: cannot list docs/api/"
if [ -n "$untracked" ]; then
  printf '%s\n' "$untracked" >&2
  finish 0 "docs/api/ gained files git does not track (listed above): run npm run docs:api and commit docs/api/"
fi
finish 1 ""
