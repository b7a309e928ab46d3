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
 * A refusal tells the caller nothing but `invalid_token`; the operator learns why
 * through `onRefused` ({@link TokenRefusal}: `jose`'s error code and claim, and the
 * unverified `iss`, `sub` and `kid`, never the token), which `mcp-confirm --http`
 * logs with {@link tokenRefusalLog}: one line per refusal on stderr, at most one per
 * second for each code and claim, the suppressed ones counted in the next line.
 *
 * @module
 */
import { readFile } from 'node:fs/promises';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  errors,
  jwtVerify,
  type JSONWebKeySet,
  type JWTVerifyGetKey,
} from 'jose';
import {
  OAuthError,
  OAuthErrorCode,
  type AuthInfo,
  type OAuthTokenVerifier,
  type ServerContext,
} from '@modelcontextprotocol/server';
// One definition of the principal string: the approvers file (passkey approval) stores the same.
import { jwtPrincipalFor } from '../principals.js';
import { ConfigError } from '../errors.js';
import { renderValue } from '../prompt/render.js';

/** Clock skew allowed on `nbf` and `iat`, in seconds. */
export const CLOCK_TOLERANCE_SECONDS = 30;

/** The JWS algorithms a token may be signed with: asymmetric only (RFC 7518 §3, RFC 8037). */
export const ASYMMETRIC_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
];

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
  /**
   * Called once for every token refused (after the refusal is decided, before the caller gets
   * 401), with why; for the operator's log, e.g. {@link tokenRefusalLog}. What it throws is
   * ignored: the refusal stands. Not called for a request without a bearer token (the SDK
   * refuses that before any token is verified).
   */
  onRefused?: (refusal: TokenRefusal) => void;
}

/**
 * Why a bearer token was refused, for the operator (the caller only ever gets `invalid_token`).
 * `iss`, `sub` and `kid` are read from the token without verifying it: attacker text, to be
 * rendered as untrusted values (as {@link tokenRefusalLog} does); the token itself is not here.
 */
export interface TokenRefusal {
  /**
   * `jose`'s error code (`errors.JOSEError#code`), e.g. `ERR_JWT_CLAIM_VALIDATION_FAILED`,
   * `ERR_JWT_EXPIRED`, `ERR_JWS_SIGNATURE_VERIFICATION_FAILED`, `ERR_JWKS_NO_MATCHING_KEY`,
   * `ERR_JOSE_ALG_NOT_ALLOWED`, `ERR_JWS_INVALID`, `ERR_JWT_INVALID`. A token that `jose` accepts
   * but this verifier refuses gets the code `jose` gives the same fault: `ERR_JWT_EXPIRED` with
   * claim `exp` past its `exp` within the clock skew (`exp` has no skew here), and
   * `ERR_JWT_CLAIM_VALIDATION_FAILED` with claim `sub` for an empty `sub`. Anything else that
   * fails (not a `jose` error) is `ERR_UNEXPECTED`.
   */
  code: string;
  /** The claim `jose` names (`aud`, `iss`, `exp`, `nbf`, `iat`, `sub`, …), when it names one. */
  claim?: string;
  /** The token's `iss`, unverified, when its payload parsed and has one. */
  iss?: unknown;
  /** The token's `sub`, unverified, when its payload parsed and has one. */
  sub?: unknown;
  /** The token's `kid` (protected header), unverified, when its header parsed and has one. */
  kid?: unknown;
}

/**
 * Builds an SDK `OAuthTokenVerifier` that verifies JWT access tokens.
 * A valid token gives an `AuthInfo` with `extra: { iss, sub }`,
 * `clientId` from `client_id` (else `azp`, else `sub`), `scopes` from `scope`,
 * `expiresAt` from `exp` and `resource` the configured resource.
 * Every failure is an `OAuthError` `invalid_token` with one fixed message (the
 * token and the reason are never echoed to the client).
 *
 * @throws {ConfigError} `ERR_CONFIG_JWKS` at construction (`subject`: `jwks`): an unreadable or
 *   malformed JWK set, a set with a symmetric (`oct`) key, a private key or an HMAC/`none` `alg`, a
 *   plain-`http` JWKS URL on a non-loopback host.
 */
