/**
 * What the escaper (escape.ts) and the cutter (cut.ts) share: the unit a value is escaped into,
 * and the code points that can join a neighbour into one grapheme. Kept apart so that neither of
 * the two imports the other.
 *
 * @module
 */

/** One token run: literal text, or one escape standing for one code point of the input. */
export interface Unit {
  /** The text shown. */
  readonly text: string;
  /** True for an escape (never split when cutting); false for literal text. */
  readonly escape: boolean;
  /**
   * For literal text: true when it holds a code point that can join a neighbour into one
   * grapheme (see {@link JOINERS}), so graphemes must be found with `Intl.Segmenter`;
   * otherwise every code point is its own grapheme. Always false for an escape.
   */
  readonly complex: boolean;
}

/**
 * Every code point that can form one grapheme with a neighbour (UAX #29: Extend, ZWJ,
 * SpacingMark, Prepend, Regional_Indicator, Hangul L/V/T/LV/LVT) that escaping leaves literal,
 * plus the Prepend and Lo-category SpacingMark code points that no property escape names (found
 * with `Intl.Segmenter` on ICU 78; a test checks the set against the running ICU).
 */
export const JOINERS =
  /[\p{M}\p{Grapheme_Extend}\p{Emoji_Modifier}\p{Regional_Indicator}\p{sc=Hangul}\u0D4E\u0E33\u0EB3\u{111C2}\u{111C3}\u{113D1}\u{1193F}\u{11941}\u{11A84}-\u{11A89}\u{11D46}\u{11F02}\u{16D63}\u{16D67}-\u{16D6A}]/u;
