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
 * The JWE is assembled here, synchronously, over `node:crypto` (OpenSSL's
 * AES-256-GCM): `BASE64URL(header) || '..' || BASE64URL(iv) || '.' ||
 * BASE64URL(ciphertext) || '.' || BASE64URL(tag)` (RFC 7516 §7.1), a fresh
 * random 96-bit IV per state, a 128-bit tag, and as additional authenticated
 * data the ASCII of the encoded protected header (RFC 7516 §5.1 step 14). The
 * protected header is always the same bytes for a kid:
 * `{"alg":"dir","enc":"A256GCM","kid":KID,"typ":"mcp-confirm-state+jwt"}`,
 * the bytes jose's `CompactEncrypt` produced for the earlier versions, so their
 * states still open. The opener accepts only those bytes for the kid, exactly
 * five parts, an empty encrypted key, a 12-byte IV, a 16-byte tag, and only
 * canonical unpadded base64url (RFC 4648 §5) in every part; jose is the oracle
 * of the format in the tests.
 *
 * @module
 */
import { createCipheriv, createDecipheriv, randomFillSync } from 'node:crypto';
import { MAX_TTL_SECONDS } from '../defaults.js';
import { ConfirmBadArgumentError } from '../errors.js';
import { decodeBase64url } from './base64url.js';
import { KeyRing, type RingKey } from './keyRing.js';

/** JWE `typ` header of every state this package seals. */
export const STATE_TYP = 'mcp-confirm-state+jwt';

/** Longest `requestState` string sealed or accepted, in characters. A larger one is refused at sealing, before anything is asked. */
export const MAX_STATE_LENGTH = 65_536;

/** Longest TTL, in seconds: one day (defined in `../defaults.ts`). A confirmation is meant to be answered now, not stored (spec: "a short expiry"). */
export { MAX_TTL_SECONDS };

const DECODER = new TextDecoder('utf-8', { fatal: true });

/** AES-256-GCM (RFC 7518 §5.3): a 96-bit IV and a 128-bit authentication tag. */
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** Lengths of the IV and the tag in unpadded base64url: 12 bytes are 16 characters, 16 bytes 22. */
const IV_CHARS = 16;
const TAG_CHARS = 22;
/** Random bytes of a `jti`. */
const JTI_BYTES = 16;
/** Fresh random bytes one seal takes: its `jti`, then its IV. */
const SEAL_RANDOM_BYTES = JTI_BYTES + IV_BYTES;
/** Seals served by one `randomFillSync` call (a fixed cost per call, whatever its length). */
const SEALS_PER_FILL = 256;

/**
 * Random bytes for seals, filled from the CSPRNG (`randomFillSync`) `SEALS_PER_FILL` seals at a
 * time and handed out in order; each byte is handed out once, and the whole pool is filled
 * again only after its last byte was taken. A `jti` and an IV are copied out (encoded, or into
 * the cipher context) at once, so refilling never changes a state already sealed.
 */
const randomPool = Buffer.alloc(SEAL_RANDOM_BYTES * SEALS_PER_FILL);
let randomOffset = randomPool.length;

/** The offset in `randomPool` of `SEAL_RANDOM_BYTES` fresh random bytes for one seal. */
function takeSealRandom(): number {
  if (randomOffset === randomPool.length) {
    randomFillSync(randomPool);
    randomOffset = 0;
  }
  const offset = randomOffset;
  randomOffset += SEAL_RANDOM_BYTES;
  return offset;
}

/** One key as the sealer uses it: the encoded protected header for its kid, and that header's ASCII as AAD. */
interface SealingKey {
  readonly key: RingKey;
  /** BASE64URL(UTF8(protected header)): the first part of every state sealed under this key. */
  readonly encodedHeader: string;
  /** ASCII(encodedHeader), the AES-GCM additional authenticated data. */
  readonly aad: Buffer;
  /** The last principal tagged under this key and its tag (one entry: over stdio the principal never changes). */
  lastTag: { principal: string; tag: string } | undefined;
}

