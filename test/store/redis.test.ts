import { createHash, randomUUID } from 'node:crypto';
import { until } from '../helpers/processes.js';
import { expectUnavailable, rejection } from '../helpers/rejections.js';
import { createClient } from 'redis';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisLedger, type RedisCommandClient, type RedisLedgerOptions } from '../../src/store/redis.js';
import type { Ledger } from '../../src/store/ledger.js';
import { ledgerContract, type HeldStore } from './ledgerContract.js';
import { grantStoreContract, recordId, slotKey } from './grantContract.js';
import { spendGrantingScript, spendPlanningScript, spendScript } from '../../src/store/redisScripts.js';
import { raceSpends, raceTakes } from './race.js';
import { signalRedis, startRedis, waitPortClosed, type OwnRedis } from './redisServer.js';
import { ISSUE_SCRIPT as PREVIOUS_ISSUE, SPEND_SCRIPT as PREVIOUS_SPEND } from './fixtures/previousRedisScripts.js';

/**
 * The URL of the Redis the test runner started (scripts/start-redis.sh). Missing or
 * unreachable is a failure, never a skip: these tests are the proof for the Redis store.
 */
function redisUrl(): string {
  const url = process.env.REDIS_URL;
  if (!url)
    throw new Error(
      'REDIS_URL is not set: start Redis with scripts/start-redis.sh and export REDIS_URL=redis://127.0.0.1:PORT',
    );
  return url;
}

const ns = (): string => `test-${randomUUID()}`;

function openLedger(options: Partial<RedisLedgerOptions> = {}): Promise<RedisLedger> {
  return RedisLedger.open({ url: redisUrl(), namespace: ns(), connectTimeoutMs: 3_000, ...options });
}

async function rawClient(url = redisUrl()) {
  const client = createClient({ url, commandOptions: { timeout: 0 } });
  client.on('error', () => {});
  await client.connect();
  return client;
}

/** A stand-in client whose `sendCommand` does whatever the test says. */
function fakeClient(sendCommand: RedisCommandClient['sendCommand']): RedisCommandClient {
  return { sendCommand };
}

/**
 * A redis-server of this file's own for the tests that freeze it with DEBUG SLEEP (started by
 * scripts/start-redis.sh, which allows DEBUG from loopback): freezing the runner's shared Redis
 * would stall the other test files using it.
 */
let frozenServer: OwnRedis | undefined;
const freezable = (): OwnRedis => (frozenServer ??= startRedis());
const sharedClients: Array<Awaited<ReturnType<typeof rawClient>>> = [];
afterAll(async () => {
  await Promise.all(sharedClients.map((c) => c.close().catch(() => {})));
  if (frozenServer !== undefined) signalRedis(frozenServer, 'SIGKILL');
});

/** A connected client the test owns, to share between ledgers and the DEBUG SLEEP that freezes them. */
async function sharedClient(url: string) {
  const client = createClient({ url, disableOfflineQueue: true, commandOptions: { timeout: 0 } });
  client.on('error', () => {});
  await client.connect();
  sharedClients.push(client);
  return client;
}

/** How long `DEBUG SLEEP` freezes the server in the held-store tests, in seconds. */
const FREEZE_SECONDS = 2;
const heldOn = new WeakMap<Ledger, { client: Awaited<ReturnType<typeof sharedClient>>; namespace: string }>();

/**
 * Held = Redis frozen by `DEBUG SLEEP`, sent on the ledger's own connection so that every
 * later command of that ledger reaches Redis after it (ordered by the connection, not by time).
 */
const held: HeldStore = {
  make: async ({ timeoutMs }) => {
    const client = await sharedClient(freezable().url);
    const namespace = ns();
    const ledger = new RedisLedger({ client, namespace, timeoutMs });
    heldOn.set(ledger, { client, namespace });
    return ledger;
  },
  sibling: async (of, { timeoutMs }) => {
    const on = heldOn.get(of)!;
    const ledger = new RedisLedger({ client: on.client, namespace: on.namespace, timeoutMs });
    heldOn.set(ledger, on);
    return ledger;
  },
  hold: async (ledger) => {
    const woke = heldOn.get(ledger)!.client.sendCommand(['DEBUG', 'SLEEP', String(FREEZE_SECONDS)]);
    return {
      release: async () => {
        await woke;
      },
    };
  },
  // 20× shorter than the sleep: the deadline passes while Redis still sleeps.
  shortTimeoutMs: 100,
  refusedCallsAppliedLater: true,
};

ledgerContract('RedisLedger', (bounds) => openLedger(bounds), { held });
grantStoreContract('RedisLedger', (bounds) => openLedger(bounds));

