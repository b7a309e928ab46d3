import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_MAX_GRAPHEMES,
  GRAVE_LOOKALIKES,
  fingerprint,
  question,
  questionWith,
  renderValue,
  renderValueParts,
  scriptMix,
  valueWarnings,
} from '../../src/prompt/render.js';
import { FORBIDDEN, LINE_BREAK, decodeBody, graphemeCount } from './helpers.js';
import { distinctPairs, hostileVectors } from './vectors.js';

const ask = (v: string): string => question`Permanently delete ${v}?`;

describe('hostile vectors (text-1, text-2, text-3, text-5, Trojan Source, terminals, homoglyphs)', () => {
  it.each(hostileVectors)('$name: one line, every control visible', ({ value, forbidden, shown }) => {
    const q = ask(value);
    expect(q.startsWith('Permanently delete `')).toBe(true);
    expect(q.endsWith('?')).toBe(true);
    expect(LINE_BREAK.test(q)).toBe(false);
    expect(FORBIDDEN.test(q)).toBe(false);
    expect(q.isWellFormed()).toBe(true);
    for (const raw of forbidden) expect(q).not.toContain(raw);
    for (const text of shown) expect(q).toContain(text);
    // The whole value is there and can be read back exactly (or, when cut, both ends can).
    const parts = renderValueParts(value);
    if (parts.cut) {
      const [head = '', tail = ''] = parts.body.split('…');
      expect(value.startsWith(decodeBody(head))).toBe(true);
      expect(value.endsWith(decodeBody(tail))).toBe(true);
    } else expect(decodeBody(parts.body)).toBe(value);
  });
});

describe('text-4: values that look alike render differently', () => {
  it.each(distinctPairs)('%s', (_name, a, b) => {
    expect(renderValue(a)).not.toBe(renderValue(b));
    expect(ask(a)).not.toBe(ask(b));
  });

  it('renders the handed text-4 inputs with exactly these escapes', () => {
    expect(renderValue('a\nb')).toBe('`a\\nb`');
    expect(renderValue('a b')).toBe('`a b`');
    expect(renderValue('a\tb')).toBe('`a\\tb`');
    expect(renderValue('a  b')).toBe('`a⟨U+0020⟩⟨U+0020⟩b`');
    expect(renderValue('a\\nb')).toBe('`a\\\\nb`');
  });
});