/** The principal tag under `sealing`'s key ({@link KeyRing.principalTag}), remembering the last one. */
function principalTagOf(sealing: SealingKey, principal: string): string {
  const last = sealing.lastTag;
  if (last !== undefined && last.principal === principal) return last.tag;
  const tag = KeyRing.principalTag(sealing.key, principal);
  sealing.lastTag = { principal, tag };
  return tag;
}

/** The encoded protected header of every state sealed under `kid` (member order and spelling as jose wrote them). */
function encodedHeaderFor(kid: string): string {
  return Buffer.from(JSON.stringify({ alg: 'dir', enc: 'A256GCM', kid, typ: STATE_TYP }), 'utf8').toString('base64url');
}

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

/** Why opening a sealed state refused it; goes to `onerror` only, never to the client. */
export class StateRefusedError extends Error {
  constructor(
    readonly reason: 'malformed' | 'unknown-key' | 'decrypt' | 'audience' | 'expired' | 'principal' | 'claims',
  ) {
    super(`requestState refused: ${reason}`);
    this.name = 'StateRefusedError';
  }
}

/** Why a state was refused (see {@link StateRefusedError.reason}). */
type Refusal = StateRefusedError['reason'];

const B64U_43 = /^[A-Za-z0-9_-]{43}$/;
const B64U_22 = /^[A-Za-z0-9_-]{22}$/;

/**
 * Seals and opens confirmation states under a {@link KeyRing}, synchronously
 * ({@link Sealer.sealSync}, {@link Sealer.openSync}); {@link Sealer.seal} and
 * {@link Sealer.open} are the same, returning promises.
 *
 * @example
 * ```ts
 * import { KeyRing } from './keyRing.js';
 * import { Sealer } from './sealer.js';
 *
 * const sealer = new Sealer({ keys: await KeyRing.random(), audience: 'mcp-confirm', ttlSeconds: 300 });
 * const { state, claims } = sealer.sealSync({
 *   tool: 'delete_file',
 *   args: '{"path":"notes/cache.txt"}',
 *   question: 'Permanently delete `notes/cache.txt`?',
 *   fingerprint: { path: '/srv/scratch/notes/cache.txt' },
 *   principal: 'local',
 *   nowMs: Date.now(),
 * });
 * const opened = sealer.openSync(state, { principal: 'local', nowMs: Date.now() }); // claims again
 * ```
 */
