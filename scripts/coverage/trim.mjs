// Keeps, of every raw V8 coverage file in FROM (NODE_V8_COVERAGE of a coverage run), only the
// scripts of this package (dist/ and src/) with their source maps, and writes them to TO for c8.
// The raw files also hold Node's internals, node_modules, npm and test code of each process
// (a full run writes several GB); c8 would read all of it to discard it.
// A src/ script without a source map is Vite's in-memory transform of a test process: c8 cannot map
// it (its text is not on disk), so it is dropped and counted; with scripts/coverage/vitest.config.ts
// there is none.
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
mkdirSync(to, { recursive: true });

let files = 0;
let kept = 0;
let unmapped = 0;
for (const name of readdirSync(from)) {
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
    result.push(script);
    if (cache[script.url]) maps[script.url] = cache[script.url];
  }
  if (result.length === 0) continue;
  kept += result.length;
  writeFileSync(join(to, name), JSON.stringify({ result, 'source-map-cache': maps }));
}
console.error(`coverage: ${files} process file(s), ${kept} script record(s) of this package kept` + (unmapped ? `, ${unmapped} unmappable src/ record(s) dropped` : ''));