describe('RedisLedger', () => {
  it('reaches the Redis at REDIS_URL (set by the test runner)', async () => {
    const ledger = await openLedger();
    expect(ledger.isReady).toBe(true);
    expect(await ledger.spend(randomUUID(), Date.now())).toBe('unknown');
    await ledger.close();
  });

  it('reports kind redis and shared true', async () => {
    const ledger = await openLedger();
    expect(ledger.kind).toBe('redis');
    expect(ledger.shared).toBe(true);
    await ledger.close();
  });

  it('stores an entry under mcp-confirm:{namespace}:jti:JTI with a TTL of remaining lifetime plus clock skew', async () => {
    const namespace = ns();
    const ledger = await openLedger({ namespace, clockSkewMs: 10_000 });
    const raw = await rawClient();
    try {
      const jti = randomUUID();
      const now = Date.now();
      await ledger.issue(jti, 'ali:ce', now + 30_000, now);
      const key = `mcp-confirm:{${namespace}}:jti:${jti}`;
      expect(await raw.get(key)).toBe(`o|${now + 30_000}|ali:ce`);
      const ttl = await raw.pTTL(key);
      expect(ttl).toBeGreaterThan(39_000);
      expect(ttl).toBeLessThanOrEqual(40_000);
      expect(await raw.zScore(`mcp-confirm:{${namespace}}:out`, jti)).toBe(now + 30_000);
      expect(await raw.zScore(`mcp-confirm:{${namespace}}:p:ali:ce`, jti)).toBe(now + 30_000);

      // Each zset lives at least as long as the entries it counts.
      expect(await raw.pTTL(`mcp-confirm:{${namespace}}:out`)).toBeGreaterThanOrEqual(ttl);
      expect(await raw.pTTL(`mcp-confirm:{${namespace}}:p:ali:ce`)).toBeGreaterThanOrEqual(ttl);

      expect(await ledger.spend(jti, now + 1)).toBe('spent');
      // The tombstone is written by the same command that reads the entry (SET … XX GET KEEPTTL).
      expect(await raw.get(key)).toBe('s|');
      expect(await raw.pTTL(key)).toBeGreaterThan(38_000);
      expect(await raw.zScore(`mcp-confirm:{${namespace}}:out`, jti)).toBeNull();
      expect(await raw.exists(`mcp-confirm:{${namespace}}:p:ali:ce`)).toBe(0);
      expect(await raw.lRange(`mcp-confirm:{${namespace}}:spent-order`, 0, -1)).toEqual([jti]);
    } finally {
      await raw.close();
      await ledger.close();
    }
  });

  it('keeps namespaces apart: the same jti is independent in two namespaces', async () => {
    const a = await openLedger();
    const b = await openLedger();
    const jti = randomUUID();
    const now = Date.now();
    await a.issue(jti, 'alice', now + 60_000, now);
    expect(await b.spend(jti, now)).toBe('unknown');
    await b.issue(jti, 'alice', now + 60_000, now);
    expect(await a.spend(jti, now)).toBe('spent');
    expect(await b.spend(jti, now)).toBe('spent');
    await Promise.all([a.close(), b.close()]);
  });

  it('refuses a namespace with a lone surrogate (stored as U+FFFD, \\uD800 and \\uDFFF would share one store); control: two well-formed namespaces differing only there keep their entries and bounds apart', async () => {
    const base = ns();
    for (const lone of ['\uD800', '\uDFFF', `a\uDC00b`]) {
      expect(() => new RedisLedger({ url: redisUrl(), namespace: base + lone })).toThrow(/well-formed/);
    }
    // Control: '\uFFFD' itself and a real pair are namespaces of their own, apart from each other.
    const a = await openLedger({ namespace: `${base}\uFFFD`, maxPerPrincipal: 1 });
    const b = await openLedger({ namespace: `${base}\u{1F600}`, maxPerPrincipal: 1 });
    const jti = randomUUID();
    const now = Date.now();
    await a.issue(jti, 'alice', now + 60_000, now);
    await b.issue(randomUUID(), 'alice', now + 60_000, now);
    expect(await b.spend(jti, now)).toBe('unknown');
    expect(await a.spend(jti, now)).toBe('spent');
    await Promise.all([a.close(), b.close()]);
  });

  it('shares entries and bounds between two ledgers (two connections) on one namespace', async () => {
    const namespace = ns();
    const a = await openLedger({ namespace, maxPerPrincipal: 1 });
    const b = await openLedger({ namespace, maxPerPrincipal: 1 });
    const jti = randomUUID();
    const now = Date.now();
    await a.issue(jti, 'alice', now + 60_000, now);
    const error = await rejection(b.issue(randomUUID(), 'alice', now + 60_000, now));
    expect((error as { code?: string }).code).toBe('ERR_CONFIRM_CAPACITY');
    expect(await b.spend(jti, now)).toBe('spent');
    expect(await a.spend(jti, now)).toBe('already-spent');
    await Promise.all([a.close(), b.close()]);
  });

  it('bounds tombstones to maxTotal, dropping the oldest spend first', async () => {
    const ledger = await openLedger({ maxTotal: 3 });
    const now = Date.now();
    const ids = Array.from({ length: 5 }, randomUUID);
    for (const [i, id] of ids.entries()) {
      await ledger.issue(id, 'alice', now + 60_000 + i, now);
      expect(await ledger.spend(id, now)).toBe('spent');
    }
    const outcomes = await Promise.all(ids.map((id) => ledger.spend(id, now)));
    expect(outcomes).toEqual(['unknown', 'unknown', 'already-spent', 'already-spent', 'already-spent']);
    await ledger.close();
  });

  it('evicts tombstones beyond maxTotal in batches of maxTotal / 1024 (2048: 3 at once), oldest first, never keeping more than maxTotal', async () => {
    const namespace = ns();
    const ledger = await openLedger({ namespace, maxTotal: 2048 });
    const raw = await rawClient();
    try {
      const now = Date.now();
      const ids = Array.from({ length: 2049 }, randomUUID);
      for (const [i, id] of ids.entries()) {
        await ledger.issue(id, `p${i % 7}`, now + 60_000, now);
        expect(await ledger.spend(id, now)).toBe('spent');
        if (i === 2047) expect(await raw.lLen(`mcp-confirm:{${namespace}}:spent-order`)).toBe(2048);
      }
      // The 2,049th spend went beyond the cap: the 3 oldest tombstones (excess 1 + slack 2) were dropped.
      expect(await raw.lLen(`mcp-confirm:{${namespace}}:spent-order`)).toBe(2046);
      for (const id of ids.slice(0, 3)) expect(await raw.exists(`mcp-confirm:{${namespace}}:jti:${id}`)).toBe(0);
      const outcomes = await Promise.all(
        [ids[0]!, ids[1]!, ids[2]!, ids[3]!, ids[2048]!].map((id) => ledger.spend(id, now)),
      );
      expect(outcomes).toEqual(['unknown', 'unknown', 'unknown', 'already-spent', 'already-spent']);
    } finally {
      await raw.close();
      await ledger.close();
    }
  });

  it('gives exactly maxPerPrincipal, then exactly maxTotal, to 40 concurrent issuers on two connections; the rest ERR_CONFIRM_CAPACITY', async () => {
    const namespace = ns();
    const bounds = { namespace, maxPerPrincipal: 5, maxTotal: 8 };
    const [a, b] = await Promise.all([openLedger(bounds), openLedger(bounds)]);
    const raw = await rawClient();
    try {
      const now = Date.now();
      const settle = (p: Promise<void>): Promise<string> =>
        p.then(
          () => 'issued',
          (e: unknown) => (e as { code?: string }).code ?? String(e),
        );
      const tally = (results: string[]): Record<string, number> => {
        const t: Record<string, number> = {};
        for (const r of results) t[r] = (t[r] ?? 0) + 1;
        return t;
      };
      const alice = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          settle((i % 2 === 0 ? a : b).issue(randomUUID(), 'alice', now + 60_000, now)),
        ),
      );
      expect(tally(alice)).toEqual({ issued: 5, ERR_CONFIRM_CAPACITY: 35 });
      expect(await raw.zCard(`mcp-confirm:{${namespace}}:p:alice`)).toBe(5);
      const others = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          settle((i % 2 === 0 ? a : b).issue(randomUUID(), `user-${i}`, now + 60_000, now)),
        ),
      );
      expect(tally(others)).toEqual({ issued: 3, ERR_CONFIRM_CAPACITY: 37 });
      expect(await raw.zCard(`mcp-confirm:{${namespace}}:out`)).toBe(8);
    } finally {
      await raw.close();
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('keeps each zset at least as long as an entry living longer than 24 hours, so that entry keeps counting toward the bound', async () => {
    const namespace = ns();
    const ledger = await openLedger({ namespace, maxPerPrincipal: 1 });
    const raw = await rawClient();
    try {
      const now = Date.now();
      const jti = randomUUID();
      await ledger.issue(jti, 'alice', now + 30 * 3_600_000, now);
      const entryTtl = await raw.pTTL(`mcp-confirm:{${namespace}}:jti:${jti}`);
      expect(entryTtl).toBeGreaterThan(30 * 3_600_000);
      expect(await raw.pTTL(`mcp-confirm:{${namespace}}:out`)).toBeGreaterThanOrEqual(entryTtl);
      expect(await raw.pTTL(`mcp-confirm:{${namespace}}:p:alice`)).toBeGreaterThanOrEqual(entryTtl);
      const error = await rejection(ledger.issue(randomUUID(), 'alice', now + 60_000, now));
      expect((error as { code?: string }).code).toBe('ERR_CONFIRM_CAPACITY');
      // Control: once spent, the slot is free again.
      expect(await ledger.spend(jti, now)).toBe('spent');
      await ledger.issue(randomUUID(), 'alice', now + 60_000, now);
    } finally {
      await raw.close();
      await ledger.close();
    }
  });

  it("works in a namespace with a quote, a backslash and non-ASCII (its key names are constants of the scripts' text)", async () => {
    const namespace = "it's \\ «ns» " + randomUUID();
    const ledger = await openLedger({ namespace, maxPerPrincipal: 1 });
    const raw = await rawClient();
    try {
      const now = Date.now();
      const jti = randomUUID();
      await ledger.issue(jti, 'alice', now + 60_000, now);
      expect(await raw.get(`mcp-confirm:{${namespace}}:jti:${jti}`)).toBe(`o|${now + 60_000}|alice`);
      expect(await raw.zScore(`mcp-confirm:{${namespace}}:p:alice`, jti)).toBe(now + 60_000);
      expect(
        ((await rejection(ledger.issue(randomUUID(), 'alice', now + 60_000, now))) as { code?: string }).code,
      ).toBe('ERR_CONFIRM_CAPACITY');
      expect(await ledger.spend(jti, now)).toBe('spent');
      expect(await raw.lRange(`mcp-confirm:{${namespace}}:spent-order`, 0, -1)).toEqual([jti]);
      expect(await ledger.spend(jti, now)).toBe('already-spent');
    } finally {
      await raw.close();
      await ledger.close();
    }
  });

  describe('upgrade: keys written by the previous scripts (tombstone s|EXPIRES_AT_MS, zsets with a 24-hour TTL)', () => {
    type Raw = Awaited<ReturnType<typeof rawClient>>;
    const DAY_MS = '86400000';

    /** An issue by a process still running the previous scripts (default bounds); its reply. */
    function previousIssue(
      raw: Raw,
      namespace: string,
      jti: string,
      principal: string,
      expiresAtMs: number,
      nowMs: number,
      maxPerPrincipal = 1_000,
    ): Promise<unknown> {
      const p = `mcp-confirm:{${namespace}}:`;
      const px = String(expiresAtMs - nowMs + 60_000);
      return raw.sendCommand([
        'EVAL',
        PREVIOUS_ISSUE,
        '3',
        `${p}jti:${jti}`,
        `${p}out`,
        `${p}p:${principal}`,
        jti,
        principal,
        String(expiresAtMs),
        String(nowMs),
        px,
        String(maxPerPrincipal),
        '100000',
        DAY_MS,
      ]);
    }

    /** A spend by a process still running the previous scripts; its reply. */
    function previousSpend(raw: Raw, namespace: string, jti: string, nowMs: number): Promise<unknown> {
      const p = `mcp-confirm:{${namespace}}:`;
      return raw.sendCommand([
        'EVAL',
        PREVIOUS_SPEND,
        '3',
        `${p}jti:${jti}`,
        `${p}out`,
        `${p}spent-order`,
        jti,
        String(nowMs),
        `${p}p:`,
        '100000',
        `${p}jti:`,
        DAY_MS,
      ]);
    }

    it('an outstanding entry of the previous format counts toward the bound and spends exactly once under 32 concurrent spends, then frees its slot', async () => {
      const namespace = ns();
      const ledger = await openLedger({ namespace, maxPerPrincipal: 1 });
      const raw = await rawClient();
      try {
        const now = Date.now();
        const jti = randomUUID();
        expect(await previousIssue(raw, namespace, jti, 'alice', now + 60_000, now)).toBe('issued');
        const full = await rejection(ledger.issue(randomUUID(), 'alice', now + 60_000, now));
        expect((full as { code?: string }).code).toBe('ERR_CONFIRM_CAPACITY');
        const outcomes = await Promise.all(Array.from({ length: 32 }, () => ledger.spend(jti, now + 1)));
        expect(outcomes.filter((o) => o === 'spent')).toHaveLength(1);
        expect(outcomes.filter((o) => o === 'already-spent')).toHaveLength(31);
        expect(await raw.exists(`mcp-confirm:{${namespace}}:p:alice`)).toBe(0);
        // Control: the freed slot takes a new confirmation, which spends once.
        const fresh = randomUUID();
        await ledger.issue(fresh, 'alice', now + 60_000, now);
        expect(await ledger.spend(fresh, now + 1)).toBe('spent');
      } finally {
        await raw.close();
        await ledger.close();
      }
    });

    it('shared with a process still running the previous scripts: one bound for both, and each confirmation spent exactly once under 16 + 16 concurrent spends from both', async () => {
      const namespace = ns();
      const ledger = await openLedger({ namespace, maxPerPrincipal: 2 });
      const raw = await rawClient();
      try {
        const now = Date.now();
        const [byPrevious, byCurrent] = [randomUUID(), randomUUID()];
        expect(await previousIssue(raw, namespace, byPrevious, 'alice', now + 60_000, now, 2)).toBe('issued');
        await ledger.issue(byCurrent, 'alice', now + 60_000, now);
        // Both count toward one bound, whichever version asks.
        expect(await previousIssue(raw, namespace, randomUUID(), 'alice', now + 60_000, now, 2)).toBe(
          'capacity-principal',
        );
        expect(
          ((await rejection(ledger.issue(randomUUID(), 'alice', now + 60_000, now))) as { code?: string }).code,
        ).toBe('ERR_CONFIRM_CAPACITY');
        for (const jti of [byPrevious, byCurrent]) {
          const outcomes = await Promise.all([
            ...Array.from({ length: 16 }, () => ledger.spend(jti, now + 1)),
            ...Array.from({ length: 16 }, () => previousSpend(raw, namespace, jti, now + 1)),
          ]);
          expect(outcomes.filter((o) => o === 'spent')).toHaveLength(1);
          expect(outcomes.filter((o) => o === 'already-spent')).toHaveLength(31);
        }
        // Control: both slots are free again, for either version.
        expect(await previousIssue(raw, namespace, randomUUID(), 'alice', now + 60_000, now, 2)).toBe('issued');
        await ledger.issue(randomUUID(), 'alice', now + 60_000, now);
      } finally {
        await raw.close();
        await ledger.close();
      }
    });

    it('a tombstone of the previous format (s|EXPIRES_AT_MS) is already-spent, and its jti cannot be issued again', async () => {
      const namespace = ns();
      const ledger = await openLedger({ namespace });
      const raw = await rawClient();
      try {
        const now = Date.now();
        const jti = randomUUID();
        expect(await previousIssue(raw, namespace, jti, 'alice', now + 60_000, now)).toBe('issued');
        expect(await previousSpend(raw, namespace, jti, now)).toBe('spent');
        expect(await raw.get(`mcp-confirm:{${namespace}}:jti:${jti}`)).toBe(`s|${now + 60_000}`);
        expect(await ledger.spend(jti, now)).toBe('already-spent');
        expect(await rejection(ledger.issue(jti, 'alice', now + 60_000, now))).toBeInstanceOf(RangeError);
        expect(await raw.pTTL(`mcp-confirm:{${namespace}}:jti:${jti}`)).toBeGreaterThan(0);
        // Control: a jti never issued is unknown, and stays absent (SET … XX writes nothing).
        const never = randomUUID();
        expect(await ledger.spend(never, now)).toBe('unknown');
        expect(await raw.exists(`mcp-confirm:{${namespace}}:jti:${never}`)).toBe(0);
      } finally {
        await raw.close();
        await ledger.close();
      }
    });
  });

  it('reloads its scripts after SCRIPT FLUSH (NOSCRIPT falls back to EVAL)', async () => {
    const ledger = await openLedger();
    const raw = await rawClient();
    try {
      const jti = randomUUID();
      await ledger.issue(jti, 'alice', Date.now() + 60_000);
      await raw.scriptFlush();
      expect(await ledger.spend(jti, Date.now())).toBe('spent');
      await raw.scriptFlush();
      await ledger.issue(randomUUID(), 'alice', Date.now() + 60_000);
    } finally {
      await raw.close();
      await ledger.close();
    }
  });

  describe('part 6: a spend refused at its deadline while Redis sleeps (DEBUG SLEEP) is applied when Redis wakes, script cached or not', () => {
    for (const cached of [true, false]) {
      it(`${cached ? 'with the spend script cached (EVALSHA)' : 'with the script cache flushed (NOSCRIPT, then EVAL after the deadline)'}: the retry is refused as already-spent`, async () => {
        const client = await sharedClient(freezable().url);
        const namespace = ns();
        // Two ledgers on one connection: the quick one is refused during the sleep, the patient one
        // checks afterwards, its commands ordered after the refused spend's by the connection itself.
        const quick = new RedisLedger({ client, namespace, timeoutMs: 100 });
        const patient = new RedisLedger({ client, namespace, timeoutMs: 60_000 });
        const now = Date.now();
        const id = randomUUID();
        const control = randomUUID();
        await patient.issue(id, 'alice', now + 60_000, now);
        await patient.issue(control, 'alice', now + 60_000, now);
        expect(await patient.spend(randomUUID(), now)).toBe('unknown'); // the spend script is now cached
        if (!cached) await client.sendCommand(['SCRIPT', 'FLUSH']);
        const events: string[] = [];
        const woke = client.sendCommand(['DEBUG', 'SLEEP', '2']).then(() => events.push('redis woke'));
        const refused = rejection(quick.spend(id, now + 1)).then((e) => {
          events.push('spend refused');
          return e;
        });
        expectUnavailable(await refused);
        await woke;
        expect(events).toEqual(['spend refused', 'redis woke']);
        expect(await patient.spend(id, now + 2)).toBe('already-spent');
        expect(await client.get(`mcp-confirm:{${namespace}}:jti:${id}`)).toBe('s|');
        // Control: the confirmation the sleep never touched spends once.
        expect(await patient.spend(control, now + 3)).toBe('spent');
        await Promise.all([quick.close(), patient.close()]);
      });
    }
  });

  it('works with an existing client, which close() leaves open', async () => {
    const client = await rawClient();
    const ledger = new RedisLedger({ client, namespace: ns() });
    const jti = randomUUID();
    await ledger.issue(jti, 'alice', Date.now() + 60_000);
    expect(await ledger.spend(jti, Date.now())).toBe('spent');
    await ledger.close();
    await ledger.close();
    expect(client.isOpen).toBe(true);
    expectUnavailable(await rejection(ledger.spend(jti, Date.now())));
    await client.close();
  });

  it('refuses bad options with TypeError or RangeError', () => {
    const client = fakeClient(async () => 'unknown');
    expect(() => new RedisLedger({})).toThrow(TypeError);
    expect(() => new RedisLedger({ url: 'redis://127.0.0.1:1', client })).toThrow(TypeError);
    expect(() => new RedisLedger({ url: 'http://127.0.0.1:6379' })).toThrow(TypeError);
    expect(() => new RedisLedger({ url: 'not a url' })).toThrow(TypeError);
    expect(() => new RedisLedger({ client, namespace: '' })).toThrow(RangeError);
    expect(() => new RedisLedger({ client, namespace: 'a{b}' })).toThrow(RangeError);
    expect(() => new RedisLedger({ client, namespace: 'a\nb' })).toThrow(RangeError);
    expect(() => new RedisLedger({ client, timeoutMs: 0 })).toThrow(RangeError);
    expect(() => new RedisLedger({ client, maxTotal: -1 })).toThrow(RangeError);
    expect(() => new RedisLedger({ client, clockSkewMs: -5 })).toThrow(RangeError);
  });

  it('refuses non-finite times with RangeError', async () => {
    const ledger = new RedisLedger({ client: fakeClient(async () => 'issued') });
    await expect(ledger.issue(randomUUID(), 'alice', Number.NaN)).rejects.toBeInstanceOf(RangeError);
    await expect(ledger.spend(randomUUID(), Number.NaN)).rejects.toBeInstanceOf(RangeError);
  });

  describe('fails closed (spend-4)', () => {
    it('rejects with ERR_CONFIRM_LEDGER_UNAVAILABLE on an unexpected reply, never spent', async () => {
      for (const reply of [42, null, 'SPENT', 'ok', ['spent'], { spent: true }, '']) {
        const ledger = new RedisLedger({ client: fakeClient(async () => reply) });
        expectUnavailable(await rejection(ledger.spend(randomUUID(), Date.now())));
        expectUnavailable(await rejection(ledger.issue(randomUUID(), 'alice', Date.now() + 1_000)));
      }
    });

    it('rejects with ERR_CONFIRM_LEDGER_UNAVAILABLE when the client throws or rejects', async () => {
      const throwing = new RedisLedger({
        client: fakeClient(() => {
          throw new Error('boom');
        }),
      });
      expectUnavailable(await rejection(throwing.spend(randomUUID(), Date.now())));
      const rejecting = new RedisLedger({ client: fakeClient(async () => Promise.reject(new Error('ERR something'))) });
      expectUnavailable(await rejection(rejecting.spend(randomUUID(), Date.now())));
      expectUnavailable(await rejection(rejecting.issue(randomUUID(), 'alice', Date.now() + 1_000)));
    });

    it('rejects with ERR_CONFIRM_LEDGER_UNAVAILABLE when no answer comes within timeoutMs', async () => {
      const ledger = new RedisLedger({ client: fakeClient(() => new Promise(() => {})), timeoutMs: 150 });
      const started = Date.now();
      const [a, b] = await Promise.all([
        rejection(ledger.spend(randomUUID(), Date.now())),
        rejection(ledger.issue(randomUUID(), 'alice', Date.now() + 1_000)),
      ]);
      expectUnavailable(a);
      expectUnavailable(b);
      // Refused by the deadline, not before it.
      expect(((a as Error).cause as Error).name).toBe('DeadlineError');
      expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    });

    it('rejects a spend of a corrupted entry with ERR_CONFIRM_LEDGER_UNAVAILABLE', async () => {
      const namespace = ns();
      const ledger = await openLedger({ namespace });
      const raw = await rawClient();
      try {
        const jti = randomUUID();
        await ledger.issue(jti, 'alice', Date.now() + 60_000);
        const key = `mcp-confirm:{${namespace}}:jti:${jti}`;
        for (const value of ['o|not-a-number|alice', 'garbage']) {
          await raw.set(key, value);
          expectUnavailable(await rejection(ledger.spend(jti, Date.now())));
          // Left as it was (the spend script puts back what its SET … GET replaced).
          expect(await raw.get(key)).toBe(value);
        }
      } finally {
        await raw.close();
        await ledger.close();
      }
    });

    it('open() rejects with ERR_CONFIRM_LEDGER_UNAVAILABLE when nothing listens, within connectTimeoutMs', async () => {
      const server = startRedis();
      signalRedis(server, 'SIGKILL');
      await waitPortClosed(server.port);
      const error = await rejection(RedisLedger.open({ url: server.url, connectTimeoutMs: 300 }));
      expectUnavailable(error);
      expect(((error as Error).cause as Error).name).toBe('DeadlineError');
    });

    describe('with its own redis-server', () => {
      const servers: OwnRedis[] = [];
      afterAll(() => {
        for (const s of servers) {
          signalRedis(s, 'SIGCONT');
          signalRedis(s, 'SIGKILL');
        }
      });

      it('rejects spend and issue at once when the server is killed, and recovers when it is back on the same port', async () => {
        const first = startRedis();
        servers.push(first);
        const ledger = await RedisLedger.open({ url: first.url, namespace: ns(), timeoutMs: 1_000 });
        try {
          const jti = randomUUID();
          await ledger.issue(jti, 'alice', Date.now() + 60_000);

          signalRedis(first, 'SIGKILL');
          await waitPortClosed(first.port);
          // At once: refused by the closed connection (no offline queue), not by the deadline.
          for (const error of [
            await rejection(ledger.spend(jti, Date.now())),
            await rejection(ledger.issue(randomUUID(), 'alice', Date.now() + 60_000)),
          ]) {
            expectUnavailable(error);
            expect(((error as Error).cause as Error).name).not.toBe('DeadlineError');
          }

          const second = startRedis(first.port);
          servers.push(second);
          // Until it has reconnected, by order: only the test's own timeout bounds it (a hang).
          await until(() => ledger.isReady);
          expect(ledger.isReady).toBe(true);
          // No persistence: the restarted server forgot the entry, so it is refused as unknown.
          expect(await ledger.spend(jti, Date.now())).toBe('unknown');
          const fresh = randomUUID();
          await ledger.issue(fresh, 'alice', Date.now() + 60_000);
          expect(await ledger.spend(fresh, Date.now())).toBe('spent');
        } finally {
          await ledger.close();
        }
      });

      it('rejects within timeoutMs while the server hangs, and works again when it resumes', async () => {
        const server = startRedis();
        servers.push(server);
        const ledger = await RedisLedger.open({ url: server.url, namespace: ns(), timeoutMs: 300 });
        try {
          const jti = randomUUID();
          await ledger.issue(jti, 'alice', Date.now() + 60_000);
          signalRedis(server, 'SIGSTOP');
          const started = Date.now();
          const errors = await Promise.all([
            rejection(ledger.spend(jti, Date.now())),
            rejection(ledger.issue(randomUUID(), 'alice', Date.now() + 60_000)),
          ]);
          // Refused while the server is still stopped, by the deadline and not before it.
          for (const e of errors) {
            expectUnavailable(e);
            expect(((e as Error).cause as Error).name).toBe('DeadlineError');
          }
          expect(Date.now() - started).toBeGreaterThanOrEqual(290);
          signalRedis(server, 'SIGCONT');
          // The spend reached Redis before the deadline and ran once it resumed: the
          // confirmation is used up although the caller heard "unavailable" (the safe side).
          expect(await ledger.spend(jti, Date.now())).toBe('already-spent');
          const fresh = randomUUID();
          await ledger.issue(fresh, 'alice', Date.now() + 60_000);
          expect(await ledger.spend(fresh, Date.now())).toBe('spent');
        } finally {
          signalRedis(server, 'SIGCONT');
          await ledger.close();
        }
      });
    });
  });

  it('gives exactly one spent across 4 processes x 250 concurrent spends of one jti, every round (spend-1)', async () => {
    const namespace = ns();
    const issuer = await openLedger({ namespace });
    try {
      const rounds = await raceSpends({
        spec: { store: 'redis', url: redisUrl(), namespace },
        issuer,
        processes: 4,
        attempts: 250,
        rounds: 10,
      });
      expect(rounds).toHaveLength(10);
      for (const r of rounds) {
        expect(r.errors).toEqual([]);
        expect(r.outcomes).toEqual({ spent: 1, 'already-spent': 999, unknown: 0, expired: 0 });
      }
    } finally {
      await issuer.close();
    }
  });
});

