/**
 * The metrics' timed store (`ServerMetrics.instrument`, over `wrapStore`): every method of the
 * store's one list is forwarded, the grant and plan methods included, and only `issue` and `spend`
 * are timed.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ServerMetrics } from '../../src/http/metrics.js';
import { CONFIRM_STORE_METHODS, isConfirmStore } from '../../src/store/confirmStore.js';
import { GRANT_STORE_METHODS } from '../../src/store/grantStore.js';
import { MemoryLedger } from '../../src/store/memory.js';

describe('ServerMetrics.instrument', () => {
  it("forwards the grant and plan methods of the store (untimed), so a grant made through the wrapper is the store's; issue and spend are timed", async () => {
    expect(CONFIRM_STORE_METHODS).toEqual(expect.arrayContaining([...GRANT_STORE_METHODS]));
    const metrics = new ServerMetrics();
    const memory = new MemoryLedger();
    const store = metrics.instrument(memory);
    expect(isConfirmStore(store)).toBe(true);
    const now = Date.now();
    const jti = randomUUID();
    await store.issue(jti, 'alice', now + 60_000, now);
    const grant = {
      id: randomBytes(16).toString('base64url'),
      audience: 'files',
      principal: 'alice',
      tool: 'delete_file',
      scope: '{"path":"any"}',
      binding: '',
      summary: 'any file',
      policyDigest: randomBytes(32).toString('base64url'),
      approver: 'client',
      maxUses: 2,
      createdAtMs: now,
      expiresAtMs: now + 60_000,
    };
    expect(await store.spendGranting(jti, now, grant)).toEqual({ spend: 'spent', created: 'created' });
    // The wrapped store holds it: read through the store itself, taken through the wrapper.
    expect(await memory.findGrants({ principal: 'alice' }, now + 1)).toHaveLength(1);
    expect(await store.takeGrantUse(grant.id, now + 1)).toEqual({
      taken: true,
      usesLeft: 0,
      expiresAtMs: grant.expiresAtMs,
    });
    expect(await memory.takeGrantUse(grant.id, now + 2)).toEqual({ taken: false, reason: 'exhausted' });
    expect(await store.revokeGrant(grant.id, now + 2)).toBe('unknown');
    expect(await store.findGrants({}, now + 2)).toEqual([]);
    expect(await store.takePlanSlot(randomBytes(32).toString('base64url'), now + 2)).toBeUndefined();
    await expect(
      store.spendPlanning(randomUUID(), now, {
        id: 'bad',
        audience: 'a',
        principal: 'p',
        binding: '',
        slots: [],
        approver: 'a',
        createdAtMs: now,
        expiresAtMs: now + 1,
      }),
    ).rejects.toBeInstanceOf(RangeError);
    const text = await metrics.registry.metrics();
    const ops = [...text.matchAll(/^mcp_confirm_ledger_seconds_count\{op="([^"]+)"/gm)].map((m) => m[1]).sort();
    expect(ops).toEqual(['issue']);
  });
});
