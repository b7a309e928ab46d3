/**
 * `openFile`: round 1 and the deletion in one walk, the directories held open in between (what
 * `delete_file` does under a grant or a plan slot). Every swap happens between the opening and the
 * deletion, where the guard awaits its store and audit trail; each attack has its control.
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Roots } from '../../src/fs/roots.js';
import { defaultFsOps } from '../../src/fs/ops.js';
import { deleteVerified, inspectFile, openFile, type OpenedFile } from '../../src/fs/target.js';
import { identity, makeSandbox, put, quarantinedIn, rejectsWith, symlink, type Sandbox } from './helpers.js';

const DATA = 'original data\n';

let sb: Sandbox;
let roots: Roots;
const opened: OpenedFile[] = [];

beforeEach(async () => {
  sb = makeSandbox('mcp-confirm-open-');
  put(join(sb.allowed, 'cache', 'a.tmp'), DATA);
  roots = await Roots.open([sb.allowed]);
});

afterEach(() => {
  for (const f of opened.splice(0)) f.close();
  sb.cleanup();
});

async function open(path: string, options?: Parameters<typeof openFile>[2]): Promise<OpenedFile> {
  const f = await openFile(roots, path, options);
  opened.push(f);
  return f;
}

/** The descriptors this process has open. */
const openDescriptors = (): number => readdirSync('/proc/self/fd').length;

