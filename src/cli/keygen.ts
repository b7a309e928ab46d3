/**
 * `mcp-confirm keygen [--kid ID] [--out FILE]`: a new key file (`{"keys":[{"kid","k"}]}`, 32 random
 * bytes) to stdout, or written to FILE with mode 0600. FILE is created with `O_CREAT | O_EXCL |
 * O_NOFOLLOW`, so an existing file (or a symbolic link, even a dangling one) is never overwritten
 * or followed; its directory must exist.
 *
 * @module
 */
import { constants } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { KeyRing } from '../state/keyRing.js';
import { UsageError } from './common.js';

/** Create only: never an existing file, never through a symbolic link at the last component. */
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** Mode of the key file: read and write by its owner only. */
const KEY_FILE_MODE = 0o600;

/**
 * Runs `keygen`: prints the key file, or writes it to `out`.
 *
 * @param command.kid - the key id.
 * @param command.out - the file to create, or undefined for stdout.
 * @returns the exit code, 0.
 * @throws {UsageError} (exit 2) when `out` exists, its directory does not exist or is not a
 *   directory, or the file cannot be created or written (naming the OS code); nothing is left behind.
 */
export async function runKeygen(command: { kid: string; out: string | undefined }): Promise<number> {
  const text = `${JSON.stringify({ keys: [KeyRing.generateSpec(command.kid)] }, null, 2)}\n`;
  const out = command.out;
  if (out === undefined) {
    process.stdout.write(text);
    return 0;
  }
  let handle;
  try {
    handle = await open(out, CREATE_FLAGS, KEY_FILE_MODE);
  } catch (e) {
    throw new UsageError(`--out ${out}: ${createRefusal((e as NodeJS.ErrnoException).code, out)}; nothing was written`);
  }
  try {
    // The mode given to open() is narrowed by the umask; set it exactly.
    await handle.chmod(KEY_FILE_MODE);
    await handle.writeFile(text);
    await handle.sync();
    await handle.close();
  } catch (e) {
    await handle.close().catch(() => {});
    // The file is ours (created just now): remove the partial key file.
    await rm(out, { force: true }).catch(() => {});
    throw new UsageError(
      `--out ${out}: cannot write the key file: ${(e as NodeJS.ErrnoException).code ?? 'error'}; nothing was written`,
    );
  }
  process.stderr.write(`mcp-confirm: wrote key file ${out} (kid ${command.kid}, mode 0600)\n`);
  return 0;
}

/** Why `out` could not be created, from the OS code. */
function createRefusal(code: string | undefined, out: string): string {
  switch (code) {
    case 'EEXIST':
      return 'the file already exists (keygen never overwrites a key file: move it away or choose another path)';
    case 'ELOOP':
      return 'the path is a symbolic link (keygen never writes through one)';
    case 'ENOENT':
      return `the directory ${dirname(out)} does not exist`;
    case 'ENOTDIR':
      return 'a component of the directory path is not a directory';
    case 'EISDIR':
      return 'the path is a directory';
    case 'EACCES':
    case 'EPERM':
      return `permission denied (${code})`;
    default:
      return `cannot create the file: ${code ?? 'error'}`;
  }
}
