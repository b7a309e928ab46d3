/**
 * `mcp-confirm --http HOST:PORT`: the demo server over Streamable HTTP.
 * Loaded with a dynamic `import()` only when `--http` is given, so stdio
 * start-up never loads the HTTP, Node-adapter or token-verification modules.
 *
 * @module
 */
import type { McpServer, OAuthTokenVerifier } from '@modelcontextprotocol/server';
import { createHttpApp, MCP_PATH } from '../http/app.js';
import { allowedHostnames } from '../http/bind.js';
import { createJwtVerifier, jwtPrincipal, jwtPrincipalOf } from '../http/jwtAuth.js';
import { listenHttp, type Listening } from '../http/listen.js';
import { healthResponse, metricsResponse, ServerMetrics } from '../http/metrics.js';
import type { Ledger } from '../ledger/ledger.js';
import type { HttpSpec } from './httpArgs.js';
import type { PasskeyApproval } from '../approval/passkey.js';
import { UsageError } from './args.js';

export { jwtPrincipal as principal };

/** The metrics of this server: feed it the decision events and wrap the ledger with it before building the server. */
export function createMetrics(): ServerMetrics {
  return new ServerMetrics();
}

function log(line: string): void {
  process.stderr.write(`mcp-confirm: ${line}\n`);
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
    await createJwtVerifier({ issuer: spec.auth.issuer, jwks: spec.auth.jwks, resource: spec.resource ?? new URL(`http://${spec.bind.urlHost}/`) });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

/**
 * Listens and serves until SIGTERM/SIGINT, then drains (see README, "Serving over HTTP").
 *
 * @param onStopped - closes what the caller opened (the ledger); awaited before exit code 0.
 * @throws {UsageError} when the address cannot be bound or the resource host is not allowed.
 */
export async function serveHttp(
  spec: HttpSpec,
  factory: () => McpServer,
  ops: { ledger: Ledger; metrics: ServerMetrics; approval?: PasskeyApproval },
  onStopped: () => Promise<void>,
): Promise<Listening> {
  let listening: Listening | undefined;
  let app: ReturnType<typeof createHttpApp> | undefined;
  const onerror = (e: Error): void => log(e.message);
  // The app is built once the real port is known (port 0), so the default resource names it.
  const proxy = {
    fetch: (request: Request) => app!.fetch(request),
    close: () => app!.close(),
  };
  try {
    listening = await listenHttp(proxy as never, spec.bind.host, spec.bind.port, onerror);
  } catch (e) {
    throw new UsageError(`--http ${spec.bind.urlHost}:${spec.bind.port}: cannot listen (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  const port = listening.address.port;
  const resource = spec.resource ?? new URL(`http://${spec.bind.urlHost}:${port}${MCP_PATH}`);
  let verifier: OAuthTokenVerifier | undefined;
  try {
    if (spec.auth) verifier = await createJwtVerifier({ issuer: spec.auth.issuer, jwks: spec.auth.jwks, resource });
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
        // Operations: no token needed (they reveal no file names or principals); Host/Origin still apply.
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
  if (!spec.auth) {
    log('warning: no --auth-issuer/--auth-jwks: every caller is the same principal "local" (loopback only)');
  }
  const stop = async (signal: string): Promise<void> => {
    log(`${signal}: no longer accepting; draining in-flight requests (up to ${spec.drainMs / 1000}s)`);
    const drained = await listening!.close(spec.drainMs);
    if (!drained) log('drain deadline reached; remaining requests were cut off');
    await onStopped().catch((e: unknown) => log(`closing the ledger failed: ${(e as Error).message}`));
    log('stopped');
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
  log(
    `serving delete_file over Streamable HTTP at http://${spec.bind.urlHost}:${port}${MCP_PATH}; resource ${resource.href}; auth ${spec.auth ? `issuer ${JSON.stringify(spec.auth.issuer)}` : 'none'}; approval ${ops.approval ? `passkey, page at ${ops.approval.origin}/approve/… (RP ID ${ops.approval.rpId})` : 'form'}`,
  );
  return listening;
}
