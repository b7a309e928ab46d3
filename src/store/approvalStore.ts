/**
 * The approval store: the server-side half of passkey approval, kept in the
 * same store as the ledger (memory, SQLite, Redis) so that any replica can
 * serve the approval page, check a challenge, and redeem an approval.
 *
 * Three kinds of record, each changed only by one atomic step:
 * - an **approval** per `jti`: a random `id` (the URL's last segment, at least
 *   128 bits), what the page shows (`view`, JSON text), and its decision:
 *   `pending` until the page records `approved` (with the approver's name,
 *   credential id and, when the page chose one, the `scope` approved: this call
 *   or a grant) or `declined`; decided once (a second decision is refused). An
 *   approved record may then have the id of the grant its call created attached,
 *   once ({@link ApprovalStore.attachGrant}), which keeps it until the grant's expiry.
 *   An approval opened with `approvalsRequired` N > 1 (a quorum) is approved only through
 *   {@link ApprovalStore.countApproval}: each call adds one approver's approval to its list
 *   (`approvals`), counting an approver once (by name and by credential id), and the N-th turns
 *   it `approved`, naming every approver; a decline still ends it at once.
 * - a **challenge** (WebAuthn, W3C Web Authentication Level 3, §13.4.3): issued for
 *   one approval `id`, taken at most once, refused after its expiry.
 * - a **signature counter** per credential id (§6.1.1): moved forward
 *   atomically; a counter of 0 is accepted while the stored one is 0 (synced
 *   passkeys always send 0), anything not above a non-zero stored one is refused.
 *
 * Times are the caller's (`nowMs`, Unix milliseconds), compared inside the
 * atomic step, as for the {@link Ledger}.
 *
 * @module
 */

/** An approval must be redeemed within this many milliseconds of being given (and before the TTL); defined in `src/defaults.ts`. */
export { REDEEM_WITHIN_MS } from '../defaults.js';
import { MAX_APPROVALS_REQUIRED } from '../defaults.js';
/** The most approvers an approval can require: 16; defined in `src/defaults.ts`, which the CLI loads first. */
export { MAX_APPROVALS_REQUIRED };

/** What the page decided. */
export type ApprovalStatus = 'pending' | 'approved' | 'declined';

/**
 * What an approval approved, as the page's button chose it: `'call'` (this call only) or
 * `'grant'` (this call, and the grant offered with it).
 */
export type ApprovalScope = 'call' | 'grant';

/** One approval, as stored. */
export interface ApprovalRecord {
  /** The random id in the page's URL (base64url, at least 128 bits). */
  id: string;
  /** The confirmation it belongs to (one approval per `jti`). */
  jti: string;
  /** Who asked (the principal string, not the sealed tag): approvers are allowed per principal. */
  principal: string;
  /** What the page shows, JSON text (see `ApprovalView` in page.ts). Opaque to the store. */
  view: string;
  /** Unix ms at which the approval expires (the confirmation's TTL). */
  expiresAtMs: number;
  status: ApprovalStatus;
  /** Unix ms of the decision (0 while pending). */
  decidedAtMs: number;
  /** The approver's name (approved only; '' otherwise). */
  approver: string;
  /** The approver's credential id, base64url (approved only; '' otherwise). */
  credentialId: string;
  /**
   * What was approved, as the page recorded it with the decision (approved only). Absent while
   * pending, when declined, and when the decision gave none (read it as `'call'`).
   */
  scope?: ApprovalScope;
  /** The id of the grant the approved call created, once attached ({@link ApprovalStore.attachGrant}); absent before. */
  grantId?: string;
  /**
   * How many distinct approvers must approve (a quorum), 2 to {@link MAX_APPROVALS_REQUIRED}, as
   * opened. Absent for one (every approval opened without `approvalsRequired`).
   */
  approvalsRequired?: number;
  /**
   * The approvals counted so far ({@link ApprovalStore.countApproval}), oldest first, each approver
   * once. Absent while none was counted (and on every approval decided by `decideApproval`).
   */
  approvals?: CountedApproval[];
}

