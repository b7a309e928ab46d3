/**
 * The proxy's upstream: one MCP server, spawned over stdio ({@link Upstream.spawn}) or reached over
 * Streamable HTTP ({@link Upstream.connectHttp}), driven by the SDK v2 `Client`.
 *
 * The v2 `Client` negotiates whichever era the upstream speaks (`versionNegotiation: 'auto'`:
 * `server/discover` first, on a short-lived sibling process of the same command over stdio and on
 * the connection itself over HTTP, then the session; a 2025-era upstream such as
 * `@modelcontextprotocol/server-filesystem` answers `initialize` with 2025-11-25). Over HTTP the
 * only credentials sent are the headers the operator configured ({@link HttpUpstreamOptions.headers}):
 * nothing of the proxy's own client (its bearer token above all) is ever forwarded (MCP
 * 2026-07-28, basic/security_best_practices, "Token Passthrough"). Toward the upstream the proxy declares only `roots` (with `listChanged`), answered
 * from the client through {@link Upstream.setRootsSource}; no elicitation or sampling: an
 * upstream's own `elicitation/create` or `sampling/createMessage` request is refused with a
 * JSON-RPC error, and its own `input_required` result with `ERR_CONFIRM_UPSTREAM_INPUT`, so no
 * upstream prompt can pose as the proxy's question.
 *
 * The upstream is never restarted: once its process exits, every call answers
 * `ERR_CONFIRM_UPSTREAM_DOWN`. So does every call after a stdio upstream sent one message larger
 * than the SDK reads (10 MiB: the SDK's transport then ends the connection; the reason names the
 * limit, see {@link tooLargeReason}). A call in flight when it exits answers
 * `ERR_CONFIRM_UPSTREAM_FAILED`; a call past the deadline is cancelled and answers
 * `ERR_CONFIRM_UPSTREAM_TIMEOUT`. No call is ever retried.
 *
 * @module
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  Client,
  ProtocolError,
  ProtocolErrorCode,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  UnauthorizedError,
  type CallToolResult,
  type InputRequiredResult,
  type ListRootsResult,
  type LoggingMessageNotificationParams,
  SERVER_INFO_META_KEY,
  type Tool,
} from '@modelcontextprotocol/client';
import { StreamableHTTPClientTransport, type Transport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import {
  ConfirmUpstreamDownError,
  ConfirmUpstreamFailedError,
  ConfirmUpstreamInputError,
  ConfirmUpstreamTimeoutError,
} from '../errors.js';
import { DEFAULT_UPSTREAM_TIMEOUT_SECONDS, PACKAGE_VERSION } from '../defaults.js';
import { renderValue } from '../prompt/render.js';
import { canonicalDigest } from '../state/digest.js';

/** Options shared by {@link Upstream.spawn} and {@link Upstream.connectHttp}. */
interface CommonUpstreamOptions {
  /** Deadline of one upstream request, in milliseconds (the handshake gets at least {@link HANDSHAKE_TIMEOUT_MS}). Defaults to 120,000. */
  callTimeoutMs?: number;
  /** Diagnostics (stderr). */
  log?: (line: string) => void;
  /** The proxy's own name and version, announced to the upstream. */
  clientInfo?: { name: string; version: string };
  /**
   * Whether the proxy declares `roots` toward the upstream (its `roots/list` requests then relayed
   * through {@link Upstream.setRootsSource}). Defaults to true; false when several clients share the
   * upstream (HTTP), whose roots cannot be told apart.
   */
  roots?: boolean;
  /**
   * The operator's name for the upstream (`--upstream-id`): bound in the state's identity instead
   * of the command, its arguments and working directory (or the URL); the announced name and
   * version and the relayed roots stay bound. Defaults to none (the location is bound).
   */
  id?: string;
}

/** Options of {@link Upstream.spawn}. */
export interface UpstreamOptions extends CommonUpstreamOptions {
  /** The command and its arguments, e.g. `['npx', '-y', '@modelcontextprotocol/server-filesystem', '/home/me']`. */
  command: readonly string[];
  /** Environment of the upstream process (not part of its identity). Defaults to this process's environment. */
  env?: Record<string, string>;
  /** Working directory of the upstream process; its real path is part of the identity. Defaults to this process's. */
  cwd?: string;
}

