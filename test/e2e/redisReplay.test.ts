/**
 * Replays against the Redis ledger's batched tombstone eviction, end to end: the demo server with a
 * RedisLedger (Redis at REDIS_URL), a real Client driving the rounds by hand.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDemoServer } from '../../src/demo/deleteFile.js';
import { RedisLedger } from '../../src/store/redis.js';
import { KeyRing } from '../../src/state/keyRing.js';
import { ACCEPT, asked, connect, type Connected } from '../helpers/harness.js';

let root: string;
const open: Array<{ close(): Promise<void> }> = [];

function redisUrl(): string {
  const url = process.env.REDIS_URL;
  if (!url)
    throw new Error(
      'REDIS_URL is not set: start Redis with scripts/start-redis.sh and export REDIS_URL=redis://127.0.0.1:PORT',
    );
  return url;
}

beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-redis-replay-')));
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close().catch(() => {})));
  rmSync(root, { recursive: true, force: true });
});

/** Asks about `name` and redeems the state with an accept; returns the state. */
async function deleteConfirmed(server: Connected, name: string): Promise<string> {
  writeFileSync(join(root, name), name);
  const { state } = asked(await server.call('delete_file', { path: name }));
  expect(
    await server.call('delete_file', { path: name }, { inputResponses: ACCEPT, requestState: state }),
  ).toMatchObject({ kind: 'result', isError: false });
  expect(existsSync(join(root, name))).toBe(false);
  return state;
}

describe('Redis ledger: a confirmation spent once stays refused after its tombstone is evicted', () => {
  it('a state replayed after its tombstone was evicted (maxTotal 2, three later spends) is refused by the ledger (ERR_CONFIRM_UNKNOWN) on two servers sharing Redis and keys, and a file recreated at its path is intact; control: before eviction the replay is ERR_CONFIRM_SPENT', async () => {
    const namespace = `replay-${randomUUID()}`;
    const keys = await KeyRing.fromSpecs([KeyRing.generateSpec('k1')]);
    const servers: Connected[] = [];
    for (let i = 0; i < 2; i++) {
      const ledger = await RedisLedger.open({ url: redisUrl(), namespace, maxTotal: 2, maxPerPrincipal: 2 });
      open.push(ledger);
      const server = await connect(
        (await createDemoServer({ roots: [root], keys, store: ledger, audience: namespace })).factory,
      );
      open.push(server);
      servers.push(server);
    }
    const [a, b] = servers as [Connected, Connected];
    const state = await deleteConfirmed(a, 'first.txt');
    writeFileSync(join(root, 'first.txt'), 'first.txt');
    // Control: the tombstone is there, on both servers.
    for (const s of [a, b]) {
      const replay = await s.call(
        'delete_file',
        { path: 'first.txt' },
        { inputResponses: ACCEPT, requestState: state },
      );
      expect(replay.kind === 'result' && replay.text.startsWith('[ERR_CONFIRM_SPENT]')).toBe(true);
    }
    // Three more spends take the spend list past maxTotal: the oldest tombstone (first.txt's) is evicted.
    for (const name of ['second.txt', 'third.txt', 'fourth.txt']) await deleteConfirmed(b, name);
    for (const s of [a, b]) {
      const replay = await s.call(
        'delete_file',
        { path: 'first.txt' },
        { inputResponses: ACCEPT, requestState: state },
      );
      expect(replay.kind === 'result' && replay.text.startsWith('[ERR_CONFIRM_UNKNOWN]')).toBe(true);
    }
    expect(readFileSync(join(root, 'first.txt'), 'utf8')).toBe('first.txt');
  });
});
