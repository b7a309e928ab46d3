/**
 * The contract every {@link ApprovalStore} passes (memory, SQLite, Redis): call
 * `approvalStoreContract(name, make)` at the top level of a `*.test.ts` file.
 * Times are injected around `t0`, a fixed point near the real clock (Redis keeps
 * keys for the remaining lifetime plus a skew margin).
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_CHALLENGES_PER_APPROVAL, type ApprovalStore } from '../../src/store/approvalStore.js';
import type { Ledger } from '../../src/store/ledger.js';

export type MakeStore = () => (ApprovalStore & Ledger) | Promise<ApprovalStore & Ledger>;

const TTL = 300_000;

export function approvalStoreContract(name: string, makeStore: MakeStore): void {
  describe(`ApprovalStore contract: ${name}`, () => {
    const open: Ledger[] = [];
    const t0 = Date.now();
    const newId = (): string => randomUUID();
    async function make(): Promise<ApprovalStore & Ledger> {
      const s = await makeStore();
      open.push(s);
      return s;
    }
    afterEach(async () => {
      await Promise.all(open.splice(0).map((l) => l.close?.()));
    });
    const approval = (over: Partial<{ id: string; jti: string; expiresAtMs: number }> = {}) => ({
      id: newId(),
      jti: newId(),
      principal: 'local',
      view: JSON.stringify({ question: 'Delete `a.txt`?', values: ['é 🙂 | {x}'] }),
      expiresAtMs: t0 + TTL,
      ...over,
    });

    it('opens a pending approval readable by id and by jti, view kept byte for byte', async () => {
      const s = await make();
      const a = approval();
      await s.openApproval(a, t0);
      const byId = await s.approvalById(a.id, t0 + 1);
      expect(byId).toEqual({ ...a, status: 'pending', decidedAtMs: 0, approver: '', credentialId: '' });
      expect(await s.approvalByJti(a.jti, t0 + 1)).toEqual(byId);
      expect(await s.approvalById(newId(), t0 + 1)).toBeUndefined();
      expect(await s.approvalByJti(newId(), t0 + 1)).toBeUndefined();
    });

    it('refuses a second approval for the same id or the same jti with RangeError', async () => {
      const s = await make();
      const a = approval();
      await s.openApproval(a, t0);
      await expect(s.openApproval(approval({ id: a.id }), t0)).rejects.toBeInstanceOf(RangeError);
      await expect(s.openApproval(approval({ jti: a.jti }), t0)).rejects.toBeInstanceOf(RangeError);
      // The control: a fresh id and jti open.
      await s.openApproval(approval(), t0);
    });

    it('hides an approval at exactly its expiry and refuses to decide it (expired)', async () => {
      const s = await make();
      const a = approval({ expiresAtMs: t0 + 1_000 });
      await s.openApproval(a, t0);
      expect((await s.approvalById(a.id, t0 + 999))?.status).toBe('pending');
      expect(await s.approvalById(a.id, t0 + 1_000)).toBeUndefined();
      expect(await s.approvalByJti(a.jti, t0 + 1_000)).toBeUndefined();
      const b = approval({ expiresAtMs: t0 + 1_000 });
      await s.openApproval(b, t0);
      expect(
        await s.decideApproval(b.id, { status: 'approved', approver: 'ann', credentialId: 'c1' }, t0 + 1_000),
      ).toBe('expired');
    });

    it('records a decision once: approved with approver, credential and time; a second decision is refused', async () => {
      const s = await make();
      const a = approval();
      await s.openApproval(a, t0);
      expect(
        await s.decideApproval(a.id, { status: 'approved', approver: 'ann', credentialId: 'cred-1' }, t0 + 5),
      ).toBe('decided');
      expect(await s.decideApproval(a.id, { status: 'declined', approver: '', credentialId: '' }, t0 + 6)).toBe(
        'already-decided',
      );
      const r = await s.approvalByJti(a.jti, t0 + 7);
      expect(r).toMatchObject({ status: 'approved', approver: 'ann', credentialId: 'cred-1', decidedAtMs: t0 + 5 });
      expect(await s.decideApproval(newId(), { status: 'declined', approver: '', credentialId: '' }, t0)).toBe(
        'unknown',
      );
    });

    it('keeps the scope the page chose with an approval (call or grant); none while pending, when declined, or when not given', async () => {
      const s = await make();
      const [call, grant, none, declined] = [approval(), approval(), approval(), approval()];
      for (const a of [call, grant, none, declined]) await s.openApproval(a, t0);
      expect((await s.approvalById(call.id, t0 + 1))?.scope).toBeUndefined();
      const approve = { status: 'approved' as const, approver: 'ann', credentialId: 'c1' };
      expect(await s.decideApproval(call.id, { ...approve, scope: 'call' }, t0 + 2)).toBe('decided');
      expect(await s.decideApproval(grant.id, { ...approve, scope: 'grant' }, t0 + 2)).toBe('decided');
      expect(await s.decideApproval(none.id, approve, t0 + 2)).toBe('decided');
      // A decline keeps no scope, whatever it is given.
      expect(
        await s.decideApproval(
          declined.id,
          { status: 'declined', approver: '', credentialId: '', scope: 'grant' },
          t0 + 2,
        ),
      ).toBe('decided');
      expect((await s.approvalById(call.id, t0 + 3))?.scope).toBe('call');
      expect((await s.approvalByJti(grant.jti, t0 + 3))?.scope).toBe('grant');
      expect(await s.approvalById(none.id, t0 + 3)).not.toHaveProperty('scope');
      expect(await s.approvalById(declined.id, t0 + 3)).not.toHaveProperty('scope');
      // A second decision cannot change the scope either.
      expect(await s.decideApproval(call.id, { ...approve, scope: 'grant' }, t0 + 4)).toBe('already-decided');
      expect((await s.approvalById(call.id, t0 + 5))?.scope).toBe('call');
    });

    it('attaches a grant id to an approved approval once and keeps it readable until the grant expires; pending, declined, unknown or expired approvals take none', async () => {
      const s = await make();
      const a = approval({ expiresAtMs: t0 + 10_000 });
      await s.openApproval(a, t0);
      expect(await s.attachGrant(a.id, 'grant-1', t0 + 60_000, t0 + 1)).toBe(false); // pending
      expect(await s.approvalById(a.id, t0 + 2)).not.toHaveProperty('grantId');
      await s.decideApproval(a.id, { status: 'approved', approver: 'ann', credentialId: 'c1', scope: 'grant' }, t0 + 3);
      expect(await s.attachGrant(a.id, 'grant-1', t0 + 60_000, t0 + 4)).toBe(true);
      expect(await s.attachGrant(a.id, 'grant-2', t0 + 90_000, t0 + 5)).toBe(false); // once
      const r = await s.approvalById(a.id, t0 + 30_000); // past the approval's own expiry
      expect(r).toMatchObject({ grantId: 'grant-1', scope: 'grant', status: 'approved', expiresAtMs: t0 + 60_000 });
      expect((await s.approvalByJti(a.jti, t0 + 59_999))?.grantId).toBe('grant-1');
      expect(await s.approvalById(a.id, t0 + 60_000)).toBeUndefined();
      // An earlier grant expiry never shortens the approval (control of the max).
      const b = approval({ expiresAtMs: t0 + 10_000 });
      await s.openApproval(b, t0);
      await s.decideApproval(b.id, { status: 'approved', approver: 'ann', credentialId: 'c1', scope: 'grant' }, t0 + 1);
      expect(await s.attachGrant(b.id, 'grant-b', t0 + 5_000, t0 + 2)).toBe(true);
      expect(await s.approvalById(b.id, t0 + 9_999)).toMatchObject({ grantId: 'grant-b', expiresAtMs: t0 + 10_000 });
      const declined = approval();
      await s.openApproval(declined, t0);
      await s.decideApproval(declined.id, { status: 'declined', approver: '', credentialId: '' }, t0 + 1);
      expect(await s.attachGrant(declined.id, 'grant-3', t0 + 60_000, t0 + 2)).toBe(false);
      expect(await s.attachGrant(newId(), 'grant-4', t0 + 60_000, t0 + 2)).toBe(false);
      const late = approval({ expiresAtMs: t0 + 1_000 });
      await s.openApproval(late, t0);
      await s.decideApproval(late.id, { status: 'approved', approver: 'ann', credentialId: 'c1' }, t0 + 1);
      expect(await s.attachGrant(late.id, 'grant-5', t0 + 60_000, t0 + 1_000)).toBe(false);
      await expect(s.attachGrant(a.id, '', t0 + 60_000, t0)).rejects.toBeInstanceOf(RangeError);
    });

    it('gives exactly one of 16 concurrent attaches of a grant id', async () => {
      const s = await make();
      const a = approval();
      await s.openApproval(a, t0);
      await s.decideApproval(a.id, { status: 'approved', approver: 'ann', credentialId: 'c1', scope: 'grant' }, t0 + 1);
      const outcomes = await Promise.all(
        Array.from({ length: 16 }, (_, i) => s.attachGrant(a.id, `grant-${i}`, t0 + TTL + 60_000, t0 + 2)),
      );
      expect(outcomes.filter((o) => o)).toHaveLength(1);
      const winner = outcomes.indexOf(true);
      expect((await s.approvalById(a.id, t0 + 3))?.grantId).toBe(`grant-${winner}`);
    });

    it('gives exactly one decided to 16 concurrent decisions', async () => {
      const s = await make();
      const a = approval();
      await s.openApproval(a, t0);
      const outcomes = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          s.decideApproval(
            a.id,
            i % 2
              ? { status: 'declined', approver: '', credentialId: '' }
              : { status: 'approved', approver: `a${i}`, credentialId: 'c' },
            t0 + 1,
          ),
        ),
      );
      expect(outcomes.filter((o) => o === 'decided')).toHaveLength(1);
      expect(outcomes.filter((o) => o === 'already-decided')).toHaveLength(15);
    });

    it('hands a challenge out once: the second take and a take after expiry get nothing', async () => {
      const s = await make();
      const c = newId();
      await s.putChallenge(c, 'approval-1', t0 + 60_000, t0);
      expect(await s.takeChallenge(c, t0 + 1)).toBe('approval-1');
      expect(await s.takeChallenge(c, t0 + 2)).toBeUndefined();
      const late = newId();
      await s.putChallenge(late, 'approval-1', t0 + 60_000, t0);
      expect(await s.takeChallenge(late, t0 + 60_000)).toBeUndefined();
      expect(await s.takeChallenge(newId(), t0)).toBeUndefined();
    });

    it('keeps at most MAX_CHALLENGES_PER_APPROVAL (8) challenges of one approval: more drop its oldest only; another approval keeps its own (control)', async () => {
      const s = await make();
      const other = newId();
      await s.putChallenge(other, 'approval-b', t0 + 60_000, t0);
      const mine = Array.from({ length: 50 }, () => newId());
      for (const [i, c] of mine.entries()) await s.putChallenge(c, 'approval-a', t0 + 60_000 + i, t0 + i);
      // The newest eight of approval-a are there; every older one was dropped.
      for (const c of mine.slice(0, 50 - MAX_CHALLENGES_PER_APPROVAL))
        expect(await s.takeChallenge(c, t0 + 100)).toBeUndefined();
      for (const c of mine.slice(50 - MAX_CHALLENGES_PER_APPROVAL))
        expect(await s.takeChallenge(c, t0 + 100)).toBe('approval-a');
      expect(MAX_CHALLENGES_PER_APPROVAL).toBe(8);
      // approval-b's challenge survived fifty of approval-a's.
      expect(await s.takeChallenge(other, t0 + 100)).toBe('approval-b');
    });

    it('gives a challenge to exactly one of 16 concurrent takes', async () => {
      const s = await make();
      const c = newId();
      await s.putChallenge(c, 'x', t0 + 60_000, t0);
      const got = await Promise.all(Array.from({ length: 16 }, () => s.takeChallenge(c, t0 + 1)));
      expect(got.filter((g) => g === 'x')).toHaveLength(1);
    });

    it('moves a signature counter only forward, from the enrolled value; 0 stays accepted while both are 0', async () => {
      const s = await make();
      const cred = newId();
      expect(await s.advanceCounter(cred, 5, 5)).toBe(false); // not above the enrolled counter
      expect(await s.advanceCounter(cred, 6, 5)).toBe(true);
      expect(await s.advanceCounter(cred, 6, 5)).toBe(false); // a replay
      expect(await s.advanceCounter(cred, 0, 5)).toBe(false);
      expect(await s.advanceCounter(cred, 9, 5)).toBe(true);
      const synced = newId();
      expect(await s.advanceCounter(synced, 0, 0)).toBe(true);
      expect(await s.advanceCounter(synced, 0, 0)).toBe(true);
      expect(await s.advanceCounter(synced, 1, 0)).toBe(true);
      expect(await s.advanceCounter(synced, 0, 0)).toBe(false);
    });

    it('lets exactly one of 16 concurrent advances to the same counter value through', async () => {
      const s = await make();
      const cred = newId();
      const ok = await Promise.all(Array.from({ length: 16 }, () => s.advanceCounter(cred, 7, 1)));
      expect(ok.filter(Boolean)).toHaveLength(1);
    });
  });
}