/** Options of {@link Upstream.connectHttp}. */
export interface HttpUpstreamOptions extends CommonUpstreamOptions {
  /** The upstream's Streamable HTTP endpoint (http or https), e.g. `https://mcp.example.com/mcp`. */
  url: URL;
  /**
   * The headers sent with every request to the upstream (its credentials, e.g. `Authorization`),
   * as configured by the operator; values are secrets, never logged. The transport's own headers
   * (`mcp-session-id`, `mcp-protocol-version`) take precedence over same-named entries.
   */
  headers?: ReadonlyArray<readonly [name: string, value: string]>;
}

/**
 * The upstream's identity as the state binds it: what decides what the upstream acts on, as far as
 * the proxy knows it. Not part of it: the environment (variables, and what `PATH` makes of the
 * command's name), the configured HTTP headers, and anything the upstream reads on its own.
 * With {@link id} the command, arguments and working directory (or the URL) are replaced by it.
 * The roots relayed to the upstream change during the session: they are bound apart
 * ({@link Upstream.rootsDigest}).
 */
export interface UpstreamIdentity {
  /** `serverInfo.name` as the upstream announced it. */
  readonly name: string;
  /** `serverInfo.version` as the upstream announced it. */
  readonly version: string;
  /** The command and arguments the proxy started it with (a stdio upstream; bound unless {@link id} is given). */
  readonly command?: readonly string[];
  /** The real path of its working directory (a stdio upstream; bound unless {@link id} is given). */
  readonly cwd?: string;
  /** Its endpoint URL (an HTTP upstream; bound unless {@link id} is given); the configured headers are not part of it. */
  readonly url?: string;
  /** The operator's name for it (`--upstream-id`), instead of the command, arguments and working directory or the URL. */
  readonly id?: string;
}

/** What {@link Upstream.identityDigest} covers: the announced name and version, and the operator's id or else the location. */
export function identityDigestOf(identity: UpstreamIdentity): string {
  const where =
    identity.id !== undefined
      ? { id: identity.id }
      : identity.url !== undefined
        ? { url: identity.url }
        : { command: identity.command ?? [], cwd: identity.cwd ?? null };
  return canonicalDigest({ name: identity.name, version: identity.version, ...where }, 'upstream identity');
}

/** The roots digest before any were relayed (none, or the client's answer was an error). */
export const NO_ROOTS_RELAYED = 'none';

/**
 * SHA-256 (RFC 8785) of the roots as relayed to the upstream (each root's `uri` and `name`, in
 * their order). Roots without a canonical JSON form (a lone surrogate) get a digest of their own
 * that never matches a later one, so any state asked before them is asked again.
 */
export function rootsDigestOf(roots: ReadonlyArray<{ uri: string; name?: string }>): string {
  try {
    return canonicalDigest(
      roots.map((r) => ({ uri: r.uri, name: r.name ?? null })),
      'roots',
    );
  } catch {
    return `unhashable ${randomUUID()}`;
  }
}

/** The error message an upstream gets for its own `elicitation/create` or `sampling/createMessage` request (JSON-RPC -32601). */
export const UPSTREAM_INPUT_REFUSAL =
  'mcp-confirm proxy: upstream elicitation and sampling requests are refused; only the proxy asks the human, so no upstream prompt can pose as its confirmation';

/** Least deadline of the upstream's start-up handshake (a cold `npx -y` can take a while): one minute. */
export const HANDSHAKE_TIMEOUT_MS = 60_000;

/** Default deadline of one upstream request: two minutes ({@link DEFAULT_UPSTREAM_TIMEOUT_SECONDS}, shared with the CLI). */
export const DEFAULT_CALL_TIMEOUT_MS = DEFAULT_UPSTREAM_TIMEOUT_SECONDS * 1000;

/**
 * The parts of a tool's definition its digest covers: what the human's decision depends on
 * (its title, description, input and output schemas and annotations; not its icons or `_meta`).
 */
