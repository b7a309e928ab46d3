/**
 * The audit trail's line format and hash chain.
 *
 * A trail is a file of lines, each the RFC 8785 canonical JSON of one object
 * followed by `\n`. Line N has `seq` N (from 1). Its `mac` is HMAC-SHA256
 * (RFC 2104), under the audit key named by its `kid` ({@link AuditKeys}), of
 * the UTF-8 bytes of the RFC 8785 canonical JSON of the two-element array
 * `[previousMac, lineWithoutMac]`, unpadded base64url. `previousMac` is the
 * `mac` of line N-1, or {@link AUDIT_GENESIS} for line 1.
 *
 * Line 1 names the trail ({@link AuditOpening}: a random trail id, the host,
 * the pid, the start time), so every later line chains from a value no other
 * trail has: no line of one trail verifies in another, even under the same
 * key file. A clean stop writes a last line {@link AuditClosing} with the
 * count of lines; a trail without one is `open` (still being written, stopped
 * without closing, or cut off at the end). Between them, one
 * {@link AuditLine} per decision.
 *
 * So without the keys nobody can change, insert, remove, reorder or transplant a
 * line (from another trail) unnoticed: every later `mac` would have to be
 * recomputed. Cutting lines off the end leaves a shorter valid chain without its
 * closing line (`open`); a head kept in a store ({@link AuditHead}) shows how many
 * lines are missing, and which trail belongs at a path.
 *
 * A trail written before trails were named has no opening line; it verifies as
 * `legacy`, never as `intact`.
 *
 * @module
 */
