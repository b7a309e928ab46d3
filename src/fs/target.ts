/**
 * The file a confirmation is about: inspecting it before the human is asked
 * (round 1) and deleting it afterwards only if it provably is still the same
 * file (round 2).
 *
 * ## Why the working directory: a directory handle without `openat`
 * Node has no `openat`/`renameat`/`unlinkat`: every `fs` call takes a path and the
 * kernel resolves it again from `/` (or from the working directory). Two calls on
 * the same path can therefore reach two different directories when someone swaps a
 * directory on the way in between, and even *one* `rename(src, dst)` resolves `src`
 * and `dst` separately (the tester's exploit: `src` through a symbolic link to a
 * directory outside the roots, `dst` through the real directory, so an entry from
 * outside was moved into the root).
 *
 * The one directory reference Node does give us is the process working directory:
 * `process.chdir(p)` resolves `p` once, and from then on the kernel resolves every
 * relative name from *that directory inode*, wherever it is moved and whatever is
 * put at `p` meanwhile, exactly like a directory file descriptor. So every step that
 * must happen "in the directory we checked" runs in a **pinned-directory block**:
 * in one synchronous stretch of code (no `await`, so no other JavaScript of this
 * process runs in between) it saves `process.cwd()`, walks down with `chdir`, calls
 * `lstat`/`rename`/`link`/`unlink` only on `'.'` or on a single name without a
 * separator, and finally always changes back to the saved directory (if that fails,
 * e.g. because the saved directory was removed, it changes to `/` and says so: on
 * the refusal, or as a `warning` on the result plus a process warning; it never
 * crashes). The walk, from the pinned root down, for each directory name:
 * `lstat(name)` (a directory, not a symbolic link), `chdir(name)`, and `lstat('.')`
 * must be that same directory (device and inode), so a name swapped for a symbolic
 * link between the two calls is caught, not followed.
 *
 * > [!IMPORTANT]
 * > **Main thread only.** `process.chdir` throws in worker threads. Both rounds check
 * > first and refuse with `ERR_CONFIRM_OS` (`ERR_WORKER_UNSUPPORTED_OPERATION`)
 * > before any system call; call them from the main thread.
 * >
 * > **The working directory is process-wide.** While a block runs, no other JavaScript
 * > runs, but file operations that *other* code in the same process had already
 * > started asynchronously (queued on libuv's thread pool) may run during those
 * > microseconds, and one that uses a *relative* path would resolve it against the
 * > temporary working directory. Code sharing the process with this module should use
 * > absolute paths for its file operations; the demo server (roots, key file, SQLite
 * > ledger, this module) uses only absolute paths or opens its files at start-up.
 *
 * ## Round 1: {@link inspectFile}
 * 1. The untrusted path is checked as text, before any system call: a string of at
 *    most {@link MAX_PATH_LENGTH} UTF-16 code units (Linux `PATH_MAX` is 4,096 bytes),
 *    non-empty, no NUL, well-formed UTF-16 (else `ERR_CONFIRM_BAD_ARGUMENT`).
 * 2. It is resolved like the system would, but without following anything: relative
 *    paths start at the first root's real path; empty components and `.` are dropped;
 *    `..` steps back one component. The result is matched against the roots by whole
 *    path components (`/r/allowed_evil` is not inside `/r/allowed`), canonical real
 *    path or the root as given at start-up (else `ERR_CONFIRM_OUTSIDE_ROOTS`, still
 *    without a system call; a root itself is `ERR_CONFIRM_NOT_REGULAR_FILE`).
 * 3. A path ending in `/`, `/.` or `/..` (or that is `.` or `..`) can only name a
 *    directory, as the system would read it (`t1.txt/` is `ENOTDIR` there):
 *    `ERR_CONFIRM_NOT_REGULAR_FILE`, without a system call.
 * 4. Every directory a `..` stepped back from must lie in a root (else
 *    `ERR_CONFIRM_OUTSIDE_ROOTS`), and it and every directory above it up to the root
 *    must be a real directory by `lstat`: the system resolves `lnk/..` from where `lnk`
 *    *points*, so a `..` over a symbolic link is `ERR_CONFIRM_SYMLINK` (a missing
 *    one, or a file, is `ERR_CONFIRM_GONE`, as the system would answer `ENOENT` or
 *    `ENOTDIR`). With that, the lexical result is the path the system would reach.
 * 5. In a pinned-directory block: `chdir` to the root, which must still be the
 *    directory pinned at start-up (device and inode, else `ERR_CONFIRM_OUTSIDE_ROOTS`);
 *    the walk above through every directory (a symbolic link: `ERR_CONFIRM_SYMLINK`,
 *    even one pointing inside a root; a file on the way: `ERR_CONFIRM_GONE`); then
 *    `lstat` of the file's name in the directory reached: a regular file (a symbolic
 *    link: `ERR_CONFIRM_SYMLINK`; anything else: `ERR_CONFIRM_NOT_REGULAR_FILE`).
 *    Every identity recorded is thus of an entry that really was in the directory
 *    recorded before it, never a mix of two directories swapped during the walk.
 * 6. A final `realpath` must give back the very same path (belt and braces: it also
 *    catches a directory *above* the root that became a symbolic link).
 *
 * The result, a {@link FileFingerprint}, records the identity of everything on the way.
 *
 * ## Round 2: {@link deleteVerified}
 * In this order, failing closed at each step:
 * 1. the recorded root is one of the pinned roots, with the recorded device and
 *    inode; this is the main thread;
 * 2. by path, `lstat` of the root and of every directory down to the parent: none is
 *    a symlink, each has its recorded device and inode (an early, asynchronous
 *    refusal; step 3 does not rely on it);
 * 3. one pinned-directory block:
 *    a. `chdir` to the root and walk down as in round 1, comparing the root and each
 *       directory (both `lstat(name)` and `lstat('.')` after the `chdir`) with the
 *       recorded identities; the working directory is now the recorded parent
 *       directory itself, wherever it is;
 *    b. `lstat(name)`: regular file, same device, inode, size, link count,
 *       modification and change time (nanoseconds);
 *    c. `rename(name, quarantineName)`, both names relative, in that same directory
 *       (atomic; no path is resolved at all; from now on nobody can swap something
 *       else in under the name we act on);
 *    d. `lstat(quarantineName)`: same device, inode, type, size, link count and
 *       modification time (the rename itself updates the change time, which is why
 *       that one was compared in b);
 *    e. only when all of that matches, `unlink(quarantineName)`;
 *    f. change back to the saved working directory.
 *
 * On a mismatch after c, the entry is put back without ever overwriting anything:
 * `link(quarantineName, name)` (fails with `EEXIST` if the name was taken again),
 * then `unlink(quarantineName)`. If the name is taken, or the entry is a directory
 * (which cannot be hard-linked), it stays in quarantine in the file's directory and
 * the refusal says where ({@link findQuarantineLeftovers} reports such entries at
 * start-up).
 *
 * Refusals in round 2: a file or directory on the way that no longer exists is
 * `ERR_CONFIRM_GONE`; anything present but different (root, directory, file) is
 * `ERR_CONFIRM_CHANGED`; an OS refusal of the rename or unlink is `ERR_CONFIRM_OS`
 * with the file left at its name. Paths in refusal messages are rendered with
 * `renderValue` (one line, every hidden or bidi character escaped, in a code span).
 *
 * A directory component replaced by a symbolic link is reported in round 2 as
 * `ERR_CONFIRM_CHANGED` (not `ERR_CONFIRM_SYMLINK`): what the human confirmed is
 * no longer there, and "ask again" is the right advice; if it is still a symlink
 * when asked again, round 1 then refuses with `ERR_CONFIRM_SYMLINK`.
 *
 * > [!WARNING]
 * > **Residual window.** Every name the block acts on is resolved in a directory we
 * > hold by inode, so a swap of a directory (for a symbolic link, or another
 * > directory, even with `RENAME_EXCHANGE`) can no longer redirect the rename or
 * > the unlink: no entry outside the recorded parent directory is ever renamed,
 * > moved or deleted, and a quarantine entry is only ever created in that directory.
 * > What remains:
 * >
 * > 1. *The directory moves while we are in it.* Once the block has entered the
 * >    recorded parent directory, that directory can be renamed elsewhere, even
 * >    outside the roots, by someone allowed to do so; the block then still
 * >    deletes the confirmed file (same device, inode, size, times and link
 * >    count) from it, and nothing else. Before the block has entered it, such a
 * >    move is refused (the walk from the root no longer finds it). A quarantine
 * >    entry left by a refusal in that instant is in the moved directory, where
 * >    the start-up scan sees it only if it is still inside a root.
 * > 2. *The file's own name changes in that directory during the block.* Someone
 * >    who can write to the directory can swap the entry at the name between b and
 * >    c; the rename then moves their entry, d sees it is not the confirmed file and
 * >    it is put back under the name (or left in quarantine, never overwritten, if
 * >    the name was taken again, or if it is a directory). They can also rename or
 * >    remove the quarantine entry (whose 128-bit random name they must first learn
 * >    by listing the directory) between c and e; then nothing is deleted by us and
 * >    the refusal says the entry is no longer there.
 * > 3. *Timestamps are coarse.* The kernel stamps `mtime`/`ctime` from a coarse
 * >    clock (a few milliseconds on Linux ext4/tmpfs, up to seconds on some file
 * >    systems), so a rewrite of the same inode that keeps the size and lands in the
 * >    same clock tick as round 1's `lstat` is not seen. A write after b goes to the
 * >    very file the human chose and is deleted with it.
 * > 4. *The working directory is shared* (see above): relative-path file operations
 * >    of other code in this process, already in flight, could resolve against the
 * >    temporary working directory during the block. If the saved working directory
 * >    cannot be restored (it was removed or renamed meanwhile), the process is left
 * >    in `/` and the caller is told; if it was replaced by another directory at the
 * >    same path, the process ends up in that one (no `fchdir` either).
 * > 5. *Only Linux-like semantics are assumed*: `link(2)` not following symbolic
 * >    links, `rename(2)` atomic within a directory, POSIX path syntax.
 *
 * ## Directory handles: {@link openFile}
 * A call that acts at once (under a grant or a plan slot) needs round 1 and round 2 back to back,
 * with only the guard's store and audit trail between them. {@link openFile} does them in one
 * walk, with real directory handles: Linux resolves `/proc/self/fd/N/NAME` from the directory open
 * as descriptor `N` itself (a "magic link", as `openat` would), so a handle stands in for the
 * working directory, and can be held across an `await`.
 * 1. Steps 1 to 4 of round 1, as above.
 * 2. The root is opened by its canonical path with `O_DIRECTORY | O_NOFOLLOW`, and must have its
 *    pinned device and inode (else `ERR_CONFIRM_OUTSIDE_ROOTS`) and, the first time for that
 *    root, read back through `/proc/self/fd` as that path (else handles are not used: see below).
 *    With the real file-system calls that handle is then held for as long as the pinned root lives
 *    (closed when it is collected), and a later call does not open the root again: the held handle
 *    must read back as the root's path (else `ERR_CONFIRM_OUTSIDE_ROOTS`), proven for a file below
 *    a directory by that directory's readback below (the root is read back when anything on the way
 *    fails, so a moved or replaced root is `ERR_CONFIRM_OUTSIDE_ROOTS`, not a file gone). Each directory is
 *    opened from the handle above it, `O_DIRECTORY | O_NOFOLLOW` (a symbolic link or a file is
 *    named as in round 1); its identity is its handle's `fstat`, so nothing can be swapped
 *    between looking and entering. The file's directory must read back as the path walked (round
 *    1's step 6), and `lstat` of the file's name through its handle gives the fingerprint.
 * 3. {@link OpenedFile.delete}, given the fingerprint to hold the file to (the one just taken, or
 *    the one a plan's human saw): the fingerprint's root, directories (by device and inode) and
 *    name must be those opened; every handle must still read back as its path (containment, right
 *    before acting: a directory moved out of the root, or below a replaced one, is
 *    `ERR_CONFIRM_CHANGED`); then round 2's steps b to e through the file's directory's handle.
 * 4. {@link OpenedFile.close} closes the handles.
 *
 * Where handles cannot be used (no `/proc` mounted, another system, or a directory that may be
 * searched but not read, which `open` needs and `chdir` does not), {@link openFile} is
 * {@link inspectFile} then {@link deleteVerified}, with their two walks. The residual window 1
 * above reads, for handles, from the readback of step 3 to the unlink (microseconds); 2 to 5 are
 * unchanged.
 *
 * @module
 */
