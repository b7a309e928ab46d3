/**
 * The audit trail writer: one hash-chained JSON line per confirmation
 * decision ({@link chainLine}), appended to a file that this process created
 * and alone writes, between a first line that names the trail and, on a clean
 * stop, a last `closed` line.
 *
 * Writing, in order:
 * - {@link AuditLog.open} creates the file and writes its opening line (a
 *   random trail id, the host name, the pid, the start time); every later
 *   line chains from it, so no line of another trail verifies in this one.
 * - {@link AuditLog.record} assigns the next `seq`, computes the line's `mac`
 *   from the previous line's, queues it, and resolves only once the line is
 *   written (and, with `sync`, on disk: `fdatasync`). The guard awaits it
 *   before it answers or acts, so an action never runs ahead of its
 *   "confirmed" line (fail closed).
 * - One batch at a time, in `seq` order: lines queued while a batch is being
 *   written go together in the next one (one `open`, one `write`, one
 *   `fdatasync`, one `close`). The work runs on libuv's thread pool, so the
 *   event loop never waits on the disk.
 * - The file is opened per batch by its path, append-only, without creating it
 *   without following a symbolic link and without waiting for a reader
 *   (`O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK`), then checked to be a
 *   regular file: a trail that was removed, replaced by a directory, a link or a
 *   FIFO is a failed write, never a silent new file and never a hang.
 * - With a head store (`heads`), once a batch is on disk its last line's `seq`
 *   and `mac` are recorded in the store for this file's path (one store write
 *   at a time, the newest head only), never before: a crash leaves the
 *   recorded head at or behind the file's end.
 * - A failed batch rejects its lines and every line queued after it (they chain
 *   from it) with `ERR_CONFIRM_AUDIT_UNAVAILABLE`, and the chain continues from
 *   the last line written. When part of the batch reached the file, the file is
 *   cut back (`ftruncate`) to the end of the line whose `mac` is the last head
 *   this process wrote, as found in the file; when that line is not there (the
 *   file was replaced or changed) or the cut fails, the log refuses every later
 *   line.
 * - {@link AuditLog.close} (a clean stop) writes the last `closed` line with the
 *   count of lines, and its head.
 *
 * States refused by the verify hook (JSON-RPC -32602: no tool or arguments
 * are known then) are only counted ({@link AuditLog.countStateRefused}); one
 * `states-refused` line with the count is written per interval (default 60 s)
 * and at {@link AuditLog.close}, so a flood of forged states cannot fill the disk.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { open, realpath, type FileHandle } from 'node:fs/promises';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { ConfirmAuditUnavailableError } from '../errors.js';
import type { AuditHead, AuditHeadStore } from '../store/auditHeads.js';
import type { AuditKeys } from './auditKeys.js';
import {
  AUDIT_GENESIS,
  chainLine,
  type AuditClosing,
  type AuditDecision,
  type AuditLine,
  type AuditOpening,
  type AuditTrailInfo,
} from './chain.js';

/** What the confirmation layer needs of an audit trail (`createConfirmation({ audit })`). */
export interface AuditSink {
  /**
   * Records one decision. Resolves once the line is written; the guard does
   * not answer or act before.
   *
   * @throws {ConfirmAuditUnavailableError} `ERR_CONFIRM_AUDIT_UNAVAILABLE` when the line cannot be written.
   */
  record(decision: AuditDecision): Promise<void>;
  /** Counts one state refused by the verify hook (written later, aggregated). Never throws. */
  countStateRefused(): void;
}

