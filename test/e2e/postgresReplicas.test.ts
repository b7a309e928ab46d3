/**
 * Replicas sharing a PostgreSQL ledger: real `mcp-confirm` server processes (the built CLI,
 * `dist/cli/main.js`) over stdio with one key file and `--ledger postgres://…` (the runner's
 * PostgreSQL at PG_URL, a fresh `?schema=` per test). A missing PG_URL fails these tests, never skips them.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/client';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PROCESS_DEADLINE_MS } from '../helpers/deadlines.js';
import { ACCEPT, asked, callTool, MANUAL_CLIENT_OPTIONS, type Reply } from '../helpers/harness.js';
import { InPlaceStdioTransport, runProcess, stderrSays } from '../helpers/processes.js';
import { pgUrl } from '../store/postgresServer.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');

interface Replica {
  client: Client;
  pid: number;
  stderr: () => string;
}

let R: string;
let root: string;
let keys: string;
const replicas: Replica[] = [];

/** The runner's PostgreSQL with a fresh schema of this test (`?schema=`). */
function ledgerUrl(): string {
  const url = new URL(pgUrl());
  url.searchParams.set('schema', `e2e_${randomBytes(6).toString('hex')}`);
  return url.href;
}

async function spawnReplica(args: string[]): Promise<Replica> {
  const transport = new InPlaceStdioTransport({ command: process.execPath, args: [MAIN, ...args], stderr: 'pipe' });
  let err = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString('utf8');
  });
  const client = new Client({ name: 'postgres-replicas-test', version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
  try {
    await client.connect(transport);
  } catch (e) {
    throw new Error(`replica failed to connect: ${(e as Error).message}; its stderr: ${JSON.stringify(err)}`, {
      cause: e,
    });
  }
  if (transport.pid === null) throw new Error('replica has no pid');
  const replica = { client, pid: transport.pid, stderr: () => err };
  replicas.push(replica);
  return replica;
}

const round1 = (r: Replica, path: string): Promise<Reply> =>
  callTool(r.client, { name: 'delete_file', arguments: { path } });
const round2 = (r: Replica, path: string, state: string): Promise<Reply> =>
  callTool(r.client, { name: 'delete_file', arguments: { path }, inputResponses: ACCEPT, requestState: state });

function expectRefused(reply: Reply, code: string): void {
  expect(reply.kind, JSON.stringify(reply)).toBe('result');
  if (reply.kind !== 'result') return;
  expect(reply.isError).toBe(true);
  expect(reply.text.startsWith(`[${code}]`), reply.text).toBe(true);
}

function expectDeleted(reply: Reply, path: string, bytes: number): void {
  expect(reply).toMatchObject({
    kind: 'result',
    isError: false,
    text: `Deleted \`${join(root, path)}\` (${bytes} bytes).`,
  });
}

beforeAll(async () => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
  pgUrl(); // fails the file at once when PG_URL is not set
});

beforeEach(async () => {
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-pg-replicas-')));
  root = join(R, 'root');
  mkdirSync(root);
  writeFileSync(join(root, 'cache.txt'), 'cache');
  writeFileSync(join(root, 'thesis.txt'), 'thesis');
  const { stdout } = await promisify(execFile)(process.execPath, [MAIN, 'keygen', '--kid', 'k1'], {
    encoding: 'utf8',
    timeout: PROCESS_DEADLINE_MS,
  });
  keys = join(R, 'keys.json');
  writeFileSync(keys, stdout, { mode: 0o600 });
});