import { join } from 'node:path';
import type { BigIntStats } from 'node:fs';
import {
  ConfirmBadArgumentError,
  ConfirmChangedError,
  ConfirmError,
  ConfirmGoneError,
  ConfirmNotRegularFileError,
  ConfirmOsError,
  ConfirmOutsideRootsError,
  ConfirmSymlinkError,
} from '../errors.js';
import { renderPath } from '../prompt/render.js';
import { componentsBelow, type PinnedRoot, type Roots } from './roots.js';
import { defaultFsOps, entryKind, errnoCode, withDefaults, type EntryKind, type FsOps } from './ops.js';
import { newQuarantineName } from './quarantine.js';

export { findQuarantineLeftovers, QUARANTINE_PREFIX, isQuarantineName } from './quarantine.js';

/** Longest path {@link inspectFile} accepts, in UTF-16 code units (Linux `PATH_MAX` is 4,096 bytes). */
export const MAX_PATH_LENGTH = 4096;

/** Identity of the root a file was found under (a copy of its {@link PinnedRoot} pin). */
export interface RootIdentity {
  /** Canonical real path of the root. */
  realPath: string;
  /** Device, decimal string. */
  dev: string;
  /** Inode, decimal string. */
  ino: string;
}

/** Identity of one directory between the root and the file. */
export interface DirIdentity {
  /** Its name in the directory above it (one component, no separator). */
  name: string;
  /** Device, decimal string. */
  dev: string;
  /** Inode, decimal string. */
  ino: string;
}

/** Identity of the file itself, from `lstat` with bigint (nanosecond) fields. */
export interface FileIdentity {
  /** Device, decimal string. */
  dev: string;
  /** Inode, decimal string. */
  ino: string;
  /** Always `'regular file'` (anything else is refused in round 1). */
  type: 'regular file';
  /** Modification time in nanoseconds since the epoch, decimal string (may be negative). */
  mtimeNs: string;
  /** Status-change time in nanoseconds since the epoch, decimal string (may be negative). */
  ctimeNs: string;
}

