/**
 * Stores written by the version before the store moved to src/store/ (commit f150933): the
 * current SQLite and Redis stores open them and refuse their spent confirmation, spend their
 * outstanding one once (control), and read their approval and audit head. The fixtures were
 * written by that commit's code with test/store/fixtures/writePreviousVersion.ts.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
  await expect(store.issue(FIXTURE.spentJti, FIXTURE.principal, FIXTURE.expiresAtMs, later)).rejects.toThrow(RangeError);
  expect(await store.spend(FIXTURE.spentJti, later)).toBe('already-spent');
  // Control: the outstanding one spends exactly once.
  expect(await store.spend(FIXTURE.outstandingJti, later)).toBe('spent');
  expect(await store.spend(FIXTURE.outstandingJti, later)).toBe('already-spent');
  // The approval is read as it was decided, and is not decided again.
  const record = await store.approvalByJti(FIXTURE.approval.jti, later);
  expect(record).toEqual({ ...FIXTURE.approval, expiresAtMs: FIXTURE.expiresAtMs, status: 'approved', decidedAtMs: FIXTURE.nowMs + 2_000, ...FIXTURE.approver });
  expect(await store.approvalById(FIXTURE.approval.id, later)).toEqual(record);
  expect(await store.decideApproval(FIXTURE.approval.id, { status: 'declined', approver: '', credentialId: '' }, later)).toBe('already-decided');
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

  it('Redis: the current store reads the keys in the previous layout (restored with their TTLs), refuses its spent confirmation, spends its outstanding one once, reads its approval and audit head', async () => {
    const url = process.env['REDIS_URL'];
    if (!url) throw new Error('REDIS_URL is not set: start Redis with scripts/start-redis.sh and export REDIS_URL=redis://127.0.0.1:PORT');
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
      } finally {
        await store.close();
      }
    } finally {
      for (const k of await raw.keys(`${prefix}*`)) await raw.del(k);
      await raw.close();
    }
  });
});
