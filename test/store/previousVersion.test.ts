/**
 * Stores written by the version before the store moved to src/store/ (commit f150933): the
 * current SQLite and Redis stores open them and refuse their spent confirmation, spend their
 * outstanding one once (control), and read their approval and audit head; an old SQLite file
 * gains the grant and plan tables, its own tables unchanged. The fixtures were written by that
 * commit's code with test/store/fixtures/writePreviousVersion.ts.
 */
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createClient } from 'redis';
import { afterAll, describe, expect, it } from 'vitest';
import type { ConfirmStore } from '../../src/store/confirmStore.js';
import { RedisLedger } from '../../src/store/redis.js';
import { SqliteLedger } from '../../src/store/sqlite.js';
import { FIXTURE } from './fixtures/writePreviousVersion.js';

const FIXTURES = join(import.meta.dirname, 'fixtures', 'previousVersion');
const dir = mkdtempSync(join(tmpdir(), 'mcp-confirm-previous-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The same checks on either store: the records the previous version wrote, as this version reads them. */
async function readsThePreviousRecords(store: ConfirmStore): Promise<void> {
  const later = FIXTURE.nowMs + 5_000;
  // The spent confirmation stays spent, and its jti cannot be issued again.
  expect(await store.spend(FIXTURE.spentJti, later)).toBe('already-spent');
  await expect(store.issue(FIXTURE.spentJti, FIXTURE.principal, FIXTURE.expiresAtMs, later)).rejects.toThrow(
    RangeError,
  );
  expect(await store.spend(FIXTURE.spentJti, later)).toBe('already-spent');
  // Control: the outstanding one spends exactly once.
  expect(await store.spend(FIXTURE.outstandingJti, later)).toBe('spent');
  expect(await store.spend(FIXTURE.outstandingJti, later)).toBe('already-spent');
  // The approval is read as it was decided, and is not decided again.
  const record = await store.approvalByJti(FIXTURE.approval.jti, later);
  expect(record).toEqual({
    ...FIXTURE.approval,
    expiresAtMs: FIXTURE.expiresAtMs,
    status: 'approved',
    decidedAtMs: FIXTURE.nowMs + 2_000,
    ...FIXTURE.approver,
  });
  expect(await store.approvalById(FIXTURE.approval.id, later)).toEqual(record);
  expect(
    await store.decideApproval(FIXTURE.approval.id, { status: 'declined', approver: '', credentialId: '' }, later),
  ).toBe('already-decided');
  // The audit head is the one recorded.
  expect(await store.auditHead(FIXTURE.auditHead.path)).toEqual(FIXTURE.auditHead.head);
}

describe('a store written by the previous version (f150933)', () => {
  it('SQLite: the current store opens its file, refuses its spent confirmation (already-spent, not issuable again), spends its outstanding one once, reads its approval and audit head', async () => {
    const path = join(dir, 'ledger.sqlite');
    copyFileSync(join(FIXTURES, 'ledger.sqlite'), path);
    const store = new SqliteLedger({ path });
    try {
      await readsThePreviousRecords(store);
    } finally {
      await store.close();
    }
  });

  it('SQLite: an old file gains the grant and plan tables on the first grant call, every table it had unchanged; grants and plans work there, its spent confirmation creates none, and its records read as before', async () => {
    const path = join(dir, 'ledger-grants.sqlite');
    copyFileSync(join(FIXTURES, 'ledger.sqlite'), path);
    const schemaOf = (): Array<{ type: string; name: string; sql: string | null }> => {
      const db = new Database(path, { readonly: true });
      try {
        return db.prepare('SELECT type, name, sql FROM sqlite_schema ORDER BY type, name').all() as Array<{
          type: string;
          name: string;
          sql: string | null;
        }>;
      } finally {
        db.close();
      }
    };
    const ours = (o: { name: string }): boolean =>
      /^(sqlite_autoindex_)?mcp_confirm_(grants|plans|plan_slots)(_|$)/.test(o.name);
    const before = schemaOf();
    expect(before.filter(ours)).toEqual([]);
    const store = new SqliteLedger({ path });
    try {
      const now = FIXTURE.nowMs + 5_000;
      const id = (): string => randomBytes(16).toString('base64url');
      const digest = (): string => randomBytes(32).toString('base64url');
      const grant = {
        id: id(),
        audience: 'mcp-confirm',
        principal: FIXTURE.principal,
        tool: 'delete_file',
        scope: '{"path":"same-directory"}',
        binding: '',
        summary: 'any file in the directory',
        policyDigest: digest(),
        approver: 'client',
        maxUses: 2,
        createdAtMs: now,
        expiresAtMs: now + 60_000,
      };
      // The old tombstone refuses to create a grant, as it refuses a spend.
      expect(await store.spendGranting(FIXTURE.spentJti, now, grant)).toEqual({
        spend: 'already-spent',
        created: 'none',
      });
      const jti = 'current-version-grant-jti-0000000000';
      await store.issue(jti, FIXTURE.principal, now + 60_000, now);
      expect(await store.spendGranting(jti, now, grant)).toEqual({ spend: 'spent', created: 'created' });
      expect(await store.takeGrantUse(grant.id, now + 1)).toEqual({
        taken: true,
        usesLeft: 0,
        expiresAtMs: grant.expiresAtMs,
      });
      expect(await store.takeGrantUse(grant.id, now + 2)).toEqual({ taken: false, reason: 'exhausted' });
      const planJti = 'current-version-plan-jti-00000000000';
      await store.issue(planJti, FIXTURE.principal, now + 60_000, now);
      const key = digest();
      const plan = {
        id: id(),
        audience: 'mcp-confirm',
        principal: FIXTURE.principal,
        binding: '',
        slots: [{ key, tool: 'delete_file', identity: '{}' }],
        approver: 'client',
        createdAtMs: now,
        expiresAtMs: now + 60_000,
      };
      expect(await store.spendPlanning(planJti, now, plan)).toEqual({ spend: 'spent', created: 'created' });
      expect(await store.takePlanSlot(key, now + 1)).toEqual({
        planId: plan.id,
        index: 0,
        identity: '{}',
        slotsLeft: 0,
        expiresAtMs: plan.expiresAtMs,
      });
      const after = schemaOf();
      expect(after.filter((o) => !ours(o))).toEqual(before);
      expect(after.filter((o) => ours(o) && o.type === 'table').map((o) => o.name)).toEqual([
        'mcp_confirm_grants',
        'mcp_confirm_plan_slots',
        'mcp_confirm_plans',
      ]);
      // The records the previous version wrote read as before.
      await readsThePreviousRecords(store);
    } finally {
      await store.close();
    }
  });

  it('SQLite: an old approvals table gains the scope and grant_id columns on first use (its rows and other columns unchanged); its approval reads as before, then takes a grant id; a new approval keeps its scope', async () => {
    const path = join(dir, 'ledger-scope.sqlite');
    copyFileSync(join(FIXTURES, 'ledger.sqlite'), path);
    const columnsOf = (): string[] => {
      const db = new Database(path, { readonly: true });
      try {
        return (db.prepare('PRAGMA table_info(mcp_confirm_approvals)').all() as Array<{ name: string }>).map(
          (c) => c.name,
        );
      } finally {
        db.close();
      }
    };
    const before = columnsOf();
    expect(before).not.toContain('scope');
    expect(before).not.toContain('grant_id');
    const store = new SqliteLedger({ path });
    try {
      await readsThePreviousRecords(store);
      expect(columnsOf()).toEqual([...before, 'scope', 'grant_id']);
      const later = FIXTURE.nowMs + 6_000;
      expect(await store.attachGrant(FIXTURE.approval.id, 'grant-of-old', FIXTURE.expiresAtMs + 60_000, later)).toBe(
        true,
      );
      expect(await store.approvalById(FIXTURE.approval.id, FIXTURE.expiresAtMs + 1)).toMatchObject({
        grantId: 'grant-of-old',
        approver: FIXTURE.approver.approver,
      });
      const fresh = {
        id: 'bmV3LWFwcHJvdmFsLWluLWFuLW9sZC1maWxl',
        jti: 'new-approval-in-an-old-file-000000',
        principal: 'local',
        view: '{}',
      };
      await store.openApproval({ ...fresh, expiresAtMs: later + 60_000 }, later);
      await store.decideApproval(
        fresh.id,
        { status: 'approved', approver: 'ann', credentialId: 'c', scope: 'grant' },
        later,
      );
      expect((await store.approvalById(fresh.id, later + 1))?.scope).toBe('grant');
    } finally {
      await store.close();
    }
    // Opened again (the columns are there now): nothing is added twice, and the records read back.
    const again = new SqliteLedger({ path });
    try {
      expect((await again.approvalById(FIXTURE.approval.id, FIXTURE.nowMs + 7_000))?.grantId).toBe('grant-of-old');
      expect(columnsOf()).toEqual([...before, 'scope', 'grant_id']);
    } finally {
      await again.close();
    }
  });

  it('Redis: the current store reads the keys in the previous layout (restored with their TTLs), refuses its spent confirmation, spends its outstanding one once, reads its approval and audit head', async () => {
    const url = process.env['REDIS_URL'];
    if (!url)
      throw new Error(
        'REDIS_URL is not set: start Redis with scripts/start-redis.sh and export REDIS_URL=redis://127.0.0.1:PORT',
      );
    const written = JSON.parse(readFileSync(join(FIXTURES, 'redis.json'), 'utf8')) as {
      namespace: string;
      keys: { key: string; type: string; pttl: number; value: unknown }[];
    };
    expect(written.namespace).toBe(FIXTURE.namespace);
    // A namespace of its own per run, so that runs sharing one Redis do not meet.
    const namespace = `${FIXTURE.namespace}-${process.pid}-${Date.now()}`;
    const prefix = `mcp-confirm:{${namespace}}:`;
    const raw = createClient({ url });
    await raw.connect();
    try {
      for (const { key, type, pttl, value } of written.keys) {
        const k = prefix + key;
        if (type === 'string') await raw.set(k, value as string);
        else if (type === 'hash') await raw.hSet(k, value as Record<string, string>);
        else if (type === 'zset') await raw.zAdd(k, value as { value: string; score: number }[]);
        else if (type === 'list') await raw.rPush(k, value as string[]);
        else if (type === 'set') await raw.sAdd(k, value as string[]);
        else throw new Error(`unexpected key type ${type} in the fixture`);
        if (pttl > 0) await raw.pExpire(k, pttl);
      }
      expect(written.keys.map((k) => k.key)).toContain(`jti:${FIXTURE.spentJti}`);
      const store = await RedisLedger.open({ url, namespace });
      try {
        await readsThePreviousRecords(store);
        // The old approval hash takes a grant id, and it and its jti index are kept until the grant's expiry.
        const ttlBefore = await raw.pTTL(`${prefix}ap:${FIXTURE.approval.id}`);
        const later = FIXTURE.nowMs + 6_000;
        expect(await store.attachGrant(FIXTURE.approval.id, 'grant-of-old', later + 3_600_000, later)).toBe(true);
        expect((await store.approvalByJti(FIXTURE.approval.jti, later + 1))?.grantId).toBe('grant-of-old');
        expect(await raw.pTTL(`${prefix}ap:${FIXTURE.approval.id}`)).toBeGreaterThan(ttlBefore + 3_000_000);
        expect(await raw.pTTL(`${prefix}apj:${FIXTURE.approval.jti}`)).toBeGreaterThan(ttlBefore + 3_000_000);
      } finally {
        await store.close();
      }
    } finally {
      for (const k of await raw.keys(`${prefix}*`)) await raw.del(k);
      await raw.close();
    }
  });
});
