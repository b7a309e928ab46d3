/**
 * Bearer-token verification for the HTTP server as an OAuth 2.1 resource
 * server (MCP spec 2026-07-28 basic/authorization; RFC 9068 JWT access tokens;
 * RFC 8707 audience; RFC 7519 claims), with `jose`'s `jwtVerify` against a
 * local or remote JWK set. The SDK's `verifyBearerToken` /
 * `bearerAuthChallengeResponse` parse the header and answer 401 with
 * `WWW-Authenticate: Bearer resource_metadata="…"` (RFC 9728 §5.1).
 *
 * What a token must be, checked by `jwtVerify` in this order of concern:
 * - signed by a key of the JWK set with an asymmetric algorithm
 *   ({@link ASYMMETRIC_ALGORITHMS}): never `none`, never HMAC (an HS256 token
 *   "signed" with the public key is refused because HS* is not allowed);
 * - `iss` equal to the configured issuer;
 * - `aud` equal to, or an array containing, the resource URL;
 * - `exp` present; `nbf`/`iat`, when present, honoured with
 *   {@link CLOCK_TOLERANCE_SECONDS} of clock skew; `exp` is also checked with
 *   no skew by the SDK's `verifyBearerToken`, so a token is never used past its `exp`;
 * - `sub` a non-empty string.
 *
 * The token is never forwarded anywhere: it stays in the request's `AuthInfo`
 * (the SDK's shape), and nothing in this package sends it on.
 *
 * @module
 */
import { readFile } from 'node:fs/promises';
import { createLocalJWKSet, createRemoteJWKSet, jwtVerify, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import { OAuthError, OAuthErrorCode, type AuthInfo, type OAuthTokenVerifier, type ServerContext } from '@modelcontextprotocol/server';
// One definition of the principal string: the approvers file (passkey approval) stores the same.
import { jwtPrincipalFor } from '../approval/approvers.js';

/** Clock skew allowed on `nbf` and `iat`, in seconds. */
export const CLOCK_TOLERANCE_SECONDS = 30;

/** The JWS algorithms a token may be signed with: asymmetric only (RFC 7518 §3, RFC 8037). */
export const ASYMMETRIC_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];

/** Options of {@link createJwtVerifier}. */
export interface JwtVerifierOptions {
  /** The authorization server's issuer identifier; a token's `iss` must equal it exactly. */
  issuer: string;
  /** A JWK set: a file path, an `https://` URL (or `http://` on a loopback host), or the set itself. */
  jwks: string | JSONWebKeySet;
  /** The resource URL (RFC 8707): a token's `aud` must be or contain it. */
  resource: URL;
  /** Clock in milliseconds, for tests. Defaults to `Date.now`. */
  now?: () => number;
}

/**
 * Builds an SDK `OAuthTokenVerifier` that verifies JWT access tokens.
 * A valid token gives an `AuthInfo` with `extra: { iss, sub }`,
 * `clientId` from `client_id` (else `azp`, else `sub`), `scopes` from `scope`,
 * `expiresAt` from `exp` and `resource` the configured resource.
 * Every failure is an `OAuthError` `invalid_token` with one fixed message (the
 * token and the reason are never echoed to the client).
 *
 * @throws {TypeError} at construction: an unreadable or malformed JWK set, a set
 *   with a symmetric (`oct`) key or an HMAC/`none` `alg`, a plain-`http` JWKS URL
 *   on a non-loopback host.
 */
