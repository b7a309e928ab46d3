/**
 * Access tokens for the suites that serve over `--http` with JWT auth: a fresh RS256 signing key
 * whose public half is written as a local JWK set (for `--auth-jwks`), and JWT access tokens
 * (RFC 9068: `typ: at+jwt`) signed with it.
 */
import { writeFileSync } from 'node:fs';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';

/** A fresh RS256 key pair: writes its public key as a JWK set (kid `k1`) to `jwksPath`, returns the private key. */
export async function writeSigningKey(jwksPath: string): Promise<CryptoKey> {
  const pair = await generateKeyPair('RS256', { extractable: true });
  writeFileSync(
    jwksPath,
    JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }] }),
  );
  return pair.privateKey;
}

/**
 * An RS256 JWT access token (`typ: at+jwt`, kid `k1`, scope `mcp`) of `sub` at `issuer` for
 * `audience`, issued 5 s ago.
 *
 * @param options.clientId - a `client_id` claim; none by default.
 * @param options.lifetimeSeconds - seconds from now until it expires; defaults to 3600 (an hour).
 */
export function mintToken(
  signingKey: CryptoKey,
  issuer: string,
  sub: string,
  audience: string,
  options: { clientId?: string; lifetimeSeconds?: number } = {},
): Promise<string> {
  const nowS = Math.floor(Date.now() / 1000);
  return new SignJWT({ scope: 'mcp', ...(options.clientId === undefined ? {} : { client_id: options.clientId }) })
    .setProtectedHeader({ alg: 'RS256', kid: 'k1', typ: 'at+jwt' })
    .setIssuer(issuer)
    .setAudience(audience)
    .setSubject(sub)
    .setIssuedAt(nowS - 5)
    .setExpirationTime(nowS + (options.lifetimeSeconds ?? 3600))
    .sign(signingKey);
}
