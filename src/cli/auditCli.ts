/**
 * The audit parts of `mcp-confirm`: opening the trail when serving with
 * `--audit`, and `mcp-confirm audit verify`. Loaded only when asked for.
 *
 * @module
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { AuditKeys } from '../audit/auditKeys.js';
import type { KeyRing } from '../state/keyRing.js';
import { AuditLog, auditHeadKey } from '../audit/auditLog.js';
import { verifyAuditTrail, type AuditTrailInfo, type AuditVerdict } from '../audit/chain.js';
import { isAuditHeadStore, type AuditHead, type AuditHeadStore } from '../store/auditHeads.js';
import type { Ledger } from '../store/ledger.js';
import { EXIT_USAGE, UsageError } from './common.js';
import { EXIT_AUDIT_BROKEN, EXIT_AUDIT_LEGACY, EXIT_AUDIT_OPEN, type AuditVerifyCommand } from './auditArgs.js';

/** The UTC time of a trail file's name: `yyyymmddThhmmssSSSZ`. */
function fileStamp(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:]/g, '').replace('.', '');
}

/**
 * The file one process writes: `PREFIX.<UTC start time, yyyymmddThhmmssSSSZ>.<pid>.jsonl`.
 * Created with `O_EXCL`, so two processes never write one chain.
 */
export function trailFileName(prefix: string, startMs: number, pid: number): string {
  return `${prefix}.${fileStamp(startMs)}.${pid}.jsonl`;
}

/**
 * Creates this process's trail file for `--audit PREFIX` and writes its opening line.
 *
 * @param ring - the key ring already read from `--key-file`; the audit keys are derived from it ({@link AuditKeys.fromRing}).
 * @param ledger - the store named by `--ledger`: when it is shared (SQLite, Redis), the trail's head is recorded in it.
 * @throws {UsageError} when the trail file cannot be created or its opening line written (exit 2, naming why).
 */
export async function openAuditTrail(
  prefix: string,
  ring: KeyRing,
  log: (line: string) => void,
  ledger?: Ledger,
): Promise<AuditLog> {
  const keys = AuditKeys.fromRing(ring);
  const startMs = Date.now();
  const path = trailFileName(prefix, startMs, process.pid);
  // A memory ledger dies with this process: a head kept there could never be compared by `audit verify`.
  const heads: AuditHeadStore | undefined = ledger?.shared && isAuditHeadStore(ledger) ? ledger : undefined;
  try {
    const audit = await AuditLog.open({
      path,
      keys,
      startedAtMs: startMs,
      ...(heads ? { heads } : {}),
      onError: (e) => log(`audit trail ${path}: ${e.message}`),
    });
    log(
      `audit trail: ${path} (trail ${audit.trail.id}${heads ? `; heads recorded in the ${ledger!.kind} ledger` : ''})`,
    );
    return audit;
  } catch (e) {
    const cause = (e as { cause?: unknown }).cause ?? e;
    throw new UsageError(
      `--audit: cannot create ${path}: ${(cause as NodeJS.ErrnoException).code ?? (cause as Error).message}`,
    );
  }
}

const stderr = (line: string): void => void process.stderr.write(`mcp-confirm: ${line}\n`);

/** Reads the head recorded for `key` from the store `--ledger` names; a string says why it could not. */
async function recordedHead(command: AuditVerifyCommand, key: string): Promise<AuditHead | null | string> {
  const spec = command.ledger!;
  // Verifying must not create a ledger file where there was none.
  if (spec.startsWith('sqlite:') && spec.length > 'sqlite:'.length && !existsSync(spec.slice('sqlite:'.length)))
    return `--ledger ${spec}: no such SQLite file`;
  const { openLedger } = await import('./ledgerSpec.js');
  let ledger: Ledger;
  try {
    ledger = await openLedger(spec, command.audience);
  } catch (e) {
    return (e as Error).message;
  }
  try {
    if (!isAuditHeadStore(ledger)) return `--ledger: the ${ledger.kind} ledger keeps no audit heads`;
    return (await ledger.auditHead(key)) ?? null;
  } catch (e) {
    const cause = (e as { cause?: unknown }).cause;
    return `--ledger: cannot read the trail's head from the ${ledger.kind} ledger (${cause instanceof Error ? cause.message : (e as Error).message})`;
  } finally {
    await ledger.close?.().catch(() => {});
  }
}

/** What a trail's opening line names, for the report. */
function describeTrail(file: string, trail: AuditTrailInfo, renderValue: (value: string) => string): string {
  return `audit trail ${file}: trail ${trail.id}, host ${renderValue(trail.host)}, pid ${trail.pid}, started ${trail.started}${trail.heads !== null ? `, heads recorded in a ${renderValue(trail.heads)} store` : ''}`;
}

/**
 * When the file has the CLI's name `PREFIX.<stamp>.<pid>.jsonl`, whether its opening line names
 * another pid or start time (another process's trail put in its place), else undefined.
 */