export class Sealer {
  readonly keys: KeyRing;
  readonly audience: string;
  readonly ttlSeconds: number;
  /** The key that seals, with its header, derived once here. */
  readonly #sealing: SealingKey;
  /** Every key of the ring by its exact encoded protected header: the opener's first check. */
  readonly #byEncodedHeader: ReadonlyMap<string, SealingKey>;

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
      throw new RangeError(
        `ttlSeconds must be a whole number of seconds from 1 to ${MAX_TTL_SECONDS}, got ${String(options.ttlSeconds)}`,
      );
    }
    this.keys = options.keys;
    this.audience = options.audience;
    this.ttlSeconds = options.ttlSeconds;
    const byHeader = new Map<string, SealingKey>();
    for (const kid of options.keys.kids) {
      const encodedHeader = encodedHeaderFor(kid);
      byHeader.set(encodedHeader, {
        key: options.keys.get(kid)!,
        encodedHeader,
        aad: Buffer.from(encodedHeader, 'ascii'),
        lastTag: undefined,
      });
    }
    this.#byEncodedHeader = byHeader;
    this.#sealing = byHeader.get(encodedHeaderFor(options.keys.sealing.kid))!;
  }

  /**
   * Seals a new state under the first key, synchronously.
   *
   * @returns the compact JWE string and the claims it holds.
   * @throws {ConfirmBadArgumentError} `ERR_CONFIRM_BAD_ARGUMENT` when the state would exceed
   *   {@link MAX_STATE_LENGTH} (a huge fingerprint): better refuse now than ask a question whose
   *   answer could never be accepted.
   */
  sealSync(input: SealInput): { state: string; claims: ConfirmClaims } {
    const sealing = this.#sealing;
    const iat = Math.floor(input.nowMs / 1000);
    const offset = takeSealRandom();
    // The jti and the IV are read out of the pool here, before any other code runs (a fingerprint's toJSON
    // could seal again and refill the pool): the cipher context copies the IV, and both are encoded now.
    const iv = randomPool.subarray(offset + JTI_BYTES, offset + SEAL_RANDOM_BYTES);
    const cipher = createCipheriv('aes-256-gcm', sealing.key.secretKey, iv, { authTagLength: TAG_BYTES });
    const encodedIv = iv.toString('base64url');
    const jti = randomPool.toString('base64url', offset, offset + JTI_BYTES);
    const claims: ConfirmClaims = {
      aud: this.audience,
      sub: principalTagOf(sealing, input.principal),
      iat,
      exp: iat + this.ttlSeconds,
      jti,
      tool: input.tool,
      args: input.args,
      question: input.question,
      fingerprint: input.fingerprint ?? null,
    };
    cipher.setAAD(sealing.aad);
    const head = cipher.update(JSON.stringify(claims), 'utf8');
    const rest = cipher.final(); // GCM is a stream mode: empty, kept for form
    const ciphertext = rest.length === 0 ? head : Buffer.concat([head, rest]);
    const tag = cipher.getAuthTag();
    const state = `${sealing.encodedHeader}..${encodedIv}.${ciphertext.toString('base64url')}.${tag.toString('base64url')}`;
    if (state.length > MAX_STATE_LENGTH)
      throw new ConfirmBadArgumentError(
        'the request is too large to confirm (its sealed state would exceed the size limit)',
      );
    return { state, claims };
  }

  /**
   * {@link Sealer.sealSync}, returning a promise.
   *
   * @throws {ConfirmBadArgumentError} `ERR_CONFIRM_BAD_ARGUMENT` (as a rejection) as {@link Sealer.sealSync}.
   */
  async seal(input: SealInput): Promise<{ state: string; claims: ConfirmClaims }> {
    return this.sealSync(input);
  }

  /**
   * Opens a state presented by a client, synchronously, failing closed in a fixed order.
   *
   * @param state - the echoed `requestState` (attacker-controlled).
   * @param context.principal - who presents it now.
   * @param context.nowMs - current time in milliseconds.
   * @throws {StateRefusedError} with the reason; the caller turns it into the SDK's `-32602`.
   */
  openSync(state: string, context: { principal: string; nowMs: number }): ConfirmClaims {
    const opened = this.openOrRefusal(state, context);
    if (opened instanceof StateRefusedError) throw opened;
    return opened;
  }

  /**
   * {@link Sealer.openSync} that returns its refusal instead of throwing it: the claims, or the
   * {@link StateRefusedError} saying why (the confirmation layer's verify hook throws it itself).
   *
   * A flood of forged states costs the server exactly this, so a refusal costs as little as it can:
   * - no stack is recorded for it (walking the SDK's and our frames, up to 10, per refusal): V8's
   *   `Error.stackTraceLimit` is 0 while the state is opened, also for the error `node:crypto` throws
   *   when the tag does not authenticate, and restored after; where it cannot be set (a frozen
   *   `Error`), the state is opened with stacks;
   * - nothing here leaves by throwing: V8 counts a function's interrupt budget only at its returns
   *   and loop back-edges, so a function that always leaves by an exception (as the opener did for
   *   every forged state) never gets its feedback vector or optimised code, and runs in the
   *   interpreter without inline caches, every property load a stub-cache look-up.
   *
   * @param state - the echoed `requestState` (attacker-controlled).
   * @param context.principal - who presents it now.
   * @param context.nowMs - current time in milliseconds.
   * @returns the claims, or the refusal (returned, never thrown).
   */
  openOrRefusal(state: string, context: { principal: string; nowMs: number }): ConfirmClaims | StateRefusedError {
    const limit = Error.stackTraceLimit;
    try {
      Error.stackTraceLimit = 0;
    } catch {
      const opened = this.#open(state, context);
      return typeof opened === 'string' ? new StateRefusedError(opened) : opened;
    }
    try {
      const opened = this.#open(state, context);
      return typeof opened === 'string' ? new StateRefusedError(opened) : opened;
    } finally {
      Error.stackTraceLimit = limit;
    }
  }

  /** Opens `state`, failing closed in a fixed order: the claims, or the reason it refused them ({@link Sealer.openOrRefusal} makes the error). */
  #open(state: string, context: { principal: string; nowMs: number }): ConfirmClaims | Refusal {
    // 1. Bound the input before any parsing: the client controls its size.
    if (typeof state !== 'string' || state.length === 0 || state.length > MAX_STATE_LENGTH) return 'malformed';
    // 2. Exactly the five parts of a compact JWE (RFC 7516 §7.1).
    const parts = state.split('.');
    if (parts.length !== 5) return 'malformed';
    const [encodedHeader, encryptedKey, encodedIv, encodedCiphertext, encodedTag] = parts as [
      string,
      string,
      string,
      string,
      string,
    ];
    // 3. The protected header must be, byte for byte, the one we write for a kid we hold: no other
    //    member (zip, crit, cty, jku, jwk, x5u, p2c, epk, …), no duplicate, no other order, spacing or spelling.
    const sealing = this.#byEncodedHeader.get(encodedHeader);
    if (sealing === undefined) return this.#isOurHeaderForAnotherKid(encodedHeader) ? 'unknown-key' : 'malformed';
    // 4. `dir` has no encrypted key; the IV and the tag have exactly AES-256-GCM's lengths; every part is canonical base64url.
    if (encryptedKey !== '' || encodedIv.length !== IV_CHARS || encodedTag.length !== TAG_CHARS) return 'malformed';
    const iv = decodeBase64url(encodedIv);
    const ciphertext = decodeBase64url(encodedCiphertext);
    const tag = decodeBase64url(encodedTag);
    if (
      iv === undefined ||
      iv.length !== IV_BYTES ||
      ciphertext === undefined ||
      tag === undefined ||
      tag.length !== TAG_BYTES
    ) {
      return 'malformed';
    }
    // 5. Decrypt and authenticate (AES-GCM tag over the header's ASCII and the ciphertext).
    let plaintext: Buffer;
    try {
      const decipher = createDecipheriv('aes-256-gcm', sealing.key.secretKey, iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(sealing.aad);
      decipher.setAuthTag(tag);
      const head = decipher.update(ciphertext);
      const rest = decipher.final(); // throws when the tag does not authenticate; empty otherwise (GCM is a stream mode)
      plaintext = rest.length === 0 ? head : Buffer.concat([head, rest]);
    } catch {
      return 'decrypt';
    }
    // 6. A JSON object (the header already says typ mcp-confirm-state+jwt).
    let payload: Record<string, unknown>;
    try {
      payload = JSON.parse(DECODER.decode(plaintext)) as Record<string, unknown>;
    } catch {
      return 'malformed';
    }
    if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return 'malformed';
    // 7. Minted for this audience (RFC 7519 §4.1.3): another service sharing the keys is refused.
    if (payload.aud !== this.audience) return 'audience';
    // 8. Not expired: expired at exactly exp (RFC 7519 §4.1.4), compared in milliseconds with the injected clock.
    if (typeof payload.exp !== 'number' || !Number.isFinite(payload.exp) || context.nowMs >= payload.exp * 1000)
      return 'expired';
    // 9. The principal presenting it must be the one it was minted for (tag under the sealing key's salt).
    if (payload.sub !== principalTagOf(sealing, context.principal)) return 'principal';
    // 10. Our private claims must have exactly the shapes we write.
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
      return 'claims';
    }
    return { aud, sub, iat, exp, jti, tool, args, question, fingerprint: payload.fingerprint };
  }

  /**
   * {@link Sealer.openSync}, returning a promise.
   *
   * @throws {StateRefusedError} (as a rejection) as {@link Sealer.openSync}.
   */
  async open(state: string, context: { principal: string; nowMs: number }): Promise<ConfirmClaims> {
    return this.openSync(state, context);
  }

  /** Whether an unknown encoded header is exactly the one we would write for some other well-formed kid (a key this ring does not hold). */
  #isOurHeaderForAnotherKid(encodedHeader: string): boolean {
    const bytes = decodeBase64url(encodedHeader);
    if (bytes === undefined) return false;
    let kid: unknown;
    try {
      kid = (JSON.parse(DECODER.decode(bytes)) as { kid?: unknown } | null)?.kid;
    } catch {
      return false;
    }
    return typeof kid === 'string' && encodedHeaderFor(kid) === encodedHeader;
  }
}
