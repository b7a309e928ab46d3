/**
 * `mcp-confirm proxy --http HOST:PORT`: the proxy's client side over Streamable HTTP, with the
 * main server's application ({@link createHttpApp}: Host/Origin checks, RFC 9728 metadata, bearer
 * JWTs verified with {@link createJwtVerifier}, 2025-era sessions bound to their principal,
 * `/healthz` and `/metrics`) and its graceful drain on SIGTERM. Loaded only when `--http` is given.
 *
 * @module
 */
import type { McpServer, OAuthTokenVerifier } from '@modelcontextprotocol/server';
import { UsageError } from '../cli/common.js';
import type { HttpSpec } from '../cli/httpArgs.js';
import { createHttpApp, MCP_PATH, type HttpApp } from '../http/app.js';
import { allowedHostnames } from '../http/bind.js';
import { createJwtVerifier, jwtPrincipalOf } from '../http/jwtAuth.js';
import { listenHttp, type Listening } from '../http/listen.js';
import { healthResponse, metricsResponse, type ServerMetrics } from '../http/metrics.js';
import type { Ledger } from '../ledger/ledger.js';

/** What {@link serveProxyHttp} reports and serves besides MCP. */
export interface ProxyHttpOps {
  /** The ledger `/healthz` pings (the one opened, not its metrics wrapper). */
  ledger: Ledger;
  /** What `/metrics` exposes; feed it the decision events and wrap the ledger with it before building the proxy. */
  metrics: ServerMetrics;
  /** Diagnostics (stderr). */
  log: (line: string) => void;
  /** The upstream's rendered name and version, for the serving line. */
  served: string;
  /** The rest of the serving line (upstream, policy, audience, TTL, ledger). */
  summary: string;
}

/**
 * Listens and serves until SIGTERM/SIGINT, then drains in-flight requests for up to
 * `spec.drainMs`, calls `onStopped` and exits 0. The serving line on stderr reads
 * `serving NAME VERSION over Streamable HTTP at http://HOST:PORT/mcp; resource URL; auth …; SUMMARY`.
 *
 * @param factory - builds one proxy server (per 2026-07-28 request, per 2025-era session).
 * @param onStopped - closes the upstream, the audit trail and the ledger; awaited before exit.
 * @throws {UsageError} when the address cannot be bound or the resource host is not allowed.
 */
export async function serveProxyHttp(spec: HttpSpec, factory: () => McpServer, ops: ProxyHttpOps, onStopped: () => Promise<void>): Promise<Listening> {
  let app: HttpApp | undefined;
  const onerror = (e: Error): void => ops.log(e.message);
  // The app is built once the real port is known (port 0), so the default resource names it.
  const late = { fetch: (request: Request) => app!.fetch(request), close: () => app!.close() };
  let listening: Listening;
  try {
    listening = await listenHttp(late as HttpApp, spec.bind.host, spec.bind.port, onerror);
  } catch (e) {
    throw new UsageError(`--http ${spec.bind.urlHost}:${spec.bind.port}: cannot listen (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  const port = listening.address.port;
  const resource = spec.resource ?? new URL(`http://${spec.bind.urlHost}:${port}${MCP_PATH}`);
  try {
    let verifier: OAuthTokenVerifier | undefined;
    if (spec.auth) verifier = await createJwtVerifier({ issuer: spec.auth.issuer, jwks: spec.auth.jwks, resource });
    app = createHttpApp({
      factory,
      resourceUrl: resource,
      allowedHostnames: allowedHostnames(spec.bind, resource, spec.allowedHosts),
      ...(verifier && spec.auth ? { auth: { verifier, issuer: spec.auth.issuer } } : {}),
      principalOf: jwtPrincipalOf,
      // Operations: no token needed (they reveal no arguments or principals); Host/Origin still apply.
      routes: (request, url) => {
        if (url.pathname !== '/healthz' && url.pathname !== '/metrics') return undefined;
        if (request.method !== 'GET' && request.method !== 'HEAD') return new Response(null, { status: 405, headers: { Allow: 'GET, HEAD' } });
        return url.pathname === '/healthz' ? healthResponse(ops.ledger) : metricsResponse(ops.metrics);
      },
      onerror,
    });
    const built = app;
    ops.metrics.legacySessions = () => built.legacySessions;
  } catch (e) {
    await listening.close(0);
    throw new UsageError(e instanceof TypeError ? e.message : String(e));
  }
  if (!spec.auth) ops.log('warning: no --auth-issuer/--auth-jwks: every caller is the same principal "local" (loopback only)');
  const stop = async (signal: string): Promise<void> => {
    ops.log(`${signal}: no longer accepting; draining in-flight requests (up to ${spec.drainMs / 1000}s)`);
    const drained = await listening.close(spec.drainMs);
    if (!drained) ops.log('drain deadline reached; remaining requests were cut off');
    await onStopped().catch((e: unknown) => ops.log(`closing failed: ${(e as Error).message}`));
    ops.log('stopped');
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
  ops.log(
    `serving ${ops.served} over Streamable HTTP at http://${spec.bind.urlHost}:${port}${MCP_PATH}; resource ${resource.href}; auth ${spec.auth ? `issuer ${JSON.stringify(spec.auth.issuer)}` : 'none'}; ${ops.summary}`,
  );
  return listening;
}
