// Keeps, of every raw V8 coverage file in FROM (NODE_V8_COVERAGE of a coverage run), only the
// scripts of this package (dist/ and src/) with their source maps, and writes them to TO for c8.
// The raw files also hold Node's internals, node_modules, npm and test code of each process
// (a full run writes several GB); c8 would read all of it to discard it.
// Dropped and counted, as c8 would count them wrong:
// - a src/ script without a source map: Vite's in-memory transform of a test process, whose text is
//   nowhere on disk (with scripts/coverage/vitest.config.ts there is none);
// - a dist/ script whose text differs from the file on disk: a test's module loader hook changed it
//   (test/fixtures/holdLoadHooks.mjs puts lines first), so its offsets are not the file's. c8 adds
//   up the V8 ranges of one URL across processes before mapping them, so one such process would
//   shift every other process's counts of that file (seen: 91 of 779 lines of src/guard/ lost).
//   node scripts/coverage/trim.mjs FROM TO
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const [from, to] = process.argv.slice(2);
if (!from || !to) {
  console.error('usage: node scripts/coverage/trim.mjs FROM TO');
  process.exit(2);
}
const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const prefixes = ['dist', 'src'].map((d) => pathToFileURL(join(root, d)).href + '/');
let names;
try {
  names = readdirSync(from);
} catch (e) {
  console.error(
    `coverage: cannot read the raw coverage directory ${from} (${e.code ?? e.message}): did the test run start?`,
  );
  process.exit(1);
}
mkdirSync(to, { recursive: true });

let files = 0;
let kept = 0;
let unmapped = 0;
let changed = 0;

// Line lengths as Node records them in `source-map-cache` (lines end at \n, U+2028 or U+2029).
const lengthsOnDisk = new Map();
const sameAsDisk = (url, lineLengths) => {
  if (!Array.isArray(lineLengths)) return false;
  if (!lengthsOnDisk.has(url)) {
    let lengths = null;
    try {
      lengths = readFileSync(fileURLToPath(url), 'utf8')
        .split(/\n|\u2028|\u2029/)
        .map((l) => l.length);
    } catch {
      // gone since the run: nothing to compare with
    }
    lengthsOnDisk.set(url, lengths);
  }
  const disk = lengthsOnDisk.get(url);
  return disk !== null && disk.length === lineLengths.length && disk.every((n, i) => n === lineLengths[i]);
};
for (const name of names) {
  if (!name.endsWith('.json')) continue;
  let raw;
  try {
    raw = JSON.parse(readFileSync(join(from, name), 'utf8'));
  } catch {
    console.error(`coverage: skipped ${name} (not complete JSON: its process was killed while writing it)`);
    continue;
  }
  files++;
  const cache = raw['source-map-cache'] ?? {};
  const result = [];
  const maps = {};
  for (const script of raw.result ?? []) {
    if (!prefixes.some((p) => script.url.startsWith(p))) continue;
    if (script.url.startsWith(prefixes[1]) && !cache[script.url]) {
      unmapped++;
      continue;
    }
    if (script.url.startsWith(prefixes[0]) && !sameAsDisk(script.url, cache[script.url]?.lineLengths)) {
      changed++;
      continue;
    }
    result.push(script);
    if (cache[script.url]) maps[script.url] = cache[script.url];
  }
  if (result.length === 0) continue;
  kept += result.length;
  writeFileSync(join(to, name), JSON.stringify({ result, 'source-map-cache': maps }));
}
console.error(
  `coverage: ${files} process file(s), ${kept} script record(s) of this package kept` +
    (unmapped ? `, ${unmapped} unmappable src/ record(s) dropped` : '') +
    (changed ? `, ${changed} dist/ record(s) of a changed source (a test's loader hook) dropped` : ''),
);
