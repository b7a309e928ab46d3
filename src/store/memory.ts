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
 * Grants and plans ({@link GrantStore}) live in maps of this process too, so they end with it;
 * each step runs to its end without awaiting, so it is atomic.
 *
 * @module
 */
import { ConfirmCapacityError } from '../errors.js';
import {
  checkAttachGrant,
  applyVote,
  checkNewApproval,
  checkVote,
  requiredOf,
  counterAccepted,
  decidedScope,
  MAX_CHALLENGES_PER_APPROVAL,
  type ApprovalDecision,
  type ApprovalRecord,
  type ApprovalStore,
  type ApprovalVote,
  type CountOutcome,
  type DecideOutcome,
  type NewApproval,
} from './approvalStore.js';
import type { ConfirmStore } from './confirmStore.js';
import { checkNewLinkApproval, type LinkedApproval, type NewLinkApproval, type OpenLinkOutcome } from './linkStore.js';
import type { Ledger, SpendOutcome } from './ledger.js';
import { positiveInteger } from './ledger.js';
import { checkAuditHead, checkAuditHeadPath, type AuditHead, type AuditHeadStore } from './auditHeads.js';
import {
  checkGrantQuery,
  checkNewGrant,
  checkNewPlan,
  checkNowMs,
  DEFAULT_MAX_GRANTS,
  DEFAULT_MAX_GRANTS_PER_PRINCIPAL,
  type Grant,
  type GrantQuery,
  type GrantStore,
  type NewGrant,
  type NewPlan,
  oldestFirst,
  type SpendCreating,
  type TakeGrantOutcome,
  type TakenPlanSlot,
} from './grantStore.js';

/** Options of {@link MemoryLedger}. */
export interface MemoryLedgerOptions {
  /** Most outstanding confirmations one principal may hold. Defaults to 1,000. */
  maxPerPrincipal?: number;
  /** Most outstanding confirmations in total; also the bound on tombstones. Defaults to 100,000. */
  maxTotal?: number;
  /** Most live grants one principal may hold under one binding (see {@link GrantStore}). Defaults to 16. */
  maxGrantsPerPrincipal?: number;
  /**
   * Most live grants in total; also the bound on ended grants kept until their expiry (so that a
   * take can say `'exhausted'` or `'revoked'`). Defaults to 10,000.
   */
  maxGrants?: number;
  /** Most live plans one principal may hold under one binding. Defaults to 16. */
  maxPlansPerPrincipal?: number;
  /** Most live plans in total. Defaults to 10,000. */
  maxPlans?: number;
}

/** A grant as this store keeps it: its fields, changed only by a take or a revoke. */
interface GrantRecord {
  readonly grant: NewGrant;
  usesLeft: number;
  revoked: boolean;
}

/** A plan as this store keeps it; a slot is unused while its key is in `unused`. */
interface PlanRecord {
  readonly plan: NewPlan;
  /** Slot key → its index, for the slots not yet used. */
  readonly unused: Map<string, number>;
}

/** The outstanding count of one principal, shared by its entries (no map lookup to release a slot). */
interface Holder {
  n: number;
}

interface Entry {
  readonly jti: string;
  readonly holder: Holder;
  readonly expiresAtMs: number;
  /** false while outstanding; true once spent (a tombstone until its expiry). */
  spent: boolean;
}

/**
 * Settled promises handed out again and again: the interface returns promises, and
 * the work is synchronous, so no call needs a promise (or an async frame) of its own.
 * A settled promise is immutable, so sharing one between callers is safe.
 */
const ISSUED: Promise<void> = Promise.resolve();
const OUTCOMES: Readonly<Record<SpendOutcome, Promise<SpendOutcome>>> = {
  spent: Promise.resolve('spent'),
  'already-spent': Promise.resolve('already-spent'),
  unknown: Promise.resolve('unknown'),
  expired: Promise.resolve('expired'),
};

