// Prints covered lines per src/ folder from c8's json-summary (coverage/coverage-summary.json), one
// row per folder (src/ itself for the files directly in it), then the total; a folder under the
// threshold (85 %) is marked. test/ and bench/ are not in it (c8 reports src/ only).
//   node scripts/coverage/folders.mjs [coverage/coverage-summary.json]
import { readFileSync } from 'node:fs';
import { relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const THRESHOLD_PCT = 85;
const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const file = process.argv[2] ?? resolve(root, 'coverage', 'coverage-summary.json');
let summary;
try {
  summary = JSON.parse(readFileSync(file, 'utf8'));
} catch (e) {
  console.error(`coverage: no c8 json-summary at ${file} (${e.code ?? e.message})`);
  process.exit(1);
}

const folders = new Map();
for (const [path, entry] of Object.entries(summary)) {
  if (path === 'total') continue;
  const rel = relative(root, path).split(sep);
  if (rel[0] !== 'src') continue;
  const folder = rel.length > 2 ? `src/${rel[1]}/` : 'src/';
  const f = folders.get(folder) ?? { files: 0, covered: 0, total: 0 };
  f.files++;
  f.covered += entry.lines.covered;
  f.total += entry.lines.total;
  folders.set(folder, f);
}
if (folders.size === 0) {
  console.error(`coverage: ${file} names no file under src/`);
  process.exit(1);
}

const pct = (c, t) => (t === 0 ? 100 : (100 * c) / t);
const rows = [...folders.entries()].sort(([a], [b]) => a.localeCompare(b));
const all = rows.reduce(
  (s, [, f]) => ({ files: s.files + f.files, covered: s.covered + f.covered, total: s.total + f.total }),
  { files: 0, covered: 0, total: 0 },
);
const width = Math.max(...rows.map(([n]) => n.length), 'folder'.length);
const line = (name, f, mark) =>
  `${name.padEnd(width)}  ${String(f.files).padStart(5)}  ${`${f.covered}/${f.total}`.padStart(11)}  ${pct(f.covered, f.total).toFixed(1).padStart(6)} %${mark}`;
console.log(`${'folder'.padEnd(width)}  files  lines (c/t)   lines`);
for (const [name, f] of rows)
  console.log(line(name, f, pct(f.covered, f.total) < THRESHOLD_PCT ? `  < ${THRESHOLD_PCT} %` : ''));
console.log(line('all of src/', all, ''));
