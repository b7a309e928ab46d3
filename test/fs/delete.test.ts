import { execFile } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import type { Server } from 'node:net';
import { join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Roots } from '../../src/fs/roots.js';
import { defaultFsOps, type FsOps } from '../../src/fs/ops.js';
import {
  deleteVerified,
  findQuarantineLeftovers,
  inspectFile,
  isFileFingerprint,
  type FileFingerprint,
} from '../../src/fs/target.js';
import { renderPath, renderValue } from '../../src/prompt/render.js';
import {
  identity,
  makeSandbox,
  mkfifo,
  mksocket,
  osError,
  put,
  quarantinedIn,
  rejectsWith,
  symlink,
  VICTIM_CONTENT,
  type Sandbox,
} from './helpers.js';

const DATA = 'original data\n';
const SAME_SIZE = 'imposter data\n';

let sb: Sandbox;
let roots: Roots;
const servers: Server[] = [];
/** Paths of the standard layout, set in beforeEach. */
let sub: string; // allowed/a/sub
let file: string; // allowed/a/sub/data.txt (the file confirmed)
let decoy: string; // allowed/other/data.txt (same name and content, inside the root)

beforeEach(async () => {
  sb = makeSandbox();
  sub = join(sb.allowed, 'a', 'sub');
  file = join(sub, 'data.txt');
  decoy = join(sb.allowed, 'other', 'data.txt');
  put(file, DATA);
  put(decoy, DATA);
  put(join(sb.outside, 'sub', 'data.txt'), VICTIM_CONTENT);
  roots = await Roots.open([sb.allowed]);
});
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
  sb.cleanup();
});

/** Round 1 on the standard file, and the fingerprint as it comes back from a sealed state. */
async function roundOne(path = 'a/sub/data.txt'): Promise<FileFingerprint> {
  const fp = await inspectFile(roots, path);
  return JSON.parse(JSON.stringify(fp)) as FileFingerprint;
}

/** No quarantine-named entry anywhere under the sandbox. */
async function expectNoLeftovers(): Promise<void> {
  const everywhere = await Roots.open([sb.R]);
  expect(await findQuarantineLeftovers(everywhere)).toEqual([]);
}

/** Lets the kernel's coarse timestamp clock tick, so a change made now gets a new mtime/ctime. */
const tick = () => sleep(25);

describe('deleteVerified: the plain flow', () => {
  it('deletes the fingerprinted file and returns its canonical path and size in bytes', async () => {
    const fp = await roundOne();
    const done = await deleteVerified(roots, fp);
    expect(done).toEqual({ path: file, size: BigInt(DATA.length) });
    expect(existsSync(file)).toBe(false);
    expect(quarantinedIn(sub)).toEqual([]);
    expect(readFileSync(decoy, 'utf8')).toBe(DATA);
    expect(readFileSync(sb.victim, 'utf8')).toBe(VICTIM_CONTENT);
  });

  it('deletes a file sitting directly in the root', async () => {
    put(join(sb.allowed, 'top.txt'), 'x');
    const done = await deleteVerified(roots, await roundOne('top.txt'));
    expect(done.path).toBe(join(sb.allowed, 'top.txt'));
    expect(existsSync(join(sb.allowed, 'top.txt'))).toBe(false);
  });

  it('removes only the confirmed name of a hard-linked file; the other name keeps the data', async () => {
    const other = join(sb.allowed, 'a', 'hardlink.txt');
    linkSync(file, other);
    const fp = await roundOne();
    expect(fp.nlink).toBe('2');
    await deleteVerified(roots, fp);
    expect(existsSync(file)).toBe(false);
    expect(readFileSync(other, 'utf8')).toBe(DATA);
  });

  it('renames the file to a quarantine name and unlinks it by single names relative to the pinned parent directory, never by path', async () => {
    const fp = await roundOne();
    const calls: string[] = [];
    const ops: Partial<FsOps> = {
      renameSync: (from, to) => {
        calls.push(`rename ${from} -> ${to} in ${process.cwd()}`);
        defaultFsOps.renameSync(from, to);
      },
      unlinkSync: (p) => {
        calls.push(`unlink ${p} in ${process.cwd()}`);
        defaultFsOps.unlinkSync(p);
      },
    };
    await deleteVerified(roots, fp, { ops });
    expect(calls).toHaveLength(2);
    expect(calls[0]).toMatch(new RegExp(`^rename data\\.txt -> (\\.mcp-confirm-quarantine-[0-9a-f]{32}) in ${sub}$`));
    const q = /-> (\S+) in/.exec(calls[0]!)![1]!;
    expect(calls[1]).toBe(`unlink ${q} in ${sub}`);
  });

  it('enters the root and each directory on the way by one name at a time, and puts the working directory back afterwards', async () => {
    const fp = await roundOne();
    const cwdBefore = process.cwd();
    const entered: string[] = [];
    const ops: Partial<FsOps> = {
      chdir: (p) => {
        entered.push(p);
        defaultFsOps.chdir(p);
      },
    };
    await deleteVerified(roots, fp, { ops });
    expect(entered).toEqual([sb.allowed, 'a', 'sub', cwdBefore]);
    expect(process.cwd()).toBe(cwdBefore);
  });

  it('puts the working directory back after a refusal too', async () => {
    const fp = await roundOne();
    const cwdBefore = process.cwd();
    writeFileSync(file, 'rewritten with another size');
    await rejectsWith(deleteVerified(roots, fp), 'ERR_CONFIRM_CHANGED');
    expect(process.cwd()).toBe(cwdBefore);
    expect(readFileSync(file, 'utf8')).toBe('rewritten with another size');
  });

  it('uses a fresh unguessable quarantine name each time', async () => {
    const names = new Set<string>();
    for (let i = 0; i < 5; i++) {
      put(file, DATA);
      const ops: Partial<FsOps> = {
        renameSync: (from, to) => {
          names.add(to);
          defaultFsOps.renameSync(from, to);
        },
      };
      await deleteVerified(roots, await roundOne(), { ops });
    }
    expect(names.size).toBe(5);
  });
});

