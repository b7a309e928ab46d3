/**
 * The contract every {@link LinkStore} passes (memory, SQLite, Redis): call
 * `linkStoreContract(name, makePair)` at the top level of a `*.test.ts` file. `makePair` gives two
 * handles on one backing store (two connections to one SQLite file or one Redis namespace; the
 * same object twice for memory), so the atomic steps are raced across connections.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { ConfirmStore } from '../../src/store/confirmStore.js';
import type { NewLinkApproval } from '../../src/store/linkStore.js';

export type MakePair = () => Promise<[ConfirmStore, ConfirmStore]>;

const TTL = 300_000;
const MAX = 5;

export function linkStoreContract(name: string, makePair: MakePair): void {
  describe(`LinkStore contract: ${name}`, () => {
    const open: ConfirmStore[] = [];
    const t0 = Date.now();
    const newId = (): string => randomUUID();
    async function make(): Promise<[ConfirmStore, ConfirmStore]> {
      const pair = await makePair();
      open.push(...new Set(pair));
      return pair;
    }
    afterEach(async () => {
      await Promise.all(open.splice(0).map((l) => l.close?.()));
    });
    const linked = (over: Partial<NewLinkApproval> = {}): NewLinkApproval => ({
      id: newId(),
      jti: newId(),
      principal: 'local',
      view: JSON.stringify({ question: 'Delete `a.txt`?' }),
      expiresAtMs: t0 + TTL,
      linkKey: `key-${newId()}`,
      kept: `kept é 🙂 | {x} ${newId()}`,
      ...over,
    });

    it('opens an approval with its link: found by the key (kept byte for byte), by id and by jti; an unknown key finds nothing', async () => {
      const [s] = await make();
      const a = linked();
      expect(await s.openLinkApproval(a, MAX, t0)).toBe('opened');
      const found = await s.approvalByLink(a.linkKey, t0 + 1);
      expect(found?.kept).toBe(a.kept);
      expect(found?.approval).toEqual({
        id: a.id,
        jti: a.jti,
        principal: a.principal,
        view: a.view,
        expiresAtMs: a.expiresAtMs,
        status: 'pending',
        decidedAtMs: 0,
        approver: '',
        credentialId: '',
      });
      expect(await s.approvalById(a.id, t0 + 1)).toEqual(found?.approval);
      expect(await s.approvalByJti(a.jti, t0 + 1)).toEqual(found?.approval);
      expect(await s.approvalByLink(`key-${newId()}`, t0 + 1)).toBeUndefined();
    });

    it('reads the decision through the link (approved, declined)', async () => {
      const [s] = await make();
      const a = linked();
      const b = linked();
      await s.openLinkApproval(a, MAX, t0);
      await s.openLinkApproval(b, MAX, t0);
      await s.decideApproval(a.id, { status: 'approved', approver: 'ann', credentialId: 'c1' }, t0 + 2);
      await s.decideApproval(b.id, { status: 'declined', approver: '', credentialId: '' }, t0 + 2);
      expect((await s.approvalByLink(a.linkKey, t0 + 3))?.approval).toMatchObject({
        status: 'approved',
        approver: 'ann',
        decidedAtMs: t0 + 2,
      });
      expect((await s.approvalByLink(b.linkKey, t0 + 3))?.approval.status).toBe('declined');
    });

    it('keeps the quorum a link approval needs: one approver is counted, not approved; the second distinct one approves it (control: one approver opens as before)', async () => {
      const [s, t] = await make();
      const a = linked({ approvalsRequired: 2 });
      expect(await s.openLinkApproval(a, MAX, t0)).toBe('opened');
      expect((await t.approvalByLink(a.linkKey, t0 + 1))?.approval.approvalsRequired).toBe(2);
      expect(await t.decideApproval(a.id, { status: 'approved', approver: 'ann', credentialId: 'c1' }, t0 + 2)).toBe(
        'already-decided',
      );
      expect(await s.countApproval(a.id, { approver: 'ann', credentialId: 'c1' }, t0 + 3)).toBe('counted');
      expect((await t.approvalByLink(a.linkKey, t0 + 4))?.approval.status).toBe('pending');
      expect(await t.countApproval(a.id, { approver: 'bob', credentialId: 'c2' }, t0 + 5)).toBe('approved');
      const done = await s.approvalByLink(a.linkKey, t0 + 6);
      expect(done?.approval.status).toBe('approved');
      expect(done?.approval.approvals?.map((v) => v.approver)).toEqual(['ann', 'bob']);
      const one = linked();
      expect(await s.openLinkApproval(one, MAX, t0)).toBe('opened');
      expect((await t.approvalByLink(one.linkKey, t0 + 1))?.approval.approvalsRequired).toBeUndefined();
    });

    it('refuses a second link for a live key (exists, nothing recorded); control: another key opens', async () => {
      const [s] = await make();
      const a = linked();
      await s.openLinkApproval(a, MAX, t0);
      const again = linked({ linkKey: a.linkKey });
      expect(await s.openLinkApproval(again, MAX, t0 + 1)).toBe('exists');
      expect(await s.approvalById(again.id, t0 + 2)).toBeUndefined();
      expect((await s.approvalByLink(a.linkKey, t0 + 2))?.approval.id).toBe(a.id);
      expect(await s.openLinkApproval(linked(), MAX, t0 + 1)).toBe('opened');
    });

    it('finishes a declined or spent link: the key finds nothing and opens anew, the approval stays readable by id', async () => {
      const [s] = await make();
      const a = linked();
      await s.openLinkApproval(a, MAX, t0);
      await s.decideApproval(a.id, { status: 'declined', approver: '', credentialId: '' }, t0 + 1);
      // Only the key's link to that approval is finished.
      expect(await s.finishLink(a.linkKey, newId(), t0 + 2)).toBe(false);
      expect(await s.approvalByLink(a.linkKey, t0 + 2)).toBeDefined();
      expect(await s.finishLink(a.linkKey, a.id, t0 + 2)).toBe(true);
      expect(await s.finishLink(a.linkKey, a.id, t0 + 2)).toBe(false);
      expect(await s.approvalByLink(a.linkKey, t0 + 3)).toBeUndefined();
      expect((await s.approvalById(a.id, t0 + 3))?.status).toBe('declined');
      const next = linked({ linkKey: a.linkKey });
      expect(await s.openLinkApproval(next, MAX, t0 + 4)).toBe('opened');
      expect((await s.approvalByLink(a.linkKey, t0 + 5))?.approval).toMatchObject({ id: next.id, status: 'pending' });
      // A spent (approved) one likewise.
      await s.decideApproval(next.id, { status: 'approved', approver: 'ann', credentialId: 'c1' }, t0 + 6);
      expect(await s.finishLink(a.linkKey, next.id, t0 + 7)).toBe(true);
      expect(await s.approvalByLink(a.linkKey, t0 + 8)).toBeUndefined();
      expect(await s.openLinkApproval(linked({ linkKey: a.linkKey }), MAX, t0 + 9)).toBe('opened');
    });

    it('hides a link at exactly its approval expiry, and then opens the key anew', async () => {
      const [s] = await make();
      const a = linked({ expiresAtMs: t0 + 1_000 });
      await s.openLinkApproval(a, MAX, t0);
      expect(await s.approvalByLink(a.linkKey, t0 + 999)).toBeDefined();
      expect(await s.approvalByLink(a.linkKey, t0 + 1_000)).toBeUndefined();
      expect(await s.openLinkApproval(linked({ linkKey: a.linkKey }), MAX, t0 + 1_000)).toBe('opened');
    });

    it('holds at most maxPending pending link approvals per principal: the next is too-many; decided, finished or expired ones free a place; another principal is not counted', async () => {
      const [s] = await make();
      const first = linked({ expiresAtMs: t0 + 1_000 });
      const rest = Array.from({ length: MAX - 1 }, () => linked());
      for (const a of [first, ...rest]) expect(await s.openLinkApproval(a, MAX, t0)).toBe('opened');
      const sixth = linked();
      expect(await s.openLinkApproval(sixth, MAX, t0 + 1)).toBe('too-many');
      expect(await s.approvalById(sixth.id, t0 + 2)).toBeUndefined();
      expect(await s.approvalByLink(sixth.linkKey, t0 + 2)).toBeUndefined();
      // Another principal has its own count (control).
      expect(await s.openLinkApproval(linked({ principal: 'someone else' }), MAX, t0 + 1)).toBe('opened');
      // A decided approval is no longer pending.
      await s.decideApproval(rest[0]!.id, { status: 'declined', approver: '', credentialId: '' }, t0 + 2);
      expect(await s.openLinkApproval(sixth, MAX, t0 + 3)).toBe('opened');
      expect(await s.openLinkApproval(linked(), MAX, t0 + 3)).toBe('too-many');
      // An expired one is no longer counted.
      expect(await s.openLinkApproval(linked(), MAX, t0 + 1_000)).toBe('opened');
      expect(await s.openLinkApproval(linked(), MAX, t0 + 1_001)).toBe('too-many');
    });

    it('never exceeds maxPending under 16 concurrent opens for one principal across two connections', async () => {
      const [s, peer] = await make();
      const all = Array.from({ length: 16 }, () => linked({ principal: `p-${t0}` }));
      const outcomes = await Promise.all(all.map((a, i) => (i % 2 === 0 ? s : peer).openLinkApproval(a, MAX, t0)));
      expect(outcomes.filter((o) => o === 'opened')).toHaveLength(MAX);
      expect(outcomes.filter((o) => o === 'too-many')).toHaveLength(16 - MAX);
      let readable = 0;
      for (const a of all) if ((await peer.approvalByLink(a.linkKey, t0 + 1)) !== undefined) readable++;
      expect(readable).toBe(MAX);
    });

    it('opens exactly one link when 16 opens of one key race across two connections', async () => {
      const [s, peer] = await make();
      const key = `key-${newId()}`;
      const all = Array.from({ length: 16 }, () => linked({ linkKey: key }));
      const outcomes = await Promise.all(all.map((a, i) => (i % 2 === 0 ? s : peer).openLinkApproval(a, MAX, t0)));
      expect(outcomes.filter((o) => o === 'opened')).toHaveLength(1);
      expect(outcomes.filter((o) => o === 'exists')).toHaveLength(15);
    });

    it('refuses bad arguments with RangeError (empty key or kept, maxPending not a positive whole number)', async () => {
      const [s] = await make();
      await expect(s.openLinkApproval(linked({ linkKey: '' }), MAX, t0)).rejects.toBeInstanceOf(RangeError);
      await expect(s.openLinkApproval(linked({ kept: '' }), MAX, t0)).rejects.toBeInstanceOf(RangeError);
      for (const bad of [0, -1, 1.5, Number.NaN])
        await expect(s.openLinkApproval(linked(), bad, t0)).rejects.toBeInstanceOf(RangeError);
      expect(await s.openLinkApproval(linked(), MAX, t0)).toBe('opened');
    });
  });
}
