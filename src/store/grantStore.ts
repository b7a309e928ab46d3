/**
 * Grants and plans: approvals that serve more than one call, kept in the store beside the
 * confirmations they were given with.
 *
 * - A **grant** ("this call, or calls like it, for a while") lets later calls of the same
 *   principal and tool whose arguments its scope accepts act without a question, each taking one
 *   use atomically, until its uses run out, it expires or it is revoked.
 * - A **plan** ("these exact calls, once each") holds one slot per approved call; a later call
 *   whose tool and exact arguments match an unused slot of a live plan of the same principal takes
 *   that slot atomically, once.
 *
 * Both are created in the same atomic step as the spend of the confirmation that approved them
 * ({@link GrantStore.spendGranting}, {@link GrantStore.spendPlanning}): a grant or plan exists
 * only if that confirmation was spent by this call, so a state can create at most one.
 *
 * The store never interprets a grant's scope or a slot's identity: the guard writes them and
 * checks them (which argument values a scope accepts, whether a file is still the one the human
 * saw). The store keeps the counts, the expiry and the bounds, and makes every take atomic: of any
 * number of concurrent takes of a grant's last use, or of one plan slot, exactly one wins.
 *
 * Time is the caller's (`nowMs`, milliseconds), as for the ledger: a grant or plan is live while
 * `nowMs < expiresAtMs` (expiry exclusive at its end).
 *
 * A grant ends at its expiry, its last use or its revocation; a plan at its expiry or the use of
 * its last slot. Ended records never count toward a bound. A grant that ended by its last use or
 * by revocation is kept until its expiry, so that a take can say why it was refused
 * (`'exhausted'`, `'revoked'`), at most as many of them as the store's `maxGrants` (beyond that,
 * those expiring first are dropped, and a take of one is `'unknown'`); a plan whose last slot was
 * used is dropped at once. Expired records are swept by the stores (a take of one answers
 * `'expired'` until it is swept, `'unknown'` after).
 *
 * @module
 */
import { MAX_PLAN_SLOTS } from '../defaults.js';
import type { Ledger, SpendOutcome } from './ledger.js';

/** A grant as the store keeps it. Every field is set by the guard when it creates the grant. */
export interface Grant {
  /** Random id: unpadded base64url of 16 random bytes (22 characters). What `grants revoke` takes. */
  readonly id: string;
  /** The audience (server name) the grant was given on. */
  readonly audience: string;
  /** The principal tag it belongs to; another principal never uses it. */
  readonly principal: string;
  /** The tool it is for. */
  readonly tool: string;
  /**
   * What the human approved, as the guard wrote it (JSON text: the matcher of each argument with
   * its pinned values, e.g. a directory's path, device and inode). The store never reads it. At
   * most {@link MAX_GRANT_TEXT_LENGTH} characters.
   */
  readonly scope: string;
  /**
   * An opaque binding the guard compares on use, `''` when none: the serving process over stdio,
   * the upstream's identity and the tool's definition digest for the proxy. The bound on live
   * grants is counted per principal and binding. At most {@link MAX_GRANT_TEXT_LENGTH} characters.
   */
  readonly binding: string;
  /** The grant's offer as the human read it (rendered text), for listings and the page. At most {@link MAX_GRANT_TEXT_LENGTH} characters. */
  readonly summary: string;
  /** Digest of the policy entry that allowed it (unpadded base64url SHA-256). */
  readonly policyDigest: string;
  /** Who approved it: an approver's name (passkey), or `'client'` for a form answer. */
  readonly approver: string;
  /**
   * Uses granted in all, the approving call included (so a new grant has `maxUses - 1` left; a
   * grant of 1 is created already used up, ended at once).
   */
  readonly maxUses: number;
  /** Uses left for later calls. */
  readonly usesLeft: number;
  /** When it was created (the approval), Unix time in milliseconds. */
  readonly createdAtMs: number;
  /** When it expires, Unix time in milliseconds; live while `nowMs < expiresAtMs`. */
  readonly expiresAtMs: number;
}

/** A grant to create: {@link Grant} without `usesLeft`, which starts at `maxUses - 1`. */
export type NewGrant = Omit<Grant, 'usesLeft'>;

/** Which grants {@link GrantStore.findGrants} returns: every field given (a string) must match exactly. */
export interface GrantQuery {
  readonly audience?: string;
  readonly principal?: string;
  readonly tool?: string;
}

/** The outcome of {@link GrantStore.takeGrantUse}. */
export type TakeGrantOutcome =
  /** This call took one use; `usesLeft` is what remains after it (0: this was the last). */
  | { readonly taken: true; readonly usesLeft: number; readonly expiresAtMs: number }
  /**
   * No use was taken. The first that applies: `'unknown'` (not in this store: never created here,
   * or swept), `'expired'` (`nowMs >= expiresAtMs`), `'revoked'`, `'exhausted'` (no use left).
   */
  | { readonly taken: false; readonly reason: 'exhausted' | 'expired' | 'revoked' | 'unknown' };

