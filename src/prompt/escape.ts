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
 * | anything else hidden or look-alike (see below) | `⟨U+` + 4–6 uppercase hex digits + `⟩` | `⟨U+202E⟩`, `⟨U+0060⟩` |
 *
 * "Hidden" code points, each escaped rather than dropped:
 * - gc=Cf (format, which holds every bidi control of Unicode TR #9 §2: U+061C, U+200E, U+200F,
 *   U+202A–U+202E, U+2066–U+2069), gc=Cs (lone surrogates), gc=Co (private use), gc=Cn
 *   (unassigned and noncharacters), gc=Zl, gc=Zp, gc=Zs;
 * - Default_Ignorable_Code_Point (UAX #44; the set that TR #31 §2.3 and TR #39 treat as
 *   invisible): zero-width characters, U+00AD, U+034F, variation selectors, tag characters,
 *   Hangul fillers U+115F, U+1160, U+3164, U+FFA0;
 * - White_Space (UAX #44);
 * - {@link BLANK_LOOKING}: code points that are neither of the above yet draw nothing, from the
 *   public lists of invisible characters: U+2800 BRAILLE PATTERN BLANK, U+FFFC OBJECT REPLACEMENT
 *   CHARACTER, U+1D159 MUSICAL SYMBOL NULL NOTEHEAD, U+13441/U+13442 EGYPTIAN HIEROGLYPH FULL and
 *   HALF BLANK, U+16FE4 KHITAN SMALL SCRIPT FILLER (U+180E, U+205F, U+3000, U+2000–U+200A,
 *   U+1D173–U+1D17A and the U+E0000 block are already Cf, Zs, Cn or default-ignorable);
 * - U+0020 SPACE, except a single space with a non-space on each side inside the value
 *   (leading, trailing and repeated spaces are escaped, since renderers collapse or trim them);
 * - a combining mark or other grapheme extender (gc=M, Grapheme_Extend, Emoji_Modifier) with no
 *   visible base before it: at the start, right after an escape (it would otherwise sit on
 *   the fence or on the `⟩` of an escape), or right after a space (on a space a mark is drawn by
 *   itself, as a spacing accent: U+0020 U+0300 is drawn like the backtick, U+0020 U+0301 like
 *   U+00B4, their compatibility decomposition in UnicodeData.txt);
 * - per Unicode TR #39 §5.4 (optional detection): a nonspacing mark (gc=Mn/Me) that repeats the
 *   mark just before it, or that is the fifth or later in a row; and any extender that is the
 *   ninth or later in a row (so a single grapheme cannot hide a long run of marks).
 *
 * "Look-alike" code points, escaped so that the text around a value and the escapes themselves
 * cannot be imitated:
 * - {@link ANGLE_LOOKALIKES}: the escape's brackets `⟨` U+27E8 and `⟩` U+27E9 and every bracket a
 *   reader can take for them (see there), so no text can pass for an escape such as `⟨U+202E⟩`;
 * - {@link GRAVE_LOOKALIKES}: the backtick U+0060 (the code span's fence, see render.ts) and every
 *   mark drawn like it (grave accents, reversed primes, turned and reversed commas; see there),
 *   always, whatever the script, so a value never holds its fence and cannot seem to close it or
 *   open a second span, even in a client that shows the backticks as they are;
 * - {@link ELLIPSIS_LOOKALIKES}: the cut mark `…` and every row of dots drawn like it (U+22EF `⋯`
 *   and the other ellipses, see there), so only the renderer's own cut reads as a cut.
 * - path-syntax look-alikes ({@link PATH_SYNTAX_LOOKALIKES}, from Unicode TR #39 §4
 *   confusables.txt of Unicode 13.0.0, see confusablesData.ts): every code point whose skeleton
 *   is made of `/`, `\`, `.`, `:`, `~`, space, `⟨`, `⟩` or `…` (U+2215 DIVISION SLASH, U+2044
 *   FRACTION SLASH, U+2236 RATIO, U+2025 TWO DOT LEADER, U+2026 `…` itself, so the cut mark
 *   cannot be imitated, U+FF0F FULLWIDTH SOLIDUS), so a name cannot pass for a directory and a
 *   file. Symbols, punctuation and letters of no particular script (Script_Extensions Common or
 *   Inherited, e.g. U+02D0 ː) are always escaped. A letter, digit or mark of a script (U+30CE ノ,
 *   U+4E3F 丿, U+0903 ः, U+0660 ٠) is escaped only where it does not fit its path component: when
 *   no other code point of the `/`-separated piece it stands in shares a script with it (TR #39
 *   §5.1 augmented Script_Extensions, see `componentScripts` in scripts.ts). So `ノート.txt`,
 *   `दुःख.txt` and `تقرير ٢٠٢٤.txt` stay readable while `notesノthesis.txt` shows
 *   `notes⟨U+30CE⟩thesis.txt`. The piece is always cut at `/`, whatever the options, and its
 *   scripts are found once per piece, so escaping stays linear in the value's length.
 *
 * Whether a code point is escaped may depend on its neighbours (the path-syntax letters above),
 * but what an escape stands for never does, so decoding is still token by token.
 *
 * Decoding is unambiguous: outside an escape neither `\`, `⟨` nor `⟩` ever appears, an escape
 * starting with `\` has a fixed length given by its second character, and one starting with
 * `⟨U+` ends at the first `⟩`. So distinct inputs give distinct token sequences (the rendering is
 * injective).
 *
 * @module
 */
import { BlockTable } from './blockTable.js';
import { PATH_SYNTAX_LOOKALIKES } from './confusablesData.js';
import { JOINERS, type Unit } from './units.js';
import { componentScripts, sharesScript } from './scripts.js';

export type { Unit } from './units.js';

/** The escaped form of one value. */
export interface Escaped {
  /** Literal runs and escapes in order; adjacent literal text is merged into one unit. */
  readonly units: readonly Unit[];
  /** Total length of all units, in UTF-16 code units. */
  readonly length: number;
}

/**
 * Brackets shown as `⟨U+XXXX⟩` because a reader can take them for the escape's own `⟨` and `⟩`:
 * - the TR #39 confusables (confusables.txt) of U+27E8 and U+27E9 that are not letters:
 *   U+2329, U+232A, U+276C, U+276D, U+3008, U+3009, U+31DB (the letters U+304F HIRAGANA KU and
 *   U+21FE8 are path-syntax letters: escaped where their script does not fit, see the module
 *   documentation; no look-alike of `⟩` is ever shown raw, so a forged escape cannot be closed);
 * - every other code point whose name says single ANGLE BRACKET or ANGLE QUOTATION MARK:
 *   U+2039, U+203A, U+276E–U+2771, U+27EA, U+27EB (the mathematical double ones, beside ⟨ ⟩),
 *   U+2991, U+2992, U+29FC, U+29FD, U+FE3F, U+FE40 (the vertical forms of 〈 〉);
 * - the angle-shaped brackets of U+2989–U+2996: Z NOTATION BINDING and ARC LESS-THAN /
 *   GREATER-THAN brackets (U+298B–U+2990 are square, U+2997–U+2998 tortoise shell);
 * - the small and full-width less-than and greater-than signs U+FE64, U+FE65, U+FF1C, U+FF1E,
 *   which are drawn taller and wider than `<` `>`, like `⟨` `⟩`.
 * Not escaped: ASCII `<` `>` (ordinary in names and visibly different), the double angle
 * quotation marks « » and CJK double angle brackets 《 》 (ordinary punctuation in French and
 * Chinese names, and double-stroked).
 */
export const ANGLE_LOOKALIKES =
  '\u2039\u203A\u2329\u232A\u276C\u276D\u276E\u276F\u2770\u2771\u27E8\u27E9\u27EA\u27EB' +
  '\u2989\u298A\u2991\u2992\u2993\u2994\u2995\u2996\u29FC\u29FD\u3008\u3009\u31DB' +
  '\uFE3F\uFE40\uFE64\uFE65\uFF1C\uFF1E';

/**
 * The backtick U+0060 (the code span's fence) and every code point drawn like it, always shown as
 * `⟨U+XXXX⟩`. The backtick's skeleton in Unicode TR #39 §4 (confusables.txt, Unicode 13.0.0) is
 * the apostrophe U+0027, and a fence may be a run of backticks, so the source is the classes of
 * the prototypes `'`, `''` and `'''`, narrowed to the marks whose glyph leans or hooks like the
 * backtick (by their names in UnicodeData.txt), plus the marks of the same names the table does
 * not list:
 * - grave accents drawn alone (not combining): U+02CB ˋ, U+02CE ˎ (LOW GRAVE), U+02F4 ˴, U+02F5 ˵
 *   (MIDDLE DOUBLE GRAVE), U+1FEF ` GREEK VARIA and the Greek spacing accents with a varia
 *   U+1FCD ῍, U+1FDD ῝, U+1FED ῭, U+FF40 ｀, the Duployan grave affixes U+1BC82, U+1BC83, U+1BC92,
 *   U+1BC93;
 * - reversed primes U+2035 ‵, U+2036 ‶, U+2037 ‷ and the reversed-9 quotation marks U+201B ‛,
 *   U+201F ‟, U+2E42 ⹂;
 * - turned and reversed commas: U+02BB ʻ (MODIFIER LETTER TURNED COMMA), U+02BD ʽ, U+2018 ‘ and
 *   U+201C “ (the turned-comma quotation marks, drawn as ʻ is), U+1FFE ῾ GREEK DASIA, U+2E32 ⸲,
 *   U+2E41 ⹁, the ornaments U+275B ❛, U+275D ❝, U+1F676 🙶; and U+055D ՝ ARMENIAN COMMA, drawn as
 *   a grave.
 * Always escaped, whatever the script: the fence must never appear in a value. Most are
 * symbols, punctuation or modifier letters of no particular script (Script_Extensions Common),
 * which the path-syntax rule below escapes always too; this holds U+02BB ʻ, the Hawaiian ʻokina,
 * so `Hawaiʻi.txt` shows `Hawai⟨U+02BB⟩i.txt`. The letters of a script here (U+02CB, a Bopomofo
 * tone mark, and the Duployan shorthand affixes) are escaped always as well: one letter of the
 * same script anywhere in the component would otherwise let them close the fence.
 * Not escaped, the rest of those classes: the ASCII `'` and `"`; the comma-shaped marks leaning
 * the other way, ordinary in names (U+2019 ’ the apostrophe, U+201D ”, U+02BC ʼ, U+1FBD ᾽,
 * U+1FBF ᾿); the primes and acute accents (U+2032 ′, U+2033 ″, U+2034 ‴, U+00B4 ´, U+02CA ˊ,
 * U+1FFD ´, U+0384 ΄, U+02B9 ʹ, U+0374 ʹ, U+02DD ˝, U+02F6 ˶); the upright ticks (U+02C8 ˈ,
 * U+02BA ʺ, U+02EE ˮ, U+A78C ꞌ, U+FF07 ＇, U+FF02 ＂, U+3003 〃, U+1CD3, U+02BE ʾ); and the
 * letters and punctuation of scripts used in names (Hebrew U+05D9 י, U+05F2 ײ, U+05F3 ׳, U+05F4
 * ״, Armenian U+055A ՚, N'Ko U+07F4, U+07F5, U+144A ᑊ, U+16CC ᛌ, U+16F51, U+16F52). A combining
 * grave on a space (U+0020 U+0300) is escaped as a mark without a visible base (module
 * documentation). test/prompt/fence.test.ts checks that every member of the three classes is on
 * one list or the other.
 */
export const GRAVE_LOOKALIKES =
  '\u0060\u02BB\u02BD\u02CB\u02CE\u02F4\u02F5\u055D\u1FCD\u1FDD\u1FED\u1FEF\u1FFE\u2018\u201B\u201C\u201F' +
  '\u2035\u2036\u2037\u275B\u275D\u2E32\u2E41\u2E42\uFF40\u{1BC82}\u{1BC83}\u{1BC92}\u{1BC93}\u{1F676}';

/**
 * The cut mark `…` U+2026 HORIZONTAL ELLIPSIS and the code points drawn like it: the TR #39
 * classes (confusables.txt, Unicode 13.0.0) of `...` (U+2026 itself) and of `···` (U+22EF ⋯
 * MIDLINE HORIZONTAL ELLIPSIS, U+2D48 ⵈ TIFINAGH LETTER TUAREG YAQ), and every other code point
 * drawn as a row of dots whose name says ELLIPSIS (UnicodeData.txt): U+1801 ᠁ MONGOLIAN ELLIPSIS,
 * U+22EE ⋮, U+22F0 ⋰, U+22F1 ⋱, U+FE19 ︙. (U+0EAF LAO ELLIPSIS and U+0E2F THAI PAIYANNOI are
 * letter-shaped, not dots. Two dots and one, U+2025 ‥ and U+2024 ․, are path-syntax look-alikes.)
 * Symbols and punctuation are always escaped; the one letter, U+2D48 of Tuareg Tifinagh, follows
 * the path-syntax letters' rule: escaped unless another code point of its `/`-separated
 * component is Tifinagh.
 */
export const ELLIPSIS_LOOKALIKES = '\u1801\u2026\u22EE\u22EF\u22F0\u22F1\u2D48\uFE19';

/**
 * Code points that draw nothing yet are neither Cf, Z, Cn, White_Space nor default-ignorable,
 * from public invisible-character lists (U+2800, U+FFFC, U+1D159) and the Unicode names that say
 * BLANK or FILLER (U+13441, U+13442, U+16FE4); the Hangul fillers (default-ignorable) are
 * listed too, to make the set plain.
 */
export const BLANK_LOOKING = '\u2800\uFFFC\u{1D159}\u{13441}\u{13442}\u{16FE4}\u115F\u1160\u3164\uFFA0';

/**
 * The kinds of code point, one capture group each (first match wins). 1: the escape character
 * `\`; 2: gc=Cc; 3: U+0020; 4: hidden and look-alike code points, always `⟨U+XXXX⟩` (this
 * includes the default-ignorable marks such as U+034F and the variation selectors); 5:
 * nonspacing marks (gc=Mn/Me, TR #39 §5.4); 6: other grapheme extenders (spacing marks,
 * Grapheme_Extend, Emoji_Modifier). Anything else (0) is shown as it is.
 */
const KINDS = new RegExp(
  `^(?:(\\\\)|([\\x00-\\x1F\\x7F-\\x9F])|( )|([\\p{Cf}\\p{Cs}\\p{Co}\\p{Cn}\\p{Z}\\p{Default_Ignorable_Code_Point}\\p{White_Space}${BLANK_LOOKING}${ANGLE_LOOKALIKES}${GRAVE_LOOKALIKES}])|([\\p{Mn}\\p{Me}])|([\\p{M}\\p{Grapheme_Extend}\\p{Emoji_Modifier}]))$`,
  'u',
);

const SAFE = 0;
/** Shown as it is, but may join a neighbour into one grapheme (UAX #29). */
const SAFE_JOINER = 7;
const ESCAPE_CHAR = 1;
const CONTROL = 2;
const SPACE = 3;
const HIDDEN = 4;
const NONSPACING = 5;
/**
 * Added to a letter's, digit's or mark's own kind when it is a path-syntax look-alike of a
 * specific script (see {@link PATH_SYNTAX_LOOKALIKES}): shown as its own kind when its script
 * fits its path component, else escaped.
 */
const PATH_LETTER = 16;

/**
 * The overlay marks: every code point with Canonical_Combining_Class 1 (Overlay; UAX #44,
 * UnicodeData.txt; these 32 in Unicode 17.0). Drawn across their base, they can draw a slash, a
 * stroke or a bar over ordinary text (U+0338 over a space reads as `/`), so they are always shown
 * as escapes. test/prompt/overlay.test.ts derives the set again from the runtime's own
 * normalization data.
 */
export const OVERLAY_MARKS =
  '\u0334\u0335\u0336\u0337\u0338\u1CD4\u1CE2\u1CE3\u1CE4\u1CE5\u1CE6\u1CE7\u1CE8\u20D2\u20D3\u20D8\u20D9\u20DA\u20E5\u20E6\u20EA\u20EB' +
  '\u{10A39}\u{16AF0}\u{16AF1}\u{16AF2}\u{16AF3}\u{16AF4}\u{1BC9E}\u{1D167}\u{1D168}\u{1D169}';

/** A letter, digit or mark (General_Category L, N or M). */
const LETTER_DIGIT_MARK = /^[\p{L}\p{N}\p{M}]$/u;
/** Script_Extensions {Common} or {Inherited}: no script vouches for such a code point. */
const NO_SCRIPT = /^[\p{scx=Zyyy}\p{scx=Zinh}]$/u;

function kindOf(cp: number): number {
  if (cp >= 0xd800 && cp <= 0xdfff) return HIDDEN; // a lone surrogate (gc=Cs)
  const ch = String.fromCodePoint(cp);
  const m = KINDS.exec(ch);
  let kind = SAFE;
  if (m === null) kind = JOINERS.test(ch) ? SAFE_JOINER : SAFE;
  else
    for (let g = 1; g <= 6; g++)
      if (m[g] !== undefined) {
        kind = g;
        break;
      }
  if (cp >= 0x300 && OVERLAY_MARKS.includes(ch)) return HIDDEN;
  if (kind !== HIDDEN && cp >= 0x80 && (PATH_SYNTAX_LOOKALIKES.includes(ch) || ELLIPSIS_LOOKALIKES.includes(ch))) {
    return LETTER_DIGIT_MARK.test(ch) && !NO_SCRIPT.test(ch) ? kind + PATH_LETTER : HIDDEN;
  }
  return kind;
}

const kinds = new BlockTable(kindOf);
const asciiKinds = Uint8Array.from({ length: 128 }, (_, cp) => kindOf(cp));
const isPathLetter = (cp: number): boolean => cp >= 0x80 && kinds.get(cp) >= PATH_LETTER;

/** Memo of `⟨U+XXXX⟩` strings, bounded; a pure cache. */
const escapeCache = new Map<number, string>();

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
  let text = escapeCache.get(cp);
  if (text === undefined) {
    text = `⟨U+${cp.toString(16).toUpperCase().padStart(4, '0')}⟩`;
    if (escapeCache.size >= 4096) escapeCache.clear();
    escapeCache.set(cp, text);
  }
  return text;
}

/** The escape of a gc=Cc code point: `\t`, `\n`, `\r`, or `\xHH` (lowercase hex). */
function controlEscape(cp: number): string {
  if (cp === 0x09) return '\\t';
  if (cp === 0x0a) return '\\n';
  if (cp === 0x0d) return '\\r';
  return `\\x${cp.toString(16).padStart(2, '0')}`;
}

/** Memo of escape units by their text, bounded; units are immutable, so they can be shared. */
const unitCache = new Map<string, Unit>();
function escapeUnit(text: string): Unit {
  let unit = unitCache.get(text);
  if (unit === undefined) {
    unit = Object.freeze({ text, escape: true, complex: false });
    if (unitCache.size >= 4096) unitCache.clear();
    unitCache.set(text, unit);
  }
  return unit;
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
  let complex = false;
  let length = 0;
  // Whether the token just emitted is literal text a combining mark may sit on.
  let base = false;
  // Consecutive literal extenders, consecutive literal nonspacing marks, the last of those.
  let extenderRun = 0;
  let nonspacingRun = 0;
  let lastNonspacing = -1;

  const pushEscape = (text: string): void => {
    if (literal !== '') units.push({ text: literal, escape: false, complex });
    literal = '';
    complex = false;
    units.push(escapeUnit(text));
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

  const n = value.length;
  // The `/`-separated component the last path-syntax letter was met in: its end, and the scripts
  // of its other letters (computed once per component, so the whole scan stays linear).
  let componentEnd = -1;
  let scripts: Set<string> | undefined;
  const fits = (at: number, cp: number): boolean => {
    scripts ??= new Set();
    if (at >= componentEnd) {
      const start = value.lastIndexOf('/', at) + 1;
      const slash = value.indexOf('/', at);
      componentEnd = slash < 0 ? n : slash;
      componentScripts(value, start, componentEnd, isPathLetter, scripts);
    }
    return sharesScript(cp, scripts);
  };

  let last = 0;
  let i = 0;
  while (i < n) {
    let cp = value.charCodeAt(i);
    let size = 1;
    if (cp >= 0xd800 && cp <= 0xdbff && i + 1 < n) {
      const lo = value.charCodeAt(i + 1);
      if (lo >= 0xdc00 && lo <= 0xdfff) {
        cp = ((cp - 0xd800) << 10) + (lo - 0xdc00) + 0x10000;
        size = 2;
      }
    }
    let kind = cp < 0x80 ? (asciiKinds[cp] ?? SAFE) : kinds.get(cp);
    if (kind >= PATH_LETTER) kind = fits(i, cp) ? kind - PATH_LETTER : HIDDEN;
    if (kind === SAFE) {
      i += size;
      continue;
    }
    if (kind === SAFE_JOINER) {
      complex = true;
      i += size;
      continue;
    }
    const at = i;
    i += size;
    if (at > last) {
      pushLiteral(value.slice(last, at));
      extenderRun = 0;
      nonspacingRun = 0;
      lastNonspacing = -1;
    }
    last = i;

    if (kind === ESCAPE_CHAR) {
      pushEscape('\\\\');
    } else if (kind === CONTROL) {
      pushEscape(controlEscape(cp));
    } else if (kind === SPACE) {
      const inner = at > 0 && i < n && value.charCodeAt(at - 1) !== 0x20 && value.charCodeAt(i) !== 0x20;
      if (inner) {
        pushLiteral(' ');
        base = false; // a mark on a space is drawn by itself (a spacing accent)
        extenderRun = 0;
        nonspacingRun = 0;
        lastNonspacing = -1;
      } else pushEscape(codePointEscape(cp));
    } else if (kind === HIDDEN) {
      pushEscape(codePointEscape(cp));
    } else {
      // A grapheme extender (UAX #29 Extend / SpacingMark).
      const nonspacing = kind === NONSPACING;
      const defective = !base;
      const tooMany =
        extenderRun >= MAX_EXTENDER_RUN ||
        (nonspacing && (nonspacingRun >= MAX_NONSPACING_RUN || cp === lastNonspacing));
      if (defective || tooMany) {
        pushEscape(codePointEscape(cp));
      } else {
        pushLiteral(value.slice(at, i));
        complex = true;
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
  if (literal !== '') units.push({ text: literal, escape: false, complex });
  return { units, length };
}
