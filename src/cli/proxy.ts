/**
 * `mcp-confirm proxy [options] ([--] COMMAND [ARG…] | --upstream-url URL)`: the confirmation proxy.
 * Spawns COMMAND as the upstream MCP server (or connects to a Streamable HTTP upstream) and
 * serves the client on this process's stdio (stdout carries only the protocol, diagnostics go to
 * stderr) or, with `--http`, over Streamable HTTP with the main server's rules.
 *
 * @module
 */
import { DEFAULT_TTL_SECONDS } from '../defaults.js';
import { readFile } from 'node:fs/promises';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { createConfirmation, type ConfirmEvent } from '../guard/confirmation.js';
import { renderValue } from '../prompt/render.js';
import { EMPTY_POLICY, parsePolicy, PolicyError, type Policy } from '../proxy/policy.js';
import { createProxy, DEFAULT_MAX_ARGUMENT_BYTES } from '../proxy/server.js';
import { Upstream } from '../proxy/upstream.js';
import { shownUrl } from '../proxy/upstream.js';
import type { AuditLog } from '../audit/auditLog.js';
import type { PasskeyApproval, ApprovalEvent } from '../approval/passkey.js';
import type { ConfirmStore } from '../store/confirmStore.js';
import { AUDIT_OPTIONS } from './auditArgs.js';
import { checkAudience, parseArgsUsageError, readKeyFile, UNKNOWN_HINT, UsageError, wholeSeconds } from './common.js';
import { HTTP_OPTIONS, type HttpSpec } from './httpArgs.js';
import { APPROVAL_OPTIONS, parseServingFlags, type ApprovalFlags } from './approvalArgs.js';
import { openLedger } from './ledgerSpec.js';

export const PROXY_USAGE = `Usage:
  mcp-confirm proxy [--policy PATH] [--confirm-unnamed] [--audience NAME] [--ttl SECONDS]
                    [--key-file PATH] [--ledger SPEC] [--upstream-timeout SECONDS] [--max-argument-bytes N]
                    [--upstream-id NAME]
                    [--audit PATH] [--approval form|passkey] [--approvers PATH]
                    [--approval-port PORT | --public-url URL] [--approval-wait SECONDS]
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
  --policy PATH             JSON {"confirm":[GLOB...],"allow":[GLOB...],"deny":[GLOB...]}: tool-name
                            globs (* and ? only, whole name, case-sensitive); deny > confirm > allow.
                            Unnamed tools are asked unless readOnlyHint is true or destructiveHint false.
  --confirm-unnamed         Ask for every tool the policy does not name, whatever its annotations.
  --upstream-id NAME        Name the upstream for the states (1 to 200 characters, no control
                            characters): a state is then accepted by every proxy with the same
                            NAME, keys and ledger, whatever its command, arguments, working
                            directory or URL. Default: those are bound (and the roots relayed,
                            the upstream's announced name and version, always; the environment
                            never).
  --upstream-timeout SECONDS
                            Deadline of one upstream request (1 to 86400). Default: 120.
  --max-argument-bytes N    The most bytes of a call's arguments as canonical JSON (RFC 8785);
                            a larger call is refused (ERR_CONFIRM_BAD_ARGUMENT), nothing forwarded.
                            1 to 1073741824. Default: 1048576 (1 MiB).
  --audience, --ttl, --key-file, --ledger, --audit, --approval, --approvers, --approval-port,
  --public-url, --approval-wait, --http, --auth-issuer, --auth-jwks, --resource, --allowed-hosts,
  --drain-seconds           As for serving delete_file (mcp-confirm --help). --approval passkey with
                            --http needs --public-url URL: the approval page is served on the --http
                            listener at URL/approve/….`;

