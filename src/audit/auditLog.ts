/**
 * The audit trail writer: one hash-chained JSON line per confirmation
 * decision ({@link chainLine}), appended to a file that this process created
 * and alone writes.
 *
 * Writing, in order:
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
 * - A failed batch rejects its lines and every line queued after it (they chain
 *   from it) with `ERR_CONFIRM_AUDIT_UNAVAILABLE`; a partly written batch is cut
 *   back to the last whole line (`ftruncate`), and the chain continues from the
 *   last line written, so the trail stays verifiable once writes succeed again.
 *   If the cut itself fails, the log refuses every later line.
 *
 * States refused by the verify hook (JSON-RPC -32602: no tool or arguments
 * are known then) are only counted ({@link AuditLog.countStateRefused}); one
 * `states-refused` line with the count is written per interval (default 60 s)
 * and at {@link AuditLog.close}, so a flood of forged states cannot fill the disk.
 *
 * @module
 */
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { ConfirmAuditUnavailableError } from '../errors.js';
import type { AuditKeys } from './auditKeys.js';
import { AUDIT_GENESIS, chainLine, type AuditDecision } from './chain.js';

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
  /** The clock, Unix milliseconds. Defaults to `Date.now`. */
  now?: () => number;
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
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

function defaultSchedule(flush: () => void, intervalMs: number): () => void {
  const timer = setInterval(flush, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * An audit trail file written by this process alone.
 *
 * @example
 * const audit = await AuditLog.open({ path: '/var/log/mcp-confirm/audit.jsonl', keys: await AuditKeys.fromFile('/etc/mcp-confirm/keys.json') });
 * const confirmation = await createConfirmation({ keys, audit });
 * // … at shutdown:
 * await audit.close();
 */
export class AuditLog implements AuditSink {
  /** The trail file. */
  readonly path: string;
  readonly #keys: AuditKeys;
  readonly #now: () => number;
  readonly #sync: boolean;
  readonly #onError: (error: Error) => void;
  readonly #stopSchedule: () => void;
  /** The last line queued (what the next line chains from). */
  #head = { seq: 0, mac: AUDIT_GENESIS };
  /** The last line written, and the file size after it. */
  #durable = { seq: 0, mac: AUDIT_GENESIS, size: 0 };
  #queue: Pending[] = [];
  #draining: Promise<void> | undefined;
  #statesRefused = 0;
  #broken: Error | undefined;
  #closed = false;

  private constructor(path: string, options: AuditLogOptions) {
    this.path = path;
    this.#keys = options.keys;
    this.#now = options.now ?? Date.now;
    this.#sync = options.sync ?? true;
    this.#onError = options.onError ?? ((e) => process.stderr.write(`mcp-confirm: audit trail ${path}: ${e.message}\n`));
    const intervalMs = options.stateRefusedIntervalMs ?? 60_000;
    this.#stopSchedule = (options.schedule ?? defaultSchedule)(() => void this.flushStatesRefused().catch(() => {}), intervalMs);
  }

  /**
   * Creates the trail file and returns its writer.
   *
   * @throws {TypeError} when `stateRefusedIntervalMs` is not a positive whole number.
   * @throws {Error} the `node:fs` error (`EEXIST`, `ENOENT`, `EACCES`, …) when the file cannot be created.
   */
  static async open(options: AuditLogOptions): Promise<AuditLog> {
    const intervalMs = options.stateRefusedIntervalMs ?? 60_000;
    if (!Number.isSafeInteger(intervalMs) || intervalMs <= 0) throw new TypeError(`stateRefusedIntervalMs must be a positive whole number, got ${String(intervalMs)}`);
    const handle = await open(options.path, CREATE_FLAGS, 0o600);
    await handle.close();
    return new AuditLog(options.path, options);
  }

  /** The `seq` and `mac` of the last line written: keep it elsewhere to detect a cut-off end. */
  get head(): { seq: number; mac: string } {
    return { seq: this.#durable.seq, mac: this.#durable.mac };
  }

  /**
   * Appends one decision line; resolves once it is written.
   *
   * @throws {ConfirmAuditUnavailableError} `ERR_CONFIRM_AUDIT_UNAVAILABLE` when the line cannot be made or written, or the log is closed or broken.
   */
  record(decision: AuditDecision): Promise<void> {
    if (this.#closed) return Promise.reject(new ConfirmAuditUnavailableError({ cause: new Error('the audit trail is closed') }));
    if (this.#broken) return Promise.reject(new ConfirmAuditUnavailableError({ cause: this.#broken }));
    let line: { text: string; mac: string };
    const seq = this.#head.seq + 1;
    try {
      line = chainLine({ ...decision, seq, time: new Date(this.#now()).toISOString() }, this.#keys.signing, this.#head.mac);
    } catch (e) {
      return Promise.reject(new ConfirmAuditUnavailableError({ cause: e }));
    }
    this.#head = { seq, mac: line.mac };
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ text: line.text, seq, mac: line.mac, resolve, reject });
      this.#draining ??= this.#drain().finally(() => (this.#draining = undefined));
    });
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
      await this.record({ event: 'states-refused', tool: null, principal: null, jti: null, args: null, question: null, outcome: null, code: null, count, approver: null });
    } catch (e) {
      this.#statesRefused += count;
      throw e;
    }
  }

  /** Writes the pending count of refused states, waits for every queued line, and refuses later ones. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#stopSchedule();
    await this.flushStatesRefused().catch(() => {});
    this.#closed = true;
    while (this.#draining) await this.#draining;
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) {
      const batch = this.#queue.splice(0);
      const bytes = Buffer.from(batch.map((p) => p.text).join(''), 'utf8');
      let written = 0;
      try {
        const handle = await open(this.path, APPEND_FLAGS);
        try {
          if (!(await handle.stat()).isFile()) throw Object.assign(new Error('the trail is not a regular file'), { code: 'ENOTREGULAR' });
          while (written < bytes.length) {
            const { bytesWritten } = await handle.write(bytes, written, bytes.length - written);
            written += bytesWritten;
          }
          if (this.#sync) await handle.datasync();
        } finally {
          await handle.close();
        }
      } catch (e) {
        this.#fail(batch, e as Error, written);
        await this.#cutBack(written);
        continue;
      }
      const last = batch[batch.length - 1]!;
      this.#durable = { seq: last.seq, mac: last.mac, size: this.#durable.size + bytes.length };
      for (const p of batch) p.resolve();
    }
  }

  /** Rejects a failed batch and everything queued after it (they chain from it); the chain goes on from the last line written. */
  #fail(batch: Pending[], error: Error, written: number): void {
    const refused = [...batch, ...this.#queue.splice(0)];
    this.#head = { seq: this.#durable.seq, mac: this.#durable.mac };
    this.#onError(new Error(`${refused.length} line(s) not written (${(error as NodeJS.ErrnoException).code ?? error.message})${written > 0 ? '; cutting back the partial write' : ''}`));
    for (const p of refused) p.reject(new ConfirmAuditUnavailableError({ cause: error }));
  }

  /** Cuts a partly written batch back to the last whole line; if that fails, the log refuses every later line. */
  async #cutBack(written: number): Promise<void> {
    if (written === 0) return;
    try {
      const handle = await open(this.path, constants.O_WRONLY | constants.O_NOFOLLOW);
      try {
        await handle.truncate(this.#durable.size);
      } finally {
        await handle.close();
      }
    } catch (e) {
      this.#broken = e as Error;
      this.#onError(new Error(`cannot cut back a partial write (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); refusing every later line`));
    }
  }
}
