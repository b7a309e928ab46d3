/**
 * Rendering time is linear in the value's length (a security tester's finding: normalising a
 * 400 KB run of combining marks took 27 s and blocked the server). Each hostile shape below is
 * about 1 MB; each must render in well under a second (asserted at 2 s so that a slow CI
 * machine does not flake; bench/prompt.ts reports the real figure).
 */
import { describe, expect, it } from 'vitest';
import { MAX_MARK_RUN, MAX_PATH_GRAPHEMES, WARNING, renderValueParts, valueWarnings } from '../../src/prompt/render.js';
import { FORBIDDEN, LINE_BREAK } from './helpers.js';

const MB = 1_000_000;
/** Repeats `unit` until the UTF-16 length reaches about `units`. */
const fill = (unit: string, units: number): string => unit.repeat(Math.ceil(units / unit.length));

/** About 1 MB (UTF-16 code units) of each hostile shape. */
const shapes: Array<readonly [string, string]> = [
  ['the reported one: 500,000 combining marks in reverse canonical order, then a path', `x${'\u0301'.repeat(MB / 2)}${'\u0316'.repeat(MB / 2)}/../cache.txt`],
  ['marks that reorder, 30 in a row (the most the normal-form checks accept) between letters', fill(`a${'\u0301\u0316'.repeat(15)}`, MB)],
  ['half-width voiced marks (NFKC: a non-starter) between marks of a lower class', fill('\uFF9E\u0334', MB)],
  ['one control per code unit (a million escapes)', fill('\u0001', MB)],
  ['one grapheme of conjoining jamo', fill('\u1100', MB)],
  ['Hangul syllables', fill('\u1100\u1161', MB)],
  ['letters with one combining mark each', fill('e\u0301', MB)],
  ['emoji with skin tones', fill('👍🏽', MB)],
  ['regional indicators (flags), odd count', `${fill('🇦', MB)}🇧`],
  ['Devanagari conjuncts', fill('\u0915\u094D\u0937', MB)],
  ['letters from many scripts', fill('aаαաაשبकকกᚠᎠᐁ𐌰', MB)],
  ['right-to-left words, digits and brackets', fill('א/ב (1) ملف ٢ ', MB)],
  ['backticks and escape look-alikes', fill('`〈U+202E〉❬❭', MB)],
  ['full-width and mathematical letters', fill('ｃａｃｈｅ𝚌𝚊𝚌𝚑𝚎', MB)],
  ['path separators with a mixed-script name between each', fill('/pаy', MB)],
];

describe('rendering time is linear in the value length', () => {
  it.each(shapes)('renders ~1 MB of %s in well under a second, one line, bounded', (_name, value) => {
    for (const options of [{}, { segments: '/' }]) {
      const t0 = performance.now();
      const parts = renderValueParts(value, options);
      const ms = performance.now() - t0;
      expect(ms).toBeLessThan(2000);
      expect(parts.cut).toBe(true);
      expect(LINE_BREAK.test(parts.text)).toBe(false);
      expect(FORBIDDEN.test(parts.text)).toBe(false);
      expect(parts.text.isWellFormed()).toBe(true);
      // A path keeps every component (each at most 120 wide) up to MAX_PATH_GRAPHEMES in all.
      expect([...parts.body].length).toBeLessThanOrEqual(('segments' in options ? MAX_PATH_GRAPHEMES : 120) * 16);
    }
  });

  it('grows linearly: 4× the length costs well under 16× the time (the reported shape)', () => {
    const at = (n: number): number => {
      const value = `x${'\u0301'.repeat(n)}${'\u0316'.repeat(n)}/../cache.txt`;
      renderValueParts(value); // warm-up
      const t0 = performance.now();
      for (let i = 0; i < 3; i++) renderValueParts(value);
      return (performance.now() - t0) / 3;
    };
    const small = Math.max(at(25_000), 1);
    const large = at(100_000);
    expect(large / small).toBeLessThan(12);
  });

  it(`skips the normal-form checks, saying so, above ${MAX_MARK_RUN} combining marks in a row`, () => {
    expect(valueWarnings(`x${'\u0301'.repeat(100_000)}${'\u0316'.repeat(100_000)}/../cache.txt`)).toEqual([WARNING.tooManyMarks]);
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
