/**
 * Right-to-left text that reorders without any bidi control (Unicode TR #9): the warning, the
 * rule behind it (src/prompt/bidi.ts), and the Unicode 17 Bidi_Class table it reads.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Bc, bidiClass, bidiLevels, reordersRtl } from '../../src/prompt/bidi.js';
import { WARNING, escapeValue, question, questionWith, renderValue, valueWarnings } from '../../src/prompt/render.js';

const paths = questionWith({ segments: '/' });
const warn = ` (warning: ${WARNING.rtlOrder})`;

/**
 * The display order of the text's code points by TR #9 rule L2 (no mirroring): reverse every run
 * at level 2 or more, then every run at level 1 or more.
 */
function visualOrder(text: string): string {
  const cps = [...text];
  const { levels } = bidiLevels(text)!;
  const order = cps.map((_, i) => i);
  for (const min of [2, 1]) {
    for (let i = 0; i < order.length;) {
      if ((levels[order[i]!] ?? 0) < min) {
        i++;
        continue;
      }
      let j = i;
      while (j < order.length && (levels[order[j]!] ?? 0) >= min) j++;
      order.splice(i, j - i, ...order.slice(i, j).reverse());
      i = j;
    }
  }
  return order.map((k) => cps[k]).join('');
}

describe('the reported reorderings', () => {
  it('warns for /tmp/r/א/ב/ג.txt, which displays as /tmp/r/ג/ב/א.txt', () => {
    expect(visualOrder('/tmp/r/א/ב/ג.txt')).toBe('/tmp/r/ג/ב/א.txt');
    expect(paths`Delete ${'/tmp/r/א/ב/ג.txt'}?`).toBe(`Delete \`/tmp/r/א/ב/ג.txt\`${warn}?`);
  });

  it('warns for ملف 2 ملف 1.txt, which displays as 1 ملف 2 ملف.txt (each word still right to left)', () => {
    expect(visualOrder('ملف 2 ملف 1.txt')).toBe('1 فلم 2 فلم.txt');
    expect(renderValue('ملف 2 ملف 1.txt')).toBe(`\`ملف 2 ملف 1.txt\`${warn}`);
  });

  it('does not warn for one right-to-left word with an ASCII extension, alone or in a Latin path', () => {
    for (const v of ['שלום.txt', 'مرحبا.txt', '/tmp/r/שלום.txt', '/tmp/r/مرحبا.txt', 'שָׁלוֹם.txt']) {
      expect(valueWarnings(v, { segments: '/' }), v).toEqual([]);
    }
    expect(question`Permanently delete ${'שלום.txt'}?`).toBe('Permanently delete `שלום.txt`?');
  });
});

