/**
 * Rendering untrusted values into the question a human reads ("Permanently delete `cache.txt`?").
 *
 * A rendered value is, in order:
 * 1. a CommonMark code span (CommonMark 0.31.2 §6.1 "Code spans") holding the escaped value
 *    (see `escape.ts`): every control, bidi control (Unicode TR #9), default-ignorable code point
 *    (UAX #44 Default_Ignorable_Code_Point), lone surrogate, blank-looking code point, every
 *    whitespace other than a single inner U+0020, every backtick and every look-alike of the
 *    escapes' brackets is shown as a visible escape (`\n`, `\x1b`, `\\`, `⟨U+202E⟩`,
 *    `⟨U+0060⟩`), so the text is one line, well-formed, and distinct values give distinct text;
 * 2. when the value is too long, its middle is cut and marked `…`, followed by
 *    ` (shortened, fingerprint 0123456789abcdef)`; for a path (`segments: '/'`) every component
 *    stays, and only an over-long component is cut, each in its own middle with its own `…` and
 *    its own fingerprint (` (shortened, fingerprints 0123456789abcdef, fedcba9876543210)`), see
 *    {@link renderPath};
 * 3. when the value may pass for another one, plain warnings (see `warnings.ts`):
 *    ` (warning: mixes Latin and Cyrillic letters; not in Unicode normal form NFC)`.
 *
 * Why a code span: inside one, CommonMark and GitHub-style renderers (raw HTML allowed) show the
 * text literally: no emphasis, link, autolink, heading, entity or HTML tag, and markdown-it's
 * linkify does not touch it either. A backtick in a value is always escaped, so the shown text
 * never holds one: the fence is always a single backtick, the value cannot close it, and in a
 * plain-text client (where the backticks are visible as quotes) a name cannot draw a closing
 * quote and go on to imitate the question's own wording. The shown text never starts or ends
 * with a space (those are escaped) and has no line ending, so §6.1's space-stripping and
 * line-ending rules never change it.
 *
 * Every step is linear in the value's length (escaping, the script check, the normal-form checks
 * with their bound on runs of combining marks, the cut, which segments only bounded windows, and
 * the fingerprint); the bidi check runs on the shown text only.
 *
 * > [!WARNING]
 * > The static text of {@link question} is trusted: keep values out of markup written there
 * > (e.g. `<a title="${x}">` or a backtick before `${x}`), since an HTML tag or autolink opened
 * > before a code span takes precedence over it (CommonMark §6.1), and keep static text
 * > between two interpolations so their code spans stay apart. Start it with a left-to-right
 * > letter and have a left-to-right letter before any digit on each side of a value, as the bidi
 * > check assumes (see `bidi.ts`).
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { escapeValue } from './escape.js';
import { shownBody, type ShownBody } from './cut.js';
import { checkOptions, type RenderOptions } from './options.js';
import { warningSuffix, warningsFor } from './warnings.js';

export {
  ANGLE_LOOKALIKES,
  BLANK_LOOKING,
  ELLIPSIS_LOOKALIKES,
  GRAVE_LOOKALIKES,
  codePointEscape,
  escapeValue,
  type Escaped,
  type Unit,
} from './escape.js';
export { EMPTY_VALUE, MAX_PATH_GRAPHEMES } from './cut.js';
export { DEFAULT_MAX_GRAPHEMES, type RenderOptions } from './options.js';
export { scriptMix, type ScriptMix } from './scripts.js';
export { reordersRtl } from './bidi.js';
export { MAX_MARK_RUN, WARNING, valueWarnings, warningSuffix } from './warnings.js';

/** The parts of one rendering, for callers (and tests) that need more than the text. */
export interface RenderedValue {
  /** The whole rendering: code span, then the fingerprint suffix, then the warnings suffix. */
  readonly text: string;
  /** The text shown inside the code span (without the fences). */
  readonly body: string;
  /** The backtick fence used on each side: always one backtick (values never hold one). */
  readonly fence: string;
  /** True when a middle was cut out (of the value, or of a component of a path). */
  readonly cut: boolean;
  /**
   * The first of {@link fingerprints}, or `undefined` when nothing was cut. Without `segments`
   * this is the fingerprint of the whole value.
   */
  readonly fingerprint: string | undefined;
  /**
   * The fingerprints shown, each the first 16 hex digits of SHA-256 over UTF-16LE code units (see
   * {@link fingerprint}): one per cut component, in order, of that component's raw text (the
   * whole value when there are no `segments`); or, when components were left out (past
   * `MAX_PATH_GRAPHEMES`), the whole value's alone. Empty when nothing was cut.
   */
  readonly fingerprints: readonly string[];
  /** The warnings, see {@link valueWarnings}. */
  readonly warnings: readonly string[];
}

