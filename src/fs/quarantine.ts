/**
 * Quarantine names: where {@link deleteVerified} moves a file the instant
 * before it destroys it, and the start-up report of entries left there.
 *
 * A quarantine name is `.mcp-confirm-quarantine-` followed by 32 lower-case hex
 * digits (128 random bits from `node:crypto`), in the same directory as the file
 * (so the move is a `rename(2)` within one file system: atomic). An entry is
 * only ever *left* under such a name when a swap was detected and the original
 * name had been taken again meanwhile; it is never deleted by this package.
 *
 * @module
 */
import { join } from 'node:path';
import type { Roots } from './roots.js';
import { withDefaults, type FsOps } from './ops.js';

/** The fixed start of every quarantine name. */
export const QUARANTINE_PREFIX = '.mcp-confirm-quarantine-';

const QUARANTINE_NAME = /^\.mcp-confirm-quarantine-[0-9a-f]{32}$/;

/**
 * A fresh, unguessable quarantine name (no directory part).
 *
 * @param ops - source of randomness; defaults to `node:crypto`.
 * @returns `.mcp-confirm-quarantine-` + 32 hex digits.
 */
export function newQuarantineName(ops: Pick<FsOps, 'randomHex'> = withDefaults(undefined)): string {
  return QUARANTINE_PREFIX + ops.randomHex(16);
}

/**
 * Whether `name` (one path component) has the exact shape of a quarantine name.
 *
 * @param name - a directory entry name.
 */
export function isQuarantineName(name: string): boolean {
  return QUARANTINE_NAME.test(name);
}

/** Options of {@link findQuarantineLeftovers}. */
export interface LeftoverScanOptions {
  /** File-system calls to use; defaults to the real ones. For tests. @internal */
  ops?: Partial<FsOps>;
  /** Most directories read before the scan stops (it then reports what it found). Defaults to 100 000. */
  maxDirectories?: number;
}

/**
 * Lists every entry under the roots whose name is a quarantine name, so the
 * server can report them at start-up. Nothing is deleted, moved or followed:
 * directories are walked by their listing, and a symbolic link is never entered.
 * A directory that cannot be read (permissions, or removed meanwhile) is passed over.
 *
 * @param roots - the pinned roots.
 * @param options - see {@link LeftoverScanOptions}.
 * @returns absolute paths (under the roots' real paths), sorted, without duplicates
 *   (nested roots are scanned once).
 *
 * @example
 * ```ts
 * import { findQuarantineLeftovers, Roots } from 'mcp-confirm';
 *
 * const roots = await Roots.open(['/srv/scratch']);
 * for (const p of await findQuarantineLeftovers(roots)) console.warn(`left in quarantine: ${p}`);
 * ```
 */
export async function findQuarantineLeftovers(roots: Roots, options: LeftoverScanOptions = {}): Promise<string[]> {
  const ops = withDefaults(options.ops);
  let budget = options.maxDirectories ?? 100_000;
  const found = new Set<string>();
  const seenDirs = new Set<string>();
  const queue: string[] = roots.list.map((r) => r.realPath);
  while (queue.length > 0 && budget > 0) {
    const dir = queue.shift()!;
    if (seenDirs.has(dir)) continue;
    seenDirs.add(dir);
    budget -= 1;
    let entries;
    try {
      entries = await ops.readdir(dir);
    } catch {
      continue;
    }
    for (const entry of entries) {
      const full = join(dir, entry.name);
      if (isQuarantineName(entry.name)) found.add(full);
      else if (entry.isDirectory()) queue.push(full);
    }
  }
  return [...found].sort();
}
