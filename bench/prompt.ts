/**
 * Speed of rendering untrusted values into the question (src/prompt/render.ts).
 *
 * Figures (median of several timed runs after a warm-up):
 * - throughput in MB/s of input (1 MB = 10^6 bytes of the values' UTF-8 encoding) for a batch of
 *   ordinary ASCII file names and for a batch of hostile names;
 * - µs per 4 KiB hostile value (controls, bidi controls, invisibles, combining marks, mixed
 *   scripts, backticks and markup, lone surrogates, conjoining jamo), and per 4 KiB of letters
 *   from many scripts (the slowest case of the mixed-script check);
 * - ms per 1 MB hostile value (10^6 UTF-16 code units), for the shapes that cost most: the
 *   reported denial of service (a run of combining marks in reverse canonical order, which
 *   normalising took 27 s on 400 KB before the normal-form checks were bounded), runs of 30
 *   reordering marks (the longest run still normalised), a million escapes, and a path of
 *   mixed-script components checked per component, and clusters of Indic (Devanagari with
 *   virama and vowel signs), Khmer (coeng subscripts) and Myanmar (stacked consonants, medials,
 *   asat): scripts whose graphemes join several code points, so the cut segments them. The
 *   server refuses paths over 4,096 code units; these figures are the renderer's own bound.
 * - the time ratio of rendering the reported shape at 4× the length (200,000 and 800,000 marks):
 *   4 for linear time, 16 for quadratic. The tests prove linearity by counting the work
 *   (test/prompt/linear.test.ts); this is the same claim in time, which only a bench may measure.
 *
 * Run alone with `npm run bench:prompt` (`npm run bench` runs it with the ledger rows).
 */
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { renderValue, type RenderOptions } from '../src/prompt/render.js';

/** One figure for the bench table. */
export interface PromptFigure {
  name: string;
  value: string;
  unit: string;
  /** A bound the figure should meet. */
  target?: number;
  /** Whether {@link target} is a minimum or a maximum. */
  targetKind?: 'min' | 'max';
}

/** Deterministic pseudo-random numbers (a 32-bit LCG), so every run measures the same inputs. */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const HOSTILE_PIECES = [
  '\n',
  '\r',
  '\u001b[2K',
  '\u001b]8;;https://attacker.example/\u0007',
  '\b',
  '\u0085',
  '\u2028',
  '\u202E',
  '\u2066',
  '\u2069',
  '\u200F',
  '\u061C',
  '\u200B',
  '\u200D',
  '\u00AD',
  '\uFE0F',
  '\u3164',
  '\u{E0041}',
  '\u2800',
  '\u00A0',
  '  ',
  ' ',
  'e\u0301',
  'a\u0301\u0302\u0303\u0304\u0305\u0306',
  'p\u0430yp\u0430l',
  'שלום',
  'مرحبا',
  '日本',
  '👨‍👩‍👧',
  '🇫🇷',
  '`',
  '``',
  '[x](https://attacker.example)',
  '<img src=x onerror=alert(1)>',
  '\\',
  '⟨U+202E⟩',
  '\uD800',
  '\uDC00',
  '\u1100\u1161\u11A8',
  'cache',
  '.txt',
  '-',
  '_',
  '0123',
];

/** A hostile value of at least `bytes` UTF-8 bytes, ending with a file extension. */
function hostileValue(bytes: number, seed: number): string {
  const rnd = lcg(seed);
  let s = '';
  while (Buffer.byteLength(s, 'utf8') < bytes - 4) {
    s += HOSTILE_PIECES[Math.floor(rnd() * HOSTILE_PIECES.length)] ?? '';
  }
  return `${s}.txt`;
}

