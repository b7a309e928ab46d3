/**
 * The file a confirmation is about: inspecting it before the human is asked
 * (round 1) and deleting it afterwards only if it provably is still the same
 * file (round 2).
 *
 * ## Round 1: {@link inspectFile}
 * The untrusted path is checked as text (non-empty, no NUL, well-formed UTF-16),
 * made absolute (relative paths are relative to the first root), normalised
 * lexically, and matched against the roots by whole path components on canonical
 * real paths (`/r/allowed_evil` is not inside `/r/allowed`). Then the chain is
 * walked with `lstat` from the root down: the root must still be the pinned
 * directory, no component may be a symbolic link (even one pointing inside a
 * root), and the leaf must be a regular file. A final `realpath` must give back
 * the very same path. The result, a {@link FileFingerprint}, records the
 * identity of everything on the way.
 *
 * ## Round 2: {@link deleteVerified}
 * In this order, failing closed at each step:
 * 1. the recorded root is one of the pinned roots, with the recorded device and inode;
 * 2. `lstat` of the root and of every directory down to the parent: none is a
 *    symlink, each has its recorded device and inode;
 * 3. `lstat` of the file: regular file, same device, inode, size, link count,
 *    modification and change time (nanoseconds);
 * 4. `rename` the file to a hidden, unguessable quarantine name in the same
 *    directory (atomic; from now on nobody can swap something else in under the
 *    name we act on);
 * 5. `lstat` the moved entry: same device, inode, type, size, link count and
 *    modification time (the rename itself updates the change time, which is why
 *    that one was compared in step 3), and re-check the directory chain as in step 2;
 * 6. only when all of that matches, `unlink` the quarantine name.
 *
 * On a mismatch after step 4, the entry is put back without ever overwriting
 * anything: `link` to the original name (fails with `EEXIST` if the name was
 * taken again), then `unlink` of the quarantine name. If the name is taken, or
 * the entry is a directory (which cannot be hard-linked), it stays in quarantine
 * and the refusal says where ({@link findQuarantineLeftovers} reports such
 * entries at start-up).
 *
 * Refusals in round 2: a file or directory on the way that no longer exists is
 * `ERR_CONFIRM_GONE`; anything present but different (root, directory, file) is
 * `ERR_CONFIRM_CHANGED`; an OS refusal of the rename or unlink is `ERR_CONFIRM_OS`
 * with the file left at its name.
 *
 * A directory component replaced by a symbolic link is reported in round 2 as
 * `ERR_CONFIRM_CHANGED` (not `ERR_CONFIRM_SYMLINK`): what the human confirmed is
 * no longer there, and "ask again" is the right advice; if it is still a symlink
 * when asked again, round 1 then refuses with `ERR_CONFIRM_SYMLINK`.
 *
 * > [!WARNING]
 * > **Residual window.** Node has no `openat`/`renameat`/`unlinkat`, so every call
 * > re-resolves the full path from `/`; the checks are on names, not on held
 * > directory handles. What that leaves open, and what closes part of it:
 * >
 * > 1. *Between the last directory `lstat` (step 2) and the `rename` (step 4).*
 * >    Someone who can rename entries in a directory of the chain (or above the
 * >    root) can swap a directory for a symlink or another directory. The rename
 * >    then moves a same-named entry in *that* directory to a quarantine name there.
 * >    Nothing is destroyed: step 5 compares the moved entry's device and inode
 * >    with the fingerprint and re-checks the chain, and on any difference the entry
 * >    is linked back under its name. If the swap is *undone* before step 5, the
 * >    moved entry is out of reach of our path: it stays, content intact, under the
 * >    random quarantine name in the other directory, and the refusal can only say
 * >    it could not be found again. {@link findQuarantineLeftovers} finds it at the
 * >    next start-up only if that directory is inside a root.
 * > 2. *Between step 5 and the `unlink` (step 6).* The same kind of swap can point
 * >    the `unlink` into another directory; there it removes only an entry carrying
 * >    the fresh 128-bit random quarantine name, which an attacker must first learn
 * >    (by listing our directory) and then plant in a directory they can write to —
 * >    where they could delete what they planted themselves. A hard link planted
 * >    there only loses that extra name; the data keeps its other names.
 * > 3. *Timestamps are coarse.* The kernel stamps `mtime`/`ctime` from a coarse
 * >    clock (a few milliseconds on Linux ext4/tmpfs, up to seconds on some file
 * >    systems), so a rewrite of the same inode that keeps the size and lands in the
 * >    same clock tick as round 1's `lstat` is not seen. A write after step 3 goes
 * >    to the very file the human chose and is deleted with it.
 * >
 * > Closing 1 and 2 completely needs directory file descriptors
 * > (`openat(O_NOFOLLOW|O_DIRECTORY)` down the chain, then `renameat`/`unlinkat`
 * > relative to the held parent), i.e. a native addon or a future Node API.
 *
 * @module
 */
