/**
 * Link approvals: the part of the approval store that serves clients which cannot elicit (passkey
 * approval by link, then the call is retried). A *link* ties one approval record (see
 * `approvalStore.ts`) to a *link key*, the digest of everything the retried call must match
 * exactly (audience, principal, binding, tool, arguments, question), and keeps beside it the
 * round-1 identity (`kept`, opaque to the store: the guard keeps its sealed round-1 state there).
 *
 * Each step is atomic in every store (memory, SQLite, Redis):
 * - {@link LinkStore.openLinkApproval} opens the approval and its link together, unless the key
 *   already has a live link, or the principal already has `maxPending` pending link approvals;
 * - {@link LinkStore.approvalByLink} reads the approval a live link points to;
 * - {@link LinkStore.finishLink} removes a link (its approval was spent or declined): the next
 *   call with the same key finds none and asks anew, while the approval itself stays readable
 *   by its id (the page still shows how it was decided) until its expiry.
 *
 * A link lives as long as its approval (the confirmation's TTL); an expired link is never read
 * and never counted.
 *
 * @module
 */
import { checkNewApproval, type ApprovalRecord, type NewApproval } from './approvalStore.js';

/** A new approval with its link, as given to {@link LinkStore.openLinkApproval}. */
export interface NewLinkApproval extends NewApproval {
  /** The link key: what a retried call must match to find this approval (a non-empty string). */
  linkKey: string;
  /** What the guard keeps server-side with it (the round-1 identity; opaque to the store, non-empty). */
  kept: string;
}

/**
 * The outcome of {@link LinkStore.openLinkApproval}: `'opened'` (approval and link recorded),
 * `'exists'` (the key already has a live link; nothing recorded), `'too-many'` (the principal has
 * `maxPending` pending link approvals already; nothing recorded).
 */
export type OpenLinkOutcome = 'opened' | 'exists' | 'too-many';

/** A live link's approval, as {@link LinkStore.approvalByLink} reads it. */
export interface LinkedApproval {
  /** The approval record the link points to (any status). */
  approval: ApprovalRecord;
  /** What was kept with it ({@link NewLinkApproval.kept}), byte for byte. */
  kept: string;
}

/** Link approvals, each step atomic. */
export interface LinkStore {
  /**
   * Opens a pending approval (as `openApproval` does) and its link, in one atomic step, unless
   * `linkKey` already has a live (unexpired, unfinished) link, or the principal (`principal`,
   * compared exactly) already has `maxPending` link approvals that are pending and unexpired.
   *
   * @param approval - the approval, its link key and what is kept with it.
   * @param maxPending - the most pending link approvals of one principal (a positive whole number).
   * @param nowMs - the caller's clock, Unix milliseconds.
   * @returns the {@link OpenLinkOutcome}.
   * @throws {RangeError} when a field is empty or not finite, `maxPending` is not a positive whole
   *   number, or the `id` or `jti` already has an approval.
   * @throws {ConfirmCapacityError} `ERR_CONFIRM_CAPACITY` when the store holds as many approvals as it may.
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the store fails.
   */
  openLinkApproval(approval: NewLinkApproval, maxPending: number, nowMs: number): Promise<OpenLinkOutcome>;

  /**
   * Reads the approval of a live link: `undefined` when the key has no link, its link was
   * finished, or its approval expired (`nowMs >= expiresAtMs`). Changes nothing.
   *
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the store fails.
   */
  approvalByLink(linkKey: string, nowMs: number): Promise<LinkedApproval | undefined>;

  /**
   * Finishes the link of `linkKey` when it points to the approval `id` (a later link of the same
   * key, to another approval, is left alone). The approval stays readable by its id.
   *
   * @returns `true` when a link was removed.
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the store fails.
   */
  finishLink(linkKey: string, id: string, nowMs: number): Promise<boolean>;
}

/** The method names of {@link LinkStore}. */
export const LINK_STORE_METHODS = ['openLinkApproval', 'approvalByLink', 'finishLink'] as const;

/** Checks the arguments of {@link LinkStore.openLinkApproval}. @throws {RangeError} naming the bad one. */
export function checkNewLinkApproval(approval: NewLinkApproval, maxPending: number): void {
  checkNewApproval(approval);
  for (const k of ['linkKey', 'kept'] as const)
    if (typeof approval[k] !== 'string' || approval[k] === '')
      throw new RangeError(`approval ${k} must be a non-empty string`);
  if (!Number.isSafeInteger(maxPending) || maxPending < 1)
    throw new RangeError('maxPending must be a positive whole number');
}
