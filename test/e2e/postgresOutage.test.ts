/**
 * The PostgreSQL store when its database stops answering mid-flow: frozen (SIGSTOP) or stopped (fast
 * shutdown) between round 1 and round 2. The demo server with a PostgresStore on a PostgreSQL of this
 * file's own (scripts/start-postgres.sh), a real Client driving the rounds by hand. A round 2 then is
 * refused with ERR_CONFIRM_LEDGER_UNAVAILABLE and deletes nothing, other requests are answered, and
 * once the database answers again the same state is redeemed once (the refused spend left nothing behind).
 */
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDemoServer } from '../../src/demo/deleteFile.js';
import { KeyRing } from '../../src/state/keyRing.js';
import { PostgresStore } from '../../src/store/postgres.js';
import { ACCEPT, asked, connect, type Connected, type Reply } from '../helpers/harness.js';
import {
  freshSchema,
  rawClient,
  removePostgres,
  signalPostgres,
  startPostgres,
  waitPostgresGone,
  type OwnPostgres,
} from '../store/postgresServer.js';

let server: OwnPostgres;
let root: string;
const open: Array<{ close(): Promise<void> }> = [];

beforeAll(() => {
  server = startPostgres();
});
afterAll(async () => {
  await removePostgres(server);
});
beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-pg-outage-')));
  writeFileSync(join(root, 'cache.txt'), 'cache');
});
afterEach(async () => {
  signalPostgres(server, 'SIGCONT');
  await Promise.all(open.splice(0).map((o) => o.close().catch(() => {})));
  rmSync(root, { recursive: true, force: true });
});

/** A demo server on a new store of the own PostgreSQL, with a short deadline (the refusals come soon). */
async function demo(): Promise<Connected> {
  const store = await PostgresStore.open({ url: server.url, schema: freshSchema(), timeoutMs: 500 });
  open.push(store);
  const keys = await KeyRing.fromSpecs([KeyRing.generateSpec('k1')]);
  const connected = await connect((await createDemoServer({ roots: [root], keys, store })).factory);
  open.push(connected);
  return connected;
}

function expectRefused(reply: Reply, code: string): void {
  expect(reply.kind, JSON.stringify(reply)).toBe('result');
  if (reply.kind === 'result') expect(reply.text.startsWith(`[${code}]`), reply.text).toBe(true);
}

const round2 = (s: Connected, state: string): Promise<Reply> =>
  s.call('delete_file', { path: 'cache.txt' }, { inputResponses: ACCEPT, requestState: state });

describe('PostgreSQL store: the database stops answering between round 1 and round 2', () => {
  it('frozen (SIGSTOP): round 2 is refused with ERR_CONFIRM_LEDGER_UNAVAILABLE, nothing deleted, tools/list still answered; resumed (SIGCONT), the same state deletes once', async () => {
    const s = await demo();
    const { state } = asked(await s.call('delete_file', { path: 'cache.txt' }));
    signalPostgres(server, 'SIGSTOP');
    expectRefused(await round2(s, state), 'ERR_CONFIRM_LEDGER_UNAVAILABLE');
    expect(readFileSync(join(root, 'cache.txt'), 'utf8')).toBe('cache');
    // Other requests are answered meanwhile.
    expect((await s.client.listTools()).tools.map((t) => t.name)).toContain('delete_file');
    signalPostgres(server, 'SIGCONT');
    // The refused spend never committed: the confirmation is still outstanding and redeemed once.
    const after = await round2(s, state);
    expect(after).toMatchObject({ kind: 'result', isError: false });
    expect(existsSync(join(root, 'cache.txt'))).toBe(false);
    writeFileSync(join(root, 'cache.txt'), 'again');
    expectRefused(await round2(s, state), 'ERR_CONFIRM_SPENT');
    expect(readFileSync(join(root, 'cache.txt'), 'utf8')).toBe('again');
  });

  it('made read-only (default_transaction_read_only, reloaded): round 2 is refused with ERR_CONFIRM_LEDGER_UNAVAILABLE, nothing deleted; writable again, the same state deletes once', async () => {
    const s = await demo();
    const { state } = asked(await s.call('delete_file', { path: 'cache.txt' }));
    const admin = await rawClient(server.url);
    try {
      await admin.query('ALTER SYSTEM SET default_transaction_read_only = on');
      await admin.query('SELECT pg_reload_conf()');
      // The postmaster signals every backend when it reloads; a backend applies it before its next command.
      // Wait until a new session sees it (the postmaster has reloaded, so the store's backends were signalled).
      const probe = await rawClient(server.url);
      try {
        for (;;) {
          const r = await probe.query<{ default_transaction_read_only: string }>('SHOW default_transaction_read_only');
          if (r.rows[0]?.default_transaction_read_only === 'on') break;
          await new Promise((res) => setTimeout(res, 20));
        }
      } finally {
        await probe.end();
      }
      expectRefused(await round2(s, state), 'ERR_CONFIRM_LEDGER_UNAVAILABLE');
      expect(readFileSync(join(root, 'cache.txt'), 'utf8')).toBe('cache');
      expect((await s.client.listTools()).tools.map((t) => t.name)).toContain('delete_file');
    } finally {
      await admin.query('ALTER SYSTEM RESET default_transaction_read_only');
      await admin.query('SELECT pg_reload_conf()');
      await admin.end();
    }
    // Writable again (the reload reaches the store's sessions between statements): the same state deletes once.
    let after = await round2(s, state);
    for (
      let i = 0;
      i < 50 && after.kind === 'result' && after.text.startsWith('[ERR_CONFIRM_LEDGER_UNAVAILABLE]');
      i++
    ) {
      await new Promise((res) => setTimeout(res, 20));
      after = await round2(s, state);
    }
    expect(after).toMatchObject({ kind: 'result', isError: false });
    expect(existsSync(join(root, 'cache.txt'))).toBe(false);
  });

  it('stopped (fast shutdown): round 2 is refused with ERR_CONFIRM_LEDGER_UNAVAILABLE, nothing deleted; restarted in place, the same state deletes once', async () => {
    const s = await demo();
    const { state } = asked(await s.call('delete_file', { path: 'cache.txt' }));
    signalPostgres(server, 'SIGINT');
    await waitPostgresGone(server);
    expectRefused(await round2(s, state), 'ERR_CONFIRM_LEDGER_UNAVAILABLE');
    expectRefused(await s.call('delete_file', { path: 'cache.txt' }), 'ERR_CONFIRM_LEDGER_UNAVAILABLE');
    expect(readFileSync(join(root, 'cache.txt'), 'utf8')).toBe('cache');
    server = startPostgres(server.port, server.dataDir);
    // The pool replaces its dead connections: the first call after the restart may still meet one.
    let after = await round2(s, state);
    for (let i = 0; i < 20 && after.kind === 'result' && after.text.startsWith('[ERR_CONFIRM_LEDGER_UNAVAILABLE]'); i++)
      after = await round2(s, state);
    expect(after).toMatchObject({ kind: 'result', isError: false });
    expect(existsSync(join(root, 'cache.txt'))).toBe(false);
  });
});