/**
 * Everything round 1 learnt about the file, JSON-serialisable (strings, numbers,
 * arrays and plain objects only; every bigint as a decimal string) so that it can
 * be sealed into a `requestState` and come back parsed.
 *
 * @example
 * ```ts
 * import type { FileFingerprint } from 'mcp-confirm';
 *
 * const fp: FileFingerprint = {
 *   version: 1, path: '/srv/scratch/a/data.txt', size: '12', nlink: '1',
 *   root: { realPath: '/srv/scratch', dev: '2049', ino: '131074' },
 *   dirs: [{ name: 'a', dev: '2049', ino: '131090' }], name: 'data.txt',
 *   file: { dev: '2049', ino: '131091', type: 'regular file', mtimeNs: '1764…', ctimeNs: '1764…' },
 * };
 * ```
 */
export interface FileFingerprint {
  /** Shape version of this record. */
  version: 1;
  /** Canonical absolute path of the file: what the human is shown. Equals `root.realPath` joined with `dirs[*].name` and `name`. */
  path: string;
  /** Size in bytes, decimal string. */
  size: string;
  /** Number of hard links (names) of the file, decimal string. Deleting removes only this name; the data stays while `nlink - 1` other names remain. */
  nlink: string;
  /** The root the file was found under. */
  root: RootIdentity;
  /** Every directory from just below the root down to the file's parent, in order; empty when the file sits in the root. */
  dirs: DirIdentity[];
  /** The file's name in its parent directory. */
  name: string;
  /** The file's own identity. */
  file: FileIdentity;
}

/** Options of {@link inspectFile} and {@link deleteVerified}: none a caller sets (its one field is for the tests). */
export interface TargetOptions {
  /** File-system calls to use; defaults to the real ones. Tests use it to inject OS refusals and swaps. @internal */
  ops?: Partial<FsOps>;
}

/** What {@link deleteVerified} returns. */
export interface Deleted {
  /** The canonical path of the deleted name (the fingerprint's `path`). */
  path: string;
  /** Its size in bytes. */
  size: bigint;
  /**
   * Present only when the file was deleted but the process working directory could not
   * be changed back afterwards (see the module documentation); says where it is now.
   */
  warning?: string;
}

const KIND_WORDS: Record<EntryKind, string> = {
  'regular file': 'regular file',
  directory: 'directory',
  'symbolic link': 'symbolic link',
  FIFO: 'FIFO (named pipe)',
  socket: 'socket',
  'character device': 'character device',
  'block device': 'block device',
  'unknown file type': 'file of unknown type',
};

const DIRECTORY_SYNTAX = 'directory (it ends with "/", "/." or "/..", which can only name a directory)';

/**
 * Round 1: checks an untrusted path and records the identity of the file it names.
 * Reads only; changes nothing on disk. Must run on the main thread (see the module
 * documentation).
 *
 * @param roots - the roots pinned at start-up.
 * @param path - untrusted; absolute, or relative to the first root (`roots.list[0]`).
 * @param options - see {@link TargetOptions}.
 * @returns the file's {@link FileFingerprint}.
 * @throws {ConfirmBadArgumentError} `ERR_CONFIRM_BAD_ARGUMENT`, before any system call: not a
 *   string, longer than 4,096 UTF-16 code units (`MAX_PATH_LENGTH`), empty, contains NUL, or not
 *   well-formed UTF-16 (a lone surrogate would be written to disk as U+FFFD, so the name shown
 *   and the file touched would differ).
 * @throws {ConfirmOutsideRootsError} `ERR_CONFIRM_OUTSIDE_ROOTS`: outside every root (whole-component
 *   comparison), a `..` stepping back from a directory outside every root, or the root was
 *   replaced after start-up.
 * @throws {ConfirmSymlinkError} `ERR_CONFIRM_SYMLINK`: the file, or a directory between the root and
 *   it, is a symbolic link (wherever it points), or a `..` steps back over one.
 * @throws {ConfirmGoneError} `ERR_CONFIRM_GONE` (`'before'`): nothing exists at the path.
 * @throws {ConfirmNotRegularFileError} `ERR_CONFIRM_NOT_REGULAR_FILE`: a directory (a root itself
 *   included, and any path ending in `/`, `/.` or `/..`), FIFO, socket or device.
 * @throws {ConfirmOsError} `ERR_CONFIRM_OS`: any other OS refusal (e.g. `EACCES`, `ENAMETOOLONG`), or
 *   called from a worker thread (`ERR_WORKER_UNSUPPORTED_OPERATION`).
 *
 * @example
 * ```ts
 * import { inspectFile, question, Roots } from 'mcp-confirm';
 *
 * const roots = await Roots.open(['/srv/scratch']);
 * const fp = await inspectFile(roots, 'notes/cache.txt');
 * question`Delete ${fp.path} (${fp.size} bytes)?`;
 * ```
 */
export async function inspectFile(roots: Roots, path: string, options: TargetOptions = {}): Promise<FileFingerprint> {
  const ops = withDefaults(options.ops);
  const { root, dirNames, name } = await resolveRequest(ops, roots, path);

  // The walk, pinned by inode (see the module documentation).
  const { value: walked } = inPinnedBlock(ops, () => walkRoundOne(ops, root, dirNames, name));
  const { dirs, st } = walked;
  const filePath = join(root.realPath, ...dirNames, name);

  // Really inside: the canonical path must be the very path we walked (belt and braces;
  // it also catches a directory above the root that became a symbolic link).
  let real: string;
  try {
    real = await ops.realpath(filePath);
  } catch (error) {
    throw round1OsError(error);
  }
  if (real !== filePath) {
    if (!roots.list.some((r) => componentsBelow(real, r.realPath) !== undefined)) throw new ConfirmOutsideRootsError();
    throw new ConfirmSymlinkError('the path changed into a symbolic link while it was inspected');
  }

  return {
    version: 1,
    path: filePath,
    size: st.size.toString(),
    nlink: st.nlink.toString(),
    root: { realPath: root.realPath, dev: root.dev, ino: root.ino },
    dirs,
    name,
    file: {
      dev: st.dev.toString(),
      ino: st.ino.toString(),
      type: 'regular file',
      mtimeNs: st.mtimeNs.toString(),
      ctimeNs: st.ctimeNs.toString(),
    },
  };
}

/**
 * Round 1's checks before the walk: the text, the lexical resolution and containment, the
 * directory syntax, the main thread, and what a `..` stepped back over (steps 1 to 4 of the module
 * documentation). The errors are {@link inspectFile}'s.
 */
async function resolveRequest(
  ops: FsOps,
  roots: Roots,
  path: string,
): Promise<{ root: PinnedRoot; dirNames: string[]; name: string }> {
  // Text checks first: nothing about a malformed name is worth a system call. The length
  // first of all, so that no later check scans an unbounded string.
  if (typeof path !== 'string') throw new ConfirmBadArgumentError('the path must be a string');
  if (path.length > MAX_PATH_LENGTH) {
    throw new ConfirmBadArgumentError(
      `the path is longer than ${MAX_PATH_LENGTH} characters (the system limit for a path)`,
    );
  }
  if (path.length === 0) throw new ConfirmBadArgumentError('the path is empty');
  if (path.includes('\0')) throw new ConfirmBadArgumentError('the path contains a NUL character');
  if (!path.isWellFormed())
    throw new ConfirmBadArgumentError('the path is not well-formed Unicode text (it has a lone surrogate)');

  // Lexical resolution and containment, by whole components: still no system call.
  const first = roots.list[0];
  if (!first) throw new ConfirmOutsideRootsError();
  const parsed = parsePath(first.realPath, path);
  const { root, components } = locate(roots, parsed.absolute);
  if (parsed.namesDirectory) throw new ConfirmNotRegularFileError(DIRECTORY_SYNTAX);
  requireMainThread(ops, 'inspect the file');

  // `..` must mean what it says: nothing it steps back over may be a symbolic link.
  await checkSteppedBack(ops, roots, parsed.steppedBack);

  return { root, dirNames: components.slice(0, -1), name: components[components.length - 1]! };
}