/**
 * A ledger held in a `Map` of this process.
 *
 * Costs: an issue or a spend is O(1) amortised and allocates only the entry itself
 * (at issue) and a slot in a FIFO array; both return an already settled promise
 * (shared between calls) instead of running an async function. A full O(n) sweep
 * runs only when a bound is reached.
 *
 * @example
 * ```ts
 * import { randomUUID } from 'node:crypto';
 * import { MemoryLedger } from 'mcp-confirm';
 *
 * const ledger = new MemoryLedger({ maxPerPrincipal: 100 });
 * const jti = randomUUID();
 * await ledger.issue(jti, 'local', Date.now() + 300_000);
 * await ledger.spend(jti, Date.now()); // 'spent'
 * await ledger.spend(jti, Date.now()); // 'already-spent'
 * ```
 */
export class MemoryLedger implements ConfirmStore {
  readonly kind = 'memory';
  readonly shared = false;
  readonly maxPerPrincipal: number;
  readonly maxTotal: number;
  readonly maxGrantsPerPrincipal: number;
  readonly maxGrants: number;
  readonly maxPlansPerPrincipal: number;
  readonly maxPlans: number;
  /** Outstanding entries and tombstones in one map: a spend flips a flag instead of moving the entry. */
  readonly #entries = new Map<string, Entry>();
  /**
   * Principal → its outstanding count. A principal whose count fell to 0 keeps its holder
   * until the map holds more than twice as many principals as outstanding entries (plus
   * 1,024); then every holder at 0 is dropped at once (amortised O(1)).
   */
  readonly #holders = new Map<string, Holder>();
  #outstanding = 0;
  #tombstones = 0;
  /**
   * Issue order (for expiry) and spend order (for dropping the oldest tombstone) as
   * FIFO arrays with a head index, read from the head in O(1): iterating a `Map` from
   * its front would first skip every deleted slot, which turns a busy ledger quadratic.
   * Records whose entry is gone are skipped when reached, and compacted away.
   */
  readonly #issued = new Fifo<Entry>();
  readonly #spent = new Fifo<Entry>();

  /**
   * @param options - bounds; see {@link MemoryLedgerOptions}.
   * @throws {RangeError} when a bound is not a positive integer.
   */
  constructor(options: MemoryLedgerOptions = {}) {
    this.maxPerPrincipal = positiveInteger('maxPerPrincipal', options.maxPerPrincipal, 1_000);
    this.maxTotal = positiveInteger('maxTotal', options.maxTotal, 100_000);
    this.maxGrantsPerPrincipal = positiveInteger(
      'maxGrantsPerPrincipal',
      options.maxGrantsPerPrincipal,
      DEFAULT_MAX_GRANTS_PER_PRINCIPAL,
    );
    this.maxGrants = positiveInteger('maxGrants', options.maxGrants, DEFAULT_MAX_GRANTS);
    this.maxPlansPerPrincipal = positiveInteger(
      'maxPlansPerPrincipal',
      options.maxPlansPerPrincipal,
      DEFAULT_MAX_GRANTS_PER_PRINCIPAL,
    );
    this.maxPlans = positiveInteger('maxPlans', options.maxPlans, DEFAULT_MAX_GRANTS);
  }

  /** Number of outstanding (issued, not spent, not swept) confirmations. */
  get size(): number {
    return this.#outstanding;
  }

  /** See {@link Ledger.issue}; the returned promise is already settled. */
  issue(jti: string, principal: string, expiresAtMs: number, nowMs: number = Date.now()): Promise<void> {
    try {
      this.issueSync(jti, principal, expiresAtMs, nowMs);
    } catch (error) {
      return Promise.reject(error);
    }
    return ISSUED;
  }

  /** See {@link Ledger.spend}; the returned promise is already settled (one shared promise per outcome). */
  spend(jti: string, nowMs: number): Promise<SpendOutcome> {
    return OUTCOMES[this.spendSync(jti, nowMs)];
  }

