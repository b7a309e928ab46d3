import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import type { Ledger } from '../../src/store/ledger.js';
import { POSTGRES_SCHEMA_VERSION, PostgresStore } from '../../src/store/postgres.js';
import { startPgWireProxy } from '../helpers/pgWireProxy.js';
import { expectUnavailable, rejection } from '../helpers/rejections.js';
import { grantStoreContract } from './grantContract.js';
import { raceSpends, raceTakes } from './race.js';
import { ledgerContract, type HeldStore } from './ledgerContract.js';
import { freshSchema, openStore, pgUrl, rawClient } from './postgresServer.js';

const TTL = 300_000;

/** The test's own connections (lock holders), closed at the end. */
const clients: Array<Awaited<ReturnType<typeof rawClient>>> = [];
afterAll(async () => {
  await Promise.all(clients.splice(0).map((c) => c.end().catch(() => {})));
});

const schemaOf = new WeakMap<Ledger, string>();

/**
 * Held = the store's ledger tables locked (`LOCK TABLE … IN ACCESS EXCLUSIVE MODE`) by a
 * transaction of the test's own connection until released: every later step of the store waits for
 * the lock. The store drops its connection at the deadline, before its COMMIT, so the server rolls
 * the refused step back once it gets the lock: nothing refused is applied later.
 */
const held: HeldStore = {
  make: async ({ timeoutMs }) => {
    const schema = freshSchema();
    const store = await openStore({ schema, timeoutMs });
    schemaOf.set(store, schema);
    return store;
  },
  sibling: async (of, { timeoutMs }) => {
    const schema = schemaOf.get(of)!;
    const store = await openStore({ schema, timeoutMs });
    schemaOf.set(store, schema);
    return store;
  },
  hold: async (ledger) => {
    const schema = schemaOf.get(ledger)!;
    const client = await rawClient();
    clients.push(client);
    await client.query('BEGIN');
    await client.query(`LOCK TABLE ${schema}.ledger, ${schema}.ledger_counts IN ACCESS EXCLUSIVE MODE`);
    return {
      release: async () => {
        await client.query('COMMIT');
        await client.end();
      },
    };
  },
  // The lock is held until released, so any deadline passes while held.
  shortTimeoutMs: 200,
  refusedCallsAppliedLater: false,
};

ledgerContract('PostgresStore', (bounds) => openStore({ ...bounds }), { held });
grantStoreContract('PostgresStore', (bounds) => openStore({ ...bounds }));

