/**
 * Attacks on the stdio start-up path that answers before the confirmation layer is loaded
 * (`src/cli/lazyServer.ts`, `src/cli/main.ts`), through the built CLI as a real subprocess: calls
 * that race the layer's load (held by `test/fixtures/holdLoad.mjs` until the test releases it, so
 * the order is fixed by files, not by time), 2025-era first callers, and a layer that cannot load.
 * Needs `npm run build` first.
 */
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PROCESS_DEADLINE_MS, TEST_TIMEOUT_MS } from '../helpers/deadlines.js';
import { ACCEPT, asked, callTool, MANUAL_CLIENT_OPTIONS, type Reply } from '../helpers/harness.js';
import { InPlaceStdioTransport, runProcess } from '../helpers/processes.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');
const FIXTURES = resolve(import.meta.dirname, '../fixtures');
let R: string;
let root: string;
let hold: string;
const closers: Array<() => Promise<unknown>> = [];

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
});
beforeEach(() => {
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-cold-attack-')));
  root = join(R, 'root');
  hold = join(R, 'hold');
  mkdirSync(root);
  mkdirSync(hold);
  writeFileSync(join(root, 'cache.txt'), 'cache');
  writeFileSync(join(root, 'thesis.txt'), 'thesis');
});
afterEach(async () => {
  // Never leave a held process behind.
  writeFileSync(join(hold, 'release'), '');
  await Promise.all(closers.splice(0).map((c) => c().catch(() => {})));
  rmSync(R, { recursive: true, force: true });
});

