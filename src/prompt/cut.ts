/**
 * Bounding an escaped value to a number of graphemes by cutting out its middle.
 *
 * Width is counted in extended grapheme clusters (Unicode UAX #29, as `Intl.Segmenter` with
 * `granularity: 'grapheme'` finds them) of the escaped text: an escape such as `⟨U+202E⟩` is as
 * wide as it is long (8), a literal grapheme counts 1. A literal grapheme of more than
 * {@link MAX_CLUSTER} code points (a pathological one, e.g. a thousand conjoining Hangul jamo)
 * counts one per code point, and only such a grapheme may be cut between its code points, so no
 * grapheme can hide unbounded text behind a width of one. Escapes are never split.
 *
 * Speed: `Intl.Segmenter` costs about 1.5 µs per grapheme on Node 20, so it is only run on
 * literal runs that hold a code point able to join a neighbour into one grapheme
 * ({@link JOINERS}, flagged `complex` by the escaper); in every other run each code point is its
 * own grapheme (UAX #29 GB999), and the cut needs at most about `maxGraphemes` segments per value.
 *
 * @module
 */
import type { Unit } from './escape.js';

/** Code points in one literal grapheme above which it is counted and cut per code point. */
export const MAX_CLUSTER = 16;

/**
 * Every code point that can form one grapheme with a neighbour (UAX #29: Extend, ZWJ,
 * SpacingMark, Prepend, Regional_Indicator, Hangul L/V/T/LV/LVT) that escaping leaves literal,
 * plus the Prepend and Lo-category SpacingMark code points that no property escape names (found
 * with `Intl.Segmenter` on ICU 78; a test checks the set against the running ICU).
 */
export const JOINERS =
  /[\p{M}\p{Grapheme_Extend}\p{Emoji_Modifier}\p{Regional_Indicator}\p{sc=Hangul}\u0D4E\u0E33\u0EB3\u{111C2}\u{111C3}\u{113D1}\u{1193F}\u{11941}\u{11A84}-\u{11A89}\u{11D46}\u{11F02}\u{16D63}\u{16D67}-\u{16D6A}]/u;

let segmenter: Intl.Segmenter | undefined;
function graphemes(): Intl.Segmenter {
  segmenter ??= new Intl.Segmenter('und', { granularity: 'grapheme' });
  return segmenter;
}

/** Number of code points in a string (a lone surrogate counts one). */
function codePoints(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n -= 1;
        i += 1;
      }
    }
  }
  return n;
}

/** Width of one literal grapheme: 1, or its code points if it has more than MAX_CLUSTER. */
function clusterWidth(g: string): number {
  if (g.length <= MAX_CLUSTER) return 1;
  const n = codePoints(g);
  return n > MAX_CLUSTER ? n : 1;
}

/** The first `n` code points of s. */
function headCodePoints(s: string, n: number): string {
  let i = 0;
  for (let k = 0; k < n && i < s.length; k++) i += (s.codePointAt(i) ?? 0) > 0xffff ? 2 : 1;
  return s.slice(0, i);
}

/** The last `n` code points of s. */
function tailCodePoints(s: string, n: number): string {
  let i = s.length;
  for (let k = 0; k < n && i > 0; k++) {
    const lo = s.charCodeAt(i - 1);
    const hi = i >= 2 ? s.charCodeAt(i - 2) : 0;
    i -= lo >= 0xdc00 && lo <= 0xdfff && hi >= 0xd800 && hi <= 0xdbff ? 2 : 1;
  }
  return s.slice(i);
}

/**
 * Width of the escaped units, or `Infinity` as soon as it is known to exceed `limit`.
 *
 * @param units - the escaped value.
 * @param length - their total length in UTF-16 code units.
 * @param limit - the width above which the exact figure is not needed.
 */
export function widthUpTo(units: readonly Unit[], length: number, limit: number): number {
  // Every grapheme is at least one code unit: short texts need no counting.
  if (length <= limit) return length;
  let total = 0;
  const complex: string[] = [];
  let points = 0;
  for (const u of units) {
    if (u.escape) {
      total += u.text.length;
      points += u.text.length;
    } else if (u.complex) {
      complex.push(u.text);
      points += codePoints(u.text);
    } else {
      const n = codePoints(u.text);
      total += n;
      points += n;
    }
    if (total > limit) return Infinity;
  }
  // A literal grapheme has width >= code points / MAX_CLUSTER, so this bound is safe.
  if (points > limit * MAX_CLUSTER) return Infinity;
  for (const run of complex) {
    for (const { segment } of graphemes().segment(run)) {
      total += clusterWidth(segment);
      if (total > limit) return Infinity;
    }
  }
  return total;
}

/** The longest prefix of the units no wider than `budget`, never splitting an escape. */
export function takeHead(units: readonly Unit[], budget: number): string {
  let out = '';
  let left = budget;
  for (const u of units) {
    if (u.escape) {
      if (u.text.length > left) break;
      out += u.text;
      left -= u.text.length;
      continue;
    }
    if (!u.complex) {
      const n = codePoints(u.text);
      if (n <= left) {
        out += u.text;
        left -= n;
        continue;
      }
      out += headCodePoints(u.text, left);
      return out;
    }
    for (const { segment } of graphemes().segment(u.text)) {
      const w = clusterWidth(segment);
      if (w <= left) {
        out += segment;
        left -= w;
      } else {
        // Only an oversized grapheme (counted per code point) is cut inside.
        if (w > 1) out += headCodePoints(segment, left);
        return out;
      }
    }
  }
  return out;
}

/** The longest suffix of the units no wider than `budget`, never splitting an escape. */
export function takeTail(units: readonly Unit[], budget: number): string {
  let out = '';
  let left = budget;
  for (let k = units.length - 1; k >= 0; k--) {
    const u = units[k];
    if (u === undefined) break;
    if (u.escape) {
      if (u.text.length > left) break;
      out = u.text + out;
      left -= u.text.length;
      continue;
    }
    if (!u.complex) {
      const n = codePoints(u.text);
      if (n <= left) {
        out = u.text + out;
        left -= n;
        continue;
      }
      return tailCodePoints(u.text, left) + out;
    }
    const segments = graphemes().segment(u.text);
    let end = u.text.length;
    while (end > 0) {
      const seg = segments.containing(end - 1);
      if (seg === undefined) break;
      const w = clusterWidth(seg.segment);
      if (w <= left) {
        left -= w;
        end = seg.index;
      } else {
        const piece = u.text.slice(end);
        return (w > 1 ? tailCodePoints(seg.segment, left) : '') + piece + out;
      }
    }
    out = u.text.slice(end) + out;
  }
  return out;
}