/** What `mcp-confirm proxy …` asks for. */
export interface ProxyCommand {
  help: boolean;
  policyPath: string | undefined;
  confirmUnnamed: boolean;
  audience: string;
  ttlSeconds: number;
  keyFile: string | undefined;
  ledger: string;
  upstreamTimeoutSeconds: number;
  /** `--max-argument-bytes`: the most bytes of a call's arguments as canonical JSON. */
  maxArgumentBytes: number;
  /** `--upstream-id NAME`: bound in the states instead of the command, arguments and working directory, or the URL. */
  upstreamId: string | undefined;
  /** The upstream: a command to spawn, or a Streamable HTTP URL with the headers to send it. */
  upstream: { kind: 'command'; command: string[] } | { kind: 'url'; url: URL; headers: Array<[name: string, value: string]> };
  /** Serve the client over Streamable HTTP instead of stdio (undefined: stdio). */
  http: HttpSpec | undefined;
  /** `--audit PATH`: the audit trail's path prefix (undefined: no trail). */
  audit: string | undefined;
  /** `--approval` and its flags (`--approvers`, `--approval-port`, `--approval-wait`, `--public-url`). */
  approval: ApprovalFlags;
  /**
   * Start-up notes for stderr (without the `mcp-confirm proxy: ` prefix): one per proxy option name
   * found as a word of the upstream command given without `--` ({@link misplacedOptionNotes}).
   */
  notes: string[];
}

