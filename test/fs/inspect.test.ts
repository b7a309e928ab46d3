import { linkSync, lstatSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Roots } from '../../src/fs/roots.js';
import { inspectFile, isFileFingerprint, type FileFingerprint } from '../../src/fs/target.js';
import type { FsOps } from '../../src/fs/ops.js';
import { makeSandbox, mkfifo, mksocket, osError, put, rejectsWith, symlink, VICTIM_CONTENT, type Sandbox } from './helpers.js';

let sb: Sandbox;
let roots: Roots;
const servers: Server[] = [];
beforeEach(async () => {
  sb = makeSandbox();
  roots = await Roots.open([sb.allowed]);
});
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
  sb.cleanup();
});

describe('inspectFile: what it records', () => {
  it('fingerprints a file by a relative path: canonical path, size, nlink, and the identity of every directory on the way', async () => {
    put(join(sb.allowed, 'a', 'b', 'data.txt'), 'hello world\n');
    const fp = await inspectFile(roots, 'a/b/data.txt');
    const st = (p: string) => lstatSync(p, { bigint: true });
    const f = st(join(sb.allowed, 'a', 'b', 'data.txt'));
    expect(fp).toEqual({
      version: 1,
      path: join(sb.allowed, 'a', 'b', 'data.txt'),
      size: '12',
      nlink: '1',
      root: { realPath: sb.allowed, dev: st(sb.allowed).dev.toString(), ino: st(sb.allowed).ino.toString() },
      dirs: [
        { name: 'a', dev: st(join(sb.allowed, 'a')).dev.toString(), ino: st(join(sb.allowed, 'a')).ino.toString() },
        { name: 'b', dev: st(join(sb.allowed, 'a', 'b')).dev.toString(), ino: st(join(sb.allowed, 'a', 'b')).ino.toString() },
      ],
      name: 'data.txt',
      file: {
        dev: f.dev.toString(),
        ino: f.ino.toString(),
        type: 'regular file',
        mtimeNs: f.mtimeNs.toString(),
        ctimeNs: f.ctimeNs.toString(),
      },
    } satisfies FileFingerprint);
  });

  it('produces a fingerprint that survives a JSON round trip unchanged and still validates', async () => {
    put(join(sb.allowed, 'data.txt'), 'x');
    const fp = await inspectFile(roots, 'data.txt');
    const back: unknown = JSON.parse(JSON.stringify(fp));
    expect(back).toEqual(fp);
    expect(isFileFingerprint(back)).toBe(true);
    expect(fp.dirs).toEqual([]);
  });

  it('gives the same fingerprint for an absolute path and for a relative path with an inner `..` that stays inside', async () => {
    put(join(sb.allowed, 'a', 'data.txt'), 'x');
    mkdirSync(join(sb.allowed, 'b'));
    const abs = await inspectFile(roots, join(sb.allowed, 'a', 'data.txt'));
    const rel = await inspectFile(roots, 'b/../a/./data.txt');
    expect(rel).toEqual(abs);
    expect(rel.path).toBe(join(sb.allowed, 'a', 'data.txt'));
  });

  it('records the link count so the question can say only this name is removed', async () => {
    put(join(sb.allowed, 'data.txt'), 'x');
    linkSync(join(sb.allowed, 'data.txt'), join(sb.allowed, 'other-name.txt'));
    expect((await inspectFile(roots, 'data.txt')).nlink).toBe('2');
  });

  it('resolves relative paths against the first root and accepts absolute paths in any root', async () => {
    const second = join(sb.R, 'second');
    put(join(second, 'two.txt'), '2');
    put(join(sb.allowed, 'one.txt'), '1');
    const both = await Roots.open([sb.allowed, second]);
    expect((await inspectFile(both, 'one.txt')).path).toBe(join(sb.allowed, 'one.txt'));
    expect((await inspectFile(both, join(second, 'two.txt'))).root.realPath).toBe(second);
    // Relative `..` into another root is inside that root.
    expect((await inspectFile(both, '../second/two.txt')).path).toBe(join(second, 'two.txt'));
  });

  it('accepts a path spelled through the root as given (a symlinked ancestor) and records the canonical path', async () => {
    const real = join(sb.R, 'real');
    put(join(real, 'root', 'data.txt'), 'x');
    symlink(real, join(sb.R, 'alias'));
    const aliased = await Roots.open([join(sb.R, 'alias', 'root')]);
    const fp = await inspectFile(aliased, join(sb.R, 'alias', 'root', 'data.txt'));
    expect(fp.path).toBe(join(real, 'root', 'data.txt'));
  });

  it('uses the most specific root when roots are nested', async () => {
    put(join(sb.allowed, 'inner', 'data.txt'), 'x');
    const nested = await Roots.open([sb.allowed, join(sb.allowed, 'inner')]);
    const fp = await inspectFile(nested, join(sb.allowed, 'inner', 'data.txt'));
    expect(fp.root.realPath).toBe(join(sb.allowed, 'inner'));
    expect(fp.dirs).toEqual([]);
  });
});

