/**
 * The MAC keys of the audit trail, derived from the same key file as the
 * {@link KeyRing} (`--key-file`): for each key of the ring,
 * HKDF-SHA256 (RFC 5869, `node:crypto` `hkdfSync`) with
 * - IKM: the key's 32 raw bytes,
 * - salt: the UTF-8 bytes of {@link AUDIT_HKDF_SALT} (`"mcp-confirm/v1/audit-salt"`),
 * - info: the UTF-8 bytes of {@link AUDIT_HKDF_INFO} (`"mcp-confirm/v1/audit-mac"`),
 * - L: 32 bytes,
 * used as an HMAC-SHA256 key (RFC 2104). The info string differs from the
 * principal-salt derivation (`"mcp-confirm/v1/principal-salt"`), so the two
 * uses of one key never share derived bytes. The first key MACs new lines;
 * every key verifies (a line names its `kid`), so a trail written before a
 * rotation still verifies while the old key stays in the file.
 *
 * The key ring keeps its raw bytes private, so these keys are read from the
 * key specs themselves (validated by {@link KeyRing.fromSpecs} with the same
 * rules and messages).
 *
 * @module
 */
import { createHmac, createSecretKey, hkdfSync, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { KeyRing, type KeySpec } from '../state/keyRing.js';

/** HKDF salt of the audit MAC keys (UTF-8). */
export const AUDIT_HKDF_SALT = 'mcp-confirm/v1/audit-salt';
/** HKDF info of the audit MAC keys (UTF-8). */
export const AUDIT_HKDF_INFO = 'mcp-confirm/v1/audit-mac';

/** One audit MAC key. */
export interface AuditKey {
  readonly kid: string;
  /** HMAC-SHA256 key (`node:crypto` `KeyObject`, type `secret`, 32 bytes). */
  readonly key: KeyObject;
}

/**
 * The audit MAC keys of a key file: the first MACs, all verify.
 *
 * @example
 * const keys = await AuditKeys.fromFile('/etc/mcp-confirm/keys.json');
 */
export class AuditKeys {
  readonly #keys: readonly AuditKey[];
  readonly #byKid: ReadonlyMap<string, AuditKey>;

  private constructor(keys: readonly AuditKey[]) {
    this.#keys = keys;
    this.#byKid = new Map(keys.map((k) => [k.kid, k]));
  }

  /**
   * Derives the audit keys of key specs (the `keys` array of a key file).
   *
   * @param specs - at least one {@link KeySpec}, as {@link KeyRing.fromSpecs} accepts them.
   * @throws {TypeError} when the list is empty, a kid is malformed or repeated, or `k` is not canonical base64url (the message never contains key material).
   * @throws {RangeError} when a key is not exactly 32 bytes.
   */
  static async fromSpecs(specs: readonly KeySpec[]): Promise<AuditKeys> {
    // The ring's own checks: one set of rules for what a key is.
    await KeyRing.fromSpecs(specs);
    return new AuditKeys(
      specs.map((spec) => {
        // Canonical unpadded base64url (checked above), so Buffer decodes exactly these 32 bytes.
        const raw = Buffer.from(spec.k, 'base64url');
        const derived = Buffer.from(hkdfSync('sha256', raw, Buffer.from(AUDIT_HKDF_SALT, 'utf8'), Buffer.from(AUDIT_HKDF_INFO, 'utf8'), 32));
        raw.fill(0);
        return { kid: spec.kid, key: createSecretKey(derived) };
      }),
    );
  }

  /**
   * Reads a key file (`{"keys":[{"kid":…,"k":…}, …]}`) and derives its audit keys.
   *
   * @param path - the key file, as given to `--key-file`.
   * @throws {TypeError} when the file cannot be read or parsed, or a key is malformed (never echoing key material).
   * @throws {RangeError} when a key is not exactly 32 bytes.
   */
  static async fromFile(path: string): Promise<AuditKeys> {
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
    return AuditKeys.fromSpecs(keys as KeySpec[]);
  }

  /** The key that MACs new lines (the first of the file). */
  get signing(): AuditKey {
    return this.#keys[0]!;
  }

  /** The key with this kid, or `undefined`. */
  get(kid: string): AuditKey | undefined {
    return this.#byKid.get(kid);
  }

  /** HMAC-SHA256 of `bytes` under `key`, unpadded base64url (43 characters). */
  static mac(key: AuditKey, bytes: string): string {
    return createHmac('sha256', key.key).update(bytes, 'utf8').digest('base64url');
  }
}
