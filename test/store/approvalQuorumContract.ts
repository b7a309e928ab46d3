/**
 * The quorum part of the {@link ApprovalStore} contract (memory, SQLite, Redis): an approval opened
 * with `approvalsRequired` N is approved only when N distinct approvers were counted
 * (`countApproval`), each approver once by name and by credential id, atomically; a decline ends
 * it. Call `approvalQuorumContract(name, make)` at the top level of a `*.test.ts` file; `make`
 * returns one or more handles on the same data (two connections of one SQLite file, two clients of
 * one Redis namespace), and concurrent steps are spread over them.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_APPROVALS_REQUIRED, type ApprovalStore, type CountOutcome } from '../../src/store/approvalStore.js';
import type { Ledger } from '../../src/store/ledger.js';

type Store = ApprovalStore & Ledger;
export type MakeHandles = () => Promise<Store[]>;

const TTL = 300_000;

export function approvalQuorumContract(name: string, makeHandles: MakeHandles): void {
  describe(`ApprovalStore quorum contract: ${name}`, () => {
    const open: Store[] = [];
    const t0 = Date.now();
    async function make(): Promise<Store[]> {
      const handles = await makeHandles();
      open.push(...handles);
      return handles;
    }
    afterEach(async () => {
      await Promise.all(open.splice(0).map((l) => l.close?.()));
    });
    const approval = (approvalsRequired?: number) => ({
      id: randomUUID(),
      jti: randomUUID(),
      principal: 'local',
      view: '{"tool":"delete_file"}',
      expiresAtMs: t0 + TTL,
      ...(approvalsRequired === undefined ? {} : { approvalsRequired }),
    });
    const vote = (i: number, scope?: 'call' | 'grant') => ({
      approver: `approver ${i}`,
      credentialId: `cred-${i}`,
      ...(scope ? { scope } : {}),
    });
    const count = (outcomes: CountOutcome[], o: CountOutcome): number => outcomes.filter((x) => x === o).length;

    it('keeps approvalsRequired with the record; 1 (or none) is stored as none, as before', async () => {
      const [s] = await make();
      const two = approval(2);
      const one = approval(1);
      const none = approval();
      for (const a of [two, one, none]) await s!.openApproval(a, t0);
      expect(await s!.approvalById(two.id, t0 + 1)).toEqual({
        ...two,
        status: 'pending',
        decidedAtMs: 0,
        approver: '',
        credentialId: '',
      });
      const { approvalsRequired: _, ...bare } = one;
      expect(await s!.approvalById(one.id, t0 + 1)).toEqual({
        ...bare,
        status: 'pending',
        decidedAtMs: 0,
        approver: '',
        credentialId: '',
      });
      expect((await s!.approvalById(none.id, t0 + 1))?.approvalsRequired).toBeUndefined();
      await expect(s!.openApproval(approval(0), t0)).rejects.toBeInstanceOf(RangeError);
      await expect(s!.openApproval(approval(MAX_APPROVALS_REQUIRED + 1), t0)).rejects.toBeInstanceOf(RangeError);
      await expect(s!.openApproval(approval(1.5), t0)).rejects.toBeInstanceOf(RangeError);
    });

    it('approves at the N-th distinct approver, naming every one in order; the first leaves it pending with its approval listed', async () => {
      const [s] = await make();
      const a = approval(2);
      await s!.openApproval(a, t0);
      expect(await s!.countApproval(a.id, vote(1), t0 + 10)).toBe('counted');
      const pending = await s!.approvalById(a.id, t0 + 11);
      expect(pending?.status).toBe('pending');
      expect(pending?.approvals).toEqual([{ approver: 'approver 1', credentialId: 'cred-1', atMs: t0 + 10 }]);
      expect(await s!.countApproval(a.id, vote(2), t0 + 20)).toBe('approved');
      const done = await s!.approvalById(a.id, t0 + 21);
      expect(done).toMatchObject({
        status: 'approved',
        decidedAtMs: t0 + 20,
        approver: 'approver 1, approver 2',
        credentialId: 'cred-1,cred-2',
        approvalsRequired: 2,
      });
      expect(done?.approvals?.map((x) => [x.approver, x.atMs])).toEqual([
        ['approver 1', t0 + 10],
        ['approver 2', t0 + 20],
      ]);
      expect(done?.scope).toBeUndefined();
      // Decided: a third approver changes nothing.
      expect(await s!.countApproval(a.id, vote(3), t0 + 30)).toBe('already-decided');
    });

    it('counts the same approver once: the same name or the same credential again is already-counted (a distinct one completes it: control)', async () => {
      const [s] = await make();
      const a = approval(2);
      await s!.openApproval(a, t0);
      expect(await s!.countApproval(a.id, vote(1), t0 + 1)).toBe('counted');
      expect(await s!.countApproval(a.id, vote(1), t0 + 2)).toBe('already-counted');
      expect(await s!.countApproval(a.id, { approver: 'approver 1', credentialId: 'other' }, t0 + 3)).toBe(
        'already-counted',
      );
      expect(await s!.countApproval(a.id, { approver: 'someone else', credentialId: 'cred-1' }, t0 + 4)).toBe(
        'already-counted',
      );
      expect((await s!.approvalById(a.id, t0 + 5))?.approvals).toHaveLength(1);
      expect(await s!.countApproval(a.id, vote(2), t0 + 6)).toBe('approved');
    });

    it('ends a quorum with one decline: later approvals change nothing; an approved decideApproval never approves a quorum (countApproval does: control)', async () => {
      const [s] = await make();
      const a = approval(2);
      await s!.openApproval(a, t0);
      expect(await s!.countApproval(a.id, vote(1), t0 + 1)).toBe('counted');
      expect(await s!.decideApproval(a.id, { status: 'declined', approver: '', credentialId: '' }, t0 + 2)).toBe(
        'decided',
      );
      expect(await s!.countApproval(a.id, vote(2), t0 + 3)).toBe('already-decided');
      expect((await s!.approvalById(a.id, t0 + 4))?.status).toBe('declined');
      const b = approval(2);
      await s!.openApproval(b, t0);
      expect(await s!.decideApproval(b.id, { status: 'approved', approver: 'ann', credentialId: 'c1' }, t0 + 1)).toBe(
        'already-decided',
      );
      expect((await s!.approvalById(b.id, t0 + 2))?.status).toBe('pending');
      expect(await s!.countApproval(b.id, vote(1), t0 + 3)).toBe('counted');
      expect(await s!.countApproval(b.id, vote(2), t0 + 4)).toBe('approved');
    });

    it('approves with scope grant only when every approver chose it; a single approval of a one-approver record is approved at once', async () => {
      const [s] = await make();
      const mixed = approval(2);
      const grant = approval(2);
      const one = approval();
      for (const a of [mixed, grant, one]) await s!.openApproval(a, t0);
      await s!.countApproval(mixed.id, vote(1, 'grant'), t0 + 1);
      await s!.countApproval(mixed.id, vote(2, 'call'), t0 + 2);
      expect((await s!.approvalById(mixed.id, t0 + 3))?.scope).toBe('call');
      await s!.countApproval(grant.id, vote(1, 'grant'), t0 + 1);
      await s!.countApproval(grant.id, vote(2, 'grant'), t0 + 2);
      expect((await s!.approvalById(grant.id, t0 + 3))?.scope).toBe('grant');
      expect(await s!.countApproval(one.id, vote(1, 'call'), t0 + 1)).toBe('approved');
      expect(await s!.approvalById(one.id, t0 + 2)).toMatchObject({
        status: 'approved',
        approver: 'approver 1',
        scope: 'call',
      });
    });

    it('counts nothing on an unknown or expired approval', async () => {
      const [s] = await make();
      const a = approval(2);
      await s!.openApproval(a, t0);
      expect(await s!.countApproval(randomUUID(), vote(1), t0 + 1)).toBe('unknown');
      expect(await s!.countApproval(a.id, vote(1), t0 + TTL)).toBe('expired');
      await expect(s!.countApproval(a.id, { approver: '', credentialId: 'c' }, t0 + 1)).rejects.toBeInstanceOf(
        RangeError,
      );
    });

    it('16 concurrent approvals by 16 distinct approvers of a quorum of 3: exactly 3 counted, one of them approved, 13 refused', async () => {
      const handles = await make();
      const a = approval(3);
      await handles[0]!.openApproval(a, t0);
      const outcomes = await Promise.all(
        Array.from({ length: 16 }, (_, i) => handles[i % handles.length]!.countApproval(a.id, vote(i), t0 + 1)),
      );
      expect(count(outcomes, 'approved')).toBe(1);
      expect(count(outcomes, 'counted')).toBe(2);
      expect(count(outcomes, 'already-decided')).toBe(13);
      const done = await handles[0]!.approvalById(a.id, t0 + 2);
      expect(done?.status).toBe('approved');
      expect(new Set(done?.approvals?.map((x) => x.approver)).size).toBe(3);
      expect(done?.approver.split(', ')).toEqual(done?.approvals?.map((x) => x.approver));
    });

    it('16 concurrent approvals by the same approver of a quorum of 2: counted once, still pending; a second approver then completes it (control)', async () => {
      const handles = await make();
      const a = approval(2);
      await handles[0]!.openApproval(a, t0);
      const outcomes = await Promise.all(
        Array.from({ length: 16 }, (_, i) => handles[i % handles.length]!.countApproval(a.id, vote(7), t0 + 1)),
      );
      expect(count(outcomes, 'counted')).toBe(1);
      expect(count(outcomes, 'already-counted')).toBe(15);
      expect((await handles[0]!.approvalById(a.id, t0 + 2))?.status).toBe('pending');
      expect(await handles[handles.length - 1]!.countApproval(a.id, vote(8), t0 + 3)).toBe('approved');
    });

    it('16 concurrent approvals and denials of a quorum of 2: it ends approved or declined, never both, and only with 2 distinct approvers when approved', async () => {
      const handles = await make();
      const a = approval(2);
      await handles[0]!.openApproval(a, t0);
      const steps = await Promise.all(
        Array.from({ length: 16 }, (_, i) => {
          const h = handles[i % handles.length]!;
          return i % 4 === 3
            ? h.decideApproval(a.id, { status: 'declined', approver: '', credentialId: '' }, t0 + 1)
            : h.countApproval(a.id, vote(i % 3), t0 + 1);
        }),
      );
      const done = await handles[0]!.approvalById(a.id, t0 + 2);
      if (done?.status === 'approved') {
        expect(steps.filter((o) => o === 'decided')).toHaveLength(0);
        expect(count(steps as CountOutcome[], 'approved')).toBe(1);
        expect(new Set(done.approvals?.map((x) => x.credentialId)).size).toBe(2);
      } else {
        expect(done?.status).toBe('declined');
        expect(steps.filter((o) => o === 'decided')).toHaveLength(1);
        expect(count(steps as CountOutcome[], 'approved')).toBe(0);
      }
    });
  });
}
