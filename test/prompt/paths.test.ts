/**
 * Paths are rendered component by component (BUG-27): every component stays visible, only an
 * over-long component is cut, in its own middle, with its own `…` and its own fingerprint.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_PATH_GRAPHEMES, escapeValue, renderPath, renderValue, renderValueParts } from '../../src/prompt/render.js';
import { FORBIDDEN, LINE_BREAK, decodeBody, graphemeCount } from './helpers.js';

const segmenter = new Intl.Segmenter('und', { granularity: 'grapheme' });

/**
 * Width of a component as shown, independently of the renderer: graphemes (UAX #29, as
 * Intl.Segmenter finds them) of its escaped text, a grapheme of more than 16 code points counted
 * per code point (the renderer's documented rule for pathological clusters).
 */
function shownWidth(component: string): number {
  const text = escapeValue(component)
    .units.map((u) => u.text)
    .join('');
  let n = 0;
  for (const { segment } of segmenter.segment(text)) {
    const points = [...segment].length;
    n += points > 16 ? points : 1;
  }
  return n;
}

/** The rendering with every fingerprint removed; they follow the code span, which holds no backtick. */
function withoutFingerprints(text: string): string {
  const close = text.indexOf('`', 1);
  return (
    text.slice(0, close + 1) +
    text.slice(close + 1).replace(/fingerprints? [0-9a-f]{16}(?:, [0-9a-f]{16})*/g, 'fingerprint')
  );
}