describe('RedisLedger audit heads', () => {
  it('keeps a head in one hash of its own under the namespace (mcp-confirm:{NS}:ah:PATH: trail, seq, mac) without a TTL, and writes no other key', async () => {
    const namespace = ns();
    const ledger = await openLedger({ namespace });
    const raw = await rawClient();
    try {
      const head = { trail: 'A'.repeat(22), seq: 9, mac: 'B'.repeat(43) };
      await ledger.recordAuditHead('/log/{x}|trail.jsonl', head);
      const keys = await raw.keys(`mcp-confirm:{${namespace}}:*`);
      expect(keys).toEqual([`mcp-confirm:{${namespace}}:ah:/log/{x}|trail.jsonl`]);
      expect(await raw.hGetAll(keys[0]!)).toEqual({ trail: head.trail, seq: '9', mac: head.mac });
      expect(await raw.pTTL(keys[0]!)).toBe(-1);
      expect(await ledger.auditHead('/log/{x}|trail.jsonl')).toEqual(head);
      // A value that is not a head (another writer, corruption) fails closed.
      await raw.hSet(keys[0]!, 'seq', 'nine');
      expectUnavailable(await rejection(ledger.auditHead('/log/{x}|trail.jsonl')));
    } finally {
      await raw.close();
      await ledger.close();
    }
  });
});

