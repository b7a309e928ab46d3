/**
 * Look-alikes of the question's own syntax that an attacker review found shown raw: marks drawn
 * like the code span's fence (the backtick U+0060) and dotted ellipses drawn like the cut mark
 * `…`. The whole kinds are escaped (GRAVE_LOOKALIKES and ELLIPSIS_LOOKALIKES in escape.ts); the
 * sets are checked against the classes of Unicode TR #39 confusables.txt (Unicode 13.0.0, as
 * shipped by unhomoglyph 1.0.6) they are drawn from.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import {
  ELLIPSIS_LOOKALIKES,
  GRAVE_LOOKALIKES,
  renderPath,
  renderValue,
  renderValueParts,
} from '../../src/prompt/render.js';
import { decodeBody } from './helpers.js';

const hex = (ch: string): string => ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
const confusables = createRequire(import.meta.url)('unhomoglyph/data.json') as Record<string, string>;

/**
 * The members of the TR #39 classes of `'`, `''` and `'''` that stay raw (reasons in
 * GRAVE_LOOKALIKES' documentation): comma-shaped marks leaning away from the backtick, primes
 * and acute accents, upright ticks, and letters and punctuation of scripts used in names.
 */
const KEPT =
  '\u2019\u201D\u02BC\u1FBD\u1FBF' +
  '\u2032\u2033\u2034\u00B4\u02CA\u1FFD\u0384\u02B9\u0374\u02DD\u02F6' +
  '\u02C8\u02BA\u02EE\uA78C\uFF07\uFF02\u3003\u1CD3\u02BE' +
  '\u05D9\u05F2\u05F3\u05F4\u055A\u07F4\u07F5\u144A\u16CC\u{16F51}\u{16F52}';

const attack = (mark: string): string => `/srv/scratch/cache.txt${mark} and keep ${mark}thesis.txt`;