describe('escape syntax', () => {
  it('shows tab, newline and carriage return as \\t, \\n, \\r', () => {
    expect(renderValueParts('\t\n\r').body).toBe('\\t\\n\\r');
  });

  it('shows every other C0 control, DEL and every C1 control as \\xHH in lowercase hex', () => {
    for (let cp = 0; cp <= 0x9f; cp++) {
      if (cp >= 0x20 && cp < 0x7f) continue;
      if (cp === 0x09 || cp === 0x0a || cp === 0x0d) continue;
      const body = renderValueParts(`a${String.fromCharCode(cp)}b`).body;
      expect(body).toBe(`a\\x${cp.toString(16).padStart(2, '0')}b`);
    }
  });

  it('escapes the escape characters themselves: \\ as \\\\, ⟨ as ⟨U+27E8⟩ and ⟩ as ⟨U+27E9⟩', () => {
    expect(renderValueParts('a\\b').body).toBe('a\\\\b');
    expect(renderValueParts('⟨x⟩').body).toBe('⟨U+27E8⟩x⟨U+27E9⟩');
  });

  it('shows every bidi control of Unicode TR #9 as ⟨U+XXXX⟩', () => {
    const bidi = [0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069];
    for (const cp of bidi) {
      const hex = cp.toString(16).toUpperCase().padStart(4, '0');
      expect(renderValueParts(`a${String.fromCodePoint(cp)}b`).body).toBe(`a⟨U+${hex}⟩b`);
    }
  });

  it('shows every Default_Ignorable_Code_Point (UAX #44) as ⟨U+XXXX⟩, never dropped', () => {
    const di = /^\p{Default_Ignorable_Code_Point}$/u;
    let checked = 0;
    for (let cp = 0; cp <= 0x10ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      const ch = String.fromCodePoint(cp);
      if (!di.test(ch)) continue;
      const hex = cp.toString(16).toUpperCase().padStart(4, '0');
      expect(renderValueParts(`a${ch}b`).body).toBe(`a⟨U+${hex}⟩b`);
      checked += 1;
    }
    expect(checked).toBeGreaterThan(4000);
  });

  it('shows lone surrogates as ⟨U+D800⟩ and keeps the output well-formed', () => {
    const parts = renderValueParts('\uDC00x\uD800');
    expect(parts.body).toBe('⟨U+DC00⟩x⟨U+D800⟩');
    expect(parts.text.isWellFormed()).toBe(true);
  });

  it('keeps a single inner space and escapes leading, trailing and repeated spaces', () => {
    expect(renderValueParts('a b c').body).toBe('a b c');
    expect(renderValueParts(' a').body).toBe('⟨U+0020⟩a');
    expect(renderValueParts('a ').body).toBe('a⟨U+0020⟩');
    expect(renderValueParts('a   b').body).toBe('a⟨U+0020⟩⟨U+0020⟩⟨U+0020⟩b');
    expect(renderValueParts(' ').body).toBe('⟨U+0020⟩');
  });

  it('escapes every whitespace other than U+0020 (NBSP, em space, ideographic space)', () => {
    expect(renderValueParts('a\u00A0b\u2003c\u3000d').body).toBe('a⟨U+00A0⟩b⟨U+2003⟩c⟨U+3000⟩d');
  });

  it('escapes a combining mark with no visible base (at the start or after an escape)', () => {
    expect(renderValueParts('\u0301a').body).toBe('⟨U+0301⟩a');
    expect(renderValueParts('a\u200B\u0301').body).toBe('a⟨U+200B⟩⟨U+0301⟩');
  });

  it('escapes a fifth nonspacing mark in a row and a repeated mark (TR #39 §5.4)', () => {
    expect(renderValueParts('a\u0301\u0302\u0303\u0304\u0305').body).toBe('a\u0301\u0302\u0303\u0304⟨U+0305⟩');
    expect(renderValueParts('a\u0301\u0301').body).toBe('a\u0301⟨U+0301⟩');
  });

  it('escapes spacing marks beyond the eighth in a row', () => {
    const body = renderValueParts(`\u0915${'\u093E'.repeat(10)}`).body;
    expect(body).toBe(`\u0915${'\u093E'.repeat(8)}⟨U+093E⟩⟨U+093E⟩`);
  });

  it('shows the empty string as ⟨empty⟩', () => {
    expect(renderValue('')).toBe('`⟨empty⟩`');
  });

  it('shows a real Hebrew name (שלום.txt) and Arabic name (مرحبا.txt) with their letters, unescaped', () => {
    expect(renderValue('שלום.txt')).toBe('`שלום.txt`');
    expect(renderValue('مرحبا.txt')).toBe('`مرحبا.txt`');
    expect(ask('שלום.txt')).toBe('Permanently delete `שלום.txt`?');
  });

  it('shows other ordinary scripts and emoji as they are', () => {
    expect(renderValue('日本語のファイル.txt')).toBe('`日本語のファイル.txt`');
    expect(renderValue('отчёт.txt')).toBe('`отчёт.txt`');
    expect(renderValue('नमस्ते.txt')).toBe('`नमस्ते.txt`');
    expect(renderValue('👍🏽 🇫🇷.txt')).toBe('`👍🏽 🇫🇷.txt`');
  });
});

describe('code span (CommonMark 0.31.2 §6.1)', () => {
  it('escapes every backtick as ⟨U+0060⟩, so the fence is always one backtick and never padded', () => {
    expect(renderValue('a`b')).toBe('`a⟨U+0060⟩b`');
    expect(renderValue('a``b```c')).toBe('`a⟨U+0060⟩⟨U+0060⟩b⟨U+0060⟩⟨U+0060⟩⟨U+0060⟩c`');
    expect(renderValue('`a')).toBe('`⟨U+0060⟩a`');
    expect(renderValue('a`')).toBe('`a⟨U+0060⟩`');
    expect(renderValue('`')).toBe('`⟨U+0060⟩`');
    expect(renderValueParts('``').fence).toBe('`');
  });

  it('escapes the grave accents drawn like a backtick (TR #39 look-alikes): ˋ ˴ ` ｀', () => {
    expect(renderValueParts('a\u02CBb\u02F4c\u1FEFd\uFF40e').body).toBe('a⟨U+02CB⟩b⟨U+02F4⟩c⟨U+1FEF⟩d⟨U+FF40⟩e');
    for (const ch of GRAVE_LOOKALIKES)
      expect(renderValueParts(ch).body).toBe(`⟨U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}⟩`);
  });

  it("keeps a name from imitating the question's wording in a plain-text client (the fake part stays inside one quote)", () => {
    const name = 'a.txt`, requested as `a.txt`? Size: 0 bytes. This cannot be undone. (x';
    const q = question`Permanently delete the file ${`/tmp/r/${name}`}, requested as ${name}? Size: 5 bytes. This cannot be undone.`;
    // Before: the name closed its doubled-backtick fence in plain text and showed a fake "Size: 0 bytes" first.
    expect(q).toBe(
      'Permanently delete the file `/tmp/r/a.txt⟨U+0060⟩, requested as ⟨U+0060⟩a.txt⟨U+0060⟩? Size: 0 bytes. This cannot be undone. (x`, ' +
        'requested as `a.txt⟨U+0060⟩, requested as ⟨U+0060⟩a.txt⟨U+0060⟩? Size: 0 bytes. This cannot be undone. (x`? Size: 5 bytes. This cannot be undone.',
    );
    // Exactly four backticks: the two fences of each value.
    expect([...q].filter((c) => c === '`')).toHaveLength(4);
  });
});

