/**
 * Rendering untrusted values into the question a human reads ("Permanently delete `cache.txt`?").
 *
 * A rendered value is, in order:
 * 1. a CommonMark code span (CommonMark 0.31.2 §6.1 "Code spans") holding the escaped value
 *    (see `escape.ts`): every control, bidi control (Unicode TR #9), default-ignorable code point
 *    (UAX #44 Default_Ignorable_Code_Point), lone surrogate, and every whitespace other than a
 *    single inner U+0020 is shown as a visible escape (`\n`, `\x1b`, `\\`, `⟨U+202E⟩`), so the
 *    text is one line, well-formed, and distinct values give distinct text;
 * 2. when the value is too long, its middle is cut and marked `…`, followed by
 *    ` (shortened, fingerprint 0123456789abcdef)`;
 * 3. when the value mixes scripts (Unicode TR #39 §5.1–5.2) or is not NFC (UAX #15),
 *    ` (warning: mixes Latin and Cyrillic letters; not in Unicode normal form NFC)`.
 *
 * Why a code span: inside one, CommonMark and GitHub-style renderers (raw HTML allowed) show the
 * text literally: no emphasis, link, autolink, heading, entity or HTML tag, and markdown-it's
 * linkify does not touch it either. The fence is one backtick longer than the longest backtick
 * run in the shown text, so the value cannot close it; if the shown text starts or ends with a
 * backtick it is padded with one space on each side, which §6.1 strips again. The shown text
 * never starts or ends with a space (those are escaped) and has no line ending, so §6.1's
 * space-stripping and line-ending rules never change it. In a plain-text client the backticks
 * are visible as quotes.
 *
 * > [!WARNING]
 * > The static text of {@link question} is trusted: keep values out of markup written there
 * > (e.g. `<a title="${x}">` or a backtick before `${x}`), since an HTML tag or autolink opened
 * > before a code span takes precedence over it (CommonMark §6.1), and keep static text
 * > between two interpolations so their code spans stay apart.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { escapeValue } from './escape.js';
import { takeHead, takeTail, widthUpTo } from './cut.js';
import { valueWarnings, warningSuffix } from './warnings.js';

export { codePointEscape, escapeValue, type Escaped, type Unit } from './escape.js';
export { scriptMix, type ScriptMix } from './scripts.js';
export { valueWarnings, warningSuffix } from './warnings.js';

/** Options of {@link renderValue}. */
export interface RenderOptions {
  /**
   * Most graphemes (UAX #29 extended grapheme clusters, as `Intl.Segmenter` counts them) of the
   * text shown inside the code span, `…` included; fences, fingerprint and warnings are extra.
   * An integer, at least 10 (the longest escape, `⟨U+10FFFF⟩`). Defaults to 120.
   */
  maxGraphemes?: number;
}

/** Default of {@link RenderOptions.maxGraphemes}. */
export const DEFAULT_MAX_GRAPHEMES = 120;

/** Shown inside the code span for the empty string (`⟨` is always escaped in values). */
export const EMPTY_VALUE = '⟨empty⟩';

/** The parts of one rendering, for callers (and tests) that need more than the text. */
export interface RenderedValue {
  /** The whole rendering: code span, then the fingerprint suffix, then the warnings suffix. */
  readonly text: string;
  /** The text shown inside the code span (without fence or padding). */
  readonly body: string;
  /** The backtick fence used on each side. */
  readonly fence: string;
  /** True when the middle was cut out. */
  readonly cut: boolean;
  /** When cut: the first 16 hex digits of SHA-256 over the value's UTF-16LE code units. */
  readonly fingerprint: string | undefined;
  /** The warnings, see {@link valueWarnings}. */
  readonly warnings: readonly string[];
}

