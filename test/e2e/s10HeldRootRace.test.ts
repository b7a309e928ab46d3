/**
 * s10 attack pass: fs-4 for a grant's held directory handles. A separate process flips the granted
 * directory `root/cache` between the real directory and a symbolic link to `outside/cache` (same
 * file names) as fast as it can, while 300 calls under a same-directory grant run through a real v2
 * Client. Nothing in `outside` is ever deleted; control: with the flipper stopped, the grant serves.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { createDemoServer } from '../../src/demo/deleteFile.js';
import { MemoryLedger } from '../../src/store/memory.js';
import { asked, connect, type Reply } from '../helpers/harness.js';

const GRANT_ACCEPT = { confirm: { action: 'accept', content: { confirmed: true, scope: 'grant' } } } as const;
const N = 300;
let R: string;
afterEach(() => rmSync(R, { recursive: true, force: true }));

const FLIPPER = `
const fs = require('node:fs');
const [root, outside] = process.argv.slice(1);
const dir = root + '/cache', real = root + '/cache.real', link = root + '/cache.link';
try { fs.symlinkSync(outside + '/cache', link); } catch {}
for (;;) {
  try { fs.renameSync(dir, real); fs.renameSync(link, dir); fs.renameSync(dir, link); fs.renameSync(real, dir); } catch {}
}`;

it('fs-4 for grants: a directory flipped with a symbolic link to outside ~continuously never lets a call under the grant delete outside; control: stopped, the grant serves', async () => {
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-s10-race-')));
  const root = join(R, 'root');
  const outside = join(R, 'outside');
  mkdirSync(join(root, 'cache'), { recursive: true });
  mkdirSync(join(outside, 'cache'), { recursive: true });
  for (let i = 0; i <= N + 1; i++) {
    writeFileSync(join(root, 'cache', `f${i}.tmp`), 'in');
    writeFileSync(join(outside, 'cache', `f${i}.tmp`), 'victim');
  }
  const built = await createDemoServer({
    roots: [root],
    store: new MemoryLedger(),
    grant: { arguments: { path: 'same-directory' }, maxUses: 1000, maxSeconds: 900 },
  });
  const c = await connect(built.factory);
  const first = asked(await c.call('delete_file', { path: 'cache/f0.tmp' }));
  await c.call('delete_file', { path: 'cache/f0.tmp' }, { requestState: first.state, inputResponses: GRANT_ACCEPT });
  const flipper = spawn(process.execPath, ['-e', FLIPPER, root, outside], { stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, 100));
  const outcomes = new Map<string, number>();
  try {
    for (let i = 1; i < N; i++) {
      const reply: Reply = await c.call('delete_file', { path: `cache/f${i}.tmp` });
      const key =
        reply.kind === 'result'
          ? (reply.text.match(/^\[[A-Z_]+\]/)?.[0] ?? (reply.text.startsWith('Deleted') ? 'deleted' : 'other'))
          : reply.kind;
      outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
    }
  } finally {
    flipper.kill('SIGKILL');
    await new Promise((r) => flipper.once('exit', r));
  }
  // Typically a mix: deleted (from the real directory), ERR_CONFIRM_SYMLINK, ERR_CONFIRM_GONE, ERR_CONFIRM_CHANGED.
  expect(
    [...outcomes.keys()].every((k) => /^(deleted|\[ERR_CONFIRM_[A-Z_]+\])$/.test(k)),
    JSON.stringify([...outcomes]),
  ).toBe(true);
  // Nothing outside was ever deleted.
  expect(readdirSync(join(outside, 'cache')).length).toBe(N + 2);
  // Put the tree back, then the control.
  if (!existsSync(join(root, 'cache')) || existsSync(join(root, 'cache.real'))) {
    rmSync(join(root, 'cache'), { force: true, recursive: false });
    if (existsSync(join(root, 'cache.real')))
      (await import('node:fs')).renameSync(join(root, 'cache.real'), join(root, 'cache'));
  }
  const again = await c.call('delete_file', { path: `cache/f${N + 1}.tmp` });
  expect(again.kind === 'result' && again.text).toContain('Done under grant');
  await c.close();
}, 60_000);