/** One approved call of a plan. */
export interface PlanSlot {
  /**
   * The slot's key, computed by the guard from what must match exactly (audience, principal,
   * binding, tool and the arguments' digest): a later call takes the slot only by presenting the
   * same key. Unpadded base64url SHA-256 (43 characters).
   */
  readonly key: string;
  /** The tool of the call, for listings. */
  readonly tool: string;
  /**
   * The resource's identity captured in round 1 (JSON text the guard wrote), checked again when
   * the slot is taken. The store never reads it. At most {@link MAX_GRANT_TEXT_LENGTH} characters.
   */
  readonly identity: string;
}

/** A plan to create. */
export interface NewPlan {
  /** Random id: unpadded base64url of 16 random bytes (22 characters). */
  readonly id: string;
  readonly audience: string;
  readonly principal: string;
  /**
   * An opaque binding, `''` when none: over stdio the serving process (as a grant's). The store
   * counts the bound on live plans per principal and binding; a slot's own key already binds
   * what must match exactly. At most {@link MAX_GRANT_TEXT_LENGTH} characters.
   */
  readonly binding: string;
  /** The approved calls, in the order the human read them: 1 to {@link MAX_PLAN_SLOTS}. */
  readonly slots: readonly PlanSlot[];
  /** Who approved it: an approver's name (passkey), or `'client'` for a form answer. */
  readonly approver: string;
  readonly createdAtMs: number;
  /** When it expires, Unix time in milliseconds; live while `nowMs < expiresAtMs`. */
  readonly expiresAtMs: number;
}

/** A slot taken by {@link GrantStore.takePlanSlot}. */
export interface TakenPlanSlot {
  readonly planId: string;
  /** The slot's index in the plan (0-based). */
  readonly index: number;
  /** The slot's {@link PlanSlot.identity}. */
  readonly identity: string;
  /** How many of the plan's slots are still unused after this take. */
  readonly slotsLeft: number;
  readonly expiresAtMs: number;
}

/** The outcome of creating a grant or plan with a spend: the spend's, and whether the record was created. */
export interface SpendCreating {
  /** The outcome of spending the confirmation, as {@link Ledger.spend} gives it. */
  readonly spend: SpendOutcome;
  /**
   * `'created'`: spent and created in one atomic step. `'full'`: spent, but the bound on live
   * records of the principal and binding, or the store's, was reached, so nothing was created (the call acts as "this
   * call"). `'none'`: not spent by this call (see `spend`), nothing created.
   */
  readonly created: 'created' | 'full' | 'none';
}

/**
 * Grants and plans, implemented by every store (memory, SQLite, Redis) with the same bounds:
 * live grants and live plans are each bounded per principal **and binding**
 * (`maxGrantsPerPrincipal`, `maxPlansPerPrincipal`, default {@link DEFAULT_MAX_GRANTS_PER_PRINCIPAL}:
 * over stdio every caller is the principal `local` and the binding is the serving process, so
 * host apps sharing a ledger file each get the whole bound) and in total (`maxGrants`,
 * `maxPlans`, default {@link DEFAULT_MAX_GRANTS}). A grant is live until its
 * expiry, its last use or its revocation; a plan until its expiry or its last slot's use.
 */
export interface GrantStore {
  /**
   * Spends the confirmation `jti` exactly as {@link Ledger.spend} does and, only when this call
   * spent it, creates `grant` in the same atomic step (unless a bound is reached).
   *
   * @param jti - the confirmation's nonce.
   * @param nowMs - the caller's current time in milliseconds.
   * @param grant - the grant to create; `grant.expiresAtMs > nowMs`, `maxUses` 1 to 1,000,000.
   * @returns the spend's outcome and whether the grant was created.
   * @throws {RangeError} when a field of `grant` is malformed or `grant.expiresAtMs <= nowMs` (see
   *   {@link checkNewGrant}), or a grant with its `id` is in the store already; nothing is spent.
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the store fails.
   */
  spendGranting(jti: string, nowMs: number, grant: NewGrant): Promise<SpendCreating>;

  /**
   * The live grants matching `query` (all of them for an empty query), oldest first (by
   * `createdAtMs`, then `id`). Changes nothing.
   *
   * @throws {RangeError} when a field of `query` is given but not a string.
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the store fails.
   */
  findGrants(query: GrantQuery, nowMs: number): Promise<Grant[]>;

