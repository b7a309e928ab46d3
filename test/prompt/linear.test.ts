/**
 * Rendering is linear in the value's length (a security tester's finding: normalising a 400 KB
 * run of combining marks took 27 s and blocked the server). Proved by counting, not timing: the
 * work of a render (code units read, and what Node's ICU is charged for segmenting and
 * normalising, see work.ts) is counted at 4× the length and must be at most 4× plus a constant,
 * which a quadratic step fails by far (the controls below); the segmenter's work must not grow
 * at all, since the cut segments bounded windows only. Timings belong in the bench
 * (bench/prompt.ts: 1 MB rows and the 4× time ratio).
 */
import { describe, expect, it } from 'vitest';
import { MAX_MARK_RUN, MAX_PATH_GRAPHEMES, WARNING, renderValueParts, valueWarnings } from '../../src/prompt/render.js';
import { FORBIDDEN, LINE_BREAK } from './helpers.js';
import { countWork } from './work.js';

const MB = 1_000_000;
/** Repeats `unit` until the UTF-16 length reaches about `units`. */
const fill = (unit: string, units: number): string => unit.repeat(Math.ceil(units / unit.length));

/**
 * Slack of `count(4n) <= 4 × count(n) + SLACK`, in code units: the cut handles a bounded window
 * at each end of a long run differently from the rest (it segments the window, and skips the
 * code points it cuts out), so a linear count may have a negative constant term; that term is a
 * few passes over the two windows (each at most 7,808 code units at the default 120 graphemes,
 * see `windowUnits`), whatever the length. A plain number, so that a change to the windows
 * cannot widen it.
 */
const SLACK = 32_768;

/** The reported shape: n/2 combining marks in reverse canonical order, n/2 more, then a path. */
const reported = (units: number): string => `x${'\u0301'.repeat(units / 2)}${'\u0316'.repeat(units / 2)}/../cache.txt`;

/** Each hostile shape, at about `units` UTF-16 code units. */
const shapes: Array<readonly [string, (units: number) => string]> = [
  ['the reported one: 500,000 combining marks in reverse canonical order, then a path', reported],
  [
    'marks that reorder, 30 in a row (the most the normal-form checks accept) between letters',
    (n) => fill(`a${'\u0301\u0316'.repeat(15)}`, n),
  ],
  ['half-width voiced marks (NFKC: a non-starter) between marks of a lower class', (n) => fill('\uFF9E\u0334', n)],
  ['one control per code unit (a million escapes)', (n) => fill('\u0001', n)],
  ['one grapheme of conjoining jamo', (n) => fill('\u1100', n)],
  ['Hangul syllables', (n) => fill('\u1100\u1161', n)],
  ['letters with one combining mark each', (n) => fill('e\u0301', n)],
  ['emoji with skin tones', (n) => fill('👍🏽', n)],
  ['regional indicators (flags), odd count', (n) => `${fill('🇦', n)}🇧`],
  ['Devanagari conjuncts', (n) => fill('\u0915\u094D\u0937', n)],
  ['letters from many scripts', (n) => fill('aаαաაשبकকกᚠᎠᐁ𐌰', n)],
  ['right-to-left words, digits and brackets', (n) => fill('א/ב (1) ملف ٢ ', n)],
  ['backticks and escape look-alikes', (n) => fill('`〈U+202E〉❬❭', n)],
  ['full-width and mathematical letters', (n) => fill('ｃａｃｈｅ𝚌𝚊𝚌𝚑𝚎', n)],
  ['path separators with a mixed-script name between each', (n) => fill('/pаy', n)],
];