describe('inspectFile: bad arguments (ERR_CONFIRM_BAD_ARGUMENT, before any system call)', () => {
  const noSyscall: Partial<FsOps> = {
    lstat: () => Promise.reject(new Error('no system call expected')),
    realpath: () => Promise.reject(new Error('no system call expected')),
  };
  it.each([
    ['an empty path', ''],
    ['a path with NUL', 'data.txt\0.png'],
    ['a lone high surrogate', 'a\uD800.txt'],
    ['a lone low surrogate', '\uDC00'],
    ['reversed surrogates', 'x\uDC00\uD800'],
  ])('refuses %s with ERR_CONFIRM_BAD_ARGUMENT', async (_what, path) => {
    await rejectsWith(inspectFile(roots, path, { ops: noSyscall }), 'ERR_CONFIRM_BAD_ARGUMENT');
  });

  it('control: a well-formed astral name (a surrogate pair) is accepted', async () => {
    put(join(sb.allowed, '\u{1F600}.txt'), 'x');
    expect((await inspectFile(roots, '\u{1F600}.txt')).name).toBe('\u{1F600}.txt');
  });
});

describe('inspectFile: fs-1 prefix confusion (ERR_CONFIRM_OUTSIDE_ROOTS)', () => {
  beforeEach(() => {
    put(join(sb.R, 'allowed_evil', 'x.txt'), 'evil');
    put(join(sb.R, 'allowed-x', 'x.txt'), 'evil');
    put(join(sb.allowed, 'x.txt'), 'fine');
  });

  it('refuses R/allowed_evil/x.txt (shares a string prefix with the root)', async () => {
    await rejectsWith(inspectFile(roots, join(sb.R, 'allowed_evil', 'x.txt')), 'ERR_CONFIRM_OUTSIDE_ROOTS');
  });

  it('refuses R/allowed/../allowed_evil/x.txt', async () => {
    await rejectsWith(inspectFile(roots, `${sb.allowed}/../allowed_evil/x.txt`), 'ERR_CONFIRM_OUTSIDE_ROOTS');
  });

  it('refuses relative ../allowed-x/x.txt', async () => {
    await rejectsWith(inspectFile(roots, '../allowed-x/x.txt'), 'ERR_CONFIRM_OUTSIDE_ROOTS');
  });

  it('refuses a path outside entirely, and `..` climbing past the root', async () => {
    await rejectsWith(inspectFile(roots, sb.victim), 'ERR_CONFIRM_OUTSIDE_ROOTS');
    await rejectsWith(inspectFile(roots, '../../../../../../etc/passwd'), 'ERR_CONFIRM_OUTSIDE_ROOTS');
    await rejectsWith(inspectFile(roots, '..'), 'ERR_CONFIRM_OUTSIDE_ROOTS');
  });

  it('control: R/allowed/x.txt is accepted, absolute and relative', async () => {
    expect((await inspectFile(roots, join(sb.allowed, 'x.txt'))).path).toBe(join(sb.allowed, 'x.txt'));
    expect((await inspectFile(roots, 'x.txt')).path).toBe(join(sb.allowed, 'x.txt'));
  });

  it('refuses the root itself as a directory (ERR_CONFIRM_NOT_REGULAR_FILE)', async () => {
    await rejectsWith(inspectFile(roots, sb.allowed), 'ERR_CONFIRM_NOT_REGULAR_FILE');
    await rejectsWith(inspectFile(roots, '.'), 'ERR_CONFIRM_NOT_REGULAR_FILE');
  });
});

