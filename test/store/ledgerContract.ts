/**
 * The contract every {@link Ledger} passes: call `ledgerContract(name, makeLedger)`
 * at the top level of a `*.test.ts` file. Each test makes its own ledger (fresh
 * file / namespace), so tests never see each other's entries, and closes it.
 *
 * Times are injected: `t0` is a fixed point near the real clock (Redis keeps
 * keys for the remaining lifetime plus a skew margin, so times far in the past
 * would be garbage-collected at once).
 *
 * A store that can be held locked or frozen (SQLite: another process in
 * `BEGIN IMMEDIATE`; Redis: `DEBUG SLEEP`) also passes the "never blocks the event
 * loop" part (BUG-18), proved by the order of events, never by durations: while a
 * call waits on the held store, a timer set after the call fires first; the call
 * is then refused at its deadline, or answered once the store is released.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfirmCapacityError } from '../../src/errors.js';
import type { Ledger, SpendOutcome } from '../../src/store/ledger.js';
import { isAuditHeadStore, type AuditHead, type AuditHeadStore } from '../../src/store/auditHeads.js';
import { expectUnavailable } from '../helpers/rejections.js';

/** Bounds a test asks its ledger to be made with. */
export interface LedgerBounds {
  maxPerPrincipal?: number;
  maxTotal?: number;
}

/** Makes a fresh, empty ledger with the given bounds (store defaults when absent). */
export type MakeLedger = (bounds?: LedgerBounds) => Ledger | Promise<Ledger>;

/** The store held locked or frozen by the test, until released. */
export interface Hold {
  /** Ends the hold; resolves once the store answers again. */
  release(): Promise<void>;
}

/** A store the contract can hold locked or frozen (BUG-18). */
export interface HeldStore {
  /** Makes a fresh, empty ledger with deadline `timeoutMs`, on a store {@link HeldStore.hold} can hold. */
  make(options: { timeoutMs: number }): Promise<Ledger>;
  /** Another ledger on the same store (and the same entries) as `ledger`, with deadline `timeoutMs`. */
  sibling(ledger: Ledger, options: { timeoutMs: number }): Promise<Ledger>;
  /** Holds the store of `ledger`; resolves once every later call of `ledger` has to wait for the release. */
  hold(ledger: Ledger): Promise<Hold>;
  /**
   * A deadline that certainly passes while the store is held and not yet released (for a store that
   * releases itself, as `DEBUG SLEEP` does, far shorter than the hold).
   */
  shortTimeoutMs: number;
  /**
   * Whether a call refused at its deadline is still applied when the store answers again (Redis runs
   * the commands already sent), or never (SQLite retries nothing after the refusal).
   */
  refusedCallsAppliedLater: boolean;
}

const TTL = 300_000;

/** The next turn of the event loop's timers phase: fires only if nothing blocks the loop. */
const timerTurn = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));

function count(outcomes: readonly SpendOutcome[]): Record<SpendOutcome, number> {
  const c: Record<SpendOutcome, number> = { spent: 0, 'already-spent': 0, unknown: 0, expired: 0 };
  for (const o of outcomes) c[o]++;
  return c;
}

async function expectCapacity(p: Promise<unknown>): Promise<void> {
  const error = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConfirmCapacityError);
  expect((error as ConfirmCapacityError).code).toBe('ERR_CONFIRM_CAPACITY');
}

