/**
 * The HTTP application of `mcp-confirm --http`: a web-standard
 * `fetch(request) → Response` that serves MCP Streamable HTTP at `/mcp`.
 *
 * Per request, in this order (each step fails closed):
 * 1. `Host` must name an allowed host and a present `Origin` must too, else 403
 *    (DNS rebinding; the SDK's `hostHeaderValidationResponse` and
 *    `originValidationResponse`).
 * 2. The RFC 9728 Protected Resource Metadata document, when auth is on, at
 *    `/.well-known/oauth-protected-resource` + the resource path.
 * 3. Anything but `/mcp` is 404.
 * 4. When auth is on, a valid bearer token (the SDK's `verifyBearerToken` with
 *    our JWT verifier), else 401 with `WWW-Authenticate: Bearer resource_metadata="…"`.
 * 5. 2025-era requests (the SDK's `isLegacyRequest`) go to sessionful serving
 *    ({@link LegacySessions}); everything else to the SDK's strict modern
 *    handler (`createMcpHandler(factory, { legacy: 'reject' })`), stateless.
 *
 * @module
 */
import {
  bearerAuthChallengeResponse,
  createMcpHandler,
  getOAuthProtectedResourceMetadataUrl,
  hostHeaderValidationResponse,
  isJsonContentType,
  isLegacyRequest,
  originValidationResponse,
  verifyBearerToken,
  type AuthInfo,
  type McpServer,
  type OAuthProtectedResourceMetadata,
  type OAuthTokenVerifier,
} from '@modelcontextprotocol/server';
import { LegacySessions, type LegacySessionOptions } from './legacySessions.js';

/** The path MCP is served at. */
export const MCP_PATH = '/mcp';

/** Bearer-token settings of {@link createHttpApp}. */
export interface HttpAuthOptions {
  /** Verifies a token (e.g. {@link createJwtVerifier}); throws `OAuthError` `invalid_token` to refuse. */
  verifier: OAuthTokenVerifier;
  /** The authorization server's issuer, named in the metadata document. */
  issuer: string;
}

/** Options of {@link createHttpApp}. */
export interface HttpAppOptions {
  /** Builds one server (per modern request, per legacy session). */
  factory: () => McpServer;
  /** The public URL of the MCP endpoint (the OAuth resource, RFC 8707/9728). */
  resourceUrl: URL;
  /** Hostnames `Host` and `Origin` may name (IPv6 in brackets, no port). */
  allowedHostnames: readonly string[];
  /** Bearer-token auth; without it every request is the single principal of `principalOf(undefined)`. */
  auth?: HttpAuthOptions;
  /** The principal of a verified request, used to bind 2025-era sessions. */
  principalOf: (authInfo: AuthInfo | undefined) => string;
  /** Bounds of the 2025-era sessions. */
  legacy?: Pick<LegacySessionOptions, 'maxSessions' | 'idleTimeoutMs'>;
  /** Extra routes answered after the Host/Origin check and before `/mcp` (e.g. `/healthz`); return undefined to fall through. */
  routes?: (request: Request, url: URL) => Promise<Response | undefined> | Response | undefined;
  /** Out-of-band errors and rejected requests (reporting only). */
  onerror?: (error: Error) => void;
}

/** The application: `fetch` for a request, `close` to end every session and in-flight modern exchange. */
export interface HttpApp {
  fetch(request: Request): Promise<Response>;
  close(): Promise<void>;
  /** The RFC 9728 metadata URL named in 401 challenges (undefined without auth). */
  readonly resourceMetadataUrl: string | undefined;
  /** Open 2025-era sessions. */
  readonly legacySessions: number;
}

function notFound(): Response {
  return Response.json({ error: 'not_found' }, { status: 404 });
}

/**
 * Builds the application.
 *
 * @throws {TypeError} when `resourceUrl` is not http(s), has a fragment, or its host is not allowed.
 */
export function createHttpApp(options: HttpAppOptions): HttpApp {
  const { resourceUrl } = options;
  if (resourceUrl.protocol !== 'https:' && resourceUrl.protocol !== 'http:')
    throw new TypeError('the resource URL must be http or https');
  if (resourceUrl.hash !== '') throw new TypeError('the resource URL must not have a fragment (RFC 8707 §2)');
  const allowed = [...options.allowedHostnames];
  if (!allowed.includes(resourceUrl.hostname))
    throw new TypeError(`the resource URL's host ${resourceUrl.hostname} is not an allowed host`);
  const auth = options.auth;
  const resourceMetadataUrl = auth ? getOAuthProtectedResourceMetadataUrl(resourceUrl) : undefined;
  const metadataPath = resourceMetadataUrl ? new URL(resourceMetadataUrl).pathname : undefined;
  const metadata: OAuthProtectedResourceMetadata | undefined = auth
    ? { resource: resourceUrl.href, authorization_servers: [auth.issuer], bearer_methods_supported: ['header'] }
    : undefined;
  const onerror = options.onerror ?? (() => {});
  const modern = createMcpHandler(() => options.factory(), { legacy: 'reject', onerror });
  const legacy = new LegacySessions({
    factory: options.factory,
    principalOf: options.principalOf,
    onerror,
    ...options.legacy,
  });

  const serveMcp = async (request: Request): Promise<Response> => {
    let authInfo: AuthInfo | undefined;
    if (auth) {
      try {
        // Only the first credentials of a comma-joined header, as the SDK's requireBearerAuth does.
        const header = (request.headers.get('authorization') ?? '').split(',')[0] || undefined;
        authInfo = await verifyBearerToken(header, {
          verifier: auth.verifier,
          resourceMetadataUrl,
          expectedResource: resourceUrl,
        });
      } catch (e) {
        return bearerAuthChallengeResponse(e, { resourceMetadataUrl });
      }
    }
    // Hand-wired compositions must refuse non-JSON POSTs themselves (isLegacyRequest's documentation).
    if (request.method === 'POST' && !isJsonContentType(request.headers.get('content-type'))) {
      return Response.json(
        {
          jsonrpc: '2.0',
          error: { code: -32000, message: 'Unsupported Media Type: Content-Type must be application/json' },
          id: null,
        },
        { status: 415 },
      );
    }
    if (await isLegacyRequest(request)) return legacy.handle(request, authInfo);
    return modern.fetch(request, authInfo ? { authInfo } : {});
  };

  return {
    resourceMetadataUrl,
    get legacySessions() {
      return legacy.size;
    },
    async fetch(request: Request): Promise<Response> {
      // 1. DNS rebinding: a browser tricked into calling us names a foreign Host or Origin.
      const rejected = hostHeaderValidationResponse(request, allowed) ?? originValidationResponse(request, allowed);
      if (rejected) return rejected;
      const url = new URL(request.url);
      // 2. RFC 9728 metadata, public so that clients can discover the authorization server.
      if (metadata && url.pathname === metadataPath) {
        if (request.method !== 'GET' && request.method !== 'HEAD')
          return new Response(null, { status: 405, headers: { Allow: 'GET, HEAD' } });
        const doc = Response.json(metadata, { headers: { 'Cache-Control': 'max-age=3600' } });
        return request.method === 'HEAD' ? new Response(null, { headers: doc.headers }) : doc;
      }
      const extra = await options.routes?.(request, url);
      if (extra) return extra;
      // 3. Only the MCP endpoint beyond this point.
      if (url.pathname !== MCP_PATH) return notFound();
      return serveMcp(request);
    },
    async close(): Promise<void> {
      await legacy.close();
      await modern.close();
    },
  };
}
