/**
 * The proxy's question: the tool and every argument, all untrusted text, rendered with the
 * project's renderer (`renderValue`: no raw controls, injective, markup-proof, look-alike warnings).
 *
 * One line per part, in a stable order:
 * - on a question asked again because the state no longer matched, first what changed since the
 *   human was asked: {@link TOOL_CHANGED_NOTICE} and/or {@link UPSTREAM_CHANGED_NOTICE};
 * - `Run the tool T of the upstream server S version V with exactly these arguments?` (or `with no
 *   arguments?`): the tool name, the upstream's `serverInfo` name and version, each rendered;
 * - `Argument K: VALUE` for a string, `Argument K (JSON): VALUE` for any other JSON value (its RFC
 *   8785 canonical JSON, keys sorted by UTF-16 code units, from the `canonicalize` package), so the
 *   string `"true"` and the boolean `true` read differently; keys in UTF-16 code-unit order, the
 *   order of the canonical JSON.
 *
 * Size bound: a value is shown whole when its whole escaped text has at most
 * {@link MAX_INLINE_GRAPHEMES} graphemes in total (a path-like value included: the bound is not
 * per `/`-separated component); a longer one is shown as a summary, and the human then
 * approves that summary, not the text itself: its size in bytes (UTF-8), its number of lines, its
 * first and last lines (each rendered as one string, at most {@link MAX_LINE_GRAPHEMES} graphemes
 * in total, cut in the middle beyond) and the fingerprint of the whole value (first 16 hex digits of SHA-256 over its
 * UTF-16LE code units, as the renderer's). The sealed state binds the exact arguments whatever is
 * shown.
 *
 * The upstream's tool title and description never appear in the question.
 *
 * With passkey approval the page shows every argument whole ({@link proxyPageValues}): there the
 * human approves the value itself, not its summary.
 *
 * @module
 */
import canonicalize from 'canonicalize';
import { fingerprint, renderValue, renderValueParts } from '../prompt/render.js';

/** Most graphemes of a value's escaped text shown whole; longer values are summarised. */
export const MAX_INLINE_GRAPHEMES = 200;
/** Most graphemes shown of a summarised value's first or last line. */
export const MAX_LINE_GRAPHEMES = 80;

/** The first line of a question asked again because the tool's definition changed since the state was asked. */
export const TOOL_CHANGED_NOTICE = 'The upstream changed this tool since you were asked.';
/** The first (or second) line of a question asked again because the upstream's identity or relayed roots changed. */
export const UPSTREAM_CHANGED_NOTICE =
  'The upstream server is not the one you were asked about: its command, arguments, working directory, address, name, version or roots differ.';

/** What changed since the state a question is asked again for (each true when it did). */
export interface QuestionChanges {
  readonly tool: boolean;
  readonly upstream: boolean;
}

/** What the question needs to know about the upstream (its `serverInfo`, as it announced it). */
export interface UpstreamNames {
  readonly name: string;
  readonly version: string;
}

const AS_PATH = { segments: '/' } as const;

/** Splits on CR LF, CR or LF; a final line break ends the last line rather than starting an empty one. */
function linesOf(value: string): string[] {
  const lines = value.split(/\r\n|\r|\n/);
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/**
 * Renders one value (a string, or the canonical JSON of another value) within the size bound.
 *
 * The bound is checked on the whole value (no `segments`: with them the renderer bounds each
 * `/`-separated component, so `'ok/'.repeat(20000)` would be shown whole). A value within it is
 * then rendered with `segments: '/'`, which cuts nothing there (no component can be wider than
 * the whole) and runs the look-alike checks per component.
 *
 * @param text - the untrusted text.
 * @returns the code span (with the renderer's suffixes), or the summary of a long value.
 */
export function renderBounded(text: string): string {
  const whole = renderValueParts(text, { maxGraphemes: MAX_INLINE_GRAPHEMES });
  if (!whole.cut) return renderValue(text, { ...AS_PATH, maxGraphemes: MAX_INLINE_GRAPHEMES });
  const lines = linesOf(text);
  const first = lines[0] ?? '';
  const last = lines[lines.length - 1] ?? '';
  const bytes = Buffer.byteLength(text, 'utf8');
  const lineWord = lines.length === 1 ? 'line' : 'lines';
  const ends =
    lines.length === 1
      ? `, shown in part: ${renderValue(first, { maxGraphemes: MAX_LINE_GRAPHEMES })}`
      : `, first line ${renderValue(first, { maxGraphemes: MAX_LINE_GRAPHEMES })}, last line ${renderValue(last, { maxGraphemes: MAX_LINE_GRAPHEMES })}`;
  return `a long value of ${bytes} bytes in ${lines.length} ${lineWord}${ends}, fingerprint ${fingerprint(text)}`;
}

/** Canonical JSON (RFC 8785) of a non-string value; throws on values without one (lone surrogates, NaN). */
function canonicalText(value: unknown): string {
  const text = canonicalize(value);
  if (typeof text !== 'string') throw new TypeError('the value has no canonical JSON form');
  return text;
}

/**
 * The question for one proxied tool call.
 *
 * @param tool - the tool name as called (untrusted).
 * @param args - the call's arguments as sent (untrusted), or undefined.
 * @param upstream - the upstream's announced name and version (upstream-controlled).
 * @param changed - on a question asked again: what changed since the state was asked.
 * @returns the question, one line per part.
 * @throws {TypeError} when an argument has no canonical JSON form (the guard refuses such
 *   arguments with `ERR_CONFIRM_BAD_ARGUMENT` before asking).
 */
export function proxyQuestion(
  tool: string,
  args: Record<string, unknown> | undefined,
  upstream: UpstreamNames,
  changed?: QuestionChanges,
): string {
  const notices = [
    ...(changed?.tool === true ? [TOOL_CHANGED_NOTICE] : []),
    ...(changed?.upstream === true ? [UPSTREAM_CHANGED_NOTICE] : []),
  ];
  const head = `Run the tool ${renderValue(tool)} of the upstream server ${renderValue(upstream.name)} version ${renderValue(upstream.version)}`;
  const keys = args === undefined ? [] : Object.keys(args).sort();
  if (keys.length === 0) return [...notices, `${head} with no arguments?`].join('\n');
  const lines = [...notices, `${head} with exactly these arguments?`];
  for (const key of keys) {
    const value = (args as Record<string, unknown>)[key];
    const shownKey = renderValue(key);
    lines.push(
      typeof value === 'string'
        ? `Argument ${shownKey}: ${renderBounded(value)}`
        : `Argument ${shownKey} (JSON): ${renderBounded(canonicalText(value))}`,
    );
  }
  return lines.join('\n');
}

/**
 * What the passkey approval page shows below the question: every argument whole, never
 * summarised, in the question's order (the page renders each value like the question's, uncut).
 *
 * @param args - the call's arguments as sent (untrusted), or undefined.
 * @returns one entry per argument: the label `argument K` (K rendered; `(JSON)` after it for a
 *   non-string) and the raw string, or the canonical JSON (RFC 8785) of any other value.
 */
export function proxyPageValues(args: Record<string, unknown> | undefined): Array<{ label: string; value: string }> {
  if (args === undefined) return [];
  return Object.keys(args)
    .sort()
    .map((key) => {
      const value = args[key];
      return typeof value === 'string'
        ? { label: `argument ${renderValue(key)}`, value }
        : { label: `argument ${renderValue(key)} (JSON)`, value: canonicalText(value) };
    });
}