/** Letters from many scripts in turn (defeats the one-script fast path of the warning check). */
function manyScriptsValue(bytes: number): string {
  const letters = ['a', 'а', 'α', 'ա', 'ა', 'ש', 'ب', 'क', 'ক', 'ก', 'ᚠ', 'Ꭰ', 'ᐁ', '𐌰', '𐐀', 'ꓐ', 'ⴰ', 'ߊ'];
  let s = '';
  for (let i = 0; Buffer.byteLength(s, 'utf8') < bytes; i++) s += letters[i % letters.length] ?? '';
  return s;
}

function asciiNames(n: number): string[] {
  const rnd = lcg(7);
  const words = ['report', 'cache', 'final', 'notes', 'invoice', 'draft', '2024', 'backup', 'v2', 'thesis'];
  const exts = ['.txt', '.pdf', '.tar.gz', '.json', '.md'];
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const k = 1 + Math.floor(rnd() * 4);
    const parts = Array.from({ length: k }, () => words[Math.floor(rnd() * words.length)] ?? 'x');
    out.push(parts.join(rnd() < 0.5 ? '-' : '_') + (exts[Math.floor(rnd() * exts.length)] ?? ''));
  }
  return out;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
}

/** Median milliseconds of `runs` timed repetitions of rendering every value `reps` times. */
function time(values: readonly string[], reps: number, runs: number, options: RenderOptions = {}): number {
  let sink = 0;
  for (let i = 0; i < Math.max(1, reps >> 2); i++) for (const v of values) sink += renderValue(v, options).length; // warm-up
  const samples: number[] = [];
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    for (let i = 0; i < reps; i++) for (const v of values) sink += renderValue(v, options).length;
    samples.push(performance.now() - t0);
  }
  if (sink < 0) throw new Error('unreachable');
  return median(samples);
}

const bytesOf = (values: readonly string[]): number => values.reduce((n, v) => n + Buffer.byteLength(v, 'utf8'), 0);

/**
 * Measures rendering speed.
 *
 * @returns figures: MB/s (10^6 bytes of UTF-8 input per second) for ASCII and hostile names, and
 *   µs per 4 KiB hostile value; each the median of 7 runs.
 */