/**
 * Round 2: proves the file is still the one fingerprinted in round 1, then deletes
 * this one name of it. Must run on the main thread. See the module documentation for
 * the exact steps and the residual window.
 *
 * @param roots - the roots pinned at start-up (the fingerprint's root must be one of them).
 * @param fp - the fingerprint from {@link inspectFile}, possibly after a JSON round trip.
 * @param options - see {@link TargetOptions}.
 * @returns the deleted path and its size in bytes (see {@link Deleted}).
 * @throws {TypeError} the fingerprint does not have the shape {@link inspectFile} produces.
 * @throws {ConfirmOutsideRootsError} `ERR_CONFIRM_OUTSIDE_ROOTS`: the fingerprint's root is not
 *   among `roots` (e.g. the server restarted with other roots).
 * @throws {ConfirmGoneError} `ERR_CONFIRM_GONE` (`'after'`): the file, or a directory on the way,
 *   no longer exists.
 * @throws {ConfirmChangedError} `ERR_CONFIRM_CHANGED`: the root, a directory on the way (replaced,
 *   or swapped for a symlink) or the file (now a symlink, directory, FIFO, another file even of
 *   the same size, or modified) is not what was fingerprinted. Nothing was deleted; when an entry
 *   had to be left under a quarantine name, the message says where.
 * @throws {ConfirmOsError} `ERR_CONFIRM_OS` (`'delete the file'`): the OS refused the rename or the
 *   unlink (e.g. `EACCES`, `EPERM`, `EROFS`); the file is at its name (or, if it could not be put
 *   back, the message says where it is). Also when called from a worker thread
 *   (`ERR_WORKER_UNSUPPORTED_OPERATION`), before any system call.
 *
 * @example
 * ```ts
 * import { deleteVerified, inspectFile, Roots } from 'mcp-confirm';
 *
 * const roots = await Roots.open(['/srv/scratch']);
 * const fp = await inspectFile(roots, 'notes/cache.txt'); // round 1: sealed into the state
 * // … round 2, the fingerprint as the opened state gives it back:
 * const { path, size } = await deleteVerified(roots, JSON.parse(JSON.stringify(fp)));
 * `Deleted ${path} (${size} bytes).`;
 * ```
 */
export async function deleteVerified(roots: Roots, fp: FileFingerprint, options: TargetOptions = {}): Promise<Deleted> {
  const ops = withDefaults(options.ops);
  // The fingerprint is sealed by us, but still checked: a bad shape must not reach a syscall.
  assertFingerprint(fp);

  // 1. The root must be one of today's pinned roots, with the identity recorded then.
  const pinned = roots.byRealPath(fp.root.realPath);
  if (!pinned) throw new ConfirmOutsideRootsError('the file is not under any of the allowed roots of this server');
  if (pinned.dev !== fp.root.dev || pinned.ino !== fp.root.ino) {
    throw new ConfirmChangedError('The allowed root directory is not the one it was when you were asked.');
  }
  requireMainThread(ops, 'delete the file');

  // 2. By path, the root and every directory down to the parent: an early refusal.
  const chain = await checkChain(ops, pinned, fp);
  if (chain) throw chain;

  // 3. Everything that must happen in the recorded directory, in one synchronous block.
  const { value: size, warning } = inPinnedBlock(ops, () => deleteRoundTwo(ops, pinned, fp));
  return warning === undefined ? { path: fp.path, size } : { path: fp.path, size, warning };
}

/** A file opened for one call by {@link openFile}: its fingerprint, taken then, and its directories held open. */
export interface OpenedFile {
  /** The file's fingerprint as {@link inspectFile} gives it, taken when it was opened. */
  readonly fingerprint: FileFingerprint;
  /**
   * Deletes the file if it still is the one `fp` describes, through the directories held open (no
   * walk from the root): `fp` must name the opened file through the same root and directories (by
   * device and inode), every directory held must still be at its path (so still inside the root),
   * and the file is compared, moved aside, compared again and unlinked exactly as
   * {@link deleteVerified} does (steps b to e). Its refusals are {@link deleteVerified}'s; a
   * directory moved or replaced since the file was opened is `ERR_CONFIRM_CHANGED`.
   *
   * @param fp - the fingerprint to hold the file to: {@link fingerprint} itself, or one taken
   *   earlier for the same path (e.g. the one a human saw in a plan).
   * @throws {TypeError} `fp` is malformed, or the file was closed.
   */
  delete(fp: FileFingerprint): Promise<Deleted>;
  /** Closes the directories held open. Idempotent; call it when done, whether or not the file was deleted. */
  close(): void;
}

/** Where the kernel resolves a name from the directory open as a descriptor (Linux procfs). */
const PROC_FD = '/proc/self/fd/';

/** The roots whose handle read back as their path through {@link PROC_FD}, per set of file-system calls. */
const HANDLES_WORK = new WeakMap<FsOps, WeakSet<PinnedRoot>>();

/**
 * With the real file-system calls, each root's directory handle, opened on the first
 * {@link openFile} under it and held for as long as the pinned root lives (closed when it is
 * collected), so that a call under a grant or plan does not open and close its root each time. A
 * held handle is the pinned directory itself (checked by device and inode when it was opened); each
 * use reads it back through {@link PROC_FD} to prove the root is still at its path.
 */
const HELD_ROOTS = new WeakMap<PinnedRoot, number>();
const CLOSE_HELD_ROOT = new FinalizationRegistry<number>((fd) => {
  try {
    defaultFsOps.closeSync(fd);
  } catch {
    // Nothing to do: the descriptor is not used again.
  }
});

/**
 * Round 1 and round 2 in one walk, for a call that acts at once (under a grant or a plan slot):
 * runs {@link inspectFile}'s checks, opening the root and every directory down to the file's as
 * directory handles on the way, takes the file's fingerprint, and keeps the handles until
 * {@link OpenedFile.close}, so that {@link OpenedFile.delete} acts relative to the very directories
 * walked (see the module documentation, "Directory handles"). Where handles cannot be used (no
 * `/proc/self/fd`, a directory that may be searched but not read), it is {@link inspectFile} then
 * {@link deleteVerified}, with their two walks.
 *
 * @param roots - the roots pinned at start-up.
 * @param path - untrusted; absolute, or relative to the first root.
 * @param options - see {@link TargetOptions}.
 * @returns the opened file; close it when done.
 * @throws the same refusals as {@link inspectFile}, with nothing held open.
 */
