/**
 * The file-system calls `src/fs` makes, gathered in one injectable record.
 *
 * Production code uses {@link defaultFsOps} (thin wrappers over `node:fs`,
 * `node:fs/promises` and `process`). Tests pass a record whose functions wrap the
 * real ones to inject an OS refusal (`EACCES`, `EPERM`) or to perform a swap at an
 * exact point between two steps, which is how the race windows of
 * {@link deleteVerified} are exercised deterministically.
 *
 * Two groups: asynchronous calls on absolute paths (`lstat`, `realpath`, `readdir`),
 * used where nothing depends on the working directory; and the synchronous calls
 * used inside a *pinned-directory block* (`cwd`, `chdir`, `lstatSync`, `renameSync`,
 * `linkSync`, `unlinkSync`), where the process working directory stands in for a
 * directory file descriptor (see `target.ts`). The synchronous ones are only ever
 * called with `'.'` or one path component (no separator), except `chdir`, which is
 * also called with an absolute root path and with the saved working directory.
 *
 * A third group serves {@link openFile}'s directory handles (`openDirSync`, `fstatSync`,
 * `readlinkSync`, `closeSync`): there the synchronous calls of the second group take a path
 * `/proc/self/fd/N/NAME`, which the kernel resolves from the directory open as descriptor `N`
 * (see `target.ts`, "Directory handles").
 *
 * @module
 */
import {
  closeSync,
  constants as fsConstants,
  fstatSync,
  linkSync,
  lstatSync,
  openSync,
  promises as fsp,
  readlinkSync,
  renameSync,
  unlinkSync,
  type BigIntStats,
} from 'node:fs';
import { createRequire } from 'node:module';

// node:crypto and node:worker_threads are loaded on first use (a delete), not when the roots are
// opened at start-up: the server answers its first request sooner (docs/performance.md).
const require = createRequire(import.meta.url);
const nodeCrypto = (): typeof import('node:crypto') => require('node:crypto') as typeof import('node:crypto');
const workerThreads = (): typeof import('node:worker_threads') =>
  require('node:worker_threads') as typeof import('node:worker_threads');

/** Every file-system call made by `src/fs`, plus the source of quarantine randomness. */
export interface FsOps {
  /** `lstat(2)` with bigint (nanosecond) fields; never follows a final symlink. */
  lstat(path: string): Promise<BigIntStats>;
  /** `realpath(3)`: the canonical absolute path with every symlink resolved. */
  realpath(path: string): Promise<string>;
  /** Names in a directory, with their types as the directory reports them (no symlink is followed). */
  readdir(path: string): Promise<Array<{ name: string; isDirectory(): boolean }>>;
  /** Returns `bytes` cryptographically random bytes as lower-case hex (2 × `bytes` characters). */
  randomHex(bytes: number): string;
  /** Whether this is the main thread, the only one where `process.chdir` works. */
  isMainThread(): boolean;
  /** `process.cwd()`: the working directory as a path (Node caches it between `chdir` calls). */
  cwd(): string;
  /** `process.chdir(path)`, i.e. `chdir(2)`: resolves `path` once (following symlinks) and makes that directory the working directory. */
  chdir(path: string): void;
  /** Synchronous `lstat(2)` with bigint fields, relative to the working directory when `path` is relative. */
  lstatSync(path: string): BigIntStats;
  /** Synchronous `rename(2)`; atomic within one file system; silently replaces `to` if it exists. */
  renameSync(from: string, to: string): void;
  /** Synchronous `link(2)`: a new name for `existing`; fails with `EEXIST` if `newPath` is taken. Never follows a symlink on Linux. */
  linkSync(existing: string, newPath: string): void;
  /** Synchronous `unlink(2)`: removes one name. */
  unlinkSync(path: string): void;
  /**
   * Synchronous `open(2)` of a directory, read-only, with `O_DIRECTORY | O_NOFOLLOW` (and, as
   * every Node open, close-on-exec): a final symbolic link is never followed (`ENOTDIR` or `ELOOP`).
   * Returns the descriptor.
   */
  openDirSync(path: string): number;
  /** Synchronous `fstat(2)` of a descriptor, bigint fields. */
  fstatSync(fd: number): BigIntStats;
  /** Synchronous `readlink(2)`; on `/proc/self/fd/N`, the current path of what descriptor `N` is open on. */
  readlinkSync(path: string): string;
  /** Synchronous `close(2)`. */
  closeSync(fd: number): void;
}

