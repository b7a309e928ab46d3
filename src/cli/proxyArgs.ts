/**
 * The command line of `mcp-confirm proxy [options] ([--] COMMAND [ARG…] | --upstream-url URL)`: its
 * usage, its option table (the serving flags it shares with `mcp-confirm`, `servingArgs.ts`, and its
 * own), how the upstream command is told from the proxy's options, and the parser the dispatcher
 * (`args.ts`) calls for `mcp-confirm proxy …`. Free of the proxy itself (`proxy.ts`), so parsing
 * loads neither the SDK nor the confirmation layer.
 *
 * @module
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { DEFAULT_MAX_ARGUMENT_BYTES, DEFAULT_UPSTREAM_TIMEOUT_SECONDS, MAX_LIST_MAX_AGE_SECONDS } from '../defaults.js';
import { parseArgsUsageError, UsageError, wholeSeconds } from './common.js';
import { parseServingFlags, SERVING_OPTIONS, type ServingFlags } from './servingArgs.js';

export const PROXY_USAGE = `Usage:
  mcp-confirm proxy [--policy PATH] [--confirm-unnamed] [--plans] [--explain] [--audience NAME] [--ttl SECONDS]
                    [--key-file PATH] [--ledger SPEC] [--upstream-timeout SECONDS] [--max-argument-bytes N]
                    [--upstream-id NAME] [--list-max-age SECONDS]
                    [--audit PATH] [--approval form|passkey] [--approvers PATH]
                    [--approval-port PORT | --public-url URL] [--approval-wait SECONDS]
                    [--notify SPEC ... [--notify-secret-file PATH] [--notify-include-question]]
                    [--approvers-required N]
                    [--http HOST:PORT [--auth-issuer URL --auth-jwks PATH|URL] [--resource URL]
                     [--allowed-hosts LIST] [--drain-seconds N]]
                    ( [--] COMMAND [ARG ...] | --upstream-url URL [--upstream-header 'NAME: VALUE' ...] )
      Start COMMAND as the upstream MCP server (stdio), or connect to the Streamable HTTP upstream
      at URL, and serve it to the client over stdio (or --http) (MCP 2026-07-28 and 2025-11-25),
      asking a human before each call of a tool that needs it.
      COMMAND starts at the first word that is not one of the options below (or after --), as
      for npx: every word after it goes to the upstream unchanged, also one that looks like an
      option here (proxy node server.js --ttl 5 gives --ttl 5 to the upstream). A COMMAND that
      starts with - needs --. The upstream runs under a small supervisor in its own process group,
      ended (SIGTERM, then SIGKILL) within about a second of the proxy ending, however it ends.

Options:
  --upstream-url URL        The upstream's Streamable HTTP endpoint (http or https, no user info),
                            instead of [--] COMMAND.
  --upstream-header 'NAME: VALUE'
                            A header sent with every upstream request (repeatable), e.g. its
                            credentials. A VALUE of exactly $VAR is read from the environment
                            variable VAR. The client's own token is never forwarded upstream.
  --policy PATH             JSON {"confirm":[GLOB...],"allow":[GLOB...],"deny":[GLOB...],"grants":{...}}:
                            tool-name globs (* and ? only, whole name, case-sensitive); deny > confirm
                            > allow. Unnamed tools are asked unless readOnlyHint is true or
                            destructiveHint false. "grants": {"TOOL": {"arguments": {"ARG": MATCHER},
                            "maxUses": N, "maxSeconds": S}} offers in TOOL's question a grant for calls
                            like it (MATCHER: exact, any, same-directory, subtree, at-most; an argument
                            not named is exact; maxUses default 20, maxSeconds default 900). The path
                            matchers compare the text of paths only: they pin no directory.
                            "quorum": {"GLOB": N} (with --approval passkey): N distinct approvers
                            must approve a matching tool's call; the largest matching glob applies,
                            never below --approvers-required.
  --confirm-unnamed         Ask for every tool the policy does not name, whatever its annotations.
  --explain                 Start the upstream, print each of its tools with what the proxy will do
                            with it (ask, pass or deny) and why (the policy entry, the annotation or
                            the default), then exit 0 without serving. The start-up line on stderr
                            says the same in one line.
  --plans                   Add the tool confirm_plan: an agent lists several calls of confirmed tools,
                            the human approves them with one question, and each listed call is then
                            made once, exactly as listed, within --ttl, without a question. An
                            upstream tool named confirm_plan is then a start-up error.
  --upstream-id NAME        Name the upstream for the states (1 to 200 characters, no control
                            characters): a state is then accepted by every proxy with the same
                            NAME, keys and ledger, whatever its command, arguments, working
                            directory or URL. Default: those are bound (and the roots relayed,
                            the upstream's announced name and version, always; the environment
                            never).
  --upstream-timeout SECONDS
                            Deadline of one upstream request (1 to 86400). Default: ${DEFAULT_UPSTREAM_TIMEOUT_SECONDS}.
  --max-argument-bytes N    The most bytes of a call's arguments as canonical JSON (RFC 8785);
                            a larger call is refused (ERR_CONFIRM_BAD_ARGUMENT), nothing forwarded.
                            1 to 1073741824. Default: ${DEFAULT_MAX_ARGUMENT_BYTES} (1 MiB).
  --list-max-age SECONDS    For an upstream that does not announce tool-list changes: decide a
                            call of a tool the policy does not name from a tool list read up to
                            SECONDS ago instead of listing the tools for each call (0 to
                            ${MAX_LIST_MAX_AGE_SECONDS}). Risk: within that age, a tool the upstream
                            flipped from read-only to destructive passes unasked. A confirmed call
                            still lists afresh in both rounds. Default: 0 (list for each call).
  --audience, --ttl, --key-file, --ledger, --audit, --approval, --approvers, --approval-port,
  --public-url, --approval-wait, --approvers-required, --notify, --notify-secret-file,
  --notify-include-question, --http, --auth-issuer, --auth-jwks, --resource, --allowed-hosts,
  --drain-seconds           As for serving delete_file (mcp-confirm --help). --approval passkey with
                            --http needs --public-url URL: the approval page is served on the --http
                            listener at URL/approve/….`;

/** What `mcp-confirm proxy …` asks for: the serving flags and the proxy's own. */
export interface ProxyCommand extends ServingFlags {
  kind: 'proxy';
  help: boolean;
  policyPath: string | undefined;
  confirmUnnamed: boolean;
  /** `--plans`: list and answer the proxy's own `confirm_plan`. */
  plans: boolean;
  /** `--explain`: print what the proxy would do with each upstream tool, and exit without serving. */
  explain: boolean;
  upstreamTimeoutSeconds: number;
  /** `--max-argument-bytes`: the most bytes of a call's arguments as canonical JSON. */
  maxArgumentBytes: number;
  /** `--list-max-age SECONDS`: how long a tool list may decide calls of an upstream that announces no list changes (0: none). */
  listMaxAgeSeconds: number;
  /** `--upstream-id NAME`: bound in the states instead of the command, arguments and working directory, or the URL. */
  upstreamId: string | undefined;
  /** The upstream: a command to spawn, or a Streamable HTTP URL with the headers to send it. */
  upstream:
    { kind: 'command'; command: string[] } | { kind: 'url'; url: URL; headers: Array<[name: string, value: string]> };
  /**
   * Start-up notes for stderr (without the `mcp-confirm proxy: ` prefix): one per proxy option name
   * found as a word of the upstream command given without `--` ({@link misplacedOptionNotes}).
   */
  notes: string[];
}

