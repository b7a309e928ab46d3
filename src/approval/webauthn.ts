/**
 * The WebAuthn checks of the approval and enrolment pages (W3C Web Authentication Level 3): every
 * call to `@simplewebauthn/server` in this package, and what each one verifies. Only the pages
 * (`page.ts`, `enroll.ts`) import this module, so only they load the library.
 *
 * - Challenges: 32 random bytes, base64url, usable for {@link CHALLENGE_TTL_MS}. The pages keep
 *   them single-use in an `ApprovalStore` and take one (read from the response with
 *   {@link claimedChallenge}) before anything is verified.
 * - Authentication (§7.2; approving a call, or an enrolment by an existing approver): user
 *   verification required, only the given approvers' credentials allowed. {@link verifyAssertion}
 *   checks the signature with the approver's public key, the exact origin (scheme, host, port), the
 *   RP ID, the challenge, the type `webauthn.get` and the user-verified flag; the caller then moves
 *   the signature counter forward in its store.
 * - Registration (§7.1; enrolment): user verification required, no attestation, a discoverable
 *   credential preferred. {@link verifyRegistration} checks the origin, RP ID, challenge and the
 *   user-verified flag, and returns the public-key credential the approvers file stores.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
} from '@simplewebauthn/server';
import type { Approver } from './approvers.js';
import { renderValue } from '../prompt/render.js';

/** How long a WebAuthn challenge stays usable, in milliseconds. */
export const CHALLENGE_TTL_MS = 120_000;

/** The shape of a challenge {@link newChallenge} makes: 43 base64url characters. */
export const CHALLENGE_RE = /^[A-Za-z0-9_-]{43}$/;

/** A new challenge: 32 random bytes (256 bits), base64url, as stored and as the browser signs it. */
export function newChallenge(): string {
  return randomBytes(32).toString('base64url');
}

/** What the browser's ceremony must match: the page's origin, its RP ID, and the challenge taken from the store. */
export interface Expected {
  /** The page origin, exactly (`http://localhost:PORT`, or the public URL's origin). */
  origin: string;
  /** The RP ID: `localhost`, or the public URL's host name. */
  rpId: string;
  /** The challenge, base64url, as {@link newChallenge} made it. */
  challenge: string;
}

/**
 * The options of `navigator.credentials.get` (JSON form) for a challenge: user verification
 * required, only the credentials of `allowed`, the timeout {@link CHALLENGE_TTL_MS}.
 */
export function authenticationOptions(
  rpId: string,
  challenge: string,
  allowed: readonly Approver[],
): Promise<PublicKeyCredentialRequestOptionsJSON> {
  return generateAuthenticationOptions({
    rpID: rpId,
    challenge: new Uint8Array(Buffer.from(challenge, 'base64url')),
    userVerification: 'required',
    timeout: CHALLENGE_TTL_MS,
    allowCredentials: allowed.map((a) => ({ id: a.credentialId, transports: a.transports as never })),
  });
}

/**
 * The options of `navigator.credentials.create` (JSON form) for enrolling `userName`: RP name
 * `mcp-confirm`, a random 16-byte user handle, no attestation, a discoverable credential preferred,
 * user verification required, the timeout {@link CHALLENGE_TTL_MS}.
 */
export function registrationOptions(
  rpId: string,
  userName: string,
  challenge: string,
): Promise<PublicKeyCredentialCreationOptionsJSON> {
  return generateRegistrationOptions({
    rpName: 'mcp-confirm',
    rpID: rpId,
    userName,
    userID: new Uint8Array(randomBytes(16)),
    challenge: new Uint8Array(Buffer.from(challenge, 'base64url')),
    attestationType: 'none',
    timeout: CHALLENGE_TTL_MS,
    authenticatorSelection: { residentKey: 'preferred', userVerification: 'required' },
    // No excludeCredentials: one authenticator may hold passkeys for several approver names; a
    // credential id already in the file is refused when saving.
  });
}

/**
 * The challenge a browser's response says it signed (the `challenge` of its
 * `response.clientDataJSON`), read without verifying anything, so the page can take that challenge
 * from its store before verifying.
 *
 * @param body - the response as the page's script posts it (`PublicKeyCredential.toJSON()`).
 * @returns the challenge, or `undefined` when the body carries none.
 */