import { isAbsolute, join, resolve, sep } from 'node:path';
import type { BigIntStats } from 'node:fs';
import {
  ConfirmBadArgumentError,
  ConfirmChangedError,
  ConfirmGoneError,
  ConfirmNotRegularFileError,
  ConfirmOsError,
  ConfirmOutsideRootsError,
  ConfirmSymlinkError,
  type ConfirmError,
} from '../errors.js';
import { componentsBelow, type PinnedRoot, type Roots } from './roots.js';
import { entryKind, errnoCode, withDefaults, type EntryKind, type FsOps } from './ops.js';
import { newQuarantineName } from './quarantine.js';

export { findQuarantineLeftovers, QUARANTINE_PREFIX, isQuarantineName } from './quarantine.js';

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
 * {
 *   version: 1, path: '/srv/scratch/a/data.txt', size: '12', nlink: '1',
 *   root: { realPath: '/srv/scratch', dev: '2049', ino: '131074' },
 *   dirs: [{ name: 'a', dev: '2049', ino: '131090' }], name: 'data.txt',
 *   file: { dev: '2049', ino: '131091', type: 'regular file', mtimeNs: '1764…', ctimeNs: '1764…' },
 * }
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

/** Options of {@link inspectFile} and {@link deleteVerified}. */
export interface TargetOptions {
  /** File-system calls to use; defaults to the real ones. Tests use it to inject OS refusals and swaps. */
  ops?: Partial<FsOps>;
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

/**
 * Round 1: checks an untrusted path and records the identity of the file it names.
 * Reads only; changes nothing on disk.
 *
 * @param roots - the roots pinned at start-up.
 * @param path - untrusted; absolute, or relative to the first root (`roots.list[0]`).
 * @param options - see {@link TargetOptions}.
 * @returns the file's {@link FileFingerprint}.
 * @throws {ConfirmBadArgumentError} `ERR_CONFIRM_BAD_ARGUMENT`: not a string, empty, contains NUL,
 *   or not well-formed UTF-16 (a lone surrogate would be written to disk as U+FFFD, so the name
 *   shown and the file touched would differ).
 * @throws {ConfirmOutsideRootsError} `ERR_CONFIRM_OUTSIDE_ROOTS`: lexically or really outside every
 *   root (whole-component comparison), or the root was replaced after start-up.
 * @throws {ConfirmSymlinkError} `ERR_CONFIRM_SYMLINK`: the file, or a directory between the root and
 *   it, is a symbolic link (wherever it points).
 * @throws {ConfirmGoneError} `ERR_CONFIRM_GONE` (`'before'`): nothing exists at the path.
 * @throws {ConfirmNotRegularFileError} `ERR_CONFIRM_NOT_REGULAR_FILE`: a directory (a root itself
 *   included), FIFO, socket or device.
 * @throws {ConfirmOsError} `ERR_CONFIRM_OS`: any other OS refusal (e.g. `EACCES`, `ENAMETOOLONG`).
 *
 * @example
 * const fp = await inspectFile(roots, 'notes/cache.txt');
 * question`Delete ${fp.path} (${fp.size} bytes)?`;
 */
export async function inspectFile(roots: Roots, path: string, options: TargetOptions = {}): Promise<FileFingerprint> {
  const ops = withDefaults(options.ops);
  // Text checks first: nothing about a malformed name is worth a system call.
  if (typeof path !== 'string') throw new ConfirmBadArgumentError('the path must be a string');
  if (path.length === 0) throw new ConfirmBadArgumentError('the path is empty');
  if (path.includes('\0')) throw new ConfirmBadArgumentError('the path contains a NUL character');
  if (!path.isWellFormed()) throw new ConfirmBadArgumentError('the path is not well-formed Unicode text (it has a lone surrogate)');

  // Lexical containment on the normalised absolute path, by whole components.
  const { root, components } = locate(roots, path);
  const name = components[components.length - 1]!;
  const dirNames = components.slice(0, -1);

  // The root must still be the directory pinned at start-up.
  const rootSt = await lstatRound1(ops, root.realPath);
  if (!rootSt.isDirectory() || rootSt.dev.toString() !== root.dev || rootSt.ino.toString() !== root.ino) {
    throw new ConfirmOutsideRootsError('the allowed root directory was replaced after start-up');
  }

  // Walk down with lstat: no component may be a symlink, each must be a directory.
  let dir = root.realPath;
  const dirs: DirIdentity[] = [];
  for (const dirName of dirNames) {
    const p = join(dir, dirName);
    const st = await lstatRound1(ops, p);
    if (st.isSymbolicLink()) throw new ConfirmSymlinkError('a directory on the way to the file is a symbolic link');
    // A file in the middle of the path: nothing exists at the full path.
    if (!st.isDirectory()) throw new ConfirmGoneError('before');
    dirs.push({ name: dirName, dev: st.dev.toString(), ino: st.ino.toString() });
    dir = p;
  }

  // The file itself: a regular file, not a symlink to one.
  const filePath = join(dir, name);
  const st = await lstatRound1(ops, filePath);
  if (st.isSymbolicLink()) throw new ConfirmSymlinkError('the path is a symbolic link');
  if (!st.isFile()) throw new ConfirmNotRegularFileError(KIND_WORDS[entryKind(st)]);

  // Really inside: the canonical path must be the very path we walked (belt and braces
  // against a swap during the walk).
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
 * Round 2: proves the file is still the one fingerprinted in round 1, then deletes
 * this one name of it. See the module documentation for the exact steps and the
 * residual window.
 *
 * @param roots - the roots pinned at start-up (the fingerprint's root must be one of them).
 * @param fp - the fingerprint from {@link inspectFile}, possibly after a JSON round trip.
 * @param options - see {@link TargetOptions}.
 * @returns the deleted path and its size in bytes.
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
 *   back, the message says where it is).
 *
 * @example
 * const { path, size } = await deleteVerified(roots, JSON.parse(JSON.stringify(fp)));
 * `Deleted ${path} (${size} bytes).`;
 */
export async function deleteVerified(
  roots: Roots,
  fp: FileFingerprint,
  options: TargetOptions = {},
): Promise<{ path: string; size: bigint }> {
  const ops = withDefaults(options.ops);
  // The fingerprint is sealed by us, but still checked: a bad shape must not reach a syscall.
  assertFingerprint(fp);

  // 1. The root must be one of today's pinned roots, with the identity recorded then.
  const pinned = roots.byRealPath(fp.root.realPath);
  if (!pinned) throw new ConfirmOutsideRootsError('the file is not under any of the allowed roots of this server');
  if (pinned.dev !== fp.root.dev || pinned.ino !== fp.root.ino) {
    throw new ConfirmChangedError('The allowed root directory is not the one it was when you were asked.');
  }

  // 2. The root and every directory down to the parent, by lstat, against their identities.
  const chain = await checkChain(ops, pinned, fp);
  if (chain.error) throw chain.error;
  const parent = chain.parent;
  const filePath = join(parent, fp.name);

  // 3. The file itself, change time included (the rename below will change it).
  const before = await lstatRound2(ops, filePath);
  if (before === 'gone') throw new ConfirmGoneError('after');
  const mismatch = compareFile(before, fp, true);
  if (mismatch) throw mismatch;

  // 4. Move it out of reach atomically; from here nothing can be swapped in under the name we unlink.
  const quarantine = join(parent, newQuarantineName(ops));
  try {
    await ops.rename(filePath, quarantine);
  } catch (error) {
    const code = errnoCode(error);
    // Vanished between the lstat and the rename (or a directory on the way did).
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new ConfirmGoneError('after');
    // The rename failed as a whole: the file is intact at its name.
    throw new ConfirmOsError(code, 'delete the file', { cause: error });
  }

  // 5. What we moved must be the fingerprinted file, and the chain must still be the recorded one.
  let moved: BigIntStats | 'gone';
  try {
    moved = await lstatRound2(ops, quarantine);
  } catch (error) {
    // Could not even look at it: put it back blind (link never overwrites).
    throw await restoreAndExplain(ops, quarantine, filePath, undefined, error);
  }
  // Out of our reach: a directory was swapped and swapped back around the rename.
  if (moved === 'gone') throw new ConfirmChangedError(lostSentence(quarantine));
  const movedSt = moved;
  try {
    const movedMismatch = compareFile(movedSt, fp, false);
    if (movedMismatch) throw movedMismatch;
    const chainAfter = await checkChain(ops, pinned, fp);
    if (chainAfter.error) throw chainAfter.error;
  } catch (error) {
    throw await restoreAndExplain(ops, quarantine, filePath, movedSt, error);
  }

  // 6. Everything matched: destroy this name.
  try {
    await ops.unlink(quarantine);
  } catch (error) {
    const code = errnoCode(error);
    const refusal =
      code === 'ENOENT' || code === 'ENOTDIR'
        ? // Not there any more by this path: a directory on the way moved meanwhile.
          new ConfirmChangedError('A directory on the way to the file changed while it was being deleted.')
        : new ConfirmOsError(code, 'delete the file', { cause: error });
    throw await restoreAndExplain(ops, quarantine, filePath, movedSt, refusal);
  }
  return { path: fp.path, size: movedSt.size };
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
    typeof v === 'string' && v.length > 0 && v !== '.' && v !== '..' && !v.includes(sep) && !v.includes('\0') && v.isWellFormed();
  if (!isObj(value)) return bad('not an object');
  if (value.version !== 1) bad('unknown version');
  const { root, dirs, file } = value;
  if (!isObj(root) || typeof root.realPath !== 'string' || !isAbsolute(root.realPath)) return bad('root');
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

/** Finds the root `path` is under (the most specific one) and the components below it. */
function locate(roots: Roots, path: string): { root: PinnedRoot; components: string[] } {
  const first = roots.list[0];
  if (!first) throw new ConfirmOutsideRootsError();
  // resolve() also removes `.`, `..` and doubled separators, lexically.
  const abs = isAbsolute(path) ? resolve(path) : resolve(first.realPath, path);
  let best: { root: PinnedRoot; components: string[] } | undefined;
  for (const root of roots.list) {
    if (abs === root.realPath || abs === root.absolute) throw new ConfirmNotRegularFileError('directory');
    // Canonical real path first; the path as given at start-up is accepted as an alias of it.
    const components =
      componentsBelow(abs, root.realPath) ?? (root.absolute !== root.realPath ? componentsBelow(abs, root.absolute) : undefined);
    if (components && (!best || components.length < best.components.length)) best = { root, components };
  }
  if (!best) throw new ConfirmOutsideRootsError();
  return best;
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

/** Re-checks the root and every recorded directory; returns the parent path, or the refusal. */
async function checkChain(
  ops: FsOps,
  pinned: PinnedRoot,
  fp: FileFingerprint,
): Promise<{ parent: string; error?: undefined } | { parent?: undefined; error: ConfirmError }> {
  const rootSt = await lstatRound2(ops, pinned.realPath);
  if (rootSt === 'gone') return { error: new ConfirmGoneError('after') };
  if (!rootSt.isDirectory() || rootSt.dev.toString() !== pinned.dev || rootSt.ino.toString() !== pinned.ino) {
    return { error: new ConfirmChangedError('The allowed root directory was replaced.') };
  }
  let dir = pinned.realPath;
  for (const d of fp.dirs) {
    const p = join(dir, d.name);
    const st = await lstatRound2(ops, p);
    if (st === 'gone') return { error: new ConfirmGoneError('after') };
    if (st.isSymbolicLink()) return { error: new ConfirmChangedError('A directory on the way to the file was replaced by a symbolic link.') };
    if (!st.isDirectory() || st.dev.toString() !== d.dev || st.ino.toString() !== d.ino) {
      return { error: new ConfirmChangedError('A directory on the way to the file was replaced.') };
    }
    dir = p;
  }
  return { parent: dir };
}

/** Compares an lstat with the fingerprint; returns the refusal on a difference. */
function compareFile(st: BigIntStats, fp: FileFingerprint, withCtime: boolean): ConfirmError | undefined {
  if (st.isSymbolicLink()) return new ConfirmChangedError('It is now a symbolic link.');
  if (!st.isFile()) return new ConfirmChangedError(`It is now a ${KIND_WORDS[entryKind(st)]}.`);
  if (st.dev.toString() !== fp.file.dev || st.ino.toString() !== fp.file.ino) {
    return new ConfirmChangedError('It is now a different file.');
  }
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

/**
 * Puts a quarantined entry back (see {@link restore}) and builds the refusal to throw:
 * `refusal` itself when the entry is back under its name, else a refusal of the same
 * kind whose message also says where the entry is.
 */
async function restoreAndExplain(
  ops: FsOps,
  quarantine: string,
  original: string,
  st: BigIntStats | undefined,
  refusal: unknown,
): Promise<unknown> {
  const where = await restore(ops, quarantine, original, st);
  if (where === undefined) return refusal;
  if (refusal instanceof ConfirmOsError) {
    return new ConfirmOsError(refusal.osCode, `delete the file (${lowerFirst(where)})`, { cause: refusal.cause });
  }
  if (refusal instanceof ConfirmChangedError) {
    const base = new ConfirmChangedError().message;
    const reason = refusal.message.startsWith(base) ? refusal.message.slice(base.length).trim() : '';
    return new ConfirmChangedError(reason ? `${reason} ${where}` : where);
  }
  return new ConfirmChangedError(where);
}

/**
 * Puts a quarantined entry back under its name without overwriting anything.
 *
 * @returns `undefined` when it is back (only) under its name; otherwise a sentence saying where it is.
 */
async function restore(ops: FsOps, quarantine: string, original: string, st: BigIntStats | undefined): Promise<string | undefined> {
  const q = JSON.stringify(quarantine);
  try {
    // link(2) fails with EEXIST instead of replacing whatever now holds the name.
    await ops.link(quarantine, original);
  } catch (error) {
    const code = errnoCode(error);
    if (code === 'ENOENT' || code === 'ENOTDIR') return lostSentence(quarantine);
    if (code === 'EEXIST') {
      return `The entry that was at the name is kept at ${q}, because the name has been taken again meanwhile.`;
    }
    if (st?.isDirectory()) return `The directory that was at the name is kept at ${q} (a directory cannot be put back without risk of overwriting).`;
    return `The entry that was at the name is kept at ${q}; putting it back failed (${code}).`;
  }
  try {
    await ops.unlink(quarantine);
  } catch (error) {
    return `The entry is back at its name, but a second name of it remains at ${q} (${errnoCode(error)}).`;
  }
  return undefined;
}

function lostSentence(quarantine: string): string {
  return `The entry moved aside for deletion cannot be found again at ${JSON.stringify(quarantine)}; it was not deleted.`;
}

function lowerFirst(s: string): string {
  return s.charAt(0).toLowerCase() + s.slice(1).replace(/\.$/, '');
}