/** One approver's approval of a quorum, as counted by {@link ApprovalStore.countApproval}. */
export interface CountedApproval {
  /** The approver's name. */
  approver: string;
  /** The approver's credential id, base64url. */
  credentialId: string;
  /** Unix ms at which it was counted. */
  atMs: number;
  /** What this approver approved (their button); absent when none was given (read as `'call'`). */
  scope?: ApprovalScope;
}

/** One approver's approval as given to {@link ApprovalStore.countApproval}. */
export interface ApprovalVote {
  /** The approver's name (non-empty; never contains a comma, see `checkApproverName`). */
  approver: string;
  /** The approver's credential id, base64url (non-empty). */
  credentialId: string;
  /** What this approver approved. Defaults to none (read as `'call'`). */
  scope?: ApprovalScope;
}

/**
 * The outcome of {@link ApprovalStore.countApproval}: `'approved'` (this approval completed the
 * quorum: the record is now approved), `'counted'` (counted, more are needed), `'already-counted'`
 * (this approver, by name or credential id, was counted before: nothing changed), or, changing
 * nothing, `'already-decided'`, `'unknown'`, `'expired'`.
 */
export type CountOutcome = 'approved' | 'counted' | 'already-counted' | 'already-decided' | 'unknown' | 'expired';

/** A decision as {@link ApprovalStore.decideApproval} records it. */
export interface ApprovalDecision {
  status: 'approved' | 'declined';
  /** The approver's name (approved); '' when declined. */
  approver: string;
  /** The approver's credential id, base64url (approved); '' when declined. */
  credentialId: string;
  /** What was approved (kept only with `approved`). Defaults to none (read as `'call'`). */
  scope?: ApprovalScope;
}

/** The outcome of {@link ApprovalStore.decideApproval}. Only `'decided'` recorded the decision. */
export type DecideOutcome = 'decided' | 'already-decided' | 'unknown' | 'expired';

/**
 * A new approval as given to {@link ApprovalStore.openApproval}; `approvalsRequired` (a whole number
 * from 1 to {@link MAX_APPROVALS_REQUIRED}) defaults to 1, which stores none.
 */
export type NewApproval = Pick<ApprovalRecord, 'id' | 'jti' | 'principal' | 'view' | 'expiresAtMs'> & {
  approvalsRequired?: number;
};

/**
 * Most challenges one approval (or enrolment) `id` holds at once in an {@link ApprovalStore}:
 * each page load asks for one, so eight open tabs of one page still work; a ninth drops the
 * oldest of that `id` only.
 */
export const MAX_CHALLENGES_PER_APPROVAL = 8;

/** Approvals, challenges and signature counters, each changed atomically. */
export interface ApprovalStore {
  /**
   * Records a pending approval bound to its `jti`.
   *
   * @throws {RangeError} when the `id` or the `jti` already has an approval.
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the store fails.
   */
  openApproval(approval: NewApproval, nowMs: number): Promise<void>;

  /**
   * Reads an approval by its URL id; `undefined` when unknown or expired
   * (`nowMs >= expiresAtMs`). Changes nothing.
   */
  approvalById(id: string, nowMs: number): Promise<ApprovalRecord | undefined>;

  /** Reads the approval of a `jti`; `undefined` when there is none or it expired. Changes nothing. */
  approvalByJti(jti: string, nowMs: number): Promise<ApprovalRecord | undefined>;

  /**
   * Records the page's decision, once: only a pending, unexpired approval changes. An `approved`
   * decision on an approval that requires more than one approver changes nothing and answers
   * `'already-decided'` (a quorum is approved only by {@link countApproval}); `declined` ends it.
   *
   * @param decision - `approved` with `approver`, `credentialId` and optionally `scope`, or
   *   `declined` (both '', any `scope` ignored).
   */
  decideApproval(id: string, decision: ApprovalDecision, nowMs: number): Promise<DecideOutcome>;

  /**
   * Counts one approver's approval, atomically: only a pending, unexpired approval changes. An
   * approver already in its `approvals` (the same name, or the same credential id) is not counted
   * again. The approval whose count reaches `approvalsRequired` (1 when absent) turns the record
   * `approved` at `nowMs`, with `approver` every counted name joined by `', '` (oldest first),
   * `credentialId` their credential ids joined by `','`, and `scope` `'grant'` when every counted
   * approval chose it, `'call'` when any chose a scope, else none.
   *
   * @returns a {@link CountOutcome}; of any number of concurrent calls at most one gets `'approved'`.
   * @throws {RangeError} when `approver` or `credentialId` is empty.
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the store fails.
   */
  countApproval(id: string, vote: ApprovalVote, nowMs: number): Promise<CountOutcome>;

