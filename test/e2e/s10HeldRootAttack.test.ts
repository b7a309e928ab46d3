/**
 * s10 attack pass on grants with the root's directory handle held across calls (src/fs/target.ts,
 * "Directory handles"), end to end through a real v2 Client pinned to 2026-07-28 (rounds by hand)
 * against the demo `delete_file` with a same-directory grant, on real files in a temp directory.
 *
 * The in-flight attacks pause the call under the grant at its `acted-under-grant` audit line (written
 * after the file was opened through the held handles, before acting) and change the tree there.
 * Each attack has its control. Nothing outside the root, and nothing not approved, may be deleted.
 */
import {
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
  cpSync,
  linkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDemoServer } from '../../src/demo/deleteFile.js';
import type { AuditDecision } from '../../src/index.js';
import { MemoryLedger } from '../../src/store/memory.js';
import { asked, connect, type Connected, type Reply } from '../helpers/harness.js';

const GRANT_ACCEPT = { confirm: { action: 'accept', content: { confirmed: true, scope: 'grant' } } } as const;
const SAME_DIR = { arguments: { path: 'same-directory' as const }, maxUses: 20, maxSeconds: 900 };
const VICTIM = 'victim: must survive\n';

let R: string;
let root: string;
let outside: string;
const open: Connected[] = [];

beforeEach(() => {
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-s10-held-')));
  root = join(R, 'root');
  outside = join(R, 'outside');
  mkdirSync(join(root, 'cache'), { recursive: true });
  mkdirSync(join(outside, 'cache'), { recursive: true });
  for (let i = 0; i < 6; i++) {
    writeFileSync(join(root, 'cache', `f${i}.tmp`), `cache ${i}`);
    writeFileSync(join(outside, 'cache', `f${i}.tmp`), VICTIM);
  }
  writeFileSync(join(root, 'top.tmp'), 'top');
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
  rmSync(R, { recursive: true, force: true });
});

/** A demo server with a same-directory grant; `onGrantUse` runs while a call under a grant is in flight. */
async function serve(onGrantUse?: () => void) {
  let hook = onGrantUse;
  const audit: AuditDecision[] = [];
  const built = await createDemoServer({
    roots: [root],
    store: new MemoryLedger(),
    grant: SAME_DIR,
    audit: {
      record: async (d: AuditDecision) => {
        audit.push(d);
        if (d.event === 'acted-under-grant' && hook) {
          const h = hook;
          hook = undefined; // once
          h();
        }
      },
      countStateRefused: () => {},
    },
  });
  const c = await connect(built.factory);
  open.push(c);
  return { c, audit, arm: (h: () => void) => void (hook = h) };
}