afterEach(async () => {
  const closing = replicas.splice(0);
  await Promise.all(closing.map((r) => r.client.close().catch(() => {})));
  for (const r of closing) {
    try {
      process.kill(r.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(R, { recursive: true, force: true });
});

describe('replicas sharing --ledger postgres://', () => {
  it('deletes once when round 1 is on replica A and round 2 on replica B; the replay is ERR_CONFIRM_SPENT on A and on B', async () => {
    const ledger = ledgerUrl();
    const common = ['--root', root, '--key-file', keys, '--ledger', ledger];
    const [a, b] = await Promise.all([spawnReplica(common), spawnReplica(common)]);
    const { state } = asked(await round1(a!, 'cache.txt'));
    // Control: the state asked on A is redeemed on B (the ledger is shared, the keys too).
    expectDeleted(await round2(b!, 'cache.txt', state), 'cache.txt', 5);
    expect(existsSync(join(root, 'cache.txt'))).toBe(false);
    // The file comes back under the same name: a replay on either replica deletes nothing.
    writeFileSync(join(root, 'cache.txt'), 'cache again');
    expectRefused(await round2(a!, 'cache.txt', state), 'ERR_CONFIRM_SPENT');
    expectRefused(await round2(b!, 'cache.txt', state), 'ERR_CONFIRM_SPENT');
    expect(readFileSync(join(root, 'cache.txt'), 'utf8')).toBe('cache again');
    for (const r of [a!, b!]) await stderrSays(r.stderr, 'ledger postgres');
  });

  it('case bind-1 across replicas: the state asked for cache.txt on A, moved onto thesis.txt and ./cache.txt on B, is ERR_CONFIRM_MISMATCH and stays unspent; control: it then deletes cache.txt once', async () => {
    const common = ['--root', root, '--key-file', keys, '--ledger', ledgerUrl()];
    const [a, b] = await Promise.all([spawnReplica(common), spawnReplica(common)]);
    const { state } = asked(await round1(a!, 'cache.txt'));
    expectRefused(await round2(b!, 'thesis.txt', state), 'ERR_CONFIRM_MISMATCH');
    expectRefused(await round2(b!, './cache.txt', state), 'ERR_CONFIRM_MISMATCH');
    expect(readFileSync(join(root, 'thesis.txt'), 'utf8')).toBe('thesis');
    expect(readFileSync(join(root, 'cache.txt'), 'utf8')).toBe('cache');
    // Control: unspent by the refusals, the state deletes its own file once, on either replica.
    expectDeleted(await round2(b!, 'cache.txt', state), 'cache.txt', 5);
    expectRefused(await round2(a!, 'cache.txt', state), 'ERR_CONFIRM_SPENT');
    expect(readFileSync(join(root, 'thesis.txt'), 'utf8')).toBe('thesis');
  });

  it('of 8 accepted round 2s of one state fired at once across two replicas, exactly one deletes; 7 are ERR_CONFIRM_SPENT', async () => {
    const common = ['--root', root, '--key-file', keys, '--ledger', ledgerUrl()];
    const rs = await Promise.all([spawnReplica(common), spawnReplica(common)]);
    const { state } = asked(await round1(rs[0]!, 'cache.txt'));
    const replies = await Promise.all(Array.from({ length: 8 }, (_, i) => round2(rs[i % 2]!, 'cache.txt', state)));
    const deleted = replies.filter((r) => r.kind === 'result' && !r.isError);
    const spent = replies.filter((r) => r.kind === 'result' && r.isError && r.text.startsWith('[ERR_CONFIRM_SPENT]'));
    expect(deleted).toHaveLength(1);
    expect(spent).toHaveLength(7);
    expect(existsSync(join(root, 'thesis.txt'))).toBe(true);
  });

  it('serves with a database nobody answers on, refusing with ERR_CONFIRM_LEDGER_UNAVAILABLE and deleting nothing, never printing the password', async () => {
    const down = 'postgres://mcp:Sekr1t-Pw-42@127.0.0.1:9/postgres';
    const r = await spawnReplica(['--root', root, '--key-file', keys, '--ledger', down]);
    expectRefused(await round1(r, 'cache.txt'), 'ERR_CONFIRM_LEDGER_UNAVAILABLE');
    expect(readFileSync(join(root, 'cache.txt'), 'utf8')).toBe('cache');
    await stderrSays(r.stderr, 'is not reachable yet');
    expect(r.stderr()).toContain('postgres://127.0.0.1:9/postgres');
    expect(r.stderr()).not.toContain('Sekr1t');
    // Control: the same command line with the runner's database asks.
    const ok = await spawnReplica(['--root', root, '--key-file', keys, '--ledger', ledgerUrl()]);
    expect(asked(await round1(ok, 'cache.txt')).state).not.toBe('');
  });

  it('store init creates the schema (exit 0, named with its version) and a server then serves from it; a schema newer than it knows is exit 2', async () => {
    const ledger = ledgerUrl();
    const init = await runProcess(process.execPath, [MAIN, 'store', 'init', '--ledger', ledger]);
    expect(init.status, init.stderr).toBe(0);
    expect(init.stdout).toMatch(/^schema e2e_[0-9a-f]+ at version 1 in postgres:\/\/127\.0\.0\.1:[0-9]+\/postgres\n$/);
    const r = await spawnReplica(['--root', root, '--key-file', keys, '--ledger', ledger]);
    const { state } = asked(await round1(r, 'cache.txt'));
    expectDeleted(await round2(r, 'cache.txt', state), 'cache.txt', 5);
    // A later mcp-confirm moved the schema on: this one refuses to serve from it.
    const schema = new URL(ledger).searchParams.get('schema')!;
    const pg = (await import('pg')).default;
    const client = new pg.Client({ connectionString: pgUrl() });
    await client.connect();
    try {
      await client.query(`UPDATE ${schema}.meta SET value = '99' WHERE key = 'schema_version'`);
    } finally {
      await client.end();
    }
    const refused = await runProcess(process.execPath, [MAIN, '--root', root, '--ledger', ledger]);
    expect(refused.status, refused.stderr).toBe(2);
    expect(refused.stderr).toContain('newer than this mcp-confirm knows');
  });
});
