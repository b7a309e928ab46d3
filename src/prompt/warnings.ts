/**
 * Short plain-language warnings shown next to a value that may look like another one.
 *
 * @module
 */
import { reordersRtl } from './bidi.js';
import { BlockTable } from './blockTable.js';
import { shownBody } from './cut.js';
import { escapeValue, type Escaped } from './escape.js';
import { checkOptions, type CheckedOptions, type RenderOptions } from './options.js';
import { latinLookalikeScript, scriptMix } from './scripts.js';

/** The warning for a value that mixes scripts names at most this many. */
const MAX_SCRIPTS_NAMED = 3;

/**
 * Most combining marks in a row (gc=M, and U+FF9E, U+FF9F, whose compatibility decomposition is
 * a mark) for which the normal-form checks run: the Stream-Safe Text Format of UAX #15 §13 allows
 * 30 non-starters in a row. Normalising reorders each run of non-starters by insertion (ICU), so
 * its cost grows with the square of the longest run: 100,000 marks take seconds. Every
 * non-starter (Canonical_Combining_Class ≠ 0) is gc=M, and every code point whose decomposition
 * starts with a non-starter is one of these (a test checks both against the running ICU), so with
 * at most 30 in a row the checks cost a bounded amount per code point.
 */
export const MAX_MARK_RUN = 30;

/** The code points counted in a run of combining marks (see {@link MAX_MARK_RUN}). */
export const MARK_RUN_CLASS = /^[\p{M}\uFF9E\uFF9F]$/u;
const marks = new BlockTable((cp) =>
  cp >= 0xd800 && cp <= 0xdfff ? 0 : MARK_RUN_CLASS.test(String.fromCodePoint(cp)) ? 1 : 0,
);

/** Whether the value has more than {@link MAX_MARK_RUN} combining marks in a row. */
function longMarkRun(value: string): boolean {
  let run = 0;
  const n = value.length;
  for (let i = 0; i < n; i++) {
    let cp = value.charCodeAt(i);
    // No combining mark lies below U+0300.
    if (cp < 0x300) {
      run = 0;
      continue;
    }
    if (cp >= 0xd800 && cp <= 0xdbff && i + 1 < n) {
      const lo = value.charCodeAt(i + 1);
      if (lo >= 0xdc00 && lo <= 0xdfff) {
        cp = ((cp - 0xd800) << 10) + (lo - 0xdc00) + 0x10000;
        i += 1;
      }
    }
    if (marks.get(cp) === 1) {
      run += 1;
      if (run > MAX_MARK_RUN) return true;
    } else run = 0;
  }
  return false;
}

const HAS_NON_ASCII = /[^\x00-\x7F]/;

/** The warnings' texts, for callers and tests that match them. */
export const WARNING = {
  /** {@link valueWarnings}: not in NFC. */
  notNfc: 'not in Unicode normal form NFC',
  /** {@link valueWarnings}: the shown characters change under NFKC. */
  notNfkc: 'uses compatibility look-alike characters, not NFKC',
  /** {@link valueWarnings}: the normal-form checks were skipped. */
  tooManyMarks: `more than ${MAX_MARK_RUN} combining marks in a row, too many to check for look-alikes`,
  /** {@link valueWarnings}: right-to-left text displays out of stored order. */
  rtlOrder: 'right-to-left text may display out of order',
  /** {@link valueWarnings}: a name wholly in another script that can pass for Latin. */
  latinLookalike: (script: string): string => `written in ${script} letters that look like Latin ones`,
} as const;

/** Joins names as "A and B", "A, B and C". */
function list(names: readonly string[]): string {
  if (names.length <= 1) return names.join('');
  return `${names.slice(0, -1).join(', ')} and ${names[names.length - 1] ?? ''}`;
}

