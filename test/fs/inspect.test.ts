import { linkSync, lstatSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Roots } from '../../src/fs/roots.js';
import { inspectFile, isFileFingerprint, type FileFingerprint } from '../../src/fs/target.js';
import { defaultFsOps, type FsOps } from '../../src/fs/ops.js';
import {
  makeSandbox,
  mkfifo,
  mksocket,
  osError,
  put,
  rejectsWith,
  symlink,
  VICTIM_CONTENT,
  type Sandbox,
} from './helpers.js';

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
        {
          name: 'b',
          dev: st(join(sb.allowed, 'a', 'b')).dev.toString(),
          ino: st(join(sb.allowed, 'a', 'b')).ino.toString(),
        },
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

/** ops under which any system call fails the test. */
const noSyscall: Partial<FsOps> = {
  lstat: () => Promise.reject(new Error('no system call expected')),
  realpath: () => Promise.reject(new Error('no system call expected')),
  cwd: () => {
    throw new Error('no system call expected');
  },
  chdir: () => {
    throw new Error('no system call expected');
  },
  lstatSync: () => {
    throw new Error('no system call expected');
  },
};

describe('inspectFile: bad arguments (ERR_CONFIRM_BAD_ARGUMENT, before any system call)', () => {
  it.each([
    ['an empty path', ''],
    ['a path with NUL', 'data.txt\0.png'],
    ['a lone high surrogate', 'a\uD800.txt'],
    ['a lone low surrogate', '\uDC00'],
    ['reversed surrogates', 'x\uDC00\uD800'],
  ])('refuses %s with ERR_CONFIRM_BAD_ARGUMENT', async (_what, path) => {
    await rejectsWith(inspectFile(roots, path, { ops: noSyscall }), 'ERR_CONFIRM_BAD_ARGUMENT');
  });

  it.each([
    ['4,097 code units', 4097],
    ['a million code units', 1_000_000],
  ])(
    'refuses a path of %s (longer than PATH_MAX, 4,096) with ERR_CONFIRM_BAD_ARGUMENT before any system call',
    async (_what, length) => {
      const path = 'a/'.repeat(Math.floor(length / 2)) + 'b'.repeat(length % 2);
      expect(path).toHaveLength(length);
      const error = await rejectsWith(inspectFile(roots, path, { ops: noSyscall }), 'ERR_CONFIRM_BAD_ARGUMENT');
      expect(error.message).toContain('longer than 4096');
    },
  );

  it('refuses an over-long path with ERR_CONFIRM_BAD_ARGUMENT even when it also holds NUL or a lone surrogate (length is checked first)', async () => {
    await rejectsWith(inspectFile(roots, '\0'.repeat(5000), { ops: noSyscall }), 'ERR_CONFIRM_BAD_ARGUMENT').then((e) =>
      expect(e.message).toContain('longer'),
    );
    await rejectsWith(inspectFile(roots, '\uD800'.repeat(5000), { ops: noSyscall }), 'ERR_CONFIRM_BAD_ARGUMENT').then(
      (e) => expect(e.message).toContain('longer'),
    );
  });

  it('control: a path of exactly 4,096 code units is not refused for its length', async () => {
    put(join(sb.allowed, 'data.txt'), 'x');
    const path = './'.repeat(2044) + 'data.txt';
    expect(path).toHaveLength(4096);
    expect((await inspectFile(roots, path)).path).toBe(join(sb.allowed, 'data.txt'));
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

describe('inspectFile: `..` and trailing slashes mean what the system would make of them', () => {
  beforeEach(() => {
    put(join(sb.allowed, 'x.txt'), 'inside');
    put(join(sb.R, 'x.txt'), 'next to the root'); // where outside/../x.txt leads
    put(join(sb.allowed, 'sub', 'y.txt'), 'y');
    put(join(sb.allowed, 'deep', 'real', 'z.txt'), 'z');
    put(join(sb.allowed, 't1.txt'), 't1');
  });

  it('refuses lnk/../x.txt, where lnk is a symlink to a directory outside, with ERR_CONFIRM_SYMLINK (the system would mean outside/../x.txt); both x.txt are intact', async () => {
    symlink(sb.outside, join(sb.allowed, 'lnk'));
    const error = await rejectsWith(inspectFile(roots, 'lnk/../x.txt'), 'ERR_CONFIRM_SYMLINK');
    expect(error.message).toContain('".."');
    await rejectsWith(inspectFile(roots, `${sb.allowed}/lnk/../x.txt`), 'ERR_CONFIRM_SYMLINK');
    expect(readFileSync(join(sb.allowed, 'x.txt'), 'utf8')).toBe('inside');
    expect(readFileSync(join(sb.R, 'x.txt'), 'utf8')).toBe('next to the root');
  });

  it('refuses a `..` over a symlink that points inside the root too (lnk -> deep/real: the system would mean deep/x.txt)', async () => {
    symlink('deep/real', join(sb.allowed, 'lnk'));
    await rejectsWith(inspectFile(roots, 'lnk/../x.txt'), 'ERR_CONFIRM_SYMLINK');
  });

  it('refuses a `..` that steps back over a symlink deeper in the path (deep/lnk/../../x.txt), without following the symlink to check what is below it', async () => {
    symlink(sb.outside, join(sb.allowed, 'deep', 'lnk'));
    const looked: string[] = [];
    const ops: Partial<FsOps> = {
      lstat: (p) => {
        looked.push(p);
        return defaultFsOps.lstat(p);
      },
    };
    await rejectsWith(inspectFile(roots, 'deep/lnk/sub/../../../x.txt', { ops }), 'ERR_CONFIRM_SYMLINK');
    // deep, then deep/lnk (refused): deep/lnk/sub, which lies behind the link, is never looked at.
    expect(looked).toEqual([join(sb.allowed, 'deep'), join(sb.allowed, 'deep', 'lnk')]);
  });

  it('refuses a `..` stepping back from a regular file or from a missing directory with ERR_CONFIRM_GONE (the system says ENOTDIR / ENOENT)', async () => {
    await rejectsWith(inspectFile(roots, 't1.txt/../x.txt'), 'ERR_CONFIRM_GONE');
    await rejectsWith(inspectFile(roots, 'missing/../x.txt'), 'ERR_CONFIRM_GONE');
  });

  it('refuses a `..` stepping back from a directory outside every root with ERR_CONFIRM_OUTSIDE_ROOTS, before any system call', async () => {
    await rejectsWith(
      inspectFile(roots, `${sb.outside}/../allowed/x.txt`, { ops: noSyscall }),
      'ERR_CONFIRM_OUTSIDE_ROOTS',
    );
    await rejectsWith(
      inspectFile(roots, `${sb.R}/../${sb.R.split('/').pop()}/allowed/x.txt`, { ops: noSyscall }),
      'ERR_CONFIRM_OUTSIDE_ROOTS',
    );
  });

  it('control: a `..` over real directories is accepted and gives the same fingerprint as the direct path (sub/../x.txt, deep/real/../../x.txt)', async () => {
    const direct = await inspectFile(roots, 'x.txt');
    expect(await inspectFile(roots, 'sub/../x.txt')).toEqual(direct);
    expect(await inspectFile(roots, 'deep/real/../../x.txt')).toEqual(direct);
    expect(await inspectFile(roots, `${sb.allowed}/sub/../x.txt`)).toEqual(direct);
    // `..` from the root back into it, spelled absolutely.
    expect(await inspectFile(roots, `${sb.allowed}/../allowed/x.txt`)).toEqual(direct);
  });

  it.each([
    ['t1.txt/', 't1.txt/'],
    ['t1.txt/.', 't1.txt/.'],
    ['sub/y.txt/.', 'sub/y.txt/.'],
    ['sub/y.txt//', 'sub/y.txt//'],
    ['sub/y.txt/..', 'sub/y.txt/..'],
    ['sub/ (a real directory)', 'sub/'],
    ['missing/ (nothing there)', 'missing/'],
  ])(
    'refuses %s, which can only name a directory, with ERR_CONFIRM_NOT_REGULAR_FILE before any system call',
    async (_what, path) => {
      const error = await rejectsWith(inspectFile(roots, path, { ops: noSyscall }), 'ERR_CONFIRM_NOT_REGULAR_FILE');
      expect(error.message).toContain('ends with "/"');
      await rejectsWith(
        inspectFile(roots, `${sb.allowed}/${path}`, { ops: noSyscall }),
        'ERR_CONFIRM_NOT_REGULAR_FILE',
      );
    },
  );

  it('control: the same files without the trailing slash are accepted', async () => {
    expect((await inspectFile(roots, 't1.txt')).path).toBe(join(sb.allowed, 't1.txt'));
    expect((await inspectFile(roots, 'sub/y.txt')).path).toBe(join(sb.allowed, 'sub', 'y.txt'));
    expect((await inspectFile(roots, 'sub//./y.txt')).path).toBe(join(sb.allowed, 'sub', 'y.txt'));
  });
});

describe('inspectFile: the walk holds each directory by inode', () => {
  it('refuses with ERR_CONFIRM_SYMLINK when a directory is swapped for a symlink between its lstat and entering it (injected), and records nothing of the other directory', async () => {
    put(join(sb.allowed, 'a', 'data.txt'), 'mine');
    put(join(sb.outside, 'a', 'data.txt'), 'them');
    let swapped = false;
    const ops: Partial<FsOps> = {
      chdir: (p) => {
        if (p === 'a' && !swapped) {
          swapped = true;
          renameSync(join(sb.allowed, 'a'), join(sb.allowed, 'a.real'));
          symlink(join(sb.outside, 'a'), join(sb.allowed, 'a'));
        }
        defaultFsOps.chdir(p);
      },
    };
    const error = await rejectsWith(inspectFile(roots, 'a/data.txt', { ops }), 'ERR_CONFIRM_SYMLINK');
    expect(error.message).toContain('swapped');
    expect(swapped).toBe(true);
  });

  it('looks up each name relative to the directory entered, and puts the working directory back, after success and after a refusal', async () => {
    put(join(sb.allowed, 'a', 'b', 'data.txt'), 'x');
    const cwdBefore = process.cwd();
    const calls: string[] = [];
    const ops: Partial<FsOps> = {
      chdir: (p) => {
        calls.push(`chdir ${p}`);
        defaultFsOps.chdir(p);
      },
      lstatSync: (p) => {
        calls.push(`lstat ${p}`);
        return defaultFsOps.lstatSync(p);
      },
    };
    await inspectFile(roots, 'a/b/data.txt', { ops });
    expect(calls).toEqual([
      `chdir ${sb.allowed}`,
      'lstat .',
      'lstat a',
      'chdir a',
      'lstat .',
      'lstat b',
      'chdir b',
      'lstat .',
      'lstat data.txt',
      `chdir ${cwdBefore}`,
    ]);
    expect(process.cwd()).toBe(cwdBefore);
    await rejectsWith(inspectFile(roots, 'a/b/missing.txt'), 'ERR_CONFIRM_GONE');
    expect(process.cwd()).toBe(cwdBefore);
  });

  it('refuses with ERR_CONFIRM_OS before any system call when not on the main thread (injected)', async () => {
    put(join(sb.allowed, 'data.txt'), 'x');
    const error = await rejectsWith(
      inspectFile(roots, 'data.txt', { ops: { ...noSyscall, isMainThread: () => false } }),
      'ERR_CONFIRM_OS',
    );
    expect(error.osCode).toBe('ERR_WORKER_UNSUPPORTED_OPERATION');
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
      lstatSync: (p) => {
        throw osError('EACCES', 'lstat', p);
      },
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
