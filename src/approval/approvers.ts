/**
 * The approvers file: who may approve, as WebAuthn public-key credentials
 * (W3C Web Authentication Level 3). Never a private key: the private key stays
 * in the approver's authenticator.
 *
 * ```json
 * { "version": 1, "rpId": "localhost",
 *   "approvers": [ { "name": "ann", "credentialId": "<base64url>", "publicKey": "<base64url COSE key>",
 *                    "counter": 0, "transports": ["internal"], "principals": ["local"],
 *                    "enrolledAt": "2026-11-30T12:00:00.000Z" } ] }
 * ```
 * Written with mode 0600 (write to a temporary file in the same directory, then rename). A file
 * enrolled with a quorum also records it (`"approversRequired": N`, absent for 1): enrolling a
 * further approver then needs the passkeys of N existing approvers (`enroll.ts`).
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import { constants, promises as fs } from 'node:fs';
import { dirname, join, relative, isAbsolute, sep } from 'node:path';
import { ConfigError } from '../errors.js';
import { MAX_APPROVALS_REQUIRED } from '../store/approvalStore.js';
import { describePrincipal } from '../principals.js';

/** One enrolled approver. */
export interface Approver {
  /** A human name, 1–64 characters of letters, digits, `.`, `_`, `-`, `@`, space. */
  name: string;
  /** The credential id, base64url. */
  credentialId: string;
  /** The credential public key (COSE_Key, RFC 9052 §7), base64url. */
  publicKey: string;
  /** The signature counter at enrolment. */
  counter: number;
  /** Transports the browser reported (hints only). */
  transports: string[];
  /** The principals this approver may approve for: `local` (stdio, or `--http` without tokens), or `jwtPrincipalFor` strings (see `src/principals.ts`). */
  principals: string[];
  /** ISO 8601 time of enrolment. */
  enrolledAt: string;
}

/** The whole file. */
export interface ApproversFile {
  version: 1;
  /** The WebAuthn RP ID the credentials were made for (`localhost` over stdio; the `--public-url` host name over HTTP). */
  rpId: string;
  approvers: Approver[];
  /**
   * How many existing approvers' passkeys enrolling another one needs (2 to
   * {@link MAX_APPROVALS_REQUIRED}), as recorded by an enrolment with a quorum. Absent: 1.
   */
  approversRequired?: number;
}

/** A {@link ConfigError} `ERR_CONFIG_APPROVERS_FILE`: the approvers file at `path` cannot be used; the message names it and why. */
function fileError(path: string, message: string): ConfigError {
  return new ConfigError('ERR_CONFIG_APPROVERS_FILE', message, { value: path });
}

const NAME_RE = /^[\p{L}\p{N}._@ -]{1,64}$/u;
const B64URL_RE = /^[A-Za-z0-9_-]+$/;

/** Checks an approver name. @throws {ConfigError} `ERR_CONFIG_APPROVER_NAME` when it is not 1–64 letters, digits, `. _ @ -` or spaces. */
export function checkApproverName(name: string): string {
  if (typeof name !== 'string' || !NAME_RE.test(name) || name.trim() !== name) {
    throw new ConfigError(
      'ERR_CONFIG_APPROVER_NAME',
      'an approver name is 1 to 64 letters, digits, spaces or . _ @ - (no leading or trailing space)',
      { value: String(name) },
    );
  }
  return name;
}

function parse(text: string, path: string): ApproversFile {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw fileError(path, `approvers file ${path} is not valid JSON`);
  }
  const o = data as Partial<ApproversFile> | null;
  if (
    typeof o !== 'object' ||
    o === null ||
    o.version !== 1 ||
    typeof o.rpId !== 'string' ||
    !Array.isArray(o.approvers)
  ) {
    throw fileError(
      path,
      `approvers file ${path} is not an mcp-confirm approvers file ({"version":1,"rpId":…,"approvers":[…]})`,
    );
  }
  const n = o.approversRequired;
  if (n !== undefined && (!Number.isSafeInteger(n) || n < 1 || n > MAX_APPROVALS_REQUIRED))
    throw fileError(path, `approvers file ${path} has an approversRequired that is not 1 to ${MAX_APPROVALS_REQUIRED}`);
  for (const a of o.approvers as unknown[]) {
    const ap = a as Partial<Approver> | null;
    const ok =
      typeof ap === 'object' &&
      ap !== null &&
      typeof ap.name === 'string' &&
      NAME_RE.test(ap.name) &&
      typeof ap.credentialId === 'string' &&
      B64URL_RE.test(ap.credentialId) &&
      typeof ap.publicKey === 'string' &&
      B64URL_RE.test(ap.publicKey) &&
      Number.isSafeInteger(ap.counter) &&
      (ap.counter as number) >= 0 &&
      Array.isArray(ap.transports) &&
      ap.transports.every((t) => typeof t === 'string') &&
      Array.isArray(ap.principals) &&
      ap.principals.every((p) => typeof p === 'string') &&
      typeof ap.enrolledAt === 'string';
    if (!ok) throw fileError(path, `approvers file ${path} has a malformed approver entry`);
  }
  return o as ApproversFile;
}

