/**
 * The audit trail's line format and hash chain.
 *
 * A trail is a file of lines, each the RFC 8785 canonical JSON of an
 * {@link AuditLine} followed by `\n`. Line N has `seq` N (from 1). Its `mac`
 * is HMAC-SHA256 (RFC 2104), under the audit key named by its `kid`
 * ({@link AuditKeys}), of the UTF-8 bytes of the RFC 8785 canonical JSON of the
 * two-element array `[previousMac, lineWithoutMac]`, unpadded base64url.
 * `previousMac` is the `mac` of line N-1, or {@link AUDIT_GENESIS} for line 1.
 *
 * So without the keys nobody can change, insert, remove, reorder or transplant a
 * line (from another trail) unnoticed: every later `mac` would have to be
 * recomputed. Cutting lines off the end leaves a shorter valid chain; only a
 * `seq`/`mac` head kept elsewhere can show that.
 *
 * @module
 */
import { timingSafeEqual } from 'node:crypto';
import canonicalize from 'canonicalize';
import { AuditKeys, type AuditKey } from './auditKeys.js';

/** The value line 1 chains from (its "previous mac"). */
export const AUDIT_GENESIS = 'mcp-confirm/v1/audit-genesis';

/**
 * What a line records:
 * - `asked`: a question was asked (round 1; `jti` issued);
 * - `asked-again`: asked again with a new `jti` (`outcome`: `no-answer`, `question-changed` or `resource-changed`);
 * - `confirmed`: accepted with `confirmed: true`, written before the action;
 * - `declined`, `cancelled`: the answer's action; `not-confirmed`: `accept` without `confirmed: true`, or anything else (`outcome` says which);
 * - `refused`: refused with `code` (an `ERR_CONFIRM_*` code; `outcome` `internal-error` when no code applies);
 * - `acted`: the action was done, written after it;
 * - `failed`: the action was refused or failed after the confirmation (`code`, or `outcome` `internal-error`);
 * - `states-refused`: `count` states refused by the verify hook (JSON-RPC -32602) since the previous such line (or the start of the trail).
 */
export type AuditEventName =
  | 'asked'
  | 'asked-again'
  | 'confirmed'
  | 'declined'
  | 'cancelled'
  | 'not-confirmed'
  | 'refused'
  | 'acted'
  | 'failed'
  | 'states-refused';

/** One decision, as the guard hands it to the trail (every field present; `null` where it does not apply). */
export interface AuditDecision {
  event: AuditEventName;
  /** The tool name. */
  tool: string | null;
  /** The principal's salted tag (as in the state's `sub`), never the principal. */
  principal: string | null;
  /** The confirmation's `jti` (the ledger key). */
  jti: string | null;
  /** SHA-256 (base64url) of the RFC 8785 form of the parsed arguments. */
  args: string | null;
  /** The question as shown to the human. */
  question: string | null;
  /** The answer's action, the reason for asking again, or `internal-error`. */
  outcome: string | null;
  /** The refusal code (`ERR_CONFIRM_*`). */
  code: string | null;
  /** How many states were refused (only `states-refused`). */
  count: number | null;
  /** With passkey approval: the enrolled approver whose passkey approved (only `confirmed`), else `null`. */
  approver: string | null;
}

/** One line of the trail. */
export interface AuditLine extends AuditDecision {
  /** 1, 2, 3, … : the line number. */
  seq: number;
  /** When the line was made: ISO 8601 UTC with milliseconds (`2026-11-30T10:15:00.123Z`). */
  time: string;
  /** The audit key that made `mac`. */
  kid: string;
  /** HMAC-SHA256 over `[previousMac, this line without mac]` (RFC 8785), base64url. */
  mac: string;
}

/**
 * Makes the text of one line (canonical JSON and `\n`) chained from `previousMac`.
 *
 * @throws {TypeError} when a value has no RFC 8785 form (e.g. a lone surrogate).
 */
export function chainLine(fields: Omit<AuditLine, 'mac' | 'kid'>, key: AuditKey, previousMac: string): { text: string; mac: string } {
  const unsigned = { ...fields, kid: key.kid };
  const mac = AuditKeys.mac(key, canonicalOrThrow([previousMac, unsigned]));
  return { text: `${canonicalOrThrow({ ...unsigned, mac })}\n`, mac };
}

function canonicalOrThrow(value: unknown): string {
  const text = canonicalize(value);
  if (typeof text !== 'string') throw new TypeError('an audit line has no canonical JSON form');
  return text;
}

/** The outcome of {@link verifyAuditTrail}. */
export type AuditVerdict =
  | { intact: true; lastSeq: number; lastMac: string }
  | { intact: false; line: number; reason: string };

const DECODER = new TextDecoder('utf-8', { fatal: true });

/**
 * Checks a whole trail: every line complete, canonical, numbered, and chained.
 * Stops at the first bad line.
 *
 * @param bytes - the file's content.
 * @param keys - the audit keys of the key file that wrote it.
 * @returns `{intact: true, lastSeq, lastMac}` (0 and {@link AUDIT_GENESIS} for an empty trail), or the first bad line number (from 1) and why.
 */
export function verifyAuditTrail(bytes: Uint8Array, keys: AuditKeys): AuditVerdict {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let previousMac = AUDIT_GENESIS;
  let start = 0;
  let n = 0;
  while (start < buf.length) {
    n += 1;
    const end = buf.indexOf(0x0a, start);
    // A line without its newline was cut short (a crash mid-write, or tampering).
    if (end < 0) return { intact: false, line: n, reason: 'the last line is incomplete (no newline)' };
    const checked = checkLine(buf.subarray(start, end), n, previousMac, keys);
    if ('reason' in checked) return { intact: false, line: n, reason: checked.reason };
    previousMac = checked.mac;
    start = end + 1;
  }
  return { intact: true, lastSeq: n, lastMac: previousMac };
}

/** The line's mac when it is good, else why not. */
function checkLine(raw: Buffer, n: number, previousMac: string, keys: AuditKeys): { mac: string } | { reason: string } {
  let text: string;
  try {
    text = DECODER.decode(raw);
  } catch {
    return { reason: 'not UTF-8' };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { reason: 'not JSON' };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { reason: 'not a JSON object' };
  // One spelling per line: any other byte (spacing, key order, escapes, a duplicate key) is a change.
  let canonical: string | undefined;
  try {
    canonical = canonicalize(parsed);
  } catch {
    canonical = undefined; // a lone surrogate has no canonical form
  }
  if (canonical !== text) return { reason: 'not in RFC 8785 canonical form' };
  const { mac, ...unsigned } = parsed as Record<string, unknown>;
  if (unsigned['seq'] !== n) return { reason: `seq is ${JSON.stringify(unsigned['seq'])}, expected ${n} (a line was removed, inserted or moved)` };
  const kid = unsigned['kid'];
  const key = typeof kid === 'string' ? keys.get(kid) : undefined;
  if (!key) return { reason: 'its kid is not a key of the key file' };
  if (typeof mac !== 'string') return { reason: 'no mac' };
  const expected = AuditKeys.mac(key, canonicalOrThrow([previousMac, unsigned]));
  const a = Buffer.from(mac, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  if (a.length !== b.length || !timingSafeEqual(a, b)) return { reason: 'mac does not match (the line or one before it was changed, or it comes from another trail)' };
  return { mac };
}