/** Spawns the built CLI (optionally under a `--import` fixture) and connects a v2 client driving rounds by hand. */
async function spawnCli(args: string[], fixture?: { file: string; env: Record<string, string> }): Promise<Client> {
  const transport = new InPlaceStdioTransport({
    command: process.execPath,
    args: [...(fixture ? ['--import', join(FIXTURES, fixture.file)] : []), MAIN, ...args],
    env: { ...process.env, ...(fixture?.env ?? {}) } as Record<string, string>,
    stderr: 'pipe',
  });
  transport.stderr?.on('data', () => {});
  const client = new Client({ name: 'cold-attack', version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
  await client.connect(transport);
  closers.push(() => client.close());
  return client;
}

/** The hold of the confirmation layer's entry module (its load waits for `hold/release`). */
const HELD = { file: 'holdLoad.mjs', env: { MCP_CONFIRM_HOLD_LOAD: '/dist/guard/confirmation.js' } };
const held = (): { file: string; env: Record<string, string> } => ({
  ...HELD,
  env: { ...HELD.env, MCP_CONFIRM_HOLD_DIR: hold },
});

/** Resolves once `file` exists (an event of the other process), or fails after the process deadline. */
async function fileAppears(file: string): Promise<void> {
  const until = Date.now() + PROCESS_DEADLINE_MS;
  while (!existsSync(file)) {
    if (Date.now() > until) throw new Error(`${file} never appeared`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A key file and a SQLite ledger two processes share. */
async function sharedArgs(): Promise<string[]> {
  const keygen = await runProcess(process.execPath, [MAIN, 'keygen', '--kid', 'k1']);
  expect(keygen.status).toBe(0);
  writeFileSync(join(R, 'keys.json'), keygen.stdout);
  return ['--root', root, '--key-file', join(R, 'keys.json'), '--ledger', `sqlite:${join(R, 'ledger.sqlite')}`];
}

describe("cold start under attack: calls racing the confirmation layer's load", () => {
  it(
    "cold-1: eight concurrent round-2 calls with one state, sent while the layer's load is held, delete the file exactly once (seven ERR_CONFIRM_SPENT); tools/list answers meanwhile and nothing acts before the load; control: the state was accepted once",
    async () => {
      const args = await sharedArgs();
      const asker = await spawnCli(args);
      const { state } = asked(await callTool(asker, { name: 'delete_file', arguments: { path: 'cache.txt' } }));
      const racer = await spawnCli(args, held());
      const settled: Reply[] = [];
      const calls = Array.from({ length: 8 }, () =>
        callTool(racer, {
          name: 'delete_file',
          arguments: { path: 'cache.txt' },
          inputResponses: ACCEPT,
          requestState: state,
        }).then((r) => {
          settled.push(r);
          return r;
        }),
      );
      await fileAppears(join(hold, 'held'));
      // Ordered by the hold: the list is answered while the layer is still loading, and no call has been.
      expect((await racer.listTools()).tools.map((t) => t.name)).toEqual(['delete_file']);
      expect(settled).toEqual([]);
      expect(existsSync(join(root, 'cache.txt'))).toBe(true);
      writeFileSync(join(hold, 'release'), '');
      const replies = await Promise.all(calls);
      const deleted = replies.filter((r) => r.kind === 'result' && !r.isError);
      const spent = replies.filter((r) => r.kind === 'result' && r.text.startsWith('[ERR_CONFIRM_SPENT]'));
      expect(deleted).toHaveLength(1);
      expect(spent).toHaveLength(7);
      expect(existsSync(join(root, 'cache.txt'))).toBe(false);
      expect(existsSync(join(root, 'thesis.txt'))).toBe(true);
      // The asker sees it used too.
      const again = await callTool(asker, {
        name: 'delete_file',
        arguments: { path: 'cache.txt' },
        inputResponses: ACCEPT,
        requestState: state,
      });
      expect(again.kind === 'result' && again.text.startsWith('[ERR_CONFIRM_SPENT]')).toBe(true);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'cold-2: a round-1 call and a round-2 call for another file, racing the held load, are asked and refused (ERR_CONFIRM_MISMATCH) once it loads; nothing is deleted; control: the asked state then deletes its own file',
    async () => {
      const args = await sharedArgs();
      const asker = await spawnCli(args);
      const { state } = asked(await callTool(asker, { name: 'delete_file', arguments: { path: 'cache.txt' } }));
      const racer = await spawnCli(args, held());
      const first = callTool(racer, { name: 'delete_file', arguments: { path: 'thesis.txt' }, inputResponses: ACCEPT });
      const other = callTool(racer, {
        name: 'delete_file',
        arguments: { path: 'thesis.txt' },
        inputResponses: ACCEPT,
        requestState: state,
      });
      await fileAppears(join(hold, 'held'));
      expect(existsSync(join(root, 'thesis.txt'))).toBe(true);
      writeFileSync(join(hold, 'release'), '');
      const round1 = asked(await first);
      expect(round1.message).toContain(join(root, 'thesis.txt'));
      const mismatch = await other;
      expect(mismatch.kind === 'result' && mismatch.text.startsWith('[ERR_CONFIRM_MISMATCH]')).toBe(true);
      expect(existsSync(join(root, 'thesis.txt'))).toBe(true);
      expect(existsSync(join(root, 'cache.txt'))).toBe(true);
      // Control: the state asked on the other process deletes cache.txt here, once.
      expect(
        await callTool(racer, {
          name: 'delete_file',
          arguments: { path: 'cache.txt' },
          inputResponses: ACCEPT,
          requestState: state,
        }),
      ).toMatchObject({
        kind: 'result',
        isError: false,
      });
      expect(existsSync(join(root, 'cache.txt'))).toBe(false);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "cold-3: a 2025-era v1 client's first call, made while the load is held, is pushed its elicitation only after the layer loads: decline deletes nothing; control: accept deletes",
    async () => {
      const transport = new V1StdioClientTransport({
        command: process.execPath,
        args: ['--import', join(FIXTURES, HELD.file), MAIN, '--root', root],
        env: { ...process.env, ...held().env } as Record<string, string>,
        stderr: 'pipe',
      });
      transport.stderr?.on('data', () => {});
      const client = new V1Client({ name: 'legacy-cold', version: '0.0.0' }, { capabilities: { elicitation: {} } });
      const pushed: string[] = [];
      let answer: 'accept' | 'decline' = 'decline';
      client.setRequestHandler(ElicitRequestSchema, async (req) => {
        pushed.push((req.params as { message: string }).message);
        return (
          answer === 'accept' ? { action: 'accept', content: { confirmed: true } } : { action: 'decline' }
        ) as never;
      });
      await client.connect(transport);
      closers.push(() => client.close());
      const call = (path: string) =>
        client.callTool({ name: 'delete_file', arguments: { path } }, undefined, {
          timeout: PROCESS_DEADLINE_MS,
        }) as Promise<{ content: Array<{ text?: string }>; isError?: boolean }>;
      const declined = call('cache.txt');
      await fileAppears(join(hold, 'held'));
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['delete_file']);
      expect(pushed).toEqual([]);
      writeFileSync(join(hold, 'release'), '');
      const d = await declined;
      expect(pushed).toHaveLength(1);
      expect(pushed[0]).toContain(join(root, 'cache.txt'));
      expect(d.content.map((c) => c.text).join(' ')).toContain('You declined; nothing was deleted.');
      expect(existsSync(join(root, 'cache.txt'))).toBe(true);
      // Control: accepted, the same call deletes the file.
      answer = 'accept';
      const a = await call('cache.txt');
      expect(a.isError).not.toBe(true);
      expect(existsSync(join(root, 'cache.txt'))).toBe(false);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'cold-4: a genuine state presented to a server whose layer cannot load is refused (-32602) and not spent; control: the same state then deletes on the process that asked',
    async () => {
      const args = await sharedArgs();
      const asker = await spawnCli(args);
      const { state } = asked(await callTool(asker, { name: 'delete_file', arguments: { path: 'cache.txt' } }));
      const broken = await spawnCli(args, {
        file: 'failLoad.mjs',
        env: { MCP_CONFIRM_FAIL_LOAD: '/dist/guard/confirmation.js' },
      });
      for (let i = 0; i < 2; i++) {
        expect(
          await callTool(broken, {
            name: 'delete_file',
            arguments: { path: 'cache.txt' },
            inputResponses: ACCEPT,
            requestState: state,
          }),
        ).toMatchObject({
          kind: 'error',
          code: -32602,
        });
      }
      expect(existsSync(join(root, 'cache.txt'))).toBe(true);
      expect(
        await callTool(asker, {
          name: 'delete_file',
          arguments: { path: 'cache.txt' },
          inputResponses: ACCEPT,
          requestState: state,
        }),
      ).toMatchObject({
        kind: 'result',
        isError: false,
      });
      expect(existsSync(join(root, 'cache.txt'))).toBe(false);
    },
    TEST_TIMEOUT_MS,
  );
});
