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
 * ```ts
 * import { AuditKeys } from 'mcp-confirm';
 *
 * const keys = await AuditKeys.fromFile('/etc/mcp-confirm/keys.json');
 * ```
 */
export class AuditKeys {
  readonly #keys: readonly AuditKey[];
  readonly #byKid: ReadonlyMap<string, AuditKey>;

  private constructor(keys: readonly AuditKey[]) {
    this.#keys = keys;
    this.#byKid = new Map(keys.map((k) => [k.kid, k]));
  }

  /**
   * Derives the audit keys of a key ring: one per ring key, same kid, same order,
   * HKDF-SHA256 (RFC 5869) of the ring key with the salt `"mcp-confirm/v1/audit-salt"` and the
   * info `"mcp-confirm/v1/audit-mac"` (UTF-8), 32 bytes. The ring key itself never MACs a line.
   *
   * @param ring - the ring that seals the states (the key file given to `--key-file`).
   */
  static fromRing(ring: KeyRing): AuditKeys {
    const salt = Buffer.from(AUDIT_HKDF_SALT, 'utf8');
    const info = Buffer.from(AUDIT_HKDF_INFO, 'utf8');
    return new AuditKeys(
      ring.kids.map((kid) => ({
        kid,
        key: createSecretKey(Buffer.from(hkdfSync('sha256', ring.get(kid)!.secretKey, salt, info, 32))),
      })),
    );
  }

  /**
   * Derives the audit keys of key specs (the `keys` array of a key file).
   *
   * @param specs - at least one {@link KeySpec}, as {@link KeyRing.fromSpecs} accepts them.
   * @throws {TypeError} when the list is empty, a kid is malformed or repeated, or `k` is not canonical base64url (the message never contains key material).
   * @throws {RangeError} when a key is not exactly 32 bytes.
   */
  static async fromSpecs(specs: readonly KeySpec[]): Promise<AuditKeys> {
    return AuditKeys.fromRing(await KeyRing.fromSpecs(specs));
  }

  /**
   * Reads a key file (`{"keys":[{"kid":…,"k":…}, …]}`, as {@link KeyRing.fromFile} reads it) and derives its audit keys.
   *
   * @param path - the key file, as given to `--key-file`.
   * @throws {TypeError} when the file cannot be read or parsed, or a key is malformed (never echoing key material).
   * @throws {RangeError} when a key is not exactly 32 bytes.
   */
  static async fromFile(path: string): Promise<AuditKeys> {
    return AuditKeys.fromRing(await KeyRing.fromFile(path));
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