export async function openFile(roots: Roots, path: string, options: TargetOptions = {}): Promise<OpenedFile> {
  const ops = withDefaults(options.ops);
  const { root, dirNames, name } = await resolveRequest(ops, roots, path);
  const held = openChain(ops, root, dirNames, name, options.ops === undefined);
  if (held === undefined) {
    const fingerprint = await inspectFile(roots, path, options);
    return { fingerprint, delete: (fp) => deleteVerified(roots, fp, options), close: () => {} };
  }
  const { fds, dirs, st, rootHeld } = held;
  let open = true;
  const close = (): void => {
    if (!open) return;
    open = false;
    for (const fd of rootHeld ? fds.slice(1) : fds) {
      try {
        ops.closeSync(fd);
      } catch {
        // Nothing to do: a descriptor that cannot be closed is not used again.
      }
    }
  };
  const dirPaths = fds.map((_, i) => join(root.realPath, ...dirNames.slice(0, i)));
  const fingerprint: FileFingerprint = {
    version: 1,
    path: join(root.realPath, ...dirNames, name),
    size: st.size.toString(),
    nlink: st.nlink.toString(),
    root: { realPath: root.realPath, dev: root.dev, ino: root.ino },
    dirs,
    name,
    file: {
      dev: st.dev.toString(),
      ino: st.ino.toString(),
      type: 'regular file',
      mtimeNs: st.mtimeNs.toString(),
      ctimeNs: st.ctimeNs.toString(),
    },
  };
  const remove = (fp: FileFingerprint): Deleted => {
    assertFingerprint(fp);
    if (!open) throw new TypeError('The opened file was closed.');
    // As deleteVerified's step 1: the root is one of today's pinned roots, as recorded.
    const pinned = roots.byRealPath(fp.root.realPath);
    if (!pinned) throw new ConfirmOutsideRootsError('the file is not under any of the allowed roots of this server');
    if (pinned.dev !== fp.root.dev || pinned.ino !== fp.root.ino) {
      throw new ConfirmChangedError('The allowed root directory is not the one it was when you were asked.');
    }
    // The fingerprint must name the opened file: same root, same directories by identity, same name.
    if (pinned !== root || fp.name !== name || fp.dirs.length !== dirs.length)
      throw new ConfirmChangedError('It is now a different file.');
    if (!fp.dirs.every((d, i) => d.name === dirs[i]!.name && d.dev === dirs[i]!.dev && d.ino === dirs[i]!.ino))
      throw new ConfirmChangedError('A directory on the way to the file was replaced.');
    // Containment, right before acting: every directory held is still at its path (no walk).
    for (let i = 0; i < fds.length; i++) {
      let now: string;
      try {
        now = ops.readlinkSync(PROC_FD + fds[i]);
      } catch (error) {
        throw round2OsError(error);
      }
      if (now !== dirPaths[i]) {
        throw new ConfirmChangedError(
          i === 0
            ? 'The allowed root directory was replaced.'
            : 'A directory on the way to the file was moved or replaced.',
        );
      }
    }
    const parent = `${PROC_FD}${fds[fds.length - 1]!}/`;
    const size = deleteInDirectory(ops, (entry) => parent + entry, dirPaths[dirPaths.length - 1]!, fp);
    return { path: fp.path, size };
  };
  return { fingerprint, delete: async (fp) => remove(fp), close };
}

/**
 * {@link openFile}'s walk: the root, opened by its path and compared with its pin; each directory
 * opened from the one above without following a final symbolic link; the file's `lstat` there.
 * Returns `undefined`, with nothing left open, where handles cannot be used: the root's handle does
 * not read back as its path (no `/proc/self/fd`; checked once per root), or a directory may not be
 * read (`EACCES`; a walk by `chdir` only needs to search it).
 */
function openChain(
  ops: FsOps,
  root: PinnedRoot,
  dirNames: readonly string[],
  name: string,
  holdRoot: boolean,
): { fds: number[]; dirs: DirIdentity[]; st: BigIntStats; rootHeld: boolean } | undefined {
  const fds: number[] = [];
  const heldRoot = holdRoot ? HELD_ROOTS.get(root) : undefined;
  let rootHeld = heldRoot !== undefined;
  const closeAll = (): void => {
    for (const fd of rootHeld ? fds.slice(1) : fds) {
      try {
        ops.closeSync(fd);
      } catch {
        // Not used again.
      }
    }
  };
  try {
    if (heldRoot !== undefined) {
      // The pinned directory itself, held since an earlier call: it must still be at its path. With
      // directories below it, the file's directory reading back as its path below the root's says
      // so (one read fewer); the root is read back when anything on the way fails, to say it moved.
      fds.push(heldRoot);
      if (dirNames.length === 0 && !rootAtItsPath(ops, heldRoot, root))
        throw new ConfirmOutsideRootsError('the allowed root directory was replaced after start-up');
    } else {
      try {
        fds.push(ops.openDirSync(root.realPath));
      } catch (error) {
        const code = errnoCode(error);
        if (code === 'EACCES') return undefined;
        if (code === 'ENOTDIR' || code === 'ELOOP')
          throw new ConfirmOutsideRootsError('the allowed root directory was replaced after start-up');
        throw round1OsError(error);
      }
      if (!sameId(ops.fstatSync(fds[0]!), root))
        throw new ConfirmOutsideRootsError('the allowed root directory was replaced after start-up');
    }
    // Once a root's handle has read back as its path, handles work for it (kept per root and ops).
    if (!HANDLES_WORK.get(ops)?.has(root)) {
      let rootNow: string | undefined;
      try {
        rootNow = ops.readlinkSync(PROC_FD + fds[0]!);
      } catch {
        rootNow = undefined;
      }
      if (rootNow !== root.realPath) {
        closeAll();
        return undefined;
      }
      let roots = HANDLES_WORK.get(ops);
      if (roots === undefined) HANDLES_WORK.set(ops, (roots = new WeakSet()));
      roots.add(root);
    }
    // Hold the root's handle from now on (the real calls only: injected ones open it each time).
    if (holdRoot && !rootHeld) {
      HELD_ROOTS.set(root, fds[0]!);
      CLOSE_HELD_ROOT.register(root, fds[0]!);
      rootHeld = true;
    }
    const dirs: DirIdentity[] = [];
    for (const dirName of dirNames) {
      const at = `${PROC_FD}${fds[fds.length - 1]!}/${dirName}`;
      let fd: number;
      try {
        fd = ops.openDirSync(at);
      } catch (error) {
        const code = errnoCode(error);
        if (code === 'EACCES') {
          closeAll();
          return undefined;
        }
        if (code !== 'ENOTDIR' && code !== 'ELOOP') throw round1OsError(error);
        // Not opened as a directory without following it: say what it is.
        const st = lstatSyncOr(ops, at, round1OsError);
        if (st.isSymbolicLink()) throw new ConfirmSymlinkError('a directory on the way to the file is a symbolic link');
        if (!st.isDirectory()) throw new ConfirmGoneError('before');
        throw new ConfirmSymlinkError(
          'a directory on the way to the file was swapped (for a symbolic link or another directory) while it was inspected',
        );
      }
      fds.push(fd);
      const st = ops.fstatSync(fd);
      dirs.push({ name: dirName, dev: st.dev.toString(), ino: st.ino.toString() });
    }
    // Belt and braces, as inspectFile's realpath: the file's directory is at the path walked.
    if (dirNames.length > 0) {
      let dirNow: string;
      try {
        dirNow = ops.readlinkSync(PROC_FD + fds[fds.length - 1]!);
      } catch (error) {
        throw round1OsError(error);
      }
      if (dirNow !== join(root.realPath, ...dirNames)) {
        throw new ConfirmSymlinkError('the path changed into a symbolic link while it was inspected');
      }
    }
    // The file itself, in the directory held: a regular file, not a symlink to one.
    const st = lstatSyncOr(ops, `${PROC_FD}${fds[fds.length - 1]!}/${name}`, round1OsError);
    if (st.isSymbolicLink()) throw new ConfirmSymlinkError('the path is a symbolic link');
    if (!st.isFile()) throw new ConfirmNotRegularFileError(KIND_WORDS[entryKind(st)]);
    return { fds, dirs, st, rootHeld };
  } catch (error) {
    closeAll();
    // Through a held root handle, a directory or file not found (or anything else) may only mean
    // that the root itself was moved or replaced since: say that, as a walk from its path would.
    if (heldRoot !== undefined && !(error instanceof ConfirmOutsideRootsError) && !rootAtItsPath(ops, heldRoot, root))
      throw new ConfirmOutsideRootsError('the allowed root directory was replaced after start-up');
    throw error;
  }
}

