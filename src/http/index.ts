/**
 * `mcp-confirm/http`: Streamable HTTP serving as `mcp-confirm --http` does it,
 * for library users: the application (Host/Origin checks, bearer auth with the
 * RFC 9728 document, stateless 2026-07-28 plus sessionful 2025-era serving),
 * the JWT verifier and principal, and the `node:http` listener with graceful close.
 * A subpath of its own, so the root import loads none of it.
 *
 * @module mcp-confirm/http
 */
export { createHttpApp, MCP_PATH, type HttpApp, type HttpAppOptions, type HttpAuthOptions } from './app.js';
export { allowedHostnames, parseAllowedHosts, parseBindAddress, type BindAddress } from './bind.js';
export {
  ASYMMETRIC_ALGORITHMS,
  CLOCK_TOLERANCE_SECONDS,
  createJwtVerifier,
  jwtPrincipal,
  jwtPrincipalOf,
  tokenRefusalLog,
  type JwtVerifierOptions,
  type TokenRefusal,
  type TokenRefusalLogOptions,
} from './jwtAuth.js';
export { LegacySessions, type LegacySessionOptions } from './legacySessions.js';
export { listenHttp, type Listening } from './listen.js';
