/**
 * Short plain-language warnings shown next to a value that may look like another one.
 *
 * @module
 */
import { scriptMix } from './scripts.js';

/** Joins names as "A and B", "A, B and C". */
function list(names: readonly string[]): string {
  if (names.length <= 1) return names.join('');
  return `${names.slice(0, -1).join(', ')} and ${names[names.length - 1] ?? ''}`;
}

/**
 * The warnings for one value, each a short sentence fragment without markup.
 *
 * - `mixes Latin and Cyrillic letters`: the value mixes scripts (Unicode TR #39 §5.1/§5.2, see
 *   {@link scriptMix}); at most three scripts are named, then "and other".
 * - `not in Unicode normal form NFC`: `value.normalize('NFC') !== value` (UAX #15); such a value
 *   can look exactly like a different (normalised) one.
 *
 * A pure function of the value: the same value always gives the same warnings.
 *
 * @param value - any string.
 * @returns zero, one or two warnings, in that order.
 * @example
 * valueWarnings('p\u0430ypal.txt') // ['mixes Latin and Cyrillic letters']
 * valueWarnings('cafe\u0301.txt')  // ['not in Unicode normal form NFC']
 */
export function valueWarnings(value: string): string[] {
  const out: string[] = [];
  const mix = scriptMix(value);
  if (mix.mixed) {
    const shown = mix.scripts.slice(0, 3);
    const rest = mix.scripts.length > 3;
    out.push(`mixes ${rest ? `${shown.join(', ')} and other` : list(shown)} letters`);
  }
  if (value.normalize('NFC') !== value) out.push('not in Unicode normal form NFC');
  return out;
}

/**
 * The warnings as the text placed after a value: `''`, or ` (warning: A)`, or
 * ` (warning: A; B)`.
 */
export function warningSuffix(warnings: readonly string[]): string {
  return warnings.length === 0 ? '' : ` (warning: ${warnings.join('; ')})`;
}