  /**
   * Takes one use of grant `id` atomically: of any number of concurrent takes of its last use,
   * exactly one gets `taken: true`.
   *
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the store fails.
   */
  takeGrantUse(id: string, nowMs: number): Promise<TakeGrantOutcome>;

  /**
   * Revokes grant `id`: no use is taken after this returns `'revoked'`. A take racing it either
   * took its use before, or finds the grant revoked.
   *
   * @returns `'revoked'`, or `'unknown'` when no live grant has that id (ended, revoked before, or never here).
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the store fails.
   */
  revokeGrant(id: string, nowMs: number): Promise<'revoked' | 'unknown'>;

  /**
   * Spends the confirmation `jti` exactly as {@link Ledger.spend} does and, only when this call
   * spent it, creates `plan` in the same atomic step (unless a bound is reached).
   *
   * @throws {RangeError} when a field of `plan` is malformed or `plan.expiresAtMs <= nowMs` (see
   *   {@link checkNewPlan}), or a plan with its `id` is in the store already; nothing is spent.
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the store fails.
   */
  spendPlanning(jti: string, nowMs: number, plan: NewPlan): Promise<SpendCreating>;

  /**
   * Takes the unused slot with key `key` of a live plan atomically, marking it used: of any number
   * of concurrent takes of one slot, exactly one gets it. When several live plans hold an unused
   * slot with that key, the one that expires first gives it (of those expiring together, the
   * lowest `id`).
   *
   * @returns the taken slot, or `undefined` when no live plan holds an unused slot with that key.
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the store fails.
   */
  takePlanSlot(key: string, nowMs: number): Promise<TakenPlanSlot | undefined>;
}

/** The methods of {@link GrantStore}, for wrappers such as the metrics' timed store. */
export const GRANT_STORE_METHODS = [
  'spendGranting',
  'findGrants',
  'takeGrantUse',
  'revokeGrant',
  'spendPlanning',
  'takePlanSlot',
] as const;

/** Default bound on live grants per principal and binding, and on live plans per principal and binding: 16. */
export const DEFAULT_MAX_GRANTS_PER_PRINCIPAL = 16;

/** Default bound on live grants in total, and on live plans in total: 10,000. */
export const DEFAULT_MAX_GRANTS = 10_000;

/** Longest `scope`, `binding`, `summary` or slot `identity`, in characters: 16,384. */
export const MAX_GRANT_TEXT_LENGTH = 16_384;

export { MAX_PLAN_SLOTS } from '../defaults.js';

/** Most uses one grant may have: 1,000,000. */
export const MAX_GRANT_USES = 1_000_000;

const ID = /^[A-Za-z0-9_-]{22}$/;
const DIGEST = /^[A-Za-z0-9_-]{43}$/;

function text(name: string, value: unknown, max: number, allowEmpty: boolean): void {
  if (typeof value !== 'string' || (!allowEmpty && value.length === 0) || value.length > max || !value.isWellFormed()) {
    throw new RangeError(`${name} must be a well-formed string of ${allowEmpty ? 0 : 1} to ${max} characters`);
  }
}

function time(name: string, value: unknown): void {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
    throw new RangeError(`${name} must be a Unix time in whole milliseconds`);
}

/**
 * Checks a grant before it is created (every store calls this first, so a malformed grant is
 * refused before anything is spent).
 *
 * @param grant - the grant to check.
 * @param nowMs - when given, the caller's current time in milliseconds: the grant must not have
 *   expired by then (`expiresAtMs > nowMs`).
 * @throws {RangeError} naming the first malformed field: `id` not 22 base64url characters;
 *   `audience`, `principal`, `tool`, `approver` empty or over 1,024 characters; `scope`, `binding`,
 *   `summary` over {@link MAX_GRANT_TEXT_LENGTH} (`scope` also empty); `policyDigest` not 43
 *   base64url characters; `maxUses` not a whole number from 1 to {@link MAX_GRANT_USES}; times
 *   not whole milliseconds, or `expiresAtMs <= createdAtMs`; any string not well-formed UTF-16;
 *   `nowMs` (when given) not finite, or `expiresAtMs <= nowMs`.
 */