interface Attack {
  /** What happens between round 1 and round 2. */
  title: string;
  swap: () => void | Promise<void>;
  code: 'ERR_CONFIRM_CHANGED' | 'ERR_CONFIRM_GONE';
  /** Everything that must be intact afterwards. */
  intact: () => void;
}

const victimIntact = () => expect(readFileSync(sb.victim, 'utf8')).toBe(VICTIM_CONTENT);
const movedOriginalIntact = (bak: string) => () => {
  expect(readFileSync(bak, 'utf8')).toBe(DATA);
  victimIntact();
};

const attacks: Attack[] = [
  {
    title: 'the file replaced by a symlink to an outside victim (fs-3)',
    swap: () => {
      renameSync(file, join(sub, 'data.bak'));
      symlink(sb.victim, file);
    },
    code: 'ERR_CONFIRM_CHANGED',
    intact: () => {
      movedOriginalIntact(join(sub, 'data.bak'))();
      expect(lstatSync(file).isSymbolicLink()).toBe(true);
    },
  },
  {
    title: 'the file replaced by a directory (fs-3)',
    swap: () => {
      renameSync(file, join(sub, 'data.bak'));
      put(join(file, 'inside.txt'), 'inside');
    },
    code: 'ERR_CONFIRM_CHANGED',
    intact: () => {
      movedOriginalIntact(join(sub, 'data.bak'))();
      expect(readFileSync(join(file, 'inside.txt'), 'utf8')).toBe('inside');
    },
  },
  {
    title: 'the file replaced by a FIFO (fs-3)',
    swap: () => {
      renameSync(file, join(sub, 'data.bak'));
      mkfifo(file);
    },
    code: 'ERR_CONFIRM_CHANGED',
    intact: () => {
      movedOriginalIntact(join(sub, 'data.bak'))();
      expect(lstatSync(file).isFIFO()).toBe(true);
    },
  },
  {
    title: 'the file replaced by a unix socket',
    swap: async () => {
      renameSync(file, join(sub, 'data.bak'));
      servers.push(await mksocket(file));
    },
    code: 'ERR_CONFIRM_CHANGED',
    intact: () => {
      movedOriginalIntact(join(sub, 'data.bak'))();
      expect(lstatSync(file).isSocket()).toBe(true);
    },
  },
  {
    title: 'the file replaced by a different regular file of the same size (fs-3)',
    swap: () => {
      renameSync(file, join(sub, 'data.bak'));
      writeFileSync(file, SAME_SIZE);
    },
    code: 'ERR_CONFIRM_CHANGED',
    intact: () => {
      movedOriginalIntact(join(sub, 'data.bak'))();
      expect(readFileSync(file, 'utf8')).toBe(SAME_SIZE);
    },
  },
  {
    title: 'the file rewritten in place with content of the same size',
    swap: async () => {
      await tick();
      writeFileSync(file, SAME_SIZE);
    },
    code: 'ERR_CONFIRM_CHANGED',
    intact: () => expect(readFileSync(file, 'utf8')).toBe(SAME_SIZE),
  },
  {
    title: 'the file rewritten and its mtime put back (only the change time differs)',
    swap: async () => {
      const before = lstatSync(file);
      await tick();
      writeFileSync(file, SAME_SIZE);
      utimesSync(file, before.atime, before.mtime);
    },
    code: 'ERR_CONFIRM_CHANGED',
    intact: () => expect(readFileSync(file, 'utf8')).toBe(SAME_SIZE),
  },
  {
    title: 'its mode changed (chmod)',
    swap: async () => {
      await tick();
      chmodSync(file, 0o600);
    },
    code: 'ERR_CONFIRM_CHANGED',
    intact: () => expect(readFileSync(file, 'utf8')).toBe(DATA),
  },
  {
    title: 'a second hard link to it created',
    swap: () => linkSync(file, join(sb.allowed, 'extra-name.txt')),
    code: 'ERR_CONFIRM_CHANGED',
    intact: () => expect(readFileSync(file, 'utf8')).toBe(DATA),
  },
  {
    title:
      'the parent directory swapped for a symlink to another directory inside the root holding a same-named file (fs-3)',
    swap: () => {
      renameSync(sub, join(sb.allowed, 'a', 'sub.bak'));
      symlink('../other', sub);
    },
    code: 'ERR_CONFIRM_CHANGED',
    intact: () => {
      expect(readFileSync(decoy, 'utf8')).toBe(DATA);
      expect(readFileSync(join(sb.allowed, 'a', 'sub.bak', 'data.txt'), 'utf8')).toBe(DATA);
    },
  },
  {
    title: 'the parent directory swapped for another real directory holding a same-named file',
    swap: () => {
      renameSync(sub, join(sb.allowed, 'a', 'sub.bak'));
      put(file, DATA);
    },
    code: 'ERR_CONFIRM_CHANGED',
    intact: () => {
      expect(readFileSync(file, 'utf8')).toBe(DATA);
      expect(readFileSync(join(sb.allowed, 'a', 'sub.bak', 'data.txt'), 'utf8')).toBe(DATA);
    },
  },
  {
    title: 'a grandparent directory swapped for a symlink to outside the root',
    swap: () => {
      renameSync(join(sb.allowed, 'a'), join(sb.allowed, 'a.bak'));
      symlink(sb.outside, join(sb.allowed, 'a'));
    },
    code: 'ERR_CONFIRM_CHANGED',
    intact: () => {
      expect(readFileSync(join(sb.outside, 'sub', 'data.txt'), 'utf8')).toBe(VICTIM_CONTENT);
      expect(readFileSync(join(sb.allowed, 'a.bak', 'sub', 'data.txt'), 'utf8')).toBe(DATA);
    },
  },
  {
    title: 'the root swapped for another directory with the same layout',
    swap: () => {
      renameSync(sb.allowed, join(sb.R, 'allowed.bak'));
      put(file, DATA);
      put(decoy, DATA);
    },
    code: 'ERR_CONFIRM_CHANGED',
    intact: () => {
      expect(readFileSync(file, 'utf8')).toBe(DATA);
      expect(readFileSync(join(sb.R, 'allowed.bak', 'a', 'sub', 'data.txt'), 'utf8')).toBe(DATA);
    },
  },
  {
    title: 'the root swapped for a symlink to the very same directory',
    swap: () => {
      renameSync(sb.allowed, join(sb.R, 'allowed.bak'));
      symlink(join(sb.R, 'allowed.bak'), sb.allowed);
    },
    code: 'ERR_CONFIRM_CHANGED',
    intact: () => expect(readFileSync(join(sb.R, 'allowed.bak', 'a', 'sub', 'data.txt'), 'utf8')).toBe(DATA),
  },
  {
    title: 'the file deleted (fs-5)',
    swap: () => unlinkSync(file),
    code: 'ERR_CONFIRM_GONE',
    intact: () => expect(existsSync(file)).toBe(false),
  },
  {
    title: 'its parent directory deleted (fs-5)',
    swap: () => rmSync(sub, { recursive: true }),
    code: 'ERR_CONFIRM_GONE',
    intact: () => expect(existsSync(sub)).toBe(false),
  },
  {
    title: 'its parent directory replaced by a regular file',
    swap: () => {
      rmSync(sub, { recursive: true });
      writeFileSync(sub, 'now a file');
    },
    code: 'ERR_CONFIRM_CHANGED',
    intact: () => expect(readFileSync(sub, 'utf8')).toBe('now a file'),
  },
];

