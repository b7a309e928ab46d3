/**
 * Counting the work the renderer does, with no clock: the same input gives the same count on
 * every machine and under any load.
 *
 * Inside {@link countWork} some built-ins are wrapped (every call, whoever makes it):
 * - `String.prototype.charCodeAt` and `codePointAt`: each call is one code unit read. The
 *   renderer's loops (escaping, the script check, the mark-run bound, the bidi check, the cut's
 *   code point counting) read the value this way, so this counts the code points they visit.
 * - `Intl.Segmenter.prototype.segment` (whichever instance) and `String.prototype.normalize`:
 *   each call is charged with what it costs in Node's ICU, measured once and stated here:
 * - `segment(text)` costs time proportional to `text.length`, and so does every step after it:
 *   each `next()` of its iterator and each `containing(i)` (Node 20–26: taking the first 2,000
 *   graphemes of 10^4, 10^5 and 10^6 code units took 10, 420 and 3,600 ms). So a call is
 *   charged `text.length × (1 + steps)`: segmenting a whole run grapheme by grapheme is charged
 *   the square of its length, a bounded window a bounded amount.
 * - `normalize(form)` reorders each run of combining marks by insertion (ICU, UAX #15 canonical
 *   ordering), so a call is charged `s.length` plus the square of each run of code points of
 *   gc=M, U+FF9E or U+FF9F (a superset of the non-starters, see linear.test.ts), counted in code
 *   units (a run of 10,000 marks then 10,000 marks of a lower class took 0.4 s, twice as many
 *   1.8 s).
 *
 * Not counted: regular expressions, `indexOf` and `slice` (each scans or copies text once per
 * call; reading the code shows none of them runs once per code point on the whole value), and
 * the first use of a code point block (memoised, see blockTable.ts: warm up before counting).
 */

/** Work charged inside one {@link countWork}. */
export interface Work {
  /** `charCodeAt` and `codePointAt` calls: code units read. */
  unitsRead: number;
  /** `Intl.Segmenter.prototype.segment` calls. */
  segmentCalls: number;
  /** Iterator steps and `containing()` calls on their results. */
  segmentSteps: number;
  /** Charge of the segmenter calls, in code units (see the module). */
  segmentCharge: number;
  /** `String.prototype.normalize` calls. */
  normalizeCalls: number;
  /** Charge of the normalize calls, in code units (see the module). */
  normalizeCharge: number;
  /** `unitsRead + segmentCharge + normalizeCharge`. */
  total: number;
}

const MARK_RUNS = /[\p{M}\uFF9E\uFF9F]+/gu;

/** `s.length` plus the square of each run of combining marks, in code units. */
function normalizeCost(s: string): number {
  let cost = s.length;
  for (const m of s.matchAll(MARK_RUNS)) cost += m[0].length * m[0].length;
  return cost;
}

/**
 * Runs `run` synchronously with the segmenter and normalize calls counted.
 *
 * @returns what `run` returned and the work charged while it ran.
 * @throws whatever `run` throws (the built-ins are restored first).
 */
export function countWork<T>(run: () => T): { result: T; work: Work } {
  const work: Work = {
    unitsRead: 0,
    segmentCalls: 0,
    segmentSteps: 0,
    segmentCharge: 0,
    normalizeCalls: 0,
    normalizeCharge: 0,
    total: 0,
  };
  const proto = Intl.Segmenter.prototype;
  const segment = proto.segment;
  const normalize = String.prototype.normalize;
  const charCodeAt = String.prototype.charCodeAt;
  const codePointAt = String.prototype.codePointAt;
  const step = (length: number): void => {
    work.segmentSteps += 1;
    work.segmentCharge += length;
  };
  proto.segment = function countedSegment(this: Intl.Segmenter, input: string): Intl.Segments {
    const text = String(input);
    const segments = segment.call(this, text);
    work.segmentCalls += 1;
    work.segmentCharge += text.length;
    const counted = {
      containing(index?: number): Intl.SegmentData | undefined {
        step(text.length);
        return segments.containing(index);
      },
      [Symbol.iterator](): IterableIterator<Intl.SegmentData> {
        const inner = segments[Symbol.iterator]();
        const it: IterableIterator<Intl.SegmentData> = {
          next() {
            step(text.length);
            return inner.next();
          },
          [Symbol.iterator]() {
            return it;
          },
        };
        return it;
      },
    };
    return counted as unknown as Intl.Segments;
  };
  String.prototype.normalize = function countedNormalize(this: string, form?: string): string {
    const s = String(this);
    work.normalizeCalls += 1;
    work.normalizeCharge += normalizeCost(s);
    return normalize.call(s, form);
  };
  String.prototype.charCodeAt = function countedCharCodeAt(this: string, index: number): number {
    work.unitsRead += 1;
    return charCodeAt.call(this, index);
  };
  String.prototype.codePointAt = function countedCodePointAt(this: string, index: number): number | undefined {
    work.unitsRead += 1;
    return codePointAt.call(this, index);
  };
  try {
    const result = run();
    work.total = work.unitsRead + work.segmentCharge + work.normalizeCharge;
    return { result, work };
  } finally {
    proto.segment = segment;
    String.prototype.normalize = normalize;
    String.prototype.charCodeAt = charCodeAt;
    String.prototype.codePointAt = codePointAt;
  }
}