async function grantOn(c: Connected, path: string): Promise<void> {
  const first = asked(await c.call('delete_file', { path }));
  const done = await c.call('delete_file', { path }, { requestState: first.state, inputResponses: GRANT_ACCEPT });
  expect(text(done)).toMatch(/Granted \(grant /);
}

function text(reply: Reply): string {
  if (reply.kind !== 'result') throw new Error(`expected a result, got ${JSON.stringify(reply)}`);
  return reply.text;
}

function outsideIntact(): void {
  for (let i = 0; i < 6; i++) expect(readFileSync(join(outside, 'cache', `f${i}.tmp`), 'utf8')).toBe(VICTIM);
}

describe('s10 held root: replaced between calls', () => {
  it('root renamed away and a copy made at its path: the call under the grant is refused, nothing deleted in either; control: moved back, it runs under the grant', async () => {
    const { c } = await serve();
    await grantOn(c, 'cache/f0.tmp');
    expect(text(await c.call('delete_file', { path: 'cache/f1.tmp' }))).toContain('Done under grant');
    renameSync(root, join(R, 'root.old'));
    cpSync(join(R, 'root.old'), root, { recursive: true });
    const reply = await c.call('delete_file', { path: 'cache/f2.tmp' });
    expect(reply.kind).toBe('result');
    expect(text(reply)).toMatch(/^\[ERR_CONFIRM_OUTSIDE_ROOTS\] .*replaced after start-up/);
    expect(existsSync(join(root, 'cache', 'f2.tmp'))).toBe(true);
    expect(existsSync(join(R, 'root.old', 'cache', 'f2.tmp'))).toBe(true);
    // Also a file directly in the root (no directory below: the held root's own readback).
    expect(text(await c.call('delete_file', { path: 'top.tmp' }))).toMatch(/^\[ERR_CONFIRM_OUTSIDE_ROOTS\]/);
    // Control: moved back, the grant serves again.
    rmSync(root, { recursive: true });
    renameSync(join(R, 'root.old'), root);
    expect(text(await c.call('delete_file', { path: 'cache/f2.tmp' }))).toContain('Done under grant');
    expect(existsSync(join(root, 'cache', 'f2.tmp'))).toBe(false);
  });

  it('s10-G1 (fixed): root removed (rm -rf) or renamed away and made again with the file: the refusal says "replaced after start-up" (ERR_CONFIRM_OUTSIDE_ROOTS) as without grants, not "the file does not exist"; nothing deleted', async () => {
    const { c } = await serve();
    await grantOn(c, 'cache/f0.tmp');
    rmSync(root, { recursive: true });
    mkdirSync(join(root, 'cache'), { recursive: true });
    writeFileSync(join(root, 'cache', 'f1.tmp'), 'new');
    // Control: a server without grants (no held handle) says the root was replaced.
    const plain = await createDemoServer({ roots: [root], store: new MemoryLedger() });
    const pc = await connect(plain.factory);
    open.push(pc);
    // (Its root was pinned just now, so replace it again for it.)
    renameSync(root, join(R, 'root.again'));
    cpSync(join(R, 'root.again'), root, { recursive: true });
    expect(text(await pc.call('delete_file', { path: 'cache/f1.tmp' }))).toMatch(
      /^\[ERR_CONFIRM_OUTSIDE_ROOTS\] .*replaced after start-up/,
    );
    // With grants on, every call opens through the held handle of the removed root: it must say the same.
    const reply = await c.call('delete_file', { path: 'cache/f1.tmp' });
    expect(readFileSync(join(root, 'cache', 'f1.tmp'), 'utf8')).toBe('new');
    expect(text(reply)).toMatch(/^\[ERR_CONFIRM_OUTSIDE_ROOTS\] .*replaced after start-up/);
  });

  it('s10-G1b (fixed): root renamed away and a new root made with other files: a file in a directory only the new root has is refused as "replaced after start-up", not "does not exist"', async () => {
    const { c } = await serve();
    await grantOn(c, 'cache/f0.tmp');
    renameSync(root, join(R, 'root.old'));
    mkdirSync(join(root, 'cache'), { recursive: true });
    mkdirSync(join(root, 'fresh'), { recursive: true });
    writeFileSync(join(root, 'fresh', 'only-new.tmp'), 'new');
    const reply = await c.call('delete_file', { path: 'fresh/only-new.tmp' });
    expect(readFileSync(join(root, 'fresh', 'only-new.tmp'), 'utf8')).toBe('new');
    // Control: a file in both is refused with the clear code.
    writeFileSync(join(root, 'cache', 'f1.tmp'), 'new');
    expect(text(await c.call('delete_file', { path: 'cache/f1.tmp' }))).toMatch(/^\[ERR_CONFIRM_OUTSIDE_ROOTS\]/);
    expect(text(reply)).toMatch(/^\[ERR_CONFIRM_OUTSIDE_ROOTS\]/);
  });

  it('a directory below swapped for a symbolic link to an outside copy: asked or refused, outside intact; control: the real directory back, it runs under the grant', async () => {
    const { c } = await serve();
    await grantOn(c, 'cache/f0.tmp');
    renameSync(join(root, 'cache'), join(R, 'cache.real'));
    symlinkSync(join(outside, 'cache'), join(root, 'cache'));
    const reply = await c.call('delete_file', { path: 'cache/f1.tmp' });
    expect(text(reply)).toMatch(/^\[ERR_CONFIRM_SYMLINK\]/);
    // A symbolic link to the very directory granted (same inode behind it): still not followed.
    unlinkSync(join(root, 'cache'));
    symlinkSync(join(R, 'cache.real'), join(root, 'cache'));
    expect(text(await c.call('delete_file', { path: 'cache/f1.tmp' }))).toMatch(/^\[ERR_CONFIRM_SYMLINK\]/);
    expect(existsSync(join(R, 'cache.real', 'f1.tmp'))).toBe(true);
    outsideIntact();
    unlinkSync(join(root, 'cache'));
    renameSync(join(R, 'cache.real'), join(root, 'cache'));
    expect(text(await c.call('delete_file', { path: 'cache/f1.tmp' }))).toContain('Done under grant');
  });
});

describe('s10 held root: changed while a call under the grant is in flight', () => {
  const cases: Array<[string, () => void, RegExp]> = [
    [
      'the granted directory moved out of the root',
      () => renameSync(join(root, 'cache'), join(R, 'moved-cache')),
      /^\[ERR_CONFIRM_CHANGED\]/,
    ],
    [
      'the granted directory moved out and a symbolic link to it put at its name',
      () => {
        renameSync(join(root, 'cache'), join(R, 'moved-cache'));
        symlinkSync(join(R, 'moved-cache'), join(root, 'cache'));
      },
      /^\[ERR_CONFIRM_CHANGED\]/,
    ],
    [
      'the granted directory swapped with an outside directory of the same contents',
      () => {
        renameSync(join(root, 'cache'), join(R, 'moved-cache'));
        renameSync(join(outside, 'cache'), join(root, 'cache'));
      },
      /^\[ERR_CONFIRM_CHANGED\]/,
    ],
    [
      'the root moved away and a copy put at its path',
      () => {
        renameSync(root, join(R, 'root.old'));
        cpSync(join(R, 'root.old'), root, { recursive: true });
      },
      /^\[ERR_CONFIRM_CHANGED\]/,
    ],
    [
      'the file replaced by a hard link to an outside file',
      () => {
        unlinkSync(join(root, 'cache', 'f2.tmp'));
        linkSync(join(outside, 'cache', 'f2.tmp'), join(root, 'cache', 'f2.tmp'));
      },
      /^\[ERR_CONFIRM_CHANGED\]/,
    ],
  ];
  it.each(cases)('%s: refused, nothing deleted; the refusal says the use was spent', async (_what, change, code) => {
    const { c, arm } = await serve();
    await grantOn(c, 'cache/f0.tmp');
    arm(change);
    const reply = await c.call('delete_file', { path: 'cache/f2.tmp' });
    expect(text(reply)).toMatch(code);
    expect(text(reply)).toContain('used one use of grant');
    // Every outside file intact, wherever the swap put it.
    for (const dir of [join(outside, 'cache'), join(root, 'cache')])
      for (let i = 0; i < 6; i++) {
        const p = join(dir, `f${i}.tmp`);
        if (existsSync(p) && readFileSync(p, 'utf8') === VICTIM) expect(readFileSync(p, 'utf8')).toBe(VICTIM);
      }
    if (!_what.includes('swapped')) outsideIntact();
    else for (let i = 0; i < 6; i++) expect(readFileSync(join(root, 'cache', `f${i}.tmp`), 'utf8')).toBe(VICTIM);
    // The approved-directory file is intact wherever its directory went.
    const where = [
      join(root, 'cache', 'f2.tmp'),
      join(R, 'moved-cache', 'f2.tmp'),
      join(R, 'root.old', 'cache', 'f2.tmp'),
    ];
    expect(where.some((p) => existsSync(p))).toBe(true);
  });

  it('control: the directory moved away and back while in flight: the approved file is deleted under the grant', async () => {
    const { c, arm } = await serve();
    await grantOn(c, 'cache/f0.tmp');
    arm(() => {
      renameSync(join(root, 'cache'), join(R, 'moved-cache'));
      renameSync(join(R, 'moved-cache'), join(root, 'cache'));
    });
    expect(text(await c.call('delete_file', { path: 'cache/f2.tmp' }))).toContain('Done under grant');
    expect(existsSync(join(root, 'cache', 'f2.tmp'))).toBe(false);
    outsideIntact();
  });
});