describe.each(attacks)('deleteVerified after $title', (attack) => {
  it(`refuses with ${attack.code}, deletes nothing and leaves no quarantine entry`, async () => {
    const fp = await roundOne();
    await attack.swap();
    const error = await rejectsWith(deleteVerified(roots, fp), attack.code);
    expect(error.message).toContain('nothing was deleted');
    attack.intact();
    expect(readFileSync(decoy, 'utf8')).toBe(DATA);
    victimIntact();
    await expectNoLeftovers();
  });

  it('control: the same flow with nothing swapped deletes the file', async () => {
    const fp = await roundOne();
    await expect(deleteVerified(roots, fp)).resolves.toEqual({ path: file, size: BigInt(DATA.length) });
    expect(existsSync(file)).toBe(false);
    expect(readFileSync(decoy, 'utf8')).toBe(DATA);
    victimIntact();
  });
});

/**
 * Swaps made at an exact point inside deleteVerified's pinned-directory block (through the
 * injectable ops): just before a directory is entered, right before the rename (after every
 * check passed), and around it.
 */
describe('deleteVerified: swaps inside the pinned-directory block', () => {
  /** ops whose renameSync runs `before` just before the real rename and `after` just after it. */
  const aroundRename = (before: () => void, after: () => void = () => {}): Partial<FsOps> => ({
    renameSync: (from, to) => {
      before();
      defaultFsOps.renameSync(from, to);
      after();
    },
  });
  /** ops whose chdir runs `swap` once, just before the real chdir to `name`. */
  const beforeEntering = (name: string, swap: () => void): Partial<FsOps> => {
    let done = false;
    return {
      chdir: (p) => {
        if (p === name && !done) {
          done = true;
          swap();
        }
        defaultFsOps.chdir(p);
      },
    };
  };
  const swapSubForSymlinkToOther = () => {
    renameSync(sub, join(sb.allowed, 'a', 'sub.bak'));
    symlink('../other', sub);
  };

  it('control: with hooks that change nothing, the file is deleted', async () => {
    const fp = await roundOne();
    await deleteVerified(roots, fp, { ops: { ...aroundRename(() => {}), ...beforeEntering('sub', () => {}) } });
    expect(existsSync(file)).toBe(false);
    await expectNoLeftovers();
  });

  it('puts back a same-size imposter swapped in just before the rename, and refuses with ERR_CONFIRM_CHANGED', async () => {
    const fp = await roundOne();
    let movedId = '';
    const ops: Partial<FsOps> = {
      renameSync: (from, to) => {
        renameSync(file, join(sub, 'data.bak'));
        writeFileSync(file, SAME_SIZE);
        defaultFsOps.renameSync(from, to);
        movedId = identity(join(sub, to));
      },
    };
    const error = await rejectsWith(deleteVerified(roots, fp, { ops }), 'ERR_CONFIRM_CHANGED');
    expect(error.message).toContain('different file');
    // The very entry that was moved aside is back under the name.
    expect(identity(file)).toBe(movedId);
    expect(readFileSync(file, 'utf8')).toBe(SAME_SIZE);
    expect(readFileSync(join(sub, 'data.bak'), 'utf8')).toBe(DATA);
    expect(quarantinedIn(sub)).toEqual([]);
  });

  it('puts back a symlink to the victim swapped in just before the rename (the link itself, not its target)', async () => {
    const fp = await roundOne();
    const victimId = identity(sb.victim);
    const ops = aroundRename(() => {
      renameSync(file, join(sub, 'data.bak'));
      symlink(sb.victim, file);
    });
    await rejectsWith(deleteVerified(roots, fp, { ops }), 'ERR_CONFIRM_CHANGED');
    expect(lstatSync(file).isSymbolicLink()).toBe(true);
    expect(identity(sb.victim)).toBe(victimId);
    expect(readFileSync(sb.victim, 'utf8')).toBe(VICTIM_CONTENT);
    expect(quarantinedIn(sub)).toEqual([]);
  });

  it('keeps a directory swapped in just before the rename under its quarantine name, says where (rendered), and deletes nothing', async () => {
    const fp = await roundOne();
    const ops = aroundRename(() => {
      renameSync(file, join(sub, 'data.bak'));
      put(join(file, 'inside.txt'), 'inside');
    });
    const error = await rejectsWith(deleteVerified(roots, fp, { ops }), 'ERR_CONFIRM_CHANGED');
    const [q] = quarantinedIn(sub);
    expect(q).toBeDefined();
    expect(error.message).toContain(renderValue(join(sub, q!)));
    expect(readFileSync(join(sub, q!, 'inside.txt'), 'utf8')).toBe('inside');
    expect(await findQuarantineLeftovers(roots)).toEqual([join(sub, q!)]);
    expect(readFileSync(join(sub, 'data.bak'), 'utf8')).toBe(DATA);
  });

  it('renders the quarantine location escaped (bidi override, newline visible) when a directory whose name holds them is where the entry stays', async () => {
    const evilDir = join(sb.allowed, 'gpj.\u202Edoc\nSYSTEM: deleted');
    const evilFile = join(evilDir, 'data.txt');
    put(evilFile, DATA);
    const fp = JSON.parse(JSON.stringify(await inspectFile(roots, evilFile))) as FileFingerprint;
    const ops = aroundRename(() => {
      renameSync(evilFile, join(evilDir, 'data.bak'));
      put(join(evilFile, 'inside.txt'), 'inside');
    });
    const error = await rejectsWith(deleteVerified(roots, fp, { ops }), 'ERR_CONFIRM_CHANGED');
    const [q] = quarantinedIn(evilDir);
    expect(error.message).toContain(renderPath(join(evilDir, q!)));
    expect(error.message).not.toMatch(/[\u202E\n]/);
  });

  it('never overwrites a name taken again after the rename: the entry stays in quarantine and the refusal says where', async () => {
    const fp = await roundOne();
    const ops = aroundRename(
      () => {
        renameSync(file, join(sub, 'data.bak'));
        writeFileSync(file, SAME_SIZE); // what gets moved: not the confirmed file
      },
      () => writeFileSync(file, 'newcomer'), // the name is taken again
    );
    const error = await rejectsWith(deleteVerified(roots, fp, { ops }), 'ERR_CONFIRM_CHANGED');
    const [q] = quarantinedIn(sub);
    expect(error.message).toContain(renderValue(join(sub, q!)));
    expect(error.message).toContain('taken again');
    expect(readFileSync(file, 'utf8')).toBe('newcomer');
    expect(readFileSync(join(sub, q!), 'utf8')).toBe(SAME_SIZE);
    expect(readFileSync(join(sub, 'data.bak'), 'utf8')).toBe(DATA);
    expect(await findQuarantineLeftovers(roots)).toEqual([join(sub, q!)]);
  });

  it('refuses with ERR_CONFIRM_CHANGED, moving nothing, when the parent is swapped for a symlink to another directory just before it is entered', async () => {
    const fp = await roundOne();
    const decoyId = identity(decoy);
    const error = await rejectsWith(
      deleteVerified(roots, fp, { ops: beforeEntering('sub', swapSubForSymlinkToOther) }),
      'ERR_CONFIRM_CHANGED',
    );
    expect(error.message).toContain('nothing was deleted');
    expect(identity(decoy)).toBe(decoyId);
    expect(readFileSync(decoy, 'utf8')).toBe(DATA);
    expect(readFileSync(join(sb.allowed, 'a', 'sub.bak', 'data.txt'), 'utf8')).toBe(DATA);
    await expectNoLeftovers();
  });

  it('refuses with ERR_CONFIRM_CHANGED when the parent is swapped, just before it is entered, for a symlink to a directory holding another hard link of the very same file', async () => {
    linkSync(file, join(sb.allowed, 'other', 'same-inode.txt'));
    rmSync(decoy);
    linkSync(file, decoy); // other/data.txt is now the very same inode
    const fp = await roundOne();
    await rejectsWith(
      deleteVerified(roots, fp, { ops: beforeEntering('sub', swapSubForSymlinkToOther) }),
      'ERR_CONFIRM_CHANGED',
    );
    expect(readFileSync(decoy, 'utf8')).toBe(DATA);
    expect(readFileSync(join(sb.allowed, 'a', 'sub.bak', 'data.txt'), 'utf8')).toBe(DATA);
    expect(lstatSync(decoy).nlink).toBe(3);
    await expectNoLeftovers();
  });

  it('refuses with ERR_CONFIRM_CHANGED when the root is replaced by a same-layout directory just before it is entered', async () => {
    const fp = await roundOne();
    const ops = beforeEntering(sb.allowed, () => {
      renameSync(sb.allowed, join(sb.R, 'allowed.bak'));
      put(file, DATA);
    });
    const error = await rejectsWith(deleteVerified(roots, fp, { ops }), 'ERR_CONFIRM_CHANGED');
    expect(error.message).toContain('root directory was replaced');
    expect(readFileSync(file, 'utf8')).toBe(DATA);
    expect(readFileSync(join(sb.R, 'allowed.bak', 'a', 'sub', 'data.txt'), 'utf8')).toBe(DATA);
    await expectNoLeftovers();
  });

  it('acts in the directory it holds: a parent swapped for a symlink to another directory just before the rename deletes only the confirmed file, from the directory it was confirmed in', async () => {
    const fp = await roundOne();
    const decoyId = identity(decoy);
    const ops = aroundRename(swapSubForSymlinkToOther);
    await expect(deleteVerified(roots, fp, { ops })).resolves.toEqual({ path: file, size: BigInt(DATA.length) });
    // The directory held (now named sub.bak) lost the confirmed file; the other directory is untouched.
    expect(existsSync(join(sb.allowed, 'a', 'sub.bak', 'data.txt'))).toBe(false);
    expect(identity(decoy)).toBe(decoyId);
    expect(readFileSync(decoy, 'utf8')).toBe(DATA);
    await expectNoLeftovers();
  });

  it('closes the old residual window: a parent swapped for a symlink and swapped back around the rename moves nothing of the other directory', async () => {
    const fp = await roundOne();
    const decoyId = identity(decoy);
    const real = join(sb.allowed, 'a', 'sub.real');
    const ops = aroundRename(
      () => {
        renameSync(sub, real);
        symlink('../other', sub);
      },
      () => {
        unlinkSync(sub);
        renameSync(real, sub);
      },
    );
    await expect(deleteVerified(roots, fp, { ops })).resolves.toEqual({ path: file, size: BigInt(DATA.length) });
    expect(existsSync(file)).toBe(false);
    expect(identity(decoy)).toBe(decoyId);
    expect(readFileSync(decoy, 'utf8')).toBe(DATA);
    expect(quarantinedIn(join(sb.allowed, 'other'))).toEqual([]);
    await expectNoLeftovers();
  });

  it('refuses with ERR_CONFIRM_OS ENOENT and puts the file back when the unlink of the quarantine name fails with ENOENT while the entry is still there (injected)', async () => {
    const fp = await roundOne();
    const fileId = identity(file);
    let calls = 0;
    const unlinkSync = (p: string) => {
      if (calls++ === 0) throw osError('ENOENT', 'unlink', p);
      defaultFsOps.unlinkSync(p);
    };
    const error = await rejectsWith(deleteVerified(roots, fp, { ops: { unlinkSync } }), 'ERR_CONFIRM_OS');
    expect(error.osCode).toBe('ENOENT');
    expect(error.message).toContain('nothing was deleted');
    expect(identity(file)).toBe(fileId);
    expect(quarantinedIn(sub)).toEqual([]);
  });

  it('says, with the quarantine path rendered, that the moved entry was renamed or removed by someone else when it vanished from quarantine before the unlink', async () => {
    const fp = await roundOne();
    let q = '';
    const unlinkSync = (p: string) => {
      q = p;
      defaultFsOps.unlinkSync(p); // someone else removes it first
      throw osError('ENOENT', 'unlink', p);
    };
    const error = await rejectsWith(deleteVerified(roots, fp, { ops: { unlinkSync } }), 'ERR_CONFIRM_CHANGED');
    expect(error.message).toContain('renamed or removed there by someone else');
    expect(error.message).toContain(renderValue(join(sub, q)));
    expect(error.message).not.toContain('cannot be found again');
    expect(existsSync(file)).toBe(false);
  });

  it('says the moved entry was renamed away when it vanished from quarantine before it was checked', async () => {
    const fp = await roundOne();
    const elsewhere = join(sb.allowed, 'a', 'moved-by-someone');
    const ops = aroundRename(
      () => {},
      () => {
        const [q] = quarantinedIn(sub);
        renameSync(join(sub, q!), elsewhere);
      },
    );
    const error = await rejectsWith(deleteVerified(roots, fp, { ops }), 'ERR_CONFIRM_CHANGED');
    expect(error.message).toContain('renamed or removed there by someone else');
    expect(readFileSync(elsewhere, 'utf8')).toBe(DATA);
  });

  it('refuses with ERR_CONFIRM_GONE when the file vanishes between the last check and the rename', async () => {
    const fp = await roundOne();
    await rejectsWith(deleteVerified(roots, fp, { ops: aroundRename(() => unlinkSync(file)) }), 'ERR_CONFIRM_GONE');
    await expectNoLeftovers();
  });
});

