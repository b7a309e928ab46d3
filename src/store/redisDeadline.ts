/**
 * The deadline command runner of {@link RedisLedger} (src/store/redis.ts): sends one command or
 * script per operation and settles it once, by its reply, its failure, the deadline (`timeoutMs`)
 * or {@link DeadlineRunner.close}. One shared interval timer checks the operations in flight (kept
 * in start order, so in deadline order) instead of one timer each; the event loop is never blocked.
 *
 * @module
 */
import { performance } from 'node:perf_hooks';
import { ConfirmLedgerUnavailableError } from '../errors.js';

/**
 * The one method the ledger needs from a Redis client. A node-redis 6
 * `RedisClientType` (from `createClient`) fits; it must be connected already.
 */
export interface RedisCommandClient {
  sendCommand(args: ReadonlyArray<string>, options?: { timeout?: number }): Promise<unknown>;
}

/** Per-command options: no driver timeout (node-redis 6 defaults to 5 s, at ~3× the CPU cost). */
const COMMAND_OPTIONS = { timeout: 0 } as const;

function replyText(reply: unknown): string | undefined {
  if (typeof reply === 'string') return reply;
  if (Buffer.isBuffer(reply)) return reply.toString('utf8');
  return undefined;
}

/** No answer within the deadline (the cause of an `ERR_CONFIRM_LEDGER_UNAVAILABLE`). */
export class DeadlineError extends Error {
  constructor(timeoutMs: number) {
    super(`no answer from Redis within ${timeoutMs} ms`);
    this.name = 'DeadlineError';
  }
}

/** One operation in flight: settled once, by its reply, its failure, the deadline or close(). */
interface Pending {
  readonly deadline: number;
  readonly resolve: (reply: string | undefined) => void;
  readonly reject: (error: Error) => void;
}

/** Runs commands against one client, each under the deadline `timeoutMs`. */
export class DeadlineRunner {
  readonly #client: RedisCommandClient;
  readonly #timeoutMs: number;
  readonly #pending = new Set<Pending>();
  #timer: NodeJS.Timeout | undefined;
  #closedFlag = false;

  /**
   * @param client - the connected (or connecting) client commands are sent to.
   * @param timeoutMs - the deadline of every operation, in milliseconds.
   */
  constructor(client: RedisCommandClient, timeoutMs: number) {
    this.#client = client;
    this.#timeoutMs = timeoutMs;
  }

  /** `true` once {@link close} was called. */
  get closed(): boolean {
    return this.#closedFlag;
  }

  /** Rejects every operation in flight and every later one with `ERR_CONFIRM_LEDGER_UNAVAILABLE`. Idempotent. */
  close(): void {
    if (this.#closedFlag) return;
    this.#closedFlag = true;
    for (const p of this.#pending) p.reject(new ConfirmLedgerUnavailableError({ cause: new Error('ledger closed') }));
    this.#pending.clear();
    this.#stopTimer();
  }

  /**
   * Runs a script by hash (sending it with `EVAL` on `NOSCRIPT`) under one
   * deadline of `timeoutMs`; resolves with its text reply (`undefined` for any
   * other reply type). One shared interval timer checks the pending operations
   * (kept in start order, so in deadline order) instead of one timer each.
   *
   * @throws {ConfirmLedgerUnavailableError} on any failure, including the deadline.
   */
  script(sha: string, script: string, keys: string[], args: string[]): Promise<string | undefined> {
    return this.run(['EVALSHA', sha, String(keys.length), ...keys, ...args], script);
  }

  /** {@link script} for a command already built: `['EVALSHA', sha, numkeys, ...keys, ...args]`. */
  run(command: string[], script: string): Promise<string | undefined> {
    // Hot path: no named closures per call (cheaper, also under tsx/esbuild keepNames).
    return new Promise<string | undefined>((resolve, reject) => {
      if (this.#closedFlag) {
        reject(new ConfirmLedgerUnavailableError({ cause: new Error('ledger closed') }));
        return;
      }
      const pending: Pending = { deadline: performance.now() + this.#timeoutMs, resolve, reject };
      this.#pending.add(pending);
      this.#startTimer();
      this.#send(command, pending, script);
    });
  }

  /**
   * Sends `command` for `pending`; on `NOSCRIPT` (when `script` is given) resends it as `EVAL`,
   * also after `pending` was settled by its deadline (see "Failure" in the module docs).
   */
  #send(command: string[], pending: Pending, script: string | undefined): void {
    let sent: Promise<unknown>;
    try {
      sent = this.#client.sendCommand(command, COMMAND_OPTIONS);
    } catch (error) {
      this.#fail(pending, error);
      return;
    }
    sent.then(
      (reply) => {
        if (this.#pending.delete(pending)) pending.resolve(replyText(reply));
      },
      (error: unknown) => {
        // First use on this server (or after SCRIPT FLUSH): send the script itself, and do so even when the
        // caller was already refused at the deadline, so that a command that reached Redis is carried out
        // whether or not Redis had the script cached (the outcome never depends on the script cache).
        if (script !== undefined && error instanceof Error && error.message.startsWith('NOSCRIPT')) {
          command[0] = 'EVAL';
          command[1] = script;
          this.#send(command, pending, undefined);
        } else {
          this.#fail(pending, error);
        }
      },
    );
  }

  #fail(pending: Pending, cause: unknown): void {
    if (this.#pending.delete(pending)) pending.reject(new ConfirmLedgerUnavailableError({ cause }));
  }

  #startTimer(): void {
    if (this.#timer !== undefined) return;
    const tick = Math.min(100, Math.max(5, Math.floor(this.#timeoutMs / 20)));
    this.#timer = setInterval(() => this.#expire(), tick);
    this.#timer.unref();
  }

  #stopTimer(): void {
    if (this.#timer === undefined) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #expire(): void {
    const now = performance.now();
    for (const p of this.#pending) {
      if (p.deadline > now) break;
      this.#pending.delete(p);
      p.reject(new ConfirmLedgerUnavailableError({ cause: new DeadlineError(this.#timeoutMs) }));
    }
    if (this.#pending.size === 0) this.#stopTimer();
  }
}
