/**
 * Test helpers: a decoder that inverts the escaping (proving injectivity), grapheme counting,
 * and the character classes that must never reach a question raw.
 */
import { EMPTY_VALUE } from '../../src/prompt/render.js';

const segmenter = new Intl.Segmenter('und', { granularity: 'grapheme' });

/** Number of extended grapheme clusters (UAX #29) as Intl.Segmenter counts them. */
export function graphemeCount(s: string): number {
  let n = 0;
  for (const _ of segmenter.segment(s)) n += 1;
  return n;
}

/** Offsets at which a grapheme starts, plus the end. */
export function graphemeBoundaries(s: string): Set<number> {
  const out = new Set<number>([s.length]);
  for (const { index } of segmenter.segment(s)) out.add(index);
  return out;
}

/**
 * Inverts the escaping of an uncut body: `\\`, `\t`, `\n`, `\r`, `\xHH`, `⟨U+XXXX⟩`, and the
 * empty marker. Throws on anything that is not a well-formed escape, so it also checks that no
 * escape was split and no stray escape character is left. Throws on a raw `…` too: a whole
 * rendering always escapes U+2026, so a raw one is the cut mark of a shortened body (whose
 * remaining text may by chance decode to the value itself, as the cut of `…\nກ` does).
 */
export function decodeBody(body: string): string {
  if (body === EMPTY_VALUE) return '';
  let out = '';
  let i = 0;
  while (i < body.length) {
    const c = body[i] as string;
    if (c === '\\') {
      const n = body[i + 1];
      if (n === '\\') out += '\\';
      else if (n === 't') out += '\t';
      else if (n === 'n') out += '\n';
      else if (n === 'r') out += '\r';
      else if (n === 'x') {
        const hex = body.slice(i + 2, i + 4);
        if (!/^[0-9a-f]{2}$/.test(hex)) throw new Error(`bad \\x escape at ${i}`);
        out += String.fromCharCode(parseInt(hex, 16));
        i += 4;
        continue;
      } else throw new Error(`bad backslash escape at ${i}`);
      i += 2;
    } else if (c === '…') {
      throw new Error(`raw cut mark at ${i}: not a whole body`);
    } else if (c === '⟨') {
      const m = /^⟨U\+([0-9A-F]{4,6})⟩/.exec(body.slice(i, i + 10));
      if (m === null || m[1] === undefined) throw new Error(`bad ⟨U+⟩ escape at ${i}`);
      out += String.fromCodePoint(parseInt(m[1], 16));
      i += m[0].length;
    } else {
      out += c;
      i += 1;
    }
  }
  return out;
}

/** Line terminators that some renderer honours (CommonMark, HTML, Unicode UAX #14 mandatory). */
export const LINE_BREAK = /\r\n|[\n\r\u000B\u000C\u0085\u2028\u2029]/u;

/**
 * What must never reach a question raw: gc Cc, Zl, Zp, Cf (all bidi controls included),
 * Cs (lone surrogates), Default_Ignorable_Code_Point, White_Space other than U+0020, and the
 * blank-looking U+2800.
 */
export const FORBIDDEN =
  /[\p{Cc}\p{Zl}\p{Zp}\p{Cf}\p{Cs}\p{Bidi_Control}\p{Default_Ignorable_Code_Point}\u2800\u115F\u1160\u3164\uFFA0]|(?! )[\p{White_Space}\p{Zs}]/u;