describe('deleteVerified: the working directory and the thread', () => {
  it.each([
    ['known to the process (read before it was removed)', true, 'ENOENT'],
    ['unreadable (removed before the process read it)', false, 'it could not be read beforehand'],
  ])(
    'deletes the file, leaves the process in "/" and says so (warning and process warning) when the saved working directory was removed: %s',
    async (_what, primed, reason) => {
      const fp = await roundOne();
      const original = process.cwd();
      const doomed = join(sb.R, 'cwd-doomed');
      mkdirSync(doomed);
      const warnings: string[] = [];
      const onWarning = (w: Error) => warnings.push(w.message);
      process.on('warning', onWarning);
      process.chdir(doomed);
      try {
        if (primed) expect(process.cwd()).toBe(doomed); // Node caches it from here on
        rmSync(doomed, { recursive: true });
        const done = await deleteVerified(roots, fp);
        expect(done.path).toBe(file);
        expect(done.warning).toContain(`could not be restored (${reason})`);
        if (primed) expect(done.warning).toContain(renderValue(doomed));
        expect(process.cwd()).toBe('/');
        await sleep(10);
        expect(warnings.some((w) => w.includes('could not be restored'))).toBe(true);
      } finally {
        process.off('warning', onWarning);
        process.chdir(original);
      }
      expect(existsSync(file)).toBe(false);
    },
  );

  it('appends the same note to a refusal when the saved working directory cannot be restored (injected), and leaves the process in "/"', async () => {
    const fp = await roundOne();
    const original = process.cwd();
    writeFileSync(file, 'rewritten with another size');
    const chdir = (p: string) => {
      if (p === original) throw osError('ENOENT', 'chdir', p);
      defaultFsOps.chdir(p);
    };
    try {
      const error = await rejectsWith(deleteVerified(roots, fp, { ops: { chdir } }), 'ERR_CONFIRM_CHANGED');
      expect(error.message).toContain('could not be restored (ENOENT)');
      expect(process.cwd()).toBe('/');
    } finally {
      process.chdir(original);
    }
    expect(readFileSync(file, 'utf8')).toBe('rewritten with another size');
  });

  it('refuses with ERR_CONFIRM_OS before any system call when not on the main thread (injected)', async () => {
    const fp = await roundOne();
    const noSyscall = () => {
      throw new Error('no system call expected');
    };
    const error = await rejectsWith(
      deleteVerified(roots, fp, {
        ops: {
          isMainThread: () => false,
          lstat: () => Promise.reject(new Error('no system call expected')),
          chdir: noSyscall,
          lstatSync: noSyscall,
        },
      }),
      'ERR_CONFIRM_OS',
    );
    expect(error.osCode).toBe('ERR_WORKER_UNSUPPORTED_OPERATION');
    expect(error.message).toContain('main thread');
    expect(readFileSync(file, 'utf8')).toBe(DATA);
  });

  it('refuses both rounds with ERR_CONFIRM_OS in a real worker thread (process.chdir is unavailable there); the file is intact', async () => {
    const fp = await roundOne();
    const worker = new Worker(resolve(import.meta.dirname, 'fixtures', 'targetInWorker.mjs'), {
      workerData: { root: sb.allowed, path: 'a/sub/data.txt', fp },
    });
    const result = await new Promise<Record<string, { ok: boolean; code?: string; osCode?: string; message?: string }>>(
      (res, rej) => {
        worker.once('message', res);
        worker.once('error', rej);
      },
    );
    await worker.terminate();
    for (const r of [result.inspect!, result.del!]) {
      expect(r).toMatchObject({ ok: false, code: 'ERR_CONFIRM_OS', osCode: 'ERR_WORKER_UNSUPPORTED_OPERATION' });
      expect(r.message).toContain('main thread');
    }
    expect(readFileSync(file, 'utf8')).toBe(DATA);
    expect(quarantinedIn(sub)).toEqual([]);
  });
});