  /**
   * Attaches the id of the grant an approved call created to its approval, once, and keeps the
   * approval readable until `untilMs` when that is later than its expiry (so its page can show
   * the grant, and revoke it, for as long as the grant lives). Only an approved, unexpired
   * approval with no grant attached changes.
   *
   * @param id - the approval's URL id.
   * @param grantId - the grant's id (a non-empty string).
   * @param untilMs - the grant's expiry, Unix milliseconds.
   * @returns `true` when attached; `false` when the approval is unknown, expired, not approved, or
   *   has a grant already.
   * @throws {RangeError} when `grantId` is empty or `untilMs` is not finite.
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the store fails.
   */
  attachGrant(id: string, grantId: string, untilMs: number, nowMs: number): Promise<boolean>;

  /**
   * Stores a single-use challenge for the approval (or enrolment) `id`, until `expiresAtMs`.
   * At most 8 (`MAX_CHALLENGES_PER_APPROVAL`) challenges of one `id` are kept: storing one
   * more drops the oldest of that `id` (a later take of it gets `undefined`), so whoever holds
   * one approval page cannot crowd out the challenges of other approvals.
   */
  putChallenge(challenge: string, id: string, expiresAtMs: number, nowMs: number): Promise<void>;

  /**
   * Takes a challenge: of any number of concurrent calls at most one gets the
   * `id` it was issued for; later ones, and any after its expiry, get `undefined`.
   */
  takeChallenge(challenge: string, nowMs: number): Promise<string | undefined>;

  /**
   * Moves a credential's signature counter forward, atomically.
   *
   * @param credentialId - base64url credential id.
   * @param newCounter - the counter the authenticator sent (a non-negative integer).
   * @param enrolledCounter - the counter recorded at enrolment, used while the store has none.
   * @returns `true` when accepted (`newCounter` above the stored one, or both 0); `false` otherwise
   *   (a cloned authenticator or a replayed assertion).
   */
  advanceCounter(credentialId: string, newCounter: number, enrolledCounter: number): Promise<boolean>;
}

/** The method names of {@link ApprovalStore}, for wrappers such as the metrics' timed store. */
export const APPROVAL_STORE_METHODS = [
  'openApproval',
  'approvalById',
  'approvalByJti',
  'decideApproval',
  'countApproval',
  'attachGrant',
  'putChallenge',
  'takeChallenge',
  'advanceCounter',
] as const;

/** Whether a ledger object also implements {@link ApprovalStore} (has every one of its methods). */
export function isApprovalStore(value: unknown): value is ApprovalStore {
  return (
    typeof value === 'object' &&
    value !== null &&
    APPROVAL_STORE_METHODS.every((m) => typeof (value as Record<string, unknown>)[m] === 'function')
  );
}

/** The counter rule of W3C WebAuthn §6.1.1 (step 22 of §7.2) with 0 accepted while both are 0. */
export function counterAccepted(stored: number, next: number): boolean {
  if (!Number.isSafeInteger(next) || next < 0) return false;
  if (next === 0 && stored === 0) return true;
  return next > stored;
}

/** Checks the fields of a new approval. @throws {RangeError} naming the bad field. */
export function checkNewApproval(a: NewApproval): void {
  for (const k of ['id', 'jti', 'principal', 'view'] as const) {
    if (typeof a[k] !== 'string' || (k !== 'principal' && a[k] === ''))
      throw new RangeError(`approval ${k} must be a non-empty string`);
  }
  if (!Number.isFinite(a.expiresAtMs))
    throw new RangeError('approval expiresAtMs must be a finite number of milliseconds');
  const n = a.approvalsRequired;
  if (n !== undefined && (!Number.isSafeInteger(n) || n < 1 || n > MAX_APPROVALS_REQUIRED))
    throw new RangeError(`approval approvalsRequired must be a whole number from 1 to ${MAX_APPROVALS_REQUIRED}`);
}

