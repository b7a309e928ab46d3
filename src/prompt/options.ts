/**
 * Options of the rendering, shared by render.ts and warnings.ts.
 *
 * @module
 */

/** Options of `renderValue`, `renderValueParts`, `questionWith` and `valueWarnings`. */
export interface RenderOptions {
  /**
   * Most graphemes (UAX #29 extended grapheme clusters, as `Intl.Segmenter` counts them) of the
   * text shown inside the code span, `…` included; fences, fingerprint and warnings are extra.
   * With {@link segments}, the most graphemes of each component instead (each over-long
   * component is cut on its own; the total is bounded by `MAX_PATH_GRAPHEMES`).
   * An integer, at least 10 (the longest escape, `⟨U+10FFFF⟩`). Defaults to 120.
   */
  maxGraphemes?: number;
  /**
   * A separator, e.g. `'/'` for a path: the mixed-script check then runs on each piece between
   * separators on its own, so `/home/me/שלום.txt` (Latin, then Hebrew) does not warn while
   * `/home/me/pаypal.txt` (Latin and Cyrillic in one name) does; and the bound
   * {@link maxGraphemes} applies to each piece, so no piece is hidden by the cut of another
   * (pieces are split where the separator is shown as itself). A non-empty string. By default
   * the whole value is checked and bounded as one piece. The other checks always see the whole
   * value.
   */
  segments?: string;
}

/** Default of {@link RenderOptions.maxGraphemes}. */
export const DEFAULT_MAX_GRAPHEMES = 120;

/** Validated options. */
export interface CheckedOptions {
  readonly max: number;
  readonly segments: string | undefined;
}

/**
 * Validates the options.
 *
 * @throws RangeError when `maxGraphemes` is not an integer of at least 10, or `segments` is not a
 *   non-empty string.
 */
export function checkOptions(options: RenderOptions): CheckedOptions {
  const max = options.maxGraphemes ?? DEFAULT_MAX_GRAPHEMES;
  if (!Number.isSafeInteger(max) || max < 10) {
    throw new RangeError('maxGraphemes must be an integer of at least 10');
  }
  const segments = options.segments;
  if (segments !== undefined && (typeof segments !== 'string' || segments === '')) {
    throw new RangeError('segments must be a non-empty string');
  }
  return { max, segments };
}