interface ChildResult {
  ok: boolean;
  code?: string;
  osCode?: string;
  message?: string;
}

/**
 * Runs round 2 in a child process (fixtures/deleteInChild.ts) that permissions bind
 * although we are root. First choice: still uid 0 (so it can read the repository
 * wherever it is checked out) but with CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH and
 * CAP_FOWNER dropped from the bounding set by setpriv(1) (util-linux, Essential on
 * Debian/Ubuntu). If setpriv is missing or not permitted, uid/gid 65534 (nobody),
 * which needs the checkout and the sandbox to be world-readable.
 */
async function runRoundTwoUnprivileged(box: Sandbox, fp: FileFingerprint): Promise<ChildResult> {
  const repo = resolve(import.meta.dirname, '..', '..');
  const args = [
    '--import',
    'tsx',
    resolve(import.meta.dirname, 'fixtures', 'deleteInChild.ts'),
    JSON.stringify([box.allowed]),
    JSON.stringify(fp),
  ];
  const run = promisify(execFile);
  const parse = (stdout: string): ChildResult | undefined => {
    const line = stdout.trim().split('\n').pop() ?? '';
    return line.startsWith('{') ? (JSON.parse(line) as ChildResult) : undefined;
  };
  const viaSetpriv = await run(
    'setpriv',
    ['--bounding-set=-dac_override,-dac_read_search,-fowner', '--', process.execPath, ...args],
    { cwd: repo },
  ).then(
    ({ stdout }) => parse(stdout),
    () => undefined,
  );
  if (viaSetpriv) return viaSetpriv;
  chmodSync(box.R, 0o755);
  const { stdout } = await run(process.execPath, args, {
    cwd: repo,
    uid: 65534,
    gid: 65534,
    env: { PATH: process.env.PATH ?? '', HOME: '/tmp' },
  });
  const result = parse(stdout);
  if (!result) throw new Error(`the unprivileged child printed no result: ${stdout}`);
  return result;
}

