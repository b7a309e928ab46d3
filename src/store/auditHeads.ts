/**
 * Audit trail heads kept in the shared store: what lets `audit verify` tell a
 * trail whose end was cut off, or a trail put in another's place, from the
 * trail that was written there.
 *
 * The audit trail writer (`AuditLog`, src/audit/auditLog.ts) records, for the
 * path of its file, the trail's id and the `seq` and `mac` of its last line,
 * each time after those lines are on disk (so a crash leaves the head at or
 * behind the file's end, never ahead of it). The verifier reads it back for
 * the file it checks: a file that ends before the recorded head was cut; a
 * file whose trail id is not the recorded one is another trail.
 *
 * One record per path, replaced when a new trail starts at that path, moved
 * forward by its own trail's later lines and never back by the store itself (a
 * head with a `seq` not above the recorded one of the same trail changes
 * nothing).
 *
 * > [!WARNING]
 * > Whoever can write the store can lower the head to an earlier genuine one
 * > (a `seq` and `mac` the trail did have), after which cutting the file back
 * > to that line is not detected. The head proves a cut only against those who
 * > can change the trail file but not the store.
 *
 * @module
 */

/** The head of one audit trail, as recorded in the store. */
export interface AuditHead {
  /** The trail's random id, from its opening line (base64url, 22 characters). */
  trail: string;
  /** The `seq` of the trail's last line on disk (1 for a trail with only its opening line). */
  seq: number;
  /** The `mac` of that line (unpadded base64url of an HMAC-SHA256, 43 characters). */
  mac: string;
}

/** Keeps each audit trail's head, by the trail file's path. Implemented by every store (memory, SQLite, Redis). */
export interface AuditHeadStore {
  /**
   * Records the head of the trail at `path`: replaces the record when it names
   * another trail, moves it forward when `head.seq` is above the recorded one,
   * and leaves it as it is otherwise (atomic).
   *
   * @param path - the trail file's absolute path, its directory's symbolic links resolved (as `AuditLog.headKey`).
   * @param head - see {@link AuditHead}.
   * @throws {RangeError} when the path or a field is malformed (see `checkAuditHead`).
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the store fails.
   */
  recordAuditHead(path: string, head: AuditHead): Promise<void>;

  /**
   * Reads the head recorded for `path`, or `undefined` when none was. Changes nothing.
   *
   * @throws {RangeError} when the path is malformed.
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the store fails.
   */
  auditHead(path: string): Promise<AuditHead | undefined>;
}

/** The method names of {@link AuditHeadStore} (forwarded by wrappers such as the metrics' timed ledger). */
export const AUDIT_HEAD_STORE_METHODS = ['recordAuditHead', 'auditHead'] as const;

/** Whether a store keeps audit heads (has every method of {@link AuditHeadStore}). */
export function isAuditHeadStore(store: unknown): store is AuditHeadStore {
  return (
    typeof store === 'object' &&
    store !== null &&
    AUDIT_HEAD_STORE_METHODS.every((m) => typeof (store as Record<string, unknown>)[m] === 'function')
  );
}

const TRAIL_ID = /^[A-Za-z0-9_-]{22}$/;
const MAC = /^[A-Za-z0-9_-]{43}$/;

/**
 * Checks a path given to {@link AuditHeadStore}: 1 to 4,096 well-formed characters without NUL
 * (a lone surrogate would be stored as U+FFFD, so two paths could share one record).
 *
 * @throws {RangeError} naming what is wrong (never echoing the path).
 */
export function checkAuditHeadPath(path: string): void {
  if (
    typeof path !== 'string' ||
    path.length === 0 ||
    path.length > 4096 ||
    !path.isWellFormed() ||
    path.includes('\u0000')
  ) {
    throw new RangeError('an audit head path must be 1 to 4,096 well-formed characters without NUL');
  }
}

/**
 * Checks a path and a head given to {@link AuditHeadStore.recordAuditHead}.
 *
 * @throws {RangeError} naming the malformed field.
 */
export function checkAuditHead(path: string, head: AuditHead): void {
  checkAuditHeadPath(path);
  if (typeof head?.trail !== 'string' || !TRAIL_ID.test(head.trail))
    throw new RangeError('an audit head trail id must be 22 base64url characters');
  if (!Number.isSafeInteger(head.seq) || head.seq < 1)
    throw new RangeError('an audit head seq must be a positive integer');
  if (typeof head.mac !== 'string' || !MAC.test(head.mac))
    throw new RangeError('an audit head mac must be 43 base64url characters');
}

/**
 * Whether a head read back from a store is well formed (a store that answers anything else fails closed).
 */
export function isAuditHead(value: unknown): value is AuditHead {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.trail === 'string' &&
    TRAIL_ID.test(v.trail) &&
    Number.isSafeInteger(v.seq) &&
    (v.seq as number) >= 1 &&
    typeof v.mac === 'string' &&
    MAC.test(v.mac)
  );
}
