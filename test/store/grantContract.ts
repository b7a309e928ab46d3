/**
 * The contract every {@link GrantStore} passes (memory, SQLite, Redis): call
 * `grantStoreContract(name, makeStore)` at the top level of a `*.test.ts` file. Each test makes its
 * own store (fresh file / namespace) and closes it. Times are injected around `t0`, a fixed point
 * near the real clock (Redis keeps keys for the remaining lifetime plus a skew margin).
 *
 * Every race here is decided by counts, never by durations: of N concurrent takes, exactly one wins.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { ConfirmStore } from '../../src/store/confirmStore.js';
import {
  DEFAULT_MAX_GRANTS,
  DEFAULT_MAX_GRANTS_PER_PRINCIPAL,
  MAX_GRANT_TEXT_LENGTH,
  MAX_PLAN_SLOTS,
  type Grant,
  type NewGrant,
  type NewPlan,
  type TakeGrantOutcome,
} from '../../src/store/grantStore.js';

/** Bounds a test asks its store to be made with (store defaults when absent). */
export interface GrantBounds {
  maxGrantsPerPrincipal?: number;
  maxGrants?: number;
  maxPlansPerPrincipal?: number;
  maxPlans?: number;
}

/** Makes a fresh, empty store with the given bounds. */
export type MakeGrantStore = (bounds?: GrantBounds) => ConfirmStore | Promise<ConfirmStore>;

const TTL = 300_000;
const GRANT_MS = 900_000;

/** A random grant or plan id: 22 base64url characters. */
export const recordId = (): string => randomBytes(16).toString('base64url');
/** A random digest or slot key: 43 base64url characters. */
export const slotKey = (): string => randomBytes(32).toString('base64url');