/** The `approvalsRequired` a store keeps for a new approval: `undefined` for 1 (or none). */
export function requiredOf(a: NewApproval): number | undefined {
  return a.approvalsRequired !== undefined && a.approvalsRequired > 1 ? a.approvalsRequired : undefined;
}

/** Checks a vote. @throws {RangeError} naming the bad field. */
export function checkVote(vote: ApprovalVote): void {
  if (typeof vote.approver !== 'string' || vote.approver === '')
    throw new RangeError('vote approver must be a non-empty string');
  if (typeof vote.credentialId !== 'string' || vote.credentialId === '')
    throw new RangeError('vote credentialId must be a non-empty string');
}

/**
 * One count of {@link ApprovalStore.countApproval} on a record already read (the stores run it
 * inside their atomic step): the outcome, and the fields to write when it changes the record.
 */
export function applyVote(
  record: Pick<ApprovalRecord, 'status' | 'expiresAtMs' | 'approvalsRequired' | 'approvals'>,
  vote: ApprovalVote,
  nowMs: number,
): {
  outcome: CountOutcome;
  write?: {
    approvals: CountedApproval[];
    approved?: Pick<ApprovalRecord, 'approver' | 'credentialId'> & { scope?: ApprovalScope };
  };
} {
  if (nowMs >= record.expiresAtMs) return { outcome: 'expired' };
  if (record.status !== 'pending') return { outcome: 'already-decided' };
  const soFar = record.approvals ?? [];
  if (soFar.some((a) => a.approver === vote.approver || a.credentialId === vote.credentialId))
    return { outcome: 'already-counted' };
  const scope = vote.scope === 'call' || vote.scope === 'grant' ? vote.scope : undefined;
  const approvals: CountedApproval[] = [
    ...soFar,
    { approver: vote.approver, credentialId: vote.credentialId, atMs: nowMs, ...(scope ? { scope } : {}) },
  ];
  if (approvals.length < (record.approvalsRequired ?? 1)) return { outcome: 'counted', write: { approvals } };
  const scopes = approvals.map((a) => a.scope);
  const decided: ApprovalScope | undefined = scopes.every((s) => s === 'grant')
    ? 'grant'
    : scopes.some((s) => s !== undefined)
      ? 'call'
      : undefined;
  return {
    outcome: 'approved',
    write: {
      approvals,
      approved: {
        approver: approvals.map((a) => a.approver).join(', '),
        credentialId: approvals.map((a) => a.credentialId).join(','),
        ...(decided ? { scope: decided } : {}),
      },
    },
  };
}

/** Parses a stored list of counted approvals (JSON text); `undefined` for none. @throws {TypeError} when malformed. */
export function parseApprovals(text: string | null | undefined): CountedApproval[] | undefined {
  if (text === null || text === undefined || text === '') return undefined;
  const list = JSON.parse(text) as unknown;
  if (!Array.isArray(list)) throw new TypeError('approvals');
  return list.map((a: Record<string, unknown>) => {
    if (typeof a.approver !== 'string' || typeof a.credentialId !== 'string' || typeof a.atMs !== 'number')
      throw new TypeError('approvals');
    return {
      approver: a.approver,
      credentialId: a.credentialId,
      atMs: a.atMs,
      ...(a.scope === 'call' || a.scope === 'grant' ? { scope: a.scope } : {}),
    };
  });
}

/** Checks the arguments of {@link ApprovalStore.attachGrant}. @throws {RangeError} naming the bad one. */
export function checkAttachGrant(grantId: string, untilMs: number): void {
  if (typeof grantId !== 'string' || grantId === '') throw new RangeError('grantId must be a non-empty string');
  if (!Number.isFinite(untilMs)) throw new RangeError('untilMs must be a finite number of milliseconds');
}

/** The scope a decision keeps: only an approval's, and only `'call'` or `'grant'`. */
export function decidedScope(decision: ApprovalDecision): ApprovalScope | undefined {
  if (decision.status !== 'approved') return undefined;
  return decision.scope === 'call' || decision.scope === 'grant' ? decision.scope : undefined;
}
