/**
 * The audit parts of `mcp-confirm`: opening the trail when serving with
 * `--audit`, and `mcp-confirm audit verify`. Loaded only when asked for.
 *
 * @module
 */
import { readFile } from 'node:fs/promises';
import { AuditKeys } from '../audit/auditKeys.js';
import type { KeyRing } from '../state/keyRing.js';
import { AuditLog } from '../audit/auditLog.js';
import { verifyAuditTrail } from '../audit/chain.js';
import { EXIT_USAGE, UsageError } from './args.js';
import { EXIT_AUDIT_BROKEN } from './auditArgs.js';

/**
 * The file one process writes: `PREFIX.<UTC start time, yyyymmddThhmmssSSSZ>.<pid>.jsonl`.
 * Created with `O_EXCL`, so two processes never write one chain.
 */
export function trailFileName(prefix: string, startMs: number, pid: number): string {
  const stamp = new Date(startMs).toISOString().replace(/[-:]/g, '').replace('.', '');
  return `${prefix}.${stamp}.${pid}.jsonl`;
}

/**
 * Creates this process's trail file for `--audit PREFIX`.
 *
 * @param ring - the key ring already read from `--key-file`; the audit keys are derived from it ({@link AuditKeys.fromRing}).
 * @throws {UsageError} when the trail file cannot be created (exit 2, naming why).
 */
export async function openAuditTrail(prefix: string, ring: KeyRing, log: (line: string) => void): Promise<AuditLog> {
  const keys = AuditKeys.fromRing(ring);
  const path = trailFileName(prefix, Date.now(), process.pid);
  try {
    const audit = await AuditLog.open({ path, keys, onError: (e) => log(`audit trail ${path}: ${e.message}`) });
    log(`audit trail: ${path}`);
    return audit;
  } catch (e) {
    throw new UsageError(`--audit: cannot create ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
}

/**
 * `mcp-confirm audit verify FILE --key-file PATH`.
 *
 * @returns 0 when intact (the last `seq` printed on stdout), 3 when broken (the first bad line named on stderr), 2 when the key file or the trail cannot be read.
 */
export async function runAuditVerify(file: string, keyFile: string): Promise<number> {
  let keys: AuditKeys;
  try {
    keys = await AuditKeys.fromFile(keyFile);
  } catch (e) {
    process.stderr.write(`mcp-confirm: --key-file: ${(e as Error).message}\n`);
    return EXIT_USAGE;
  }
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (e) {
    process.stderr.write(`mcp-confirm: cannot read audit trail ${file}: ${(e as NodeJS.ErrnoException).code ?? 'error'}\n`);
    return EXIT_USAGE;
  }
  const verdict = verifyAuditTrail(bytes, keys);
  if (!verdict.intact) {
    process.stderr.write(`mcp-confirm: audit trail ${file} is broken at line ${verdict.line}: ${verdict.reason}\n`);
    return EXIT_AUDIT_BROKEN;
  }
  process.stdout.write(`${verdict.lastSeq}\n`);
  process.stderr.write(`mcp-confirm: audit trail ${file} is intact: ${verdict.lastSeq} line(s), last mac ${verdict.lastMac}\n`);
  return 0;
}
