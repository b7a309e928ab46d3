/**
 * A locked or frozen ledger store never stalls the server (case hard-1, BUG-18),
 * through real clients: the built CLI over stdio with `--ledger sqlite:DB`, and the
 * demo server over the in-memory transport with a SqliteLedger or a RedisLedger.
 *
 * Another process holds the SQLite write lock (`BEGIN IMMEDIATE`,
 * test/store/fixtures/holdWriteLock.cjs) until the test releases it; Redis is
 * frozen by `DEBUG SLEEP` on the ledger's own connection. Every claim is an order
 * of events (tools/list answered before round 1's outcome), never a duration.
 *
 * Needs `npm run build` first (the CLI test runs dist/cli/main.js).
 */
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { createClient } from 'redis';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { wrapStore, type ConfirmStore } from '../../src/store/confirmStore.js';
import { createDemoServer } from '../../src/demo/deleteFile.js';
import { RedisLedger } from '../../src/store/redis.js';
import { SqliteLedger } from '../../src/store/sqlite.js';
import {
  ACCEPT,
  asked,
  callTool,
  connect,
  MANUAL_CLIENT_OPTIONS,
  type Connected,
  type Reply,
} from '../helpers/harness.js';
import { signalRedis, startRedis, type OwnRedis } from '../store/redisServer.js';
import { holdWriteLock, type WriteLock } from '../store/sqliteLock.js';
import { InPlaceStdioTransport } from '../helpers/processes.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');

let R: string;
let root: string;
let db: string;
const cleanups: Array<() => Promise<unknown>> = [];

beforeEach(() => {
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-locked-')));
  root = join(R, 'allowed');
  mkdirSync(root);
  writeFileSync(join(root, 'cache.txt'), 'cache');
  db = join(R, 'ledger.db');
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  rmSync(R, { recursive: true, force: true });
});

function expectRefused(reply: Reply, code: string): void {
  expect(reply.kind, JSON.stringify(reply)).toBe('result');
  if (reply.kind === 'result') {
    expect(reply.isError).toBe(true);
    expect(reply.text.startsWith(`[${code}]`), reply.text).toBe(true);
  }
}

/** A store that reports when the server first calls `issue` (round 1 has reached the ledger). */
function watched(ledger: ConfirmStore): { ledger: ConfirmStore; issueCalled: Promise<void> } {
  let called!: () => void;
  const issueCalled = new Promise<void>((r) => (called = r));
  return {
    issueCalled,
    ledger: wrapStore(ledger, (method, run) => {
      if (method === 'issue') called();
      return run();
    }),
  };
}

async function lock(path: string): Promise<WriteLock> {
  const l = await holdWriteLock(path);
  cleanups.push(() => l.release());
  return l;
}

async function serveInMemory(ledger: ConfirmStore): Promise<Connected> {
  const built = await createDemoServer({ roots: [root], store: ledger });
  const c = await connect(built.factory);
  cleanups.push(() => c.close());
  return c;
}

