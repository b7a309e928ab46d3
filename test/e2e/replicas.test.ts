/**
 * Replicas: several real `mcp-confirm` server processes (the built CLI,
 * `dist/cli/main.js`) behind one client-visible deployment, over stdio.
 *
 * - a shared key file lets any replica open a state another one sealed;
 * - a shared ledger (`--ledger sqlite:PATH` on one host, `--ledger redis://…`
 *   across hosts) makes each confirmation spendable exactly once anywhere
 *   (spend-1 across processes), while the default memory ledger is per process;
 * - a Redis that goes away makes the server fail closed and keep serving
 *   (spend-4), and it recovers when Redis comes back;
 * - key rotation across replicas: `[new, old]` opens both, `[new]` alone refuses
 *   an old-key state with the SDK's -32602.
 *
 * Needs `npm run build` first, and `REDIS_URL` (the test runner's throwaway
 * Redis): a missing REDIS_URL fails the Redis tests, it never skips them.
 * Each test uses a fresh `--audience`, which also namespaces the Redis keys.
 */
import { execFile, execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/client';
import Database from 'better-sqlite3';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PROCESS_DEADLINE_MS } from '../helpers/deadlines.js';
import { ACCEPT, asked, callTool, type Reply, MANUAL_CLIENT_OPTIONS } from '../helpers/harness.js';
import { signalRedis, waitPortClosed, type OwnRedis } from '../store/redisServer.js';
import { InPlaceStdioTransport, stderrSays } from '../helpers/processes.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');
const START_REDIS = resolve(import.meta.dirname, '../../scripts/start-redis.sh');

interface Replica {
  name: string;
  client: Client;
  pid: number;
  stderr: () => string;
}

interface KeySpec {
  kid: string;
  k: string;
}

let R: string;
let root: string;
let oldKey: KeySpec;
let newKey: KeySpec;
const replicas: Replica[] = [];
const ownRedis: OwnRedis[] = [];

/**
 * The URL of the Redis the test runner started. Missing is a failure, never a skip.
 */
function redisUrl(): string {
  const url = process.env.REDIS_URL;
  if (!url)
    throw new Error(
      'REDIS_URL is not set: start Redis with scripts/start-redis.sh and export REDIS_URL=redis://127.0.0.1:PORT',
    );
  return url;
}

/** A fresh audience: separates the states and the Redis keys of each test. */
const audience = (): string => `replicas-${randomUUID()}`;

async function keygen(kid: string): Promise<KeySpec> {
  const { stdout } = await promisify(execFile)(process.execPath, [MAIN, 'keygen', '--kid', kid], {
    encoding: 'utf8',
    timeout: PROCESS_DEADLINE_MS,
  });
  const parsed = JSON.parse(stdout) as { keys: KeySpec[] };
  expect(parsed.keys).toHaveLength(1);
  return parsed.keys[0]!;
}

/** Writes a key file holding `keys` in order (the first seals, every one opens). */
function keyFile(name: string, keys: KeySpec[]): string {
  const path = join(R, name);
  writeFileSync(path, `${JSON.stringify({ keys }, null, 2)}\n`, { mode: 0o600 });
  return path;
}

/**
 * Starts our own redis-server (scripts/start-redis.sh), on `port` when given; its
 * working directory lands under this test's temp dir (TMPDIR), removed in afterEach.
 */
function startOwnRedis(port?: number): OwnRedis {
  const out = execFileSync('bash', port === undefined ? [START_REDIS] : [START_REDIS, String(port)], {
    encoding: 'utf8',
    timeout: PROCESS_DEADLINE_MS,
    env: { ...process.env, TMPDIR: R },
  }).trim();
  const [p, pid] = out.split(/\s+/).map(Number);
  if (!Number.isInteger(p) || !Number.isInteger(pid)) throw new Error(`start-redis.sh printed ${JSON.stringify(out)}`);
  const server = { port: p!, pid: pid!, url: `redis://127.0.0.1:${p}` };
  ownRedis.push(server);
  return server;
}