export async function createJwtVerifier(options: JwtVerifierOptions): Promise<OAuthTokenVerifier> {
  const keys = await loadKeySet(options.jwks);
  const audience = options.resource.href;
  const now = options.now ?? Date.now;
  return {
    async verifyAccessToken(token: string): Promise<AuthInfo> {
      let payload;
      try {
        ({ payload } = await jwtVerify(token, keys, {
          issuer: options.issuer,
          audience,
          algorithms: ASYMMETRIC_ALGORITHMS,
          clockTolerance: CLOCK_TOLERANCE_SECONDS,
          requiredClaims: ['exp', 'sub'],
          currentDate: new Date(now()),
        }));
      } catch {
        throw new OAuthError(OAuthErrorCode.InvalidToken, 'The access token is invalid or expired');
      }
      const { iss, sub, exp } = payload;
      if (typeof iss !== 'string' || typeof sub !== 'string' || sub === '' || typeof exp !== 'number') {
        throw new OAuthError(OAuthErrorCode.InvalidToken, 'The access token is invalid or expired');
      }
      const clientId = typeof payload.client_id === 'string' ? payload.client_id : typeof payload.azp === 'string' ? payload.azp : sub;
      const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ').filter((s) => s !== '') : [];
      return { token, clientId, scopes, expiresAt: exp, resource: new URL(audience), extra: { iss, sub } };
    },
  };
}

async function loadKeySet(jwks: string | JSONWebKeySet): Promise<JWTVerifyGetKey> {
  if (typeof jwks === 'string' && /^https?:\/\//i.test(jwks)) {
    let url: URL;
    try {
      url = new URL(jwks);
    } catch {
      throw new TypeError('--auth-jwks is not a valid URL');
    }
    const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
    if (url.protocol !== 'https:' && !loopback) throw new TypeError('--auth-jwks URL must be https (plain http only on a loopback host)');
    return createRemoteJWKSet(url);
  }
  let set: unknown = jwks;
  if (typeof jwks === 'string') {
    let text: string;
    try {
      text = await readFile(jwks, 'utf8');
    } catch (e) {
      throw new TypeError(`--auth-jwks: cannot read ${JSON.stringify(jwks)} (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    try {
      set = JSON.parse(text);
    } catch {
      throw new TypeError(`--auth-jwks: ${JSON.stringify(jwks)} is not JSON`);
    }
  }
  const keys = (set as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.length === 0) throw new TypeError('--auth-jwks must be a JWK set: {"keys":[…]} with at least one key');
  for (const [i, key] of keys.entries()) {
    const k = key as { kty?: unknown; alg?: unknown; d?: unknown };
    if (typeof k !== 'object' || k === null || typeof k.kty !== 'string') throw new TypeError(`--auth-jwks: keys[${i}] has no kty`);
    if (k.kty === 'oct') throw new TypeError(`--auth-jwks: keys[${i}] is a symmetric (oct) key; only public keys are accepted`);
    if (k.alg !== undefined && (typeof k.alg !== 'string' || !ASYMMETRIC_ALGORITHMS.includes(k.alg))) {
      throw new TypeError(`--auth-jwks: keys[${i}] names alg ${JSON.stringify(k.alg)}; only ${ASYMMETRIC_ALGORITHMS.join(', ')} are accepted`);
    }
    if (k.d !== undefined) throw new TypeError(`--auth-jwks: keys[${i}] holds a private key (d); publish only the public part`);
  }
  return createLocalJWKSet(set as JSONWebKeySet);
}

/**
 * The principal for a request verified by {@link createJwtVerifier}: the JSON
 * array `["jwt", iss, sub]` (an injective encoding: no issuer/subject pair can
 * pass for another). A request without `authInfo` (a loopback server without
 * `--auth-*`) is the single principal `local`.
 *
 * @throws {TypeError} when `authInfo` is present but carries no string `extra.iss` and
 *   `extra.sub` (it did not come from this verifier): fails closed.
 */
export function jwtPrincipal(ctx: ServerContext): string {
  return jwtPrincipalOf(ctx.http?.authInfo);
}

/** {@link jwtPrincipal} of an `AuthInfo` (undefined: `local`). */
export function jwtPrincipalOf(auth: AuthInfo | undefined): string {
  if (!auth) return 'local';
  const { iss, sub } = (auth.extra ?? {}) as { iss?: unknown; sub?: unknown };
  if (typeof iss !== 'string' || typeof sub !== 'string') throw new TypeError('authInfo carries no verified iss and sub');
  return jwtPrincipalFor(iss, sub);
}