export function ledgerContract(name: string, makeLedger: MakeLedger, options: { held?: HeldStore } = {}): void {
  const held = options.held;
  describe(`Ledger contract: ${name}`, () => {
    const open: Ledger[] = [];
    const t0 = Date.now();
    const jti = (): string => randomUUID();

    async function make(bounds?: LedgerBounds): Promise<Ledger> {
      const ledger = await makeLedger(bounds);
      open.push(ledger);
      return ledger;
    }

    afterEach(async () => {
      await Promise.all(open.splice(0).map((l) => l.close?.()));
    });

    it('spends an issued confirmation with spent', async () => {
      const ledger = await make();
      const id = jti();
      await ledger.issue(id, 'alice', t0 + TTL, t0);
      expect(await ledger.spend(id, t0 + 1)).toBe('spent');
    });

    it('refuses a second spend with already-spent', async () => {
      const ledger = await make();
      const id = jti();
      await ledger.issue(id, 'alice', t0 + TTL, t0);
      expect(await ledger.spend(id, t0 + 1)).toBe('spent');
      expect(await ledger.spend(id, t0 + 2)).toBe('already-spent');
      expect(await ledger.spend(id, t0 + 3)).toBe('already-spent');
    });

    it('answers unknown for a jti that was never issued', async () => {
      const ledger = await make();
      expect(await ledger.spend(jti(), t0)).toBe('unknown');
    });

    it('answers expired for a spend at exactly expiresAtMs', async () => {
      const ledger = await make();
      const id = jti();
      await ledger.issue(id, 'alice', t0 + 1_000, t0);
      expect(await ledger.spend(id, t0 + 1_000)).toBe('expired');
    });

    it('spends 1 ms before expiresAtMs', async () => {
      const ledger = await make();
      const id = jti();
      await ledger.issue(id, 'alice', t0 + 1_000, t0);
      expect(await ledger.spend(id, t0 + 999)).toBe('spent');
    });

    it('answers expired for a spend long after expiresAtMs', async () => {
      const ledger = await make();
      const id = jti();
      await ledger.issue(id, 'alice', t0 + 1_000, t0);
      expect(await ledger.spend(id, t0 + 50_000)).toBe('expired');
    });

    it('removes an expired entry so a later spend is refused as unknown', async () => {
      const ledger = await make();
      const id = jti();
      await ledger.issue(id, 'alice', t0 + 1_000, t0);
      expect(await ledger.spend(id, t0 + 1_000)).toBe('expired');
      expect(await ledger.spend(id, t0 + 1_001)).toBe('unknown');
      // An earlier clock does not resurrect it either.
      expect(await ledger.spend(id, t0)).toBe('unknown');
    });

    it('decides expiry by the caller clock, not the store clock', async () => {
      const ledger = await make();
      const id = jti();
      // Already past by the real clock, but not by the injected one.
      await ledger.issue(id, 'alice', t0 - 10_000 + 500, t0 - 10_000);
      expect(await ledger.spend(id, t0 - 10_000 + 499)).toBe('spent');
    });

    it('gives exactly one spent to 32 concurrent spends of one jti', async () => {
      const ledger = await make();
      const id = jti();
      await ledger.issue(id, 'alice', t0 + TTL, t0);
      const outcomes = await Promise.all(Array.from({ length: 32 }, () => ledger.spend(id, t0 + 1)));
      expect(count(outcomes)).toEqual({ spent: 1, 'already-spent': 31, unknown: 0, expired: 0 });
    });

    it('keeps confirmations independent of each other', async () => {
      const ledger = await make();
      const ids = Array.from({ length: 10 }, jti);
      for (const id of ids) await ledger.issue(id, 'alice', t0 + TTL, t0);
      const first = await Promise.all(ids.map((id) => ledger.spend(id, t0 + 1)));
      expect(first).toEqual(ids.map(() => 'spent'));
      const second = await Promise.all(ids.map((id) => ledger.spend(id, t0 + 2)));
      expect(second).toEqual(ids.map(() => 'already-spent'));
    });

    it('treats jti and principal as opaque strings (separators, braces, non-ASCII)', async () => {
      const ledger = await make({ maxPerPrincipal: 1 });
      const odd = `a:b|{c}*?[x]\\ é 🙂 ${jti()}`;
      const principal = 'p:q|{r}:: é 🙂';
      await ledger.issue(odd, principal, t0 + TTL, t0);
      await expectCapacity(ledger.issue(jti(), principal, t0 + TTL, t0));
      await ledger.issue(jti(), 'p:q|{r}:: é', t0 + TTL, t0); // a prefix of it is another principal
      expect(await ledger.spend(odd.slice(0, -1), t0 + 1)).toBe('unknown');
      expect(await ledger.spend(odd, t0 + 1)).toBe('spent');
      expect(await ledger.spend(odd, t0 + 2)).toBe('already-spent');
      await ledger.issue(jti(), principal, t0 + TTL, t0 + 3); // the principal's slot is free again
    });

    it('refuses to issue a jti twice with RangeError, before and after it is spent', async () => {
      const ledger = await make();
      const id = jti();
      await ledger.issue(id, 'alice', t0 + TTL, t0);
      await expect(ledger.issue(id, 'alice', t0 + TTL, t0)).rejects.toBeInstanceOf(RangeError);
      await expect(ledger.issue(id, 'bob', t0 + TTL, t0)).rejects.toBeInstanceOf(RangeError);
      expect(await ledger.spend(id, t0 + 1)).toBe('spent');
      await expect(ledger.issue(id, 'alice', t0 + TTL, t0 + 2)).rejects.toBeInstanceOf(RangeError);
      expect(await ledger.spend(id, t0 + 3)).toBe('already-spent');
    });

    it('refuses an issue beyond maxPerPrincipal with ERR_CONFIRM_CAPACITY, other principals unaffected', async () => {
      const ledger = await make({ maxPerPrincipal: 3, maxTotal: 100 });
      for (let i = 0; i < 3; i++) await ledger.issue(jti(), 'alice', t0 + TTL, t0);
      await expectCapacity(ledger.issue(jti(), 'alice', t0 + TTL, t0));
      await ledger.issue(jti(), 'bob', t0 + TTL, t0);
      await expectCapacity(ledger.issue(jti(), 'alice', t0 + TTL, t0 + 1));
    });

    it('does not record a refused issue', async () => {
      const ledger = await make({ maxPerPrincipal: 1, maxTotal: 100 });
      await ledger.issue(jti(), 'alice', t0 + TTL, t0);
      const refused = jti();
      await expectCapacity(ledger.issue(refused, 'alice', t0 + TTL, t0));
      expect(await ledger.spend(refused, t0 + 1)).toBe('unknown');
    });

    it('refuses an issue beyond maxTotal with ERR_CONFIRM_CAPACITY', async () => {
      const ledger = await make({ maxPerPrincipal: 100, maxTotal: 4 });
      for (let i = 0; i < 4; i++) await ledger.issue(jti(), `p${i}`, t0 + TTL, t0);
      await expectCapacity(ledger.issue(jti(), 'p-new', t0 + TTL, t0));
      await expectCapacity(ledger.issue(jti(), 'p0', t0 + TTL, t0));
    });

    it('frees a principal slot when a confirmation is spent', async () => {
      const ledger = await make({ maxPerPrincipal: 2, maxTotal: 100 });
      const a = jti();
      await ledger.issue(a, 'alice', t0 + TTL, t0);
      await ledger.issue(jti(), 'alice', t0 + TTL, t0);
      await expectCapacity(ledger.issue(jti(), 'alice', t0 + TTL, t0));
      expect(await ledger.spend(a, t0 + 1)).toBe('spent');
      await ledger.issue(jti(), 'alice', t0 + TTL, t0 + 2);
      await expectCapacity(ledger.issue(jti(), 'alice', t0 + TTL, t0 + 3));
    });

    it('frees total slots when confirmations are spent; tombstones do not count', async () => {
      const ledger = await make({ maxPerPrincipal: 100, maxTotal: 3 });
      for (let round = 0; round < 3; round++) {
        const ids = Array.from({ length: 3 }, jti);
        for (const id of ids) await ledger.issue(id, `p${round}`, t0 + TTL, t0 + round);
        await expectCapacity(ledger.issue(jti(), 'other', t0 + TTL, t0 + round));
        for (const id of ids) expect(await ledger.spend(id, t0 + round)).toBe('spent');
      }
    });

    it('frees a principal slot when an expired confirmation is spent', async () => {
      const ledger = await make({ maxPerPrincipal: 1, maxTotal: 100 });
      const a = jti();
      await ledger.issue(a, 'alice', t0 + 1_000, t0);
      expect(await ledger.spend(a, t0 + 1_000)).toBe('expired');
      await ledger.issue(jti(), 'alice', t0 + TTL, t0 + 1_000);
    });

    it('frees principal and total slots once outstanding confirmations expire', async () => {
      const ledger = await make({ maxPerPrincipal: 2, maxTotal: 3 });
      await ledger.issue(jti(), 'alice', t0 + 1_000, t0);
      await ledger.issue(jti(), 'alice', t0 + 2_000, t0);
      await ledger.issue(jti(), 'bob', t0 + 2_000, t0);
      await expectCapacity(ledger.issue(jti(), 'alice', t0 + TTL, t0 + 999));
      await expectCapacity(ledger.issue(jti(), 'carol', t0 + TTL, t0 + 999));
      // At exactly its expiry the first entry no longer holds a slot.
      await ledger.issue(jti(), 'alice', t0 + TTL, t0 + 1_000);
      await expectCapacity(ledger.issue(jti(), 'carol', t0 + TTL, t0 + 1_999));
      await ledger.issue(jti(), 'carol', t0 + TTL, t0 + 2_000);
      await ledger.issue(jti(), 'alice', t0 + TTL, t0 + 2_000);
      await expectCapacity(ledger.issue(jti(), 'alice', t0 + TTL, t0 + 2_001));
    });

    describe('audit trail heads (AuditHeadStore)', () => {
      async function heads(): Promise<AuditHeadStore & Ledger> {
        const ledger = await make();
        expect(isAuditHeadStore(ledger)).toBe(true);
        return ledger as AuditHeadStore & Ledger;
      }
      const trailId = (): string => randomBytes(16).toString('base64url');
      const mac = (): string => randomBytes(32).toString('base64url');
      const path = (): string => `/var/log/mcp-confirm/trail.${randomUUID()}.jsonl`;

      it('reads back the head recorded for a path; undefined for a path never recorded', async () => {
        const store = await heads();
        const p = path();
        const head: AuditHead = { trail: trailId(), seq: 1, mac: mac() };
        expect(await store.auditHead(p)).toBeUndefined();
        await store.recordAuditHead(p, head);
        expect(await store.auditHead(p)).toEqual(head);
        expect(await store.auditHead(path())).toBeUndefined();
      });

      it("moves a trail's head forward and never back: a lower or equal seq of the same trail changes nothing", async () => {
        const store = await heads();
        const p = path();
        const trail = trailId();
        const at7 = { trail, seq: 7, mac: mac() };
        await store.recordAuditHead(p, { trail, seq: 3, mac: mac() });
        await store.recordAuditHead(p, at7);
        expect(await store.auditHead(p)).toEqual(at7);
        await store.recordAuditHead(p, { trail, seq: 5, mac: mac() });
        await store.recordAuditHead(p, { trail, seq: 7, mac: mac() });
        expect(await store.auditHead(p)).toEqual(at7);
        const at8 = { trail, seq: 8, mac: mac() };
        await store.recordAuditHead(p, at8);
        expect(await store.auditHead(p)).toEqual(at8);
      });

      it('replaces the head when another trail starts at the same path, even at a lower seq', async () => {
        const store = await heads();
        const p = path();
        await store.recordAuditHead(p, { trail: trailId(), seq: 40, mac: mac() });
        const fresh = { trail: trailId(), seq: 1, mac: mac() };
        await store.recordAuditHead(p, fresh);
        expect(await store.auditHead(p)).toEqual(fresh);
      });

      it('keeps the heads of different paths apart, paths being opaque strings (separators, braces, bars, non-ASCII)', async () => {
        const store = await heads();
        const base = path();
        const paths = [base, `${base}|1|x`, `${base}{ns}`, `${base}:ah:`, `${base}/é/日本`, `${base} `];
        const recorded = paths.map((_, i) => ({ trail: trailId(), seq: i + 1, mac: mac() }));
        for (const [i, p] of paths.entries()) await store.recordAuditHead(p, recorded[i]!);
        for (const [i, p] of paths.entries()) expect(await store.auditHead(p)).toEqual(recorded[i]);
      });

      it('refuses a malformed path or head with RangeError, recording nothing', async () => {
        const store = await heads();
        const p = path();
        const good = { trail: trailId(), seq: 2, mac: mac() };
        const bad: Array<[string, AuditHead]> = [
          ['', good],
          ['/a/\uD800', good],
          ['/a/\u0000b', good],
          [p, { ...good, trail: 'short' }],
          [p, { ...good, seq: 0 }],
          [p, { ...good, seq: 1.5 }],
          [p, { ...good, mac: 'not|a|mac' }],
        ];
        for (const [where, head] of bad)
          await expect(store.recordAuditHead(where, head)).rejects.toBeInstanceOf(RangeError);
        await expect(store.auditHead('/a/\uD800')).rejects.toBeInstanceOf(RangeError);
        expect(await store.auditHead(p)).toBeUndefined();
        // Control: the well-formed head is recorded.
        await store.recordAuditHead(p, good);
        expect(await store.auditHead(p)).toEqual(good);
      });

      if (held !== undefined) {
        it('another ledger on the same store reads the head one recorded (every process of the store sees it)', async () => {
          const one = await held.make({ timeoutMs: 60_000 });
          open.push(one);
          const other = await held.sibling(one, { timeoutMs: 60_000 });
          open.push(other);
          const p = path();
          const head = { trail: trailId(), seq: 12, mac: mac() };
          await (one as Ledger & AuditHeadStore).recordAuditHead(p, head);
          expect(await (other as Ledger & AuditHeadStore).auditHead(p)).toEqual(head);
        });
      }
    });

    if (held !== undefined) {
      describe('held locked or frozen, it never blocks the event loop (BUG-18)', () => {
        async function makeHeld(timeoutMs: number): Promise<Ledger> {
          const ledger = await held!.make({ timeoutMs });
          open.push(ledger);
          return ledger;
        }
        async function sibling(of: Ledger): Promise<Ledger> {
          const ledger = await held!.sibling(of, { timeoutMs: 60_000 });
          open.push(ledger);
          return ledger;
        }

        it('answers a timer while a spend and an issue wait on the held store, then refuses both with ERR_CONFIRM_LEDGER_UNAVAILABLE at the deadline', async () => {
          const ledger = await makeHeld(held.shortTimeoutMs);
          const id = jti();
          const late = jti();
          await ledger.issue(id, 'alice', t0 + TTL, t0);
          const events: string[] = [];
          const errors: unknown[] = [];
          const hold = await held.hold(ledger);
          try {
            const spending = ledger.spend(id, t0 + 1).then(
              (o) => events.push(`spend answered ${o}`),
              (e: unknown) => events.push(`spend refused`) && errors.push(e),
            );
            const issuing = ledger.issue(late, 'alice', t0 + TTL, t0 + 1).then(
              () => events.push('issue answered'),
              (e: unknown) => events.push('issue refused') && errors.push(e),
            );
            await timerTurn();
            events.push('timer');
            await Promise.all([spending, issuing]);
          } finally {
            await hold.release();
          }
          expect(events[0]).toBe('timer');
          expect(events.slice(1).sort()).toEqual(['issue refused', 'spend refused']);
          for (const e of errors) expectUnavailable(e);
          // After the release: what the refused calls left behind is the store's documented behaviour.
          const after = await sibling(ledger);
          if (held.refusedCallsAppliedLater) {
            expect(await after.spend(id, t0 + 2)).toBe('already-spent');
            expect(await after.spend(late, t0 + 2)).toBe('spent');
          } else {
            expect(await after.spend(id, t0 + 2)).toBe('spent');
            expect(await after.spend(late, t0 + 2)).toBe('unknown');
          }
        });

        it('answers a timer while a spend waits on the held store, and spends once the store is released', async () => {
          const ledger = await makeHeld(60_000);
          const id = jti();
          await ledger.issue(id, 'alice', t0 + TTL, t0);
          const events: string[] = [];
          const hold = await held.hold(ledger);
          let spending: Promise<unknown>;
          try {
            spending = ledger.spend(id, t0 + 1).then(
              (o) => events.push(`spend answered ${o}`),
              (e: unknown) => events.push(`spend refused ${String(e)}`),
            );
            await timerTurn();
            events.push('timer');
            // Still waiting while held: the loop served the timer first.
            expect(events).toEqual(['timer']);
          } finally {
            await hold.release();
          }
          await spending;
          expect(events).toEqual(['timer', 'spend answered spent']);
          expect(await ledger.spend(id, t0 + 2)).toBe('already-spent');
        });
      });
    }
  });
}