/** Options of {@link AuditLog.open}. */
export interface AuditLogOptions {
  /** The trail file. Must not exist: it is created (mode 0600) with `O_CREAT | O_EXCL`, so two writers never share one chain. */
  path: string;
  /** The audit MAC keys ({@link AuditKeys.fromFile}); the first makes every line's `mac`. */
  keys: AuditKeys;
  /**
   * Where the trail's head is recorded after each batch is on disk (a shared store: SQLite, Redis;
   * the memory ledger within one process), so that `audit verify --ledger` can tell a cut end and
   * another trail in this one's place. The opening line names the store's `kind`. Failing to
   * record a head never refuses a line: it is reported to `onError` once per run of failures.
   * Defaults to none.
   */
  heads?: AuditHeadStore;
  /** The clock, Unix milliseconds. Defaults to `Date.now`. */
  now?: () => number;
  /** When this trail started, Unix milliseconds, as the opening line's `started` (the CLI puts it in the file name). Defaults to `now()`. */
  startedAtMs?: number;
  /** How often the count of refused states is written, in milliseconds. Defaults to 60,000 (one minute). */
  stateRefusedIntervalMs?: number;
  /**
   * Runs `flush` every `intervalMs` and returns a function that stops it.
   * Defaults to an unref'd `setInterval`. Tests inject their own.
   */
  schedule?: (flush: () => void, intervalMs: number) => () => void;
  /** `fdatasync` after every batch, so a written line survives a power loss. Defaults to true. */
  sync?: boolean;
  /** Where write failures are reported (besides the rejected `record`). Defaults to a line on stderr. */
  onError?: (error: Error) => void;
}

interface Pending {
  text: string;
  seq: number;
  mac: string;
  resolve: () => void;
  reject: (e: Error) => void;
}

// O_NONBLOCK: a FIFO put in the trail's place must not block the open (with no reader it fails at
// once); anything but a regular file is then refused after the open.
const APPEND_FLAGS = constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const CUT_FLAGS = constants.O_RDWR | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
/** How much of the file is read at a time when looking for the last line this process wrote. */
const SCAN_CHUNK = 64 * 1024;