describe('rendering work is linear in the value length (counted, not timed)', () => {
  it.each(shapes)('renders ~1 MB of %s with at most 4× the work of ~250 KB, one line, bounded', (_name, shape) => {
    for (const options of [{}, { segments: '/' }]) {
      const quarter = countWork(() => renderValueParts(shape(MB / 4), options)).work;
      const { result: parts, work } = countWork(() => renderValueParts(shape(MB), options));
      // Every code unit is read at least once (escaping), so the count is not vacuous.
      expect(work.total).toBeGreaterThanOrEqual(MB);
      expect(work.total).toBeLessThanOrEqual(4 * quarter.total + SLACK);
      // The cut segments bounded windows only (Node's segmenter costs the whole string's length
      // per step): the segmenter's work does not grow with the length at all.
      expect(work.segmentCharge).toBeLessThanOrEqual(quarter.segmentCharge + SLACK);
      expect(parts.cut).toBe(true);
      expect(LINE_BREAK.test(parts.text)).toBe(false);
      expect(FORBIDDEN.test(parts.text)).toBe(false);
      expect(parts.text.isWellFormed()).toBe(true);
      // A path keeps every component (each at most 120 wide) up to MAX_PATH_GRAPHEMES in all.
      expect([...parts.body].length).toBeLessThanOrEqual(('segments' in options ? MAX_PATH_GRAPHEMES : 120) * 16);
    }
  });

  it('grows linearly: 4× the length costs at most 4× the counted work (the reported shape, 50,000 to 800,000 marks)', () => {
    const counts = [50_000, 200_000, 800_000].map((n) => countWork(() => renderValueParts(reported(n))).work);
    for (let k = 1; k < counts.length; k++) {
      expect(counts[k]!.total).toBeLessThanOrEqual(4 * counts[k - 1]!.total + SLACK);
      expect(counts[k]!.segmentCharge).toBeLessThanOrEqual(counts[k - 1]!.segmentCharge + SLACK);
    }
    // The bound on mark runs keeps the quadratic normalisation out entirely.
    expect(counts.map((w) => w.normalizeCalls)).toEqual([0, 0, 0]);
  });

  it('control: the count charges quadratic work as such (normalising a whole run of reversed marks, or segmenting a whole run grapheme by grapheme, costs over 4× for 4× the length)', () => {
    const normalizing = (n: number): number => countWork(() => reported(2 * n).normalize('NFC')).work.total;
    expect(normalizing(8_000)).toBeGreaterThan(4 * normalizing(2_000) + SLACK);
    const seg = new Intl.Segmenter('und', { granularity: 'grapheme' });
    const segmenting = (n: number): number =>
      countWork(() => {
        let graphemes = 0;
        for (const _ of seg.segment('e\u0301'.repeat(n))) graphemes += 1;
        return graphemes;
      }).work.total;
    expect(segmenting(8_000)).toBeGreaterThan(4 * segmenting(2_000) + SLACK);
    // And a linear pass is charged linearly.
    const reading = (n: number): number =>
      countWork(() => {
        const s = 'ab'.repeat(n);
        let sum = 0;
        for (let i = 0; i < s.length; i++) sum += s.charCodeAt(i);
        return sum;
      }).work.total;
    expect(reading(8_000)).toBe(4 * reading(2_000));
  });

  it(`skips the normal-form checks, saying so, above ${MAX_MARK_RUN} combining marks in a row`, () => {
    expect(valueWarnings(`x${'\u0301'.repeat(100_000)}${'\u0316'.repeat(100_000)}/../cache.txt`)).toEqual([
      WARNING.tooManyMarks,
    ]);
    // 30 in a row are still checked; 31 are not.
    const thirty = `e${'\u0316\u0301'.repeat(15)}`;
    expect(valueWarnings(thirty)).toEqual([WARNING.notNfc]);
    expect(valueWarnings(`${thirty}\u0316`)).toEqual([WARNING.tooManyMarks]);
    // Marks split by a letter are separate runs.
    expect(valueWarnings(`${thirty}a${thirty}`)).toEqual([WARNING.notNfc]);
  });

  it('checks its assumptions against the running ICU: every non-starter is gc=M, and every code point whose decomposition starts with one is gc=M or U+FF9E/U+FF9F', () => {
    // c has Canonical_Combining_Class ≠ 0 iff canonical reordering moves it past U+0345 (class
    // 240) or U+0334 (class 1); U+0345 itself is the only code point of class 240.
    const nonStarter = (c: string): boolean =>
      c === '\u0345' ||
      `a\u0345${c}`.normalize('NFD') !== `a\u0345${c}` ||
      `a${c}\u0334`.normalize('NFD') !== `a${c}\u0334`;
    const run = /^[\p{M}\uFF9E\uFF9F]$/u;
    const outside: string[] = [];
    let nonStarters = 0;
    for (let cp = 0; cp <= 0x10ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      const c = String.fromCodePoint(cp);
      const first = String.fromCodePoint(c.normalize('NFKD').codePointAt(0) ?? 0);
      const starts = c.normalize('NFKD') === c ? nonStarter(c) : nonStarter(first);
      if (c.normalize('NFKD') === c && starts) nonStarters += 1;
      if (starts && !run.test(c)) outside.push(cp.toString(16));
    }
    expect(nonStarters).toBeGreaterThan(900);
    expect(outside).toEqual([]);
  });
});