function checkOptions(options: RenderOptions): number {
  const max = options.maxGraphemes ?? DEFAULT_MAX_GRAPHEMES;
  if (!Number.isSafeInteger(max) || max < 10) {
    throw new RangeError('maxGraphemes must be an integer of at least 10');
  }
  return max;
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

/** Longest run of backticks in s. */
function longestBacktickRun(s: string): number {
  let best = 0;
  let run = 0;
  for (let i = 0; i < s.length; i++) {
    if (s.charCodeAt(i) === 0x60) {
      run += 1;
      if (run > best) best = run;
    } else run = 0;
  }
  return best;
}

/**
 * Renders one untrusted value, returning the parts. See {@link renderValue}.
 *
 * @param value - the untrusted string; must be a string.
 * @param options - see {@link RenderOptions}.
 * @throws RangeError when `maxGraphemes` is not an integer of at least 10.
 * @throws TypeError when `value` is not a string.
 */
export function renderValueParts(value: string, options: RenderOptions = {}): RenderedValue {
  const max = checkOptions(options);
  if (typeof value !== 'string') throw new TypeError('renderValue expects a string');
  const escaped = escapeValue(value);
  let body: string;
  let cut = false;
  if (value === '') body = EMPTY_VALUE;
  else if (widthUpTo(escaped.units, escaped.length, max) <= max) {
    body = escaped.units.map((u) => u.text).join('');
  } else {
    // Escape first, then cut on escape and grapheme boundaries; keep the start and the end
    // (a file's extension), one grapheme for the mark.
    const budget = max - 1;
    const head = Math.floor(budget / 2);
    body = `${takeHead(escaped.units, head)}…${takeTail(escaped.units, budget - head)}`;
    cut = true;
  }
  const fence = '`'.repeat(longestBacktickRun(body) + 1);
  const pad = body.startsWith('`') || body.endsWith('`') ? ' ' : '';
  const print = cut ? fingerprint(value) : undefined;
  const warnings = valueWarnings(value);
  const text =
    `${fence}${pad}${body}${pad}${fence}` +
    (print === undefined ? '' : ` (shortened, fingerprint ${print})`) +
    warningSuffix(warnings);
  return { text, body, fence, cut, fingerprint: print, warnings };
}

/**
 * Renders one untrusted value (a file name, say) for display inside a question.
 *
 * Guarantees, for every string (well-formed or not):
 * - one line: no gc=Cc/Zl/Zp code point and no line break (U+0085, U+2028, U+2029) in the output;
 * - visible: controls, bidi controls (TR #9), default-ignorables (UAX #44), lone surrogates and
 *   odd whitespace appear as escapes, never dropped; the output is well-formed UTF-16;
 * - injective: different values render differently (when cut, up to a 64-bit fingerprint);
 * - markup-proof: a CommonMark/GFM renderer with raw HTML shows the value as literal code;
 * - bounded: at most `maxGraphemes` graphemes between the fences, cut from the middle;
 * - honest about look-alikes: mixed scripts (TR #39) and non-NFC values carry a warning.
 *
 * @param value - the untrusted string.
 * @param options - see {@link RenderOptions}; `maxGraphemes` defaults to 120.
 * @returns one line: a code span, then optionally ` (shortened, fingerprint …)` and
 *   ` (warning: …)`.
 * @throws RangeError when `maxGraphemes` is not an integer of at least 10.
 * @throws TypeError when `value` is not a string.
 * @example
 * renderValue('a\nb')          // returns  `a\nb`              (backslash, n: visible)
 * renderValue('a\\nb')         // returns  `a\\nb`             (a real backslash, doubled)
 * renderValue('x\u202Ey')      // returns  `x⟨U+202E⟩y`
 * renderValue('p\u0430ypal')   // returns  `pаypal` (warning: mixes Latin and Cyrillic letters)
 */
export function renderValue(value: string, options: RenderOptions = {}): string {
  return renderValueParts(value, options).text;
}

/** A tagged template function as returned by {@link questionWith}. */
export type QuestionTag = (strings: TemplateStringsArray, ...values: readonly string[]) => string;

/**
 * A {@link question} tag with options for every value.
 *
 * @param options - see {@link RenderOptions}.
 * @throws RangeError when `maxGraphemes` is not an integer of at least 10.
 */
export function questionWith(options: RenderOptions): QuestionTag {
  checkOptions(options);
  return (strings, ...values) => {
    let out = '';
    for (let i = 0; i < strings.length; i++) {
      const text = strings[i];
      if (text === undefined) throw new TypeError('question: invalid escape in template text');
      out += text;
      if (i < values.length) out += renderValue(values[i] as string, options);
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
 * question`Permanently delete ${'a\nb'}?` // 'Permanently delete `a\\nb`?'
 */
export function question(strings: TemplateStringsArray, ...values: readonly string[]): string {
  return defaultQuestion(strings, ...values);
}