describe('hard-1: a locked SQLite ledger', () => {
  it('hard-1: with --ledger sqlite:DB held in BEGIN IMMEDIATE by another process, tools/list answers before round 1, which is refused with ERR_CONFIRM_LEDGER_UNAVAILABLE; nothing deleted; after the lock the same call works', async () => {
    const transport = new InPlaceStdioTransport({
      command: process.execPath,
      args: [MAIN, '--root', root, '--ledger', `sqlite:${db}`],
      stderr: 'pipe',
    });
    const client = new Client({ name: 'hard-1', version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
    await client.connect(transport);
    cleanups.push(() => client.close());
    expect(existsSync(db)).toBe(true); // the server made the file and its schema at start-up

    const holder = await lock(db);
    const events: string[] = [];
    const round1 = callTool(client, { name: 'delete_file', arguments: { path: 'cache.txt' } }).then((r) => {
      events.push('round 1 answered');
      return r;
    });
    // As in the case, tools/list 100 ms after round 1 (a spacing only: the assertion is the order below).
    await new Promise((r) => setTimeout(r, 100));
    const tools = await client.listTools();
    events.push('tools/list answered');
    expect(tools.tools.map((t) => t.name)).toContain('delete_file');
    const refused = await round1;
    await holder.release();

    expect(events).toEqual(['tools/list answered', 'round 1 answered']);
    expectRefused(refused, 'ERR_CONFIRM_LEDGER_UNAVAILABLE');
    expect(readFileSync(join(root, 'cache.txt'), 'utf8')).toBe('cache');

    // Control: the lock is gone, the same call asks, and the accepted retry deletes once.
    const { state } = asked(await callTool(client, { name: 'delete_file', arguments: { path: 'cache.txt' } }));
    const done = await callTool(client, {
      name: 'delete_file',
      arguments: { path: 'cache.txt' },
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(done).toMatchObject({ kind: 'result', isError: false });
    expect(existsSync(join(root, 'cache.txt'))).toBe(false);
  });

  it('hard-1: with a SqliteLedger whose deadline outlasts the lock, tools/list answers while round 1 waits in the ledger; round 1 asks once the lock ends, round 2 deletes once', async () => {
    const sqlite = new SqliteLedger({ path: db, timeoutMs: 60_000 });
    const { ledger, issueCalled } = watched(sqlite);
    const c = await serveInMemory(ledger);
    const holder = await lock(db);

    const events: string[] = [];
    const round1 = c.call('delete_file', { path: 'cache.txt' }).then((r) => {
      events.push('round 1 answered');
      return r;
    });
    await issueCalled; // round 1 now waits on the lock
    const tools = await c.client.listTools();
    events.push('tools/list answered');
    expect(tools.tools.map((t) => t.name)).toContain('delete_file');
    expect(events).toEqual(['tools/list answered']); // round 1 still waiting
    expect(readFileSync(join(root, 'cache.txt'), 'utf8')).toBe('cache');

    await holder.release();
    const { state } = asked(await round1);
    expect(events).toEqual(['tools/list answered', 'round 1 answered']);
    const done = await c.call('delete_file', { path: 'cache.txt' }, { inputResponses: ACCEPT, requestState: state });
    expect(done).toMatchObject({ kind: 'result', isError: false });
    expect(existsSync(join(root, 'cache.txt'))).toBe(false);
    expectRefused(
      await c.call('delete_file', { path: 'cache.txt' }, { inputResponses: ACCEPT, requestState: state }),
      'ERR_CONFIRM_SPENT',
    );
  });
});

describe('a frozen Redis ledger (DEBUG SLEEP)', () => {
  let server: OwnRedis | undefined;
  afterAll(() => {
    if (server !== undefined) signalRedis(server, 'SIGKILL');
  });

  it('tools/list answers while round 1 waits on a Redis frozen by DEBUG SLEEP; round 1 asks once Redis wakes, round 2 deletes once', async () => {
    server ??= startRedis(); // our own server: freezing the shared one would stall other test files
    const client = createClient({ url: server.url, disableOfflineQueue: true, commandOptions: { timeout: 0 } });
    client.on('error', () => {});
    await client.connect();
    cleanups.push(() => client.close());
    const redis = new RedisLedger({ client, namespace: `locked-${Date.now()}`, timeoutMs: 60_000 });
    const { ledger, issueCalled } = watched(redis);
    const c = await serveInMemory(ledger);

    const events: string[] = [];
    // On the ledger's own connection: round 1's script reaches Redis after the sleep began.
    const woke = client.sendCommand(['DEBUG', 'SLEEP', '2']).then(() => events.push('redis woke'));
    const round1 = c.call('delete_file', { path: 'cache.txt' }).then((r) => {
      events.push('round 1 answered');
      return r;
    });
    await issueCalled;
    const tools = await c.client.listTools();
    events.push('tools/list answered');
    expect(tools.tools.map((t) => t.name)).toContain('delete_file');
    const { state } = asked(await round1);
    await woke;
    expect(events).toEqual(['tools/list answered', 'redis woke', 'round 1 answered']);
    expect(readFileSync(join(root, 'cache.txt'), 'utf8')).toBe('cache');
    const done = await c.call('delete_file', { path: 'cache.txt' }, { inputResponses: ACCEPT, requestState: state });
    expect(done).toMatchObject({ kind: 'result', isError: false });
    expect(existsSync(join(root, 'cache.txt'))).toBe(false);
  });
});
