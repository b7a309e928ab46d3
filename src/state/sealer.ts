/**
 * Sealing and opening the MRTR `requestState` of a confirmation.
 *
 * The state is a compact JWE (RFC 7516 §7.1) with `alg: dir`, `enc: A256GCM`
 * (RFC 7518 §4.5, §5.3) whose plaintext is a JWT claims set (RFC 7519): the
 * client can neither read nor change it. It is bound, as MCP spec 2026-07-28
 * (basic/patterns/mrtr, "Server Requirements") asks, to:
 * - `aud`: the server's audience (another service sharing the keys is refused);
 * - `sub`: a salted tag of the principal (RFC 7519 §4.1.2), never the principal itself;
 * - `iat`/`exp`: a short TTL, in seconds; the state is expired at exactly `exp`;
 * - `jti`: a random nonce, the key of the ledger entry that makes it single-use;
 * - `tool`, `args`: the tool name and SHA-256 of the RFC 8785 form of its arguments;
 * - `question`: SHA-256 of the RFC 8785 form of `{message, requestedSchema}` the human saw;
 * - `fingerprint`: the resource's identity captured in round 1 (any JSON value).
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import { CompactEncrypt, compactDecrypt } from 'jose';
import { ConfirmBadArgumentError } from '../errors.js';
import { KeyRing } from './keyRing.js';

/** JWE `typ` header of every state this package seals. */
export const STATE_TYP = 'mcp-confirm-state+jwt';

/** Longest `requestState` string sealed or accepted, in characters. A larger one is refused at sealing, before anything is asked. */
export const MAX_STATE_LENGTH = 65_536;

/** Longest TTL, in seconds: one day. A confirmation is meant to be answered now, not stored (spec: "a short expiry"). */
export const MAX_TTL_SECONDS = 86_400;

const ENCODER = new TextEncoder();
const DECODER = new TextDecoder('utf-8', { fatal: true });

/** The claims sealed in a confirmation's `requestState`. Times in seconds (RFC 7519 NumericDate). */
export interface ConfirmClaims {
  /** Audience: the server's name. */
  aud: string;
  /** Principal tag: base64url(HMAC-SHA256(salt, principal))[:16 bytes]. */
  sub: string;
  /** Issued at, Unix seconds. */
  iat: number;
  /** Expires at, Unix seconds; expired when `nowMs >= exp * 1000`. */
  exp: number;
  /** Ledger key: 16 random bytes, base64url. */
  jti: string;
  /** Tool name the state was minted for. */
  tool: string;
  /** SHA-256 (base64url) of the RFC 8785 canonical JSON of the parsed arguments. */
  args: string;
  /** SHA-256 (base64url) of the RFC 8785 canonical JSON of `{message, requestedSchema}`. */
  question: string;
  /** The resource identity from round 1, or `null`. */
  fingerprint: unknown;
}

/** What the caller provides to {@link Sealer.seal}; the sealer adds `aud`, `sub`, `iat`, `exp`, `jti`. */
export interface SealInput {
  tool: string;
  args: string;
  question: string;
  fingerprint: unknown;
  /** The principal (raw); only its tag is sealed. */
  principal: string;
  /** Current time in milliseconds. */
  nowMs: number;
}

/** Why {@link Sealer.open} refused a state; goes to `onerror` only, never to the client. */
export class StateRefusedError extends Error {
  constructor(readonly reason: 'malformed' | 'unknown-key' | 'decrypt' | 'audience' | 'expired' | 'principal' | 'claims') {
    super(`requestState refused: ${reason}`);
    this.name = 'StateRefusedError';
  }
}

const B64U_43 = /^[A-Za-z0-9_-]{43}$/;
const B64U_22 = /^[A-Za-z0-9_-]{22}$/;

/**
 * Seals and opens confirmation states under a {@link KeyRing}.
 *
 * @example
 * const sealer = new Sealer({ keys: await KeyRing.random(), audience: 'mcp-confirm', ttlSeconds: 300 });
 * const { state, claims } = await sealer.seal({ tool, args, question, fingerprint, principal: 'local', nowMs: Date.now() });
 * const opened = await sealer.open(state, { principal: 'local', nowMs: Date.now() });
 */
export class Sealer {
  readonly keys: KeyRing;
  readonly audience: string;
  readonly ttlSeconds: number;

  /**
   * @param options.keys - the key ring.
   * @param options.audience - the `aud` claim; non-empty.
   * @param options.ttlSeconds - lifetime of a state in whole seconds; a positive safe integer.
   * @throws {TypeError} when the audience is empty or not a string.
   * @throws {RangeError} when `ttlSeconds` is not a whole number from 1 to {@link MAX_TTL_SECONDS} (0, negative, `Infinity`, `NaN`, fractional, over a day).
   */
  constructor(options: { keys: KeyRing; audience: string; ttlSeconds: number }) {
    if (typeof options.audience !== 'string' || options.audience.length === 0 || !options.audience.isWellFormed()) {
      throw new TypeError('audience must be a non-empty, well-formed string');
    }
    if (!Number.isSafeInteger(options.ttlSeconds) || options.ttlSeconds <= 0 || options.ttlSeconds > MAX_TTL_SECONDS) {
      throw new RangeError(`ttlSeconds must be a whole number of seconds from 1 to ${MAX_TTL_SECONDS}, got ${String(options.ttlSeconds)}`);
    }
    this.keys = options.keys;
    this.audience = options.audience;
    this.ttlSeconds = options.ttlSeconds;
  }

