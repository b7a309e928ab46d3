/**
 * The demo server: one confirmed tool, `delete_file`, that deletes a regular
 * file inside roots fixed at start-up (the contract is in docs/cli.md, "The tool `delete_file`").
 *
 * @module
 */
import { McpServer, type CallToolResult } from '@modelcontextprotocol/server';
import {
  createConfirmation,
  type Confirmation,
  type ConfirmableTool,
  type ConfirmationOptions,
} from '../guard/confirmation.js';
import { deleteVerified, inspectFile, openFile, type Deleted, type FileFingerprint } from '../fs/target.js';
import { Roots } from '../fs/roots.js';
import { questionWith, renderPath } from '../prompt/render.js';
import { DELETE_FILE, DELETE_FILE_CONFIG, SERVER_INFO } from './deleteFileSpec.js';
import type { GrantPolicy } from '../grant/matchers.js';

export { DeleteFileInput, SERVER_INFO } from './deleteFileSpec.js';

/**
 * Renders paths: the mixed-script check runs per path component, so a Hebrew
 * or Greek name under a Latin root does not warn while `pаypal.txt` does.
 */
const pathQuestion = questionWith({ segments: '/' });

/** `1 byte`, `0 bytes`, `5 bytes`, `? bytes`: a size in bytes with the noun in the right number. */
function byteCount(size: string): string {
  return `${size} ${size === '1' ? 'byte' : 'bytes'}`;
}

/** The link count of a fingerprint (`nlink`, a decimal string from our own lstat); 1 when it is not one. */
function linkCount(fp: FileFingerprint): bigint {
  return /^[0-9]+$/.test(fp.nlink) ? BigInt(fp.nlink) : 1n;
}

/**
 * The sentence a deletion's result ends with when the file had other names (hard links), `''`
 * otherwise: the fact the question states before a confirmed deletion ("It has N names (hard
 * links): deleting removes only this name."), said after the fact, so that a deletion under a
 * grant or a plan slot (asked no question) carries it too.
 */
function otherNamesSentence(fp: FileFingerprint): string {
  const nlink = linkCount(fp);
  if (nlink <= 1n) return '';
  const others = nlink - 1n;
  return ` It had ${nlink} names (hard links): only this name was removed; its content stays under the ${others === 1n ? 'other name' : `${others} other names`}.`;
}

/**
 * The question for one file: trusted wording, untrusted values rendered as paths
 * (`questionWith({ segments: '/' })`). Shows the argument as sent, the file it resolved to, its
 * size, and a note when the file has other names (hard links). Both paths are rendered
 * component by component (see `renderPath`): every directory name stays visible, and only an
 * over-long component is cut, in its own middle with its own fingerprint.
 *
 * @param args - the parsed arguments.
 * @param fp - the fingerprint captured in round 1.
 */
export function deleteFileQuestion(args: { path: string }, fp: FileFingerprint): string {
  // Sizes and link counts are decimal strings from our own lstat, not untrusted text.
  const size = /^[0-9]+$/.test(fp.size) ? fp.size : '?';
  const nlink = linkCount(fp);
  const links = nlink > 1n ? ` It has ${nlink} names (hard links): deleting removes only this name.` : '';
  return (
    pathQuestion`Permanently delete the file ${fp.path}, requested as ${args.path}?` +
    ` Size: ${byteCount(size)}. This cannot be undone.` +
    links
  );
}

/**
 * What a `delete_file` grant pins besides the path's matcher: the directory the approved file was
 * in, by the device and inode of the root and of every directory down to it (so a directory
 * swapped for another of the same name is not the granted one), and its path for the offer.
 */
export interface DirectoryPin {
  /** `same-directory`: only files directly in it; `subtree`: in it or below it. */
  readonly matcher: 'same-directory' | 'subtree';
  /** Its canonical path, with a trailing `/` (what the human read). */
  readonly directory: string;
  /** The root's device and inode. */
  readonly root: { readonly dev: string; readonly ino: string };
  /** Every directory from below the root down to it, by device and inode. */
  readonly dirs: ReadonlyArray<{ readonly dev: string; readonly ino: string }>;
}

/** The directory part of a canonical file path, with its trailing `/`. */
function directoryOf(path: string): string {
  return path.slice(0, path.lastIndexOf('/') + 1);
}

/** The pin of a grant for the file `fp` (`undefined`: the policy's `path` matcher pins no directory: no offer). */
function directoryPin(fp: FileFingerprint, policy: GrantPolicy): DirectoryPin | undefined {
  const matcher = policy.arguments['path'];
  if (matcher !== 'same-directory' && matcher !== 'subtree') return undefined;
  return {
    matcher,
    directory: directoryOf(fp.path),
    root: { dev: fp.root.dev, ino: fp.root.ino },
    dirs: fp.dirs.map((d) => ({ dev: d.dev, ino: d.ino })),
  };
}

