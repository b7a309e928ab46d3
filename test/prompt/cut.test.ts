import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_CLUSTER, takeHead, takeTail, windowUnits } from '../../src/prompt/cut.js';
import { JOINERS } from '../../src/prompt/units.js';
import { escapeValue } from '../../src/prompt/escape.js';

const segmenter = new Intl.Segmenter('und', { granularity: 'grapheme' });
const count = (s: string): number => {
  let n = 0;
  for (const _ of segmenter.segment(s)) n += 1;
  return n;
};
/** Code points escaping always shows as ⟨U+XXXX⟩, so they never sit in a literal run. */
const ESCAPED = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Z}\p{Default_Ignorable_Code_Point}\p{White_Space}]/u;

describe('grapheme fast path', () => {
  it('lists every code point that joins a neighbour into one grapheme under the running ICU', () => {
    // If a code point neither joins "a" on either side nor itself, every run without JOINERS
    // breaks between all its code points (UAX #29: the remaining rules need such a code point).
    const missing: string[] = [];
    for (let cp = 0; cp <= 0x10ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      const ch = String.fromCodePoint(cp);
      if (ESCAPED.test(ch) || JOINERS.test(ch)) continue;
      if (count(`a${ch}a`) !== 3 || count(ch + ch) !== 2) missing.push(cp.toString(16));
    }
    expect(missing).toEqual([]);
  });
});

/**
 * The cut segments only a window at each end of a long literal run (Node's segmenter costs time
 * proportional to the whole string on every step). These references segment the whole run, as
 * the cut did before; both must give the same text.
 */
describe('windowed cut equals the cut over whole runs', () => {
  const seg = new Intl.Segmenter('und', { granularity: 'grapheme' });
  const width = (g: string): number => {
    const n = [...g].length;
    return n > MAX_CLUSTER ? n : 1;
  };
  const refHead = (text: string, budget: number): string => {
    let out = '';
    let left = budget;
    for (const { segment } of seg.segment(text)) {
      const w = width(segment);
      if (w > left) return out + (w > 1 ? [...segment].slice(0, left).join('') : '');
      out += segment;
      left -= w;
    }
    return out;
  };
  const refTail = (text: string, budget: number): string => {
    const all = [...seg.segment(text)].map((s) => s.segment);
    let out = '';
    let left = budget;
    for (let k = all.length - 1; k >= 0; k--) {
      const g = all[k]!;
      const w = width(g);
      if (w > left) return (w > 1 && left > 0 ? [...g].slice(-left).join('') : '') + out;
      out = g + out;
      left -= w;
    }
    return out;
  };
  const joiner = fc.constantFrom(
    'e\u0301',
    '\u0301',
    '\u093E',
    '\u0915\u094D\u0937',
    '\u0915\u094D',
    '\u0915',
    '🇦',
    '🇧',
    '👍🏽',
    '\u{1F3FD}',
    '\u1100',
    '\u1161',
    '\u11A8',
    '한',
    'a',
    'ก\u0E33',
    '\u0D4E',
    'x\u0308\u0301\u0323',
    '\u0E33',
    'z',
  );

  it('for random long runs of joining code points, at both ends, for several budgets (fixed seed and run count)', () => {
    let windowed = 0;
    let whole = 0;
    fc.assert(
      fc.property(
        fc.array(joiner, { minLength: 600, maxLength: 3000 }),
        fc.integer({ min: 1, max: 70 }),
        (parts, budget) => {
          const text = parts.join('');
          // The escaper would escape a ninth extender in a row; keep the run as it would be shown.
          const units = escapeValue(text).units;
          for (const u of units) {
            if (u.escape || !u.complex) continue;
            // The drawn budget, and for a run longer than the smallest window the largest budget
            // whose window is still shorter than the run, so that the windows are always used.
            const budgets = [budget];
            if (u.text.length > windowUnits(1)) {
              let b = 70;
              while (windowUnits(b) >= u.text.length) b -= 1;
              budgets.push(b);
            }
            for (const b of budgets) {
              if (u.text.length > windowUnits(b)) windowed += 1;
              else whole += 1;
              expect(takeHead([u], b)).toBe(refHead(u.text, b));
              expect(takeTail([u], b)).toBe(refTail(u.text, b));
            }
          }
        },
      ),
      // A fixed seed and run count: the same cases on every run and every machine.
      { numRuns: 150, seed: 0x5eed0008 },
    );
    // Both ways were taken many times: runs longer than the window and runs within it.
    expect(windowed).toBeGreaterThan(150);
    expect(whole).toBeGreaterThan(150);
  });

  it('keeps regional indicators paired at the end of an odd or even run of any length', () => {
    for (const n of [1, 2, 3, 500, 501, 5000, 5001]) {
      const text = '🇦'.repeat(n);
      for (const budget of [1, 2, 59, 60])
        expect(takeTail([{ text, escape: false, complex: true }], budget)).toBe(refTail(text, budget));
    }
  });
});