async function spawnReplica(name: string, args: string[]): Promise<Replica> {
  const transport = new InPlaceStdioTransport({ command: process.execPath, args: [MAIN, ...args], stderr: 'pipe' });
  let err = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString('utf8');
  });
  const client = new Client({ name: `replicas-test-${name}`, version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
  const clientErrors: string[] = [];
  client.onerror = (e) => clientErrors.push(String(e?.stack ?? e));
  try {
    await client.connect(transport);
  } catch (e) {
    // Say what the server process and the client transport said. Note that the SDK runs the
    // server/discover probe on a disposable sibling process whose stderr it discards: a sibling that
    // exits (as one did on a locked new SQLite file) shows here only as "connection closed during
    // the server/discover probe", with this process's stderr empty.
    await new Promise((r) => setTimeout(r, 300));
    throw new Error(
      `replica ${name} failed to connect: ${(e as Error).message}; transport errors: ${JSON.stringify(clientErrors)}; its stderr: ${JSON.stringify(err)}`,
      { cause: e },
    );
  }
  const pid = transport.pid;
  if (pid === null) throw new Error(`replica ${name} has no pid`);
  const replica = { name, client, pid, stderr: () => err };
  replicas.push(replica);
  return replica;
}

/** Starts one replica per entry of `specs`, in parallel: `[name, extra args]`. */
function spawnReplicas(common: string[], specs: Array<[string, string[]]>): Promise<Replica[]> {
  return Promise.all(specs.map(([name, extra]) => spawnReplica(name, [...common, ...extra])));
}

const round1 = (r: Replica, path: string): Promise<Reply> =>
  callTool(r.client, { name: 'delete_file', arguments: { path } });
const round2 = (r: Replica, path: string, state: string): Promise<Reply> =>
  callTool(r.client, { name: 'delete_file', arguments: { path }, inputResponses: ACCEPT, requestState: state });

/** Asserts a refusal by this package with `code`, and returns its text. */
function expectRefused(reply: Reply, code: string): string {
  expect(reply.kind, JSON.stringify(reply)).toBe('result');
  if (reply.kind !== 'result') return '';
  expect(reply.isError).toBe(true);
  expect(reply.text.startsWith(`[${code}]`), reply.text).toBe(true);
  return reply.text;
}

/** Asserts the success text of a delete of `path` (under root) holding `bytes` bytes. */
function expectDeleted(reply: Reply, path: string, bytes: number): void {
  expect(reply).toMatchObject({
    kind: 'result',
    isError: false,
    text: `Deleted \`${join(root, path)}\` (${bytes} bytes).`,
  });
}

/** Asserts the SDK's refusal of the state itself. */
function expectStateRefused(reply: Reply): void {
  expect(reply, JSON.stringify(reply)).toMatchObject({ kind: 'error', code: -32602 });
}

/**
 * Round 1 on `path` until it asks (a Redis ledger connects in the background and
 * refuses with ERR_CONFIRM_LEDGER_UNAVAILABLE until then); every refusal meanwhile
 * must be exactly that code. Returns the state and how many refusals were seen.
 */
async function askWhenLedgerReady(
  r: Replica,
  path: string,
  timeoutMs = PROCESS_DEADLINE_MS,
): Promise<{ state: string; refusals: number }> {
  const until = Date.now() + timeoutMs;
  let refusals = 0;
  for (;;) {
    const reply = await round1(r, path);
    if (reply.kind === 'input_required') return { state: asked(reply).state, refusals };
    expectRefused(reply, 'ERR_CONFIRM_LEDGER_UNAVAILABLE');
    refusals++;
    if (Date.now() > until)
      throw new Error(`replica ${r.name}: the ledger was still unavailable after ${timeoutMs} ms`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

/** Makes every replica issue one throwaway confirmation (for warm.txt), so that each one's Redis ledger is connected. */
async function warmUp(rs: Replica[]): Promise<void> {
  await Promise.all(rs.map((r) => askWhenLedgerReady(r, 'warm.txt')));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
  [oldKey, newKey] = await Promise.all([keygen('k-old'), keygen('k-new')]);
});

beforeEach(() => {
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-replicas-')));
  root = join(R, 'root');
  mkdirSync(root);
  writeFileSync(join(root, 'cache.txt'), 'cache');
  writeFileSync(join(root, 'thesis.txt'), 'thesis');
  writeFileSync(join(root, 'notes.txt'), 'notes!');
  writeFileSync(join(root, 'warm.txt'), 'warm');
});

afterEach(async () => {
  const closing = replicas.splice(0);
  await Promise.all(closing.map((r) => r.client.close().catch(() => {})));
  for (const r of closing) if (alive(r.pid)) process.kill(r.pid, 'SIGKILL');
  const redises = ownRedis.splice(0);
  for (const server of redises) signalRedis(server, 'SIGKILL');
  await Promise.all(redises.map((server) => waitPortClosed(server.port).catch(() => {})));
  rmSync(R, { recursive: true, force: true });
});

/**
 * Round 1 on replica A, round 2 on replica B → deleted; the same state again on A
 * and on B → ERR_CONFIRM_SPENT, even with cache.txt recreated under the same name.
 */
async function roundOneOnARoundTwoOnB(ledger: string, warm: boolean): Promise<void> {
  const keys = keyFile('keys.json', [oldKey]);
  const [a, b] = await spawnReplicas(
    ['--root', root, '--key-file', keys, '--ledger', ledger, '--audience', audience()],
    [
      ['A', []],
      ['B', []],
    ],
  );
  if (warm) await warmUp([a!, b!]);
  const { state } = asked(await round1(a!, 'cache.txt'));
  expect(existsSync(join(root, 'cache.txt'))).toBe(true);

  expectDeleted(await round2(b!, 'cache.txt', state), 'cache.txt', 5);
  expect(existsSync(join(root, 'cache.txt'))).toBe(false);

  // The file comes back under the same name: a replay on either replica still deletes nothing.
  writeFileSync(join(root, 'cache.txt'), 'cache again');
  expectRefused(await round2(a!, 'cache.txt', state), 'ERR_CONFIRM_SPENT');
  expectRefused(await round2(b!, 'cache.txt', state), 'ERR_CONFIRM_SPENT');
  expect(readFileSync(join(root, 'cache.txt'), 'utf8')).toBe('cache again');

  const kind = ledger.startsWith('sqlite:') ? 'sqlite' : 'redis';
  // The serving line comes after each replica's first answer, on its own pipe: waited for, not read at once.
  for (const r of [a!, b!]) await stderrSays(r.stderr, `ledger ${kind}; keys k-old`);
}

/**
 * One round 1 on the first replica, then the same accepted round 2 fired `n` times
 * at once, spread round-robin across `rs`: exactly one deletion, n - 1 ERR_CONFIRM_SPENT.
 */
async function fireAtOnce(rs: Replica[], n: number): Promise<void> {
  const { state } = asked(await round1(rs[0]!, 'cache.txt'));
  const replies = await Promise.all(
    Array.from({ length: n }, (_, i) => round2(rs[i % rs.length]!, 'cache.txt', state)),
  );
  const deleted = replies.filter((r) => r.kind === 'result' && !r.isError);
  const spent = replies.filter((r) => r.kind === 'result' && r.isError && r.text.startsWith('[ERR_CONFIRM_SPENT]'));
  const other = replies.filter((r) => !deleted.includes(r) && !spent.includes(r));
  expect(other).toEqual([]);
  expect(deleted).toHaveLength(1);
  expectDeleted(deleted[0]!, 'cache.txt', 5);
  expect(spent).toHaveLength(n - 1);
  expect(existsSync(join(root, 'cache.txt'))).toBe(false);
  expect(existsSync(join(root, 'thesis.txt'))).toBe(true);
}

describe('replicas sharing a key file and a ledger', () => {
  it('deletes once when round 1 is on replica A and round 2 on replica B sharing --ledger sqlite:FILE; the replay is ERR_CONFIRM_SPENT on A and on B', async () => {
    await roundOneOnARoundTwoOnB(`sqlite:${join(R, 'ledger.sqlite')}`, false);
  });

  it('deletes once when round 1 is on replica A and round 2 on replica B sharing --ledger redis://; the replay is ERR_CONFIRM_SPENT on A and on B', async () => {
    await roundOneOnARoundTwoOnB(redisUrl(), true);
  });

  it('with the default memory ledger, refuses round 2 on replica B as ERR_CONFIRM_UNKNOWN naming --ledger sqlite:PATH and redis://, deletes nothing, and A still redeems it once', async () => {
    const keys = keyFile('keys.json', [oldKey]);
    const [a, b] = await spawnReplicas(
      ['--root', root, '--key-file', keys, '--audience', audience()],
      [
        ['A', []],
        ['B', []],
      ],
    );
    const { state } = asked(await round1(a!, 'cache.txt'));

    // B opens the state (same key file) but its ledger never saw the jti.
    const text = expectRefused(await round2(b!, 'cache.txt', state), 'ERR_CONFIRM_UNKNOWN');
    expect(text).toContain('issued by another server process');
    expect(text).toContain('ledger in process memory');
    expect(text).toContain('--ledger sqlite:PATH');
    expect(text).toContain('--ledger redis://');
    expect(readFileSync(join(root, 'cache.txt'), 'utf8')).toBe('cache');

    // B's refusal spent nothing anywhere: A, which asked, redeems it.
    expectDeleted(await round2(a!, 'cache.txt', state), 'cache.txt', 5);
    expect(existsSync(join(root, 'cache.txt'))).toBe(false);

    // Afterwards: spent on A; still merely unknown on B, which cannot tell "spent elsewhere" from "never seen".
    writeFileSync(join(root, 'cache.txt'), 'cache again');
    expectRefused(await round2(a!, 'cache.txt', state), 'ERR_CONFIRM_SPENT');
    expectRefused(await round2(b!, 'cache.txt', state), 'ERR_CONFIRM_UNKNOWN');
    expect(readFileSync(join(root, 'cache.txt'), 'utf8')).toBe('cache again');
    for (const r of [a!, b!]) await stderrSays(r.stderr, 'ledger memory; keys k-old');
  });
});

describe('replicas starting together on a new SQLite ledger file', () => {
  // Switching a new file to WAL needs its write lock; SQLite refuses that switch at once
  // (SQLITE_BUSY, busy_timeout not applied) while another connection holds the lock. Replicas
  // starting together on a new file did exactly that to each other: one exited with "database is
  // locked", seen by the SDK client as "connection closed during the server/discover probe". Now the
  // ledger defers its set-up to the first call (within its deadline) and the server starts at once.
  it('a replica started while another process holds the new ledger file locked serves at once, says so on stderr, and confirms once the lock is released', async () => {
    const file = join(R, 'ledger.sqlite');
    const holder = new Database(file);
    holder.exec('BEGIN IMMEDIATE');
    let err = '';
    const transport = new InPlaceStdioTransport({
      command: process.execPath,
      args: [MAIN, '--root', root, '--ledger', `sqlite:${file}`, '--audience', audience()],
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
    const client = new Client({ name: 'replicas-test-locked', version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
    const replica = { name: 'locked', client, pid: 0, stderr: () => err };
    try {
      // The server answers while the file is still locked: the lock delays confirmations, never start-up.
      await client.connect(transport);
      replica.pid = transport.pid!;
      replicas.push(replica);
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['delete_file']);
      await stderrSays(() => err, 'is locked by another process');
    } finally {
      holder.exec('COMMIT');
      holder.close();
    }
    const { state } = asked(await round1(replica, 'cache.txt'));
    expectDeleted(await round2(replica, 'cache.txt', state), 'cache.txt', 5);
    await stderrSays(() => err, 'ledger sqlite');
  });
});

describe('spend-1 across processes: one accepted round 2 fired 32 times at once over 4 replicas', () => {
  it('deletes exactly once, with 31 ERR_CONFIRM_SPENT, across 4 processes sharing a SQLite ledger', async () => {
    const keys = keyFile('keys.json', [oldKey]);
    const rs = await spawnReplicas(
      ['--root', root, '--key-file', keys, '--ledger', `sqlite:${join(R, 'ledger.sqlite')}`, '--audience', audience()],
      [
        ['A', []],
        ['B', []],
        ['C', []],
        ['D', []],
      ],
    );
    await fireAtOnce(rs, 32);
  });

  it('deletes exactly once, with 31 ERR_CONFIRM_SPENT, across 4 processes sharing a Redis ledger', async () => {
    const keys = keyFile('keys.json', [oldKey]);
    const rs = await spawnReplicas(
      ['--root', root, '--key-file', keys, '--ledger', redisUrl(), '--audience', audience()],
      [
        ['A', []],
        ['B', []],
        ['C', []],
        ['D', []],
      ],
    );
    await warmUp(rs);
    await fireAtOnce(rs, 32);
  });
});

describe('spend-4 at the server level: Redis goes away and comes back', () => {
  it('refuses round 2 and round 1 with ERR_CONFIRM_LEDGER_UNAVAILABLE while Redis is down, keeps serving, recovers after a restart on the same port, and never deletes twice', async () => {
    const redis = startOwnRedis();
    const [server] = await spawnReplicas(
      ['--root', root, '--ledger', redis.url, '--audience', audience()],
      [['S', []]],
    );
    const s = server!;
    const { state: first } = await askWhenLedgerReady(s, 'cache.txt');

    // Redis dies (no persistence): every outstanding entry is gone with it.
    signalRedis(redis, 'SIGKILL');
    await waitPortClosed(redis.port);

    // (How fast an offline ledger refuses is the store contract's business, proven there by order.)
    expectRefused(await round2(s, 'cache.txt', first), 'ERR_CONFIRM_LEDGER_UNAVAILABLE');
    expect(readFileSync(join(root, 'cache.txt'), 'utf8')).toBe('cache');

    expectRefused(await round1(s, 'thesis.txt'), 'ERR_CONFIRM_LEDGER_UNAVAILABLE');

    // The server keeps serving the protocol.
    const tools = await s.client.listTools();
    expect(tools.tools.map((t) => t.name)).toContain('delete_file');

    // Redis comes back empty on the same port; the ledger reconnects on its own.
    startOwnRedis(redis.port);
    const { state: fresh } = await askWhenLedgerReady(s, 'cache.txt');

    // The first state: its jti died with Redis, so it is unknown (refused), not redeemable.
    expectRefused(await round2(s, 'cache.txt', first), 'ERR_CONFIRM_UNKNOWN');
    expect(readFileSync(join(root, 'cache.txt'), 'utf8')).toBe('cache');

    expectDeleted(await round2(s, 'cache.txt', fresh), 'cache.txt', 5);
    expect(existsSync(join(root, 'cache.txt'))).toBe(false);

    // The file comes back under the same name: neither the first nor the fresh state deletes it again.
    writeFileSync(join(root, 'cache.txt'), 'cache again');
    expectRefused(await round2(s, 'cache.txt', first), 'ERR_CONFIRM_UNKNOWN');
    expectRefused(await round2(s, 'cache.txt', fresh), 'ERR_CONFIRM_SPENT');
    expect(readFileSync(join(root, 'cache.txt'), 'utf8')).toBe('cache again');
    expect(readFileSync(join(root, 'thesis.txt'), 'utf8')).toBe('thesis');
    await stderrSays(s.stderr, 'refused delete_file: ERR_CONFIRM_LEDGER_UNAVAILABLE');
  });
});

describe('key rotation across replicas sharing a SQLite ledger', () => {
  it('redeems an old-key state on a [new, old] replica, refuses one on a [new]-only replica with -32602, and an [old]-only replica refuses new-key states', async () => {
    const common = ['--root', root, '--ledger', `sqlite:${join(R, 'ledger.sqlite')}`, '--audience', audience()];
    const [a, b, c] = await spawnReplicas(common, [
      ['A', ['--key-file', keyFile('old.json', [oldKey])]],
      ['B', ['--key-file', keyFile('new-old.json', [newKey, oldKey])]],
      ['C', ['--key-file', keyFile('new.json', [newKey])]],
    ]);

    // Overlap: A seals with the old key, B still opens it.
    const { state: s1 } = asked(await round1(a!, 'cache.txt'));
    expectDeleted(await round2(b!, 'cache.txt', s1), 'cache.txt', 5);

    // After the old key is retired (C): an old-key state is refused by the SDK before any handler runs.
    const { state: s2 } = asked(await round1(a!, 'thesis.txt'));
    expectStateRefused(await round2(c!, 'thesis.txt', s2));
    expect(readFileSync(join(root, 'thesis.txt'), 'utf8')).toBe('thesis');
    // Control: the refusal was the key alone; the jti is unspent and the overlap replica redeems it.
    expectDeleted(await round2(b!, 'thesis.txt', s2), 'thesis.txt', 6);

    // B seals with the new key: C opens it, A (old key only) cannot.
    const { state: s3 } = asked(await round1(b!, 'notes.txt'));
    expectStateRefused(await round2(a!, 'notes.txt', s3));
    expect(readFileSync(join(root, 'notes.txt'), 'utf8')).toBe('notes!');
    expectDeleted(await round2(c!, 'notes.txt', s3), 'notes.txt', 6);

    await stderrSays(a!.stderr, 'keys k-old;');
    await stderrSays(b!.stderr, 'keys k-new,k-old;');
    await stderrSays(c!.stderr, 'keys k-new;');
  });
});
