/**
 * Property tests (fast-check) over arbitrary strings: lone surrogates, astral code points,
 * combining marks, controls, bidi and invisible characters, escape look-alikes and backticks.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ANGLE_LOOKALIKES,
  GRAVE_LOOKALIKES,
  MAX_MARK_RUN,
  WARNING,
  escapeValue,
  question,
  renderValue,
  renderValueParts,
  valueWarnings,
} from '../../src/prompt/render.js';
import { Bc, bidiClass } from '../../src/prompt/bidi.js';
import { FORBIDDEN, LINE_BREAK, decodeBody, graphemeBoundaries, graphemeCount } from './helpers.js';

/** One piece of a hostile string. */
const piece = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      '\\',
      '⟨',
      '⟩',
      'U+',
      '202E',
      '`',
      '``',
      ' ',
      '  ',
      '\n',
      '\r',
      '\t',
      '\u001b',
      '\u0007',
      '\b',
      '\u007f',
      '\u0085',
      '\u009b',
      '\u2028',
      '\u2029',
      '\u202E',
      '\u2066',
      '\u2069',
      '\u061C',
      '\u200B',
      '\u200C',
      '\u200D',
      '\u00AD',
      '\u034F',
      '\uFE0F',
      '\uFEFF',
      '\u3164',
      '\u115F',
      '\u2800',
      '\u00A0',
      '\u3000',
      '\u{E0041}',
      '\u{1F3FD}',
      '\u0301',
      '\u0302',
      '\u093E',
      '\u094D',
      '\u0915',
      '…',
      'a',
      'x',
      'n',
      '0',
      '.',
      'а',
      'α',
      'ש',
      'ب',
      '日',
      'の',
      '\u1100',
      '\u1161',
      '🇦',
      '👍',
      '\uD800',
      '\uDC00',
      '\uFFFD',
      '\u{10FFFF}',
      '\u0D4E',
      '⟨empty⟩',
      '[x](https://a.example)',
      '<b>',
      // Look-alikes of the escapes and the fence, blank-looking and compatibility characters,
      // right-to-left letters, numbers and separators that reorder, path separators.
      '\u3008',
      '\u3009',
      '\u276C',
      '\u276D',
      '\u2039',
      '\uFF1C',
      '⟨U+0020⟩',
      '\u02CB',
      '\uFF40',
      '\u1FEF',
      '\u{1D159}',
      '\uFFFC',
      '\u{1D68C}',
      '\uFF43',
      '\uFB01',
      '²',
      'א',
      'ב',
      'م',
      '١',
      '/',
      '(',
      ')',
      '\uFF9E',
      // Look-alikes of path syntax (TR #39 confusables): symbols, and letters kept or escaped by
      // the script of their component; Cyrillic letters that look Latin.
      '\u2215',
      '\u2044',
      '\u2025',
      '\uFF0F',
      'ノ',
      'ート',
      '\u0903',
      'दु',
      '\u0660',
      '٢',
      '\u4E3F',
      'с',
      'һ',
    ),
  },
  // Any UTF-16 code unit, so lone surrogates of every kind and surrogate pairs by chance.
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 0xffff }).map((u) => String.fromCharCode(u)) },
  // Any code point of the full range (astral included).
  { weight: 2, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  // Graphemes made of several code points (base + marks, emoji sequences, flags).
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme-composite', minLength: 1, maxLength: 1 }) },
);

const hostile = (maxLength: number): fc.Arbitrary<string> => fc.array(piece, { maxLength }).map((a) => a.join(''));

/** Large enough that no generated value is cut. */
const NO_CUT = { maxGraphemes: 100_000 };

