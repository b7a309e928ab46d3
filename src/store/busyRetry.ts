/**
 * Asynchronous retry of a synchronous SQLite step while another connection holds
 * the lock it needs (`SQLITE_BUSY`), so that a waiting ledger call never blocks
 * the event loop. Internal to the SQLite store (and its bench baseline).
 *
 * better-sqlite3 runs every statement synchronously on the main thread. With
 * SQLite's `busy_timeout` > 0, a statement that meets another process's write
 * lock sleeps inside SQLite (the busy handler) and the whole process stalls with
 * it. The ledger sets `busy_timeout = 0` instead, so a locked statement fails at
 * once with `SQLITE_BUSY` (SQLite C API, "Result and Error Codes": SQLITE_BUSY and
 * its extended codes), and retries it from a timer: the process serves other
 * requests in between.
 *
 * @module
 */
import { performance } from 'node:perf_hooks';

/** `true` for `SQLITE_BUSY` and its extended codes (`SQLITE_BUSY_RECOVERY`, `_SNAPSHOT`, `_TIMEOUT`). */
export function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

/** The error a retried step rejects with once its deadline has passed; `cause` is the last `SQLITE_BUSY`. */
export class BusyDeadlineError extends Error {
  constructor(timeoutMs: number, cause: unknown) {
    super(`the database stayed locked by another connection (SQLITE_BUSY) for ${timeoutMs} ms`, { cause });
    this.name = 'BusyDeadlineError';
  }
}

/** Longest pause between two attempts, in milliseconds. */
const MAX_PAUSE_MS = 25;

interface Waiting {
  timer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  reject: (error: Error) => void;
}

/**
 * Runs synchronous steps, retrying each one that throws `SQLITE_BUSY` until its
 * own deadline of `timeoutMs` (measured from the call, monotonic clock).
 */
export class BusyRetry {
  readonly #waiting = new Set<Waiting>();

  /** @param timeoutMs - deadline of every {@link run}, in milliseconds (a positive integer, checked by the caller). */
  constructor(readonly timeoutMs: number) {}

  /**
   * Runs `step` now; returns its result at once when it succeeds (no extra tick),
   * throws at once any error that is not `SQLITE_BUSY`. On `SQLITE_BUSY` returns a
   * promise and runs `step` again later, first on the next turn of the event loop
   * (`setImmediate`), then after pauses of 1, 2, 4, 8, 16, 25, 25, … ms (plus up to
   * half as much jitter, so that processes do not retry in step), and last exactly at
   * the deadline.
   *
   * `step` must be all or nothing (one statement or one transaction): it is run
   * again from the start after a `SQLITE_BUSY`.
   *
   * @returns the result of `step`, or a promise of it.
   * @throws the error of `step` when it is not `SQLITE_BUSY`; the promise rejects with
   *   {@link BusyDeadlineError} when the deadline passes, or with the error given to {@link cancelAll}.
   */
  run<T>(step: () => T): T | Promise<T> {
    try {
      return step();
    } catch (error) {
      if (!isBusy(error)) throw error;
      return this.#later(step, performance.now() + this.timeoutMs, error);
    }
  }

  /** Rejects every step still waiting with `error` and stops their timers (used by `close()`). */
  cancelAll(error: Error): void {
    for (const w of this.#waiting) {
      if (w.timer !== undefined) {
        clearTimeout(w.timer as NodeJS.Timeout);
        clearImmediate(w.timer as NodeJS.Immediate);
      }
      w.reject(error);
    }
    this.#waiting.clear();
  }

  #later<T>(step: () => T, deadline: number, firstBusy: unknown): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const waiting: Waiting = { timer: undefined, reject };
      this.#waiting.add(waiting);
      let attempt = 0;
      let lastBusy = firstBusy;
      const tryAgain = (): void => {
        waiting.timer = undefined;
        if (!this.#waiting.has(waiting)) return; // cancelled
        try {
          const value = step();
          this.#waiting.delete(waiting);
          resolve(value);
          return;
        } catch (error) {
          if (!isBusy(error)) {
            this.#waiting.delete(waiting);
            reject(error as Error);
            return;
          }
          lastBusy = error;
        }
        schedule();
      };
      const schedule = (): void => {
        const now = performance.now();
        if (now >= deadline) {
          this.#waiting.delete(waiting);
          reject(new BusyDeadlineError(this.timeoutMs, lastBusy));
          return;
        }
        attempt++;
        if (attempt === 1) {
          waiting.timer = setImmediate(tryAgain);
          return;
        }
        const pause = Math.min(2 ** (attempt - 2), MAX_PAUSE_MS);
        const wait = Math.min(pause + Math.random() * (pause / 2), deadline - now);
        waiting.timer = setTimeout(tryAgain, Math.max(0, wait));
      };
      schedule();
    });
  }
}