/** Whether the root's held handle `fd` still reads back as the root's path. */
function rootAtItsPath(ops: FsOps, fd: number, root: PinnedRoot): boolean {
  try {
    return ops.readlinkSync(PROC_FD + fd) === root.realPath;
  } catch {
    return false;
  }
}

/**
 * Checks that `value` has exactly the shape {@link inspectFile} produces, with a
 * `path` consistent with its parts.
 *
 * @param value - anything, typically a parsed sealed state.
 * @returns whether it is a well-formed {@link FileFingerprint}.
 */
export function isFileFingerprint(value: unknown): value is FileFingerprint {
  try {
    assertFingerprint(value);
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------

const UNSIGNED = /^(0|[1-9][0-9]*)$/;
const SIGNED = /^(0|-?[1-9][0-9]*)$/;

function assertFingerprint(value: unknown): asserts value is FileFingerprint {
  const bad = (what: string): never => {
    throw new TypeError(`Malformed file fingerprint: ${what}.`);
  };
  const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  const uns = (v: unknown, what: string): void => {
    if (typeof v !== 'string' || !UNSIGNED.test(v)) bad(what);
  };
  const isName = (v: unknown): v is string =>
    typeof v === 'string' &&
    v.length > 0 &&
    v !== '.' &&
    v !== '..' &&
    !v.includes('/') &&
    !v.includes('\0') &&
    v.isWellFormed();
  if (!isObj(value)) return bad('not an object');
  if (value.version !== 1) bad('unknown version');
  const { root, dirs, file } = value;
  if (!isObj(root) || typeof root.realPath !== 'string' || !root.realPath.startsWith('/')) return bad('root');
  uns(root.dev, 'root.dev');
  uns(root.ino, 'root.ino');
  if (!Array.isArray(dirs)) return bad('dirs');
  const names: string[] = [];
  for (const d of dirs as unknown[]) {
    if (!isObj(d) || !isName(d.name)) return bad('dirs[].name');
    uns(d.dev, 'dirs[].dev');
    uns(d.ino, 'dirs[].ino');
    names.push(d.name);
  }
  if (!isName(value.name)) bad('name');
  if (!isObj(file) || file.type !== 'regular file') return bad('file');
  uns(file.dev, 'file.dev');
  uns(file.ino, 'file.ino');
  if (typeof file.mtimeNs !== 'string' || !SIGNED.test(file.mtimeNs)) bad('file.mtimeNs');
  if (typeof file.ctimeNs !== 'string' || !SIGNED.test(file.ctimeNs)) bad('file.ctimeNs');
  uns(value.size, 'size');
  uns(value.nlink, 'nlink');
  if (value.path !== join(root.realPath, ...names, value.name as string)) bad('path does not match its parts');
}

/** A path resolved as text, see {@link parsePath}. */
interface ParsedPath {
  /** The absolute path after dropping empty components and `.`, and applying `..`. */
  absolute: string;
  /** The path ends in `/`, `/.` or `/..` (or is `.` or `..`): as the system reads it, it can only name a directory. */
  namesDirectory: boolean;
  /** Every absolute path a `..` stepped back from, in order; the first root's path itself (the base of a relative path) is trusted and never listed. */
  steppedBack: string[];
}

/**
 * Resolves `path` as text, the way the system would if no component were a symbolic
 * link: relative to `base`, empty components and `.` dropped, `..` stepping back one
 * component (and staying at `/` at the top). Makes no system call.
 */
function parsePath(base: string, path: string): ParsedPath {
  const stack = path.startsWith('/') ? [] : base.split('/').filter((c) => c !== '');
  // How many leading components of `stack` are the trusted base (the canonical first root).
  let trusted = stack.length;
  const steppedBack: string[] = [];
  const parts = path.split('/');
  const last = parts[parts.length - 1];
  for (const part of parts) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (stack.length > trusted) steppedBack.push(`/${stack.join('/')}`);
      stack.pop();
      trusted = Math.min(trusted, stack.length);
      continue;
    }
    stack.push(part);
  }
  return { absolute: `/${stack.join('/')}`, namesDirectory: last === '' || last === '.' || last === '..', steppedBack };
}

/** Finds the root the normalised absolute path `abs` is under (the most specific one) and the components below it. */
function locate(roots: Roots, abs: string): { root: PinnedRoot; components: string[] } {
  let best: { root: PinnedRoot; components: string[] } | undefined;
  for (const root of roots.list) {
    if (abs === root.realPath || abs === root.absolute) throw new ConfirmNotRegularFileError('directory');
    // Canonical real path first; the path as given at start-up is accepted as an alias of it.
    const components =
      componentsBelow(abs, root.realPath) ??
      (root.absolute !== root.realPath ? componentsBelow(abs, root.absolute) : undefined);
    if (components && (!best || components.length < best.components.length)) best = { root, components };
  }
  if (!best) throw new ConfirmOutsideRootsError();
  return best;
}

/**
 * Checks what the `..` components of a path stepped back from: each must lie in a
 * root, and it and every directory between the root and it must be a real
 * directory (by `lstat`, shortest first, so no symbolic link is ever followed to
 * reach the next one). Then the lexical resolution is the one the system makes.
 */
async function checkSteppedBack(ops: FsOps, roots: Roots, steppedBack: readonly string[]): Promise<void> {
  const toCheck = new Set<string>();
  for (const p of steppedBack) {
    const inside = roots.list
      .flatMap((r) => (r.absolute === r.realPath ? [r.realPath] : [r.realPath, r.absolute]))
      .map((spelling) => ({ spelling, below: p === spelling ? [] : componentsBelow(p, spelling) }))
      .find((x) => x.below !== undefined);
    if (!inside?.below)
      throw new ConfirmOutsideRootsError('a ".." in the path steps back from a directory outside the allowed roots');
    // The root itself is checked by the walk (pinned by inode); everything below it here.
    for (let i = 1; i <= inside.below.length; i++) toCheck.add(join(inside.spelling, ...inside.below.slice(0, i)));
  }
  for (const p of [...toCheck].sort((a, b) => a.length - b.length)) {
    const st = await lstatRound1(ops, p);
    if (st.isSymbolicLink()) {
      throw new ConfirmSymlinkError(
        'a ".." in the path steps back over a symbolic link (the system would step back from where the link points)',
      );
    }
    // The system would answer ENOTDIR: nothing exists at the path.
    if (!st.isDirectory()) throw new ConfirmGoneError('before');
  }
}

function requireMainThread(ops: FsOps, what: string): void {
  if (!ops.isMainThread()) {
    throw new ConfirmOsError(
      'ERR_WORKER_UNSUPPORTED_OPERATION',
      `${what} from a worker thread (this needs process.chdir, which Node allows only on the main thread)`,
    );
  }
}