export function checkNewGrant(grant: NewGrant, nowMs?: number): void {
  if (typeof grant !== 'object' || grant === null) throw new RangeError('grant must be an object');
  if (typeof grant.id !== 'string' || !ID.test(grant.id))
    throw new RangeError('grant id must be 22 base64url characters');
  for (const f of ['audience', 'principal', 'tool', 'approver'] as const) text(`grant ${f}`, grant[f], 1_024, false);
  text('grant scope', grant.scope, MAX_GRANT_TEXT_LENGTH, false);
  for (const f of ['binding', 'summary'] as const) text(`grant ${f}`, grant[f], MAX_GRANT_TEXT_LENGTH, true);
  if (typeof grant.policyDigest !== 'string' || !DIGEST.test(grant.policyDigest))
    throw new RangeError('grant policyDigest must be 43 base64url characters');
  if (!Number.isSafeInteger(grant.maxUses) || grant.maxUses < 1 || grant.maxUses > MAX_GRANT_USES) {
    throw new RangeError(`grant maxUses must be a whole number from 1 to ${MAX_GRANT_USES}`);
  }
  time('grant createdAtMs', grant.createdAtMs);
  time('grant expiresAtMs', grant.expiresAtMs);
  if (grant.expiresAtMs <= grant.createdAtMs) throw new RangeError('grant expiresAtMs must be after createdAtMs');
  if (nowMs !== undefined) {
    checkNowMs(nowMs);
    if (grant.expiresAtMs <= nowMs) throw new RangeError('grant expiresAtMs must be after nowMs');
  }
}

/**
 * Checks a plan before it is created (every store calls this first).
 *
 * @param plan - the plan to check.
 * @param nowMs - when given, the caller's current time in milliseconds: the plan must not have
 *   expired by then (`expiresAtMs > nowMs`).
 * @throws {RangeError} naming the first malformed field: `id` not 22 base64url characters;
 *   `audience`, `principal`, `approver` empty or over 1,024 characters; `binding` over
 *   {@link MAX_GRANT_TEXT_LENGTH}; no slot or more than
 *   {@link MAX_PLAN_SLOTS}; a slot `key` not 43 base64url characters, two slots with one key,
 *   a slot `tool` empty or over 1,024 characters, a slot `identity` over
 *   {@link MAX_GRANT_TEXT_LENGTH}; times not whole milliseconds, or `expiresAtMs <= createdAtMs`;
 *   `nowMs` (when given) not finite, or `expiresAtMs <= nowMs`.
 */
export function checkNewPlan(plan: NewPlan, nowMs?: number): void {
  if (typeof plan !== 'object' || plan === null) throw new RangeError('plan must be an object');
  if (typeof plan.id !== 'string' || !ID.test(plan.id)) throw new RangeError('plan id must be 22 base64url characters');
  for (const f of ['audience', 'principal', 'approver'] as const) text(`plan ${f}`, plan[f], 1_024, false);
  text('plan binding', plan.binding, MAX_GRANT_TEXT_LENGTH, true);
  if (!Array.isArray(plan.slots) || plan.slots.length < 1 || plan.slots.length > MAX_PLAN_SLOTS) {
    throw new RangeError(`plan slots must hold 1 to ${MAX_PLAN_SLOTS} calls`);
  }
  const keys = new Set<string>();
  for (const slot of plan.slots) {
    if (typeof slot?.key !== 'string' || !DIGEST.test(slot.key))
      throw new RangeError('plan slot key must be 43 base64url characters');
    if (keys.has(slot.key)) throw new RangeError('plan slots must have distinct keys');
    keys.add(slot.key);
    text('plan slot tool', slot.tool, 1_024, false);
    text('plan slot identity', slot.identity, MAX_GRANT_TEXT_LENGTH, true);
  }
  time('plan createdAtMs', plan.createdAtMs);
  time('plan expiresAtMs', plan.expiresAtMs);
  if (plan.expiresAtMs <= plan.createdAtMs) throw new RangeError('plan expiresAtMs must be after createdAtMs');
  if (nowMs !== undefined) {
    checkNowMs(nowMs);
    if (plan.expiresAtMs <= nowMs) throw new RangeError('plan expiresAtMs must be after nowMs');
  }
}

/**
 * Checks the caller's time given to a method of {@link GrantStore}.
 *
 * @throws {RangeError} when `nowMs` is not a finite number of milliseconds.
 */
export function checkNowMs(nowMs: number): void {
  if (typeof nowMs !== 'number' || !Number.isFinite(nowMs))
    throw new RangeError('nowMs must be a finite number of milliseconds');
}

/**
 * Checks a {@link GrantQuery}.
 *
 * @throws {RangeError} when it is not an object, or a field is given (not `undefined`) but not a string.
 */
export function checkGrantQuery(query: GrantQuery): void {
  if (typeof query !== 'object' || query === null) throw new RangeError('grant query must be an object');
  for (const f of ['audience', 'principal', 'tool'] as const) {
    if (query[f] !== undefined && typeof query[f] !== 'string')
      throw new RangeError(`grant query ${f} must be a string`);
  }
}

/** Sorts grants oldest first, as {@link GrantStore.findGrants} returns them: by `createdAtMs`, then `id`. */
export function oldestFirst(a: Grant, b: Grant): number {
  return a.createdAtMs - b.createdAtMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}
