/**
 * The proxy's upstream: one MCP server spawned over stdio and driven by the SDK v2 `Client`.
 *
 * The v2 `Client` negotiates whichever era the upstream speaks (a 2025-era upstream such as
 * `@modelcontextprotocol/server-filesystem` answers `initialize` with 2025-11-25). The proxy
 * declares no client capabilities toward the upstream (no elicitation, sampling or roots): an
 * upstream's own `elicitation/create` or `sampling/createMessage` request is refused with a
 * JSON-RPC error, and its own `input_required` result with `ERR_CONFIRM_UPSTREAM_INPUT`, so no
 * upstream prompt can pose as the proxy's question.
 *
 * The upstream is never restarted: once its process exits, every call answers
 * `ERR_CONFIRM_UPSTREAM_DOWN`. A call in flight when it exits answers
 * `ERR_CONFIRM_UPSTREAM_FAILED`; a call past the deadline is cancelled and answers
 * `ERR_CONFIRM_UPSTREAM_TIMEOUT`. No call is ever retried.
 *
 * @module
 */
import type { ChildProcess } from 'node:child_process';
import {
  Client,
  ProtocolError,
  ProtocolErrorCode,
  SdkError,
  SdkErrorCode,
  type CallToolResult,
  type InputRequiredResult,
  type Tool,
} from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import {
  ConfirmUpstreamDownError,
  ConfirmUpstreamFailedError,
  ConfirmUpstreamInputError,
  ConfirmUpstreamTimeoutError,
} from '../errors.js';
import { canonicalDigest } from '../state/digest.js';

/** Options of {@link Upstream.spawn}. */
export interface UpstreamOptions {
  /** The command and its arguments, e.g. `['npx', '-y', '@modelcontextprotocol/server-filesystem', '/home/me']`. */
  command: readonly string[];
  /** Deadline of one upstream request, in milliseconds (the handshake gets at least {@link HANDSHAKE_TIMEOUT_MS}). Defaults to 120,000. */
  callTimeoutMs?: number;
  /** Environment of the upstream process. Defaults to this process's environment. */
  env?: Record<string, string>;
  /** Diagnostics (stderr). */
  log?: (line: string) => void;
  /** The proxy's own name and version, announced to the upstream. */
  clientInfo?: { name: string; version: string };
}

/** The upstream's identity as the state binds it. */
export interface UpstreamIdentity {
  /** `serverInfo.name` as the upstream announced it. */
  readonly name: string;
  /** `serverInfo.version` as the upstream announced it. */
  readonly version: string;
  /** The command the proxy started it with. */
  readonly command: readonly string[];
}

/** The error message an upstream gets for its own `elicitation/create` or `sampling/createMessage` request (JSON-RPC -32601). */
export const UPSTREAM_INPUT_REFUSAL =
  'mcp-confirm proxy: upstream elicitation and sampling requests are refused; only the proxy asks the human, so no upstream prompt can pose as its confirmation';

/** Least deadline of the upstream's start-up handshake (a cold `npx -y` can take a while): one minute. */
export const HANDSHAKE_TIMEOUT_MS = 60_000;

/** Default deadline of one upstream request: two minutes. */
export const DEFAULT_CALL_TIMEOUT_MS = 120_000;