export function definitionDigest(tool: Tool): string {
  return canonicalDigest(
    {
      title: tool.title ?? null,
      description: tool.description ?? null,
      inputSchema: tool.inputSchema ?? null,
      outputSchema: tool.outputSchema ?? null,
      annotations: tool.annotations ?? null,
    },
    'tool definition',
  );
}

/** The lists whose `list_changed` notifications the proxy relays. */
export type ListKind = 'tools' | 'resources' | 'prompts';

/** Progress of an upstream request, as `notifications/progress` carries it (without the token). */
export type UpstreamProgress = { progress: number; total?: number; message?: string };

/** Options of one relayed upstream request. */
export interface UpstreamRequestOptions {
  /** The client's cancellation: aborting it cancels the upstream request (`notifications/cancelled`). */
  signal?: AbortSignal;
  /** Called for each of the upstream's progress notifications of this request. */
  onprogress?: (p: UpstreamProgress) => void;
}

/**
 * The child process the SDK's `StdioClientTransport` spawned, for its exit code and signal.
 *
 * The transport's public surface has only `pid` and an `onclose` without the code; owning the
 * spawn instead (a custom stdio transport) would lose the SDK's disposable sibling probe for era
 * negotiation, which runs only on the base `StdioClientTransport` and protects upstreams that exit
 * on an unknown pre-`initialize` request. So this reads the transport's private `_process` field
 * (SDK 2.4.0), checked against the public `pid`; `test/proxy/upstreamChild.test.ts` fails loudly
 * if an SDK upgrade removes or renames it. When absent, the down reason is less precise ("its
 * connection closed"), nothing else changes.
 */
export function childOf(transport: StdioClientTransport): ChildProcess | undefined {
  const child = (transport as unknown as { _process?: unknown })._process;
  if (typeof child !== 'object' || child === null || !('pid' in child) || (child as ChildProcess).pid !== transport.pid)
    return undefined;
  return child as ChildProcess;
}

/**
 * A 2026-era upstream stamps its own `serverInfo` into each result's `_meta`
 * (`io.modelcontextprotocol/serverInfo`); relayed results carry the proxy's instead (the SDK adds it).
 */
function withoutUpstreamInfo<T extends Record<string, unknown>>(result: T): T {
  const meta = result._meta as Record<string, unknown> | undefined;
  if (meta === undefined || !(SERVER_INFO_META_KEY in meta)) return result;
  const { [SERVER_INFO_META_KEY]: _dropped, ...rest } = meta;
  return { ...result, _meta: rest };
}

/** Most graphemes of an upstream failure's text shown in a refusal or a diagnostic (see {@link describeFailure}). */
export const MAX_FAILURE_GRAPHEMES = 200;

/** The error and its causes (`cause`), outermost first, at most 8. */
function causeChain(e: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let c = e; c !== undefined && c !== null && chain.length < 8; c = (c as { cause?: unknown }).cause)
    chain.push(c);
  return chain;
}

/** The HTTP status an error of the SDK's HTTP transport carries (anywhere in the cause chain), if any. */
function httpStatusOf(e: unknown): number | undefined {
  for (const c of causeChain(e)) {
    if (c instanceof UnauthorizedError) return 401;
    if (c instanceof SdkHttpError && typeof c.status === 'number') return c.status;
    const data = c instanceof SdkError ? (c.data as { status?: unknown } | undefined) : undefined;
    if (typeof data?.status === 'number') return data.status;
  }
  return undefined;
}

/**
 * What a refusal or a diagnostic says about a failure of the upstream (or of the connection to it).
 *
 * An HTTP upstream's answer is upstream-controlled and may echo the request, the configured
 * `--upstream-header` credentials included (a gateway in front of it, say), and the SDK puts a
 * non-2xx answer's whole body into its error message. So nothing of an HTTP answer is ever shown:
 * only its status, `HTTP 502` (a 3xx: `HTTP 307, a redirect to another origin, not followed`),
 * when one is known anywhere in the cause chain; else `its answer was not valid JSON` when a
 * `SyntaxError` is in the chain (V8 quotes the start of the text it could not parse); else the
 * error's message, rendered with `renderValue` (one line, escaped, at most
 * {@link MAX_FAILURE_GRAPHEMES} graphemes), as it is for a stdio upstream.
 *
 * @param e - what the SDK threw or reported.
 * @param http - whether the upstream is reached over HTTP.
 */