export async function createJwtVerifier(options: JwtVerifierOptions): Promise<OAuthTokenVerifier> {
  const keys = await loadKeySet(options.jwks);
  const audience = options.resource.href;
  const now = options.now ?? Date.now;
  const refuse = (
    token: string,
    why: Pick<TokenRefusal, 'code' | 'claim'>,
    text = 'The access token is invalid or expired',
  ): OAuthError => {
    try {
      options.onRefused?.({ ...why, ...unverifiedClaims(token) });
    } catch {
      // Reporting only: the refusal stands.
    }
    return new OAuthError(OAuthErrorCode.InvalidToken, text);
  };
  return {
    async verifyAccessToken(token: string): Promise<AuthInfo> {
      let payload;
      const nowMs = now();
      try {
        ({ payload } = await jwtVerify(token, keys, {
          issuer: options.issuer,
          audience,
          algorithms: ASYMMETRIC_ALGORITHMS,
          clockTolerance: CLOCK_TOLERANCE_SECONDS,
          requiredClaims: ['exp', 'sub'],
          currentDate: new Date(nowMs),
        }));
      } catch (e) {
        throw refuse(token, joseReason(e));
      }
      const { iss, sub, exp } = payload;
      if (typeof iss !== 'string' || typeof sub !== 'string' || sub === '' || typeof exp !== 'number') {
        throw refuse(token, {
          code: 'ERR_JWT_CLAIM_VALIDATION_FAILED',
          claim: typeof iss !== 'string' ? 'iss' : typeof exp !== 'number' ? 'exp' : 'sub',
        });
      }
      // jose let `exp` through within the skew; the SDK's verifyBearerToken refuses it with this text.
      if (exp < nowMs / 1000) throw refuse(token, { code: 'ERR_JWT_EXPIRED', claim: 'exp' }, 'Token has expired');
      const clientId =
        typeof payload.client_id === 'string' ? payload.client_id : typeof payload.azp === 'string' ? payload.azp : sub;
      const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ').filter((s) => s !== '') : [];
      return { token, clientId, scopes, expiresAt: exp, resource: new URL(audience), extra: { iss, sub } };
    },
  };
}

/** `jose`'s code and claim of a verification failure ({@link TokenRefusal}). */
function joseReason(e: unknown): Pick<TokenRefusal, 'code' | 'claim'> {
  if (!(e instanceof errors.JOSEError)) return { code: 'ERR_UNEXPECTED' };
  const claim = e instanceof errors.JWTClaimValidationFailed || e instanceof errors.JWTExpired ? e.claim : undefined;
  return { code: e.code, ...(typeof claim === 'string' && claim !== 'unspecified' ? { claim } : {}) };
}

/** The token's `iss`, `sub` (payload) and `kid` (protected header), unverified, as far as they parse. */
function unverifiedClaims(token: string): Pick<TokenRefusal, 'iss' | 'sub' | 'kid'> {
  const out: Pick<TokenRefusal, 'iss' | 'sub' | 'kid'> = {};
  try {
    const payload = decodeJwt(token);
    if (payload.iss !== undefined) out.iss = payload.iss;
    if (payload.sub !== undefined) out.sub = payload.sub;
  } catch {
    // Not a JWT payload: nothing to name.
  }
  try {
    const header = decodeProtectedHeader(token);
    if (header.kid !== undefined) out.kid = header.kid;
  } catch {
    // No parsable header.
  }
  return out;
}

/** Options of {@link tokenRefusalLog}. */
export interface TokenRefusalLogOptions {
  /** Writes one line (without its end of line), e.g. to stderr. */
  log: (line: string) => void;
  /** Clock in milliseconds. Defaults to `Date.now`. */
  now?: () => number;
  /** At most one line per this many milliseconds for each code and claim. Defaults to 1000. */
  intervalMs?: number;
}

/** Most graphemes shown of each of `iss`, `sub` and `kid` in a refusal line. */
export const REFUSAL_VALUE_MAX_GRAPHEMES = 64;

/**
 * A `JwtVerifierOptions.onRefused` that logs each refusal as one line:
 * `bearer token refused: CODE[ CLAIM][; iss `…`][, sub `…`][, kid `…`][; N more refused for the same reason since the previous such line, not logged]`.
 * `iss`, `sub` and `kid` (unverified, attacker text) are rendered as untrusted values
 * (`renderValue`: one line, visible escapes, markup-proof), each cut to
 * 64 graphemes (`REFUSAL_VALUE_MAX_GRAPHEMES`); a value that is not a string is shown as its
 * JSON, marked `(not a string)`. The token is never part of it.
 *
 * Rate-limited per code and claim: at most one line per `intervalMs` (default 1 s) for each;
 * the refusals in between are not logged but counted, and the count is part of the next line
 * of that code and claim (a burst that stops leaves its count unreported until the next one).
 * The state is one entry per code and claim seen (a small fixed set: `jose`'s codes and claims,
 * which the token cannot choose).
 */