import { timingSafeEqual } from 'node:crypto';
import canonicalize from 'canonicalize';
import { AuditKeys, type AuditKey } from './auditKeys.js';
import type { AuditHead } from '../store/auditHeads.js';

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
 * - `states-refused`: `count` states refused by the verify hook (JSON-RPC -32602) since the previous such line (or the start of the trail);
 * - `granted`: a confirmed call also created a grant (`grant`: its id; `outcome`: its scope as the human read it), written before the action;
 * - `acted-under-grant`: a call took one use of grant `grant` and is about to act, without a question (`outcome`: the uses left), written before the action;
 * - `grant-exhausted`: that use was the grant's last (`grant`);
 * - `grant-revoked`: grant `grant` was revoked: on the approval page (`outcome` `null`), or by `mcp-confirm grants revoke` (`outcome` `command-line`); `approver` `null` (neither asks for a passkey);
 * - `plan-approved`: a plan was approved (`grant`: the plan's id; `outcome`: its number of calls); nothing is done by it;
 * - `acted-under-plan`: a call took its slot of plan `grant` and is about to act, without a question (`outcome`: the slots left), written before the action.
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
  | 'states-refused'
  | 'granted'
  | 'acted-under-grant'
  | 'grant-exhausted'
  | 'grant-revoked'
  | 'plan-approved'
  | 'acted-under-plan';

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
  /**
   * With passkey approval: the enrolled approver whose passkey approved (only `confirmed`), else
   * `null`. With a quorum: every approver's name, joined by `, ` in the order they approved.
   */
  approver: string | null;
  /**
   * With a quorum (N > 1 approvers): every approver's name, in the order they approved, only on
   * the `confirmed` line (absent from every other line, and without a quorum).
   */
  approvers?: string[];
  /** The grant's or plan's id, only on the grant and plan lines (absent from every other line). */
  grant?: string;
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

/** The first line of a named trail: which trail this is. Every later line chains from its `mac`. */
export interface AuditOpening {
  event: 'opened';
  seq: 1;
  /** When the line was made: ISO 8601 UTC with milliseconds. */
  time: string;
  /** The trail's random id: 16 random bytes, base64url (22 characters). */
  trail: string;
  /** The host name of the writing process (`os.hostname()`). */
  host: string;
  /** The process id of the writer. */
  pid: number;
  /** When the writer started this trail (the time in the CLI's file name): ISO 8601 UTC with milliseconds. */
  started: string;
  /** The `kind` of the store the trail's heads are recorded in (`'sqlite'`, `'redis'`, `'memory'`, …), or `null`. */
  heads: string | null;
  kid: string;
  mac: string;
}

/** The last line of a trail stopped cleanly. */
export interface AuditClosing {
  event: 'closed';
  /** Equal to `lines`. */
  seq: number;
  time: string;
  /** How many lines the trail has, this one included. */
  lines: number;
  kid: string;
  mac: string;
}

/**
 * Makes the text of one line (canonical JSON and `\n`) chained from `previousMac`.
 *
 * @param fields - every field of the line but `kid` and `mac` ({@link AuditLine}, {@link AuditOpening} or {@link AuditClosing}).
 * @throws {TypeError} when a value has no RFC 8785 form (e.g. a lone surrogate).
 */
export function chainLine(
  fields: Omit<AuditLine, 'mac' | 'kid'> | Omit<AuditOpening, 'mac' | 'kid'> | Omit<AuditClosing, 'mac' | 'kid'>,
  key: AuditKey,
  previousMac: string,
): { text: string; mac: string } {
  const unsigned = { ...fields, kid: key.kid };
  const mac = AuditKeys.mac(key, canonicalOrThrow([previousMac, unsigned]));
  return { text: `${canonicalOrThrow({ ...unsigned, mac })}\n`, mac };
}

function canonicalOrThrow(value: unknown): string {
  const text = canonicalize(value);
  if (typeof text !== 'string') throw new TypeError('an audit line has no canonical JSON form');
  return text;
}

/** Which trail a file holds, from its opening line. */
export interface AuditTrailInfo {
  /** The trail id. */
  id: string;
  host: string;
  pid: number;
  /** ISO 8601 UTC. */
  started: string;
  /** The kind of store its heads are recorded in, or `null`. */
  heads: string | null;
}

/**
 * The outcome of {@link verifyAuditTrail}. Only `intact` has `intact: true`.
 * - `intact`: named, every line good, closed by its `closed` line (and, compared with a head, it matches);
 * - `open`: named, every line good, no `closed` line: the writer may still be running, or it stopped
 *   without closing (a crash, `kill -9`), or the end was cut;
 * - `legacy`: every line good but no opening line (written before trails were named, or its start
 *   was cut): neither a cut end nor another trail in its place can be told;
 * - `broken`: the first bad line (from 1) and why;
 * - `cut` (compared with a head): the file ends before the recorded head: `missing` lines are gone;
 * - `replaced` (compared with a head): the recorded head names another trail than the file's
 *   (`recorded`; the file's own is in `trail`, absent for a file without an opening line);
 * - `unrecorded` (compared with a head): a named trail for which the store records no head.
 *
 * `headSeq` is the recorded head's `seq` when one was compared.
 */
export type AuditVerdict =
  | { status: 'intact'; intact: true; trail: AuditTrailInfo; lastSeq: number; lastMac: string; headSeq?: number }
  | { status: 'open'; intact: false; trail: AuditTrailInfo; lastSeq: number; lastMac: string; headSeq?: number }
  | { status: 'legacy'; intact: false; lastSeq: number; lastMac: string }
  | { status: 'broken'; intact: false; line: number; reason: string; trail?: AuditTrailInfo }
  | { status: 'cut'; intact: false; trail: AuditTrailInfo; lastSeq: number; headSeq: number; missing: number }
  | { status: 'replaced'; intact: false; trail?: AuditTrailInfo; recorded: string; lastSeq: number }
  | { status: 'unrecorded'; intact: false; trail: AuditTrailInfo; lastSeq: number };

/** Options of {@link verifyAuditTrail}. */
export interface VerifyAuditOptions {
  /**
   * Compare with the head recorded for the file's path ({@link AuditHeadStore.auditHead}): the
   * head, or `null` when the store records none. Absent: no comparison.
   */
  head?: AuditHead | null;
}

const DECODER = new TextDecoder('utf-8', { fatal: true });
const TRAIL_ID = /^[A-Za-z0-9_-]{22}$/;
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const OPENING_KEYS = ['event', 'heads', 'host', 'kid', 'mac', 'pid', 'seq', 'started', 'time', 'trail'];
const CLOSING_KEYS = ['event', 'kid', 'lines', 'mac', 'seq', 'time'];

/**
 * Checks a whole trail: every line complete, canonical, numbered, and chained; a first line
 * that names the trail, and a last `closed` line; with `options.head`, the head recorded in
 * the store. Stops at the first bad line.
 *
 * @param bytes - the file's content.
 * @param keys - the audit keys of the key file that wrote it.
 * @param options - see {@link VerifyAuditOptions}.
 * @returns the {@link AuditVerdict}. An empty file is `legacy` with `lastSeq` 0 (or, compared with a recorded head, `replaced`).
 */
export function verifyAuditTrail(bytes: Uint8Array, keys: AuditKeys, options: VerifyAuditOptions = {}): AuditVerdict {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let previousMac = AUDIT_GENESIS;
  let trail: AuditTrailInfo | undefined;
  let closed = false;
  const head = options.head;
  let macAtHead: string | undefined;
  let start = 0;
  let n = 0;
  const broken = (line: number, reason: string): AuditVerdict => ({
    status: 'broken',
    intact: false,
    line,
    reason,
    ...(trail ? { trail } : {}),
  });
  while (start < buf.length) {
    n += 1;
    const end = buf.indexOf(0x0a, start);
    // A line without its newline was cut short (a crash mid-write, or tampering).
    if (end < 0) return broken(n, 'the last line is incomplete (no newline)');
    // Nothing follows the closing line: a line after it was added later.
    if (closed) return broken(n, 'a line follows the closed line');
    const checked = checkLine(buf.subarray(start, end), n, previousMac, keys);
    if ('reason' in checked) return broken(n, checked.reason);
    const { line } = checked;
    const event = line['event'];
    if (n === 1 && event === 'opened') {
      const named = openingOf(line);
      if (typeof named === 'string') return broken(1, named);
      trail = named;
    } else if (event === 'opened') {
      return broken(n, 'an opening line after line 1');
    } else if (event === 'closed') {
      if (trail === undefined) return broken(n, 'a closed line in a trail without an opening line');
      const problem = closingProblem(line, n);
      if (problem !== undefined) return broken(n, problem);
      closed = true;
    }
    if (head && n === head.seq) macAtHead = checked.mac;
    previousMac = checked.mac;
    start = end + 1;
  }
  if (head === undefined) {
    if (trail === undefined) return { status: 'legacy', intact: false, lastSeq: n, lastMac: previousMac };
    return closed
      ? { status: 'intact', intact: true, trail, lastSeq: n, lastMac: previousMac }
      : { status: 'open', intact: false, trail, lastSeq: n, lastMac: previousMac };
  }
  // Compared with the store, in this order: which trail belongs here, then whether its end is there.
  if (head === null) {
    if (trail === undefined) return { status: 'legacy', intact: false, lastSeq: n, lastMac: previousMac };
    return { status: 'unrecorded', intact: false, trail, lastSeq: n };
  }
  if (trail === undefined || trail.id !== head.trail)
    return { status: 'replaced', intact: false, ...(trail ? { trail } : {}), recorded: head.trail, lastSeq: n };
  if (n < head.seq)
    return { status: 'cut', intact: false, trail, lastSeq: n, headSeq: head.seq, missing: head.seq - n };
  if (macAtHead === undefined || !sameText(macAtHead, head.mac))
    return broken(head.seq, 'its mac is not the one the store records for this line');
  const base = { trail, lastSeq: n, lastMac: previousMac, headSeq: head.seq };
  return closed ? { status: 'intact', intact: true, ...base } : { status: 'open', intact: false, ...base };
}

/** The trail an opening line names, or why it is malformed. */
function openingOf(line: Record<string, unknown>): AuditTrailInfo | string {
  const keys = Object.keys(line).sort();
  if (keys.length !== OPENING_KEYS.length || keys.some((k, i) => k !== OPENING_KEYS[i]))
    return 'the opening line does not have the fields of one';
  const { trail, host, pid, started, heads, time } = line;
  if (typeof trail !== 'string' || !TRAIL_ID.test(trail)) return 'the opening line has no valid trail id';
  if (
    typeof host !== 'string' ||
    typeof started !== 'string' ||
    !ISO_MS.test(started) ||
    typeof time !== 'string' ||
    !ISO_MS.test(time)
  ) {
    return 'the opening line has no valid host or times';
  }
  if (!Number.isSafeInteger(pid) || (pid as number) < 0) return 'the opening line has no valid pid';
  if (heads !== null && typeof heads !== 'string') return 'the opening line has no valid heads';
  return { id: trail, host, pid: pid as number, started, heads };
}

/** Why a `closed` line at line `n` is malformed, or undefined. */
function closingProblem(line: Record<string, unknown>, n: number): string | undefined {
  const keys = Object.keys(line).sort();
  if (keys.length !== CLOSING_KEYS.length || keys.some((k, i) => k !== CLOSING_KEYS[i]))
    return 'the closed line does not have the fields of one';
  if (line['lines'] !== n)
    return `the closed line counts ${JSON.stringify(line['lines'])} line(s), but it is line ${n}`;
  return undefined;
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The line and its mac when it is good, else why not. */
function checkLine(
  raw: Buffer,
  n: number,
  previousMac: string,
  keys: AuditKeys,
): { mac: string; line: Record<string, unknown> } | { reason: string } {
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
  if (unsigned['seq'] !== n)
    return {
      reason: `seq is ${JSON.stringify(unsigned['seq'])}, expected ${n} (a line was removed, inserted or moved)`,
    };
  const kid = unsigned['kid'];
  const key = typeof kid === 'string' ? keys.get(kid) : undefined;
  if (!key) return { reason: 'its kid is not a key of the key file' };
  if (typeof mac !== 'string') return { reason: 'no mac' };
  const expected = AuditKeys.mac(key, canonicalOrThrow([previousMac, unsigned]));
  if (!sameText(mac, expected))
    return { reason: 'mac does not match (the line or one before it was changed, or it comes from another trail)' };
  return { mac, line: parsed as Record<string, unknown> };
}