export function describeFailure(e: unknown, http: boolean): string {
  if (http) {
    const status = httpStatusOf(e);
    if (status !== undefined)
      return status >= 300 && status < 400
        ? `HTTP ${status}, a redirect to another origin, not followed`
        : `HTTP ${status}`;
    if (causeChain(e).some((c) => c instanceof SyntaxError)) return 'its answer was not valid JSON';
  }
  return renderValue(e instanceof Error ? e.message : String(e), { maxGraphemes: MAX_FAILURE_GRAPHEMES });
}

/**
 * The read limit a failure of the SDK's stdio transport names when one message from the upstream
 * was larger than it (`ReadBuffer exceeded maximum size of N bytes`, SDK 2.4.0: 10 MiB by default,
 * `STDIO_DEFAULT_MAX_BUFFER_SIZE`), or undefined for any other failure.
 */
export function readLimitOf(e: unknown): number | undefined {
  const match = e instanceof Error ? /^ReadBuffer exceeded maximum size of ([0-9]+) bytes$/.exec(e.message) : null;
  return match ? Number(match[1]) : undefined;
}

/** The down reason after a message over the stdio read limit of `limit` bytes. */
export function tooLargeReason(limit: number): string {
  const mib = limit % 1_048_576 === 0 ? ` (${limit / 1_048_576} MiB)` : '';
  return `its answer was larger than ${limit} bytes${mib}, the most the MCP SDK reads as one message over stdio, so the SDK ended the connection to it`;
}

/** An upstream URL as diagnostics show it: origin and path only (a query or user info may carry a secret). */
export function shownUrl(url: URL): string {
  return `${url.origin}${url.pathname}`;
}

/** The supervisor's entry point (dist/proxy/supervisor.js), next to this module. */
export const SUPERVISOR_PATH = fileURLToPath(new URL('./supervisor.js', import.meta.url));

/**
 * How a stdio upstream is started: on POSIX, under the supervisor (`node supervisor.js
 * --parent=PID COMMAND ARG…`, PID this process's, see src/proxy/supervisor.ts), which puts it in a process group of its own and ends that
 * group (stdin closed, SIGTERM, SIGKILL, half a second apart) when the proxy ends, however it ends,
 * SIGKILL included, and exits as the upstream did; on Windows, directly.
 *
 * @throws {Error} when the supervisor is missing (the sources run without `npm run build`).
 */
export function supervisedCommand(command: string, args: readonly string[]): { command: string; args: string[] } {
  if (process.platform === 'win32') return { command, args: [...args] };
  if (!existsSync(SUPERVISOR_PATH))
    throw new Error(`the upstream supervisor ${SUPERVISOR_PATH} is missing (run npm run build)`);
  return { command: process.execPath, args: [SUPERVISOR_PATH, `--parent=${process.pid}`, command, ...args] };
}

function processEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (typeof v === 'string') env[k] = v;
  return env;
}

/** A spawned upstream server. */
export class Upstream {
  readonly client: Client;
  readonly identity: UpstreamIdentity;
  /** SHA-256 (RFC 8785) of {@link identity} ({@link identityDigestOf}), for the state. */
  readonly identityDigest: string;
  /** The digest of the roots last relayed to the upstream ({@link rootsDigestOf}), or {@link NO_ROOTS_RELAYED}: bound in the state too. */
  private relayedRoots: string = NO_ROOTS_RELAYED;
  readonly callTimeoutMs: number;
  /** Whether the upstream is reached over HTTP (its answers are then never quoted, see {@link describeFailure}). */
  private readonly http: boolean;
  private downReason: string | undefined;
  private closing = false;
  private readonly downListeners: Array<(reason: string) => void> = [];
  private readonly changeListeners: Array<(kind: ListKind) => void> = [];
  private readonly logListeners: Array<(params: LoggingMessageNotificationParams) => void> = [];
  private rootsSource: ((signal: AbortSignal) => Promise<ListRootsResult>) | undefined;
  private readonly rootsWaiters: Array<() => void> = [];
  /** The `tools/call` messages handed to the transport and not yet written (their `send` not settled). */
  private readonly callsBeingWritten = new Set<Promise<void>>();