/** One piece of a hostile component (no `/`: that is the separator). */
const piece = fc
  .oneof(
    {
      weight: 4,
      arbitrary: fc.constantFrom(
        'a',
        'b',
        'x',
        '0',
        '1',
        '.',
        '-',
        '_',
        ' ',
        '  ',
        '…',
        '\\',
        '⟨',
        '⟩',
        'U+',
        '202E',
        '`',
        '\n',
        '\t',
        '\u001b',
        '\u202E',
        '\u2066',
        '\u200B',
        '\u00AD',
        '\u3164',
        '\u00A0',
        '\u0301',
        '\u0316',
        '\u094D',
        '\u0915',
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
        '\u{1F3FD}',
        '\uD800',
        '\uDC00',
        '\u{10FFFF}',
        '\uFF0F',
        '\u2215',
        'thesis-FINAL',
        'scratch-tmp',
        'chapter-03',
        '⟨empty⟩',
        'fingerprint 0123456789abcdef',
      ),
    },
    { weight: 2, arbitrary: fc.integer({ min: 0, max: 0xffff }).map((u) => String.fromCharCode(u)) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme-composite', minLength: 1, maxLength: 1 }) },
  )
  .map((s) => s.replaceAll('/', ''));

/** A component at most 64 graphemes wide as shown (see shownWidth). */
const ordinary = fc
  .array(piece, { maxLength: 40 })
  .map((a) => a.join(''))
  .filter((c) => shownWidth(c) <= 64);

/** A component of any width, often far over the bound. */
const anyWidth = fc.oneof(
  ordinary,
  fc.array(piece, { minLength: 60, maxLength: 300 }).map((a) => a.join('')),
  fc
    .tuple(fc.constantFrom('a', 'é', '\u202E', 'ש', '\u0915\u094D'), fc.integer({ min: 100, max: 400 }))
    .map(([s, n]) => s.repeat(n)),
);

const path = (components: readonly string[], absolute: boolean): string => (absolute ? '/' : '') + components.join('/');

describe('renderPath: every component stays visible (BUG-27)', () => {
  it('renders any two distinct paths of at most 64 components, each at most 64 graphemes, differently outside the fingerprints', () => {
    const components = fc.array(ordinary, { minLength: 1, maxLength: 64 });
    const pair = fc.oneof(
      // Independent paths.
      fc
        .tuple(components, fc.boolean(), components, fc.boolean())
        .map(([a, absA, b, absB]) => [path(a, absA), path(b, absB)] as const),
      // Near-identical paths: the same but one component, at any position (the hard case).
      fc.tuple(components, fc.nat(), ordinary, fc.boolean()).map(([a, at, other, abs]) => {
        const b = [...a];
        b[at % a.length] = other;
        return [path(a, abs), path(b, abs)] as const;
      }),
      // The same but one component more or less.
      fc.tuple(components, fc.nat(), ordinary, fc.boolean()).map(([a, at, extra, abs]) => {
        const b = [...a];
        b.splice(at % (a.length + 1), 0, extra);
        return [path(a, abs), path(b, abs)] as const;
      }),
    );
    fc.assert(
      fc.property(pair, ([a, b]) => {
        fc.pre(a !== b);
        const ra = renderValueParts(a, { segments: '/' });
        const rb = renderValueParts(b, { segments: '/' });
        expect(withoutFingerprints(ra.text)).not.toBe(withoutFingerprints(rb.text));
        // Nothing is cut: every component is shown whole, and the shown text decodes to the path.
        expect(ra.cut).toBe(false);
        expect(decodeBody(ra.body)).toBe(a);
      }),
      { numRuns: 600 },
    );
  });

  it('keeps two paths apart outside the fingerprints whenever their differing component is at most 64 graphemes, whatever the width of the others', () => {
    fc.assert(
      fc.property(
        fc.array(anyWidth, { minLength: 1, maxLength: 24 }),
        fc.nat(),
        ordinary,
        ordinary,
        (others, at, x, y) => {
          fc.pre(x !== y);
          const i = at % (others.length + 1);
          const a = [...others.slice(0, i), x, ...others.slice(i)];
          const b = [...others.slice(0, i), y, ...others.slice(i)];
          const ta = renderPath(a.join('/'));
          const tb = renderPath(b.join('/'));
          expect(withoutFingerprints(ta)).not.toBe(withoutFingerprints(tb));
          // The differing component is shown whole, between the same separators.
          const shown = renderValueParts(a.join('/'), { segments: '/' }).body.split('/');
          expect(shown).toHaveLength(a.length);
          expect(decodeBody(shown[i] ?? '')).toBe(x);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('keeps every component, bounds each cut one to maxGraphemes, and stays one line and well-formed', () => {
    fc.assert(
      fc.property(
        fc.array(anyWidth, { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 10, max: 150 }),
        (components, max) => {
          const value = components.join('/');
          const parts = renderValueParts(value, { segments: '/', maxGraphemes: max });
          const shown = value === '' ? [''] : parts.body.split('/');
          expect(shown).toHaveLength(components.length);
          let cut = 0;
          for (const [k, s] of shown.entries()) {
            expect(graphemeCount(s)).toBeLessThanOrEqual(max);
            const c = components[k] ?? '';
            // Shown whole when narrow enough on its own (beside a `/` it can only be narrower:
            // a leading space or mark needs no escape there).
            if (shownWidth(c) <= max) expect(decodeBody(s)).toBe(c);
            let whole = false;
            try {
              whole = decodeBody(s) === c;
            } catch {
              whole = false;
            }
            if (!whole) cut += 1;
          }
          expect(parts.fingerprints).toHaveLength(cut);
          expect(FORBIDDEN.test(parts.text)).toBe(false);
          expect(LINE_BREAK.test(parts.text)).toBe(false);
          expect(parts.text.isWellFormed()).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('renderPath: the rule, example by example', () => {
  it('a cut whose remaining text happens to decode to the value is still reported as cut (…\\nກ at 10)', () => {
    // Found by the property above (seed -582644443): whole, `…` is escaped as ⟨U+2026⟩ and the
    // rendering is 11 wide, so it is cut from the front, and the cut mark stands where the
    // escape was. It is shortened and fingerprinted, and the decoder refuses its raw cut mark.
    const parts = renderValueParts('…\nກ', { segments: '/', maxGraphemes: 10 });
    expect(parts.cut).toBe(true);
    expect(parts.fingerprints).toHaveLength(1);
    expect(parts.text).toContain('shortened, fingerprint');
    expect(() => decodeBody(parts.body)).toThrow(/raw cut mark/);
    // Control: with room for the escape it is whole, and decodes to the value.
    const whole = renderValueParts('…\nກ', { segments: '/', maxGraphemes: 11 });
    expect(whole.cut).toBe(false);
    expect(decodeBody(whole.body)).toBe('…\nກ');
  });

  it('hard-5: shows the differing middle directory of two deep paths (thesis-FINAL, scratch-tmp) in full', () => {
    const deep = (dir: string): string =>
      `/srv/projects/client-acme-corporation-international/2026/quarterly-reports-and-analysis/${dir}/chapter-03/drafts/working-copies/literature-review-and-related-work/data.txt`;
    const a = renderPath(deep('thesis-FINAL'));
    const b = renderPath(deep('scratch-tmp'));
    expect(a).toBe(`\`${deep('thesis-FINAL')}\``);
    expect(b).toBe(`\`${deep('scratch-tmp')}\``);
    // The same string as one value is still cut as a whole, from its middle.
    expect(renderValue(deep('thesis-FINAL'))).toMatch(/…/);
  });

  it('cuts each over-long component in its own middle, with its own … and its own fingerprint, in order', () => {
    const one = `${'a'.repeat(100)}1${'z'.repeat(100)}`;
    const two = `${'b'.repeat(100)}2${'y'.repeat(100)}.txt`;
    const parts = renderValueParts(`/srv/${one}/short/${two}`, { segments: '/' });
    const print = (s: string): string =>
      createHash('sha256').update(Buffer.from(s, 'utf16le')).digest('hex').slice(0, 16);
    expect(parts.body).toBe(`/srv/${'a'.repeat(59)}…${'z'.repeat(60)}/short/${'b'.repeat(59)}…${'y'.repeat(56)}.txt`);
    expect(parts.fingerprints).toEqual([print(one), print(two)]);
    expect(parts.fingerprint).toBe(print(one));
    expect(parts.text).toBe(`\`${parts.body}\` (shortened, fingerprints ${print(one)}, ${print(two)})`);
  });

  it('does not cut a component exactly maxGraphemes wide, and cuts one a grapheme wider', () => {
    expect(renderPath(`/r/${'y'.repeat(120)}/f`)).toBe(`\`/r/${'y'.repeat(120)}/f\``);
    expect(renderPath(`/r/${'y'.repeat(121)}/f`)).toMatch(/^`\/r\/y+…y+\/f` \(shortened, fingerprint [0-9a-f]{16}\)$/);
    // An escape counts at its width: 15 × ⟨U+202E⟩ is 120 wide, 16 are 128.
    expect(renderValueParts(`/r/${'\u202E'.repeat(15)}/f`, { segments: '/' }).cut).toBe(false);
    expect(renderValueParts(`/r/${'\u202E'.repeat(16)}/f`, { segments: '/' }).cut).toBe(true);
  });

  it('shows a single over-long name like renderValue does, with the same fingerprint', () => {
    const name = `${'n'.repeat(200)}.txt`;
    expect(renderPath(name)).toBe(renderValue(name));
  });

  it('shows empty components (a leading, doubled or trailing /) as nothing between separators', () => {
    expect(renderValueParts(`//a//${'x'.repeat(130)}/`, { segments: '/' }).body).toBe(
      `//a//${'x'.repeat(59)}…${'x'.repeat(60)}/`,
    );
    expect(renderPath('')).toBe('`⟨empty⟩`');
  });

  it(`never leaves a component out of a path of up to 8,192 code units, even one of escapes only (at most ${MAX_PATH_GRAPHEMES} graphemes)`, () => {
    // Each component is 15 × U+202E, shown as 15 × ⟨U+202E⟩: 120 wide, the widest not cut.
    for (const count of [256, 512]) {
      const value = `${'\u202E'.repeat(15)}/`.repeat(count);
      expect(value.length).toBe(16 * count);
      const parts = renderValueParts(value, { segments: '/' });
      expect(parts.cut).toBe(false);
      expect(decodeBody(parts.body)).toBe(value);
    }
  });

  it(`past ${MAX_PATH_GRAPHEMES} graphemes in all, leaves whole components out of the middle, says how many, and gives the whole path's fingerprint`, () => {
    const value = Array.from({ length: 20_000 }, (_, i) => `dir-${i}`).join('/');
    const parts = renderValueParts(value, { segments: '/' });
    const m = / \(shortened, (\d+) of 20000 components left out, fingerprint ([0-9a-f]{16})\)$/.exec(parts.text);
    expect(m, parts.text.slice(-120)).not.toBeNull();
    const shown = parts.body.split('/');
    const gap = shown.indexOf('…');
    expect(gap).toBeGreaterThan(0);
    // The kept components are whole, the first ones and the last ones, in order.
    expect(shown.slice(0, gap)).toEqual(Array.from({ length: gap }, (_, i) => `dir-${i}`));
    const tail = shown.slice(gap + 1);
    expect(tail).toEqual(Array.from({ length: tail.length }, (_, i) => `dir-${20_000 - tail.length + i}`));
    expect(Number(m?.[1])).toBe(20_000 - gap - tail.length);
    expect(m?.[2]).toBe(createHash('sha256').update(Buffer.from(value, 'utf16le')).digest('hex').slice(0, 16));
    // ASCII: one grapheme per code unit (Intl.Segmenter is slow on long strings, so not used here).
    expect(parts.body.length).toBeLessThanOrEqual(MAX_PATH_GRAPHEMES);
  });
});