describe('warnings (TR #39 mixed scripts, UAX #15 NFC)', () => {
  it('warns about Latin mixed with Cyrillic (pаypal)', () => {
    expect(renderValue('p\u0430ypal.txt')).toBe('`p\u0430ypal.txt` (warning: mixes Latin and Cyrillic letters)');
  });

  it('warns about a decomposed (non-NFC) name and about both at once', () => {
    expect(valueWarnings('cafe\u0301.txt')).toEqual(['not in Unicode normal form NFC']);
    expect(renderValue('p\u0430yp\u0430l\u0301')).toBe(
      '`p\u0430yp\u0430l\u0301` (warning: mixes Latin and Cyrillic letters; not in Unicode normal form NFC)',
    );
  });

  it('names at most three scripts, then "and other"', () => {
    expect(valueWarnings('aаαաა')).toEqual(['mixes Latin, Cyrillic, Greek and other letters']);
    expect(valueWarnings('aаα')).toEqual(['mixes Latin, Cyrillic and Greek letters']);
  });

  it('does not warn for one script plus an ASCII extension, or for Han with kana or Latin', () => {
    for (const v of ['шлем.tar.gz', 'שלום.txt', 'Ελληνικά.pdf', '日本語のファイル', 'report_报告.txt', '한국어 文書']) {
      expect(valueWarnings(v)).toEqual([]);
    }
  });

  it('treats digits, punctuation and escaped format characters as neutral', () => {
    expect(scriptMix('2024-отчёт (копия).txt').mixed).toBe(false);
    expect(scriptMix('c\u061Cd.txt').mixed).toBe(false);
  });

  it('uses Script_Extensions: Arabic-Indic digits go with Thaana but not with Latin', () => {
    expect(scriptMix('\u078A\u0663').mixed).toBe(false);
    expect(valueWarnings('file\u0663.txt')).toEqual(['mixes Latin and Arabic letters']);
  });

  it('does not name a shared combining mark as a script of its own', () => {
    expect(valueWarnings('p\u0430ypal\u0301x')).toEqual([
      'mixes Latin and Cyrillic letters',
      'not in Unicode normal form NFC',
    ]);
  });

  it('warns for a whole Cyrillic word next to a Latin one before the extension', () => {
    expect(valueWarnings('pay-\u0440\u0430\u0443.txt')).toEqual(['mixes Latin and Cyrillic letters']);
  });

  it('gives the same warnings however often and in whatever order it is asked', () => {
    const values = ['p\u0430ypal', 'ok.txt', 'cafe\u0301', 'aаαաა', '日本'];
    const first = values.map((v) => valueWarnings(v));
    const again = [...values]
      .reverse()
      .map((v) => valueWarnings(v))
      .reverse();
    expect(again).toEqual(first);
  });
});