describe('the rule: a run displayed right to left must be one word or one number', () => {
  it.each([
    ['two words joined by a space', 'שלום עולם.txt', true],
    ['two directories', '/r/שלום/עולם.txt', true],
    ['a word with digits after it (displays digits first)', 'ملف1.txt', true],
    ['a word with Arabic-Indic digits', 'تقرير٢٠٢٤.pdf', true],
    ['a word then a number in brackets', 'קובץ (1).txt', true],
    ['a word with a hyphen inside', 'ש-ל.txt', true],
    ['Arabic-Indic digits split by a space', '١ ٢.txt', true],
    ['digits before the word (left to right, W7)', '2שלום.txt', false],
    ['an Arabic-Indic number alone', '١٢٣.txt', false],
    ['two words split by Latin text', 'שלום-x-עולם.txt', false],
    ['two words split by an escape (shown left to right)', 'שלום\u200Cעולם.txt', false],
    ['Latin only, with digits and brackets', 'report (1) 2024.txt', false],
    ['a word with its points (nonspacing marks)', 'שָׁלוֹם.txt', false],
  ])('%s: %j → %s', (_label, value, expected) => {
    expect(valueWarnings(value).includes(WARNING.rtlOrder)).toBe(expected);
  });

  it('checks the shown text: a cut that brings two right-to-left parts together counts', () => {
    const value = `${'א'.repeat(100)}${'x'.repeat(300)}${'ב'.repeat(100)}`;
    expect(valueWarnings(value, { maxGraphemes: 10_000 })).toEqual(['mixes Hebrew and Latin letters']);
    // Shown as 59 × א, "…", 60 × ב: one right-to-left run holding the "…".
    expect(valueWarnings(value)).toEqual(['mixes Hebrew and Latin letters', WARNING.rtlOrder]);
  });

  it('is sound: without the warning, the display is the stored order with each right-to-left word reversed', () => {
    const unit = fc.constantFrom(
      'a',
      'Z',
      'א',
      'ב',
      'ש',
      'ب',
      'م',
      '1',
      '2',
      '٣',
      '٤',
      '/',
      '.',
      ' ',
      '(',
      ')',
      '-',
      '+',
      '%',
      ',',
      '\u05B4',
      '\u064E',
      '…',
      '_',
    );
    fc.assert(
      fc.property(
        fc.array(unit, { minLength: 1, maxLength: 16 }).map((a) => a.join('')),
        (text) => {
          fc.pre(!reordersRtl(text));
          // Undo the reversal of each right-to-left word (letters and their points): the stored
          // order comes back (points compared apart, as they follow their letter either way).
          const words = /[\u05D0-\u05EA\u0620-\u064A\u05B4\u064E]+/g;
          const back = visualOrder(text).replace(words, (w) => [...w].reverse().join(''));
          expect(back.replace(/[\u05B4\u064E]/g, '')).toBe(text.replace(/[\u05B4\u064E]/g, ''));
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('TR #9 levels (cross-checked against bidi-js and GNU FriBidi by hand, see bidi.ts)', () => {
  it.each([
    ['/tmp/r/א/ב/ג.txt', '0000000111110000'],
    ['ملف 2 ملف 1.txt', '111121111120000'],
    ['a(ב)c', '00100'],
    ['א(ב)c', '11110'],
    ['א(בc)', '10100'],
    ['"b؟2>ב…-؟[٣]\u064E\u0301', '00121111112111'],
  ])('%j → %s', (text, levels) => {
    expect(Array.from(bidiLevels(text)!.levels).join('')).toBe(levels);
  });
});

describe('the Bidi_Class table (Unicode 17)', () => {
  it('gives the expected class for sample code points', () => {
    const samples: Array<[number, number]> = [
      [0x41, Bc.L],
      [0x5d0, Bc.R],
      [0x628, Bc.AL],
      [0x31, Bc.EN],
      [0x663, Bc.AN],
      [0x6f3, Bc.EN],
      [0x2b, Bc.ES],
      [0x24, Bc.ET],
      [0x2f, Bc.CS],
      [0x2c, Bc.CS],
      [0x301, Bc.NSM],
      [0x20, Bc.WS],
      [0x28, Bc.ON],
      [0x2026, Bc.ON],
      [0x27e8, Bc.ON],
      [0x200b, Bc.BN],
      [0x0a, Bc.B],
      [0x09, Bc.S],
      [0x202e, 17],
      [0x2069, 22],
      [0x10800, Bc.R],
      [0x10d40, Bc.AN],
      [0x1e900, Bc.R],
      [0x10ffff, Bc.BN],
      [0xe000, Bc.L],
    ];
    for (const [cp, c] of samples) expect(bidiClass(cp), cp.toString(16)).toBe(c);
  });

  it('holds R or AL for every letter of the right-to-left scripts, and L for Latin letters', () => {
    const rtl = /[\p{sc=Hebrew}\p{sc=Arabic}\p{sc=Syriac}\p{sc=Thaana}\p{sc=Nko}\p{sc=Adlam}]/u;
    for (let cp = 0; cp <= 0x1ffff; cp++) {
      const ch = String.fromCodePoint(cp);
      if (!/\p{L}/u.test(ch)) continue;
      if (rtl.test(ch) && !/\p{scx=Latn}/u.test(ch)) expect([Bc.R, Bc.AL], cp.toString(16)).toContain(bidiClass(cp));
      if (/\p{sc=Latin}/u.test(ch)) expect(bidiClass(cp), cp.toString(16)).toBe(Bc.L);
    }
  });

  it('escapes every code point of class B, S, BN and the explicit classes, so the shown text never holds one', () => {
    const leaks: string[] = [];
    for (let cp = 0; cp <= 0x10ffff; cp++) {
      const c = bidiClass(cp);
      if (!(c === Bc.B || c === Bc.S || c === Bc.BN || c >= Bc.FIRST_EXPLICIT)) continue;
      const units = escapeValue(`a${String.fromCodePoint(cp)}`).units;
      if (units.length !== 2 || !units[1]!.escape) leaks.push(cp.toString(16));
    }
    expect(leaks).toEqual([]);
  });
});