export function grantStoreContract(name: string, makeStore: MakeGrantStore): void {
  describe(`GrantStore contract: ${name}`, () => {
    const open: ConfirmStore[] = [];
    const t0 = Date.now();

    async function make(bounds?: GrantBounds): Promise<ConfirmStore> {
      const store = await makeStore(bounds);
      open.push(store);
      return store;
    }

    afterEach(async () => {
      await Promise.all(open.splice(0).map((s) => s.close?.()));
    });

    /** A confirmation issued at `t0` for `principal`, outstanding until `expiresAtMs`. */
    async function issued(store: ConfirmStore, principal = 'alice', expiresAtMs = t0 + TTL): Promise<string> {
      const jti = randomUUID();
      await store.issue(jti, principal, expiresAtMs, t0);
      return jti;
    }

    const newGrant = (over: Partial<NewGrant> = {}): NewGrant => ({
      id: recordId(),
      audience: 'files',
      principal: 'alice',
      tool: 'delete_file',
      scope: JSON.stringify({ path: { matcher: 'same-directory', dir: '/srv/cache', dev: 2049, ino: 131 } }),
      binding: '',
      summary: 'Or allow: delete any file directly in `/srv/cache/` for 15 minutes, at most 3 files.',
      policyDigest: slotKey(),
      approver: 'client',
      maxUses: 3,
      createdAtMs: t0,
      expiresAtMs: t0 + GRANT_MS,
      ...over,
    });

    const newPlan = (over: Partial<NewPlan> & { calls?: number } = {}): NewPlan => {
      const { calls = 3, ...rest } = over;
      return {
        id: recordId(),
        audience: 'files',
        principal: 'alice',
        binding: '',
        slots: Array.from({ length: calls }, (_, i) => ({
          key: slotKey(),
          tool: 'delete_file',
          identity: JSON.stringify({ path: `/srv/cache/${i}.tmp`, dev: 2049, ino: 200 + i }),
        })),
        approver: 'client',
        createdAtMs: t0,
        expiresAtMs: t0 + TTL,
        ...rest,
      };
    };

    /** A grant created by spending a fresh confirmation of its principal (at `t0 + 1`). */
    async function granted(store: ConfirmStore, over: Partial<NewGrant> = {}): Promise<NewGrant> {
      const g = newGrant(over);
      expect(await store.spendGranting(await issued(store, g.principal), t0 + 1, g)).toEqual({
        spend: 'spent',
        created: 'created',
      });
      return g;
    }

    /** A plan created by spending a fresh confirmation of its principal (at `t0 + 1`). */
    async function planned(store: ConfirmStore, over: Partial<NewPlan> & { calls?: number } = {}): Promise<NewPlan> {
      const p = newPlan(over);
      expect(await store.spendPlanning(await issued(store, p.principal), t0 + 1, p)).toEqual({
        spend: 'spent',
        created: 'created',
      });
      return p;
    }

    const stored = (g: NewGrant, usesLeft: number): Grant => ({ ...g, usesLeft });
    const ids = (grants: Grant[]): string[] => grants.map((g) => g.id);

    describe('grants', () => {
      it('creates a grant only when its spendGranting spent the jti: none for an already-spent, an unknown and an expired jti, and a second spendGranting of the same jti creates nothing', async () => {
        const s = await make();
        const jti = await issued(s);
        const first = newGrant();
        expect(await s.spendGranting(jti, t0 + 1, first)).toEqual({ spend: 'spent', created: 'created' });
        expect(await s.findGrants({}, t0 + 2)).toEqual([stored(first, 2)]);
        // The same jti again, with another grant: not spent by this call, nothing created.
        const second = newGrant();
        expect(await s.spendGranting(jti, t0 + 2, second)).toEqual({ spend: 'already-spent', created: 'none' });
        expect(await s.takeGrantUse(second.id, t0 + 3)).toEqual({ taken: false, reason: 'unknown' });
        // Never issued.
        const third = newGrant();
        expect(await s.spendGranting(randomUUID(), t0 + 2, third)).toEqual({ spend: 'unknown', created: 'none' });
        // Expired at the spend (its expiry is exclusive): consumed, nothing created.
        const late = await issued(s, 'alice', t0 + 1_000);
        const fourth = newGrant();
        expect(await s.spendGranting(late, t0 + 1_000, fourth)).toEqual({ spend: 'expired', created: 'none' });
        expect(await s.spend(late, t0 + 1_001)).toBe('unknown');
        // Control: only the first grant exists.
        expect(ids(await s.findGrants({}, t0 + 3))).toEqual([first.id]);
        for (const g of [third, fourth])
          expect(await s.takeGrantUse(g.id, t0 + 3)).toEqual({ taken: false, reason: 'unknown' });
      });

      it("answers full at the principal's bound and spends the jti anyway; another principal still gets one (control)", async () => {
        const s = await make({ maxGrantsPerPrincipal: 2, maxGrants: 100 });
        await granted(s);
        await granted(s);
        const jti = await issued(s);
        const refused = newGrant();
        expect(await s.spendGranting(jti, t0 + 1, refused)).toEqual({ spend: 'spent', created: 'full' });
        expect(await s.spend(jti, t0 + 2)).toBe('already-spent');
        expect(await s.takeGrantUse(refused.id, t0 + 2)).toEqual({ taken: false, reason: 'unknown' });
        await granted(s, { principal: 'bob' });
        expect(await s.findGrants({ principal: 'alice' }, t0 + 2)).toHaveLength(2);
      });

      it('counts the bound per principal and binding: two bindings of one principal (two serving processes over stdio, both `local`) each get their full bound, then full; another principal is counted apart (control)', async () => {
        const s = await make({ maxGrantsPerPrincipal: 2, maxGrants: 100 });
        const [one, two] = ['["proc-1",""]', '["proc-2",""]'];
        await granted(s, { principal: 'local', binding: one });
        await granted(s, { principal: 'local', binding: one });
        // The first binding is at its bound…
        expect(
          await s.spendGranting(await issued(s, 'local'), t0 + 1, newGrant({ principal: 'local', binding: one })),
        ).toEqual({
          spend: 'spent',
          created: 'full',
        });
        // …and the second binding of the same principal still gets its own two, then is full too.
        await granted(s, { principal: 'local', binding: two });
        await granted(s, { principal: 'local', binding: two });
        expect(
          await s.spendGranting(await issued(s, 'local'), t0 + 1, newGrant({ principal: 'local', binding: two })),
        ).toEqual({
          spend: 'spent',
          created: 'full',
        });
        // Another principal under the first binding's text is bounded apart.
        await granted(s, { principal: 'bob', binding: one });
        expect(await s.findGrants({ principal: 'local' }, t0 + 2)).toHaveLength(4);
        // A grant that ends frees a place under its own binding only.
        const [first] = (await s.findGrants({ principal: 'local' }, t0 + 2)).filter((g) => g.binding === two);
        expect(await s.revokeGrant(first!.id, t0 + 2)).toBe('revoked');
        expect(
          await s.spendGranting(await issued(s, 'local'), t0 + 3, newGrant({ principal: 'local', binding: one })),
        ).toEqual({
          spend: 'spent',
          created: 'full',
        });
        await granted(s, { principal: 'local', binding: two });
      });

      it("answers full at the store's total bound and spends the jti anyway", async () => {
        const s = await make({ maxGrantsPerPrincipal: 100, maxGrants: 3 });
        for (let i = 0; i < 3; i++) await granted(s, { principal: `p${i}` });
        const jti = await issued(s, 'p-new');
        expect(await s.spendGranting(jti, t0 + 1, newGrant({ principal: 'p-new' }))).toEqual({
          spend: 'spent',
          created: 'full',
        });
        expect(await s.spend(jti, t0 + 2)).toBe('already-spent');
        expect(await s.findGrants({}, t0 + 2)).toHaveLength(3);
      });

      it('frees a bound slot when a grant ends: used up, revoked, or expired (exclusive at its end)', async () => {
        const s = await make({ maxGrantsPerPrincipal: 1, maxGrants: 100 });
        const full = async (at: number): Promise<void> => {
          expect(await s.spendGranting(await issued(s), at, newGrant())).toEqual({ spend: 'spent', created: 'full' });
        };
        // Used up.
        const a = await granted(s, { maxUses: 2 });
        await full(t0 + 1);
        expect(await s.takeGrantUse(a.id, t0 + 2)).toEqual({ taken: true, usesLeft: 0, expiresAtMs: a.expiresAtMs });
        // Revoked.
        const b = await granted(s);
        await full(t0 + 2);
        expect(await s.revokeGrant(b.id, t0 + 3)).toBe('revoked');
        // Expired: holds its slot until just before its expiry, not at it.
        const c = await granted(s, { expiresAtMs: t0 + 5_000 });
        await full(t0 + 4_999);
        const d = newGrant({ createdAtMs: t0 + 5_000, expiresAtMs: t0 + 5_000 + GRANT_MS });
        expect(await s.spendGranting(await issued(s), t0 + 5_000, d)).toEqual({ spend: 'spent', created: 'created' });
        expect(ids(await s.findGrants({}, t0 + 5_000))).toEqual([d.id]);
        expect(await s.takeGrantUse(c.id, t0 + 5_001)).toMatchObject({ taken: false });
      });

      it('creates a grant of one use already used up: it holds no bound slot and its take is exhausted', async () => {
        const s = await make({ maxGrantsPerPrincipal: 1, maxGrants: 100 });
        const one = await granted(s, { maxUses: 1 });
        expect(await s.findGrants({}, t0 + 2)).toEqual([]);
        expect(await s.takeGrantUse(one.id, t0 + 2)).toEqual({ taken: false, reason: 'exhausted' });
        await granted(s);
      });

      it('finds the live grants by audience, principal and tool, oldest first (createdAtMs, then id), never an ended one', async () => {
        const s = await make();
        const [idA, idB] = [recordId(), recordId()].sort();
        const late = await granted(s, { createdAtMs: t0 - 100 });
        const early = await granted(s, { createdAtMs: t0 - 300, tool: 'write_file' });
        const tieB = await granted(s, { id: idB!, createdAtMs: t0 - 200 });
        const tieA = await granted(s, { id: idA!, createdAtMs: t0 - 200, audience: 'other' });
        const bobs = await granted(s, { principal: 'bob', createdAtMs: t0 - 400 });
        const used = await granted(s, { maxUses: 2, createdAtMs: t0 - 500 });
        const revoked = await granted(s, { createdAtMs: t0 - 600 });
        const expiring = await granted(s, { createdAtMs: t0 - 700, expiresAtMs: t0 + 10 });
        expect(await s.takeGrantUse(used.id, t0 + 2)).toMatchObject({ taken: true, usesLeft: 0 });
        expect(await s.revokeGrant(revoked.id, t0 + 2)).toBe('revoked');
        expect(ids(await s.findGrants({}, t0 + 9))).toEqual([
          expiring.id,
          bobs.id,
          early.id,
          tieA.id,
          tieB.id,
          late.id,
        ]);
        expect(ids(await s.findGrants({}, t0 + 10))).toEqual([bobs.id, early.id, tieA.id, tieB.id, late.id]);
        expect(ids(await s.findGrants({ principal: 'alice' }, t0 + 10))).toEqual([early.id, tieA.id, tieB.id, late.id]);
        expect(ids(await s.findGrants({ principal: 'alice', tool: 'delete_file' }, t0 + 10))).toEqual([
          tieA.id,
          tieB.id,
          late.id,
        ]);
        expect(
          ids(await s.findGrants({ principal: 'alice', tool: 'delete_file', audience: 'files' }, t0 + 10)),
        ).toEqual([tieB.id, late.id]);
        expect(ids(await s.findGrants({ audience: 'other' }, t0 + 10))).toEqual([tieA.id]);
        expect(ids(await s.findGrants({ tool: 'write_file' }, t0 + 10))).toEqual([early.id]);
        expect(await s.findGrants({ principal: 'carol' }, t0 + 10)).toEqual([]);
        // Every field as it was given, uses counted down.
        expect((await s.findGrants({ principal: 'bob' }, t0 + 10))[0]).toEqual(stored(bobs, 2));
      });

      it('keeps every field byte for byte, opaque strings included (separators, braces, bars, newlines, non-ASCII, the longest texts)', async () => {
        const s = await make();
        const odd = 'p:q|{r}::\n é 🙂 "x" \\ [y]';
        const g = await granted(s, {
          principal: odd,
          audience: `aud ${odd}`,
          tool: `tool ${odd}`,
          scope: `{"a":"${'é|'.repeat(4_000)}"}`,
          binding: `pid|${odd}`,
          summary: 'S'.repeat(MAX_GRANT_TEXT_LENGTH),
          approver: `ann ${odd}`,
          maxUses: 1_000_000,
        });
        expect(await s.findGrants({ principal: odd, audience: `aud ${odd}`, tool: `tool ${odd}` }, t0 + 2)).toEqual([
          stored(g, 999_999),
        ]);
        expect(await s.findGrants({ principal: odd.slice(0, -1) }, t0 + 2)).toEqual([]);
        expect(await s.takeGrantUse(g.id, t0 + 2)).toEqual({
          taken: true,
          usesLeft: 999_998,
          expiresAtMs: g.expiresAtMs,
        });
      });

      it('counts takes down: with maxUses 3 (the approving call was the first use) two takes, then exhausted', async () => {
        const s = await make();
        const g = await granted(s, { maxUses: 3 });
        expect((await s.findGrants({}, t0 + 2))[0]?.usesLeft).toBe(2);
        expect(await s.takeGrantUse(g.id, t0 + 2)).toEqual({ taken: true, usesLeft: 1, expiresAtMs: g.expiresAtMs });
        expect((await s.findGrants({}, t0 + 3))[0]?.usesLeft).toBe(1);
        expect(await s.takeGrantUse(g.id, t0 + 3)).toEqual({ taken: true, usesLeft: 0, expiresAtMs: g.expiresAtMs });
        expect(await s.takeGrantUse(g.id, t0 + 4)).toEqual({ taken: false, reason: 'exhausted' });
        expect(await s.takeGrantUse(g.id, t0 + 5)).toEqual({ taken: false, reason: 'exhausted' });
        expect(await s.findGrants({}, t0 + 5)).toEqual([]);
      });

      it('takes a use 1 ms before expiresAtMs, and answers expired at exactly expiresAtMs', async () => {
        const s = await make();
        const g = await granted(s, { expiresAtMs: t0 + 1_000 });
        expect(await s.takeGrantUse(g.id, t0 + 999)).toEqual({ taken: true, usesLeft: 1, expiresAtMs: t0 + 1_000 });
        expect(ids(await s.findGrants({}, t0 + 999))).toEqual([g.id]);
        expect(await s.takeGrantUse(g.id, t0 + 1_000)).toEqual({ taken: false, reason: 'expired' });
        expect(await s.findGrants({}, t0 + 1_000)).toEqual([]);
        expect(await s.revokeGrant(g.id, t0 + 1_000)).toBe('unknown');
      });

      it('revokes a live grant: a take after it is revoked; revoking again, an unknown id, a used-up or an expired grant is unknown', async () => {
        const s = await make();
        const g = await granted(s);
        expect(await s.takeGrantUse(g.id, t0 + 2)).toMatchObject({ taken: true });
        expect(await s.revokeGrant(g.id, t0 + 3)).toBe('revoked');
        expect(await s.takeGrantUse(g.id, t0 + 4)).toEqual({ taken: false, reason: 'revoked' });
        expect(await s.findGrants({}, t0 + 4)).toEqual([]);
        expect(await s.revokeGrant(g.id, t0 + 5)).toBe('unknown');
        expect(await s.revokeGrant(recordId(), t0 + 5)).toBe('unknown');
        expect(await s.takeGrantUse(recordId(), t0 + 5)).toEqual({ taken: false, reason: 'unknown' });
        const used = await granted(s, { maxUses: 2 });
        expect(await s.takeGrantUse(used.id, t0 + 5)).toMatchObject({ taken: true, usesLeft: 0 });
        expect(await s.revokeGrant(used.id, t0 + 6)).toBe('unknown');
        expect(await s.takeGrantUse(used.id, t0 + 6)).toEqual({ taken: false, reason: 'exhausted' });
        const expired = await granted(s, { expiresAtMs: t0 + 100 });
        expect(await s.revokeGrant(expired.id, t0 + 100)).toBe('unknown');
        // Control: a live grant of another id is untouched by all this.
        const other = await granted(s);
        expect(await s.takeGrantUse(other.id, t0 + 7)).toMatchObject({ taken: true, usesLeft: 1 });
      });

      it("gives a grant's last use to exactly one of 16 concurrent takes; the others are exhausted", async () => {
        const s = await make();
        const g = await granted(s, { maxUses: 2 });
        const outcomes = await Promise.all(Array.from({ length: 16 }, () => s.takeGrantUse(g.id, t0 + 2)));
        expect(outcomes.filter((o) => o.taken)).toEqual([{ taken: true, usesLeft: 0, expiresAtMs: g.expiresAtMs }]);
        expect(outcomes.filter((o) => !o.taken)).toEqual(
          Array.from({ length: 15 }, () => ({ taken: false, reason: 'exhausted' })),
        );
      });

      it('gives each of 40 concurrent takes of a grant of 21 uses left a distinct count, 20 exhausted', async () => {
        const s = await make();
        const g = await granted(s, { maxUses: 21 });
        const outcomes = await Promise.all(Array.from({ length: 40 }, () => s.takeGrantUse(g.id, t0 + 2)));
        const left = outcomes.flatMap((o) => (o.taken ? [o.usesLeft] : [])).sort((a, b) => a - b);
        expect(left).toEqual(Array.from({ length: 20 }, (_, i) => i));
        expect(outcomes.filter((o) => !o.taken)).toHaveLength(20);
      });

      it('lets no take succeed once a revoke racing 32 takes has returned; the takes before it counted consistently', async () => {
        const s = await make();
        const g = await granted(s, { maxUses: 1_000 });
        const takes: Array<Promise<TakeGrantOutcome>> = [];
        for (let i = 0; i < 16; i++) takes.push(s.takeGrantUse(g.id, t0 + 2));
        const revoking = s.revokeGrant(g.id, t0 + 2);
        for (let i = 0; i < 16; i++) takes.push(s.takeGrantUse(g.id, t0 + 2));
        expect(await revoking).toBe('revoked');
        // Started after the revoke returned: every one refused as revoked.
        const after = await Promise.all(Array.from({ length: 16 }, () => s.takeGrantUse(g.id, t0 + 3)));
        expect(after).toEqual(Array.from({ length: 16 }, () => ({ taken: false, reason: 'revoked' })));
        // Racing it: each took a use before it (counted down one by one from 999) or found it revoked.
        const racing = await Promise.all(takes);
        const left = racing.flatMap((o) => (o.taken ? [o.usesLeft] : [])).sort((a, b) => b - a);
        expect(left).toEqual(Array.from({ length: left.length }, (_, i) => 998 - i));
        expect(racing.filter((o) => !o.taken).every((o) => !o.taken && o.reason === 'revoked')).toBe(true);
        expect(await s.findGrants({}, t0 + 3)).toEqual([]);
        expect(await s.revokeGrant(g.id, t0 + 3)).toBe('unknown');
      });

      it('keeps at most maxGrants ended grants until their expiry: beyond that the one expiring first is forgotten (unknown), the others still say why', async () => {
        const s = await make({ maxGrants: 2, maxGrantsPerPrincipal: 2 });
        const soon = await granted(s, { maxUses: 2, expiresAtMs: t0 + 10_000 });
        const mid = await granted(s, { maxUses: 2, expiresAtMs: t0 + 20_000 });
        expect(await s.takeGrantUse(soon.id, t0 + 2)).toMatchObject({ taken: true, usesLeft: 0 });
        expect(await s.revokeGrant(mid.id, t0 + 2)).toBe('revoked');
        const last = await granted(s, { maxUses: 2, expiresAtMs: t0 + 30_000 });
        expect(await s.takeGrantUse(soon.id, t0 + 3)).toEqual({ taken: false, reason: 'exhausted' });
        expect(await s.takeGrantUse(last.id, t0 + 3)).toMatchObject({ taken: true, usesLeft: 0 });
        // Three ended, two kept: the one expiring first is gone.
        expect(await s.takeGrantUse(soon.id, t0 + 4)).toEqual({ taken: false, reason: 'unknown' });
        expect(await s.takeGrantUse(mid.id, t0 + 4)).toEqual({ taken: false, reason: 'revoked' });
        expect(await s.takeGrantUse(last.id, t0 + 4)).toEqual({ taken: false, reason: 'exhausted' });
      });

      it('refuses a malformed grant with RangeError before spending: the jti stays outstanding and a plain spend afterwards spends it', async () => {
        const s = await make();
        const jti = await issued(s);
        const existing = await granted(s);
        const bad: Array<Partial<NewGrant>> = [
          { id: 'short' },
          { id: 'x'.repeat(21) + '=' },
          { audience: '' },
          { principal: 'p'.repeat(1_025) },
          { tool: '' },
          { approver: '' },
          { scope: '' },
          { scope: 's'.repeat(MAX_GRANT_TEXT_LENGTH + 1) },
          { summary: 'lone \uD800 surrogate' },
          { binding: 'b'.repeat(MAX_GRANT_TEXT_LENGTH + 1) },
          { policyDigest: 'not-a-digest' },
          { maxUses: 0 },
          { maxUses: 1.5 },
          { maxUses: 1_000_001 },
          { createdAtMs: -1 },
          { createdAtMs: t0 + 0.5 },
          { expiresAtMs: t0 },
          // Already expired by the caller's clock (nowMs is t0 + 1).
          { expiresAtMs: t0 + 1 },
          // A grant with this id is in the store already.
          { id: existing.id },
        ];
        for (const over of bad)
          await expect(s.spendGranting(jti, t0 + 1, newGrant(over))).rejects.toBeInstanceOf(RangeError);
        await expect(s.spendGranting(jti, Number.NaN, newGrant())).rejects.toBeInstanceOf(RangeError);
        await expect(s.spendGranting(jti, t0 + 1, null as unknown as NewGrant)).rejects.toBeInstanceOf(RangeError);
        expect(await s.spend(jti, t0 + 2)).toBe('spent');
        expect(ids(await s.findGrants({}, t0 + 2))).toEqual([existing.id]);
      });

      it('refuses a malformed query or time with RangeError', async () => {
        const s = await make();
        await expect(s.findGrants({ principal: 42 as unknown as string }, t0)).rejects.toBeInstanceOf(RangeError);
        await expect(s.findGrants({}, Number.POSITIVE_INFINITY)).rejects.toBeInstanceOf(RangeError);
        await expect(s.takeGrantUse(recordId(), Number.NaN)).rejects.toBeInstanceOf(RangeError);
        await expect(s.revokeGrant(recordId(), Number.NaN)).rejects.toBeInstanceOf(RangeError);
        await expect(s.takePlanSlot(slotKey(), Number.NaN)).rejects.toBeInstanceOf(RangeError);
        // Control: the same well-formed.
        expect(await s.findGrants({ principal: 'alice' }, t0)).toEqual([]);
      });
    });

    describe('plans', () => {
      it('gives each slot once, by its key: slotsLeft counts down, a used or unknown key gets nothing', async () => {
        const s = await make();
        const p = await planned(s, { calls: 3 });
        const [k0, k1, k2] = p.slots.map((slot) => slot.key);
        expect(await s.takePlanSlot(k1!, t0 + 2)).toEqual({
          planId: p.id,
          index: 1,
          identity: p.slots[1]!.identity,
          slotsLeft: 2,
          expiresAtMs: p.expiresAtMs,
        });
        expect(await s.takePlanSlot(k1!, t0 + 3)).toBeUndefined();
        expect(await s.takePlanSlot(slotKey(), t0 + 3)).toBeUndefined();
        expect(await s.takePlanSlot(k0!, t0 + 4)).toMatchObject({ planId: p.id, index: 0, slotsLeft: 1 });
        expect(await s.takePlanSlot(k2!, t0 + 5)).toMatchObject({ planId: p.id, index: 2, slotsLeft: 0 });
        for (const k of [k0!, k1!, k2!]) expect(await s.takePlanSlot(k, t0 + 6)).toBeUndefined();
      });

      it('creates a plan only when its spendPlanning spent the jti: none for an already-spent, an unknown and an expired jti', async () => {
        const s = await make();
        const jti = await issued(s);
        const first = newPlan();
        expect(await s.spendPlanning(jti, t0 + 1, first)).toEqual({ spend: 'spent', created: 'created' });
        const second = newPlan();
        expect(await s.spendPlanning(jti, t0 + 2, second)).toEqual({ spend: 'already-spent', created: 'none' });
        const third = newPlan();
        expect(await s.spendPlanning(randomUUID(), t0 + 2, third)).toEqual({ spend: 'unknown', created: 'none' });
        const late = await issued(s, 'alice', t0 + 1_000);
        const fourth = newPlan();
        expect(await s.spendPlanning(late, t0 + 1_000, fourth)).toEqual({ spend: 'expired', created: 'none' });
        for (const p of [second, third, fourth]) expect(await s.takePlanSlot(p.slots[0]!.key, t0 + 3)).toBeUndefined();
        // Control: the first plan's slot is there.
        expect(await s.takePlanSlot(first.slots[0]!.key, t0 + 3)).toMatchObject({ planId: first.id, index: 0 });
      });

      it('gives one plan slot to exactly one of 16 concurrent takes', async () => {
        const s = await make();
        const p = await planned(s, { calls: 2 });
        const got = await Promise.all(Array.from({ length: 16 }, () => s.takePlanSlot(p.slots[0]!.key, t0 + 2)));
        expect(got.filter((g) => g !== undefined)).toEqual([
          { planId: p.id, index: 0, identity: p.slots[0]!.identity, slotsLeft: 1, expiresAtMs: p.expiresAtMs },
        ]);
        // Control: the plan's other slot is still there, once.
        expect(await s.takePlanSlot(p.slots[1]!.key, t0 + 3)).toMatchObject({ planId: p.id, slotsLeft: 0 });
      });

      it('when two live plans hold the same key, the one expiring first gives it, then the other, then none', async () => {
        const s = await make();
        const key = slotKey();
        const slot = (identity: string) => [{ key, tool: 'delete_file', identity }];
        const later = await planned(s, { slots: slot('later'), expiresAtMs: t0 + 20_000 });
        const sooner = await planned(s, { slots: slot('sooner'), expiresAtMs: t0 + 10_000 });
        expect(await s.takePlanSlot(key, t0 + 2)).toEqual({
          planId: sooner.id,
          index: 0,
          identity: 'sooner',
          slotsLeft: 0,
          expiresAtMs: t0 + 10_000,
        });
        expect(await s.takePlanSlot(key, t0 + 3)).toEqual({
          planId: later.id,
          index: 0,
          identity: 'later',
          slotsLeft: 0,
          expiresAtMs: t0 + 20_000,
        });
        expect(await s.takePlanSlot(key, t0 + 4)).toBeUndefined();
        // Of two expiring together, the lower id; an expired one never gives it.
        const [low, high] = [recordId(), recordId()].sort();
        await planned(s, { slots: slot('gone'), expiresAtMs: t0 + 50 });
        await planned(s, { id: high!, slots: slot('high'), expiresAtMs: t0 + 30_000 });
        await planned(s, { id: low!, slots: slot('low'), expiresAtMs: t0 + 30_000 });
        expect(await s.takePlanSlot(key, t0 + 50)).toMatchObject({ planId: low, identity: 'low' });
        expect(await s.takePlanSlot(key, t0 + 51)).toMatchObject({ planId: high, identity: 'high' });
        expect(await s.takePlanSlot(key, t0 + 52)).toBeUndefined();
      });

      it('gives a slot 1 ms before the plan expires, and none at exactly its expiry', async () => {
        const s = await make();
        const p = await planned(s, { calls: 2, expiresAtMs: t0 + 1_000 });
        expect(await s.takePlanSlot(p.slots[0]!.key, t0 + 999)).toMatchObject({ planId: p.id, index: 0, slotsLeft: 1 });
        expect(await s.takePlanSlot(p.slots[1]!.key, t0 + 1_000)).toBeUndefined();
        expect(await s.takePlanSlot(p.slots[1]!.key, t0 + 1_001)).toBeUndefined();
      });

      it("answers full at the principal's and at the store's bound on live plans (the jti spent anyway); a plan whose slots are all used, or that expired, frees its place", async () => {
        const s = await make({ maxPlansPerPrincipal: 1, maxPlans: 2 });
        const p = await planned(s, { calls: 2 });
        const jti = await issued(s);
        const refused = newPlan();
        expect(await s.spendPlanning(jti, t0 + 1, refused)).toEqual({ spend: 'spent', created: 'full' });
        expect(await s.spend(jti, t0 + 2)).toBe('already-spent');
        expect(await s.takePlanSlot(refused.slots[0]!.key, t0 + 2)).toBeUndefined();
        const bobs = await planned(s, { principal: 'bob', expiresAtMs: t0 + 5_000 });
        const carols = await issued(s, 'carol');
        expect(await s.spendPlanning(carols, t0 + 2, newPlan({ principal: 'carol' }))).toEqual({
          spend: 'spent',
          created: 'full',
        });
        // Alice's plan ends with its last slot: her place is free again.
        expect(await s.takePlanSlot(p.slots[0]!.key, t0 + 3)).toMatchObject({ slotsLeft: 1 });
        expect(await s.spendPlanning(await issued(s), t0 + 3, newPlan())).toEqual({ spend: 'spent', created: 'full' });
        expect(await s.takePlanSlot(p.slots[1]!.key, t0 + 4)).toMatchObject({ slotsLeft: 0 });
        await planned(s);
        // Bob's plan expires at t0 + 5,000: from then on, not before, carol's fits.
        const carol = newPlan({ principal: 'carol', createdAtMs: t0 + 4_999, expiresAtMs: t0 + 4_999 + TTL });
        expect(await s.spendPlanning(await issued(s, 'carol'), t0 + 4_999, carol)).toEqual({
          spend: 'spent',
          created: 'full',
        });
        const carol2 = newPlan({ principal: 'carol', createdAtMs: t0 + 5_000, expiresAtMs: t0 + 5_000 + TTL });
        expect(await s.spendPlanning(await issued(s, 'carol'), t0 + 5_000, carol2)).toEqual({
          spend: 'spent',
          created: 'created',
        });
        expect(await s.takePlanSlot(bobs.slots[0]!.key, t0 + 5_000)).toBeUndefined();
      });

      it('counts the bound on live plans per principal and binding: two bindings of one principal each get their full bound, then full; a plan that ends frees a place under its own binding only', async () => {
        const s = await make({ maxPlansPerPrincipal: 2, maxPlans: 100 });
        const [one, two] = ['["proc-1",""]', '["proc-2",""]'];
        const full = async (binding: string): Promise<void> => {
          expect(
            await s.spendPlanning(await issued(s, 'local'), t0 + 1, newPlan({ principal: 'local', binding })),
          ).toEqual({
            spend: 'spent',
            created: 'full',
          });
        };
        const p = await planned(s, { principal: 'local', binding: one, calls: 1 });
        await planned(s, { principal: 'local', binding: one });
        await full(one);
        await planned(s, { principal: 'local', binding: two });
        await planned(s, { principal: 'local', binding: two });
        await full(two);
        // Control: another principal under the same binding text is counted apart.
        await planned(s, { principal: 'bob', binding: one });
        // The first binding's one-call plan ends with its slot: a place frees there, not under the second.
        expect(await s.takePlanSlot(p.slots[0]!.key, t0 + 2)).toMatchObject({ planId: p.id, slotsLeft: 0 });
        await full(two);
        await planned(s, { principal: 'local', binding: one });
      });

      it('keeps a slot identity byte for byte (bars, newlines, non-ASCII, the longest), and opaque principals', async () => {
        const s = await make();
        const identity = `{"path":"/a|b\\n|c é 🙂","x":"${'i'.repeat(MAX_GRANT_TEXT_LENGTH - 40)}"}`;
        const p = await planned(s, {
          principal: 'p:q|{r}:: é 🙂',
          slots: [
            { key: slotKey(), tool: 't|x', identity },
            { key: slotKey(), tool: 'delete_file', identity: '' },
          ],
        });
        expect(await s.takePlanSlot(p.slots[0]!.key, t0 + 2)).toEqual({
          planId: p.id,
          index: 0,
          identity,
          slotsLeft: 1,
          expiresAtMs: p.expiresAtMs,
        });
        expect(await s.takePlanSlot(p.slots[1]!.key, t0 + 2)).toEqual({
          planId: p.id,
          index: 1,
          identity: '',
          slotsLeft: 0,
          expiresAtMs: p.expiresAtMs,
        });
      });

      it('refuses a malformed plan with RangeError before spending: the jti stays outstanding and a plain spend afterwards spends it', async () => {
        const s = await make();
        const jti = await issued(s);
        const existing = await planned(s);
        const key = slotKey();
        const slot = { key: slotKey(), tool: 'delete_file', identity: '' };
        const bad: Array<Partial<NewPlan>> = [
          { id: 'short' },
          { principal: '' },
          { audience: 'a'.repeat(1_025) },
          { approver: '' },
          { binding: 'b'.repeat(MAX_GRANT_TEXT_LENGTH + 1) },
          { slots: [] },
          { slots: Array.from({ length: MAX_PLAN_SLOTS + 1 }, () => ({ ...slot, key: slotKey() })) },
          {
            slots: [
              { ...slot, key },
              { ...slot, key },
            ],
          },
          { slots: [{ ...slot, key: 'not-a-key' }] },
          { slots: [{ ...slot, tool: '' }] },
          { slots: [{ ...slot, identity: 'i'.repeat(MAX_GRANT_TEXT_LENGTH + 1) }] },
          { expiresAtMs: t0 },
          { expiresAtMs: t0 + 1 },
          { createdAtMs: Number.NaN },
          { id: existing.id },
        ];
        for (const over of bad)
          await expect(s.spendPlanning(jti, t0 + 1, newPlan(over))).rejects.toBeInstanceOf(RangeError);
        expect(await s.spend(jti, t0 + 2)).toBe('spent');
        // Control: a well-formed plan of the largest size is created.
        const largest = await planned(s, { calls: MAX_PLAN_SLOTS });
        expect(await s.takePlanSlot(largest.slots[MAX_PLAN_SLOTS - 1]!.key, t0 + 2)).toMatchObject({
          index: MAX_PLAN_SLOTS - 1,
          slotsLeft: MAX_PLAN_SLOTS - 1,
        });
      });
    });

    it('has the documented default bounds (16 per principal, 10,000 in all)', () => {
      expect(DEFAULT_MAX_GRANTS_PER_PRINCIPAL).toBe(16);
      expect(DEFAULT_MAX_GRANTS).toBe(10_000);
    });
  });
}
