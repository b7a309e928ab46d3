/**
 * Escaping one untrusted string into visible, one-line, unambiguous text.
 *
 * The output is a sequence of tokens. A token is either one code point shown as itself, or an
 * escape that stands for exactly one code point of the input:
 *
 * | input                                   | escape        | example        |
 * | --------------------------------------- | ------------- | -------------- |
 * | U+0009, U+000A, U+000D                  | `\t` `\n` `\r`| `\n`           |
 * | other C0, DEL, C1 controls (gc=Cc)      | `\x` + 2 lowercase hex digits | `\x1b`, `\x85` |
 * | `\` (the escape character itself)       | `\\`          | `\\`           |
 * | `⟨` U+27E8 (the other escape character) | `⟨U+27E8⟩`    |                |
 * | anything else hidden (see below)        | `⟨U+` + 4–6 uppercase hex digits + `⟩` | `⟨U+202E⟩`, `⟨U+D800⟩` |
 *
 * "Hidden" code points, each escaped rather than dropped:
 * - gc=Cf (format, which holds every bidi control of Unicode TR #9 §2: U+061C, U+200E, U+200F,
 *   U+202A–U+202E, U+2066–U+2069), gc=Cs (lone surrogates), gc=Co (private use), gc=Cn
 *   (unassigned and noncharacters), gc=Zl, gc=Zp, gc=Zs;
 * - Default_Ignorable_Code_Point (UAX #44; the set that TR #31 §2.3 and TR #39 treat as
 *   invisible): zero-width characters, U+00AD, U+034F, variation selectors, tag characters,
 *   Hangul fillers U+115F, U+1160, U+3164, U+FFA0;
 * - White_Space (UAX #44), plus U+2800 BRAILLE PATTERN BLANK, which renders as blank;
 * - U+0020 SPACE, except a single space with a non-space on each side inside the value
 *   (leading, trailing and repeated spaces are escaped, since renderers collapse or trim them);
 * - a combining mark or other grapheme extender (gc=M, Grapheme_Extend, Emoji_Modifier) with no
 *   visible base before it: at the start, or right after an escape (it would otherwise sit on
 *   the fence or on the `⟩` of an escape);
 * - per Unicode TR #39 §5.4 (optional detection): a nonspacing mark (gc=Mn/Me) that repeats the
 *   mark just before it, or that is the fifth or later in a row; and any extender that is the
 *   ninth or later in a row (so a single grapheme cannot hide a long run of marks).
 *
 * Decoding is unambiguous: outside an escape neither `\` nor `⟨` ever appears, an escape starting
 * with `\` has a fixed length given by its second character, and one starting with `⟨U+` ends at
 * the first `⟩`. So distinct inputs give distinct token sequences (the rendering is injective).
 *
 * @module
 */

/** One token run: literal text, or one escape standing for one code point of the input. */
export interface Unit {
  /** The text shown. */
  readonly text: string;
  /** True for an escape (never split when cutting); false for literal text. */
  readonly escape: boolean;
}

/** The escaped form of one value. */
export interface Escaped {
  /** Literal runs and escapes in order; adjacent literal text is merged into one unit. */
  readonly units: readonly Unit[];
  /** Total length of all units, in UTF-16 code units. */
  readonly length: number;
}

/**
 * Code points that need a decision; everything else is copied as it is. Must be a superset of
 * every class handled in {@link classify}.
 */
const SPECIAL =
  /[\\\u27E8\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Z}\p{Default_Ignorable_Code_Point}\p{White_Space}\u2800\u115F\u1160\u3164\uFFA0\p{M}\p{Grapheme_Extend}\p{Emoji_Modifier}]/gu;

/** Hidden code points always shown as `⟨U+XXXX⟩` (U+0020 is decided by position first). */
const HIDDEN =
  /^[\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Z}\p{Default_Ignorable_Code_Point}\p{White_Space}\u2800\u115F\u1160\u3164\uFFA0]$/u;

/** Nonspacing marks in the sense of TR #39 §5.4 (gc=Mn or gc=Me). */
const NONSPACING = /^[\p{Mn}\p{Me}]$/u;