export function claimedChallenge(body: Record<string, unknown>): string | undefined {
  try {
    const r = body.response as { clientDataJSON?: unknown } | undefined;
    const clientData = JSON.parse(Buffer.from(String(r?.clientDataJSON ?? ''), 'base64url').toString('utf8')) as {
      challenge?: unknown;
    };
    return typeof clientData.challenge === 'string' ? clientData.challenge : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Verifies an assertion (`navigator.credentials.get`) made with `approver`'s credential: the
 * signature with its public key, the exact origin, the RP ID, the challenge, the type
 * `webauthn.get`, and user verification. Does not store anything: the caller moves the signature
 * counter forward.
 *
 * @param body - the response as the page's script posts it.
 * @returns the authenticator's new signature counter, or `undefined` when the assertion did not
 *   verify or the user was not verified.
 * @throws whatever the library throws on a malformed or mismatching response (origin, RP ID,
 *   challenge, type, signature); its message quotes the client's data: log it only through
 *   {@link libraryReason}.
 */
export async function verifyAssertion(
  body: Record<string, unknown>,
  expected: Expected,
  approver: Approver,
): Promise<number | undefined> {
  const verified = await verifyAuthenticationResponse({
    response: body as unknown as AuthenticationResponseJSON,
    expectedChallenge: expected.challenge,
    expectedOrigin: expected.origin,
    expectedRPID: expected.rpId,
    expectedType: 'webauthn.get',
    requireUserVerification: true,
    credential: {
      id: approver.credentialId,
      publicKey: new Uint8Array(Buffer.from(approver.publicKey, 'base64url')),
      counter: approver.counter,
    },
  });
  return verified.verified && verified.authenticationInfo.userVerified
    ? verified.authenticationInfo.newCounter
    : undefined;
}

/** A new public-key credential, as the approvers file stores it (never a private key). */
export interface NewCredential {
  /** The credential id, base64url. */
  credentialId: string;
  /** The credential public key (COSE_Key, RFC 9052 §7), base64url. */
  publicKey: string;
  /** The signature counter at registration. */
  counter: number;
  /** The transports the browser reported (hints only). */
  transports: string[];
}

/**
 * Verifies a registration (`navigator.credentials.create`): the origin, the RP ID, the challenge,
 * and user verification (attestation is not asked for).
 *
 * @param body - the response as the page's script posts it.
 * @returns the new credential, or `undefined` when the registration did not verify or the user was
 *   not verified.
 * @throws whatever the library throws on a malformed or mismatching response; log it only through
 *   {@link libraryReason}.
 */
export async function verifyRegistration(
  body: Record<string, unknown>,
  expected: Expected,
): Promise<NewCredential | undefined> {
  const verified = await verifyRegistrationResponse({
    response: body as unknown as RegistrationResponseJSON,
    expectedChallenge: expected.challenge,
    expectedOrigin: expected.origin,
    expectedRPID: expected.rpId,
    requireUserVerification: true,
  });
  if (!verified.verified || verified.registrationInfo === undefined || !verified.registrationInfo.userVerified)
    return undefined;
  const credential = verified.registrationInfo.credential;
  return {
    credentialId: credential.id,
    publicKey: Buffer.from(credential.publicKey).toString('base64url'),
    counter: credential.counter,
    transports: (credential.transports ?? []).map(String),
  };
}

/**
 * The reason a WebAuthn library gave for refusing a ceremony, as it may be logged and answered:
 * rendered like any untrusted value (one line, no raw controls or escape sequences, at most 120
 * graphemes). \@simplewebauthn/server quotes the client's `clientDataJSON` (its `origin`, its
 * `type`) in its messages, and anyone holding an approval or enrolment URL can send one, so the
 * raw text could forge log lines (a line break, ANSI colours) on the server's stderr.
 *
 * @param e - what the library threw.
 * @returns e.g. `` `Unexpected authentication response origin "…", expected "http://localhost:1234"` ``.
 */
export function libraryReason(e: unknown): string {
  const message = e instanceof Error ? e.message : String(e);
  return renderValue(message, { maxGraphemes: 120 });
}
