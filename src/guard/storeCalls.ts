/**
 * The guard's calls to what keeps state between the two rounds, failing closed: a
 * {@link ConfirmError} a store (or the approval page) throws passes through as it is, anything
 * else becomes `ERR_CONFIRM_LEDGER_UNAVAILABLE` ({@link failClosed}); and a spend's outcome becomes
 * its refusal ({@link spendRefusal}): only `'spent'` lets the call go on.
 *
 * @module
 */
import {
  ConfirmError,
  ConfirmExpiredError,
  ConfirmLedgerUnavailableError,
  ConfirmSpentError,
  ConfirmUnknownError,
} from '../errors.js';
import type { ConfirmStore } from '../store/confirmStore.js';
import type { Grant, NewGrant, NewPlan, TakeGrantOutcome, TakenPlanSlot } from '../store/grantStore.js';
import type { SpendOutcome } from '../store/ledger.js';
import type { ConfirmClaims } from '../state/sealer.js';

/**
 * Runs one call to a store (or to the approval page, which reads and writes the store), failing
 * closed: a {@link ConfirmError} passes through; anything else thrown becomes
 * {@link ConfirmLedgerUnavailableError} with the original as its `cause`.
 *
 * @param call - the call; a synchronous throw is caught as well.
 * @returns what the call resolved to.
 * @throws {ConfirmError} the call's own refusal (e.g. `ERR_CONFIRM_CAPACITY`), else `ERR_CONFIRM_LEDGER_UNAVAILABLE`.
 */
export async function failClosed<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (e) {
    if (e instanceof ConfirmError) throw e;
    throw new ConfirmLedgerUnavailableError({ cause: e });
  }
}

/**
 * The refusal a spend's outcome means, or `undefined` for `'spent'` (the one redemption).
 *
 * @param outcome - what `Ledger.spend` answered (anything but the four known outcomes fails closed).
 * @param unknownHint - the sentence after the `ERR_CONFIRM_UNKNOWN` refusal (`''`: none).
 * @returns `ERR_CONFIRM_SPENT`, `ERR_CONFIRM_EXPIRED`, `ERR_CONFIRM_UNKNOWN` (with the hint) or
 *   `ERR_CONFIRM_LEDGER_UNAVAILABLE`; `undefined` when spent.
 */
export function spendRefusal(outcome: SpendOutcome, unknownHint: string): ConfirmError | undefined {
  switch (outcome) {
    case 'spent':
      return undefined;
    case 'already-spent':
      return new ConfirmSpentError();
    case 'expired':
      return new ConfirmExpiredError();
    case 'unknown':
      return new ConfirmUnknownError(unknownHint);
    default:
      // Anything but a clean, known answer fails closed.
      return new ConfirmLedgerUnavailableError();
  }
}