/**
 * Fingerprint of a whole value: SHA-256 over its UTF-16 code units, little-endian (so lone
 * surrogates stay distinct, unlike UTF-8 which maps them all to U+FFFD), first 16 lowercase hex
 * digits (64 bits).
 *
 * @param value - any string.
 * @returns 16 lowercase hex digits.
 */
export function fingerprint(value: string): string {
  return createHash('sha256').update(Buffer.from(value, 'utf16le')).digest('hex').slice(0, 16);
}

/**
 * Renders one untrusted value, returning the parts. See {@link renderValue}.
 *
 * @param value - the untrusted string; must be a string.
 * @param options - see {@link RenderOptions}.
 * @throws RangeError on invalid options (see {@link RenderOptions}).
 * @throws TypeError when `value` is not a string.
 */
export function renderValueParts(value: string, options: RenderOptions = {}): RenderedValue {
  const checked = checkOptions(options);
  if (typeof value !== 'string') throw new TypeError('renderValue expects a string');
  const escaped = escapeValue(value);
  const shown = shownBody(value, escaped.units, escaped.length, checked.max, checked.segments);
  const { body, cut } = shown;
  const prints = !cut ? [] : shown.leftOut > 0 ? [fingerprint(value)] : shown.cutPieces.map(fingerprint);
  const warnings = warningsFor(value, escaped, body, checked);
  const text = `\`${body}\`` + shortenedSuffix(shown, prints) + warningSuffix(warnings);
  return { text, body, fence: '`', cut, fingerprint: prints[0], fingerprints: prints, warnings };
}

/**
 * The text placed after a cut value: `''` when nothing was cut; ` (shortened, fingerprint X)`
 * for one cut value or component; ` (shortened, fingerprints X, Y)` for several cut components,
 * in their order; ` (shortened, N of M components left out, fingerprint W)` with the whole
 * value's fingerprint when components were left out.
 */
function shortenedSuffix(shown: ShownBody, prints: readonly string[]): string {
  if (!shown.cut) return '';
  if (shown.leftOut > 0) {
    return ` (shortened, ${shown.leftOut} of ${shown.pieces} components left out, fingerprint ${prints[0] ?? ''})`;
  }
  return prints.length === 1
    ? ` (shortened, fingerprint ${prints[0] ?? ''})`
    : ` (shortened, fingerprints ${prints.join(', ')})`;
}