describe('deleteVerified: the OS refuses', () => {
  it('refuses with ERR_CONFIRM_OS EACCES, file intact at its name, when the directory is read-only (real refusal, unprivileged process)', async () => {
    // As root, permissions do not stop rename(2); so round 2 runs in a child process
    // without the capabilities that bypass them (see runRoundTwoUnprivileged). Not root:
    // it runs in-process. Either way the EACCES comes from the kernel, not from a fake.
    const ro = join(sb.allowed, 'ro');
    const target = join(ro, 'data.txt');
    put(target, DATA);
    const fp = await roundOne('ro/data.txt');
    const fileId = identity(target);
    chmodSync(ro, 0o555);
    let result: ChildResult;
    try {
      result =
        process.getuid?.() === 0
          ? await runRoundTwoUnprivileged(sb, fp)
          : await deleteVerified(roots, fp).then(
              (): ChildResult => ({ ok: true }),
              (e: ChildResult): ChildResult => ({ ok: false, code: e.code, osCode: e.osCode, message: e.message }),
            );
    } finally {
      chmodSync(ro, 0o755);
    }
    expect(result).toMatchObject({ ok: false, code: 'ERR_CONFIRM_OS', osCode: 'EACCES' });
    expect(result.message).toContain('permission denied');
    expect(result.message).toContain('nothing was deleted');
    expect(identity(target)).toBe(fileId);
    expect(readFileSync(target, 'utf8')).toBe(DATA);
    expect(quarantinedIn(ro)).toEqual([]);
  });

  it('control: the same directory, writable, lets the same flow delete the file', async () => {
    const ro = join(sb.allowed, 'ro');
    const target = join(ro, 'data.txt');
    put(target, DATA);
    const fp = await roundOne('ro/data.txt');
    await deleteVerified(roots, fp);
    expect(existsSync(target)).toBe(false);
  });

  it('refuses with ERR_CONFIRM_OS when rename is refused (EROFS, injected): the file stays at its name', async () => {
    const fp = await roundOne();
    const error = await rejectsWith(
      deleteVerified(roots, fp, {
        ops: {
          renameSync: (from) => {
            throw osError('EROFS', 'rename', from);
          },
        },
      }),
      'ERR_CONFIRM_OS',
    );
    expect(error.osCode).toBe('EROFS');
    expect(error.message).toContain('read-only file system');
    expect(readFileSync(file, 'utf8')).toBe(DATA);
    expect(quarantinedIn(sub)).toEqual([]);
  });

  it('refuses with ERR_CONFIRM_OS when unlink is refused (EPERM, injected) and puts the file back at its name', async () => {
    const fp = await roundOne();
    const fileId = identity(file);
    let refused = 0;
    const unlinkSync = (p: string) => {
      // Refuse the delete of the quarantine name once; let the clean-up after the restore through.
      if (refused === 0) {
        refused += 1;
        throw osError('EPERM', 'unlink', p);
      }
      defaultFsOps.unlinkSync(p);
    };
    const error = await rejectsWith(deleteVerified(roots, fp, { ops: { unlinkSync } }), 'ERR_CONFIRM_OS');
    expect(refused).toBe(1);
    expect(error.osCode).toBe('EPERM');
    expect(error.message).toBe(
      'The operating system refused to delete the file: EPERM (operation not permitted); nothing was deleted.',
    );
    expect(identity(file)).toBe(fileId);
    expect(readFileSync(file, 'utf8')).toBe(DATA);
    expect(quarantinedIn(sub)).toEqual([]);
  });

  it('says where the file is kept (the path rendered) when unlink is refused and putting it back fails too (injected)', async () => {
    const fp = await roundOne();
    const error = await rejectsWith(
      deleteVerified(roots, fp, {
        ops: {
          unlinkSync: (p) => {
            throw osError('EPERM', 'unlink', p);
          },
          linkSync: (p) => {
            throw osError('EPERM', 'link', p);
          },
        },
      }),
      'ERR_CONFIRM_OS',
    );
    const [q] = quarantinedIn(sub);
    expect(q).toBeDefined();
    expect(error.message).toContain(renderValue(join(sub, q!)));
    expect(error.message).toContain('nothing was deleted');
    expect(readFileSync(join(sub, q!), 'utf8')).toBe(DATA);
    expect(await findQuarantineLeftovers(roots)).toEqual([join(sub, q!)]);
  });

  it('maps an OS refusal of lstat during the early re-check by path (EIO, injected) to ERR_CONFIRM_OS and touches nothing', async () => {
    const fp = await roundOne();
    const error = await rejectsWith(
      deleteVerified(roots, fp, { ops: { lstat: (p) => Promise.reject(osError('EIO', 'lstat', p)) } }),
      'ERR_CONFIRM_OS',
    );
    expect(error.osCode).toBe('EIO');
    expect(readFileSync(file, 'utf8')).toBe(DATA);
  });

  it('maps an OS refusal of lstat inside the pinned walk (EIO on ".", injected) to ERR_CONFIRM_OS, touches nothing and puts the working directory back', async () => {
    const fp = await roundOne();
    const cwdBefore = process.cwd();
    const lstatSync = (p: string) => {
      if (p === '.') throw osError('EIO', 'lstat', p);
      return defaultFsOps.lstatSync(p);
    };
    const error = await rejectsWith(deleteVerified(roots, fp, { ops: { lstatSync } }), 'ERR_CONFIRM_OS');
    expect(error.osCode).toBe('EIO');
    expect(readFileSync(file, 'utf8')).toBe(DATA);
    expect(process.cwd()).toBe(cwdBefore);
  });

  it('puts the file back when lstat of the moved entry fails (EIO, injected)', async () => {
    const fp = await roundOne();
    const lstatSync = (p: string) => {
      if (p.includes('.mcp-confirm-quarantine-')) throw osError('EIO', 'lstat', p);
      return defaultFsOps.lstatSync(p);
    };
    const error = await rejectsWith(deleteVerified(roots, fp, { ops: { lstatSync } }), 'ERR_CONFIRM_OS');
    expect(error.osCode).toBe('EIO');
    expect(readFileSync(file, 'utf8')).toBe(DATA);
    expect(quarantinedIn(sub)).toEqual([]);
  });
});