function defaultSchedule(flush: () => void, intervalMs: number): () => void {
  const timer = setInterval(flush, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

const errorName = (e: unknown): string => (e as NodeJS.ErrnoException).code ?? (e as Error).message;

/**
 * The key a trail's head is recorded under in the store: the real path of the directory the file
 * is in, then the file's own name (not followed). The directory part is resolved by the system
 * (`realpath` of the path's directory as given), so `..` is taken after symbolic links, as `open`
 * takes it: `dirlink/../trail` with `dirlink -> Y/sub` is `Y/trail`, not `./trail`.
 *
 * @param path - the trail file's path, as given (relative to the working directory or absolute).
 * @throws the `realpath` error (`ENOENT`, …) when the directory cannot be resolved.
 */
export async function auditHeadKey(path: string): Promise<string> {
  // Not path.resolve first: it would drop `x/..` by its text, before the system follows x.
  return join(await realpath(dirname(path)), basename(path));
}

/**
 * An audit trail file written by this process alone.
 *
 * @example
 * ```ts
 * import { AuditKeys, AuditLog, createConfirmation, KeyRing } from 'mcp-confirm';
 *
 * const keys = await KeyRing.fromFile('/etc/mcp-confirm/keys.json');
 * const audit = await AuditLog.open({ path: '/var/log/mcp-confirm/audit.jsonl', keys: AuditKeys.fromRing(keys) });
 * const confirmation = await createConfirmation({ keys, audit });
 * // … at shutdown (writes the closed line):
 * await audit.close();
 * ```
 */
export class AuditLog implements AuditSink {
  /** The trail file. */
  readonly path: string;
  /** The path its head is recorded under: absolute, its directory's symbolic links resolved. */
  readonly headKey: string;
  /** Which trail this is (its opening line). */
  readonly trail: AuditTrailInfo;
  readonly #keys: AuditKeys;
  readonly #now: () => number;
  readonly #sync: boolean;
  readonly #onError: (error: Error) => void;
  readonly #stopSchedule: () => void;
  readonly #heads: AuditHeadStore | undefined;
  /** The last line queued (what the next line chains from). */
  #head = { seq: 0, mac: AUDIT_GENESIS };
  /** The last line written. */
  #durable = { seq: 0, mac: AUDIT_GENESIS };
  #queue: Pending[] = [];
  /** Set while a drain runs; cleared by the drain itself, in the same step that finds the queue empty. */
  #draining: Promise<void> | undefined;
  #statesRefused = 0;
  #broken: Error | undefined;
  #closed = false;
  #closing: Promise<void> | undefined;
  /** The newest head waiting to be recorded, the write in flight, the last recorded, and whether the last try failed. */
  #headWanted: { seq: number; mac: string } | undefined;
  #headWriting: Promise<void> | undefined;
  #headRecorded = 0;
  #headFailing = false;

  private constructor(path: string, headKey: string, trail: AuditTrailInfo, options: AuditLogOptions) {
    this.path = path;
    this.headKey = headKey;
    this.trail = trail;
    this.#keys = options.keys;
    this.#now = options.now ?? Date.now;
    this.#sync = options.sync ?? true;
    this.#heads = options.heads;
    this.#onError =
      options.onError ?? ((e) => process.stderr.write(`mcp-confirm: audit trail ${path}: ${e.message}\n`));
    const intervalMs = options.stateRefusedIntervalMs ?? 60_000;
    this.#stopSchedule = (options.schedule ?? defaultSchedule)(
      () => void this.flushStatesRefused().catch(() => {}),
      intervalMs,
    );
  }

  /**
   * Creates the trail file, writes its opening line and records its first head (when `heads` is given),
   * and returns its writer.
   *
   * @throws {TypeError} when `stateRefusedIntervalMs` is not a positive whole number, or `startedAtMs` not a finite number.
   * @throws {Error} the `node:fs` error (`EEXIST`, `ENOENT`, `EACCES`, …) when the file cannot be created.
   * @throws {ConfirmAuditUnavailableError} `ERR_CONFIRM_AUDIT_UNAVAILABLE` when the opening line cannot be written (the file stays, without it).
   */
  static async open(options: AuditLogOptions): Promise<AuditLog> {
    const intervalMs = options.stateRefusedIntervalMs ?? 60_000;
    if (!Number.isSafeInteger(intervalMs) || intervalMs <= 0)
      throw new TypeError(`stateRefusedIntervalMs must be a positive whole number, got ${String(intervalMs)}`);
    const now = options.now ?? Date.now;
    const startedAtMs = options.startedAtMs ?? now();
    if (typeof startedAtMs !== 'number' || !Number.isFinite(startedAtMs))
      throw new TypeError('startedAtMs must be a finite number of milliseconds');
    const handle = await open(options.path, CREATE_FLAGS, 0o600);
    await handle.close();
    // The key of its head: the same for `audit verify` given the file by any path to the same directory.
    const headKey = await auditHeadKey(options.path);
    const heads = options.heads;
    const named = (heads as { kind?: unknown } | undefined)?.kind;
    const kind = heads === undefined ? null : typeof named === 'string' ? named : 'custom';
    const trail: AuditTrailInfo = {
      id: randomBytes(16).toString('base64url'),
      host: hostname(),
      pid: process.pid,
      started: new Date(startedAtMs).toISOString(),
      heads: kind,
    };
    const log = new AuditLog(options.path, headKey, trail, options);
    try {
      await log.#append((seq, time): Omit<AuditOpening, 'kid' | 'mac'> => ({
        event: 'opened',
        seq: seq as 1,
        time,
        trail: trail.id,
        host: trail.host,
        pid: trail.pid,
        started: trail.started,
        heads: kind,
      }));
    } catch (e) {
      log.#closed = true;
      log.#stopSchedule();
      throw e;
    }
    await log.#headWriting;
    return log;
  }

  /** The trail id and the `seq` and `mac` of the last line written (what the store records as its head). */
  get head(): AuditHead {
    return { trail: this.trail.id, seq: this.#durable.seq, mac: this.#durable.mac };
  }

  /**
   * Appends one decision line; resolves once it is written.
   *
   * @throws {ConfirmAuditUnavailableError} `ERR_CONFIRM_AUDIT_UNAVAILABLE` when the line cannot be made or written, or the log is closed or broken.
   */
  record(decision: AuditDecision): Promise<void> {
    if (this.#closed)
      return Promise.reject(new ConfirmAuditUnavailableError({ cause: new Error('the audit trail is closed') }));
    return this.#append((seq, time): Omit<AuditLine, 'kid' | 'mac'> => ({ ...decision, seq, time }));
  }

  /** Counts one state refused by the verify hook; written by {@link flushStatesRefused}. */
  countStateRefused(): void {
    this.#statesRefused += 1;
  }

  /**
   * Writes one `states-refused` line with the count since the previous one, if
   * any were counted. Runs every `stateRefusedIntervalMs` and at {@link close}.
   * A count that cannot be written is kept for the next try.
   */
  async flushStatesRefused(): Promise<void> {
    const count = this.#statesRefused;
    if (count === 0 || this.#closed) return;
    this.#statesRefused = 0;
    try {
      await this.record({
        event: 'states-refused',
        tool: null,
        principal: null,
        jti: null,
        args: null,
        question: null,
        outcome: null,
        code: null,
        count,
        approver: null,
      });
    } catch (e) {
      this.#statesRefused += count;
      throw e;
    }
  }

  /**
   * A clean stop: writes the pending count of refused states, then the `closed` line with the
   * count of lines (after every line queued before), records the last head, and refuses later
   * lines. A `closed` line that cannot be written is reported to `onError` (the trail then reads
   * as open). Idempotent: every call resolves once the first is done.
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#stopSchedule();
      await this.flushStatesRefused().catch(() => {});
      this.#closed = true;
      if (!this.#broken) {
        await this.#append((seq, time): Omit<AuditClosing, 'kid' | 'mac'> => ({
          event: 'closed',
          seq,
          time,
          lines: seq,
        })).catch((e: unknown) => {
          this.#onError(
            new Error(
              `the closed line was not written (${errorName((e as Error).cause ?? e)}); the trail reads as open`,
            ),
          );
        });
      }
      while (this.#draining) await this.#draining;
      while (this.#headWriting) await this.#headWriting;
      // One more try when the last head did not make it to the store.
      if (this.#heads && this.#headRecorded < this.#durable.seq) {
        this.#noteHead();
        while (this.#headWriting) await this.#headWriting;
      }
    })();
    return this.#closing;
  }

  /** Makes the next line from the last one queued, queues it, and resolves once it is written. */
  #append(make: (seq: number, time: string) => Parameters<typeof chainLine>[0]): Promise<void> {
    if (this.#broken) return Promise.reject(new ConfirmAuditUnavailableError({ cause: this.#broken }));
    let line: { text: string; mac: string };
    const seq = this.#head.seq + 1;
    try {
      line = chainLine(make(seq, new Date(this.#now()).toISOString()), this.#keys.signing, this.#head.mac);
    } catch (e) {
      return Promise.reject(new ConfirmAuditUnavailableError({ cause: e }));
    }
    this.#head = { seq, mac: line.mac };
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ text: line.text, seq, mac: line.mac, resolve, reject });
      this.#draining ??= this.#drain();
    });
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0);
        const bytes = Buffer.from(batch.map((p) => p.text).join(''), 'utf8');
        let written = 0;
        try {
          const handle = await open(this.path, APPEND_FLAGS);
          try {
            if (!(await handle.stat()).isFile())
              throw Object.assign(new Error('the trail is not a regular file'), { code: 'ENOTREGULAR' });
            while (written < bytes.length) {
              const { bytesWritten } = await handle.write(bytes, written, bytes.length - written);
              written += bytesWritten;
            }
            if (this.#sync) await handle.datasync();
          } finally {
            await handle.close();
          }
        } catch (e) {
          await this.#fail(batch, e as Error, written);
          continue;
        }
        const last = batch[batch.length - 1]!;
        this.#durable = { seq: last.seq, mac: last.mac };
        // On disk now: only now may the store hear of it.
        this.#noteHead();
        for (const p of batch) p.resolve();
      }
    } finally {
      // In the same step that found the queue empty, so a line queued after it starts a new drain.
      this.#draining = undefined;
    }
  }

  /**
   * Rejects a failed batch and everything queued after it (they chain from it), once a partial write
   * is cut back (so a caller told "not written" finds the file as it was); the chain goes on from the
   * last line written.
   */
  async #fail(batch: Pending[], error: Error, written: number): Promise<void> {
    const refused = [...batch, ...this.#queue.splice(0)];
    this.#head = { seq: this.#durable.seq, mac: this.#durable.mac };
    this.#onError(
      new Error(
        `${refused.length} line(s) not written (${errorName(error)})${written > 0 ? '; cutting back the partial write' : ''}`,
      ),
    );
    if (written > 0) await this.#cutBack();
    for (const p of refused) p.reject(new ConfirmAuditUnavailableError({ cause: error }));
  }

  /**
   * Cuts the file back to the end of the line whose `mac` is the last head this process wrote, as
   * found in the file (not a size remembered: the file may have been changed). When that line is
   * not there, or the cut fails, the log refuses every later line.
   */
  async #cutBack(): Promise<void> {
    try {
      const handle = await open(this.path, CUT_FLAGS);
      try {
        const stat = await handle.stat();
        if (!stat.isFile()) throw Object.assign(new Error('the trail is not a regular file'), { code: 'ENOTREGULAR' });
        const end = await endOfLine(handle, stat.size, this.#durable);
        if (end === undefined) throw new Error('the last line this process wrote is not in the file');
        await handle.truncate(end);
        if (this.#sync) await handle.datasync();
      } finally {
        await handle.close();
      }
    } catch (e) {
      this.#broken = e as Error;
      this.#onError(new Error(`cannot cut back a partial write (${errorName(e)}); refusing every later line`));
    }
  }

  /** Asks for the durable head to be recorded in the store (the newest only; one write at a time). */
  #noteHead(): void {
    if (this.#heads === undefined) return;
    this.#headWanted = { seq: this.#durable.seq, mac: this.#durable.mac };
    this.#headWriting ??= this.#writeHeads();
  }

  async #writeHeads(): Promise<void> {
    try {
      for (let wanted = this.#headWanted; wanted !== undefined; wanted = this.#headWanted) {
        this.#headWanted = undefined;
        try {
          await this.#heads!.recordAuditHead(this.headKey, { trail: this.trail.id, seq: wanted.seq, mac: wanted.mac });
          this.#headRecorded = Math.max(this.#headRecorded, wanted.seq);
          if (this.#headFailing)
            this.#onError(new Error(`its head is recorded in the store again (line ${wanted.seq})`));
          this.#headFailing = false;
        } catch (e) {
          if (!this.#headFailing)
            this.#onError(
              new Error(
                `cannot record its head in the store (${errorName((e as Error).cause ?? e)}); lines are still written, and the head is tried again with the next one`,
              ),
            );
          this.#headFailing = true;
        }
      }
    } finally {
      this.#headWriting = undefined;
    }
  }
}