/** Header names the transport or HTTP itself sets: refused in `--upstream-header`. */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'content-type',
  'accept',
  'connection',
  'transfer-encoding',
  'last-event-id',
]);
/** An HTTP field name (RFC 9110 §5.1: a token). */
const FIELD_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** An HTTP field value fetch accepts (RFC 9110 §5.5: visible characters, obs-text, spaces, tabs; no line breaks). */
const FIELD_VALUE = /^[\t\x20-\x7E\x80-\xFF]*$/;
/** A value that names an environment variable: exactly `$NAME`. */
const ENV_REFERENCE = /^\$([A-Za-z_][A-Za-z0-9_]*)$/;

/**
 * Parses the `--upstream-header` values. No message ever shows a header value (they are
 * credentials); a malformed one is named by its position.
 *
 * @param env - where `$VAR` values are read (the process environment).
 * @returns the headers in the order given.
 * @throws {UsageError} for a line without `NAME: VALUE`, a bad or reserved name (`Host`,
 *   `Content-Type`, `Accept`, `Mcp-*`, …), a name given twice, an empty value, characters a header
 *   cannot carry, or a `$VAR` whose variable is not set or is empty (naming the variable).
 */
export function parseUpstreamHeaders(
  lines: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Array<[string, string]> {
  const headers: Array<[string, string]> = [];
  const seen = new Set<string>();
  lines.forEach((line, i) => {
    const which = `--upstream-header #${i + 1}`;
    const colon = line.indexOf(':');
    if (colon < 0) throw new UsageError(`${which} must be 'NAME: VALUE' (the value is not shown here)`);
    const name = line.slice(0, colon).trim();
    if (!FIELD_NAME.test(name))
      throw new UsageError(
        `${which}: the header name is not a valid HTTP field name (letters, digits and !#$%&'*+.^_\`|~- only)`,
      );
    const lower = name.toLowerCase();
    if (RESERVED_HEADERS.has(lower) || lower.startsWith('mcp-'))
      throw new UsageError(
        `--upstream-header ${name}: this header is set by the MCP transport, not by --upstream-header`,
      );
    if (seen.has(lower)) throw new UsageError(`--upstream-header ${name} is given twice`);
    seen.add(lower);
    let value = line.slice(colon + 1).trim();
    const reference = ENV_REFERENCE.exec(value);
    if (reference) {
      const variable = reference[1]!;
      const fromEnv = env[variable];
      if (fromEnv === undefined)
        throw new UsageError(`--upstream-header ${name}: the environment variable ${variable} is not set`);
      if (fromEnv.trim() === '')
        throw new UsageError(`--upstream-header ${name}: the environment variable ${variable} is empty`);
      if (!FIELD_VALUE.test(fromEnv))
        throw new UsageError(
          `--upstream-header ${name}: the environment variable ${variable} holds characters a header value cannot carry (line breaks, control characters or characters above U+00FF)`,
        );
      value = fromEnv.trim();
    } else {
      if (value === '') throw new UsageError(`--upstream-header ${name} has an empty value`);
      if (!FIELD_VALUE.test(value))
        throw new UsageError(
          `--upstream-header ${name}: the value holds characters a header value cannot carry (control characters or characters above U+00FF)`,
        );
    }
    headers.push([name, value]);
  });
  return headers;
}

/**
 * Checks `--upstream-url`. The messages never show the URL (a query may carry a secret).
 *
 * @throws {UsageError} when it is not an absolute http(s) URL, or carries user info or a fragment.
 */
export function parseUpstreamUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError('--upstream-url must be an absolute http or https URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError('--upstream-url must be an absolute http or https URL');
  if (url.username !== '' || url.password !== '')
    throw new UsageError(
      '--upstream-url must not carry user info (user:password@): give credentials with --upstream-header',
    );
  if (url.hash !== '') throw new UsageError('--upstream-url must not have a fragment');
  return url;
}

/** The proxy's option table (`parseArgs`), before the upstream command: its own options and the serving flags. */
const PROXY_OPTIONS = {
  policy: { type: 'string' },
  'confirm-unnamed': { type: 'boolean' },
  plans: { type: 'boolean' },
  explain: { type: 'boolean' },
  'upstream-timeout': { type: 'string' },
  'max-argument-bytes': { type: 'string' },
  'list-max-age': { type: 'string' },
  'upstream-url': { type: 'string' },
  'upstream-header': { type: 'string', multiple: true },
  'upstream-id': { type: 'string' },
  ...SERVING_OPTIONS,
  help: { type: 'boolean', short: 'h' },
} as const satisfies NonNullable<ParseArgsConfig['options']>;

/**
 * Splits the arguments after `proxy` into the proxy's own options and the upstream command, as
 * `npx` does: the command starts at the first word that is neither an option nor the value of a
 * string option (`--policy p.json`), or after a `--`. Everything from there on is the upstream's,
 * unchanged, also words that look like the proxy's options (`proxy node server.js --ttl 5` gives
 * `--ttl 5` to the upstream). A word starting with `-` before the command is the proxy's, so an
 * unknown one is refused by name (`unknown option --tll`) and a command that itself starts with `-`
 * needs `--`. Hosts that drop a `--` (the Inspector CLI) are served the same.
 *
 * @returns `own` (the proxy's options), `command` (empty when none is given) and whether a `--` was given.
 */
export function splitUpstreamCommand(argv: readonly string[]): { own: string[]; command: string[]; dash: boolean } {
  // Lenient: an unknown option is a boolean here, so it stays on the proxy's side (and is refused there).
  const { tokens } = parseArgs({
    args: [...argv],
    options: PROXY_OPTIONS,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const first = tokens.find((t) => t.kind === 'positional' || t.kind === 'option-terminator');
  if (first === undefined) return { own: [...argv], command: [], dash: false };
  const dash = first.kind === 'option-terminator';
  return { own: argv.slice(0, first.index), command: argv.slice(first.index + (dash ? 1 : 0)), dash };
}

/**
 * The notes for words of an upstream command given without `--` that are exactly one of the
 * proxy's own long option names (`node s.js --policy deny.json`): they go to the upstream, as
 * documented, which a user may not have meant. None when the command came after an explicit `--`
 * (the user said where the proxy's options end), and none for `--help`.
 *
 * @returns one note per distinct option name, in the order first found.
 */
export function misplacedOptionNotes(command: readonly string[], dash: boolean): string[] {
  if (dash) return [];
  const names = new Set(
    Object.keys(PROXY_OPTIONS)
      .filter((n) => n !== 'help')
      .map((n) => `--${n}`),
  );
  const found = [...new Set(command.slice(1).filter((word) => names.has(word)))];
  return found.map(
    (name) =>
      `note: ${name} after the upstream command is passed to the upstream, not read by the proxy; give it before the command`,
  );
}

/**
 * Parses the arguments after `proxy`.
 *
 * @param env - where `--upstream-header` `$VAR` values are read. Defaults to the process environment.
 * @throws {UsageError} on unknown options (before the command: see {@link splitUpstreamCommand}); neither or both of `[--] COMMAND` and `--upstream-url`;
 *   `--upstream-header` without `--upstream-url` or malformed ({@link parseUpstreamHeaders}); a bad
 *   `--ttl`, `--audience`, `--upstream-timeout`, `--max-argument-bytes`, `--list-max-age`, `--upstream-id`, `--upstream-url`, HTTP flag or approval flag;
 *   `--audit` without `--key-file`; approval flags as for serving `delete_file`
 *   ({@link parseServingFlags}: passkey needs `--approvers`, and with `--http` a `--public-url`
 *   whose host is an allowed host).
 */
export function parseProxyCommand(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): ProxyCommand {
  const { own, command, dash } = splitUpstreamCommand(argv);
  let values;
  try {
    ({ values } = parseArgs({ args: own, allowPositionals: false, strict: true, options: PROXY_OPTIONS }));
  } catch (e) {
    throw new UsageError(`proxy: ${parseArgsUsageError(e).message}`);
  }
  const help = values.help ?? false;
  const urlText = values['upstream-url'];
  const headerLines = values['upstream-header'] ?? [];
  if (!help && urlText !== undefined && (dash || command.length > 0))
    throw new UsageError('proxy: give either [--] COMMAND or --upstream-url URL, not both');
  if (!help && urlText === undefined && command.length === 0) {
    throw new UsageError(
      "proxy: give the upstream command after the proxy's options (or after --), e.g. mcp-confirm proxy npx -y @modelcontextprotocol/server-filesystem /home/me/projects, or its Streamable HTTP endpoint with --upstream-url URL",
    );
  }
  if (!help && urlText === undefined && command[0] === '') throw new UsageError('proxy: the upstream command is empty');
  if (urlText === undefined && headerLines.length > 0)
    throw new UsageError(
      '--upstream-header needs --upstream-url URL (a spawned upstream gets the environment instead)',
    );
  const upstream: ProxyCommand['upstream'] =
    urlText === undefined || help
      ? { kind: 'command', command }
      : { kind: 'url', url: parseUpstreamUrl(urlText), headers: parseUpstreamHeaders(headerLines, env) };
  const serving = parseServingFlags(values);
  return {
    kind: 'proxy',
    help,
    policyPath: values.policy,
    confirmUnnamed: values['confirm-unnamed'] ?? false,
    plans: values.plans ?? false,
    explain: values.explain ?? false,
    ...serving,
    upstreamTimeoutSeconds:
      values['upstream-timeout'] === undefined
        ? DEFAULT_UPSTREAM_TIMEOUT_SECONDS
        : wholeSeconds('--upstream-timeout', values['upstream-timeout']),
    maxArgumentBytes:
      values['max-argument-bytes'] === undefined
        ? DEFAULT_MAX_ARGUMENT_BYTES
        : argumentBytes(values['max-argument-bytes']),
    listMaxAgeSeconds: values['list-max-age'] === undefined ? 0 : listMaxAge(values['list-max-age']),
    upstreamId: values['upstream-id'] === undefined ? undefined : upstreamId(values['upstream-id']),
    upstream,
    notes: upstream.kind === 'command' ? misplacedOptionNotes(command, dash) : [],
  };
}

/** Most characters (UTF-16 code units) of `--upstream-id`. */
const MAX_UPSTREAM_ID = 200;

/** @throws {UsageError} unless `text` has 1 to 200 characters, none a control character (C0, DEL, C1) or a lone surrogate. */
function upstreamId(text: string): string {
  if (
    text.length === 0 ||
    text.length > MAX_UPSTREAM_ID ||
    /[\u0000-\u001F\u007F-\u009F]/.test(text) ||
    !text.isWellFormed()
  ) {
    throw new UsageError(`--upstream-id must be 1 to ${MAX_UPSTREAM_ID} characters without control characters`);
  }
  return text;
}

/** Most `--max-argument-bytes` accepted: 1 GiB. */
const MAX_ARGUMENT_BYTES_LIMIT = 1_073_741_824;

/** @throws {UsageError} unless `text` is a whole number from 1 to 1 GiB. */
function argumentBytes(text: string): number {
  const n = /^[0-9]+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n) || n < 1 || n > MAX_ARGUMENT_BYTES_LIMIT) {
    throw new UsageError(
      `--max-argument-bytes must be a whole number of bytes from 1 to ${MAX_ARGUMENT_BYTES_LIMIT}, got ${JSON.stringify(text)}`,
    );
  }
  return n;
}

/** @throws {UsageError} unless `text` is a whole number of seconds from 0 to {@link MAX_LIST_MAX_AGE_SECONDS} (one hour). */
function listMaxAge(text: string): number {
  const n = /^[0-9]+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n) || n > MAX_LIST_MAX_AGE_SECONDS) {
    throw new UsageError(
      `--list-max-age must be a whole number of seconds from 0 to ${MAX_LIST_MAX_AGE_SECONDS} (one hour), got ${JSON.stringify(text)}`,
    );
  }
  return n;
}
