/**
 * The key ring that seals and opens `requestState`: the first key seals,
 * every key opens, chosen by the JWE `kid` header (RFC 7516 §4.1.6).
 *
 * Keys are exactly 32 random bytes (AES-256-GCM with `alg: dir`, RFC 7518
 * §4.5 and §5.3). Everything a key needs is derived once, when it is
 * imported, never per call: a `node:crypto` `KeyObject` (what the sealer
 * uses, synchronously), a non-extractable WebCrypto `CryptoKey` (for callers
 * that use WebCrypto libraries such as jose), and, with HKDF-SHA256 (RFC 5869,
 * `node:crypto`), the salt of the principal tag carried in the state's `sub`
 * claim; the salt is never stored in the state.
 *
 * Rotation, in three phases, each at least one TTL apart:
 * 1. `[old, new]`: every replica learns the new key (old still seals);
 * 2. `[new, old]`: new seals, states sealed under old still open;
 * 3. `[new]`: one TTL after phase 2, drop old; its states are refused.
 *
 * @module
 */
import { createHmac, createSecretKey, hkdfSync, randomBytes, webcrypto, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { decodeBase64url } from './base64url.js';

/** One entry of a key file: `{"kid":"k2","k":"<base64url of exactly 32 random bytes>"}`. */
export interface KeySpec {
  /** Key id, 1–64 characters of `[A-Za-z0-9._-]`. */
  kid: string;
  /** The key: unpadded base64url (RFC 4648 §5) of exactly 32 bytes. */
  k: string;
}

/** A key ready for use. */
export interface RingKey {
  readonly kid: string;
  /** The 32-byte secret as a `node:crypto` `KeyObject` (type `secret`): what the sealer encrypts and decrypts with (AES-256-GCM). */
  readonly secretKey: KeyObject;
  /** The same key as an AES-GCM 256 WebCrypto `CryptoKey`, non-extractable, for `encrypt`/`decrypt` (e.g. with jose). */
  readonly cryptoKey: webcrypto.CryptoKey;
  /** 32-byte HKDF-derived salt for principal tags sealed under this key. */
  readonly principalSalt: Buffer;
}

const KID = /^[A-Za-z0-9._-]{1,64}$/;
const HKDF_INFO = 'mcp-confirm/v1/principal-salt';

async function importKey(kid: string, raw: Uint8Array): Promise<RingKey> {
  if (!KID.test(kid)) throw new TypeError(`key id ${JSON.stringify(kid)} must be 1-64 characters of A-Z a-z 0-9 . _ -`);
  if (raw.byteLength !== 32) throw new RangeError(`key ${kid} must be exactly 32 bytes, got ${raw.byteLength}`);
  const secretKey = createSecretKey(raw);
  const cryptoKey = await webcrypto.subtle.importKey('raw', raw, 'AES-GCM', false, ['encrypt', 'decrypt']);
  const principalSalt = Buffer.from(hkdfSync('sha256', raw, Buffer.alloc(0), HKDF_INFO, 32));
  return { kid, secretKey, cryptoKey, principalSalt };
}

function decodeKey(kid: string, k: unknown): Uint8Array {
  if (typeof k !== 'string') throw new TypeError(`key ${kid}: "k" must be a base64url string`);
  // Refuse non-canonical spellings (other characters, padding, stray bits): one key, one text.
  const raw = decodeBase64url(k);
  if (raw === undefined) throw new TypeError(`key ${kid}: "k" is not canonical unpadded base64url (RFC 4648 §5)`);
  return raw;
}

/**
 * An ordered set of keys: `keys[0]` seals, all open.
 *
 * @example
 * ```ts
 * import { KeyRing } from 'mcp-confirm';
 *
 * const ring = await KeyRing.fromFile('/etc/mcp-confirm/keys.json');
 * const ring2 = await KeyRing.random(); // one random key for this process
 * ```
 */
export class KeyRing {
  readonly #keys: readonly RingKey[];
  readonly #byKid: ReadonlyMap<string, RingKey>;

  private constructor(keys: readonly RingKey[]) {
    this.#keys = keys;
    this.#byKid = new Map(keys.map((k) => [k.kid, k]));
  }

  /**
   * Builds a ring from key specs (the `keys` array of a key file).
   *
   * @param specs - at least one {@link KeySpec}; kids unique.
   * @throws {TypeError} when the list is empty, a kid is malformed or repeated, or `k` is not canonical base64url.
   * @throws {RangeError} when a key is not exactly 32 bytes.
   */
  static async fromSpecs(specs: readonly KeySpec[]): Promise<KeyRing> {
    if (!Array.isArray(specs) || specs.length === 0) throw new TypeError('a key ring needs at least one key');
    const seen = new Set<string>();
    const keys: RingKey[] = [];
    for (const spec of specs) {
      if (typeof spec !== 'object' || spec === null) throw new TypeError('each key must be an object {"kid","k"}');
      const kid = (spec as { kid?: unknown }).kid;
      if (typeof kid !== 'string' || !KID.test(kid))
        throw new TypeError(`key id ${JSON.stringify(kid)} must be 1-64 characters of A-Z a-z 0-9 . _ -`);
      if (seen.has(kid)) throw new TypeError(`key id ${kid} appears twice`);
      seen.add(kid);
      keys.push(await importKey(kid, decodeKey(kid, (spec as { k?: unknown }).k)));
    }
    return new KeyRing(keys);
  }

  /**
   * Reads a key file: JSON `{"keys":[{"kid":"k2","k":"<base64url of 32 bytes>"}, …]}`.
   *
   * @param path - file path.
   * @throws {TypeError} when the file cannot be read or parsed, or a key is malformed (the message never contains key material).
   * @throws {RangeError} when a key is not exactly 32 bytes.
   */
  static async fromFile(path: string): Promise<KeyRing> {
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (e) {
      throw new TypeError(`cannot read key file ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new TypeError(`key file ${path} is not valid JSON`);
    }
    const keys = (parsed as { keys?: unknown } | null)?.keys;
    if (!Array.isArray(keys)) throw new TypeError(`key file ${path} must hold {"keys":[{"kid":…,"k":…}, …]}`);
    return KeyRing.fromSpecs(keys as KeySpec[]);
  }

  /** A ring of one fresh random key (kid `ephemeral`), for one process. */
  static async random(): Promise<KeyRing> {
    return new KeyRing([await importKey('ephemeral', randomBytes(32))]);
  }

  /**
   * Makes a new key spec with 32 random bytes, for writing a key file.
   *
   * @throws {TypeError} when `kid` is not 1-64 characters of `A-Z a-z 0-9 . _ -` (the ring would refuse it).
   */
  static generateSpec(kid: string): KeySpec {
    if (typeof kid !== 'string' || !KID.test(kid))
      throw new TypeError(`key id ${JSON.stringify(kid)} must be 1-64 characters of A-Z a-z 0-9 . _ -`);
    return { kid, k: randomBytes(32).toString('base64url') };
  }

  /** The key that seals (the first). */
  get sealing(): RingKey {
    return this.#keys[0]!;
  }

  /** Key ids in ring order. */
  get kids(): string[] {
    return this.#keys.map((k) => k.kid);
  }

  /** The key with this kid, or `undefined`. */
  get(kid: string): RingKey | undefined {
    return this.#byKid.get(kid);
  }

  /**
   * The tag of a principal under one key: base64url of the first 16 bytes of
   * HMAC-SHA256(principalSalt, JSON string of principal). JSON keeps lone
   * surrogates distinct (UTF-8 would fold them into U+FFFD). Reveals nothing
   * of the principal. The last 1,024 tags of each key are kept (a call under
   * a grant computes its caller's tag on every call).
   */
  static principalTag(key: RingKey, principal: string): string {
    let kept = TAGS.get(key);
    if (kept === undefined) TAGS.set(key, (kept = new Map()));
    const known = kept.get(principal);
    if (known !== undefined) return known;
    const tag = createHmac('sha256', key.principalSalt)
      .update(JSON.stringify(principal), 'utf8')
      .digest()
      .subarray(0, 16)
      .toString('base64url');
    // Bounded: past the limit the oldest kept tag goes (a Map iterates in insertion order).
    if (kept.size >= PRINCIPAL_TAGS_KEPT) kept.delete(kept.keys().next().value!);
    kept.set(principal, tag);
    return tag;
  }
}

/** How many principal tags {@link KeyRing.principalTag} keeps per key: 1,024. */
const PRINCIPAL_TAGS_KEPT = 1024;
/** The tags kept, per key (a key no longer referenced takes its tags with it). */
const TAGS = new WeakMap<RingKey, Map<string, string>>();
