/**
 * Two `--http` replicas sharing keys and a PostgreSQL ledger (`--ledger postgres://…`, the runner's
 * PG_URL with a fresh `?schema=`) behind HAProxy with docs/haproxy.cfg, as bench/lbDeployment.ts
 * starts them (no token auth: loopback only). HAProxy round-robins without stickiness, so round 1
 * and round 2 of one call reach different replicas. A missing haproxy or PG_URL fails, never skips.
 */
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haproxyPath, MAIN, startDeployment, type Deployment } from '../../bench/lbDeployment.js';
import { PROCESS_DEADLINE_MS, TEST_TIMEOUT_MS } from '../helpers/deadlines.js';
import { ACCEPT, asked, callTool, MANUAL_CLIENT_OPTIONS } from '../helpers/harness.js';
import { pgUrl } from '../store/postgresServer.js';

let R: string;
let root: string;
let deployment: Deployment | undefined;
const clients: Client[] = [];

beforeAll(async () => {
  haproxyPath(); // throws when haproxy is missing: a failure, never a skip
  const ledger = new URL(pgUrl());
  ledger.searchParams.set('schema', `lb_${randomBytes(6).toString('hex')}`);
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-pg-lb-')));
  root = join(R, 'root');
  mkdirSync(root);
  const { stdout } = await promisify(execFile)(process.execPath, [MAIN, 'keygen', '--kid', 'lb1'], {
    encoding: 'utf8',
    timeout: PROCESS_DEADLINE_MS,
  });
  const keyFile = join(R, 'keys.json');
  writeFileSync(keyFile, stdout, { mode: 0o600 });
  // The deployment passes its `redisUrl` as --ledger: here the PostgreSQL URL.
  deployment = await startDeployment({ root, keyFile, redisUrl: ledger.href, audience: `lb-${randomUUID()}` });
}, TEST_TIMEOUT_MS);

afterAll(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => {})));
  await deployment?.stop();
  if (R) rmSync(R, { recursive: true, force: true });
}, TEST_TIMEOUT_MS);

describe('two --http replicas sharing keys and a PostgreSQL ledger behind HAProxy', () => {
  it(
    'round 1 and round 2 are answered by different replicas, the file is deleted once, and a replay is [ERR_CONFIRM_SPENT]',
    async () => {
      const replicas: Array<{ withState: boolean; replica: string | null }> = [];
      const client = new Client({ name: 'pg-lb', version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
      const transport = new StreamableHTTPClientTransport(deployment!.url, {
        fetch: async (input, init) => {
          const res = await fetch(input, init);
          if (typeof init?.body === 'string') {
            const body = JSON.parse(init.body) as { method?: string; params?: { requestState?: unknown } };
            if (body.method === 'tools/call')
              replicas.push({
                withState: typeof body.params?.requestState === 'string',
                replica: res.headers.get('x-replica'),
              });
          }
          return res;
        },
      });
      await client.connect(transport);
      clients.push(client);
      writeFileSync(join(root, 'notes.txt'), 'notes');
      const { state } = asked(await callTool(client, { name: 'delete_file', arguments: { path: 'notes.txt' } }));
      const done = await callTool(client, {
        name: 'delete_file',
        arguments: { path: 'notes.txt' },
        inputResponses: ACCEPT,
        requestState: state,
      });
      expect(done).toMatchObject({ kind: 'result', isError: false });
      expect(existsSync(join(root, 'notes.txt'))).toBe(false);
      const [one, two] = replicas;
      expect([one?.withState, two?.withState]).toEqual([false, true]);
      expect(['r1', 'r2']).toContain(one?.replica);
      expect(['r1', 'r2']).toContain(two?.replica);
      // No stickiness: the other replica opened the state and spent it in PostgreSQL.
      expect(two?.replica).not.toBe(one?.replica);
      writeFileSync(join(root, 'notes.txt'), 'again');
      const replay = await callTool(client, {
        name: 'delete_file',
        arguments: { path: 'notes.txt' },
        inputResponses: ACCEPT,
        requestState: state,
      });
      expect(replay.kind === 'result' && replay.text.startsWith('[ERR_CONFIRM_SPENT]'), JSON.stringify(replay)).toBe(
        true,
      );
      expect(existsSync(join(root, 'notes.txt'))).toBe(true);
    },
    TEST_TIMEOUT_MS,
  );
});