describe('renderValue properties', () => {
  it('is injective when not cut: the shown text decodes back to exactly the value', () => {
    fc.assert(
      fc.property(hostile(30), (value) => {
        const parts = renderValueParts(value, NO_CUT);
        expect(parts.cut).toBe(false);
        expect(decodeBody(parts.body)).toBe(value);
      }),
      { numRuns: 1000 },
    );
  });

  it('renders two different values differently (including near-identical pairs)', () => {
    fc.assert(
      fc.property(hostile(12), piece, piece, hostile(12), (pre, x, y, post) => {
        fc.pre(x !== y);
        const a = pre + x + post;
        const b = pre + y + post;
        fc.pre(a !== b);
        expect(renderValue(a, NO_CUT)).not.toBe(renderValue(b, NO_CUT));
      }),
      { numRuns: 1000 },
    );
  });

  it('lets no forbidden character or line break through and keeps the output well-formed', () => {
    fc.assert(
      fc.property(hostile(40), fc.integer({ min: 10, max: 200 }), (value, max) => {
        const q = question`Permanently delete ${value}?`;
        const text = renderValue(value, { maxGraphemes: max });
        for (const s of [q, text]) {
          expect(FORBIDDEN.test(s)).toBe(false);
          expect(LINE_BREAK.test(s)).toBe(false);
          expect(s.isWellFormed()).toBe(true);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('never shows a backtick, a look-alike of it, or a bracket like ⟨ ⟩ outside an escape: one-backtick fence', () => {
    const raw = new RegExp(`[${GRAVE_LOOKALIKES}${ANGLE_LOOKALIKES}]`, 'u');
    fc.assert(
      fc.property(hostile(40), fc.integer({ min: 10, max: 200 }), (value, max) => {
        const parts = renderValueParts(value, { maxGraphemes: max });
        expect(parts.fence).toBe('`');
        expect(parts.text.startsWith(`\`${parts.body}\``)).toBe(true);
        const shown = value === '' ? '' : parts.body; // '' is shown as ⟨empty⟩
        expect(raw.test(shown.replace(/⟨U\+[0-9A-F]{4,6}⟩/g, ''))).toBe(false);
      }),
      { numRuns: 1000 },
    );
  });

  it('shows a U+0020 only alone between two non-spaces, never at an end', () => {
    fc.assert(
      fc.property(hostile(30), (value) => {
        const { body } = renderValueParts(value, NO_CUT);
        expect(body.startsWith(' ')).toBe(false);
        expect(body.endsWith(' ')).toBe(false);
        expect(body.includes('  ')).toBe(false);
      }),
      { numRuns: 500 },
    );
  });

  it('keeps at most maxGraphemes graphemes (Intl.Segmenter) of shown text, cutting from the middle', () => {
    fc.assert(
      fc.property(hostile(200), fc.integer({ min: 10, max: 150 }), (value, max) => {
        const parts = renderValueParts(value, { maxGraphemes: max });
        expect(graphemeCount(parts.body)).toBeLessThanOrEqual(max);
        // No grapheme hides a long run: at most 16 code points per counted unit.
        expect([...parts.body].length).toBeLessThanOrEqual(max * 16);
        const full = escapeValue(value)
          .units.map((u) => u.text)
          .join('');
        if (parts.cut) {
          expect(parts.text).toMatch(/ \(shortened, fingerprint [0-9a-f]{16}\)/);
          // The one '…' (a value's own is escaped, a path-syntax look-alike) splits the shown
          // text into a prefix and a suffix of the escaped value whose escapes are whole: both
          // ends decode on their own.
          const splits = [...parts.body.matchAll(/…/g)].map((m) => m.index);
          expect(splits).toHaveLength(1);
          const ok = splits.some((at) => {
            const head = parts.body.slice(0, at);
            const tail = parts.body.slice(at + 1);
            if (!full.startsWith(head) || !full.endsWith(tail)) return false;
            try {
              return value.startsWith(decodeBody(head)) && value.endsWith(decodeBody(tail));
            } catch {
              return false;
            }
          });
          expect(ok).toBe(true);
        } else {
          expect(parts.body).toBe(value === '' ? '⟨empty⟩' : full);
          expect(parts.fingerprint).toBeUndefined();
        }
      }),
      { numRuns: 400 },
    );
  });

  it('cuts on grapheme boundaries of the escaped text', () => {
    // Values whose graphemes are all short (no pathological cluster) and have no Prepend.
    const ordinary = fc
      .array(fc.constantFrom('a', 'é', 'e\u0301', '👍🏽', '🇦🇧', '\u0915\u094D\u0937', '\n', '\u202E', 'ש', '`', ' '), {
        maxLength: 120,
      })
      .map((a) => a.join(''));
    fc.assert(
      fc.property(ordinary, fc.integer({ min: 10, max: 60 }), (value, max) => {
        const parts = renderValueParts(value, { maxGraphemes: max });
        fc.pre(parts.cut);
        const full = escapeValue(value)
          .units.map((u) => u.text)
          .join('');
        const bounds = graphemeBoundaries(full);
        const at = parts.body.lastIndexOf('…');
        expect(bounds.has(at)).toBe(true);
        expect(bounds.has(full.length - (parts.body.length - at - 1))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('computes warnings as a function of the value and options alone (idempotent, order-independent)', () => {
    const longRun = new RegExp(`[\\p{M}\\uFF9E\\uFF9F]{${MAX_MARK_RUN + 1}}`, 'u');
    fc.assert(
      fc.property(
        fc.array(hostile(20), { minLength: 1, maxLength: 5 }),
        fc.constantFrom({}, { segments: '/' }, { maxGraphemes: 12 }),
        (values, options) => {
          const first = values.map((v) => valueWarnings(v, options));
          const renders = values.map((v) => renderValue(v, options));
          const again = [...values]
            .reverse()
            .map((v) => valueWarnings(v, options))
            .reverse();
          expect(again).toEqual(first);
          expect(values.map((v) => renderValue(v, options))).toEqual(renders);
          for (const [i, v] of values.entries()) {
            const w = first[i] ?? [];
            expect(renderValueParts(v, options).warnings).toEqual(w);
            if (longRun.test(v)) {
              expect(w).toContain(WARNING.tooManyMarks);
              expect(w).not.toContain(WARNING.notNfc);
            } else {
              expect(w.includes(WARNING.notNfc)).toBe(v.normalize('NFC') !== v);
              // Text stable under NFKC never gets the compatibility warning.
              if (v.normalize('NFKC') === v) expect(w).not.toContain(WARNING.notNfkc);
            }
            // Without right-to-left letters or Arabic digits nothing can reorder.
            const rtl = [...v].some((ch) =>
              [Bc.R, Bc.AL, Bc.AN].includes(bidiClass(ch.codePointAt(0) ?? 0) as 1 | 2 | 6),
            );
            if (!rtl) expect(w).not.toContain(WARNING.rtlOrder);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
