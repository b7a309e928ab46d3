/**
 * The ledger of outstanding confirmations: the server-side half of "spent once".
 *
 * MCP spec 2026-07-28, basic/patterns/mrtr, "Server Requirements": principal,
 * TTL and request binding only narrow replay; a server whose state must be
 * consumed at most once MUST enforce that itself, server-side. A `jti` is
 * issued into the ledger when the question is asked (round 1) and spent
 * atomically when the answer comes back (round 2), whatever the answer.
 *
 * Every implementation keeps the caller's clock: `expiresAtMs` is stored with
 * the entry and compared with the `nowMs` passed to {@link Ledger.spend} in the
 * same atomic step, so an injected clock works and a store's own clock never
 * decides. An entry is expired when `nowMs >= expiresAtMs`.
 *
 * @module
 */

/** The outcome of {@link Ledger.spend}. Only `'spent'` lets the caller go on. */
export type SpendOutcome =
  /** This call removed the outstanding entry: it is the one and only redemption. */
  | 'spent'
  /** The entry was already redeemed (known from a tombstone kept until its expiry). */
  | 'already-spent'
  /** Not outstanding here: never issued here, swept, or its tombstone was dropped. */
  | 'unknown'
  /** The entry was outstanding but `nowMs >= expiresAtMs`; it is removed. */
  | 'expired';

/** Where a confirmation lives between round 1 and round 2. */
export interface Ledger {
  /**
   * Records a new outstanding confirmation.
   *
   * @param jti - a random nonce (at least 122 bits), the ledger key. Never the wire `requestState`.
   * @param principal - an opaque tag of who asked (used for per-principal bounds).
   * @param expiresAtMs - Unix time in milliseconds at which the entry expires.
   * @param nowMs - the caller's current time in milliseconds (for sweeping). Defaults to `Date.now()`.
   * @throws {ConfirmCapacityError} `ERR_CONFIRM_CAPACITY` when a bound is reached.
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the store fails.
   */
  issue(jti: string, principal: string, expiresAtMs: number, nowMs?: number): Promise<void>;

  /**
   * Atomically redeems a confirmation: of any number of concurrent calls with
   * the same `jti`, at most one ever gets `'spent'`.
   *
   * @param jti - the nonce given to {@link Ledger.issue}.
   * @param nowMs - the caller's current time in milliseconds.
   * @returns the {@link SpendOutcome}.
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the store fails.
   */
  spend(jti: string, nowMs: number): Promise<SpendOutcome>;

  /** A short human name of the store for messages, e.g. `'memory'`, `'sqlite'`, `'redis'`. */
  readonly kind: string;

  /** `true` when every process of the deployment sees the same entries (not the memory ledger). */
  readonly shared: boolean;

  /** Releases connections or handles. Idempotent. */
  close?(): Promise<void>;
}

/** The methods of {@link Ledger} (besides `close`), for wrappers such as the metrics' timed store. */
export const LEDGER_METHODS = ['issue', 'spend'] as const;

/**
 * Reads a bound option of a ledger: a positive safe integer, or the default.
 *
 * @throws {RangeError} naming the option when the value is not a positive safe integer.
 */
export function positiveInteger(name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v <= 0)
    throw new RangeError(`${name} must be a positive integer, got ${String(value)}`);
  return v;
}