describe('inspectFile: fs-2 symlinks (ERR_CONFIRM_SYMLINK), victim intact', () => {
  it('refuses a leaf symlink to a file outside the root', async () => {
    symlink(sb.victim, join(sb.allowed, 'link'));
    await rejectsWith(inspectFile(roots, 'link'), 'ERR_CONFIRM_SYMLINK');
    expect(readFileSync(sb.victim, 'utf8')).toBe(VICTIM_CONTENT);
  });

  it('refuses a file reached through a directory symlink to outside the root', async () => {
    symlink(sb.outside, join(sb.allowed, 'dir'));
    const error = await rejectsWith(inspectFile(roots, 'dir/victim.txt'), 'ERR_CONFIRM_SYMLINK');
    expect(error.message).toContain('directory on the way');
    expect(readFileSync(sb.victim, 'utf8')).toBe(VICTIM_CONTENT);
  });

  it('refuses a leaf symlink even when it points inside the root', async () => {
    put(join(sb.allowed, 'real.txt'), 'x');
    symlink('real.txt', join(sb.allowed, 'link.txt'));
    await rejectsWith(inspectFile(roots, 'link.txt'), 'ERR_CONFIRM_SYMLINK');
  });

  it('refuses a directory symlink even when it points inside the root', async () => {
    put(join(sb.allowed, 'real', 'data.txt'), 'x');
    symlink('real', join(sb.allowed, 'alias'));
    await rejectsWith(inspectFile(roots, 'alias/data.txt'), 'ERR_CONFIRM_SYMLINK');
  });

  it('refuses a dangling symlink as a symlink (not as missing)', async () => {
    symlink(join(sb.R, 'nowhere'), join(sb.allowed, 'dangling'));
    await rejectsWith(inspectFile(roots, 'dangling'), 'ERR_CONFIRM_SYMLINK');
  });

  it('control: the same names as real files and directories are accepted', async () => {
    put(join(sb.allowed, 'link'), 'x');
    put(join(sb.allowed, 'dir', 'victim.txt'), 'x');
    await expect(inspectFile(roots, 'link')).resolves.toMatchObject({ name: 'link' });
    await expect(inspectFile(roots, 'dir/victim.txt')).resolves.toMatchObject({ name: 'victim.txt' });
  });

  it('refuses with ERR_CONFIRM_OUTSIDE_ROOTS when the root was replaced after start-up', async () => {
    renameSync(sb.allowed, join(sb.R, 'allowed.old'));
    put(join(sb.allowed, 'data.txt'), 'x');
    await rejectsWith(inspectFile(roots, 'data.txt'), 'ERR_CONFIRM_OUTSIDE_ROOTS');
  });
});

describe('inspectFile: the final realpath check (really inside)', () => {
  it('refuses when a directory above the root became a symlink after start-up (the real path is no longer the walked one)', async () => {
    const base = join(sb.R, 'base');
    put(join(base, 'root', 'data.txt'), 'x');
    const pinned = await Roots.open([join(base, 'root')]);
    renameSync(base, join(sb.R, 'base2'));
    symlink(join(sb.R, 'base2'), base);
    await rejectsWith(inspectFile(pinned, 'data.txt'), 'ERR_CONFIRM_OUTSIDE_ROOTS');
  });

  it('refuses with ERR_CONFIRM_SYMLINK when the real path differs but stays inside a root (a swap during the walk, injected)', async () => {
    put(join(sb.allowed, 'data.txt'), 'x');
    const ops: Partial<FsOps> = { realpath: () => Promise.resolve(join(sb.allowed, 'elsewhere.txt')) };
    await rejectsWith(inspectFile(roots, 'data.txt', { ops }), 'ERR_CONFIRM_SYMLINK');
  });

  it('refuses with ERR_CONFIRM_OUTSIDE_ROOTS when the real path lands outside every root (injected)', async () => {
    put(join(sb.allowed, 'data.txt'), 'x');
    const ops: Partial<FsOps> = { realpath: () => Promise.resolve(sb.victim) };
    await rejectsWith(inspectFile(roots, 'data.txt', { ops }), 'ERR_CONFIRM_OUTSIDE_ROOTS');
  });

  it('control: with the real realpath, the same file is accepted', async () => {
    put(join(sb.allowed, 'data.txt'), 'x');
    await expect(inspectFile(roots, 'data.txt')).resolves.toMatchObject({ path: join(sb.allowed, 'data.txt') });
  });
});