/**
 * Runs `body` (synchronous: no other JavaScript runs meanwhile) and then always changes
 * the working directory back to what it was. If that is impossible (the directory was
 * removed), changes to `/` and reports it: appended to the message of what `body` threw,
 * or as `warning` (also emitted as a process warning) when `body` succeeded.
 */
function inPinnedBlock<T>(ops: FsOps, body: () => T): { value: T; warning?: string } {
  let saved: string | undefined;
  try {
    saved = ops.cwd();
  } catch {
    saved = undefined;
  }
  let value: T;
  try {
    value = body();
  } catch (error) {
    const problem = restoreWorkingDirectory(ops, saved);
    if (problem !== undefined && error instanceof Error) error.message = `${error.message} ${problem}`;
    throw error;
  }
  const problem = restoreWorkingDirectory(ops, saved);
  if (problem === undefined) return { value };
  process.emitWarning(problem, { code: 'MCP_CONFIRM_CWD_NOT_RESTORED' });
  return { value, warning: problem };
}

/** Changes back to `saved`; on failure to `/`. Returns a sentence when `saved` could not be restored. */
function restoreWorkingDirectory(ops: FsOps, saved: string | undefined): string | undefined {
  let reason = 'it could not be read beforehand';
  if (saved !== undefined) {
    try {
      ops.chdir(saved);
      return undefined;
    } catch (error) {
      reason = errnoCode(error);
    }
  }
  try {
    ops.chdir('/');
  } catch {
    // '/' always exists; nothing better to do.
  }
  const shown = saved === undefined ? 'of the server' : renderPath(saved);
  return `(The working directory ${shown} could not be restored (${reason}); the server process is now in "/".)`;
}

/** Makes `name` (one component, or an absolute root path) the working directory; errors as `mapError` says. */
function enter(ops: FsOps, name: string, mapError: (error: unknown) => ConfirmError): void {
  try {
    ops.chdir(name);
  } catch (error) {
    throw mapError(error);
  }
}

function lstatSyncOr(ops: FsOps, name: string, mapError: (error: unknown) => ConfirmError): BigIntStats {
  try {
    return ops.lstatSync(name);
  } catch (error) {
    throw mapError(error);
  }
}

const sameId = (st: BigIntStats, id: { dev: string; ino: string }): boolean =>
  st.dev.toString() === id.dev && st.ino.toString() === id.ino;

/** Round 1 inside a pinned block: the root, the walk, the file. */
function walkRoundOne(
  ops: FsOps,
  root: PinnedRoot,
  dirNames: readonly string[],
  name: string,
): { dirs: DirIdentity[]; st: BigIntStats } {
  enter(ops, root.realPath, round1OsError);
  const here = lstatSyncOr(ops, '.', round1OsError);
  if (!here.isDirectory() || !sameId(here, root))
    throw new ConfirmOutsideRootsError('the allowed root directory was replaced after start-up');

  const dirs: DirIdentity[] = [];
  for (const dirName of dirNames) {
    const st = lstatSyncOr(ops, dirName, round1OsError);
    if (st.isSymbolicLink()) throw new ConfirmSymlinkError('a directory on the way to the file is a symbolic link');
    // A file in the middle of the path: nothing exists at the full path.
    if (!st.isDirectory()) throw new ConfirmGoneError('before');
    const id = { name: dirName, dev: st.dev.toString(), ino: st.ino.toString() };
    enter(ops, dirName, round1OsError);
    // chdir follows a symbolic link: whatever it entered must be the directory just seen.
    const entered = lstatSyncOr(ops, '.', round1OsError);
    if (!sameId(entered, id)) {
      throw new ConfirmSymlinkError(
        'a directory on the way to the file was swapped (for a symbolic link or another directory) while it was inspected',
      );
    }
    dirs.push(id);
  }

  // The file itself, in the directory reached: a regular file, not a symlink to one.
  const st = lstatSyncOr(ops, name, round1OsError);
  if (st.isSymbolicLink()) throw new ConfirmSymlinkError('the path is a symbolic link');
  if (!st.isFile()) throw new ConfirmNotRegularFileError(KIND_WORDS[entryKind(st)]);
  return { dirs, st };
}

/** Round 2 inside a pinned block: walk and compare, quarantine, compare, unlink. Returns the size deleted. */
function deleteRoundTwo(ops: FsOps, pinned: PinnedRoot, fp: FileFingerprint): bigint {
  // a. The root and every directory, by inode, compared with the fingerprint.
  enter(ops, pinned.realPath, (error) =>
    errnoCode(error) === 'ENOTDIR'
      ? new ConfirmChangedError('The allowed root directory was replaced.')
      : round2OsError(error),
  );
  const here = lstatSyncOr(ops, '.', round2OsError);
  if (!here.isDirectory() || !sameId(here, pinned))
    throw new ConfirmChangedError('The allowed root directory was replaced.');
  for (const d of fp.dirs) {
    const st = lstatSyncOr(ops, d.name, round2OsError);
    if (st.isSymbolicLink())
      throw new ConfirmChangedError('A directory on the way to the file was replaced by a symbolic link.');
    if (!st.isDirectory() || !sameId(st, d))
      throw new ConfirmChangedError('A directory on the way to the file was replaced.');
    enter(ops, d.name, (error) =>
      errnoCode(error) === 'ENOTDIR'
        ? new ConfirmChangedError('A directory on the way to the file was replaced.')
        : round2OsError(error),
    );
    const entered = lstatSyncOr(ops, '.', round2OsError);
    if (!entered.isDirectory() || !sameId(entered, d))
      throw new ConfirmChangedError('A directory on the way to the file was replaced.');
  }
  // The working directory is now the recorded parent directory itself.
  return deleteInDirectory(ops, (entry) => entry, join(pinned.realPath, ...fp.dirs.map((d) => d.name)), fp);
}

/**
 * Steps b to e of round 2 in the directory reached (see the module documentation): the file by
 * its name, compared with the fingerprint (change time included), moved to a quarantine name,
 * compared again, unlinked. `at` gives the path of a name in that directory for the system calls:
 * the name itself in a pinned-directory block, `/proc/self/fd/N/NAME` through a directory handle.
 *
 * @param dirShown - the directory's recorded path, for messages.
 * @returns the size deleted, in bytes.
 */
function deleteInDirectory(ops: FsOps, at: (entry: string) => string, dirShown: string, fp: FileFingerprint): bigint {
  // b. The file itself, change time included (the rename below will change it).
  const before = lstatSyncOr(ops, at(fp.name), round2OsError);
  const mismatch = compareFile(before, fp, true);
  if (mismatch) throw mismatch;

  // c. Move it out of reach atomically, within this very directory.
  const quarantine = newQuarantineName(ops);
  try {
    ops.renameSync(at(fp.name), at(quarantine));
  } catch (error) {
    const code = errnoCode(error);
    // Vanished between the lstat and the rename.
    if (code === 'ENOENT') throw new ConfirmGoneError('after');
    // The rename failed as a whole: the file is intact at its name.
    throw new ConfirmOsError(code, 'delete the file', { cause: error });
  }
  const place: Quarantined = { quarantine: at(quarantine), name: at(fp.name), shown: join(dirShown, quarantine) };

  // d. What we moved must be the fingerprinted file.
  let moved: BigIntStats;
  try {
    moved = ops.lstatSync(at(quarantine));
  } catch (error) {
    // Could not even look at it (or it is no longer there): put it back blind (link never
    // overwrites); when it is gone, the restore says so.
    throw restoreAndExplain(
      ops,
      place,
      undefined,
      new ConfirmOsError(errnoCode(error), 'delete the file', { cause: error }),
    );
  }
  const movedMismatch = compareFile(moved, fp, false);
  if (movedMismatch) throw restoreAndExplain(ops, place, moved, movedMismatch);

  // e. Everything matched: destroy this name. On failure, put it back (an ENOENT here
  // means someone renamed or removed the quarantine entry: the restore then says so).
  try {
    ops.unlinkSync(at(quarantine));
  } catch (error) {
    throw restoreAndExplain(
      ops,
      place,
      moved,
      new ConfirmOsError(errnoCode(error), 'delete the file', { cause: error }),
    );
  }
  return moved.size;
}