describe('deleteVerified: the fingerprint and the roots', () => {
  it('refuses a fingerprint whose root is not among the current roots with ERR_CONFIRM_OUTSIDE_ROOTS', async () => {
    const fp = await roundOne();
    const otherRoot = join(sb.R, 'elsewhere');
    mkdirSync(otherRoot);
    const others = await Roots.open([otherRoot]);
    await rejectsWith(deleteVerified(others, fp), 'ERR_CONFIRM_OUTSIDE_ROOTS');
    expect(readFileSync(file, 'utf8')).toBe(DATA);
  });

  it('refuses with ERR_CONFIRM_CHANGED when the server re-pinned a replaced root (a restart after the swap)', async () => {
    const fp = await roundOne();
    renameSync(sb.allowed, join(sb.R, 'allowed.bak'));
    put(file, DATA);
    const restarted = await Roots.open([sb.allowed]);
    await rejectsWith(deleteVerified(restarted, fp), 'ERR_CONFIRM_CHANGED');
    expect(readFileSync(file, 'utf8')).toBe(DATA);
  });

  it('control: a fingerprint from round 1 is honoured by roots opened again on the same directory', async () => {
    const fp = await roundOne();
    const restarted = await Roots.open([sb.allowed]);
    await deleteVerified(restarted, fp);
    expect(existsSync(file)).toBe(false);
  });

  it.each([
    ['a name of ".."', (fp: FileFingerprint) => ({ ...fp, name: '..' })],
    [
      'a directory name with a separator',
      (fp: FileFingerprint) => ({ ...fp, dirs: [{ ...fp.dirs[0]!, name: 'a/../../outside' }, ...fp.dirs.slice(1)] }),
    ],
    ['a path that does not match its parts', (fp: FileFingerprint) => ({ ...fp, path: sb.victim })],
    ['a number instead of a decimal string', (fp: FileFingerprint) => ({ ...fp, size: 14 })],
    ['a missing file identity', (fp: FileFingerprint) => ({ ...fp, file: undefined })],
    ['an unknown version', (fp: FileFingerprint) => ({ ...fp, version: 2 })],
    ['a non-regular type', (fp: FileFingerprint) => ({ ...fp, file: { ...fp.file, type: 'directory' } })],
  ])('refuses a malformed fingerprint (%s) with a TypeError before any system call', async (_what, mutate) => {
    const fp = await roundOne();
    const bad = mutate(fp) as unknown as FileFingerprint;
    expect(isFileFingerprint(bad)).toBe(false);
    const noSyscall = () => {
      throw new Error('no system call expected');
    };
    const ops: Partial<FsOps> = {
      lstat: () => Promise.reject(new Error('no system call expected')),
      cwd: noSyscall,
      chdir: noSyscall,
      lstatSync: noSyscall,
      renameSync: noSyscall,
      linkSync: noSyscall,
      unlinkSync: noSyscall,
    };
    await expect(deleteVerified(roots, bad, { ops })).rejects.toBeInstanceOf(TypeError);
    expect(readFileSync(file, 'utf8')).toBe(DATA);
    victimIntact();
  });
});