/** Whether the file `fp` (fingerprinted now) lies where the grant's pin allows, by device and inode. */
function withinPin(pin: unknown, fp: FileFingerprint): boolean {
  const p = pin as Partial<DirectoryPin> | null;
  if (!p || !p.root || !Array.isArray(p.dirs)) return false;
  if (fp.root.dev !== p.root.dev || fp.root.ino !== p.root.ino) return false;
  if (p.matcher === 'same-directory' ? fp.dirs.length !== p.dirs.length : fp.dirs.length < p.dirs.length) return false;
  return p.dirs.every((d, i) => fp.dirs[i]?.dev === d.dev && fp.dirs[i]?.ino === d.ino);
}

/**
 * What `delete_file` does in each round: fingerprint the file (round 1), ask the question, and
 * delete the file after re-checking it (round 2). A call a grant or plan slot covers opens the file
 * (`openFile`: its directories held open) and deletes it through them, in one walk. Registered by {@link registerDeleteFile}; the
 * command line hands it to `Confirmation.guard` once the confirmation layer is loaded.
 *
 * @param roots - the roots fixed at start-up.
 */
export function deleteFileTool(roots: Roots): ConfirmableTool<{ path: string }, FileFingerprint> {
  // The result reaches the model and the client's screen: the path is untrusted text, rendered like the question's.
  // A file with other names says so (the re-check found the link count the fingerprint holds).
  const deleted = (done: Deleted, fp: FileFingerprint): CallToolResult => ({
    content: [
      {
        type: 'text',
        text: `Deleted ${renderPath(done.path)} (${byteCount(String(done.size))}).${otherNamesSentence(fp)}`,
      },
    ],
  });
  return {
    fingerprint: (args) => inspectFile(roots, args.path),
    question: deleteFileQuestion,
    act: async (_args, { fingerprint }) => deleted(await deleteVerified(roots, fingerprint), fingerprint),
    // Under a grant or a plan slot: one walk, the directories held open from the fingerprint to the deletion.
    open: async (args) => {
      const file = await openFile(roots, args.path);
      return {
        fingerprint: file.fingerprint,
        act: async ({ fingerprint }) => deleted(await file.delete(fingerprint), fingerprint),
        close: () => file.close(),
      };
    },
    nothingDone: 'nothing was deleted',
    grantPin: (_args, fp, policy) => directoryPin(fp, policy),
    grantAccepts: (pin, _args, fp) => withinPin(pin, fp),
    grantOffer: ({ pin, duration, policy }) => {
      const p = pin as DirectoryPin;
      const where =
        p.matcher === 'same-directory'
          ? pathQuestion`delete any file directly in ${p.directory}`
          : pathQuestion`delete any file in ${p.directory} or below it`;
      return `Or allow: ${where} for ${duration}, at most ${policy.maxUses} file${policy.maxUses === 1 ? '' : 's'}; each is still re-checked before it is deleted.`;
    },
    // The approval page shows both uncut: the file it resolved to and the argument as sent.
    pageValues: (args, fp) => [
      { label: 'file', value: fp.path },
      { label: 'requested as', value: args.path },
    ],
  };
}

/**
 * Registers `delete_file` on a server.
 *
 * @param confirmation - the confirmation layer whose `serverOptions` the server was built with.
 * @param server - the `McpServer`.
 * @param roots - the roots fixed at start-up.
 * @param grant - what may be granted for it (see {@link DemoServerOptions.grant}); defaults to none.
 */
export function registerDeleteFile(
  confirmation: Confirmation,
  server: McpServer,
  roots: Roots,
  grant?: GrantPolicy,
): void {
  confirmation.register(
    server,
    DELETE_FILE,
    grant ? { ...DELETE_FILE_CONFIG, grant } : DELETE_FILE_CONFIG,
    deleteFileTool(roots),
  );
}

/** Options of {@link createDemoServer}. */
export interface DemoServerOptions extends ConfirmationOptions {
  /** Root directories; the first is the base of relative paths. At least one. */
  roots: readonly string[];
  /**
   * What may be granted for `delete_file` (see `ConfirmableToolConfig.grant`): its `path` matcher
   * `same-directory` or `subtree` (a directory pinned by device and inode). Defaults to none.
   */
  grant?: GrantPolicy;
}

/**
 * Builds everything once (roots, keys, ledger) and returns the per-connection
 * factory to hand to `serveStdio` or `createMcpHandler`.
 *
 * @throws {ConfigError} `ERR_CONFIG_ROOT` when a root does not exist, is not a directory, or is a symbolic link.
 * @throws {RangeError} when `ttlSeconds` is not a positive whole number.
 */
export async function createDemoServer(
  options: DemoServerOptions,
): Promise<{ factory: () => McpServer; confirmation: Confirmation; roots: Roots }> {
  const roots = await Roots.open(options.roots);
  const confirmation = await createConfirmation(options);
  const factory = (): McpServer => {
    const server = new McpServer(SERVER_INFO, { ...confirmation.serverOptions, capabilities: { tools: {} } });
    registerDeleteFile(confirmation, server, roots, options.grant);
    return server;
  };
  return { factory, confirmation, roots };
}