/**
 * Renders one untrusted value (a file name, say) for display inside a question.
 *
 * Guarantees, for every string (well-formed or not):
 * - one line: no gc=Cc/Zl/Zp code point and no line break (U+0085, U+2028, U+2029) in the output;
 * - visible: controls, bidi controls (TR #9), default-ignorables (UAX #44), lone surrogates and
 *   odd whitespace appear as escapes, never dropped; the output is well-formed UTF-16;
 * - injective: different values render differently (when cut, up to a 64-bit fingerprint);
 *   with `segments`, two values whose differing components are each at most `maxGraphemes`
 *   wide differ outside the fingerprints (see {@link renderPath});
 * - markup-proof: a CommonMark/GFM renderer with raw HTML shows the value as literal code, in a
 *   single-backtick code span it cannot close;
 * - bounded: at most `maxGraphemes` graphemes between the fences, cut from the middle, in time
 *   linear in the value's length; with `segments`, at most `maxGraphemes` per component and
 *   `MAX_PATH_GRAPHEMES` in total (see {@link renderPath});
 * - honest about look-alikes: mixed scripts (TR #39), non-NFC or non-NFKC text and right-to-left
 *   text that displays out of order (TR #9) carry a warning (see `valueWarnings`).
 *
 * @param value - the untrusted string.
 * @param options - see {@link RenderOptions}; `maxGraphemes` defaults to 120.
 * @returns one line: a code span, then optionally ` (shortened, fingerprint …)` and
 *   ` (warning: …)`.
 * @throws RangeError on invalid options (see {@link RenderOptions}).
 * @throws TypeError when `value` is not a string.
 * @example
 * ```ts
 * import { renderValue } from 'mcp-confirm';
 *
 * renderValue('a\nb')          // returns  `a\nb`              (backslash, n: visible)
 * renderValue('a\\nb')         // returns  `a\\nb`             (a real backslash, doubled)
 * renderValue('x\u202Ey')      // returns  `x⟨U+202E⟩y`
 * renderValue('p\u0430ypal')   // returns  `pаypal` (warning: mixes Latin and Cyrillic letters)
 * renderValue('a`b')           // returns  `a⟨U+0060⟩b`
 * ```
 */
export function renderValue(value: string, options: RenderOptions = {}): string {
  return renderValueParts(value, options).text;
}

/**
 * {@link renderValue} for a file path (`segments: '/'`), component by component:
 * - the look-alike script check runs per `/`-separated component, so `/srv/שלום.txt` does not
 *   warn for mixing the root's Latin with the name's Hebrew, while `/srv/pаypal.txt` does;
 * - every component is shown, in order: only a component wider than `maxGraphemes` (default
 *   120; graphemes of the escaped text, an escape counted at its width) is cut, from its own
 *   middle, with its own `…`, and its own fingerprint in the suffix (in the order of the cut
 *   components). So two paths that differ in a component at most `maxGraphemes` wide always
 *   differ outside the fingerprints (a name of 120 graphemes differs visibly from any other);
 * - the total is bounded by `MAX_PATH_GRAPHEMES` (65,536), which only a value of more than 8,192
 *   code units can reach (every code unit is shown at most 8 wide); past it, whole components
 *   are left out of the middle and the suffix says how many, with the whole path's
 *   fingerprint.
 *
 * @example
 * ```ts
 * import { renderPath } from 'mcp-confirm';
 *
 * renderPath('/srv/שלום.txt') // returns  `/srv/שלום.txt`
 * ```
 */
export function renderPath(path: string, options: RenderOptions = {}): string {
  return renderValue(path, { ...options, segments: '/' });
}

/** A tagged template function as returned by {@link questionWith}. */
export type QuestionTag = (strings: TemplateStringsArray, ...values: readonly string[]) => string;

/**
 * A {@link question} tag with options for every value.
 *
 * @param options - see {@link RenderOptions}; e.g. `{ segments: '/' }` for paths.
 * @throws RangeError on invalid options (see {@link RenderOptions}).
 */
export function questionWith(options: RenderOptions): QuestionTag {
  checkOptions(options);
  const fixed: RenderOptions = { ...options };
  return (strings, ...values) => {
    let out = '';
    for (let i = 0; i < strings.length; i++) {
      const text = strings[i];
      if (text === undefined) throw new TypeError('question: invalid escape in template text');
      out += text;
      if (i < values.length) out += renderValue(values[i] as string, fixed);
    }
    return out;
  };
}

const defaultQuestion = questionWith({});

/**
 * A tagged template whose static text is trusted and whose every interpolated value goes through
 * {@link renderValue} (warnings included). A one-line template gives a one-line question.
 *
 * @throws TypeError when a value is not a string.
 * @example
 * ```ts
 * import { question } from 'mcp-confirm';
 *
 * question`Permanently delete ${'a\nb'}?` // 'Permanently delete `a\\nb`?'
 * ```
 */
export function question(strings: TemplateStringsArray, ...values: readonly string[]): string {
  return defaultQuestion(strings, ...values);
}
