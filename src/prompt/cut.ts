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
 * Node's segmenter also costs time proportional to the whole string on every step, so the cut
 * segments a bounded window at each end of a long run, never the run itself (see
 * {@link windowUnits}); the result is the same as segmenting the whole run.
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

/**
 * Code units segmented at each end of a long literal run when taking `budget` of its width:
 * 64 per unit of width, plus 128. Taking `budget` needs at most 16 code points (32 code units)
 * per unit of width (wider graphemes are counted per code point), so the window reaches at least
 * `32 × budget + 128` code units past what is taken; a grapheme cut by the window's edge then
 * holds more than `budget + 16` code points inside the window, so it is counted per code point
 * and cut inside, exactly as in the whole run.
 */
export function windowUnits(budget: number): number {
  return 64 * budget + 128;
}

const REGIONAL_INDICATOR = /^\p{Regional_Indicator}$/u;
function isRegionalIndicatorAt(s: string, i: number): boolean {
  return i >= 0 && i < s.length && REGIONAL_INDICATOR.test(String.fromCodePoint(s.codePointAt(i) ?? 0));
}

/**
 * Start of the window for the end of a long literal run: `s.length - window`, moved to a code
 * point boundary and, inside a run of regional indicators, back by one so that an even number of
 * them precedes it (UAX #29 GB12/GB13 pair them from the start of the run). Every other rule of
 * UAX #29 that looks further back than one code point (GB9c, GB11) needs a zero width joiner (an
 * escape, never in a literal run) or a run of extenders, at most 8 long in a literal run (the
 * escaper's limit), so grapheme boundaries more than 9 code points after this start are the ones
 * of the whole run; the window reaches far further than that.
 */
function tailWindowStart(s: string, window: number): number {
  let start = s.length - window;
  if (start <= 0) return 0;
  const c = s.charCodeAt(start);
  if (c >= 0xdc00 && c <= 0xdfff) start -= 1; // do not split a surrogate pair
  if (isRegionalIndicatorAt(s, start)) {
    let k = start;
    let before = 0;
    while (k >= 2 && isRegionalIndicatorAt(s, k - 2)) {
      k -= 2;
      before += 1;
    }
    if (before % 2 === 1) start -= 2;
  }
  return start;
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
    // A long run is segmented only in a window at its start (see windowUnits).
    const window = windowUnits(budget);
    const whole = u.text.length <= window;
    let end = whole ? u.text.length : window;
    const c = u.text.charCodeAt(end - 1);
    if (!whole && c >= 0xd800 && c <= 0xdbff) end -= 1; // do not split a surrogate pair
    const text = whole ? u.text : u.text.slice(0, end);
    for (const { segment } of graphemes().segment(text)) {
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
    // Only a whole run can be used up inside its window.
    if (!whole) return out;
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
    // A long run is segmented only in a window at its end (see windowUnits, tailWindowStart).
    const from = tailWindowStart(u.text, windowUnits(budget));
    const text = from === 0 ? u.text : u.text.slice(from);
    const segments = graphemes().segment(text);
    let end = text.length;
    while (end > 0) {
      const seg = segments.containing(end - 1);
      if (seg === undefined) break;
      const w = clusterWidth(seg.segment);
      if (w <= left) {
        left -= w;
        end = seg.index;
      } else {
        const piece = text.slice(end);
        return (w > 1 ? tailCodePoints(seg.segment, left) : '') + piece + out;
      }
    }
    out = text.slice(end) + out;
    if (from > 0) return out;
  }
  return out;
}

/** Shown inside the code span for the empty string (`⟨` is always escaped in values). */
export const EMPTY_VALUE = '⟨empty⟩';

/**
 * The text shown inside the code span: the escaped value, or, when it is wider than `max`
 * graphemes, its first and last parts around `…` (one grapheme for the mark; the start gets the
 * smaller half of the rest).
 *
 * @param value - the value (only its emptiness is read here).
 * @param units - its escaped units, see escape.ts.
 * @param length - their total length in code units.
 * @param max - the most graphemes shown, at least 10.
 */
export function shownBody(value: string, units: readonly Unit[], length: number, max: number): { body: string; cut: boolean } {
  if (value === '') return { body: EMPTY_VALUE, cut: false };
  if (widthUpTo(units, length, max) <= max) return { body: units.map((u) => u.text).join(''), cut: false };
  // Escape first, then cut on escape and grapheme boundaries; keep the start and the end
  // (a file's extension), one grapheme for the mark.
  const budget = max - 1;
  const head = Math.floor(budget / 2);
  return { body: `${takeHead(units, head)}…${takeTail(units, budget - head)}`, cut: true };
}
