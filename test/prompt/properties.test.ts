/**
 * Property tests (fast-check) over arbitrary strings: lone surrogates, astral code points,
 * combining marks, controls, bidi and invisible characters, escape look-alikes and backticks.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  escapeValue,
  question,
  renderValue,
  renderValueParts,
  valueWarnings,
} from '../../src/prompt/render.js';
import { FORBIDDEN, LINE_BREAK, decodeBody, graphemeBoundaries, graphemeCount } from './helpers.js';

/** One piece of a hostile string. */
const piece = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(
    '\\', '⟨', '⟩', 'U+', '202E', '`', '``', ' ', '  ', '\n', '\r', '\t', '\u001b', '\u0007', '\b',
    '\u007f', '\u0085', '\u009b', '\u2028', '\u2029', '\u202E', '\u2066', '\u2069', '\u061C', '\u200B',
    '\u200C', '\u200D', '\u00AD', '\u034F', '\uFE0F', '\uFEFF', '\u3164', '\u115F', '\u2800', '\u00A0',
    '\u3000', '\u{E0041}', '\u{1F3FD}', '\u0301', '\u0302', '\u093E', '\u094D', '\u0915', '…', 'a', 'x',
    'n', '0', '.', 'а', 'α', 'ש', 'ب', '日', 'の', '\u1100', '\u1161', '🇦', '👍', '\uD800', '\uDC00',
    '\uFFFD', '\u{10FFFF}', '\u0D4E', '⟨empty⟩', '[x](https://a.example)', '<b>',
  ) },
  // Any UTF-16 code unit, so lone surrogates of every kind and surrogate pairs by chance.
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 0xffff }).map((u) => String.fromCharCode(u)) },
  // Any code point of the full range (astral included).
  { weight: 2, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  // Graphemes made of several code points (base + marks, emoji sequences, flags).
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme-composite', minLength: 1, maxLength: 1 }) },
);

const hostile = (maxLength: number): fc.Arbitrary<string> =>
  fc.array(piece, { maxLength }).map((a) => a.join(''));

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
        const full = escapeValue(value).units.map((u) => u.text).join('');
        if (parts.cut) {
          expect(parts.text).toMatch(/ \(shortened, fingerprint [0-9a-f]{16}\)/);
          // Some '…' (the value may hold its own) splits the shown text into a prefix and a
          // suffix of the escaped value whose escapes are whole: both ends decode on their own.
          const splits = [...parts.body.matchAll(/…/g)].map((m) => m.index);
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
        const full = escapeValue(value).units.map((u) => u.text).join('');
        const bounds = graphemeBoundaries(full);
        const at = parts.body.lastIndexOf('…');
        expect(bounds.has(at)).toBe(true);
        expect(bounds.has(full.length - (parts.body.length - at - 1))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('computes warnings as a function of the value alone (idempotent, order-independent)', () => {
    fc.assert(
      fc.property(fc.array(hostile(20), { minLength: 1, maxLength: 5 }), (values) => {
        const first = values.map((v) => valueWarnings(v));
        const renders = values.map((v) => renderValue(v));
        const again = [...values].reverse().map((v) => valueWarnings(v)).reverse();
        expect(again).toEqual(first);
        expect(values.map((v) => renderValue(v))).toEqual(renders);
        for (const [i, v] of values.entries()) {
          const w = first[i] ?? [];
          expect(renderValueParts(v).warnings).toEqual(w);
          expect(w.includes('not in Unicode normal form NFC')).toBe(v.normalize('NFC') !== v);
        }
      }),
      { numRuns: 300 },
    );
  });
});