export async function benchPrompt(): Promise<PromptFigure[]> {
  const RUNS = 7;
  const ascii = asciiNames(2000);
  const hostileNames = Array.from({ length: 200 }, (_, i) => hostileValue(64 + (i % 8) * 32, i + 1));
  const hostile4k = Array.from({ length: 20 }, (_, i) => hostileValue(4096, 1000 + i));
  const scripts4k = [manyScriptsValue(4096)];

  const MB = 1_000_000;
  const fill = (unit: string): string => unit.repeat(Math.ceil(MB / unit.length));
  const dos = `x${'\u0301'.repeat(MB / 2)}${'\u0316'.repeat(MB / 2)}/../cache.txt`;
  const marks30 = fill(`a${'\u0301\u0316'.repeat(15)}`);
  const controls = fill('\u0001');
  const mixedPath = fill('/p\u0430y');
  // Conjuncts with virama and vowel signs: स्त्री क्षेत्र हिन्दी.
  const devanagari = fill(
    '\u0938\u094D\u0924\u094D\u0930\u0940\u0915\u094D\u0937\u0947\u0924\u094D\u0930\u0939\u093F\u0928\u094D\u0926\u0940',
  );
  // Coeng (U+17D2) subscripts and vowel signs: ស្ត្រី ខ្មែរ ក្សត្រ.
  const khmer = fill(
    '\u179F\u17D2\u178F\u17D2\u179A\u17B8\u1781\u17D2\u1798\u17C2\u179A\u1780\u17D2\u179F\u178F\u17D2\u179A',
  );
  // Medials, asat and a stacked consonant (U+1039): မြန်မာ ကျွန်ုပ် သင်္ချိုင်း.
  const myanmar = fill(
    '\u1019\u103C\u1014\u103A\u1019\u102C\u1000\u103B\u103D\u1014\u103A\u102F\u1015\u103A' +
      '\u101E\u1004\u103A\u1039\u1001\u103B\u102D\u102F\u1004\u103A\u1038',
  );

  const asciiMs = time(ascii, 20, RUNS);
  const hostileMs = time(hostileNames, 20, RUNS);
  const big4kMs = time(hostile4k, 10, RUNS);
  const scriptsMs = time(scripts4k, 200, RUNS);
  const dosMs = time([dos], 1, 5);
  const marks30Ms = time([marks30], 1, 5);
  const controlsMs = time([controls], 1, 5);
  const pathMs = time([mixedPath], 1, 5, { segments: '/' });
  const devanagariMs = time([devanagari], 1, 5);
  const khmerMs = time([khmer], 1, 5);
  const myanmarMs = time([myanmar], 1, 5);
  const reported = (marks: number): string =>
    `x${'\u0301'.repeat(marks / 2)}${'\u0316'.repeat(marks / 2)}/../cache.txt`;
  const linearRatio = time([reported(800_000)], 1, 7) / time([reported(200_000)], 1, 7);
  const mbps = (bytes: number, ms: number): string => (bytes / 1e6 / (ms / 1e3)).toFixed(1);

  return [
    { name: 'prompt: render ASCII file names', value: mbps(bytesOf(ascii) * 20, asciiMs), unit: 'MB/s' },
    {
      name: 'prompt: render hostile names (64–288 B)',
      value: mbps(bytesOf(hostileNames) * 20, hostileMs),
      unit: 'MB/s',
    },
    { name: 'prompt: render hostile 4 KiB values', value: mbps(bytesOf(hostile4k) * 10, big4kMs), unit: 'MB/s' },
    {
      name: 'prompt: one hostile 4 KiB value',
      value: ((big4kMs * 1e3) / (hostile4k.length * 10)).toFixed(1),
      unit: 'µs',
    },
    {
      name: 'prompt: one 4 KiB value of letters from 18 scripts',
      value: ((scriptsMs * 1e3) / 200).toFixed(1),
      unit: 'µs',
    },
    {
      name: 'prompt: one 1 MB value, 1,000,000 marks in reverse canonical order (reported DoS, was 27 s at 400 KB)',
      value: dosMs.toFixed(0),
      unit: 'ms',
    },
    {
      name: 'prompt: one 1 MB value, runs of 30 reordering marks (longest run normalised)',
      value: marks30Ms.toFixed(0),
      unit: 'ms',
    },
    { name: 'prompt: one 1 MB value, 1,000,000 controls (escapes)', value: controlsMs.toFixed(0), unit: 'ms' },
    {
      name: 'prompt: one 1 MB path, 250,000 mixed-script components (segments "/")',
      value: pathMs.toFixed(0),
      unit: 'ms',
    },
    {
      name: 'prompt: one 1 MB value of Devanagari conjuncts with virama and vowel signs',
      value: devanagariMs.toFixed(0),
      unit: 'ms',
    },
    { name: 'prompt: one 1 MB value of Khmer clusters with coeng subscripts', value: khmerMs.toFixed(0), unit: 'ms' },
    {
      name: 'prompt: one 1 MB value of Myanmar clusters (medials, asat, stacked consonants)',
      value: myanmarMs.toFixed(0),
      unit: 'ms',
    },
    {
      name: 'prompt: time at 4× the length, reported shape (800,000 / 200,000 marks; linear 4, quadratic 16)',
      value: linearRatio.toFixed(2),
      unit: 'ratio',
      target: 8,
      targetKind: 'max',
    },
  ];
}

// Run alone (`npm run bench:prompt`): the prompt rows as the same markdown table as `npm run bench`.
if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const rows = await benchPrompt();
  const lines = [
    `Measured ${new Date().toISOString().slice(0, 10)} on Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, load average ${loadavg()[0]?.toFixed(2) ?? '?'}.`,
    '',
    '| figure | value | unit |',
    '|---|---:|---|',
    ...rows.map((r) => `| ${r.name} | ${r.value} | ${r.unit} |`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