/** Header names the transport or HTTP itself sets: refused in `--upstream-header`. */
const RESERVED_HEADERS = new Set(['host', 'content-length', 'content-type', 'accept', 'connection', 'transfer-encoding', 'last-event-id']);
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
export function parseUpstreamHeaders(lines: readonly string[], env: NodeJS.ProcessEnv = process.env): Array<[string, string]> {
  const headers: Array<[string, string]> = [];
  const seen = new Set<string>();
  lines.forEach((line, i) => {
    const which = `--upstream-header #${i + 1}`;
    const colon = line.indexOf(':');
    if (colon < 0) throw new UsageError(`${which} must be 'NAME: VALUE' (the value is not shown here)`);
    const name = line.slice(0, colon).trim();
    if (!FIELD_NAME.test(name)) throw new UsageError(`${which}: the header name is not a valid HTTP field name (letters, digits and !#$%&'*+.^_\`|~- only)`);
    const lower = name.toLowerCase();
    if (RESERVED_HEADERS.has(lower) || lower.startsWith('mcp-')) throw new UsageError(`--upstream-header ${name}: this header is set by the MCP transport, not by --upstream-header`);
    if (seen.has(lower)) throw new UsageError(`--upstream-header ${name} is given twice`);
    seen.add(lower);
    let value = line.slice(colon + 1).trim();
    const reference = ENV_REFERENCE.exec(value);
    if (reference) {
      const variable = reference[1]!;
      const fromEnv = env[variable];
      if (fromEnv === undefined) throw new UsageError(`--upstream-header ${name}: the environment variable ${variable} is not set`);
      if (fromEnv.trim() === '') throw new UsageError(`--upstream-header ${name}: the environment variable ${variable} is empty`);
      if (!FIELD_VALUE.test(fromEnv)) throw new UsageError(`--upstream-header ${name}: the environment variable ${variable} holds characters a header value cannot carry (line breaks, control characters or characters above U+00FF)`);
      value = fromEnv.trim();
    } else {
      if (value === '') throw new UsageError(`--upstream-header ${name} has an empty value`);
      if (!FIELD_VALUE.test(value)) throw new UsageError(`--upstream-header ${name}: the value holds characters a header value cannot carry (control characters or characters above U+00FF)`);
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
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError('--upstream-url must be an absolute http or https URL');
  if (url.username !== '' || url.password !== '') throw new UsageError('--upstream-url must not carry user info (user:password@): give credentials with --upstream-header');
  if (url.hash !== '') throw new UsageError('--upstream-url must not have a fragment');
  return url;
}

/** The proxy's own options (`parseArgs`), before the upstream command. */
const PROXY_OPTIONS = {
  policy: { type: 'string' },
  'confirm-unnamed': { type: 'boolean' },
  audience: { type: 'string' },
  ttl: { type: 'string' },
  'key-file': { type: 'string' },
  ledger: { type: 'string' },
  'upstream-timeout': { type: 'string' },
  'max-argument-bytes': { type: 'string' },
  'upstream-url': { type: 'string' },
  'upstream-header': { type: 'string', multiple: true },
  'upstream-id': { type: 'string' },
  ...HTTP_OPTIONS,
  ...AUDIT_OPTIONS,
  ...APPROVAL_OPTIONS,
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
  const { tokens } = parseArgs({ args: [...argv], options: PROXY_OPTIONS, strict: false, allowPositionals: true, tokens: true });
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
  const names = new Set(Object.keys(PROXY_OPTIONS).filter((n) => n !== 'help').map((n) => `--${n}`));
  const found = [...new Set(command.slice(1).filter((word) => names.has(word)))];
  return found.map((name) => `note: ${name} after the upstream command is passed to the upstream, not read by the proxy; give it before the command`);
}

/**
 * Parses the arguments after `proxy`.
 *
 * @param env - where `--upstream-header` `$VAR` values are read. Defaults to the process environment.
 * @throws {UsageError} on unknown options (before the command: see {@link splitUpstreamCommand}); neither or both of `[--] COMMAND` and `--upstream-url`;
 *   `--upstream-header` without `--upstream-url` or malformed ({@link parseUpstreamHeaders}); a bad
 *   `--ttl`, `--audience`, `--upstream-timeout`, `--max-argument-bytes`, `--upstream-id`, `--upstream-url`, HTTP flag or approval flag;
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
  if (!help && urlText !== undefined && (dash || command.length > 0)) throw new UsageError('proxy: give either [--] COMMAND or --upstream-url URL, not both');
  if (!help && urlText === undefined && command.length === 0) {
    throw new UsageError('proxy: give the upstream command after the proxy\'s options (or after --), e.g. mcp-confirm proxy npx -y @modelcontextprotocol/server-filesystem /home/me/projects, or its Streamable HTTP endpoint with --upstream-url URL');
  }
  if (!help && urlText === undefined && command[0] === '') throw new UsageError('proxy: the upstream command is empty');
  if (urlText === undefined && headerLines.length > 0) throw new UsageError('--upstream-header needs --upstream-url URL (a spawned upstream gets the environment instead)');
  const upstream: ProxyCommand['upstream'] =
    urlText === undefined || help ? { kind: 'command', command } : { kind: 'url', url: parseUpstreamUrl(urlText), headers: parseUpstreamHeaders(headerLines, env) };
  const audience = checkAudience(values.audience);
  const { http, audit, approval } = parseServingFlags(values);
  return {
    help,
    policyPath: values.policy,
    confirmUnnamed: values['confirm-unnamed'] ?? false,
    audience,
    ttlSeconds: values.ttl === undefined ? DEFAULT_TTL_SECONDS : wholeSeconds('--ttl', values.ttl),
    keyFile: values['key-file'],
    ledger: values.ledger ?? 'memory',
    upstreamTimeoutSeconds: values['upstream-timeout'] === undefined ? 120 : wholeSeconds('--upstream-timeout', values['upstream-timeout']),
    maxArgumentBytes: values['max-argument-bytes'] === undefined ? DEFAULT_MAX_ARGUMENT_BYTES : argumentBytes(values['max-argument-bytes']),
    upstreamId: values['upstream-id'] === undefined ? undefined : upstreamId(values['upstream-id']),
    upstream,
    http,
    audit,
    approval,
    notes: upstream.kind === 'command' ? misplacedOptionNotes(command, dash) : [],
  };
}

/** Most characters (UTF-16 code units) of `--upstream-id`. */
const MAX_UPSTREAM_ID = 200;

/** @throws {UsageError} unless `text` has 1 to 200 characters, none a control character (C0, DEL, C1) or a lone surrogate. */
function upstreamId(text: string): string {
  if (text.length === 0 || text.length > MAX_UPSTREAM_ID || /[\u0000-\u001F\u007F-\u009F]/.test(text) || !text.isWellFormed()) {
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
    throw new UsageError(`--max-argument-bytes must be a whole number of bytes from 1 to ${MAX_ARGUMENT_BYTES_LIMIT}, got ${JSON.stringify(text)}`);
  }
  return n;
}

/**
 * Reads and validates the policy file.
 *
 * @throws {UsageError} naming the file and the bad entry.
 */
export async function loadPolicy(path: string | undefined): Promise<Policy> {
  if (path === undefined) return EMPTY_POLICY;
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new UsageError(`--policy ${path}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  try {
    return parsePolicy(text);
  } catch (e) {
    if (e instanceof PolicyError) throw new UsageError(`--policy ${path}: ${e.message}`);
    throw e;
  }
}

function log(line: string): void {
  process.stderr.write(`mcp-confirm proxy: ${line}\n`);
}

/** Tool names in diagnostics are untrusted text: rendered like the question's. */
function logEvent(event: ConfirmEvent): void {
  const tool = 'tool' in event ? renderValue(event.tool) : '';
  switch (event.type) {
    case 'asked':
      return log(`asked to confirm ${tool}`);
    case 'asked-again':
      return log(`asked again for ${tool} (${event.reason})`);
    case 'refused':
      return log(`refused ${tool}: ${event.code}`);
    case 'state-refused':
      return log(`requestState refused (${event.reason})`);
    case 'not-confirmed':
      return log(`${tool} not confirmed (${event.action}${event.on === 'page' ? ' on the approval page' : ''})`);
    case 'confirmed':
      return log(`${tool} confirmed and forwarded${event.approver !== undefined ? ` (approved by ${renderValue(event.approver)})` : ''}`);
    case 'approval-pending':
      return log(`${tool}: no decision on the approval page yet; asked again`);
    case 'internal-error':
      return log(`internal error in ${tool}: ${event.error instanceof Error ? event.error.message : String(event.error)}`);
  }
}

function logApprovalEvent(event: ApprovalEvent): void {
  switch (event.type) {
    case 'approval-approved':
      return log(`approval page: approved by ${renderValue(event.approver)}`);
    case 'approval-declined':
      return log('approval page: denied');
    case 'approval-refused':
      return log(`approval page: refused: ${event.reason}`);
  }
}

/**
 * Starts the approval page for `--approval passkey`, or nothing: over stdio on localhost, over
 * `--http` behind `--public-url` (served on the --http listener).
 *
 * @throws {UsageError} when the ledger cannot hold approvals, the approvers file is unusable or
 *   enrolled for another RP ID, or the port cannot be bound.
 */
async function startApproval(command: ProxyCommand, ledger: ConfirmStore): Promise<PasskeyApproval | undefined> {
  if (command.approval.approval !== 'passkey') return undefined;
  // Loaded only here, so a form-mode proxy never loads the WebAuthn library.
  const { startPasskeyApproval } = await import('./approvalStart.js');
  // The proxy has no roots of its own: where the upstream may write is its business (README, "Proxy").
  return startPasskeyApproval(command.approval, { store: ledger, forbiddenDirs: [], onEvent: logApprovalEvent, warn: log, authIssuer: command.http?.auth?.issuer });
}

/**
 * Runs the proxy until the client disconnects.
 *
 * @returns an exit code, or -1 to keep running.
 * @throws {UsageError} on bad options, policy, key file or ledger (exit 2).
 */
export async function runProxy(argv: readonly string[]): Promise<number> {
  const command = parseProxyCommand(argv);
  if (command.help) {
    process.stdout.write(`${PROXY_USAGE}\n`);
    return 0;
  }
  for (const note of command.notes) log(note);
  // HTTP serving: its modules load only when asked for (stdio start-up does not pay for them).
  const http = command.http ? await import('./serveHttp.js') : undefined;
  if (http && command.http) await http.checkHttpAuth(command.http);
  const policy = await loadPolicy(command.policyPath);
  const keys = await readKeyFile(command.keyFile);
  const opened = await openLedger(command.ledger, command.audience, log);
  // After the ledger, which records the trail's head when it is shared (and is closed after it).
  const audit: AuditLog | undefined =
    command.audit !== undefined
      ? await (await import('./auditCli.js')).openAuditTrail(command.audit, keys!, log, opened).catch(async (e: unknown) => {
          await opened.close?.().catch(() => {});
          throw e;
        })
      : undefined;
  // Over HTTP: decisions counted and ledger calls timed for /metrics.
  const metrics = http?.createMetrics();
  const ledger = metrics ? metrics.instrument(opened) : opened;
  const closeStores = async (): Promise<void> => {
    await audit?.close().catch(() => {});
    await ledger.close?.().catch(() => {});
  };
  let approval: PasskeyApproval | undefined;
  try {
    // The same object as the ledger (over HTTP the timed wrapper, which forwards the approval records).
    approval = await startApproval(command, ledger);
  } catch (e) {
    await closeStores();
    throw e;
  }
  const confirmation = await createConfirmation({
    audience: command.audience,
    ttlSeconds: command.ttlSeconds,
    store: ledger,
    unknownHint: UNKNOWN_HINT,
    onEvent: metrics ? (event: ConfirmEvent) => (logEvent(event), metrics.observe(event)) : logEvent,
    ...(keys ? { keys } : {}),
    ...(http ? { principal: http.principal } : {}),
    ...(audit ? { audit } : {}),
    ...(approval ? { approval } : {}),
  });
  const timing = { callTimeoutMs: command.upstreamTimeoutSeconds * 1000, log, roots: command.http === undefined, ...(command.upstreamId !== undefined ? { id: command.upstreamId } : {}) };
  let upstream: Upstream;
  try {
    upstream =
      command.upstream.kind === 'url'
        ? await Upstream.connectHttp({ url: command.upstream.url, headers: command.upstream.headers, ...timing })
        : await Upstream.spawn({ command: command.upstream.command, ...timing });
  } catch (e) {
    await approval?.close().catch(() => {});
    await closeStores();
    log((e as Error).message);
    return 1;
  }
  if (command.upstream.kind === 'url' && command.upstream.url.protocol === 'http:' && !isLoopbackHost(command.upstream.url.hostname) && command.upstream.headers.length > 0) {
    log(`warning: --upstream-header values go to ${shownUrl(command.upstream.url)} over plain http, readable on the network; use https`);
  }
  upstream.onDown((reason) => log(`the upstream server is down (${reason}); it is not restarted: every call now answers ERR_CONFIRM_UPSTREAM_DOWN`));
  const { factory } = createProxy({
    confirmation,
    upstream,
    policy,
    confirmUnnamed: command.confirmUnnamed,
    shared: command.http !== undefined,
    maxArgumentBytes: command.maxArgumentBytes,
  });
  const where = `${command.upstream.kind === 'url' ? `at ${shownUrl(command.upstream.url)}` : 'spawned over stdio'}${command.upstreamId !== undefined ? ` (identity: --upstream-id ${renderValue(command.upstreamId)})` : ''}`;
  const served = `${renderValue(upstream.identity.name)} ${renderValue(upstream.identity.version)}`;
  const details = `upstream ${where}; policy: ${policy.confirm.length} confirm, ${policy.allow.length} allow, ${policy.deny.length} deny${command.confirmUnnamed ? ', unnamed tools asked' : ''}; audience ${JSON.stringify(command.audience)}; ttl ${command.ttlSeconds}s; ledger ${ledger.kind}`;
  if (http && command.http) {
    const stopped = async (): Promise<void> => {
      await upstream.close();
      await approval?.close().catch(() => {});
      await closeStores();
    };
    try {
      await http.serveHttp(command.http, () => factory(), { ledger: opened, metrics: metrics!, log, served, details, ...(approval ? { approval } : {}) }, stopped);
    } catch (e) {
      // Not serving (the address is taken): end the upstream too, so the process can exit.
      await stopped();
      throw e;
    }
    return -1;
  }
  const handle = serveStdio(factory, { onerror: (error) => log(error.message) });
  const stop = async (): Promise<void> => {
    await handle.close().catch(() => {});
    await upstream.close();
    await approval?.close().catch(() => {});
    await closeStores();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
  process.stdin.once('end', () => void stop());
  log(`serving ${served} over stdio; ${details}; approval ${approval ? `passkey, page on ${approval.origin}` : 'form'}`);
  return -1;
}

/** Whether a URL's hostname is a loopback name or address. */
function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.[0-9]+\.[0-9]+\.[0-9]+$/.test(hostname);
}