/**
 * The offset just past the newline of the complete line with this `seq` and `mac`, looking from
 * the end of the file back (a line's canonical JSON holds `"mac":"…"` exactly once, and a string
 * value can hold that text only escaped), or `undefined` when there is none.
 */
async function endOfLine(
  handle: FileHandle,
  size: number,
  head: { seq: number; mac: string },
): Promise<number | undefined> {
  const needle = Buffer.from(`"mac":"${head.mac}"`, 'utf8');
  let windowEnd = size;
  while (windowEnd > 0) {
    const windowStart = Math.max(0, windowEnd - SCAN_CHUNK);
    const chunk = await readAt(
      handle,
      windowStart,
      windowEnd - windowStart + Math.min(needle.length - 1, size - windowEnd),
    );
    const at = chunk.lastIndexOf(needle);
    if (at >= 0) return lineEndingAt(handle, size, windowStart + at, head);
    if (windowStart === 0) return undefined;
    windowEnd = windowStart;
  }
  return undefined;
}

/** The end of the line holding offset `at`, when it is complete and is the line `head`; else `undefined`. */
async function lineEndingAt(
  handle: FileHandle,
  size: number,
  at: number,
  head: { seq: number; mac: string },
): Promise<number | undefined> {
  let lineStart = at;
  while (lineStart > 0) {
    const from = Math.max(0, lineStart - SCAN_CHUNK);
    const i = (await readAt(handle, from, lineStart - from)).lastIndexOf(0x0a);
    if (i >= 0) {
      lineStart = from + i + 1;
      break;
    }
    lineStart = from;
  }
  let lineEnd = -1;
  for (let from = at; from < size && lineEnd < 0; from += SCAN_CHUNK) {
    const i = (await readAt(handle, from, Math.min(SCAN_CHUNK, size - from))).indexOf(0x0a);
    if (i >= 0) lineEnd = from + i;
  }
  if (lineEnd < 0) return undefined;
  try {
    const line = JSON.parse((await readAt(handle, lineStart, lineEnd - lineStart)).toString('utf8')) as Record<
      string,
      unknown
    >;
    return line['seq'] === head.seq && line['mac'] === head.mac ? lineEnd + 1 : undefined;
  } catch {
    return undefined;
  }
}

async function readAt(handle: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.alloc(length);
  let got = 0;
  while (got < length) {
    const { bytesRead } = await handle.read(buffer, got, length - got, position + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return buffer.subarray(0, got);
}
