/**
 * Overlay marks (Canonical_Combining_Class 1) are always escaped: drawn across their base they
 * can draw a slash over a space or a letter, so `notes ̸thesis.txt` would read as `notes/thesis.txt`.
 */
import { describe, expect, it } from 'vitest';
import { OVERLAY_MARKS } from '../../src/prompt/escape.js';
import { renderPath, renderValue } from '../../src/prompt/render.js';

/** Every mark whose canonical combining class is exactly 1, found with the runtime's normalization (UAX #15 canonical ordering). */
function overlayMarksByNormalization(): string[] {
  const found: string[] = [];
  for (let cp = 0x300; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const m = String.fromCodePoint(cp);
    if (!/\p{M}/u.test(m) || m.normalize('NFD') !== m) continue;
    // A non-starter ordered before U+0301 (class 230) ...
    const nonStarterBelow230 = `a\u0301${m}`.normalize('NFD') === `a${m}\u0301`;
    // ... and never reordered against U+0334 (class 1), in either order: the same class.
    const classOne =
      `a${m}\u0334`.normalize('NFD') === `a${m}\u0334` && `a\u0334${m}`.normalize('NFD') === `a\u0334${m}`;
    if (nonStarterBelow230 && classOne) found.push(m);
  }
  return found;
}

describe('overlay marks (ccc = 1)', () => {
  it("the escaped set is exactly the class-1 marks of this runtime's Unicode data", () => {
    expect(overlayMarksByNormalization()).toEqual([...OVERLAY_MARKS]);
  });

  it.each([
    ['notes \u0338thesis.txt', 'U+0338'],
    ['notes\u0338thesis.txt', 'U+0338'],
    ['notes\u0337thesis.txt', 'U+0337'],
    ['notes\u20EBthesis.txt', 'U+20EB'],
  ])('never shows %j with its overlay raw: it becomes ⟨%s⟩', (name, escape) => {
    for (const shown of [renderPath(`/srv/${name}`), renderValue(name)]) {
      expect(shown).toContain(`⟨${escape}⟩`);
      expect([...shown].some((c) => OVERLAY_MARKS.includes(c))).toBe(false);
    }
  });

  it('control: an ordinary combining mark (U+0301) in a real name stays as it is', () => {
    expect(renderPath('/srv/cafe\u0301.txt')).toContain('cafe\u0301.txt');
  });
});