describe('openFile', () => {
  it('takes the same fingerprint inspectFile takes, and deletes the file through the directories it holds', async () => {
    const f = await open('cache/a.tmp');
    expect(f.fingerprint).toEqual(await inspectFile(roots, 'cache/a.tmp'));
    const done = await f.delete(f.fingerprint);
    expect(done).toEqual({ path: join(sb.allowed, 'cache', 'a.tmp'), size: BigInt(DATA.length) });
    expect(existsSync(join(sb.allowed, 'cache', 'a.tmp'))).toBe(false);
    expect(quarantinedIn(join(sb.allowed, 'cache'))).toEqual([]);
  });

  it('refuses with ERR_CONFIRM_CHANGED when the directory was moved out of the root after opening; the file outside is intact (control: moved back, it is deleted)', async () => {
    const f = await open('cache/a.tmp');
    renameSync(join(sb.allowed, 'cache'), join(sb.outside, 'cache'));
    await rejectsWith(f.delete(f.fingerprint), 'ERR_CONFIRM_CHANGED');
    expect(readFileSync(join(sb.outside, 'cache', 'a.tmp'), 'utf8')).toBe(DATA);
    renameSync(join(sb.outside, 'cache'), join(sb.allowed, 'cache'));
    await f.delete(f.fingerprint);
    expect(existsSync(join(sb.allowed, 'cache', 'a.tmp'))).toBe(false);
  });

  it('refuses with ERR_CONFIRM_CHANGED when a directory above the file was replaced by another holding the same directory (only the upper one differs); nothing is deleted', async () => {
    put(join(sb.allowed, 'top', 'mid', 'data.txt'), DATA);
    const f = await open('top/mid/data.txt');
    // A new `top` takes the place of the old one, and the very same `mid` moves into it.
    renameSync(join(sb.allowed, 'top'), join(sb.allowed, 'top-old'));
    mkdirSync(join(sb.allowed, 'top'));
    renameSync(join(sb.allowed, 'top-old', 'mid'), join(sb.allowed, 'top', 'mid'));
    await rejectsWith(f.delete(f.fingerprint), 'ERR_CONFIRM_CHANGED');
    expect(readFileSync(join(sb.allowed, 'top', 'mid', 'data.txt'), 'utf8')).toBe(DATA);
  });

  it('refuses with ERR_CONFIRM_CHANGED when the directory was swapped for another of the same name holding a file of the same name; neither file is deleted', async () => {
    const f = await open('cache/a.tmp');
    renameSync(join(sb.allowed, 'cache'), join(sb.allowed, 'cache-old'));
    put(join(sb.allowed, 'cache', 'a.tmp'), DATA);
    await rejectsWith(f.delete(f.fingerprint), 'ERR_CONFIRM_CHANGED');
    expect(readFileSync(join(sb.allowed, 'cache', 'a.tmp'), 'utf8')).toBe(DATA);
    expect(readFileSync(join(sb.allowed, 'cache-old', 'a.tmp'), 'utf8')).toBe(DATA);
  });

  it('refuses with ERR_CONFIRM_CHANGED when the file was replaced by another of the same size after opening; the new one is kept', async () => {
    const f = await open('cache/a.tmp');
    unlinkSync(join(sb.allowed, 'cache', 'a.tmp'));
    writeFileSync(join(sb.allowed, 'cache', 'a.tmp'), 'imposter data\n');
    const before = identity(join(sb.allowed, 'cache', 'a.tmp'));
    await rejectsWith(f.delete(f.fingerprint), 'ERR_CONFIRM_CHANGED');
    expect(identity(join(sb.allowed, 'cache', 'a.tmp'))).toBe(before);
    expect(quarantinedIn(join(sb.allowed, 'cache'))).toEqual([]);
  });

  it('holds the file to the fingerprint it is given: one taken before the file changed is refused (control: one taken now deletes it)', async () => {
    const seen = await inspectFile(roots, 'cache/a.tmp');
    writeFileSync(join(sb.allowed, 'cache', 'a.tmp'), 'changed since it was seen\n');
    const f = await open('cache/a.tmp');
    await rejectsWith(f.delete(seen), 'ERR_CONFIRM_CHANGED');
    expect(readFileSync(join(sb.allowed, 'cache', 'a.tmp'), 'utf8')).toBe('changed since it was seen\n');
    await f.delete(f.fingerprint);
    expect(existsSync(join(sb.allowed, 'cache', 'a.tmp'))).toBe(false);
  });

  it('refuses a fingerprint whose directory is another one than the directory opened (same name), ERR_CONFIRM_CHANGED', async () => {
    const seen = await inspectFile(roots, 'cache/a.tmp');
    renameSync(join(sb.allowed, 'cache'), join(sb.allowed, 'cache-old'));
    mkdirSync(join(sb.allowed, 'cache'));
    renameSync(join(sb.allowed, 'cache-old', 'a.tmp'), join(sb.allowed, 'cache', 'a.tmp'));
    const f = await open('cache/a.tmp');
    await rejectsWith(f.delete(seen), 'ERR_CONFIRM_CHANGED');
    expect(readFileSync(join(sb.allowed, 'cache', 'a.tmp'), 'utf8')).toBe(DATA);
  });

  it('refuses a symbolic link on the way or at the end as inspectFile does, ERR_CONFIRM_SYMLINK, holding nothing open', async () => {
    symlink(sb.outside, join(sb.allowed, 'link'));
    symlink(sb.victim, join(sb.allowed, 'cache', 'victim.txt'));
    // The root's own handle is held from the first call on (for as long as the roots live): count after it.
    (await openFile(roots, 'cache/a.tmp')).close();
    const before = openDescriptors();
    await rejectsWith(openFile(roots, 'link/victim.txt'), 'ERR_CONFIRM_SYMLINK');
    await rejectsWith(openFile(roots, 'cache/victim.txt'), 'ERR_CONFIRM_SYMLINK');
    await rejectsWith(openFile(roots, 'cache/none.tmp'), 'ERR_CONFIRM_GONE');
    await rejectsWith(openFile(roots, 'cache'), 'ERR_CONFIRM_NOT_REGULAR_FILE');
    await rejectsWith(openFile(roots, '../outside/victim.txt'), 'ERR_CONFIRM_OUTSIDE_ROOTS');
    expect(openDescriptors()).toBe(before);
    expect(readFileSync(sb.victim, 'utf8')).toBe('victim: must survive\n');
  });

  it('closes every directory it held, once (close is idempotent), keeping only the root handle, and deletes nothing after closing', async () => {
    const before = openDescriptors();
    const f = await openFile(roots, 'cache/a.tmp');
    expect(openDescriptors()).toBe(before + 2);
    f.close();
    f.close();
    // The root's handle stays held for the next call; the directory below it is closed.
    expect(openDescriptors()).toBe(before + 1);
    const again = await openFile(roots, 'cache/a.tmp');
    expect(openDescriptors()).toBe(before + 2);
    again.close();
    expect(openDescriptors()).toBe(before + 1);
    await expect(f.delete(f.fingerprint)).rejects.toBeInstanceOf(TypeError);
    expect(readFileSync(join(sb.allowed, 'cache', 'a.tmp'), 'utf8')).toBe(DATA);
  });

  it('without usable directory handles (the root does not read back through /proc/self/fd) it inspects and deletes by the two walks, with the same refusals', async () => {
    const ops = {
      readlinkSync: (path: string) => {
        if (path.startsWith('/proc/self/fd/')) throw Object.assign(new Error('ENOENT: injected'), { code: 'ENOENT' });
        return defaultFsOps.readlinkSync(path);
      },
    };
    const before = openDescriptors();
    const f = await open('cache/a.tmp', { ops });
    expect(openDescriptors()).toBe(before);
    expect(f.fingerprint).toEqual(await inspectFile(roots, 'cache/a.tmp'));
    renameSync(join(sb.allowed, 'cache'), join(sb.outside, 'cache'));
    await rejectsWith(f.delete(f.fingerprint), 'ERR_CONFIRM_GONE');
    renameSync(join(sb.outside, 'cache'), join(sb.allowed, 'cache'));
    await f.delete(f.fingerprint);
    expect(existsSync(join(sb.allowed, 'cache', 'a.tmp'))).toBe(false);
    // The fallback's deletion is deleteVerified's: a second one of the same fingerprint finds nothing.
    await rejectsWith(deleteVerified(roots, f.fingerprint), 'ERR_CONFIRM_GONE');
  });

  it.each([
    ['a file directly in the root', 'a.tmp'],
    ['a file in a directory below the root', 'cache/a.tmp'],
  ])(
    'with the root handle held from an earlier call, the root replaced is refused, ERR_CONFIRM_OUTSIDE_ROOTS, for %s (control: moved back, it is deleted)',
    async (_what, path) => {
      put(join(sb.allowed, 'a.tmp'), DATA);
      (await openFile(roots, 'cache/a.tmp')).close(); // holds the root's handle
      renameSync(sb.allowed, join(sb.R, 'allowed-old'));
      mkdirSync(sb.allowed);
      put(join(sb.allowed, 'cache', 'a.tmp'), DATA);
      put(join(sb.allowed, 'a.tmp'), DATA);
      await rejectsWith(openFile(roots, path), 'ERR_CONFIRM_OUTSIDE_ROOTS');
      expect(readFileSync(join(sb.allowed, path), 'utf8')).toBe(DATA);
      expect(readFileSync(join(sb.R, 'allowed-old', path), 'utf8')).toBe(DATA);
      // Control: the pinned root moved back to its path: the held handle is good again.
      rmSync(sb.allowed, { recursive: true });
      renameSync(join(sb.R, 'allowed-old'), sb.allowed);
      const f = await open(path);
      await f.delete(f.fingerprint);
      expect(existsSync(join(sb.allowed, path))).toBe(false);
    },
  );

  it('with the root handle held, a directory below it moved out of the root after opening is refused at the delete, ERR_CONFIRM_CHANGED', async () => {
    (await openFile(roots, 'cache/a.tmp')).close(); // holds the root's handle
    const f = await open('cache/a.tmp');
    // Moved while held: the delete's containment readback refuses it.
    renameSync(join(sb.allowed, 'cache'), join(sb.outside, 'cache'));
    await rejectsWith(f.delete(f.fingerprint), 'ERR_CONFIRM_CHANGED');
    expect(readFileSync(join(sb.outside, 'cache', 'a.tmp'), 'utf8')).toBe(DATA);
    // Control: moved back, the same opened file is deleted.
    renameSync(join(sb.outside, 'cache'), join(sb.allowed, 'cache'));
    await f.delete(f.fingerprint);
    expect(existsSync(join(sb.allowed, 'cache', 'a.tmp'))).toBe(false);
  });

  it('the root replaced after start-up is refused as inspectFile refuses it, ERR_CONFIRM_OUTSIDE_ROOTS', async () => {
    renameSync(sb.allowed, join(sb.R, 'allowed-old'));
    mkdirSync(sb.allowed);
    put(join(sb.allowed, 'cache', 'a.tmp'), DATA);
    await rejectsWith(openFile(roots, 'cache/a.tmp'), 'ERR_CONFIRM_OUTSIDE_ROOTS');
    rmSync(join(sb.R, 'allowed-old'), { recursive: true });
  });
});