const OPEN_DIR = fsConstants.O_RDONLY | fsConstants.O_DIRECTORY | fsConstants.O_NOFOLLOW;

/** Random bytes drawn from `node:crypto` ahead, 4,096 at a time; each byte is handed out once. */
let pool: Buffer | undefined;
let poolAt = 0;

/** `bytes` random bytes as lower-case hex, from {@link pool} (a fresh pool when it runs short). */
function randomHex(bytes: number): string {
  if (pool === undefined || poolAt + bytes > pool.length) {
    pool = nodeCrypto().randomBytes(Math.max(4096, bytes));
    poolAt = 0;
  }
  const hex = pool.toString('hex', poolAt, poolAt + bytes);
  // Spent: never handed out again.
  pool.fill(0, poolAt, poolAt + bytes);
  poolAt += bytes;
  return hex;
}

/** Whether this thread is the main one: it never changes, so it is read once. */
let mainThread: boolean | undefined;

/** The real calls, from `node:fs`, `node:fs/promises`, `node:crypto` and `process`. */
export const defaultFsOps: FsOps = Object.freeze({
  lstat: (path: string) => fsp.lstat(path, { bigint: true }),
  realpath: (path: string) => fsp.realpath(path),
  readdir: (path: string) => fsp.readdir(path, { withFileTypes: true }),
  randomHex: (bytes: number) => randomHex(bytes),
  isMainThread: () => (mainThread ??= workerThreads().isMainThread),
  cwd: () => process.cwd(),
  chdir: (path: string) => process.chdir(path),
  lstatSync: (path: string) => lstatSync(path, { bigint: true }),
  renameSync: (from: string, to: string) => renameSync(from, to),
  linkSync: (existing: string, newPath: string) => linkSync(existing, newPath),
  unlinkSync: (path: string) => unlinkSync(path),
  openDirSync: (path: string) => openSync(path, OPEN_DIR),
  fstatSync: (fd: number) => fstatSync(fd, { bigint: true }),
  readlinkSync: (path: string) => readlinkSync(path),
  closeSync: (fd: number) => closeSync(fd),
});

/**
 * Merges a partial override onto {@link defaultFsOps}.
 *
 * @param ops - functions to replace; missing ones are the real calls.
 * @returns a complete {@link FsOps}.
 */
export function withDefaults(ops: Partial<FsOps> | undefined): FsOps {
  return ops ? { ...defaultFsOps, ...ops } : defaultFsOps;
}

/**
 * The `code` of a Node system error (`'ENOENT'`, `'EACCES'`, …), or `'EUNKNOWN'`.
 *
 * @param error - anything thrown by a file-system call.
 */
export function errnoCode(error: unknown): string {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = (error as { code: unknown }).code;
    if (typeof code === 'string' && code.length > 0) return code;
  }
  return 'EUNKNOWN';
}

/** What kind of entry a stat describes, in the words used in refusals. */
export type EntryKind =
  | 'regular file'
  | 'directory'
  | 'symbolic link'
  | 'FIFO'
  | 'socket'
  | 'character device'
  | 'block device'
  | 'unknown file type';

/**
 * Names the kind of entry `stats` describes (from `lstat`, so a symlink is a symlink).
 *
 * @param stats - bigint stats from `lstat`.
 */
export function entryKind(stats: BigIntStats): EntryKind {
  if (stats.isFile()) return 'regular file';
  if (stats.isDirectory()) return 'directory';
  if (stats.isSymbolicLink()) return 'symbolic link';
  if (stats.isFIFO()) return 'FIFO';
  if (stats.isSocket()) return 'socket';
  if (stats.isCharacterDevice()) return 'character device';
  if (stats.isBlockDevice()) return 'block device';
  return 'unknown file type';
}