/**
 * The warnings for one value, each a short sentence fragment without markup, in this order:
 *
 * 1. `mixes Latin and Cyrillic letters`: the value mixes scripts (Unicode TR #39 §5.1/§5.2, see
 *    `scriptMix` in scripts.ts; per piece between separators when `options.segments` is set); at
 *    most three scripts are named, then "and other".
 *    Otherwise, `written in Cyrillic letters that look like Latin ones`: a piece wholly in another
 *    script whose every letter has a Latin look-alike in Unicode's confusables.txt (TR #39 §4
 *    whole-script confusables, see `latinLookalikeScript` in scripts.ts): the all-Cyrillic
 *    `сасһе.txt`, not `cache.txt` nor `сайт.txt`.
 * 2. `not in Unicode normal form NFC`: `value.normalize('NFC') !== value` (UAX #15); such a value
 *    can look exactly like a different (normalised) one.
 * 3. `uses compatibility look-alike characters, not NFKC`: some text shown as itself (not as an
 *    escape) changes under NFKC beyond what NFC changes (UAX #15 compatibility decompositions):
 *    full-width `ｃａｃｈｅ`, mathematical `𝚌𝚊𝚌𝚑𝚎`, ligatures `ﬁ`, superscripts `²`. Escaped code
 *    points (e.g. U+00A0, U+3164) are already shown as `⟨U+XXXX⟩` and are not counted.
 * 4. Instead of 2 and 3, `more than 30 combining marks in a row, too many to check for
 *    look-alikes` when the value has more than {@link MAX_MARK_RUN} combining marks in a row (see
 *    there): the normal-form checks are then skipped, which keeps them linear in the length.
 * 5. `right-to-left text may display out of order`: the shown text, laid out by the Unicode
 *    Bidirectional Algorithm (TR #9) in a left-to-right line, shows characters out of stored order
 *    other than inside one right-to-left word or one number (see bidi.ts): `/tmp/r/א/ב/ג.txt`,
 *    `ملف 2 ملف 1.txt`, but not `שלום.txt` or `مرحبا.txt`. Checked on the shown text, so a
 *    reordering made by the cut's `…` counts and one cut out does not.
 *
 * A pure function of the value and the options: the same value always gives the same warnings,
 * and they are exactly `renderValueParts(value, options).warnings`. Linear in the value's length.
 *
 * @param value - any string.
 * @param options - `maxGraphemes` (the shown text, for the bidi check) and `segments`.
 * @returns zero to four warnings, in the order above.
 * @throws RangeError on invalid options, see `RenderOptions`.
 * @example
 * ```ts
 * import { valueWarnings } from './warnings.js';
 *
 * valueWarnings('p\u0430ypal.txt') // ['mixes Latin and Cyrillic letters']
 * valueWarnings('\u0441\u0430\u0441\u04BB\u0435.txt') // ['written in Cyrillic letters that look like Latin ones']
 * valueWarnings('cafe\u0301.txt')  // ['not in Unicode normal form NFC']
 * valueWarnings('ｃａｃｈｅ.txt')    // ['uses compatibility look-alike characters, not NFKC']
 * valueWarnings('א/ב.txt')         // ['right-to-left text may display out of order']
 * ```
 */
export function valueWarnings(value: string, options: RenderOptions = {}): string[] {
  const checked = checkOptions(options);
  if (typeof value !== 'string') throw new TypeError('valueWarnings expects a string');
  const escaped = escapeValue(value);
  const { body } = shownBody(value, escaped.units, escaped.length, checked.max, checked.segments);
  return warningsFor(value, escaped, body, checked);
}

/**
 * The warnings of {@link valueWarnings}, given what the renderer already computed.
 *
 * @param value - the value.
 * @param escaped - `escapeValue(value)`.
 * @param body - the text shown in the code span.
 * @param options - the checked options.
 */
export function warningsFor(value: string, escaped: Escaped, body: string, options: CheckedOptions): string[] {
  // ASCII is in every normal form, in one script, and left to right (its escapes and the cut
  // mark too): nothing to warn about.
  if (!HAS_NON_ASCII.test(value)) return [];
  const out: string[] = [];
  const mix = scriptMix(value, options.segments);
  if (mix.mixed) {
    const shown = mix.scripts.slice(0, MAX_SCRIPTS_NAMED);
    const rest = mix.scripts.length > MAX_SCRIPTS_NAMED;
    out.push(`mixes ${rest ? `${shown.join(', ')} and other` : list(shown)} letters`);
  } else {
    const script = latinLookalikeScript(value, options.segments);
    if (script !== undefined) out.push(WARNING.latinLookalike(script));
  }
  if (longMarkRun(value)) {
    out.push(WARNING.tooManyMarks);
  } else {
    if (value.normalize('NFC') !== value) out.push(WARNING.notNfc);
    // Only text shown as itself counts: the literal runs, joined by a line feed (a starter
    // that never composes with a neighbour, so each run is normalised as if alone). A value
    // stable under NFKC has no such text; that is the common case, checked first.
    if (value.normalize('NFKC') !== value) {
      let literal = '';
      for (const u of escaped.units) if (!u.escape) literal += `${u.text}\n`;
      const k = literal.normalize('NFKC');
      if (k !== literal && k !== literal.normalize('NFC')) out.push(WARNING.notNfkc);
    }
  }
  if (reordersRtl(body)) out.push(WARNING.rtlOrder);
  return out;
}

/**
 * The warnings as the text placed after a value: `''`, or ` (warning: A)`, or
 * ` (warning: A; B)`.
 */
export function warningSuffix(warnings: readonly string[]): string {
  return warnings.length === 0 ? '' : ` (warning: ${warnings.join('; ')})`;
}