describe('bound: cut from the middle with a fingerprint', () => {
  const long = `${'start-'.repeat(20)}${'x'.repeat(500)}${'-end'.repeat(20)}.txt`;

  it(`keeps at most ${DEFAULT_MAX_GRAPHEMES} graphemes, the start and the end, and marks the cut`, () => {
    const parts = renderValueParts(long);
    expect(parts.cut).toBe(true);
    expect(graphemeCount(parts.body)).toBeLessThanOrEqual(DEFAULT_MAX_GRAPHEMES);
    expect(parts.body.startsWith('start-start-')).toBe(true);
    expect(parts.body.endsWith('-end-end.txt')).toBe(true);
    expect(parts.body).toContain('…');
    expect(parts.text).toBe(`\`${parts.body}\` (shortened, fingerprint ${parts.fingerprint})`);
  });

  it('fingerprints the whole raw value as SHA-256 of its UTF-16LE code units, 16 hex digits', () => {
    const expected = createHash('sha256').update(Buffer.from(long, 'utf16le')).digest('hex').slice(0, 16);
    expect(renderValueParts(long).fingerprint).toBe(expected);
    expect(fingerprint(long)).toMatch(/^[0-9a-f]{16}$/);
  });

  it('distinguishes two long names that differ only in the middle', () => {
    const a = `${'a'.repeat(200)}X${'a'.repeat(200)}`;
    const b = `${'a'.repeat(200)}Y${'a'.repeat(200)}`;
    expect(renderValueParts(a).body).toBe(renderValueParts(b).body);
    expect(renderValue(a)).not.toBe(renderValue(b));
  });

  it('distinguishes long names differing only in a lone surrogate (UTF-8 would collapse them to U+FFFD)', () => {
    const a = `${'a'.repeat(200)}\uD800${'a'.repeat(200)}`;
    const b = `${'a'.repeat(200)}\uDC00${'a'.repeat(200)}`;
    expect(renderValue(a)).not.toBe(renderValue(b));
  });

  it('does not cut a value exactly at the limit, and cuts one grapheme more', () => {
    expect(renderValueParts('y'.repeat(120)).cut).toBe(false);
    expect(renderValueParts('y'.repeat(121)).cut).toBe(true);
    expect(renderValueParts('é'.repeat(120)).cut).toBe(false);
  });

  it('never splits an escape next to the cut and still escapes the controls there', () => {
    for (let shift = 0; shift < 12; shift++) {
      const value = `${'n'.repeat(50 + shift)}${'\u001b\u202E'.repeat(40)}${'m'.repeat(50)}`;
      const { body } = renderValueParts(value);
      expect(FORBIDDEN.test(body)).toBe(false);
      const [head, tail] = body.split('…');
      expect(() => decodeBody(head ?? '')).not.toThrow();
      expect(() => decodeBody(tail ?? '')).not.toThrow();
    }
  });

  it('counts an escape as wide as its text', () => {
    const parts = renderValueParts('\u202E'.repeat(16)); // 16 × 8 = 128 graphemes
    expect(parts.cut).toBe(true);
    expect(graphemeCount(parts.body)).toBeLessThanOrEqual(DEFAULT_MAX_GRAPHEMES);
  });

  it('bounds a single huge grapheme (1000 conjoining Hangul jamo) by counting its code points', () => {
    const parts = renderValueParts('\u1100'.repeat(1000));
    expect(parts.cut).toBe(true);
    expect([...parts.body].length).toBeLessThanOrEqual(DEFAULT_MAX_GRAPHEMES);
  });

  it('honours a custom maxGraphemes and refuses one that is not an integer of at least 10', () => {
    const parts = renderValueParts('z'.repeat(100), { maxGraphemes: 20 });
    expect(graphemeCount(parts.body)).toBeLessThanOrEqual(20);
    expect(parts.body).toBe(`${'z'.repeat(9)}…${'z'.repeat(10)}`);
    for (const bad of [9, 0, -1, 10.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => renderValue('x', { maxGraphemes: bad })).toThrow(RangeError);
      expect(() => questionWith({ maxGraphemes: bad })).toThrow(RangeError);
    }
  });
});

describe('question tagged template', () => {
  it('renders every interpolated value and keeps the static text as written', () => {
    expect(question`Move ${'a\nb'} to ${'c'}?`).toBe('Move `a\\nb` to `c`?');
  });

  it('puts the warning right after the value it concerns', () => {
    expect(question`Delete ${'p\u0430ypal'} and ${'ok'}?`).toBe(
      'Delete `p\u0430ypal` (warning: mixes Latin and Cyrillic letters) and `ok`?',
    );
  });

  it('applies options to every value with questionWith', () => {
    const q = questionWith({ maxGraphemes: 12 })`Delete ${'q'.repeat(50)}?`;
    expect(q).toMatch(/^Delete `q{5}…q{6}` \(shortened, fingerprint [0-9a-f]{16}\)\?$/);
  });

  it('refuses a value that is not a string with TypeError', () => {
    const notString = 42 as unknown as string;
    expect(() => question`Delete ${notString}?`).toThrow(TypeError);
  });

  it('gives a one-line question for a one-line template whatever the value', () => {
    for (const v of ['a\r\nb', '\u2028', '\u0085', '\n'.repeat(300)]) {
      expect(LINE_BREAK.test(ask(v))).toBe(false);
    }
  });
});