/**
 * Reads an approvers file for enrolment or listing: a missing file is an empty list.
 *
 * @throws {ConfigError} `ERR_CONFIG_APPROVERS_FILE` when the file exists but cannot be read or parsed.
 */
export async function readApprovers(path: string, rpId = 'localhost'): Promise<ApproversFile> {
  let text: string;
  try {
    text = await fs.readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, rpId, approvers: [] };
    throw fileError(path, `cannot read approvers file ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  return parse(text, path);
}

/**
 * Loads the approvers file the server will use, once at start-up, refusing one
 * that would let someone other than its owner decide who approves.
 *
 * @param path - the file.
 * @param rootRealPaths - the server's roots (real paths): the file must not be inside one, or the tool could delete or replace it.
 * @throws {ConfigError} naming the file: `ERR_CONFIG_APPROVERS_MISSING` when it does not exist;
 *   `ERR_CONFIG_APPROVERS_FILE` when it cannot be opened, is not a regular file, is writable by group
 *   or others, is inside a root, is malformed, or holds no approver.
 */
export async function loadApproversForServer(path: string, rootRealPaths: readonly string[]): Promise<ApproversFile> {
  let real: string;
  try {
    real = await fs.realpath(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT')
      throw new ConfigError('ERR_CONFIG_APPROVERS_MISSING', `approvers file ${path} does not exist`, { value: path });
    throw fileError(path, `cannot open approvers file ${path}: ${code ?? 'error'}`);
  }
  const st = await fs.stat(real);
  if (!st.isFile()) throw fileError(path, `approvers file ${path} is not a regular file`);
  if ((st.mode & 0o022) !== 0)
    throw fileError(
      path,
      `approvers file ${path} is writable by group or others (mode ${(st.mode & 0o777).toString(8)}); chmod 600 it`,
    );
  for (const root of rootRealPaths) {
    const rel = relative(root, real);
    if (rel === '' || (!rel.startsWith('..' + sep) && rel !== '..' && !isAbsolute(rel))) {
      throw fileError(path, `approvers file ${path} is inside the root ${root}; keep it outside every root`);
    }
  }
  const file = parse(await fs.readFile(real, 'utf8'), path);
  if (file.approvers.length === 0) throw fileError(path, `approvers file ${path} holds no approver`);
  return file;
}

/**
 * Writes the approvers file atomically with mode 0600 (temporary file in the same directory, then rename).
 *
 * @throws {ConfigError} `ERR_CONFIG_APPROVERS_FILE` when it cannot be written.
 */
export async function writeApprovers(path: string, file: ApproversFile): Promise<void> {
  const tmp = join(dirname(path), `.${randomBytes(8).toString('hex')}.approvers.tmp`);
  try {
    const handle = await fs.open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
    try {
      await handle.writeFile(`${JSON.stringify(file, null, 2)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.chmod(tmp, 0o600);
    await fs.rename(tmp, path);
  } catch (e) {
    await fs.rm(tmp, { force: true }).catch(() => {});
    throw fileError(
      path,
      `cannot write approvers file ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
    );
  }
}

/** The approvers allowed to approve a call of `principal`. */
export function approversFor(file: ApproversFile, principal: string): Approver[] {
  return file.approvers.filter((a) => a.principals.includes(principal));
}

/**
 * Checks that a quorum of `required` distinct approvers can be met: every principal the file's
 * approvers are enrolled for has at least `required` of them. 1 always passes.
 *
 * @param file - the approvers, as loaded.
 * @param required - the quorum, a whole number from 1 to {@link MAX_APPROVALS_REQUIRED}.
 * @throws {RangeError} when `required` is out of range.
 * @throws {ConfigError} `ERR_CONFIG_APPROVERS_REQUIRED` naming the first principal with fewer
 *   approvers and how many it has (its `value` is that principal, as the pages describe it).
 */
export function checkApproversRequired(file: ApproversFile, required: number): void {
  if (!Number.isSafeInteger(required) || required < 1 || required > MAX_APPROVALS_REQUIRED)
    throw new RangeError(`approversRequired must be a whole number from 1 to ${MAX_APPROVALS_REQUIRED}`);
  if (required === 1) return;
  const principals = [...new Set(file.approvers.flatMap((a) => a.principals))];
  for (const p of principals.length > 0 ? principals : ['local']) {
    const have = approversFor(file, p).length;
    if (have < required) {
      const who = describePrincipal(p);
      throw new ConfigError(
        'ERR_CONFIG_APPROVERS_REQUIRED',
        `${required} distinct approvers must approve each call, but the principal ${who} has ${have} enrolled approver${have === 1 ? '' : 's'}; enrol more, or require fewer`,
        { value: who },
      );
    }
  }
}