  /** Synchronous {@link issue}; the same checks and errors. */
  issueSync(jti: string, principal: string, expiresAtMs: number, nowMs: number = Date.now()): void {
    // Cheap amortised sweep: entries mostly arrive in expiry order.
    this.#sweepFront(nowMs);
    if (this.#entries.has(jti)) throw new RangeError('jti already issued');
    let holder = this.#holders.get(principal);
    if ((holder !== undefined && holder.n >= this.maxPerPrincipal) || this.#outstanding >= this.maxTotal) {
      // Only at a bound pay for a full sweep; then decide.
      this.sweep(nowMs);
      holder = this.#holders.get(principal); // the sweep may have dropped it, idle
      if (holder !== undefined && holder.n >= this.maxPerPrincipal) throw new ConfirmCapacityError('principal');
      if (this.#outstanding >= this.maxTotal) throw new ConfirmCapacityError('total');
    }
    if (holder === undefined) {
      if (this.#holders.size >= 2 * this.#outstanding + 1024) this.#dropIdleHolders();
      holder = { n: 0 };
      this.#holders.set(principal, holder);
    }
    const entry: Entry = { jti, holder, expiresAtMs, spent: false };
    this.#entries.set(jti, entry);
    holder.n++;
    this.#outstanding++;
    this.#issued.push(entry);
    this.#issued.compactIfSparse(this.#entries.size, this.#isLive);
  }

  /** Synchronous {@link spend}: JavaScript runs it to the end before any other spend, so it is atomic. */
  spendSync(jti: string, nowMs: number): SpendOutcome {
    const entry = this.#entries.get(jti);
    if (entry === undefined) return 'unknown';
    if (entry.spent) return 'already-spent';
    entry.holder.n--;
    this.#outstanding--;
    if (nowMs >= entry.expiresAtMs) {
      this.#entries.delete(jti);
      return 'expired';
    }
    entry.spent = true;
    this.#tombstones++;
    this.#spent.push(entry);
    // Tombstones are best effort: beyond the bound the oldest goes (a replay of it is then 'unknown', still refused).
    while (this.#tombstones > this.maxTotal) {
      const oldest = this.#spent.shift();
      if (oldest === undefined) break;
      if (this.#isLive(oldest)) this.#drop(oldest);
    }
    this.#spent.compactIfSparse(this.#tombstones, this.#isLive);
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
    for (const entry of this.#entries.values()) {
      if (nowMs >= entry.expiresAtMs) {
        if (!entry.spent) removed++;
        this.#drop(entry);
      }
    }
    this.#issued.compactIfSparse(this.#entries.size, this.#isLive, true);
    this.#spent.compactIfSparse(this.#tombstones, this.#isLive, true);
    this.#dropIdleHolders();
    return removed;
  }

  close(): Promise<void> {
    return ISSUED;
  }

  // ---- ApprovalStore (see approvalStore.ts): each method runs to its end without awaiting, so it is atomic.

  readonly #approvals = new Map<string, ApprovalRecord>();
  readonly #approvalOfJti = new Map<string, string>();
  readonly #challenges = new Map<string, { id: string; expiresAtMs: number }>();
  /** Each id's challenges, oldest first (may hold taken or dropped ones until its next put). */
  readonly #challengesOf = new Map<string, string[]>();
  readonly #counters = new Map<string, number>();

  /** {@link ApprovalStore.openApproval}; bounded by `maxTotal` (expired approvals swept first). */
  async openApproval(approval: NewApproval, nowMs: number): Promise<void> {
    this.#openApprovalNow(approval, nowMs);
  }

  /** {@link openApproval}'s step, synchronous (so a link can be opened with it in one step). */
  #openApprovalNow(approval: NewApproval, nowMs: number): void {
    checkNewApproval(approval);
    if (this.#approvals.has(approval.id) || this.#approvalOfJti.has(approval.jti))
      throw new RangeError('approval already opened');
    if (this.#approvals.size >= this.maxTotal) {
      for (const [id, r] of this.#approvals) if (nowMs >= r.expiresAtMs) this.#dropApproval(id, r);
      if (this.#approvals.size >= this.maxTotal) throw new ConfirmCapacityError('total');
    }
    const { approvalsRequired: _n, ...fields } = approval;
    const required = requiredOf(approval);
    const record: ApprovalRecord = {
      ...fields,
      status: 'pending',
      decidedAtMs: 0,
      approver: '',
      credentialId: '',
      ...(required !== undefined ? { approvalsRequired: required } : {}),
    };
    this.#approvals.set(approval.id, record);
    this.#approvalOfJti.set(approval.jti, approval.id);
  }

  /** {@link ApprovalStore.approvalById}. */
  async approvalById(id: string, nowMs: number): Promise<ApprovalRecord | undefined> {
    const r = this.#approvals.get(id);
    if (r === undefined) return undefined;
    if (nowMs >= r.expiresAtMs) {
      this.#dropApproval(id, r);
      return undefined;
    }
    return r.approvals === undefined ? { ...r } : { ...r, approvals: r.approvals.map((a) => ({ ...a })) };
  }

  /** {@link ApprovalStore.approvalByJti}. */
  async approvalByJti(jti: string, nowMs: number): Promise<ApprovalRecord | undefined> {
    const id = this.#approvalOfJti.get(jti);
    return id === undefined ? undefined : this.approvalById(id, nowMs);
  }

  /** {@link ApprovalStore.decideApproval}. */
  async decideApproval(id: string, decision: ApprovalDecision, nowMs: number): Promise<DecideOutcome> {
    const r = this.#approvals.get(id);
    if (r === undefined) return 'unknown';
    if (nowMs >= r.expiresAtMs) return 'expired';
    if (r.status !== 'pending') return 'already-decided';
    if (decision.status === 'approved' && (r.approvalsRequired ?? 1) > 1) return 'already-decided';
    r.status = decision.status;
    r.approver = decision.approver;
    r.credentialId = decision.credentialId;
    r.decidedAtMs = nowMs;
    const scope = decidedScope(decision);
    if (scope !== undefined) r.scope = scope;
    return 'decided';
  }

  /** {@link ApprovalStore.countApproval}. */
  async countApproval(id: string, vote: ApprovalVote, nowMs: number): Promise<CountOutcome> {
    checkVote(vote);
    const r = this.#approvals.get(id);
    if (r === undefined) return 'unknown';
    const { outcome, write } = applyVote(r, vote, nowMs);
    if (write === undefined) return outcome;
    r.approvals = write.approvals;
    if (write.approved !== undefined) {
      r.status = 'approved';
      r.decidedAtMs = nowMs;
      r.approver = write.approved.approver;
      r.credentialId = write.approved.credentialId;
      if (write.approved.scope !== undefined) r.scope = write.approved.scope;
    }
    return outcome;
  }

  /** {@link ApprovalStore.attachGrant}. */
  async attachGrant(id: string, grantId: string, untilMs: number, nowMs: number): Promise<boolean> {
    checkAttachGrant(grantId, untilMs);
    const r = this.#approvals.get(id);
    if (r === undefined || nowMs >= r.expiresAtMs || r.status !== 'approved' || r.grantId !== undefined) return false;
    r.grantId = grantId;
    r.expiresAtMs = Math.max(r.expiresAtMs, untilMs);
    return true;
  }

  /**
   * {@link ApprovalStore.putChallenge}; at most 8 (`MAX_CHALLENGES_PER_APPROVAL`) per id (its oldest
   * dropped) and `maxTotal` in all (expired ones swept, then the oldest dropped).
   */
  async putChallenge(challenge: string, id: string, expiresAtMs: number, nowMs: number): Promise<void> {
    if (this.#challenges.has(challenge)) throw new RangeError('challenge already issued');
    if (this.#challenges.size >= this.maxTotal) {
      for (const [c, v] of this.#challenges) if (nowMs >= v.expiresAtMs) this.#challenges.delete(c);
      while (this.#challenges.size >= this.maxTotal) {
        const oldest = this.#challenges.keys().next();
        if (oldest.done) break;
        this.#challenges.delete(oldest.value);
      }
    }
    const held = (this.#challengesOf.get(id) ?? []).filter((c) => this.#challenges.get(c)?.id === id);
    while (held.length >= MAX_CHALLENGES_PER_APPROVAL) this.#challenges.delete(held.shift()!);
    held.push(challenge);
    this.#challenges.set(challenge, { id, expiresAtMs });
    this.#challengesOf.set(id, held);
    // Forget the lists of ids that hold nothing any more (amortised: only once they outnumber the challenges).
    if (this.#challengesOf.size > this.#challenges.size + 1024) {
      for (const [other, list] of this.#challengesOf)
        if (!list.some((c) => this.#challenges.get(c)?.id === other)) this.#challengesOf.delete(other);
    }
  }

  /** {@link ApprovalStore.takeChallenge}. */
  async takeChallenge(challenge: string, nowMs: number): Promise<string | undefined> {
    const v = this.#challenges.get(challenge);
    if (v === undefined) return undefined;
    this.#challenges.delete(challenge);
    return nowMs < v.expiresAtMs ? v.id : undefined;
  }

  /** {@link ApprovalStore.advanceCounter}. */
  async advanceCounter(credentialId: string, newCounter: number, enrolledCounter: number): Promise<boolean> {
    const stored = this.#counters.get(credentialId) ?? enrolledCounter;
    if (!counterAccepted(stored, newCounter)) return false;
    this.#counters.set(credentialId, newCounter);
    return true;
  }

  #dropApproval(id: string, r: ApprovalRecord): void {
    this.#approvals.delete(id);
    if (this.#approvalOfJti.get(r.jti) === id) this.#approvalOfJti.delete(r.jti);
  }

  // ---- LinkStore (see linkStore.ts): each method runs to its end without awaiting, so it is atomic.

  /** Live links by key: the approval id, its principal and what is kept (expiry: the approval's). */
  readonly #links = new Map<string, { id: string; principal: string; kept: string }>();

  /** The approval of a link when the link is live (its approval unexpired); drops a dead link. */
  #liveLink(
    linkKey: string,
    nowMs: number,
  ): { link: { id: string; kept: string }; record: ApprovalRecord } | undefined {
    const link = this.#links.get(linkKey);
    if (link === undefined) return undefined;
    const record = this.#approvals.get(link.id);
    if (record === undefined || nowMs >= record.expiresAtMs) {
      this.#links.delete(linkKey);
      return undefined;
    }
    return { link, record };
  }

  /** {@link LinkStore.openLinkApproval}: checks, counts and opens in one synchronous step. */
  async openLinkApproval(approval: NewLinkApproval, maxPending: number, nowMs: number): Promise<OpenLinkOutcome> {
    checkNewLinkApproval(approval, maxPending);
    if (this.#liveLink(approval.linkKey, nowMs) !== undefined) return 'exists';
    let pending = 0;
    // Every link is visited (dead ones dropped), so the map stays bounded by the live approvals.
    for (const [key, link] of this.#links) {
      const live = this.#liveLink(key, nowMs);
      if (live?.record.status === 'pending' && link.principal === approval.principal) pending++;
    }
    if (pending >= maxPending) return 'too-many';
    const { linkKey, kept, ...plain } = approval;
    void linkKey;
    void kept;
    this.#openApprovalNow(plain, nowMs);
    this.#links.set(approval.linkKey, { id: approval.id, principal: approval.principal, kept: approval.kept });
    return 'opened';
  }

  /** {@link LinkStore.approvalByLink}. */
  async approvalByLink(linkKey: string, nowMs: number): Promise<LinkedApproval | undefined> {
    const live = this.#liveLink(linkKey, nowMs);
    return live === undefined ? undefined : { approval: { ...live.record }, kept: live.link.kept };
  }

  /** {@link LinkStore.finishLink}. */
  async finishLink(linkKey: string, id: string, nowMs: number): Promise<boolean> {
    void nowMs;
    if (this.#links.get(linkKey)?.id !== id) return false;
    this.#links.delete(linkKey);
    return true;
  }

  // ---- AuditHeadStore (see auditHeads.ts): one head per trail path, in this process only (for the library).

  readonly #auditHeads = new Map<string, AuditHead>();

  /** {@link AuditHeadStore.recordAuditHead}: replaced for another trail, moved forward for the same one. */
  async recordAuditHead(path: string, head: AuditHead): Promise<void> {
    checkAuditHead(path, head);
    const recorded = this.#auditHeads.get(path);
    if (recorded !== undefined && recorded.trail === head.trail && recorded.seq >= head.seq) return;
    this.#auditHeads.set(path, { trail: head.trail, seq: head.seq, mac: head.mac });
  }

  /** {@link AuditHeadStore.auditHead}. */
  async auditHead(path: string): Promise<AuditHead | undefined> {
    checkAuditHeadPath(path);
    const recorded = this.#auditHeads.get(path);
    return recorded === undefined ? undefined : { ...recorded };
  }

  // ---- GrantStore (see grantStore.ts): each method runs to its end without awaiting, so it is atomic.
  // Grants and plans are few (bounded, each made by a human's approval): steps scan the maps.

  readonly #grants = new Map<string, GrantRecord>();
  readonly #plans = new Map<string, PlanRecord>();
  /** Slot key → the plans holding an unused slot with that key (expired ones until swept). */
  readonly #plansOfSlot = new Map<string, Set<PlanRecord>>();

  /**
   * {@link GrantStore.spendGranting}: the ledger's {@link spendSync}, then (spent) expired grants
   * swept, the bounds read and the grant created, in one synchronous step.
   */
  async spendGranting(jti: string, nowMs: number, grant: NewGrant): Promise<SpendCreating> {
    checkNewGrant(grant, nowMs);
    if (this.#grants.has(grant.id)) throw new RangeError('grant id already in the store');
    const spend = this.spendSync(jti, nowMs);
    if (spend !== 'spent') return { spend, created: 'none' };
    for (const [id, r] of this.#grants) if (nowMs >= r.grant.expiresAtMs) this.#grants.delete(id);
    let held = 0;
    let live = 0;
    for (const r of this.#grants.values()) {
      if (!grantLive(r, nowMs)) continue;
      live++;
      if (r.grant.principal === grant.principal && r.grant.binding === grant.binding) held++;
    }
    if (held >= this.maxGrantsPerPrincipal || live >= this.maxGrants) return { spend, created: 'full' };
    this.#grants.set(grant.id, { grant: copyGrant(grant), usesLeft: grant.maxUses - 1, revoked: false });
    if (grant.maxUses === 1) this.#capEndedGrants(nowMs);
    return { spend, created: 'created' };
  }

  /** {@link GrantStore.findGrants}. */
  async findGrants(query: GrantQuery, nowMs: number): Promise<Grant[]> {
    checkGrantQuery(query);
    checkNowMs(nowMs);
    const found: Grant[] = [];
    for (const r of this.#grants.values()) {
      const g = r.grant;
      if (!grantLive(r, nowMs)) continue;
      if (query.audience !== undefined && g.audience !== query.audience) continue;
      if (query.principal !== undefined && g.principal !== query.principal) continue;
      if (query.tool !== undefined && g.tool !== query.tool) continue;
      found.push({ ...g, usesLeft: r.usesLeft });
    }
    return found.sort(oldestFirst);
  }

  /** {@link GrantStore.takeGrantUse}. */
  async takeGrantUse(id: string, nowMs: number): Promise<TakeGrantOutcome> {
    checkNowMs(nowMs);
    const r = this.#grants.get(id);
    if (r === undefined) return { taken: false, reason: 'unknown' };
    if (nowMs >= r.grant.expiresAtMs) return { taken: false, reason: 'expired' };
    if (r.revoked) return { taken: false, reason: 'revoked' };
    if (r.usesLeft <= 0) return { taken: false, reason: 'exhausted' };
    r.usesLeft--;
    if (r.usesLeft === 0) this.#capEndedGrants(nowMs);
    return { taken: true, usesLeft: r.usesLeft, expiresAtMs: r.grant.expiresAtMs };
  }

  /** {@link GrantStore.revokeGrant}. */
  async revokeGrant(id: string, nowMs: number): Promise<'revoked' | 'unknown'> {
    checkNowMs(nowMs);
    const r = this.#grants.get(id);
    if (r === undefined || !grantLive(r, nowMs)) return 'unknown';
    r.revoked = true;
    this.#capEndedGrants(nowMs);
    return 'revoked';
  }

  /** {@link GrantStore.spendPlanning}: as {@link spendGranting}, for a plan. */
  async spendPlanning(jti: string, nowMs: number, plan: NewPlan): Promise<SpendCreating> {
    checkNewPlan(plan, nowMs);
    if (this.#plans.has(plan.id)) throw new RangeError('plan id already in the store');
    const spend = this.spendSync(jti, nowMs);
    if (spend !== 'spent') return { spend, created: 'none' };
    for (const r of this.#plans.values()) if (nowMs >= r.plan.expiresAtMs) this.#dropPlan(r);
    let held = 0;
    for (const r of this.#plans.values())
      if (r.plan.principal === plan.principal && r.plan.binding === plan.binding) held++;
    if (held >= this.maxPlansPerPrincipal || this.#plans.size >= this.maxPlans) return { spend, created: 'full' };
    const record: PlanRecord = { plan: copyPlan(plan), unused: new Map(plan.slots.map((slot, i) => [slot.key, i])) };
    this.#plans.set(plan.id, record);
    for (const slot of plan.slots) {
      let holders = this.#plansOfSlot.get(slot.key);
      if (holders === undefined) this.#plansOfSlot.set(slot.key, (holders = new Set()));
      holders.add(record);
    }
    return { spend, created: 'created' };
  }

  /** {@link GrantStore.takePlanSlot}. */
  async takePlanSlot(key: string, nowMs: number): Promise<TakenPlanSlot | undefined> {
    checkNowMs(nowMs);
    const holders = this.#plansOfSlot.get(key);
    if (holders === undefined) return undefined;
    let best: PlanRecord | undefined;
    for (const r of holders) {
      if (nowMs >= r.plan.expiresAtMs || this.#plans.get(r.plan.id) !== r) continue;
      if (
        best === undefined ||
        r.plan.expiresAtMs < best.plan.expiresAtMs ||
        (r.plan.expiresAtMs === best.plan.expiresAtMs && r.plan.id < best.plan.id)
      )
        best = r;
    }
    if (best === undefined) return undefined;
    const index = best.unused.get(key)!;
    best.unused.delete(key);
    holders.delete(best);
    if (holders.size === 0) this.#plansOfSlot.delete(key);
    if (best.unused.size === 0) this.#dropPlan(best);
    return {
      planId: best.plan.id,
      index,
      identity: best.plan.slots[index]!.identity,
      slotsLeft: best.unused.size,
      expiresAtMs: best.plan.expiresAtMs,
    };
  }

  /**
   * Keeps at most `maxGrants` ended grants (used up or revoked, not yet expired): expired grants
   * are dropped, then the ended ones expiring first.
   */
  #capEndedGrants(nowMs: number): void {
    const ended: GrantRecord[] = [];
    for (const r of this.#grants.values())
      if (nowMs < r.grant.expiresAtMs && (r.revoked || r.usesLeft <= 0)) ended.push(r);
    if (ended.length <= this.maxGrants) return;
    for (const [id, r] of this.#grants) if (nowMs >= r.grant.expiresAtMs) this.#grants.delete(id);
    ended.sort((a, b) => a.grant.expiresAtMs - b.grant.expiresAtMs || (a.grant.id < b.grant.id ? -1 : 1));
    for (const r of ended.slice(0, ended.length - this.maxGrants)) this.#grants.delete(r.grant.id);
  }

  /** Removes a plan and its unused slots from the index. */
  #dropPlan(r: PlanRecord): void {
    if (this.#plans.get(r.plan.id) === r) this.#plans.delete(r.plan.id);
    for (const key of r.unused.keys()) {
      const holders = this.#plansOfSlot.get(key);
      holders?.delete(r);
      if (holders?.size === 0) this.#plansOfSlot.delete(key);
    }
  }

  readonly #isLive = (entry: Entry): boolean => this.#entries.get(entry.jti) === entry;

  #sweepFront(nowMs: number): void {
    // The head's expiry first: a head not yet expired ends the sweep without a map lookup.
    for (let head = this.#issued.peek(); head !== undefined && nowMs >= head.expiresAtMs; head = this.#issued.peek()) {
      if (this.#isLive(head)) this.#drop(head);
      this.#issued.shift();
    }
  }

  /** Removes an entry (outstanding or tombstone) from the map and the counts. */
  #drop(entry: Entry): void {
    this.#entries.delete(entry.jti);
    if (entry.spent) {
      this.#tombstones--;
    } else {
      entry.holder.n--;
      this.#outstanding--;
    }
  }

  /** Forgets the principals that hold nothing. */
  #dropIdleHolders(): void {
    for (const [principal, holder] of this.#holders) if (holder.n <= 0) this.#holders.delete(principal);
  }
}

/** Whether a grant is live at `nowMs`: not expired, a use left, not revoked. */
function grantLive(r: GrantRecord, nowMs: number): boolean {
  return nowMs < r.grant.expiresAtMs && r.usesLeft > 0 && !r.revoked;
}

/** The fields of a {@link NewGrant}, copied (the caller's object may change later). */
function copyGrant(g: NewGrant): NewGrant {
  return {
    id: g.id,
    audience: g.audience,
    principal: g.principal,
    tool: g.tool,
    scope: g.scope,
    binding: g.binding,
    summary: g.summary,
    policyDigest: g.policyDigest,
    approver: g.approver,
    maxUses: g.maxUses,
    createdAtMs: g.createdAtMs,
    expiresAtMs: g.expiresAtMs,
  };
}

/** The fields of a {@link NewPlan}, copied. */
function copyPlan(p: NewPlan): NewPlan {
  return {
    id: p.id,
    audience: p.audience,
    principal: p.principal,
    binding: p.binding,
    slots: p.slots.map((s) => ({ key: s.key, tool: s.tool, identity: s.identity })),
    approver: p.approver,
    createdAtMs: p.createdAtMs,
    expiresAtMs: p.expiresAtMs,
  };
}

/** A FIFO over one array and a head index: O(1) push, peek and shift, no allocation per record. */
class Fifo<T> {
  #items: T[] = [];
  #head = 0;

  get length(): number {
    return this.#items.length - this.#head;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  peek(): T | undefined {
    return this.#head < this.#items.length ? this.#items[this.#head] : undefined;
  }

  shift(): T | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const item = this.#items[this.#head]!;
    this.#head++;
    if (this.#head >= 4096 && this.#head * 2 >= this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }

  /**
   * Drops records that no longer match a live entry, when they outnumber the live ones
   * (or always, with `force`). Amortised O(1) per push: it runs only after the array doubled.
   */
  compactIfSparse(live: number, isLive: (item: T) => boolean, force = false): void {
    if (!force && this.length <= 2 * live + 1024) return;
    const items: T[] = [];
    for (let i = this.#head; i < this.#items.length; i++) if (isLive(this.#items[i]!)) items.push(this.#items[i]!);
    this.#items = items;
    this.#head = 0;
  }
}