describe('RedisLedger grants and plans', () => {
  const grant = (now: number, over: Record<string, unknown> = {}) => ({
    id: recordId(),
    audience: 'files',
    principal: 'ali:ce',
    tool: 'delete_file',
    scope: '{"path":"any"}',
    binding: 'pid|1',
    summary: 'any file',
    policyDigest: slotKey(),
    approver: 'client',
    maxUses: 3,
    createdAtMs: now,
    expiresAtMs: now + 30_000,
    ...over,
  });
  const plan = (now: number, calls = 2) => ({
    id: recordId(),
    audience: 'files',
    principal: 'ali:ce',
    binding: 'pid|1',
    slots: Array.from({ length: calls }, (_, i) => ({ key: slotKey(), tool: 'delete_file', identity: `{"i":${i}}` })),
    approver: 'ann',
    createdAtMs: now,
    expiresAtMs: now + 30_000,
  });

  it('keeps grants and plans under the namespace (gr:ID, gr-live, gr-p:PRINCIPAL, gr-b:BK, gr-ended, pl:ID, pl-live, pl-p:PRINCIPAL, pl-b:BK, pl-s:KEY; BK the digest of the principal and binding) with TTLs of the remaining lifetime plus clock skew, zsets never shorter', async () => {
    const namespace = ns();
    const ledger = await openLedger({ namespace, clockSkewMs: 10_000 });
    const raw = await rawClient();
    const k = (name: string): string => `mcp-confirm:{${namespace}}:${name}`;
    // The bound's key of the principal `ali:ce` and the binding `pid|1`: SHA-256 of the JSON of the two.
    const bk = createHash('sha256').update('["ali:ce","pid|1"]').digest('base64url');
    try {
      const now = Date.now();
      const [j1, j2] = [randomUUID(), randomUUID()];
      await ledger.issue(j1, 'ali:ce', now + 60_000, now);
      await ledger.issue(j2, 'ali:ce', now + 60_000, now);
      const g = grant(now);
      const p = plan(now);
      expect(await ledger.spendGranting(j1, now, g)).toEqual({ spend: 'spent', created: 'created' });
      expect(await ledger.spendPlanning(j2, now, p)).toEqual({ spend: 'spent', created: 'created' });
      expect((await raw.keys(k('*'))).sort()).toEqual(
        [
          `jti:${j1}`,
          `jti:${j2}`,
          'spent-order',
          `gr:${g.id}`,
          'gr-live',
          'gr-p:ali:ce',
          `gr-b:${bk}`,
          `pl:${p.id}`,
          'pl-live',
          'pl-p:ali:ce',
          `pl-b:${bk}`,
          ...p.slots.map((slot) => `pl-s:${slot.key}`),
        ]
          .map(k)
          .sort(),
      );
      // The ledger's own keys are as a plain spend leaves them.
      expect(await raw.get(k(`jti:${j1}`))).toBe('s|');
      expect(await raw.hGetAll(k(`gr:${g.id}`))).toEqual({
        id: g.id,
        principal: 'ali:ce',
        aud: 'files',
        tool: 'delete_file',
        scope: g.scope,
        binding: 'pid|1',
        summary: 'any file',
        policy: g.policyDigest,
        approver: 'client',
        max: '3',
        left: '2',
        created: String(now),
        exp: String(now + 30_000),
        revoked: '0',
        bk,
      });
      const ttl = await raw.pTTL(k(`gr:${g.id}`));
      expect(ttl).toBeGreaterThan(39_000);
      expect(ttl).toBeLessThanOrEqual(40_000);
      for (const z of ['gr-live', 'gr-p:ali:ce', `gr-b:${bk}`]) {
        expect(await raw.zScore(k(z), g.id)).toBe(now + 30_000);
        expect(await raw.pTTL(k(z))).toBeGreaterThanOrEqual(ttl);
      }
      expect(await raw.hGetAll(k(`pl:${p.id}`))).toEqual({
        id: p.id,
        principal: 'ali:ce',
        aud: 'files',
        approver: 'ann',
        created: String(now),
        exp: String(now + 30_000),
        slots: '2',
        left: '2',
        binding: 'pid|1',
        bk,
        'k:0': p.slots[0]!.key,
        't:0': 'delete_file',
        'i:0': '{"i":0}',
        [`x:${p.slots[0]!.key}`]: '0',
        'k:1': p.slots[1]!.key,
        't:1': 'delete_file',
        'i:1': '{"i":1}',
        [`x:${p.slots[1]!.key}`]: '1',
      });
      for (const z of ['pl-live', 'pl-p:ali:ce', `pl-b:${bk}`, `pl-s:${p.slots[0]!.key}`]) {
        expect(await raw.zScore(k(z), p.id)).toBe(now + 30_000);
        expect(await raw.pTTL(k(z))).toBeGreaterThanOrEqual(ttl);
      }
      // A used-up grant leaves the live zsets for gr-ended, its hash kept (to say why a take is refused).
      await ledger.takeGrantUse(g.id, now + 1);
      await ledger.takeGrantUse(g.id, now + 1);
      expect(await raw.exists([k('gr-live'), k('gr-p:ali:ce'), k(`gr-b:${bk}`)])).toBe(0);
      expect(await raw.zScore(k('gr-ended'), g.id)).toBe(now + 30_000);
      expect(await raw.pTTL(k('gr-ended'))).toBeGreaterThanOrEqual(ttl);
      expect(await raw.hGet(k(`gr:${g.id}`), 'left')).toBe('0');
      // A plan whose last slot is used is deleted, with every key that counted it.
      await ledger.takePlanSlot(p.slots[0]!.key, now + 1);
      expect(await raw.hGet(k(`pl:${p.id}`), 'left')).toBe('1');
      expect(await raw.hExists(k(`pl:${p.id}`), `x:${p.slots[0]!.key}`)).toBe(0);
      await ledger.takePlanSlot(p.slots[1]!.key, now + 1);
      expect((await raw.keys(k('*'))).sort()).toEqual(
        [`jti:${j1}`, `jti:${j2}`, 'spent-order', `gr:${g.id}`, 'gr-ended'].map(k).sort(),
      );
    } finally {
      await raw.close();
      await ledger.close();
    }
  });

  it("runs the ledger's spend script, byte for byte, as a local function of the spendGranting and spendPlanning scripts", () => {
    const prefix = 'mcp-confirm:{x}:';
    const spend = spendScript(prefix, 100_000);
    expect(
      spendGrantingScript(prefix, 100_000, { maxGrantsPerPrincipal: 16, maxGrants: 10_000 }).startsWith(
        `\nlocal function spend()\n${spend}\nend\n`,
      ),
    ).toBe(true);
    expect(
      spendPlanningScript(prefix, 100_000, { maxPlansPerPrincipal: 16, maxPlans: 10_000 }).startsWith(
        `\nlocal function spend()\n${spend}\nend\n`,
      ),
    ).toBe(true);
  });

  it('reloads its grant and plan scripts after SCRIPT FLUSH (NOSCRIPT falls back to EVAL)', async () => {
    const ledger = await openLedger();
    const raw = await rawClient();
    try {
      const now = Date.now();
      const jti = randomUUID();
      await ledger.issue(jti, 'ali:ce', now + 60_000, now);
      await raw.scriptFlush();
      const g = grant(now);
      expect(await ledger.spendGranting(jti, now, g)).toEqual({ spend: 'spent', created: 'created' });
      await raw.scriptFlush();
      expect(await ledger.takeGrantUse(g.id, now + 1)).toMatchObject({ taken: true, usesLeft: 1 });
      await raw.scriptFlush();
      expect(await ledger.findGrants({ principal: 'ali:ce' }, now + 1)).toHaveLength(1);
    } finally {
      await raw.close();
      await ledger.close();
    }
  });

  describe('fails closed', () => {
    /** Every grant and plan method, called once. */
    const calls = (ledger: RedisLedger, now: number): Array<Promise<unknown>> => [
      ledger.spendGranting(randomUUID(), now, grant(now)),
      ledger.findGrants({}, now),
      ledger.findGrants({ principal: 'ali:ce' }, now),
      ledger.takeGrantUse(recordId(), now),
      ledger.revokeGrant(recordId(), now),
      ledger.spendPlanning(randomUUID(), now, plan(now)),
      ledger.takePlanSlot(slotKey(), now),
    ];

    it('rejects every grant and plan method with ERR_CONFIRM_LEDGER_UNAVAILABLE on an unexpected reply', async () => {
      for (const reply of [
        42,
        null,
        'SPENT',
        'ok',
        ['spent'],
        { spent: true },
        '',
        'spent|maybe',
        'unknown|created',
        'taken|x|y',
        '{"a":1}',
      ]) {
        const ledger = new RedisLedger({ client: fakeClient(async () => reply) });
        for (const call of calls(ledger, Date.now())) expectUnavailable(await rejection(call));
      }
    });

    it('rejects every grant and plan method with ERR_CONFIRM_LEDGER_UNAVAILABLE when the client throws, rejects or never answers', async () => {
      const throwing = new RedisLedger({
        client: fakeClient(() => {
          throw new Error('boom');
        }),
      });
      const rejecting = new RedisLedger({ client: fakeClient(async () => Promise.reject(new Error('ERR something'))) });
      const silent = new RedisLedger({ client: fakeClient(() => new Promise(() => {})), timeoutMs: 100 });
      for (const ledger of [throwing, rejecting, silent])
        for (const call of calls(ledger, Date.now())) expectUnavailable(await rejection(call));
    });

    it('rejects a take of a corrupted grant (a count, an expiry, a revoked flag no store writes) with ERR_CONFIRM_LEDGER_UNAVAILABLE, never a use', async () => {
      const namespace = ns();
      const ledger = await openLedger({ namespace });
      const raw = await rawClient();
      try {
        const now = Date.now();
        const jti = randomUUID();
        await ledger.issue(jti, 'ali:ce', now + 60_000, now);
        const g = grant(now);
        await ledger.spendGranting(jti, now, g);
        await raw.hSet(`mcp-confirm:{${namespace}}:gr:${g.id}`, 'left', 'many');
        expectUnavailable(await rejection(ledger.takeGrantUse(g.id, now + 1)));
        // Records no store writes (found by the attack review): each refused, never a use.
        const corruptions: [string, string | null][] = [
          ['revoked', null],
          ['revoked', 'yes'],
          ['left', '1e9'],
          ['left', '0x10'],
          ['left', '3'], // above maxUses - 1 is still <= max; 4 is above max
          ['left', '4'],
          ['exp', `${now + 30_000}.5`],
        ];
        for (const [field, value] of corruptions) {
          const j = randomUUID();
          await ledger.issue(j, 'ali:ce', now + 60_000, now);
          const c = grant(now);
          await ledger.spendGranting(j, now, c);
          const key = `mcp-confirm:{${namespace}}:gr:${c.id}`;
          if (value === null) await raw.hDel(key, field);
          else await raw.hSet(key, field, value);
          if (field === 'left' && value === '3') {
            // control: a count within maxUses is taken
            expect(await ledger.takeGrantUse(c.id, now + 1)).toEqual({
              taken: true,
              usesLeft: 2,
              expiresAtMs: c.expiresAtMs,
            });
            continue;
          }
          expectUnavailable(await rejection(ledger.takeGrantUse(c.id, now + 1)));
        }
        // control: an untouched grant gives its use
        const j = randomUUID();
        await ledger.issue(j, 'ali:ce', now + 60_000, now);
        const ok = grant(now);
        await ledger.spendGranting(j, now, ok);
        expect(await ledger.takeGrantUse(ok.id, now + 1)).toEqual({
          taken: true,
          usesLeft: 1,
          expiresAtMs: ok.expiresAtMs,
        });
      } finally {
        await raw.close();
        await ledger.close();
      }
    });

    it('rejects every grant and plan method at once when the server is killed (not by the deadline), nothing taken before', async () => {
      const server = startRedis();
      try {
        const ledger = await RedisLedger.open({ url: server.url, namespace: ns(), timeoutMs: 60_000 });
        try {
          const now = Date.now();
          const jti = randomUUID();
          await ledger.issue(jti, 'ali:ce', now + 60_000, now);
          const g = grant(now);
          await ledger.spendGranting(jti, now, g);
          signalRedis(server, 'SIGKILL');
          await waitPortClosed(server.port);
          for (const call of [...calls(ledger, now), ledger.takeGrantUse(g.id, now)]) {
            const error = await rejection(call);
            expectUnavailable(error);
            expect(((error as Error).cause as Error).name).not.toBe('DeadlineError');
          }
        } finally {
          await ledger.close();
        }
      } finally {
        signalRedis(server, 'SIGKILL');
      }
    });
  });

  for (const kind of ['grant', 'plan'] as const) {
    it(`gives ${kind === 'grant' ? "a grant's last use" : 'one plan slot'} to exactly one of 4 processes x 250 concurrent takes, every round`, async () => {
      const namespace = ns();
      const creator = await openLedger({ namespace });
      try {
        const rounds = await raceTakes({
          spec: { store: 'redis', url: redisUrl(), namespace },
          creator,
          kind,
          processes: 4,
          attempts: 250,
          rounds: 5,
        });
        expect(rounds).toHaveLength(5);
        for (const r of rounds) {
          expect(r.errors).toEqual([]);
          expect(r.taken).toBe(1);
          expect(r.refused).toEqual(kind === 'grant' ? { exhausted: 999 } : { none: 999 });
        }
      } finally {
        await creator.close();
      }
    });
  }
});
