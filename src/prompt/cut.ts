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
 * (`JOINERS` in units.ts, flagged `complex` by the escaper); in every other run each code point is its
 * own grapheme (UAX #29 GB999), and the cut needs at most about `maxGraphemes` segments per value.
 * Node's segmenter also costs time proportional to the whole string on every step, so the cut
 * segments a bounded window at each end of a long run, never the run itself (see
 * {@link windowUnits}); the result is the same as segmenting the whole run.
 *
 * With a separator (a path, `/`), the bound applies to each component on its own: every
 * component is shown and only an over-long one is cut, in its own middle (see {@link shownBody}).
 *
 * @module
 */
import type { Unit } from './units.js';

/** Code points in one literal grapheme above which it is counted and cut per code point. */
export const MAX_CLUSTER = 16;

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
 * Most graphemes the shown text of a value with separators (a path) holds in total: 65,536.
 * Every component is shown, each bounded on its own; only a value whose components together
 * are wider than this has whole components left out of its middle. Every code unit of a value is
 * shown at most 8 graphemes wide (`⟨U+XXXX⟩` for one BMP code unit), so a value of at most
 * 8,192 code units never gets there: a path that `delete_file` shows (a root's real path, at
 * most `PATH_MAX` = 4,096, plus an argument of at most 4,096 code units) never has a component
 * left out.
 */
export const MAX_PATH_GRAPHEMES = 65_536;

/** What the code span shows for one value. */
export interface ShownBody {
  /** The text inside the code span. */
  readonly body: string;
  /** True when anything was cut or left out. */
  readonly cut: boolean;
  /**
   * The raw text of every component (the whole value when there is no separator) whose middle
   * was cut, in order; each gets its own fingerprint.
   */
  readonly cutPieces: readonly string[];
  /** Components left out whole (only past {@link MAX_PATH_GRAPHEMES}); 0 otherwise. */
  readonly leftOut: number;
  /** Number of components of the value (1 without a separator). */
  readonly pieces: number;
}

/** The escaped text as it is, uncut. */
function joined(units: readonly Unit[]): string {
  let out = '';
  for (const u of units) out += u.text;
  return out;
}

/** The units' first and last parts around `…`, at most `max` wide (the start gets the smaller half). */
function cutMiddle(units: readonly Unit[], max: number): string {
  // Escape first, then cut on escape and grapheme boundaries; keep the start and the end
  // (a file's extension), one grapheme for the mark.
  const budget = max - 1;
  const head = Math.floor(budget / 2);
  return `${takeHead(units, head)}…${takeTail(units, budget - head)}`;
}

/**
 * Code units of the raw value that one escape stands for: 2 for `⟨U+XXXXX⟩` above U+FFFF,
 * else 1 (escape.ts: every escape stands for exactly one code point).
 */
function rawUnitsOf(escape: string): number {
  if (escape.startsWith('⟨U+')) return parseInt(escape.slice(3, -1), 16) > 0xffff ? 2 : 1;
  return 1;
}

/**
 * The units of the escaped text from offset `startOff` of unit `startUnit` to offset `endOff` of
 * unit `endUnit` (only literal units are ever split: a separator never lies inside an escape).
 */
function unitsBetween(
  units: readonly Unit[],
  startUnit: number,
  startOff: number,
  endUnit: number,
  endOff: number,
): Unit[] {
  const out: Unit[] = [];
  for (let k = startUnit; k <= endUnit && k < units.length; k++) {
    const u = units[k];
    if (u === undefined) break;
    const from = k === startUnit ? startOff : 0;
    const to = k === endUnit ? endOff : u.text.length;
    if (to <= from) continue;
    out.push(
      from === 0 && to === u.text.length ? u : { text: u.text.slice(from, to), escape: u.escape, complex: u.complex },
    );
  }
  return out;
}

/** A cut component: the offsets of its escaped text and what is shown instead. */
interface Replacement {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

/** `full.slice(start, end)` with the replacements inside that range applied (both sorted). */
function assemble(full: string, replacements: readonly Replacement[], start: number, end: number): string {
  let out = '';
  let at = start;
  for (const r of replacements) {
    if (r.end <= start || r.start >= end) continue;
    out += full.slice(at, r.start) + r.text;
    at = r.end;
  }
  return out + full.slice(at, end);
}

/**
 * The text shown inside the code span.
 *
 * Without a separator: the escaped value, or, when it is wider than `max` graphemes, its first
 * and last parts around `…` (one grapheme for the mark; the start gets the smaller half of the
 * rest).
 *
 * With a separator (`/` for a path): every component between separators is shown, in order,
 * joined by the separator; a component wider than `max` graphemes has its own middle cut as
 * above, with its own `…`. No component is dropped unless the components together are wider
 * than {@link MAX_PATH_GRAPHEMES} (or `2 × max + 8`, if larger): then the first and last whole
 * components that fit in half of that each are kept, and the ones between are replaced by one
 * `…` component.
 *
 * Linear in the value's length: each component is measured and cut on its own, and a component
 * is segmented only in bounded windows (see {@link windowUnits}).
 *
 * @param value - the value (its emptiness and, for cut components, their raw text are read).
 * @param units - its escaped units, see escape.ts.
 * @param length - their total length in code units.
 * @param max - the most graphemes shown per component (the whole value without a separator), at
 *   least 10.
 * @param separator - a non-empty separator, or `undefined` for none.
 */
export function shownBody(
  value: string,
  units: readonly Unit[],
  length: number,
  max: number,
  separator?: string,
): ShownBody {
  if (value === '') return { body: EMPTY_VALUE, cut: false, cutPieces: [], leftOut: 0, pieces: 1 };
  // Narrow enough as a whole: then every component is too.
  if (widthUpTo(units, length, max) <= max)
    return { body: joined(units), cut: false, cutPieces: [], leftOut: 0, pieces: 1 };
  if (separator === undefined)
    return { body: cutMiddle(units, max), cut: true, cutPieces: [value], leftOut: 0, pieces: 1 };

  // One pass over the escaped text, finding the components where the separator is literal.
  // A component no longer (in code units) than `max` is no wider, and is shown as it is; only
  // the longer ones are measured, and cut when wider. Allocation stays per long component.
  const full = joined(units);
  // Where each component's escaped text starts, and its width (each ends one separator before
  // the next starts).
  const starts: number[] = [];
  const widths: number[] = [];
  const replacements: Replacement[] = [];
  const cutPieces: string[] = [];
  let startUnit = 0;
  let startOff = 0;
  let startPos = 0;
  let startRaw = 0;
  let pos = 0;
  let raw = 0;
  /** Measures, and cuts if needed, a component longer than `max` code units. */
  const endLong = (endUnit: number, endOff: number, endPos: number, endRaw: number): void => {
    starts.push(startPos);
    const len = endPos - startPos;
    const pieceUnits = unitsBetween(units, startUnit, startOff, endUnit, endOff);
    const w = widthUpTo(pieceUnits, len, max);
    if (w <= max) {
      widths.push(w);
      return;
    }
    widths.push(max);
    replacements.push({ start: startPos, end: endPos, text: cutMiddle(pieceUnits, max) });
    cutPieces.push(value.slice(startRaw, endRaw));
  };
  for (let ui = 0; ui < units.length; ui++) {
    const u = units[ui] as Unit;
    if (u.escape) {
      pos += u.text.length;
      raw += rawUnitsOf(u.text);
      continue;
    }
    for (let at = u.text.indexOf(separator); at !== -1; at = u.text.indexOf(separator, startOff)) {
      const endPos = pos + at;
      if (endPos - startPos <= max) {
        starts.push(startPos);
        widths.push(endPos - startPos);
      } else endLong(ui, at, endPos, raw + at);
      startUnit = ui;
      startOff = at + separator.length;
      startPos = pos + startOff;
      startRaw = raw + startOff;
    }
    pos += u.text.length;
    raw += u.text.length;
  }
  if (pos - startPos <= max) {
    starts.push(startPos);
    widths.push(pos - startPos);
  } else endLong(units.length, 0, pos, raw);

  const n = starts.length;
  const sepWidth = separator.length;
  let total = (n - 1) * sepWidth;
  for (const w of widths) total += w;
  const limit = Math.max(MAX_PATH_GRAPHEMES, 2 * max + 8 * sepWidth);
  if (total <= limit) {
    const body = replacements.length === 0 ? full : assemble(full, replacements, 0, full.length);
    return { body, cut: cutPieces.length > 0, cutPieces, leftOut: 0, pieces: n };
  }
  // Past the total bound: keep whole components from each end, each side within half of it,
  // and one `…` component for those left out.
  const half = Math.floor((limit - 1 - 2 * sepWidth) / 2);
  let head = 0;
  for (let acc = 0; head < n && acc + (widths[head] ?? 0) + sepWidth <= half; head++)
    acc += (widths[head] ?? 0) + sepWidth;
  let tail = 0;
  for (let acc = 0; tail < n - head && acc + (widths[n - 1 - tail] ?? 0) + sepWidth <= half; tail++) {
    acc += (widths[n - 1 - tail] ?? 0) + sepWidth;
  }
  const parts: string[] = [];
  if (head > 0)
    parts.push(assemble(full, replacements, 0, head < n ? (starts[head] ?? 0) - separator.length : full.length));
  parts.push('…');
  if (tail > 0) parts.push(assemble(full, replacements, starts[n - tail] ?? full.length, full.length));
  return { body: parts.join(separator), cut: true, cutPieces, leftOut: n - head - tail, pieces: n };
}