async function lstatRound1(ops: FsOps, p: string): Promise<BigIntStats> {
  try {
    return await ops.lstat(p);
  } catch (error) {
    throw round1OsError(error);
  }
}

function round1OsError(error: unknown): ConfirmError {
  const code = errnoCode(error);
  // ENOTDIR: a component is not a directory, so nothing exists at the path.
  if (code === 'ENOENT' || code === 'ENOTDIR') return new ConfirmGoneError('before');
  return new ConfirmOsError(code, 'inspect the file', { cause: error });
}

function round2OsError(error: unknown): ConfirmError {
  const code = errnoCode(error);
  if (code === 'ENOENT' || code === 'ENOTDIR') return new ConfirmGoneError('after');
  return new ConfirmOsError(code, 'delete the file', { cause: error });
}

/** lstat for round 2: `'gone'` when nothing is there; other OS errors become ERR_CONFIRM_OS. */
async function lstatRound2(ops: FsOps, p: string): Promise<BigIntStats | 'gone'> {
  try {
    return await ops.lstat(p);
  } catch (error) {
    const code = errnoCode(error);
    if (code === 'ENOENT' || code === 'ENOTDIR') return 'gone';
    throw new ConfirmOsError(code, 'delete the file', { cause: error });
  }
}

/** By path: the root and every recorded directory; returns the refusal, if any. */
async function checkChain(ops: FsOps, pinned: PinnedRoot, fp: FileFingerprint): Promise<ConfirmError | undefined> {
  const rootSt = await lstatRound2(ops, pinned.realPath);
  if (rootSt === 'gone') return new ConfirmGoneError('after');
  if (!rootSt.isDirectory() || !sameId(rootSt, pinned))
    return new ConfirmChangedError('The allowed root directory was replaced.');
  let dir = pinned.realPath;
  for (const d of fp.dirs) {
    const p = join(dir, d.name);
    const st = await lstatRound2(ops, p);
    if (st === 'gone') return new ConfirmGoneError('after');
    if (st.isSymbolicLink())
      return new ConfirmChangedError('A directory on the way to the file was replaced by a symbolic link.');
    if (!st.isDirectory() || !sameId(st, d))
      return new ConfirmChangedError('A directory on the way to the file was replaced.');
    dir = p;
  }
  return undefined;
}

/** Compares an lstat with the fingerprint; returns the refusal on a difference. */
function compareFile(st: BigIntStats, fp: FileFingerprint, withCtime: boolean): ConfirmError | undefined {
  if (st.isSymbolicLink()) return new ConfirmChangedError('It is now a symbolic link.');
  if (!st.isFile()) return new ConfirmChangedError(`It is now a ${KIND_WORDS[entryKind(st)]}.`);
  if (!sameId(st, fp.file)) return new ConfirmChangedError('It is now a different file.');
  if (
    st.size.toString() !== fp.size ||
    st.mtimeNs.toString() !== fp.file.mtimeNs ||
    st.nlink.toString() !== fp.nlink ||
    (withCtime && st.ctimeNs.toString() !== fp.file.ctimeNs)
  ) {
    return new ConfirmChangedError('Its content or attributes were modified.');
  }
  return undefined;
}

/** An entry moved to a quarantine name in its directory. */
interface Quarantined {
  /** The quarantine name, as the system calls take it (one component, or through a directory handle). */
  quarantine: string;
  /** The name it was moved from, as the system calls take it. */
  name: string;
  /** Where it is, for messages: the recorded directory path joined with the quarantine name. */
  shown: string;
}

/**
 * Puts a quarantined entry back (see {@link restore}) and builds the refusal to throw:
 * `refusal` itself when the entry is back under its name; a refusal of the same kind
 * whose message also says where the entry is when it had to stay in quarantine; and
 * `ERR_CONFIRM_CHANGED` saying so when the entry is no longer in quarantine at all.
 */
function restoreAndExplain(
  ops: FsOps,
  place: Quarantined,
  st: BigIntStats | undefined,
  refusal: ConfirmError,
): ConfirmError {
  const outcome = restore(ops, place, st);
  if (outcome.kind === 'back') return refusal;
  if (refusal instanceof ConfirmOsError && outcome.kind === 'kept') {
    return new ConfirmOsError(refusal.osCode, `delete the file (${lowerFirst(outcome.sentence)})`, {
      cause: refusal.cause,
    });
  }
  if (refusal instanceof ConfirmChangedError) {
    const base = new ConfirmChangedError().message;
    const reason = refusal.message.startsWith(base) ? refusal.message.slice(base.length).trim() : '';
    return new ConfirmChangedError(reason ? `${reason} ${outcome.sentence}` : outcome.sentence);
  }
  return new ConfirmChangedError(outcome.sentence);
}

/** What {@link restore} achieved. */
type RestoreOutcome = { kind: 'back' } | { kind: 'kept'; sentence: string } | { kind: 'gone'; sentence: string };

/**
 * Puts a quarantined entry back under its name, in its directory, without
 * overwriting anything.
 *
 * @returns `back` when it is back (only) under its name; `kept` (with a sentence saying
 *   where) when it stays in quarantine; `gone` when it is no longer under the quarantine name.
 */
function restore(ops: FsOps, place: Quarantined, st: BigIntStats | undefined): RestoreOutcome {
  const q = renderPath(place.shown);
  try {
    // link(2) fails with EEXIST instead of replacing whatever now holds the name.
    ops.linkSync(place.quarantine, place.name);
  } catch (error) {
    const code = errnoCode(error);
    if (code === 'ENOENT') return { kind: 'gone', sentence: disappearedSentence(place.shown) };
    if (code === 'EEXIST') {
      return {
        kind: 'kept',
        sentence: `The entry that was at the name is kept at ${q}, because the name has been taken again meanwhile.`,
      };
    }
    if (st?.isDirectory()) {
      return {
        kind: 'kept',
        sentence: `The directory that was at the name is kept at ${q} (a directory cannot be put back without risk of overwriting).`,
      };
    }
    return {
      kind: 'kept',
      sentence: `The entry that was at the name is kept at ${q}; putting it back failed (${code}).`,
    };
  }
  try {
    ops.unlinkSync(place.quarantine);
  } catch (error) {
    return {
      kind: 'kept',
      sentence: `The entry is back at its name, but a second name of it remains at ${q} (${errnoCode(error)}).`,
    };
  }
  return { kind: 'back' };
}

function disappearedSentence(shown: string): string {
  return `The entry moved aside for deletion to ${renderPath(shown)} was renamed or removed there by someone else before it could be checked and deleted; this call deleted nothing.`;
}

function lowerFirst(s: string): string {
  return s.charAt(0).toLowerCase() + s.slice(1).replace(/\.$/, '');
}
