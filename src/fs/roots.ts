/**
 * The directories `delete_file` may act in, fixed at start-up.
 *
 * Each root is checked once ({@link Roots.open}): it must exist, be a directory,
 * and not itself be a symbolic link (checked with `lstat`, so a link is never
 * followed). It is then resolved once to its canonical real path and pinned by
 * its device and inode. Every later check compares against that pin, so a root
 * that is renamed away and replaced by another directory (or a symlink) after
 * start-up is detected instead of silently followed.
 *
 * @module
 */
import { isAbsolute, resolve, sep } from 'node:path';
import { ConfigError } from '../errors.js';
import { errnoCode, withDefaults, type FsOps } from './ops.js';

/**
 * A root refused at start-up: a {@link ConfigError} `ERR_CONFIG_ROOT` whose `message` names the root
 * as given (rendered with `renderValue`: one line, hidden and bidi characters escaped) and what is
 * wrong, and whose `value` is the root exactly as given; the CLI prints it and exits with code 2.
 */
function rootError(root: string, message: string, cause?: unknown): ConfigError {
  return new ConfigError('ERR_CONFIG_ROOT', message, { value: root, ...(cause === undefined ? {} : { cause }) });
}

/** One root, resolved once and pinned by identity. */
export interface PinnedRoot {
  /** The path exactly as given on the command line. */
  given: string;
  /** `given` made absolute against the working directory at start-up, `..` and `.` removed lexically (not resolved). */
  absolute: string;
  /** The canonical real path (every symlink above the root resolved), resolved once at start-up. */
  realPath: string;
  /** Device of the root directory (`lstat`, bigint), as a decimal string. */
  dev: string;
  /** Inode of the root directory (`lstat`, bigint), as a decimal string. */
  ino: string;
}

/** Options of {@link Roots.open}: none a caller sets (its one field is for the tests). */
export interface RootsOptions {
  /** File-system calls to use; defaults to the real ones. For tests. @internal */
  ops?: Partial<FsOps>;
}

/** The roots fixed at start-up. Immutable once opened. */
export class Roots {
  /** The pinned roots, in the order given. The first one anchors relative paths. */
  readonly list: readonly PinnedRoot[];

  private constructor(list: readonly PinnedRoot[]) {
    this.list = Object.freeze(list.map((r) => Object.freeze({ ...r })));
  }

  /**
   * Checks, resolves and pins each root.
   *
   * @param paths - root directories, absolute or relative to the working directory. At least one.
   * @param options - see {@link RootsOptions}.
   * @returns the pinned roots, in the given order.
   * @throws {ConfigError} `ERR_CONFIG_ROOT` naming the first bad root: empty, contains NUL, not well-formed UTF-16,
   *   does not exist, is a symbolic link, is not a directory, or cannot be inspected (OS code
   *   named). Also thrown when `paths` is empty.
   *
   * @example
   * ```ts
   * import { Roots } from 'mcp-confirm';
   *
   * const roots = await Roots.open(['/srv/scratch']);
   * roots.list[0]; // { given: '/srv/scratch', absolute: '/srv/scratch', realPath: '/srv/scratch', dev: '2049', ino: '131074' }
   * ```
   */
  static async open(paths: readonly string[], options: RootsOptions = {}): Promise<Roots> {
    const ops = withDefaults(options.ops);
    if (paths.length === 0) throw rootError('', 'No root was given; at least one root directory is needed.');
    const list: PinnedRoot[] = [];
    for (const given of paths) list.push(await pinRoot(given, ops));
    return new Roots(list);
  }

  /**
   * The pinned root whose real path is exactly `realPath`, if any.
   *
   * @param realPath - a canonical real path as recorded in a fingerprint.
   */
  byRealPath(realPath: string): PinnedRoot | undefined {
    return this.list.find((r) => r.realPath === realPath);
  }
}

async function pinRoot(given: string, ops: FsOps): Promise<PinnedRoot> {
  // Refuse names that cannot denote the directory the operator meant.
  if (typeof given !== 'string' || given.length === 0) throw rootError(String(given), 'A root path is empty.');
  // The name is shown escaped (one line, bidi and other hidden characters visible), never raw. The
  // renderer and its Unicode tables load only for a refusal: serving a good root does not need them.
  const refusal = async (what: string, cause?: unknown): Promise<ConfigError> => {
    const { renderPath } = await import('../prompt/render.js');
    return rootError(given, `Root ${renderPath(given)} ${what}`, cause);
  };
  if (given.includes('\0')) throw await refusal('contains a NUL character.');
  if (!given.isWellFormed()) throw await refusal('is not well-formed Unicode text.');
  const absolute = resolve(given);
  let st;
  try {
    // lstat, so a root that is itself a symlink is seen as one and refused.
    st = await ops.lstat(absolute);
  } catch (error) {
    const code = errnoCode(error);
    if (code === 'ENOENT') throw await refusal('does not exist.', error);
    if (code === 'ENOTDIR') throw await refusal('is not a directory (a component of it is a file).', error);
    throw await refusal(`cannot be inspected: ${code}.`, error);
  }
  if (st.isSymbolicLink()) throw await refusal('is a symbolic link; give the directory it points to instead.');
  if (!st.isDirectory()) throw await refusal('is not a directory.');
  let realPath: string;
  try {
    realPath = await ops.realpath(absolute);
  } catch (error) {
    throw await refusal(`cannot be resolved: ${errnoCode(error)}.`, error);
  }
  if (!isAbsolute(realPath)) throw await refusal('did not resolve to an absolute path.');
  let real;
  try {
    real = await ops.lstat(realPath);
  } catch (error) {
    throw await refusal(`cannot be inspected: ${errnoCode(error)}.`, error);
  }
  // The directory seen at the given path and at its real path must be the same one
  // (else something was swapped while we looked).
  if (!real.isDirectory() || real.dev !== st.dev || real.ino !== st.ino) {
    throw await refusal('changed while it was being resolved.');
  }
  return { given, absolute, realPath, dev: st.dev.toString(), ino: st.ino.toString() };
}

/**
 * Whether `candidate` is strictly inside directory `dir`, comparing whole path
 * components (so `/r/allowed_evil` is not inside `/r/allowed`). Both must be
 * absolute and normalised (no `.`, `..`, doubled or trailing separators).
 *
 * @param candidate - normalised absolute path.
 * @param dir - normalised absolute directory path.
 * @returns the components of `candidate` below `dir`, or `undefined` when not strictly inside.
 */
export function componentsBelow(candidate: string, dir: string): string[] | undefined {
  const prefix = dir.endsWith(sep) ? dir : dir + sep;
  if (!candidate.startsWith(prefix) || candidate.length === prefix.length) return undefined;
  return candidate.slice(prefix.length).split(sep);
}
