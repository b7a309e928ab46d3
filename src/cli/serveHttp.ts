/**
 * `mcp-confirm --http HOST:PORT` and `mcp-confirm proxy --http HOST:PORT`: serving over Streamable
 * HTTP (the listener and its routes; the runtime, `runtime.ts`, stops and drains it). Loaded with a
 * dynamic `import()` only when `--http` is given, so stdio start-up never
 * loads the HTTP, Node-adapter or token-verification modules.
 *
 * @module
 */
import type { McpServer, OAuthTokenVerifier } from '@modelcontextprotocol/server';
import { createHttpApp, MCP_PATH, type HttpApp } from '../http/app.js';
import { allowedHostnames } from '../http/bind.js';
import { createJwtVerifier, jwtPrincipal, jwtPrincipalOf, tokenRefusalLog } from '../http/jwtAuth.js';
import { listenHttp, type Listening } from '../http/listen.js';
import { healthResponse, metricsResponse, ServerMetrics } from '../http/metrics.js';
import type { Ledger } from '../store/ledger.js';
import type { HttpSpec } from './httpArgs.js';
import type { PasskeyApproval } from '../approval/passkey.js';
import { asUsageError, notifyWords, toUsageError, UsageError } from './common.js';

export { jwtPrincipal as principal };

/** The metrics of this server: feed it the decision events and wrap the ledger with it before building the server. */
export function createMetrics(): ServerMetrics {
  return new ServerMetrics();
}

/**
 * Checks the JWK set before anything else starts (a usage error if it is
 * unreadable or holds a symmetric or private key). The verifier itself is
 * built once the resource URL is known (after listening, for port 0).
 *
 * @throws {UsageError} naming the flag.
 */
export async function checkHttpAuth(spec: HttpSpec): Promise<void> {
  if (!spec.auth) return;
  try {
    await createJwtVerifier({
      issuer: spec.auth.issuer,
      jwks: spec.auth.jwks,
      resource: spec.resource ?? new URL(`http://${spec.bind.urlHost}/`),
    });
  } catch (e) {
    throw toUsageError(e);
  }
}

/** What {@link serveHttp} serves besides MCP, and how it reports. */
export interface HttpServeOptions {
  /** The ledger `/healthz` pings (the one opened, not its metrics wrapper). */
  ledger: Ledger;
  /** What `/metrics` exposes; feed it the decision events and wrap the ledger with it before building the server. */
  metrics: ServerMetrics;
  /** `--approval passkey` behind `--public-url`: its page is mounted on this listener, before the token check. */
  approval?: PasskeyApproval;
  /** What the serving line names: `delete_file`, or the proxy's upstream name and version. */
  served: string;
  /** More of the serving line, between the auth and the approval (the proxy's upstream, policy, …). */
  details?: string;
  /** Diagnostics (stderr), one line each. */
  log: (line: string) => void;
}

/**
 * Listens on `spec.bind`, serves MCP at `/mcp` with the main application ({@link createHttpApp}:
 * Host/Origin checks, RFC 9728 metadata, bearer JWTs, 2025-era sessions bound to their principal),
 * the approval page (`/approve/…`, `/assets/…`, no token) and `/healthz`, `/metrics` (no token), and
 * writes the serving line (see docs/http.md). One implementation for
 * `mcp-confirm --http` and `mcp-confirm proxy --http`; the runtime (`runtime.ts`) runs it until
 * stopped and drains it. The serving line on stderr reads
 * `serving SERVED over Streamable HTTP at http://HOST:PORT/mcp; resource URL; auth …; [DETAILS; ]approval …`.
 *
 * @param factory - builds one server (per 2026-07-28 request, per 2025-era session).
 * @returns the listener (its `close(drainMs)` drains in-flight requests).
 * @throws {UsageError} when the address cannot be bound or the resource host is not allowed.
 */
export async function serveHttp(spec: HttpSpec, factory: () => McpServer, ops: HttpServeOptions): Promise<Listening> {
  const { log } = ops;
  let app: HttpApp | undefined;
  const onerror = (e: Error): void => log(e.message);
  // The app is built once the real port is known (port 0), so the default resource names it.
  const late = { fetch: (request: Request) => app!.fetch(request), close: () => app!.close() };
  let listening: Listening;
  try {
    listening = await listenHttp(late as HttpApp, spec.bind.host, spec.bind.port, onerror);
  } catch (e) {
    throw new UsageError(
      `--http ${spec.bind.urlHost}:${spec.bind.port}: cannot listen (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
    );
  }
  const port = listening.address.port;
  const resource = spec.resource ?? new URL(`http://${spec.bind.urlHost}:${port}${MCP_PATH}`);
  try {
    let verifier: OAuthTokenVerifier | undefined;
    // Each refused token: one line on stderr saying why (rate-limited per reason), never the token.
    if (spec.auth)
      verifier = await createJwtVerifier({
        issuer: spec.auth.issuer,
        jwks: spec.auth.jwks,
        resource,
        onRefused: tokenRefusalLog({ log }),
      });
    app = createHttpApp({
      factory,
      resourceUrl: resource,
      allowedHostnames: allowedHostnames(spec.bind, resource, spec.allowedHosts),
      ...(verifier && spec.auth ? { auth: { verifier, issuer: spec.auth.issuer } } : {}),
      principalOf: jwtPrincipalOf,
      routes: (request, url) => {
        // The approval page (--approval passkey): no bearer token (a browser opening the link has none; the
        // passkey assertion is the proof, and the id alone lets one see the question and deny, never approve).
        // Host/Origin are checked by the app first, then by the page itself (its host name; POSTs' exact Origin).
        if (ops.approval?.servesPath(url.pathname)) return ops.approval.fetch(request);
        // Operations: no token needed (they reveal no arguments or principals); Host/Origin still apply.
        if (url.pathname !== '/healthz' && url.pathname !== '/metrics') return undefined;
        if (request.method !== 'GET' && request.method !== 'HEAD')
          return new Response(null, { status: 405, headers: { Allow: 'GET, HEAD' } });
        return url.pathname === '/healthz' ? healthResponse(ops.ledger) : metricsResponse(ops.metrics);
      },
      onerror,
    });
    const built = app;
    ops.metrics.legacySessions = () => built.legacySessions;
  } catch (e) {
    await listening.close(0);
    // The JWK set refused (a ConfigError) in the command line's wording; anything else as before.
    const usage = asUsageError(e);
    throw usage instanceof UsageError ? usage : new UsageError(e instanceof TypeError ? e.message : String(e));
  }
  if (!spec.auth)
    log('warning: no --auth-issuer/--auth-jwks: every caller is the same principal "local" (loopback only)');
  const approval = ops.approval
    ? `passkey, page at ${ops.approval.origin}/approve/… (RP ID ${ops.approval.rpId})${notifyWords(ops.approval)}`
    : 'form';
  log(
    `serving ${ops.served} over Streamable HTTP at http://${spec.bind.urlHost}:${port}${MCP_PATH}; resource ${resource.href}; auth ${spec.auth ? `issuer ${JSON.stringify(spec.auth.issuer)}` : 'none'}; ${ops.details !== undefined ? `${ops.details}; ` : ''}approval ${approval}`,
  );
  return listening;
}