describe('inspectFile: not there, not a regular file, OS refusals', () => {
  it('refuses a missing file with ERR_CONFIRM_GONE saying nothing was asked', async () => {
    const error = await rejectsWith(inspectFile(roots, 'missing.txt'), 'ERR_CONFIRM_GONE');
    expect(error.message).toContain('nothing was asked');
    await rejectsWith(inspectFile(roots, 'no/such/dir/file.txt'), 'ERR_CONFIRM_GONE');
  });

  it('refuses a path through a regular file (file.txt/x) with ERR_CONFIRM_GONE', async () => {
    put(join(sb.allowed, 'file.txt'), 'x');
    await rejectsWith(inspectFile(roots, 'file.txt/x'), 'ERR_CONFIRM_GONE');
  });

  it('refuses a directory with ERR_CONFIRM_NOT_REGULAR_FILE naming a directory', async () => {
    mkdirSync(join(sb.allowed, 'sub'));
    const error = await rejectsWith(inspectFile(roots, 'sub'), 'ERR_CONFIRM_NOT_REGULAR_FILE');
    expect(error.message).toContain('names a directory');
  });

  it('refuses a FIFO with ERR_CONFIRM_NOT_REGULAR_FILE (without opening it)', async () => {
    mkfifo(join(sb.allowed, 'pipe'));
    const error = await rejectsWith(inspectFile(roots, 'pipe'), 'ERR_CONFIRM_NOT_REGULAR_FILE');
    expect(error.message).toContain('FIFO');
  });

  it('refuses a unix socket with ERR_CONFIRM_NOT_REGULAR_FILE', async () => {
    servers.push(await mksocket(join(sb.allowed, 'sock')));
    const error = await rejectsWith(inspectFile(roots, 'sock'), 'ERR_CONFIRM_NOT_REGULAR_FILE');
    expect(error.message).toContain('socket');
  });

  it('refuses a character device (/dev/null under a root /dev) with ERR_CONFIRM_NOT_REGULAR_FILE', async () => {
    expect(lstatSync('/dev/null').isCharacterDevice()).toBe(true);
    const dev = await Roots.open(['/dev']);
    const error = await rejectsWith(inspectFile(dev, 'null'), 'ERR_CONFIRM_NOT_REGULAR_FILE');
    expect(error.message).toContain('character device');
  });

  it('refuses a name longer than the OS allows with ERR_CONFIRM_OS ENAMETOOLONG (a real refusal)', async () => {
    const error = await rejectsWith(inspectFile(roots, 'n'.repeat(300)), 'ERR_CONFIRM_OS');
    expect(error.osCode).toBe('ENAMETOOLONG');
    expect(error.message).toContain('inspect the file');
  });

  it('maps another OS refusal of lstat (EACCES, injected) to ERR_CONFIRM_OS naming the reason', async () => {
    put(join(sb.allowed, 'data.txt'), 'x');
    const ops: Partial<FsOps> = {
      lstat: (p) => Promise.reject(osError('EACCES', 'lstat', p)),
    };
    const error = await rejectsWith(inspectFile(roots, 'data.txt', { ops }), 'ERR_CONFIRM_OS');
    expect(error.osCode).toBe('EACCES');
    expect(error.message).toContain('permission denied');
  });

  it('control: a regular file next to them is accepted', async () => {
    writeFileSync(join(sb.allowed, 'plain.txt'), 'x');
    await expect(inspectFile(roots, 'plain.txt')).resolves.toMatchObject({ size: '1' });
  });
});