export function tokenRefusalLog(options: TokenRefusalLogOptions): (refusal: TokenRefusal) => void {
  const now = options.now ?? Date.now;
  const intervalMs = options.intervalMs ?? 1000;
  const seen = new Map<string, { loggedAtMs: number; suppressed: number }>();
  return (refusal) => {
    const reason = refusal.claim !== undefined ? `${refusal.code} ${refusal.claim}` : refusal.code;
    const nowMs = now();
    const entry = seen.get(reason);
    if (entry && nowMs - entry.loggedAtMs < intervalMs) {
      entry.suppressed += 1;
      return;
    }
    const suppressed = entry?.suppressed ?? 0;
    seen.set(reason, { loggedAtMs: nowMs, suppressed: 0 });
    const named = (['iss', 'sub', 'kid'] as const)
      .filter((k) => refusal[k] !== undefined)
      .map((k) => `${k} ${shownClaim(refusal[k])}`);
    // The code and claim are jose's own words (a fixed set); anything else is shown as untrusted.
    const shownReason = /^[A-Z][A-Z0-9_]*( [a-z][a-z0-9_]*)?$/.test(reason)
      ? reason
      : renderValue(reason, { maxGraphemes: REFUSAL_VALUE_MAX_GRAPHEMES });
    options.log(
      `bearer token refused: ${shownReason}` +
        (named.length > 0 ? `; ${named.join(', ')}` : '') +
        (suppressed > 0
          ? `; ${suppressed} more refused for the same reason since the previous such line, not logged`
          : ''),
    );
  };
}

function shownClaim(value: unknown): string {
  if (typeof value === 'string') return renderValue(value, { maxGraphemes: REFUSAL_VALUE_MAX_GRAPHEMES });
  return `${renderValue(JSON.stringify(value) ?? String(value), { maxGraphemes: REFUSAL_VALUE_MAX_GRAPHEMES })} (not a string)`;
}

/** The word the refusals of the JWK set begin with: the option's name (a command line names its flag instead). */
const JWKS_SUBJECT = 'jwks';

/** A {@link ConfigError} `ERR_CONFIG_JWKS`: `jwks`, then what is wrong with it. */
function jwksError(rest: string): ConfigError {
  return new ConfigError('ERR_CONFIG_JWKS', `${JWKS_SUBJECT}${rest}`, { subject: JWKS_SUBJECT });
}

async function loadKeySet(jwks: string | JSONWebKeySet): Promise<JWTVerifyGetKey> {
  if (typeof jwks === 'string' && /^https?:\/\//i.test(jwks)) {
    let url: URL;
    try {
      url = new URL(jwks);
    } catch {
      throw jwksError(' is not a valid URL');
    }
    const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
    if (url.protocol !== 'https:' && !loopback)
      throw jwksError(' URL must be https (plain http only on a loopback host)');
    return createRemoteJWKSet(url);
  }
  let set: unknown = jwks;
  if (typeof jwks === 'string') {
    let text: string;
    try {
      text = await readFile(jwks, 'utf8');
    } catch (e) {
      throw jwksError(`: cannot read ${JSON.stringify(jwks)} (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    try {
      set = JSON.parse(text);
    } catch {
      throw jwksError(`: ${JSON.stringify(jwks)} is not JSON`);
    }
  }
  const keys = (set as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.length === 0)
    throw jwksError(' must be a JWK set: {"keys":[…]} with at least one key');
  for (const [i, key] of keys.entries()) {
    const k = key as { kty?: unknown; alg?: unknown; d?: unknown };
    if (typeof k !== 'object' || k === null || typeof k.kty !== 'string') throw jwksError(`: keys[${i}] has no kty`);
    if (k.kty === 'oct') throw jwksError(`: keys[${i}] is a symmetric (oct) key; only public keys are accepted`);
    if (k.alg !== undefined && (typeof k.alg !== 'string' || !ASYMMETRIC_ALGORITHMS.includes(k.alg))) {
      throw jwksError(
        `: keys[${i}] names alg ${JSON.stringify(k.alg)}; only ${ASYMMETRIC_ALGORITHMS.join(', ')} are accepted`,
      );
    }
    if (k.d !== undefined) throw jwksError(`: keys[${i}] holds a private key (d); publish only the public part`);
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
  if (typeof iss !== 'string' || typeof sub !== 'string')
    throw new TypeError('authInfo carries no verified iss and sub');
  return jwtPrincipalFor(iss, sub);
}
