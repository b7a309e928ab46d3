/**
 * s10 attack pass, through the real CLI (`node dist/cli/main.js --root R --grants same-directory`)
 * over stdio with a real v2 Client pinned to 2026-07-28 (rounds by hand): the root's held directory
 * handle after the root is removed and made again, or replaced by a copy, or a directory below is
 * swapped for a symbolic link. Each attack has its control.
 */
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { asked, callTool, MANUAL_CLIENT_OPTIONS, type Reply } from '../helpers/harness.js';
import { MAIN } from '../helpers/httpServer.js';
import { InPlaceStdioTransport } from '../helpers/processes.js';

const GRANT_ACCEPT = { confirm: { action: 'accept', content: { confirmed: true, scope: 'grant' } } } as const;
let R: string;
let root: string;
const cleanups: Array<() => Promise<unknown>> = [];

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
});
beforeEach(() => {
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-s10-cli-')));
  root = join(R, 'root');
  mkdirSync(join(root, 'cache'), { recursive: true });
  mkdirSync(join(R, 'outside', 'cache'), { recursive: true });
  for (let i = 0; i < 5; i++) {
    writeFileSync(join(root, 'cache', `f${i}.tmp`), `cache ${i}`);
    writeFileSync(join(R, 'outside', 'cache', `f${i}.tmp`), 'victim');
  }
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  rmSync(R, { recursive: true, force: true });
});

async function spawnCli(args: string[]): Promise<Client> {
  const transport = new InPlaceStdioTransport({ command: process.execPath, args: [MAIN, ...args], stderr: 'pipe' });
  const client = new Client({ name: 's10-cli', version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
  await client.connect(transport);
  cleanups.push(async () => {
    const pid = transport.pid;
    await client.close().catch(() => {});
    if (pid !== null) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already ended
      }
    }
  });
  return client;
}

const call = (c: Client, path: string, extra?: { requestState?: string; inputResponses?: unknown }): Promise<Reply> =>
  callTool(c, { name: 'delete_file', arguments: { path }, ...(extra ?? {}) });

function text(reply: Reply): string {
  if (reply.kind !== 'result') throw new Error(`expected a result, got ${JSON.stringify(reply)}`);
  return reply.text;
}

async function grantOn(c: Client, path: string): Promise<void> {
  const first = asked(await call(c, path));
  expect(text(await call(c, path, { requestState: first.state, inputResponses: GRANT_ACCEPT }))).toMatch(/Granted/);
}

describe('s10 CLI --grants same-directory: the held root', () => {
  it('s10-G1 (CLI, fixed): root removed and made again with the file: refused as the root replaced, not "the file does not exist"; control: without --grants the same server state says "replaced after start-up"', async () => {
    const granted = await spawnCli(['--root', root, '--grants', 'same-directory']);
    await grantOn(granted, 'cache/f0.tmp');
    expect(text(await call(granted, 'cache/f1.tmp'))).toContain('Done under grant');
    const plain = await spawnCli(['--root', root]);
    asked(await call(plain, 'cache/f2.tmp')); // pins and uses the root
    rmSync(root, { recursive: true });
    mkdirSync(join(root, 'cache'), { recursive: true });
    writeFileSync(join(root, 'cache', 'f2.tmp'), 'new');
    expect(text(await call(plain, 'cache/f2.tmp'))).toMatch(/^\[ERR_CONFIRM_OUTSIDE_ROOTS\] .*replaced after start-up/);
    const reply = await call(granted, 'cache/f2.tmp');
    expect(readFileSync(join(root, 'cache', 'f2.tmp'), 'utf8')).toBe('new');
    expect(text(reply)).toMatch(/^\[ERR_CONFIRM_OUTSIDE_ROOTS\] .*replaced after start-up/);
  });

  it('root replaced by a copy, a directory swapped for a symlink to outside: refused, nothing deleted; control: both put back, the grant serves', async () => {
    const c = await spawnCli(['--root', root, '--grants', 'same-directory']);
    await grantOn(c, 'cache/f0.tmp');
    renameSync(root, join(R, 'root.old'));
    cpSync(join(R, 'root.old'), root, { recursive: true });
    expect(text(await call(c, 'cache/f1.tmp'))).toMatch(/^\[ERR_CONFIRM_OUTSIDE_ROOTS\]/);
    rmSync(root, { recursive: true });
    renameSync(join(R, 'root.old'), root);
    renameSync(join(root, 'cache'), join(R, 'cache.real'));
    symlinkSync(join(R, 'outside', 'cache'), join(root, 'cache'));
    expect(text(await call(c, 'cache/f1.tmp'))).toMatch(/^\[ERR_CONFIRM_SYMLINK\]/);
    for (let i = 0; i < 5; i++) expect(readFileSync(join(R, 'outside', 'cache', `f${i}.tmp`), 'utf8')).toBe('victim');
    expect(existsSync(join(R, 'cache.real', 'f1.tmp'))).toBe(true);
    unlinkSync(join(root, 'cache'));
    renameSync(join(R, 'cache.real'), join(root, 'cache'));
    expect(text(await call(c, 'cache/f1.tmp'))).toContain('Done under grant');
    expect(existsSync(join(root, 'cache', 'f1.tmp'))).toBe(false);
  });
});
