/**
 * Rendering untrusted values into the question a human reads.
 *
 * FIRST RULE ONLY (issue "The main job"): one line, every control character
 * shown as an escape, the escape character itself escaped. Issue "The question
 * a human reads" replaces this with the rigorous rendering.
 *
 * @module
 */

/** Options of {@link renderValue}. */
export interface RenderOptions {
  /** Most graphemes shown before the middle is cut. Defaults to 120. */
  maxGraphemes?: number;
}

/**
 * Renders one untrusted value for display inside a question.
 *
 * @param value - the untrusted string (a file name, say).
 * @param _options - see {@link RenderOptions}.
 * @returns a one-line display string.
 */
export function renderValue(value: string, _options: RenderOptions = {}): string {
  let out = '';
  for (const ch of value) {
    const cp = ch.codePointAt(0)!;
    if (ch === '\\') out += '\\\\';
    else if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp === 0x2028 || cp === 0x2029) out += `\\u{${cp.toString(16)}}`;
    else out += ch;
  }
  return '`' + out + '`';
}

/**
 * A tagged template whose static text is trusted and whose every interpolated
 * value goes through {@link renderValue}.
 *
 * @example
 * question`Permanently delete ${path}?` // 'Permanently delete `a\\nb`?'
 */
export function question(strings: TemplateStringsArray, ...values: string[]): string {
  let out = strings[0] ?? '';
  values.forEach((v, i) => {
    out += renderValue(v) + (strings[i + 1] ?? '');
  });
  return out;
}