  private constructor(
    client: Client,
    identity: UpstreamIdentity,
    callTimeoutMs: number,
    private readonly rootsDeclared: boolean,
  ) {
    this.client = client;
    this.identity = identity;
    this.identityDigest = identityDigestOf(identity);
    this.callTimeoutMs = callTimeoutMs;
    this.http = identity.url !== undefined;
  }

  /**
   * Spawns the upstream and completes the handshake.
   *
   * @throws {Error} when the command cannot be started or the handshake fails (the message says which).
   */
  static async spawn(options: UpstreamOptions): Promise<Upstream> {
    const [command, ...args] = options.command;
    if (command === undefined || command === '') throw new Error('no upstream command given');
    // The working directory it runs in is the one bound (its real path: what `.` means to it).
    let cwd: string;
    try {
      cwd = realpathSync(options.cwd ?? process.cwd());
    } catch (e) {
      throw new Error(
        `the upstream's working directory cannot be resolved (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
      );
    }
    // Under the supervisor (POSIX), which ends the upstream's process group when the proxy ends (see supervisor.ts).
    const supervised = supervisedCommand(command, args);
    const transport = new StdioClientTransport({
      ...supervised,
      cwd,
      env: options.env ?? processEnv(),
      stderr: 'inherit',
    });
    // How the process ended (exit code or signal), recorded from the moment it is spawned: for the reason a
    // failed handshake gives, and for the down reason later (the transport forgets its process once closed).
    let ended: string | undefined;
    let endedNow: () => void = () => {};
    const exited = new Promise<void>((resolve) => (endedNow = resolve));
    const start = transport.start.bind(transport);
    transport.start = async () => {
      try {
        await start();
      } catch (e) {
        endedNow(); // never started: no exit to wait for
        throw e;
      }
      const child = childOf(transport);
      child?.once('exit', (code, signal) => {
        ended = signal ? `it was killed by ${signal}` : `it exited with code ${code ?? '?'}`;
        endedNow();
      });
    };
    /** After a failed handshake: how the upstream process ended (waiting up to 2 s for its exit). */
    const endedHow = async (): Promise<string | undefined> => {
      if (ended === undefined) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(resolve, 2_000)))]);
        clearTimeout(timer);
      }
      return ended;
    };
    const where = { command: [...options.command], cwd, ...(options.id !== undefined ? { id: options.id } : {}) };
    return Upstream.open(
      options,
      transport,
      where,
      'the upstream server could not be started or did not complete the handshake',
      (markDown) => {
        // The exit code and signal make the down reason precise (see childOf for why the private field).
        void exited.then(() => {
          if (ended !== undefined) markDown(ended);
        });
        return () => ended;
      },
      endedHow,
    );
  }

  /**
   * Connects to a Streamable HTTP upstream and completes the handshake. Redirects are followed
   * only within the URL's origin (the SDK's default `redirectPolicy`), so the configured headers
   * never reach another origin.
   *
   * @throws {Error} when the upstream cannot be reached or the handshake fails (the message names
   *   the URL's origin and path, never the headers or the query).
   */
  static async connectHttp(options: HttpUpstreamOptions): Promise<Upstream> {
    const headers = new Headers();
    for (const [name, value] of options.headers ?? []) headers.append(name, value);
    const transport = new StreamableHTTPClientTransport(options.url, { requestInit: { headers } });
    return Upstream.open(
      options,
      transport,
      { url: options.url.href, ...(options.id !== undefined ? { id: options.id } : {}) },
      `the upstream server at ${shownUrl(options.url)} could not be reached or did not complete the handshake`,
    );
  }

  /**
   * Builds the client, connects it over `transport` and reads the upstream's identity.
   *
   * @param watchExit - for a spawned upstream: watches its process and returns the precise down reason once known.
   */
  private static async open(
    options: CommonUpstreamOptions,
    transport: Transport,
    where: { command: string[]; cwd: string; id?: string } | { url: string; id?: string },
    failure: string,
    watchExit?: (markDown: (reason: string) => void) => () => string | undefined,
    endedHow?: () => Promise<string | undefined>,
  ): Promise<Upstream> {
    const callTimeoutMs = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    const log = options.log ?? (() => {});
    let upstream: Upstream | undefined;
    // list_changed: no refresh here (the proxy lists afresh on demand), no debounce (relayed as they come).
    const changed = (kind: ListKind) => ({
      autoRefresh: false,
      debounceMs: 0,
      onChanged: () => upstream?.changed(kind),
    });
    const declareRoots = options.roots ?? true;
    const client = new Client(options.clientInfo ?? { name: 'mcp-confirm-proxy', version: PACKAGE_VERSION }, {
      capabilities: declareRoots ? { roots: { listChanged: true } } : {},
      versionNegotiation: { mode: 'auto' },
      // An upstream's own input_required comes back as a result, never fulfilled here.
      inputRequired: { autoFulfill: false },
      listChanged: { tools: changed('tools'), resources: changed('resources'), prompts: changed('prompts') },
    });
    client.setNotificationHandler('notifications/message', (notification) => {
      for (const l of upstream?.logListeners ?? []) l(notification.params);
    });
    if (declareRoots) {
      client.setRequestHandler('roots/list', async (_request, ctx) => {
        if (upstream === undefined)
          throw new ProtocolError(ProtocolErrorCode.InternalError, 'mcp-confirm proxy: not ready');
        return upstream.roots(ctx.mcpReq.signal);
      });
    }
    // The upstream's own requests for input are refused with a sentence saying why (not a bare -32601).
    // Neither capability is declared, so the SDK accepts no handler for them: the fallback answers every
    // request the proxy does not handle (elicitation, sampling, anything else) with the refusal.
    client.fallbackRequestHandler = async (request) => {
      throw new ProtocolError(
        ProtocolErrorCode.MethodNotFound,
        request.method === 'elicitation/create' || request.method === 'sampling/createMessage'
          ? UPSTREAM_INPUT_REFUSAL
          : `mcp-confirm proxy: ${request.method} is not relayed to the client`,
      );
    };
    const markDown = (reason: string): void => {
      if (upstream) upstream.markDown(reason);
    };
    let exitDetail: () => string | undefined = () => undefined;
    client.onclose = () => markDown(exitDetail() ?? 'its connection closed');
    // A shutdown the proxy asked for aborts the open streams: not worth a line. Before the handshake
    // completed, a failure is reported once, by the error below (a write to an upstream that already
    // exited fails with EPIPE: the exit is the news).
    let connected = false;
    client.onerror = (e) => {
      // A message over the stdio read limit: the SDK's transport ends the connection right after this
      // call; the down reason (and the refusal of the call in flight) names the limit, not the exit.
      const limit = readLimitOf(e);
      if (limit !== undefined) {
        const reason = tooLargeReason(limit);
        if (connected && !upstream?.closing) log(`upstream: ${reason}`);
        markDown(reason);
        return;
      }
      if (connected && !upstream?.closing) log(`upstream: ${describeFailure(e, 'url' in where)}`);
    };
    // Which tools/call messages are still being written (see roots()): tracked from the moment the
    // SDK hands them to the transport, which it does synchronously within client.request().
    const send = transport.send.bind(transport);
    transport.send = (message, sendOptions) => {
      const sent = send(message, sendOptions);
      if (upstream !== undefined && (message as { method?: unknown }).method === 'tools/call') {
        const pending = upstream.callsBeingWritten;
        const settled = sent.then(
          () => {},
          () => {},
        );
        pending.add(settled);
        void settled.then(() => pending.delete(settled));
      }
      return sent;
    };
    try {
      await client.connect(transport, { timeout: Math.max(callTimeoutMs, HANDSHAKE_TIMEOUT_MS) });
    } catch (e) {
      const ended = await endedHow?.().catch(() => undefined);
      await transport.close().catch(() => {});
      throw new Error(
        `${failure}: ${ended !== undefined ? `${ended} (${describeFailure(e, 'url' in where)})` : describeFailure(e, 'url' in where)}`,
      );
    }
    connected = true;
    if (watchExit) exitDetail = watchExit(markDown);
    const info = client.getServerVersion();
    upstream = new Upstream(
      client,
      { name: info?.name ?? '', version: info?.version ?? '', ...where },
      callTimeoutMs,
      declareRoots,
    );
    return upstream;
  }

  /** Why the upstream is down, or undefined while it runs. */
  get down(): string | undefined {
    return this.downReason;
  }

  /** Calls `listener` once when the upstream goes down. */
  onDown(listener: (reason: string) => void): void {
    this.downListeners.push(listener);
  }

  private markDown(reason: string): void {
    if (this.downReason !== undefined) return;
    this.downReason = reason;
    // A shutdown the proxy asked for ({@link close}) is no failure to report.
    if (this.closing) return;
    for (const l of this.downListeners) l(reason);
  }

  /** Calls `listener` with each of the upstream's `notifications/message` params. */
  onLog(listener: (params: LoggingMessageNotificationParams) => void): void {
    this.logListeners.push(listener);
  }

  /** Calls `listener` on each of the upstream's `notifications/{tools,resources,prompts}/list_changed`. */
  onListChanged(listener: (kind: ListKind) => void): void {
    this.changeListeners.push(listener);
  }

  private changed(kind: ListKind): void {
    for (const l of this.changeListeners) l(kind);
  }

  /**
   * Sets where the upstream's `roots/list` requests are answered (the client). A request that
   * arrives before it is set waits for it (the upstream may ask right after its handshake, before
   * the client has connected).
   */
  setRootsSource(source: (signal: AbortSignal) => Promise<ListRootsResult>): void {
    this.rootsSource = source;
    for (const w of this.rootsWaiters.splice(0)) w();
  }

  private async roots(signal: AbortSignal): Promise<ListRootsResult> {
    while (this.rootsSource === undefined) {
      if (signal.aborted)
        throw new ProtocolError(
          ProtocolErrorCode.InternalError,
          'mcp-confirm proxy: roots/list cancelled before a client connected',
        );
      await new Promise<void>((resolve) => {
        this.rootsWaiters.push(resolve);
        signal.addEventListener('abort', () => resolve(), { once: true });
      });
    }
    const result = await this.rootsSource(signal);
    // Recorded before the answer goes back: once the upstream holds these roots, the digest says so.
    this.relayedRoots = rootsDigestOf(result.roots);
    // A call checked against the previous digest may still be on its way out (an HTTP upstream's
    // POST): the upstream gets these roots only once every call being written now was written.
    const writing = [...this.callsBeingWritten];
    if (writing.length > 0) await Promise.allSettled(writing);
    return result;
  }

  /**
   * The digest of the roots last relayed to the upstream ({@link rootsDigestOf}), or
   * {@link NO_ROOTS_RELAYED}; a failed `roots/list` leaves it as it was (the upstream keeps the
   * roots it had).
   */
  get rootsDigest(): string {
    return this.relayedRoots;
  }

  /** Tells the upstream the client's roots changed (`notifications/roots/list_changed`). */
  async rootsChanged(): Promise<void> {
    if (this.downReason !== undefined || !this.rootsDeclared) return;
    await this.client.sendRootsListChanged();
  }

  /** @throws {ConfirmUpstreamDownError} when the upstream is down. */
  assertUp(): void {
    if (this.downReason !== undefined) throw new ConfirmUpstreamDownError(this.downReason);
  }

  /**
   * Maps a failure of an upstream request: a JSON-RPC error from the upstream is returned as it
   * is (a `ProtocolError`); a closed connection, a timeout or anything else becomes a refusal,
   * described by {@link describeFailure} (never an HTTP answer's body).
   *
   * @param request - the request that failed: only a `tools/call` says that whether the upstream acted is unknown.
   */
  private failure(e: unknown, request: string): unknown {
    if (e instanceof ProtocolError) return e;
    if (e instanceof SdkError && e.code === SdkErrorCode.RequestTimeout)
      return new ConfirmUpstreamTimeoutError(Math.round(this.callTimeoutMs / 1000), { request });
    if (this.downReason !== undefined) return new ConfirmUpstreamFailedError(this.downReason, { cause: e, request });
    if (e instanceof SdkError && e.code === SdkErrorCode.ConnectionClosed)
      return new ConfirmUpstreamFailedError('its connection closed', { cause: e, request });
    return new ConfirmUpstreamFailedError(describeFailure(e, this.http), { cause: e, request });
  }

  /**
   * The upstream's whole tool list (every page).
   *
   * @throws {ConfirmUpstreamDownError} `ERR_CONFIRM_UPSTREAM_DOWN`, {@link ConfirmUpstreamFailedError},
   *   {@link ConfirmUpstreamTimeoutError}, or the upstream's `ProtocolError`.
   */
  async listTools(signal?: AbortSignal): Promise<Tool[]> {
    this.assertUp();
    const tools: Tool[] = [];
    let cursor: string | undefined;
    try {
      do {
        // Never from the SDK's response cache (an upstream's ttlMs would let it serve an old list).
        const page = await this.client.listTools(cursor === undefined ? {} : { cursor }, {
          timeout: this.callTimeoutMs,
          signal,
          cacheMode: 'bypass',
        });
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor !== undefined);
    } catch (e) {
      throw this.failure(e, 'tools/list');
    }
    return tools;
  }

  /**
   * Relays one request (resources, prompts, completions, logging) to the upstream as it is,
   * with the client's cancellation and progress.
   *
   * @returns the upstream's result as it is.
   * @throws {ConfirmUpstreamInputError} `ERR_CONFIRM_UPSTREAM_INPUT` when a 2026-era upstream answers `input_required`.
   * @throws see {@link listTools}.
   */
  async relay(
    method: string,
    params: Record<string, unknown> | undefined,
    options: UpstreamRequestOptions = {},
  ): Promise<Record<string, unknown>> {
    this.assertUp();
    let result: Record<string, unknown>;
    try {
      result = (await this.client.request(
        { method, ...(params === undefined ? {} : { params }) } as never,
        {
          timeout: this.callTimeoutMs,
          signal: options.signal,
          onprogress: options.onprogress,
          allowInputRequired: true,
        } as never,
      )) as Record<string, unknown>;
    } catch (e) {
      throw this.failure(e, method);
    }
    if (result.resultType === 'input_required') throw new ConfirmUpstreamInputError();
    return withoutUpstreamInfo(result);
  }

  /**
   * Forwards one `tools/call`, exactly these arguments, once.
   *
   * @param stillBound - run right before the call is written, with no await in between: it throws
   *   (e.g. the guard's `ChangedBeforeActingError`) when what the call is bound to no longer holds,
   *   and then nothing is sent.
   * @returns the upstream's result as it is.
   * @throws {ConfirmUpstreamInputError} `ERR_CONFIRM_UPSTREAM_INPUT` when the upstream answers `input_required`.
   * @throws see {@link listTools}.
   */
  async callTool(
    name: string,
    args: Record<string, unknown> | undefined,
    options: UpstreamRequestOptions = {},
    stillBound?: () => void,
  ): Promise<CallToolResult> {
    this.assertUp();
    // The last check, and the write, in one synchronous run: the SDK's request() hands the message to
    // the transport before it returns (SDK 2.4.0, Protocol._requestWithSchemaViaCodec calls
    // transport.send inside the Promise executor; the stdio transport writes to the pipe there), so
    // nothing (a roots answer above all) can reach the upstream between this check and this call.
    stillBound?.();
    let result: CallToolResult | InputRequiredResult;
    try {
      result = (await this.client.request(
        { method: 'tools/call', params: args === undefined ? { name } : { name, arguments: args } } as never,
        {
          timeout: this.callTimeoutMs,
          signal: options.signal,
          onprogress: options.onprogress,
          allowInputRequired: true,
        } as never,
      )) as CallToolResult | InputRequiredResult;
    } catch (e) {
      throw this.failure(e, 'tools/call');
    }
    if ((result as InputRequiredResult).resultType === 'input_required') throw new ConfirmUpstreamInputError();
    return withoutUpstreamInfo(result as CallToolResult);
  }

  /** Ends the upstream: closes stdin and lets the SDK stop the process (its exit is then not reported as down). */
  async close(): Promise<void> {
    this.closing = true;
    await this.client.close().catch(() => {});
  }
}

export { ProtocolError, ProtocolErrorCode };
