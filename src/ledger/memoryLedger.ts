/**
 * An in-process {@link Ledger}: correct for one process (a stdio server), wrong
 * behind a load balancer (replica B does not know what replica A issued).
 *
 * Bounded per principal and in total, so a client that asks and never answers
 * cannot grow memory: beyond a bound, round 1 is refused with
 * `ERR_CONFIRM_CAPACITY`. Expired entries are swept as new ones arrive.
 * Spent entries leave a tombstone until their expiry, so a second redemption
 * is told `'already-spent'` (tombstones are bounded too; the oldest is dropped
 * first, after which a replay is `'unknown'`, still refused).
 *
 * @module
 */
import { ConfirmCapacityError } from '../errors.js';
import type { Ledger, SpendOutcome } from './ledger.js';

/** Options of {@link MemoryLedger}. */
export interface MemoryLedgerOptions {
  /** Most outstanding confirmations one principal may hold. Defaults to 1,000. */
  maxPerPrincipal?: number;
  /** Most outstanding confirmations in total; also the bound on tombstones. Defaults to 100,000. */
  maxTotal?: number;
}

interface Entry {
  principal: string;
  expiresAtMs: number;
}

function positiveInteger(name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v <= 0) throw new RangeError(`${name} must be a positive integer, got ${String(value)}`);
  return v;
}

/**
 * A ledger held in a `Map` of this process.
 *
 * @example
 * const ledger = new MemoryLedger({ maxPerPrincipal: 100 });
 * await ledger.issue(jti, 'local', Date.now() + 300_000);
 * await ledger.spend(jti, Date.now()); // 'spent'
 * await ledger.spend(jti, Date.now()); // 'already-spent'
 */
export class MemoryLedger implements Ledger {
  readonly kind = 'memory';
  readonly shared = false;
  readonly maxPerPrincipal: number;
  readonly maxTotal: number;
  readonly #outstanding = new Map<string, Entry>();
  readonly #perPrincipal = new Map<string, number>();
  /** jti → expiresAtMs of spent entries, in insertion order. */
  readonly #tombstones = new Map<string, number>();

  /**
   * @param options - bounds; see {@link MemoryLedgerOptions}.
   * @throws {RangeError} when a bound is not a positive integer.
   */
  constructor(options: MemoryLedgerOptions = {}) {
    this.maxPerPrincipal = positiveInteger('maxPerPrincipal', options.maxPerPrincipal, 1_000);
    this.maxTotal = positiveInteger('maxTotal', options.maxTotal, 100_000);
  }

  /** Number of outstanding (issued, not spent, not swept) confirmations. */
  get size(): number {
    return this.#outstanding.size;
  }

  async issue(jti: string, principal: string, expiresAtMs: number, nowMs: number = Date.now()): Promise<void> {
    this.issueSync(jti, principal, expiresAtMs, nowMs);
  }

  async spend(jti: string, nowMs: number): Promise<SpendOutcome> {
    return this.spendSync(jti, nowMs);
  }

  /** Synchronous {@link issue}; the same checks and errors. */
  issueSync(jti: string, principal: string, expiresAtMs: number, nowMs: number = Date.now()): void {
    // Cheap amortised sweep: entries mostly arrive in expiry order.
    this.#sweepFront(nowMs);
    if (this.#outstanding.has(jti) || this.#tombstones.has(jti)) throw new RangeError('jti already issued');
    let held = this.#perPrincipal.get(principal) ?? 0;
    if (held >= this.maxPerPrincipal || this.#outstanding.size >= this.maxTotal) {
      // Only at a bound pay for a full sweep; then decide.
      this.sweep(nowMs);
      held = this.#perPrincipal.get(principal) ?? 0;
      if (held >= this.maxPerPrincipal) throw new ConfirmCapacityError('principal');
      if (this.#outstanding.size >= this.maxTotal) throw new ConfirmCapacityError('total');
    }
    this.#outstanding.set(jti, { principal, expiresAtMs });
    this.#perPrincipal.set(principal, held + 1);
  }

  /** Synchronous {@link spend}: JavaScript runs it to the end before any other spend, so it is atomic. */
  spendSync(jti: string, nowMs: number): SpendOutcome {
    const entry = this.#outstanding.get(jti);
    if (entry === undefined) return this.#tombstones.has(jti) ? 'already-spent' : 'unknown';
    this.#remove(jti, entry);
    if (nowMs >= entry.expiresAtMs) return 'expired';
    this.#tombstones.set(jti, entry.expiresAtMs);
    if (this.#tombstones.size > this.maxTotal) {
      const oldest = this.#tombstones.keys().next();
      if (!oldest.done) this.#tombstones.delete(oldest.value);
    }
    return 'spent';
  }

  /**
   * Removes every entry and tombstone with `expiresAtMs <= nowMs`. O(n).
   *
   * @param nowMs - current time in milliseconds. Defaults to `Date.now()`.
   * @returns how many outstanding entries were removed.
   */
  sweep(nowMs: number = Date.now()): number {
    let removed = 0;
    for (const [jti, entry] of this.#outstanding) {
      if (nowMs >= entry.expiresAtMs) {
        this.#remove(jti, entry);
        removed++;
      }
    }
    for (const [jti, expiresAtMs] of this.#tombstones) if (nowMs >= expiresAtMs) this.#tombstones.delete(jti);
    return removed;
  }

  async close(): Promise<void> {}

  #sweepFront(nowMs: number): void {
    for (const [jti, entry] of this.#outstanding) {
      if (nowMs < entry.expiresAtMs) break;
      this.#remove(jti, entry);
    }
    for (const [jti, expiresAtMs] of this.#tombstones) {
      if (nowMs < expiresAtMs) break;
      this.#tombstones.delete(jti);
    }
  }

  #remove(jti: string, entry: Entry): void {
    this.#outstanding.delete(jti);
    const held = (this.#perPrincipal.get(entry.principal) ?? 1) - 1;
    if (held <= 0) this.#perPrincipal.delete(entry.principal);
    else this.#perPrincipal.set(entry.principal, held);
  }
}