describe('PostgresStore', () => {
  const open: PostgresStore[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
  });
  const keep = (s: PostgresStore): PostgresStore => (open.push(s), s);

  it('reaches the PostgreSQL at PG_URL (set by the test runner) and creates its schema', async () => {
    const store = keep(await openStore());
    expect(store.isReady).toBe(true);
    expect(store.kind).toBe('postgres');
    expect(store.shared).toBe(true);
    const client = await rawClient();
    clients.push(client);
    const v = await client.query(`SELECT value FROM ${store.schema}.meta WHERE key = 'schema_version'`);
    expect(v.rows).toEqual([{ value: String(POSTGRES_SCHEMA_VERSION) }]);
  });

  it('creates a new schema once when eight stores open it together (under the advisory lock)', async () => {
    const schema = freshSchema();
    const stores = await Promise.all(Array.from({ length: 8 }, () => openStore({ schema })));
    stores.forEach(keep);
    const jti = randomUUID();
    await stores[0]!.issue(jti, 'alice', Date.now() + TTL);
    const outcomes = await Promise.all(stores.map((s) => s.spend(jti, Date.now())));
    expect(outcomes.filter((o) => o === 'spent')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'already-spent')).toHaveLength(7);
  });

  it('refuses a schema newer than it knows with ERR_CONFIG_STORE_SCHEMA; the same schema at its version opens', async () => {
    const schema = freshSchema();
    keep(await openStore({ schema }));
    // Control: a second store opens the schema at this version.
    keep(await openStore({ schema }));
    const client = await rawClient();
    clients.push(client);
    await client.query(`UPDATE ${schema}.meta SET value = $1 WHERE key = 'schema_version'`, [
      String(POSTGRES_SCHEMA_VERSION + 1),
    ]);
    const error = await rejection(openStore({ schema }));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).code).toBe('ERR_CONFIG_STORE_SCHEMA');
    expect((error as Error).message).toContain('newer');
    // A store created without waiting refuses its calls as unavailable (the schema error as the cause).
    const lazy = keep(await PostgresStore.create({ url: pgUrl(), schema }));
    const refused = await rejection(lazy.spend(randomUUID(), Date.now()));
    expectUnavailable(refused);
    expect(((refused as Error).cause as ConfigError).code).toBe('ERR_CONFIG_STORE_SCHEMA');
  });

  it('with createSchema false refuses a missing schema with ERR_CONFIG_STORE_SCHEMA, creating nothing; after init it opens', async () => {
    const schema = freshSchema();
    const error = await rejection(openStore({ schema, createSchema: false }));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).code).toBe('ERR_CONFIG_STORE_SCHEMA');
    const client = await rawClient();
    clients.push(client);
    const none = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    expect(none.rows).toHaveLength(0);
    expect(await PostgresStore.init({ url: pgUrl(), schema })).toBe(POSTGRES_SCHEMA_VERSION);
    const store = keep(await openStore({ schema, createSchema: false }));
    const jti = randomUUID();
    await store.issue(jti, 'alice', Date.now() + TTL);
    expect(await store.spend(jti, Date.now())).toBe('spent');
  });

  it('refuses every call with ERR_CONFIRM_LEDGER_UNAVAILABLE when nothing listens, never naming the password', async () => {
    // A port nothing listens on: the runner's server port + 1 is not ours; use a reserved low port instead.
    const url = 'postgres://mcp:S3cret-Passw0rd@127.0.0.1:9/db';
    const store = keep(await PostgresStore.create({ url, schema: freshSchema(), timeoutMs: 5_000 }));
    expect(store.isReady).toBe(false);
    const errors = [
      await rejection(store.issue(randomUUID(), 'alice', Date.now() + TTL)),
      await rejection(store.spend(randomUUID(), Date.now())),
      await rejection(store.ready()),
    ];
    for (const e of errors) {
      expectUnavailable(e);
      let text = '';
      for (let c: unknown = e; c instanceof Error; c = c.cause) text += `${c.message} ${c.stack ?? ''} `;
      expect(text).not.toContain('S3cret-Passw0rd');
    }
    const opening = await rejection(PostgresStore.open({ url, schema: freshSchema(), connectTimeoutMs: 5_000 }));
    expectUnavailable(opening);
  });

  it('refuses bad options naming the option, never echoing the URL', async () => {
    for (const url of ['redis://u:hunter2@h/0', 'not a url hunter2']) {
      const e = await rejection(PostgresStore.create({ url }));
      expect(e).toBeInstanceOf(TypeError);
      expect((e as Error).message).toBe('url must be a postgres:// or postgresql:// URL');
    }
    for (const schema of ['', 'Upper', 'a-b', 'x'.repeat(64), 'a;drop']) {
      const e = await rejection(PostgresStore.create({ url: pgUrl(), schema }));
      expect(e).toBeInstanceOf(RangeError);
      expect((e as Error).message).toContain('schema');
    }
    await expect(PostgresStore.create({ url: pgUrl(), timeoutMs: 0 })).rejects.toThrow(/timeoutMs/);
    // Control: a postgresql:// URL and a valid schema are accepted.
    keep(await PostgresStore.create({ url: pgUrl().replace(/^postgres:/, 'postgresql:'), schema: freshSchema() }));
  });

  it('refuses a spend on a read-only connection with ERR_CONFIRM_LEDGER_UNAVAILABLE, spending nothing (control: a writable store spends it)', async () => {
    const schema = freshSchema();
    const writable = keep(await openStore({ schema }));
    const jti = randomUUID();
    await writable.issue(jti, 'alice', Date.now() + TTL);
    const readOnlyUrl = new URL(pgUrl());
    readOnlyUrl.searchParams.set('options', '-c default_transaction_read_only=on');
    const readOnly = keep(await openStore({ schema, url: readOnlyUrl.href }));
    for (const refused of [
      await rejection(readOnly.spend(jti, Date.now())),
      await rejection(readOnly.issue(randomUUID(), 'alice', Date.now() + TTL)),
    ]) {
      expectUnavailable(refused);
      // Refused by the server as a write in a read-only transaction (SQLSTATE 25006), not by anything else.
      expect(((refused as Error).cause as { code?: string }).code).toBe('25006');
    }
    expect(await writable.spend(jti, Date.now())).toBe('spent');
    expect(await readOnly.spend(jti, Date.now()).catch(() => 'refused')).toBe('refused');
  });

  it("refuses a spend whose connection is lost mid-call with ERR_CONFIRM_LEDGER_UNAVAILABLE, the process living on (the lost connection's error is heard), nothing spent (control: the next spend spends it)", async () => {
    // A proxy that cuts the connection as the spend's UPDATE is on its way: what a crashed server or a
    // reset network does to a connection the store holds. pg emits 'error' on that connection; unheard,
    // it would end the process.
    const proxy = await startPgWireProxy(Number(new URL(pgUrl()).port));
    try {
      const store = keep(await openStore({ url: proxy.url }));
      const jti = randomUUID();
      await store.issue(jti, 'alice', Date.now() + TTL);
      let cut = 0;
      proxy.setHook((m) => (m.type === 'P' && /SET spent = true/.test(m.text) && cut++ === 0 ? 'drop' : 'forward'));
      expectUnavailable(await rejection(store.spend(jti, Date.now())));
      expect(cut).toBe(1);
      expect(await store.spend(jti, Date.now())).toBe('spent');
    } finally {
      await proxy.close();
    }
  });

  it('refuses a call whose new connection is terminated in the same chunk as the answer that opened it with ERR_CONFIRM_LEDGER_UNAVAILABLE, the process living on (control: the next call works)', async () => {
    // The proxy holds the new connection's ReadyForQuery until the server has terminated that backend
    // (pg_terminate_backend), then delivers both at once: pg hands the connection out and reads the
    // FATAL before the call could listen to it.
    const proxy = await startPgWireProxy(Number(new URL(pgUrl()).port));
    const admin = await rawClient();
    try {
      const store = keep(await PostgresStore.create({ url: proxy.url, schema: freshSchema(), timeoutMs: 30_000 }));
      const pids = new Map<number, string>();
      let terminated: Promise<unknown> | undefined;
      proxy.setHook((m) => {
        if (m.direction !== 'backend') return 'forward';
        if (m.type === 'K') pids.set(m.connection, m.text);
        if (m.type === 'Z' && terminated === undefined) {
          terminated = admin.query('SELECT pg_terminate_backend($1)', [Number(pids.get(m.connection))]);
          return 'hold';
        }
        return 'forward';
      });
      expectUnavailable(await rejection(store.issue(randomUUID(), 'alice', Date.now() + TTL)));
      expect(await terminated).toMatchObject({ rows: [{ pg_terminate_backend: true }] });
      const jti = randomUUID();
      await store.issue(jti, 'alice', Date.now() + TTL);
      expect(await store.spend(jti, Date.now())).toBe('spent');
    } finally {
      await admin.end();
      await proxy.close();
    }
  });

  it('refuses calls after close with ERR_CONFIRM_LEDGER_UNAVAILABLE; close is idempotent', async () => {
    const store = await openStore();
    await store.close();
    await store.close();
    expectUnavailable(await rejection(store.spend(randomUUID(), Date.now())));
  });
});

describe('PostgresStore across processes', () => {
  it('gives exactly one spent across 4 processes x 250 concurrent spends of one jti, every round (spend-1)', async () => {
    const schema = freshSchema();
    const issuer = await openStore({ schema });
    try {
      const rounds = await raceSpends({
        spec: { store: 'postgres', url: pgUrl(), schema },
        issuer,
        processes: 4,
        attempts: 250,
        rounds: 5,
      });
      expect(rounds).toHaveLength(5);
      for (const r of rounds) {
        expect(r.errors).toEqual([]);
        expect(r.outcomes).toEqual({ spent: 1, 'already-spent': 999, unknown: 0, expired: 0 });
      }
    } finally {
      await issuer.close();
    }
  });

  for (const kind of ['grant', 'plan'] as const) {
    it(`gives ${kind === 'grant' ? "a grant's last use" : 'one plan slot'} to exactly one of 4 processes x 250 concurrent takes, every round`, async () => {
      const schema = freshSchema();
      const creator = await openStore({ schema });
      try {
        const rounds = await raceTakes({
          spec: { store: 'postgres', url: pgUrl(), schema },
          creator,
          kind,
          processes: 4,
          attempts: 250,
          rounds: 3,
        });
        expect(rounds).toHaveLength(3);
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
