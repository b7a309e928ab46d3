import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfirmCapacityError } from '../../src/errors.js';
import { MemoryLedger } from '../../src/store/memory.js';
import { ledgerContract } from './ledgerContract.js';
import { grantStoreContract } from './grantContract.js';

ledgerContract('MemoryLedger', (bounds) => new MemoryLedger(bounds));
grantStoreContract('MemoryLedger', (bounds) => new MemoryLedger(bounds));

describe('MemoryLedger', () => {
  const t0 = Date.now();
  const TTL = 300_000;

  it('keeps exact per-principal bounds while 2,000 idle principals come and go and are forgotten', async () => {
    const ledger = new MemoryLedger({ maxPerPrincipal: 2, maxTotal: 10_000 });
    const held = randomUUID();
    await ledger.issue(held, 'alice', t0 + TTL, t0);
    for (let i = 0; i < 2_000; i++) {
      const id = randomUUID();
      await ledger.issue(id, `p${i}`, t0 + TTL, t0);
      expect(await ledger.spend(id, t0 + 1)).toBe('spent');
    }
    await ledger.issue(randomUUID(), 'alice', t0 + TTL, t0 + 2);
    await expect(ledger.issue(randomUUID(), 'alice', t0 + TTL, t0 + 3)).rejects.toBeInstanceOf(ConfirmCapacityError);
    expect(await ledger.spend(held, t0 + 4)).toBe('spent');
    await ledger.issue(randomUUID(), 'alice', t0 + TTL, t0 + 5);
    await expect(ledger.issue(randomUUID(), 'alice', t0 + TTL, t0 + 6)).rejects.toBeInstanceOf(ConfirmCapacityError);
    expect(ledger.size).toBe(2);
  });

  it('counts a principal from zero again after the sweep at its bound removed its last entry', async () => {
    const ledger = new MemoryLedger({ maxPerPrincipal: 1, maxTotal: 100 });
    // Issued out of expiry order, so the cheap front sweep does not reach the expired entry first.
    await ledger.issue(randomUUID(), 'bob', t0 + TTL, t0);
    const old = randomUUID();
    await ledger.issue(old, 'alice', t0 + 1_000, t0);
    await expect(ledger.issue(randomUUID(), 'alice', t0 + TTL, t0 + 999)).rejects.toBeInstanceOf(ConfirmCapacityError);
    await ledger.issue(randomUUID(), 'alice', t0 + TTL, t0 + 1_000);
    await expect(ledger.issue(randomUUID(), 'alice', t0 + TTL, t0 + 1_001)).rejects.toBeInstanceOf(
      ConfirmCapacityError,
    );
    expect(await ledger.spend(old, t0 + 1_002)).toBe('unknown');
    expect(ledger.size).toBe(2);
  });

  it('returns settled promises: a refused issue rejects, a spend resolves with its outcome', async () => {
    const ledger = new MemoryLedger({ maxPerPrincipal: 1 });
    const id = randomUUID();
    await ledger.issue(id, 'alice', t0 + TTL, t0);
    await expect(ledger.issue(id, 'bob', t0 + TTL, t0)).rejects.toBeInstanceOf(RangeError);
    await expect(ledger.issue(randomUUID(), 'alice', t0 + TTL, t0)).rejects.toBeInstanceOf(ConfirmCapacityError);
    const [first, second] = await Promise.all([ledger.spend(id, t0 + 1), ledger.spend(id, t0 + 1)]);
    expect([first, second]).toEqual(['spent', 'already-spent']);
  });
});
