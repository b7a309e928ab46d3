/**
 * Sessionful serving of 2025-era (2025-11-25 and earlier) clients over
 * Streamable HTTP, next to the stateless 2026-07-28 handler.
 *
 * A 2025 client declares its capabilities once, in `initialize`, and is asked
 * through a server-to-client `elicitation/create` pushed on the response
 * stream of its `tools/call`. Both need one server instance that lives for the
 * session: each session is one `McpServer` from the factory connected to one
 * `WebStandardStreamableHTTPServerTransport` (the SDK's session support,
 * `Mcp-Session-Id`, spec 2025-11-25 basic/transports "Session Management").
 * The SDK's legacy shim on that connection turns the tool's `input_required`
 * into the pushed `elicitation/create` and re-enters the tool with the answer.
 *
 * A session is bound to the principal that opened it: a request naming it
 * from another principal is refused with 403 (its own token is still
 * verified first). Sessions are bounded in number ({@link LegacySessionOptions.maxSessions})
 * and closed after {@link LegacySessionOptions.idleTimeoutMs} without a request.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import {
  isInitializeRequest,
  WebStandardStreamableHTTPServerTransport,
  type AuthInfo,
  type McpServer,
} from '@modelcontextprotocol/server';

/** Options of {@link LegacySessions}. */
export interface LegacySessionOptions {
  /** Builds one server per session (the same factory as the modern leg). */
  factory: () => McpServer;
  /** The principal of a request, compared when a session is used again. */
  principalOf: (authInfo: AuthInfo | undefined) => string;
  /** Open sessions at most; a further `initialize` gets 503. Defaults to 1,000. */
  maxSessions?: number;
  /** A session without a request for this long is closed, in milliseconds. Defaults to 1,800,000 (30 minutes). */
  idleTimeoutMs?: number;
  /** Out-of-band errors (reporting only). */
  onerror?: (error: Error) => void;
}

interface Session {
  transport: WebStandardStreamableHTTPServerTransport;
  server: McpServer;
  principal: string;
  timer: NodeJS.Timeout | undefined;
}

function jsonRpcError(status: number, code: number, message: string): Response {
  return Response.json({ jsonrpc: '2.0', error: { code, message }, id: null }, { status });
}

/** The sessions of 2025-era clients on one HTTP server. */
export class LegacySessions {
  readonly #sessions = new Map<string, Session>();
  readonly #opening = new Set<Session>();
  readonly #options: Required<Omit<LegacySessionOptions, 'onerror'>> & Pick<LegacySessionOptions, 'onerror'>;
  #closed = false;

  constructor(options: LegacySessionOptions) {
    const maxSessions = options.maxSessions ?? 1_000;
    const idleTimeoutMs = options.idleTimeoutMs ?? 1_800_000;
    if (!Number.isSafeInteger(maxSessions) || maxSessions < 1)
      throw new RangeError(`maxSessions must be a positive whole number, got ${String(maxSessions)}`);
    if (!Number.isSafeInteger(idleTimeoutMs) || idleTimeoutMs < 1)
      throw new RangeError(
        `idleTimeoutMs must be a positive whole number of milliseconds, got ${String(idleTimeoutMs)}`,
      );
    this.#options = { ...options, maxSessions, idleTimeoutMs };
  }

  /** Open sessions now. */
  get size(): number {
    return this.#sessions.size;
  }

  /**
   * Serves one 2025-era request (as classified by the SDK's `isLegacyRequest`).
   * `authInfo` is the request's own verified token, passed through to the tool.
   */
  async handle(request: Request, authInfo: AuthInfo | undefined): Promise<Response> {
    if (this.#closed) return jsonRpcError(503, -32000, 'Server is shutting down');
    const principal = this.#options.principalOf(authInfo);
    const sessionId = request.headers.get('mcp-session-id');
    const extra = authInfo ? { authInfo } : {};
    if (sessionId !== null) {
      const session = this.#sessions.get(sessionId);
      // 404 tells a 2025 client to start a new session (spec 2025-11-25, Session Management).
      if (!session) return jsonRpcError(404, -32001, 'Session not found');
      if (session.principal !== principal)
        return jsonRpcError(403, -32000, 'This session belongs to another principal');
      this.#touch(sessionId, session);
      return session.transport.handleRequest(request, extra);
    }
    let body: unknown;
    if (request.method === 'POST') {
      try {
        body = await request.clone().json();
      } catch {
        body = undefined;
      }
    }
    const initialize = Array.isArray(body) ? body.some((m) => isInitializeRequest(m)) : isInitializeRequest(body);
    if (!initialize)
      return jsonRpcError(400, -32000, 'Bad Request: Mcp-Session-Id header is required (send initialize first)');
    if (this.#sessions.size + this.#opening.size >= this.#options.maxSessions) {
      return jsonRpcError(503, -32000, 'Too many open sessions; try again later');
    }
    const server = this.#options.factory();
    const session: Session = { server, principal, timer: undefined, transport: undefined as never };
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        this.#opening.delete(session);
        this.#sessions.set(id, session);
        this.#touch(id, session);
      },
      onsessionclosed: (id) => void this.#drop(id),
    });
    session.transport = transport;
    transport.onclose = () => {
      const id = transport.sessionId;
      if (id !== undefined) void this.#drop(id);
    };
    this.#opening.add(session);
    try {
      await server.connect(transport);
      return await transport.handleRequest(request, { parsedBody: body, ...extra });
    } finally {
      // An initialize that failed never got an id: forget it.
      if (transport.sessionId === undefined) {
        this.#opening.delete(session);
        await server.close().catch(() => {});
      }
    }
  }

  #touch(id: string, session: Session): void {
    if (session.timer) clearTimeout(session.timer);
    session.timer = setTimeout(() => void this.#drop(id), this.#options.idleTimeoutMs);
    session.timer.unref();
  }

  async #drop(id: string): Promise<void> {
    const session = this.#sessions.get(id);
    if (!session) return;
    this.#sessions.delete(id);
    if (session.timer) clearTimeout(session.timer);
    try {
      await session.server.close();
    } catch (e) {
      this.#options.onerror?.(e instanceof Error ? e : new Error(String(e)));
    }
  }

  /** Closes every session (their open streams end) and refuses new ones. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#sessions.keys()].map((id) => this.#drop(id)));
  }
}