describe('the code span fence cannot be imitated', () => {
  it('attack: U+2035 REVERSED PRIME never shows raw, so a name cannot imitate the code span fence; control: a backtick-free name is unchanged', () => {
    expect(renderPath(attack('\u2035'))).toBe('`/srv/scratch/cache.txt⟨U+2035⟩ and keep ⟨U+2035⟩thesis.txt`');
    expect(renderPath('/srv/scratch/cache.txt')).toBe('`/srv/scratch/cache.txt`');
  });

  it.each([
    ['02CE', 'MODIFIER LETTER LOW GRAVE ACCENT'],
    ['02BB', 'MODIFIER LETTER TURNED COMMA'],
    ['201B', 'SINGLE HIGH-REVERSED-9 QUOTATION MARK'],
    ['2036', 'REVERSED DOUBLE PRIME'],
    ['2037', 'REVERSED TRIPLE PRIME'],
    ['02BD', 'MODIFIER LETTER REVERSED COMMA'],
    ['2018', 'LEFT SINGLE QUOTATION MARK'],
    ['FF40', 'FULLWIDTH GRAVE ACCENT'],
    ['1FEF', 'GREEK VARIA'],
  ])('attack: U+%s %s never shows raw, so a name cannot imitate the code span fence', (h, _name) => {
    const mark = String.fromCodePoint(parseInt(h, 16));
    expect(renderValueParts(attack(mark)).body).toBe(`/srv/scratch/cache.txt⟨U+${h}⟩ and keep ⟨U+${h}⟩thesis.txt`);
    expect(decodeBody(renderValueParts(attack(mark)).body)).toBe(attack(mark));
  });

  it('attack: every code point of GRAVE_LOOKALIKES is escaped wherever it stands, even beside a letter of its own script (Bopomofo ㄓㄨˋ), and decodes back', () => {
    for (const mark of GRAVE_LOOKALIKES) {
      for (const value of [`a${mark}b`, mark, `${mark}x${mark}`, `\u3113\u3128${mark}`]) {
        const { body } = renderValueParts(value);
        expect(body.includes(mark), `${hex(mark)} in ${value}`).toBe(false);
        expect(body).toContain(`⟨U+${hex(mark)}⟩`);
        expect(decodeBody(body)).toBe(value);
      }
    }
  });

  it('attack: a combining grave on a space (U+0020 U+0300, drawn like a backtick) is escaped; control: the same mark on a letter (à) stays', () => {
    expect(renderValue('cache.txt \u0300and')).toBe('`cache.txt ⟨U+0300⟩and`');
    expect(renderValue('a\u0300 b')).toBe('`a\u0300 b` (warning: not in Unicode normal form NFC)');
  });

  it("sorts every member of the TR #39 classes of the backtick's skeleton (', '', ''') into escaped or kept, none left over", () => {
    const members = Object.entries(confusables)
      .filter(([, prototype]) => /^'{1,3}$/.test(prototype))
      .map(([source]) => source);
    expect(members.length).toBeGreaterThan(50);
    for (const c of members) {
      const escaped = GRAVE_LOOKALIKES.includes(c);
      const kept = KEPT.includes(c) || c === '"';
      expect(escaped !== kept, `U+${hex(c)} is on exactly one list`).toBe(true);
    }
  });

  it("control: the kept apostrophe, quotation mark and prime stay readable (John’s notes.txt, Don't.txt, 5′ plan.txt)", () => {
    expect(renderValue('John\u2019s notes.txt')).toBe('`John\u2019s notes.txt`');
    expect(renderValue("Don't.txt")).toBe("`Don't.txt`");
    expect(renderValue('5\u2032 plan.txt')).toBe('`5\u2032 plan.txt`');
  });

  it("U+02BB ʻokina has no script of its own (Common), so the script rule escapes it always: Hawaiʻi.txt shows Hawai⟨U+02BB⟩i.txt and decodes back; control: Hawai’i.txt and Hawai'i.txt stay", () => {
    expect(renderValue('Hawai\u02BBi.txt')).toBe('`Hawai⟨U+02BB⟩i.txt`');
    expect(decodeBody(renderValueParts('Hawai\u02BBi.txt').body)).toBe('Hawai\u02BBi.txt');
    expect(renderValue('Hawai\u2019i.txt')).toBe('`Hawai\u2019i.txt`');
    expect(renderValue("Hawai'i.txt")).toBe("`Hawai'i.txt`");
  });
});

describe('the cut mark cannot be imitated', () => {
  it('attack: U+22EF MIDLINE HORIZONTAL ELLIPSIS never shows raw, so a name cannot imitate the cut mark; control: a plain name is unchanged', () => {
    expect(renderValue('thesis-draft\u22EFfinal.txt')).toBe('`thesis-draft⟨U+22EF⟩final.txt`');
    expect(renderValue('thesis-draft-final.txt')).toBe('`thesis-draft-final.txt`');
  });

  it('attack: every symbol or punctuation of ELLIPSIS_LOOKALIKES is escaped wherever it stands, and decodes back', () => {
    for (const mark of ELLIPSIS_LOOKALIKES) {
      if (/\p{L}/u.test(mark)) continue;
      for (const value of [`a${mark}b`, mark, `\u1820\u1821${mark}`]) {
        const { body } = renderValueParts(value);
        expect(body.includes(mark), `${hex(mark)} in ${value}`).toBe(false);
        expect(decodeBody(body)).toBe(value);
      }
    }
  });

  it('holds the TR #39 classes of … and ⋯ (prototypes ... and ···)', () => {
    for (const [source, prototype] of Object.entries(confusables)) {
      if (prototype === '...' || prototype === '\u00B7\u00B7\u00B7')
        expect(ELLIPSIS_LOOKALIKES, `U+${hex(source)}`).toContain(source);
    }
  });

  it('attack: U+2D48 TIFINAGH LETTER TUAREG YAQ (⋯-like) is escaped in a Latin name; control: it stays in a Tifinagh name (the per-component script rule)', () => {
    expect(renderPath('/srv/draft\u2D48final.txt')).toContain('draft⟨U+2D48⟩final.txt');
    expect(renderPath('/srv/\u2D5C\u2D49\u2D4F\u2D48.txt')).toBe('`/srv/\u2D5C\u2D49\u2D4F\u2D48.txt`');
  });
});