function nameMismatch(file: string, trail: AuditTrailInfo): string | undefined {
  const m = /\.([0-9]{8}T[0-9]{9}Z)\.([0-9]+)\.jsonl$/.exec(basename(file));
  if (!m) return undefined;
  const stamp = fileStamp(Date.parse(trail.started));
  if (m[1] === stamp && m[2] === String(trail.pid)) return undefined;
  return `its file name names pid ${m[2]} started at ${m[1]}, but its opening line names pid ${trail.pid} started at ${stamp} (another process's trail in its place)`;
}

/**
 * `mcp-confirm audit verify FILE --key-file PATH [--ledger SPEC [--audience NAME]]`.
 *
 * @returns 0 intact (closed; with `--ledger`, its head matches), 4 open (no closed line), 5 legacy (no
 *   opening line), 3 broken (a bad line, a file name that names another trail; with `--ledger` also cut,
 *   another trail, or no head recorded), 2 when the key file, the trail or the store cannot be read.
 *   The last `seq` goes to stdout unless the trail is broken; the trail and the verdict to stderr.
 */
export async function runAuditVerify(command: AuditVerifyCommand): Promise<number> {
  const { file, keyFile } = command;
  let keys: AuditKeys;
  try {
    keys = await AuditKeys.fromFile(keyFile);
  } catch (e) {
    stderr(`--key-file: ${(e as Error).message}`);
    return EXIT_USAGE;
  }
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (e) {
    stderr(`cannot read audit trail ${file}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
    return EXIT_USAGE;
  }
  let head: AuditHead | null | undefined;
  if (command.ledger !== undefined) {
    // The key the writer recorded the head under (AuditLog.headKey): the final name itself is not followed.
    const key = await auditHeadKey(file);
    const found = await recordedHead(command, key);
    if (typeof found === 'string') {
      stderr(found);
      return EXIT_USAGE;
    }
    head = found;
  }
  const verdict: AuditVerdict = verifyAuditTrail(bytes, keys, head === undefined ? {} : { head });
  // The renderer (and its Unicode tables) loads only here: serving with --audit never needs it.
  const { renderValue } = await import('../prompt/render.js');
  const trail = 'trail' in verdict ? verdict.trail : undefined;
  if (trail) stderr(describeTrail(file, trail, renderValue));
  const misnamed =
    trail && (verdict.status === 'intact' || verdict.status === 'open' || verdict.status === 'unrecorded')
      ? nameMismatch(file, trail)
      : undefined;
  if (misnamed !== undefined) {
    stderr(`audit trail ${file} is broken: ${misnamed}`);
    return EXIT_AUDIT_BROKEN;
  }
  const compared = (headSeq: number | undefined, lastSeq: number): string =>
    headSeq === undefined
      ? ''
      : `; the store records line ${headSeq} as its head${lastSeq > headSeq ? ` (${lastSeq - headSeq} line(s) after it not yet recorded)` : ''}`;
  switch (verdict.status) {
    case 'intact':
      process.stdout.write(`${verdict.lastSeq}\n`);
      stderr(
        `audit trail ${file} is intact: closed after ${verdict.lastSeq} line(s), last mac ${verdict.lastMac}${compared(verdict.headSeq, verdict.lastSeq)}`,
      );
      return 0;
    case 'open': {
      process.stdout.write(`${verdict.lastSeq}\n`);
      const hint =
        verdict.headSeq === undefined && verdict.trail.heads !== null
          ? `; its heads are recorded in a ${renderValue(verdict.trail.heads)} store: verify with --ledger to tell a cut end`
          : '';
      stderr(
        `audit trail ${file} is open (not closed: the server may still be running, or it stopped without closing, or the end was cut): ${verdict.lastSeq} line(s), last mac ${verdict.lastMac}${compared(verdict.headSeq, verdict.lastSeq)}${hint}`,
      );
      return EXIT_AUDIT_OPEN;
    }
    case 'legacy':
      process.stdout.write(`${verdict.lastSeq}\n`);
      stderr(
        `audit trail ${file} is legacy (no opening line: written before trails were named): ${verdict.lastSeq} line(s) chained intact, last mac ${verdict.lastMac}; neither a cut end nor another trail in its place can be told`,
      );
      return EXIT_AUDIT_LEGACY;
    case 'broken':
      stderr(`audit trail ${file} is broken at line ${verdict.line}: ${verdict.reason}`);
      return EXIT_AUDIT_BROKEN;
    case 'cut':
      stderr(
        `audit trail ${file} is cut: it ends at line ${verdict.lastSeq}, but the store records line ${verdict.headSeq} as written: ${verdict.missing} line(s) missing`,
      );
      return EXIT_AUDIT_BROKEN;
    case 'replaced':
      stderr(
        `audit trail ${file} is not the trail recorded for this path: ${verdict.trail ? `the file holds trail ${verdict.trail.id}` : 'the file has no opening line'}, the store records trail ${verdict.recorded}`,
      );
      return EXIT_AUDIT_BROKEN;
    case 'unrecorded':
      stderr(
        `audit trail ${file}: the store records no head for this path (${verdict.trail.heads === null ? 'its opening line says its heads were recorded nowhere' : 'written with another store or under another --audience than the one given here, or moved or copied from where it was written'}), so a cut end cannot be told`,
      );
      return EXIT_AUDIT_BROKEN;
  }
}
