/**
 * The file-system calls `src/fs` makes, gathered in one injectable record.
 *
 * Production code uses {@link defaultFsOps} (thin wrappers over `node:fs/promises`).
 * Tests pass a record whose functions wrap the real ones to inject an OS refusal
 * (`EACCES`, `EPERM`) or to perform a swap at an exact point between two steps,
 * which is how the race windows of {@link deleteVerified} are exercised
 * deterministically.
 *
 * @module
 */
import { promises as fsp, type BigIntStats } from 'node:fs';
import { randomBytes } from 'node:crypto';

/** Every file-system call made by `src/fs`, plus the source of quarantine randomness. */
export interface FsOps {
  /** `lstat(2)` with bigint (nanosecond) fields; never follows a final symlink. */
  lstat(path: string): Promise<BigIntStats>;
  /** `realpath(3)`: the canonical absolute path with every symlink resolved. */
  realpath(path: string): Promise<string>;
  /** `rename(2)`: atomic within one file system; silently replaces `to` if it exists. */
  rename(from: string, to: string): Promise<void>;
  /** `link(2)`: a new name for `existing`; fails with `EEXIST` if `newPath` is taken. Never follows a symlink on Linux. */
  link(existing: string, newPath: string): Promise<void>;
  /** `unlink(2)`: removes one name. */
  unlink(path: string): Promise<void>;
  /** Names in a directory, with their types as the directory reports them (no symlink is followed). */
  readdir(path: string): Promise<Array<{ name: string; isDirectory(): boolean }>>;
  /** Returns `bytes` cryptographically random bytes as lower-case hex (2 × `bytes` characters). */
  randomHex(bytes: number): string;
}

/** The real calls, from `node:fs/promises` and `node:crypto`. */
export const defaultFsOps: FsOps = Object.freeze({
  lstat: (path: string) => fsp.lstat(path, { bigint: true }),
  realpath: (path: string) => fsp.realpath(path),
  rename: (from: string, to: string) => fsp.rename(from, to),
  link: (existing: string, newPath: string) => fsp.link(existing, newPath),
  unlink: (path: string) => fsp.unlink(path),
  readdir: (path: string) => fsp.readdir(path, { withFileTypes: true }),
  randomHex: (bytes: number) => randomBytes(bytes).toString('hex'),
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