/** TR #39 §5.4: "Forbid sequences of more than 4 nonspacing marks". */
const MAX_NONSPACING_RUN = 4;
/** Our bound on any run of extenders (spacing marks included) shown literally. */
const MAX_EXTENDER_RUN = 8;

/**
 * The `⟨U+XXXX⟩` escape of one code point.
 *
 * @param cp - a code point, 0 to 0x10FFFF (lone surrogates included).
 * @returns e.g. `⟨U+202E⟩`, `⟨U+E0041⟩`: at least 4 uppercase hex digits.
 */
export function codePointEscape(cp: number): string {
  return `⟨U+${cp.toString(16).toUpperCase().padStart(4, '0')}⟩`;
}

/** The escape of a gc=Cc code point: `\t`, `\n`, `\r`, or `\xHH` (lowercase hex). */
function controlEscape(cp: number): string {
  if (cp === 0x09) return '\\t';
  if (cp === 0x0a) return '\\n';
  if (cp === 0x0d) return '\\r';
  return `\\x${cp.toString(16).padStart(2, '0')}`;
}

/**
 * Escapes one untrusted value token by token (see the module documentation for the rules).
 *
 * @param value - any string, well-formed UTF-16 or not.
 * @returns the units; their concatenation is well-formed, one line, and free of every hidden
 *   code point listed in the module documentation.
 */
export function escapeValue(value: string): Escaped {
  const units: Unit[] = [];
  let literal = '';
  let length = 0;
  // Whether the token just emitted is literal text a combining mark may sit on.
  let base = false;
  // Consecutive literal extenders, consecutive literal nonspacing marks, the last of those.
  let extenderRun = 0;
  let nonspacingRun = 0;
  let lastNonspacing = -1;

  const pushEscape = (text: string): void => {
    if (literal !== '') units.push({ text: literal, escape: false });
    literal = '';
    units.push({ text, escape: true });
    length += text.length;
    base = false;
    extenderRun = 0;
    nonspacingRun = 0;
    lastNonspacing = -1;
  };
  const pushLiteral = (text: string): void => {
    literal += text;
    length += text.length;
    base = true;
  };

  const special = new RegExp(SPECIAL.source, SPECIAL.flags);
  let last = 0;
  for (let m = special.exec(value); m !== null; m = special.exec(value)) {
    const at = m.index;
    if (at > last) {
      pushLiteral(value.slice(last, at));
      extenderRun = 0;
      nonspacingRun = 0;
      lastNonspacing = -1;
    }
    last = special.lastIndex;
    const ch = m[0];
    const cp = ch.codePointAt(0) ?? 0;

    if (cp === 0x5c) {
      pushEscape('\\\\');
    } else if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
      pushEscape(controlEscape(cp));
    } else if (cp === 0x20) {
      const inner = at > 0 && last < value.length && value[at - 1] !== ' ' && value[last] !== ' ';
      if (inner) {
        pushLiteral(' ');
        extenderRun = 0;
        nonspacingRun = 0;
        lastNonspacing = -1;
      } else pushEscape(codePointEscape(cp));
    } else if (cp === 0x27e8 || HIDDEN.test(ch)) {
      pushEscape(codePointEscape(cp));
    } else {
      // An extender: gc=M, Grapheme_Extend or Emoji_Modifier (UAX #29 Extend / SpacingMark).
      const nonspacing = NONSPACING.test(ch);
      const defective = !base;
      const tooMany =
        extenderRun >= MAX_EXTENDER_RUN ||
        (nonspacing && (nonspacingRun >= MAX_NONSPACING_RUN || cp === lastNonspacing));
      if (defective || tooMany) {
        pushEscape(codePointEscape(cp));
      } else {
        pushLiteral(ch);
        extenderRun += 1;
        if (nonspacing) {
          nonspacingRun += 1;
          lastNonspacing = cp;
        } else {
          nonspacingRun = 0;
          lastNonspacing = -1;
        }
      }
    }
  }
  if (last < value.length) pushLiteral(value.slice(last));
  if (literal !== '') units.push({ text: literal, escape: false });
  return { units, length };
}
