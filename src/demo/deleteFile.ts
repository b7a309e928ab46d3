/**
 * The demo server: one confirmed tool, `delete_file`, that deletes a regular
 * file inside roots fixed at start-up (the contract is in the README, "The tool `delete_file`").
 *
 * @module
 */
import { McpServer } from '@modelcontextprotocol/server';
import {
  createConfirmation,
  type Confirmation,
  type ConfirmableTool,
  type ConfirmationOptions,
} from '../guard/confirmation.js';
import { deleteVerified, inspectFile, type FileFingerprint } from '../fs/target.js';
import { Roots } from '../fs/roots.js';
import { questionWith, renderPath } from '../prompt/render.js';
import { DELETE_FILE, DELETE_FILE_CONFIG, SERVER_INFO } from './deleteFileSpec.js';

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

/**
 * The question for one file: trusted wording, untrusted values rendered by
 * {@link pathQuestion}. Shows the argument as sent, the file it resolved to, its
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
  const nlink = /^[0-9]+$/.test(fp.nlink) ? BigInt(fp.nlink) : 1n;
  const links = nlink > 1n ? ` It has ${nlink} names (hard links): deleting removes only this name.` : '';
  return (
    pathQuestion`Permanently delete the file ${fp.path}, requested as ${args.path}?` +
    ` Size: ${byteCount(size)}. This cannot be undone.` +
    links
  );
}

/**
 * What `delete_file` does in each round: fingerprint the file (round 1), ask the question, and
 * delete the file after re-checking it (round 2). Registered by {@link registerDeleteFile}; the
 * command line hands it to `Confirmation.guard` once the confirmation layer is loaded.
 *
 * @param roots - the roots fixed at start-up.
 */
export function deleteFileTool(roots: Roots): ConfirmableTool<{ path: string }, FileFingerprint> {
  return {
    fingerprint: (args) => inspectFile(roots, args.path),
    question: deleteFileQuestion,
    act: async (_args, { fingerprint }) => {
      const done = await deleteVerified(roots, fingerprint);
      // The result reaches the model and the client's screen: the path is untrusted text, rendered like the question's.
      return {
        content: [{ type: 'text', text: `Deleted ${renderPath(done.path)} (${byteCount(String(done.size))}).` }],
      };
    },
    nothingDone: 'nothing was deleted',
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
 */
export function registerDeleteFile(confirmation: Confirmation, server: McpServer, roots: Roots): void {
  confirmation.register(server, DELETE_FILE, DELETE_FILE_CONFIG, deleteFileTool(roots));
}

/** Options of {@link createDemoServer}. */
export interface DemoServerOptions extends ConfirmationOptions {
  /** Root directories; the first is the base of relative paths. At least one. */
  roots: readonly string[];
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
    registerDeleteFile(confirmation, server, roots);
    return server;
  };
  return { factory, confirmation, roots };
}