  /**
   * Seals a new state under the first key.
   *
   * @returns the compact JWE string and the claims it holds.
   * @throws {ConfirmBadArgumentError} `ERR_CONFIRM_BAD_ARGUMENT` when the state would exceed
   *   {@link MAX_STATE_LENGTH} (a huge fingerprint): better refuse now than ask a question whose
   *   answer could never be accepted.
   */
  async seal(input: SealInput): Promise<{ state: string; claims: ConfirmClaims }> {
    const key = this.keys.sealing;
    const iat = Math.floor(input.nowMs / 1000);
    const claims: ConfirmClaims = {
      aud: this.audience,
      sub: KeyRing.principalTag(key, input.principal),
      iat,
      exp: iat + this.ttlSeconds,
      jti: randomBytes(16).toString('base64url'),
      tool: input.tool,
      args: input.args,
      question: input.question,
      fingerprint: input.fingerprint ?? null,
    };
    // jose's CompactEncrypt over the JSON claims set: the same RFC 7519 JWE as EncryptJWT, at half its cost here.
    const state = await new CompactEncrypt(ENCODER.encode(JSON.stringify(claims)))
      .setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: key.kid, typ: STATE_TYP })
      .encrypt(key.cryptoKey);
    if (state.length > MAX_STATE_LENGTH) throw new ConfirmBadArgumentError('the request is too large to confirm (its sealed state would exceed the size limit)');
    return { state, claims };
  }

  /**
   * Opens a state presented by a client, failing closed in a fixed order.
   *
   * @param state - the echoed `requestState` (attacker-controlled).
   * @param context.principal - who presents it now.
   * @param context.nowMs - current time in milliseconds.
   * @throws {StateRefusedError} with the reason; the caller turns it into the SDK's `-32602`.
   */
  async open(state: string, context: { principal: string; nowMs: number }): Promise<ConfirmClaims> {
    // 1. Bound the input before any parsing: the client controls its size.
    if (typeof state !== 'string' || state.length === 0 || state.length > MAX_STATE_LENGTH) throw new StateRefusedError('malformed');
    let kid: string | undefined;
    let plaintext: Uint8Array;
    let typ: unknown;
    try {
      // 2. Decrypt and authenticate (AEAD tag) under the key its kid names; only dir + A256GCM.
      const result = await compactDecrypt(
        state,
        async (header) => {
          kid = header.kid;
          const key = typeof header.kid === 'string' ? this.keys.get(header.kid) : undefined;
          if (!key) throw new StateRefusedError('unknown-key');
          return key.cryptoKey;
        },
        { keyManagementAlgorithms: ['dir'], contentEncryptionAlgorithms: ['A256GCM'] },
      );
      plaintext = result.plaintext;
      typ = result.protectedHeader.typ;
    } catch (e) {
      if (e instanceof StateRefusedError) throw e;
      if ((e as { code?: string }).code === 'ERR_JWE_DECRYPTION_FAILED') throw new StateRefusedError('decrypt');
      throw new StateRefusedError('malformed');
    }
    const key = this.keys.get(kid!)!;
    // 3. Only our own kind of token: the typ header, then a JSON object.
    if (typ !== STATE_TYP) throw new StateRefusedError('malformed');
    let payload: Record<string, unknown>;
    try {
      payload = JSON.parse(DECODER.decode(plaintext)) as Record<string, unknown>;
    } catch {
      throw new StateRefusedError('malformed');
    }
    if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) throw new StateRefusedError('malformed');
    // 4. Minted for this audience (RFC 7519 §4.1.3): another service sharing the keys is refused.
    if (payload.aud !== this.audience) throw new StateRefusedError('audience');
    // 5. Not expired: expired at exactly exp (RFC 7519 §4.1.4), compared in milliseconds with the injected clock.
    if (typeof payload.exp !== 'number' || !Number.isFinite(payload.exp) || context.nowMs >= payload.exp * 1000) throw new StateRefusedError('expired');
    // 6. The principal presenting it must be the one it was minted for (tag under the sealing key's salt).
    if (payload.sub !== KeyRing.principalTag(key, context.principal)) throw new StateRefusedError('principal');
    // 7. Our private claims must have exactly the shapes we write.
    const { aud, sub, iat, exp, jti, tool, args, question } = payload;
    if (
      typeof aud !== 'string' ||
      typeof sub !== 'string' ||
      typeof iat !== 'number' ||
      typeof exp !== 'number' ||
      typeof jti !== 'string' ||
      !B64U_22.test(jti) ||
      typeof tool !== 'string' ||
      typeof args !== 'string' ||
      !B64U_43.test(args) ||
      typeof question !== 'string' ||
      !B64U_43.test(question) ||
      !('fingerprint' in payload)
    ) {
      throw new StateRefusedError('claims');
    }
    return { aud, sub, iat, exp, jti, tool, args, question, fingerprint: payload.fingerprint };
  }
}