/** The guard's calls to its store, made by {@link storeCalls}. */
export interface StoreCalls {
  /**
   * Issues the `jti` of freshly sealed claims (round 1), outstanding until the claims expire.
   *
   * @param claims - the sealed claims (`jti`, the principal tag `sub`, `exp` in seconds).
   * @param nowMs - the caller's clock, Unix milliseconds.
   * @throws {ConfirmError} `ERR_CONFIRM_CAPACITY`, or `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the store fails.
   */
  issue(claims: ConfirmClaims, nowMs: number): Promise<void>;
  /**
   * Spends a `jti` atomically (round 2); returns only when this call is its one redemption.
   *
   * @param jti - the confirmation's nonce.
   * @param nowMs - the caller's clock, Unix milliseconds.
   * @throws {ConfirmError} `ERR_CONFIRM_SPENT`, `ERR_CONFIRM_EXPIRED`, `ERR_CONFIRM_UNKNOWN` (with the
   *   hint when the store is not shared) or `ERR_CONFIRM_LEDGER_UNAVAILABLE`.
   */
  spend(jti: string, nowMs: number): Promise<void>;
  /**
   * Spends a `jti` whose question can never be answered, to free its slot; whatever happens
   * (a failure included) is ignored. Never rejects.
   */
  release(jti: string, nowMs: number): Promise<void>;
  /**
   * Spends a `jti` as {@link spend} does and, only when this call spent it, creates `grant` in the
   * same atomic step.
   *
   * @returns `'created'`, or `'full'` (spent, but a bound on live grants was reached: no grant).
   * @throws {ConfirmError} as {@link spend}.
   */
  spendGranting(jti: string, nowMs: number, grant: NewGrant): Promise<'created' | 'full'>;
  /** As {@link spendGranting}, creating a plan. */
  spendPlanning(jti: string, nowMs: number, plan: NewPlan): Promise<'created' | 'full'>;
  /** The live grants of one audience, principal tag and tool, oldest first. @throws {ConfirmError} `ERR_CONFIRM_LEDGER_UNAVAILABLE`. */
  findGrants(audience: string, principal: string, tool: string, nowMs: number): Promise<Grant[]>;
  /** Takes one use of a grant. @throws {ConfirmError} `ERR_CONFIRM_LEDGER_UNAVAILABLE`. */
  takeGrantUse(id: string, nowMs: number): Promise<TakeGrantOutcome>;
  /** Revokes a grant. @throws {ConfirmError} `ERR_CONFIRM_LEDGER_UNAVAILABLE`. */
  revokeGrant(id: string, nowMs: number): Promise<'revoked' | 'unknown'>;
  /** Takes an unused plan slot by key. @throws {ConfirmError} `ERR_CONFIRM_LEDGER_UNAVAILABLE`. */
  takePlanSlot(key: string, nowMs: number): Promise<TakenPlanSlot | undefined>;
}

/**
 * The guard's calls to `store`, each failing closed.
 *
 * @param store - where the confirmations are outstanding.
 * @param unknownHint - the sentence after an `ERR_CONFIRM_UNKNOWN` refusal from a store that is not
 *   shared (`store.shared` false); `''` adds none. A shared store's refusal carries no hint.
 */
export function storeCalls(store: ConfirmStore, unknownHint: string): StoreCalls {
  const spent = (outcome: SpendOutcome): void => {
    const refusal = spendRefusal(outcome, store.shared ? '' : unknownHint);
    if (refusal) throw refusal;
  };
  return {
    spendGranting: async (jti, nowMs, grant) => {
      const { spend, created } = await failClosed(() => store.spendGranting(jti, nowMs, grant));
      spent(spend);
      // Spent by this call: the grant was created, or a bound was full ('none' with 'spent' fails closed).
      if (created === 'none') throw new ConfirmLedgerUnavailableError();
      return created;
    },
    spendPlanning: async (jti, nowMs, plan) => {
      const { spend, created } = await failClosed(() => store.spendPlanning(jti, nowMs, plan));
      spent(spend);
      if (created === 'none') throw new ConfirmLedgerUnavailableError();
      return created;
    },
    findGrants: (audience, principal, tool, nowMs) =>
      failClosed(() => store.findGrants({ audience, principal, tool }, nowMs)),
    takeGrantUse: (id, nowMs) => failClosed(() => store.takeGrantUse(id, nowMs)),
    revokeGrant: (id, nowMs) => failClosed(() => store.revokeGrant(id, nowMs)),
    takePlanSlot: (key, nowMs) => failClosed(() => store.takePlanSlot(key, nowMs)),
    issue: (claims, nowMs) => failClosed(() => store.issue(claims.jti, claims.sub, claims.exp * 1000, nowMs)),
    spend: async (jti, nowMs) => {
      const outcome = await failClosed(() => store.spend(jti, nowMs));
      const refusal = spendRefusal(outcome, store.shared ? '' : unknownHint);
      if (refusal) throw refusal;
    },
    release: async (jti, nowMs) => {
      try {
        await store.spend(jti, nowMs);
      } catch {
        // Best effort: the question is refused anyway, and an unspent jti expires with its TTL.
      }
    },
  };
}