/** The parts of a tool's definition its digest covers: what the human's decision depends on. */
export function definitionDigest(tool: Tool): string {
  return canonicalDigest(
    { inputSchema: tool.inputSchema ?? null, annotations: tool.annotations ?? null, description: tool.description ?? null },
    'tool definition',
  );
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
  /** SHA-256 (RFC 8785) of {@link identity}, for the state. */
  readonly identityDigest: string;
  readonly callTimeoutMs: number;
  private downReason: string | undefined;
  private readonly downListeners: Array<(reason: string) => void> = [];

  private constructor(client: Client, identity: UpstreamIdentity, callTimeoutMs: number) {
    this.client = client;
    this.identity = identity;
    this.identityDigest = canonicalDigest({ name: identity.name, version: identity.version, command: identity.command }, 'upstream identity');
    this.callTimeoutMs = callTimeoutMs;
  }

  /**
   * Spawns the upstream and completes the handshake.
   *
   * @throws {Error} when the command cannot be started or the handshake fails (the message says which).
   */
  static async spawn(options: UpstreamOptions): Promise<Upstream> {
    const [command, ...args] = options.command;
    if (command === undefined || command === '') throw new Error('no upstream command given (after --)');
    const callTimeoutMs = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    const log = options.log ?? (() => {});
    const client = new Client(options.clientInfo ?? { name: 'mcp-confirm-proxy', version: '0.1.0' }, {
      capabilities: {},
      // An upstream's own input_required comes back as a result, never fulfilled here.
      inputRequired: { autoFulfill: false },
    });
    // The upstream's own requests for input are refused with a sentence saying why (not a bare -32601).
    // No capability is declared, so the SDK accepts no handler for them: the fallback answers every
    // request the proxy does not handle (elicitation, sampling, roots) with the refusal.
    client.fallbackRequestHandler = async (request) => {
      throw new ProtocolError(
        ProtocolErrorCode.MethodNotFound,
        request.method === 'elicitation/create' || request.method === 'sampling/createMessage'
          ? UPSTREAM_INPUT_REFUSAL
          : `mcp-confirm proxy: ${request.method} is not relayed to the client`,
      );
    };
    const transport = new StdioClientTransport({ command, args, env: options.env ?? processEnv(), stderr: 'inherit' });
    let exitDetail: string | undefined;
    let upstream: Upstream | undefined;
    const markDown = (reason: string): void => {
      if (upstream) upstream.markDown(reason);
    };
    client.onclose = () => markDown(exitDetail ?? 'its connection closed');
    client.onerror = (e) => log(`upstream: ${e.message}`);
    try {
      await client.connect(transport, { timeout: Math.max(callTimeoutMs, HANDSHAKE_TIMEOUT_MS) });
    } catch (e) {
      await transport.close().catch(() => {});
      throw new Error(`the upstream server could not be started or did not complete the handshake: ${(e as Error).message}`);
    }
    // The transport keeps the child private; its exit code and signal make the down reason precise.
    const child = (transport as unknown as { _process?: ChildProcess })._process;
    child?.once('exit', (code, signal) => {
      exitDetail = signal ? `it was killed by ${signal}` : `it exited with code ${code ?? '?'}`;
      markDown(exitDetail);
    });
    const info = client.getServerVersion();
    upstream = new Upstream(client, { name: info?.name ?? '', version: info?.version ?? '', command: [...options.command] }, callTimeoutMs);
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
    for (const l of this.downListeners) l(reason);
  }

  /** @throws {ConfirmUpstreamDownError} when the upstream is down. */
  assertUp(): void {
    if (this.downReason !== undefined) throw new ConfirmUpstreamDownError(this.downReason);
  }

  /**
   * Maps a failure of an upstream request: a JSON-RPC error from the upstream is returned as it
   * is (a `ProtocolError`); a closed connection, a timeout or anything else becomes a refusal.
   */
  private failure(e: unknown): unknown {
    if (e instanceof ProtocolError) return e;
    if (e instanceof SdkError && e.code === SdkErrorCode.RequestTimeout) return new ConfirmUpstreamTimeoutError(Math.round(this.callTimeoutMs / 1000));
    if (this.downReason !== undefined) return new ConfirmUpstreamFailedError(this.downReason, { cause: e });
    if (e instanceof SdkError && e.code === SdkErrorCode.ConnectionClosed) return new ConfirmUpstreamFailedError('its connection closed', { cause: e });
    return new ConfirmUpstreamFailedError(e instanceof Error ? e.message : 'unknown error', { cause: e });
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
        const page = await this.client.listTools(cursor === undefined ? {} : { cursor }, { timeout: this.callTimeoutMs, signal });
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor !== undefined);
    } catch (e) {
      throw this.failure(e);
    }
    return tools;
  }

  /**
   * Forwards one `tools/call`, exactly these arguments, once.
   *
   * @returns the upstream's result as it is.
   * @throws {ConfirmUpstreamInputError} `ERR_CONFIRM_UPSTREAM_INPUT` when the upstream answers `input_required`.
   * @throws see {@link listTools}.
   */
  async callTool(
    name: string,
    args: Record<string, unknown> | undefined,
    options: { signal?: AbortSignal; onprogress?: (p: { progress: number; total?: number; message?: string }) => void } = {},
  ): Promise<CallToolResult> {
    this.assertUp();
    let result: CallToolResult | InputRequiredResult;
    try {
      result = (await this.client.request(
        { method: 'tools/call', params: args === undefined ? { name } : { name, arguments: args } } as never,
        { timeout: this.callTimeoutMs, signal: options.signal, onprogress: options.onprogress, allowInputRequired: true } as never,
      )) as CallToolResult | InputRequiredResult;
    } catch (e) {
      throw this.failure(e);
    }
    if ((result as InputRequiredResult).resultType === 'input_required') throw new ConfirmUpstreamInputError();
    return result as CallToolResult;
  }

  /** Ends the upstream: closes stdin and lets the SDK stop the process. */
  async close(): Promise<void> {
    await this.client.close().catch(() => {});
  }
}

export { ProtocolError, ProtocolErrorCode };
