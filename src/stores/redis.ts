/**
 * A {@link Ledger} in Redis (node-redis 6): shared by every process on every
 * host that talks to the same Redis. Subpath export `mcp-confirm/stores/redis`,
 * so the root import of the package never loads the driver.
 *
 * ## Keys (all of one namespace share the hash tag `{namespace}`, one cluster slot)
 * ```text
 * mcp-confirm:{NS}:jti:JTI        string  "o|EXPIRES_AT_MS|PRINCIPAL"   outstanding
 *                                         "s|EXPIRES_AT_MS"             tombstone (spent)
 *                                         PX = remaining lifetime + clockSkewMs (garbage collection only)
 * mcp-confirm:{NS}:out            zset    member JTI, score EXPIRES_AT_MS: every outstanding entry
 * mcp-confirm:{NS}:p:PRINCIPAL    zset    the same, for one principal
 * mcp-confirm:{NS}:spent          zset    member JTI, score EXPIRES_AT_MS: tombstones (for their bound)
 * ```
 * `NS` is the `namespace` option, normally the server's audience.
 *
 * ## Atomicity
 * Both operations are one Lua script each (`EVALSHA`, falling back to `EVAL`);
 * Redis runs a script to the end before any other command, so:
 * - **issue** checks that the jti is new, reads the two zset sizes, and at a
 *   bound first removes members whose score (expiry) is `<= nowMs` and reads
 *   again; then refuses (`ERR_CONFIRM_CAPACITY`) or writes the entry and adds
 *   it to both zsets. Two issuers can never both take the last slot.
 * - **spend** reads the entry: missing → `'unknown'`; tombstone →
 *   `'already-spent'`; outstanding → removed from the zsets, then compared with
 *   the caller's `nowMs` (`nowMs >= expiresAtMs` → deleted, `'expired'`), else
 *   replaced by a tombstone (same TTL) → `'spent'`. Exactly one of any number of
 *   concurrent spends, from any process, sees the outstanding value.
 *
 * Expiry is decided only by the caller's clock (`expiresAtMs` vs `nowMs`); the
 * Redis TTL is a garbage collector set to the remaining lifetime plus
 * `clockSkewMs`, so a store clock running ahead by less than that never drops an
 * entry early, and one that drops it anyway makes the spend `'unknown'` (still a
 * refusal). The zsets expire after their longest member.
 *
 * ## Bounds
 * Outstanding entries per principal (`maxPerPrincipal`) and in total
 * (`maxTotal`) are the sizes of the zsets, so they are exact and need no counter
 * that could drift. Tombstones are capped near `maxTotal`: beyond it, the
 * oldest-expiring are deleted (a replay of one is then `'unknown'`, still refused).
 *
 * ## Failure
 * Fails closed: a lost connection (commands are not queued while offline), no
 * answer within `timeoutMs`, a script error or an unexpected reply all reject
 * with `ERR_CONFIRM_LEDGER_UNAVAILABLE`. The client reconnects on its own with
 * capped backoff, and the ledger works again as soon as Redis answers.
 *
 * > [!WARNING]
 * > A spend that times out on our side may still have been applied by Redis: the
 * > confirmation is then used up although the caller was told "unavailable".
 * > That is the safe direction (the human is asked again). Without persistence
 * > (AOF with `appendfsync always`) a Redis restart forgets every entry: all
 * > outstanding confirmations become `'unknown'`, also the safe direction.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { createClient } from 'redis';
import { ConfirmCapacityError, ConfirmLedgerUnavailableError } from '../errors.js';
import type { Ledger, SpendOutcome } from '../ledger/ledger.js';

/**
 * The one method the ledger needs from a Redis client. A node-redis 6
 * `RedisClientType` (from `createClient`) fits; it must be connected already.
 */
export interface RedisCommandClient {
  sendCommand(args: ReadonlyArray<string>, options?: { timeout?: number }): Promise<unknown>;
}

/** Options of {@link RedisLedger}. Give exactly one of `url` and `client`. */
export interface RedisLedgerOptions {
  /**
   * `redis://[[user]:password@]HOST:PORT[/DB]` (or `rediss://` for TLS). The ledger
   * creates, owns and closes its client: no command queue while offline,
   * no per-command driver timeout (the ledger's own `timeoutMs` applies),
   * reconnection forever with backoff capped at 1 s.
   */
  url?: string;
  /**
   * An existing, connected node-redis client. The ledger never closes it. Create it
   * with `disableOfflineQueue: true` so that a lost connection fails at once
   * instead of waiting for `timeoutMs`.
   */
  client?: RedisCommandClient;
  /**
   * Separates deployments sharing one Redis; normally the server's audience.
   * 1 to 200 characters, no `{`, `}` or control characters. Defaults to `'mcp-confirm'`.
   */
  namespace?: string;
  /** Most outstanding confirmations one principal may hold. Defaults to 1,000. */
  maxPerPrincipal?: number;
  /** Most outstanding confirmations in total; also the approximate bound on tombstones. Defaults to 100,000. */
  maxTotal?: number;
  /** Deadline of every issue or spend, in milliseconds. Defaults to 2,000 (2 seconds). */
  timeoutMs?: number;
  /**
   * How far the Redis server's clock may run ahead of the callers', in milliseconds:
   * added to every key's TTL. Defaults to 60,000 (1 minute).
   */
  clockSkewMs?: number;
  /**
   * How long {@link RedisLedger.open} waits for the first connection, in milliseconds.
   * Defaults to 5,000 (5 seconds).
   */
  connectTimeoutMs?: number;
  /** Receives connection errors of an owned client (they are also retried). Defaults to ignoring them. */
  onError?: (error: unknown) => void;
}

const ISSUE_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 'duplicate' end
local now = tonumber(ARGV[4])
local maxPer = tonumber(ARGV[6])
local maxTotal = tonumber(ARGV[7])
if redis.call('ZCARD', KEYS[3]) >= maxPer or redis.call('ZCARD', KEYS[2]) >= maxTotal then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  if redis.call('ZCARD', KEYS[3]) >= maxPer then return 'capacity-principal' end
  if redis.call('ZCARD', KEYS[2]) >= maxTotal then return 'capacity-total' end
end
local px = tonumber(ARGV[5])
redis.call('SET', KEYS[1], 'o|' .. ARGV[3] .. '|' .. ARGV[2], 'PX', px)
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
if redis.call('PTTL', KEYS[2]) < px then redis.call('PEXPIRE', KEYS[2], px) end
if redis.call('PTTL', KEYS[3]) < px then redis.call('PEXPIRE', KEYS[3], px) end
return 'issued'
`;

const SPEND_SCRIPT = `
local v = redis.call('GET', KEYS[1])
if not v then return 'unknown' end
local kind = string.sub(v, 1, 2)
if kind == 's|' then return 'already-spent' end
local bar = string.find(v, '|', 3, true)
if kind ~= 'o|' or not bar then return redis.error_reply('ERR mcp-confirm: unexpected ledger value') end
local expText = string.sub(v, 3, bar - 1)
local exp = tonumber(expText)
if not exp then return redis.error_reply('ERR mcp-confirm: unexpected ledger value') end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', ARGV[3] .. string.sub(v, bar + 1), ARGV[1])
local now = tonumber(ARGV[2])
if now >= exp then
  redis.call('DEL', KEYS[1])
  return 'expired'
end
redis.call('SET', KEYS[1], 's|' .. expText, 'KEEPTTL')
redis.call('ZADD', KEYS[3], exp, ARGV[1])
local ttl = redis.call('PTTL', KEYS[1])
if redis.call('PTTL', KEYS[3]) < ttl then redis.call('PEXPIRE', KEYS[3], ttl) end
local maxTotal = tonumber(ARGV[4])
if redis.call('ZCARD', KEYS[3]) > maxTotal then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  local excess = redis.call('ZCARD', KEYS[3]) - maxTotal
  if excess > 0 then
    local popped = redis.call('ZPOPMIN', KEYS[3], excess)
    for i = 1, #popped, 2 do redis.call('DEL', ARGV[5] .. popped[i]) end
  end
end
return 'spent'
`;

const sha1 = (text: string): string => createHash('sha1').update(text).digest('hex');
const ISSUE_SHA = sha1(ISSUE_SCRIPT);
const SPEND_SHA = sha1(SPEND_SCRIPT);

/** Per-command options: no driver timeout (node-redis 6 defaults to 5 s, at ~3× the CPU cost). */
const COMMAND_OPTIONS = { timeout: 0 } as const;

const SPEND_OUTCOMES: ReadonlySet<string> = new Set<SpendOutcome>(['spent', 'already-spent', 'unknown', 'expired']);

function positiveInteger(name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v <= 0) throw new RangeError(`${name} must be a positive integer, got ${String(value)}`);
  return v;
}

function nonNegativeInteger(name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`${name} must be a non-negative integer, got ${String(value)}`);
  return v;
}

function finiteMs(name: string, value: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new RangeError(`${name} must be a finite number of milliseconds`);
  return value;
}

function replyText(reply: unknown): string | undefined {
  if (typeof reply === 'string') return reply;
  if (Buffer.isBuffer(reply)) return reply.toString('utf8');
  return undefined;
}

class DeadlineError extends Error {
  constructor(timeoutMs: number) {
    super(`no answer from Redis within ${timeoutMs} ms`);
    this.name = 'DeadlineError';
  }
}

interface Pending {
  readonly deadline: number;
  readonly reject: (error: Error) => void;
}

/** Creates the client an owned ledger uses. */
function ownedClient(url: string, options: { connectTimeoutMs: number; onError: (error: unknown) => void }) {
  const client = createClient({
    url,
    // Fail at once while disconnected instead of queueing until a reconnect.
    disableOfflineQueue: true,
    // No per-command driver timeout: the ledger enforces its own deadline more cheaply.
    commandOptions: { timeout: 0 },
    socket: {
      connectTimeout: options.connectTimeoutMs,
      keepAlive: true,
      noDelay: true,
      // Never give up: capped exponential backoff with jitter, whatever the cause.
      reconnectStrategy: (retries: number) => Math.min(25 * 2 ** Math.min(retries, 10), 1_000) + Math.floor(Math.random() * 50),
    },
  });
  // Without a listener an 'error' event would crash the process.
  client.on('error', options.onError);
  return client;
}

type OwnedClient = ReturnType<typeof ownedClient>;

/**
 * A ledger in Redis, shared by every process and host using the same Redis and namespace.
 *
 * @example
 * import { RedisLedger } from 'mcp-confirm/stores/redis';
 * const ledger = await RedisLedger.open({ url: 'redis://127.0.0.1:6379/0', namespace: 'files.example.com' });
 * await ledger.issue(jti, principal, Date.now() + 300_000);
 * await ledger.spend(jti, Date.now()); // 'spent' for exactly one caller anywhere
 */
export class RedisLedger implements Ledger {
  readonly kind = 'redis';
  readonly shared = true;
  readonly namespace: string;
  readonly maxPerPrincipal: number;
  readonly maxTotal: number;
  readonly timeoutMs: number;
  readonly clockSkewMs: number;
  readonly connectTimeoutMs: number;
  readonly #client: RedisCommandClient;
  readonly #owned: OwnedClient | undefined;
  readonly #prefix: string;
  readonly #pending = new Set<Pending>();
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  /**
   * Creates the ledger. With `url`, the owned client starts connecting in the
   * background; until it is connected every operation rejects with
   * `ERR_CONFIRM_LEDGER_UNAVAILABLE` (use {@link RedisLedger.open} to wait).
   *
   * @param options - see {@link RedisLedgerOptions}.
   * @throws {TypeError} when not exactly one of `url` and `client` is given, or `url` is not a `redis:`/`rediss:` URL.
   * @throws {RangeError} when a bound, `timeoutMs`, `clockSkewMs` or `connectTimeoutMs` is not a valid integer,
   *   or `namespace` is empty, longer than 200 characters, or contains `{`, `}` or a control character.
   */
  constructor(options: RedisLedgerOptions) {
    if ((options.url === undefined) === (options.client === undefined)) throw new TypeError('give exactly one of url and client');
    const namespace = options.namespace ?? 'mcp-confirm';
    // eslint-disable-next-line no-control-regex
    if (typeof namespace !== 'string' || namespace.length === 0 || namespace.length > 200 || /[{}\u0000-\u001f\u007f]/.test(namespace)) {
      throw new RangeError('namespace must be 1 to 200 characters without {, } or control characters');
    }
    this.namespace = namespace;
    this.maxPerPrincipal = positiveInteger('maxPerPrincipal', options.maxPerPrincipal, 1_000);
    this.maxTotal = positiveInteger('maxTotal', options.maxTotal, 100_000);
    this.timeoutMs = positiveInteger('timeoutMs', options.timeoutMs, 2_000);
    this.clockSkewMs = nonNegativeInteger('clockSkewMs', options.clockSkewMs, 60_000);
    this.connectTimeoutMs = positiveInteger('connectTimeoutMs', options.connectTimeoutMs, 5_000);
    this.#prefix = `mcp-confirm:{${namespace}}:`;

    if (options.url !== undefined) {
      let protocol: string;
      try {
        protocol = new URL(options.url).protocol;
      } catch {
        throw new TypeError('url must be a redis:// or rediss:// URL');
      }
      if (protocol !== 'redis:' && protocol !== 'rediss:') throw new TypeError('url must be a redis:// or rediss:// URL');
      const onError = options.onError ?? (() => {});
      const client = ownedClient(options.url, { connectTimeoutMs: this.connectTimeoutMs, onError });
      this.#owned = client;
      this.#client = client;
      // Retries forever in the background (see reconnectStrategy) until close().
      void client.connect().catch(onError);
    } else {
      const client = options.client;
      if (typeof client?.sendCommand !== 'function') throw new TypeError('client must have a sendCommand method');
      this.#owned = undefined;
      this.#client = client;
    }
  }

  /**
   * Creates a ledger and, for `url`, waits until its client is connected.
   *
   * @param options - see {@link RedisLedgerOptions}.
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when no connection is made within
   *   `connectTimeoutMs` (the client is closed again).
   * @throws {TypeError | RangeError} for bad options, as the constructor.
   */
  static async open(options: RedisLedgerOptions): Promise<RedisLedger> {
    const ledger = new RedisLedger(options);
    const client = ledger.#owned;
    if (client === undefined || client.isReady) return ledger;
    let timer: NodeJS.Timeout | undefined;
    const ready = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), ledger.connectTimeoutMs);
      client.once('ready', () => resolve(true));
    });
    const ok = await ready;
    clearTimeout(timer);
    if (!ok && !client.isReady) {
      await ledger.close();
      throw new ConfirmLedgerUnavailableError({ cause: new DeadlineError(ledger.connectTimeoutMs) });
    }
    return ledger;
  }

  /** `true` when an owned client is connected and ready (always `true` for a given client). */
  get isReady(): boolean {
    return this.#owned === undefined ? !this.#closed : this.#owned.isReady;
  }

  /**
   * Records a new outstanding confirmation (see {@link Ledger.issue}); one Lua script.
   *
   * @param jti - the random nonce; part of the key.
   * @param principal - opaque tag of who asked; bounded by `maxPerPrincipal`.
   * @param expiresAtMs - Unix time in milliseconds at which the entry expires.
   * @param nowMs - the caller's current time in milliseconds. Defaults to `Date.now()`.
   * @throws {ConfirmCapacityError} `ERR_CONFIRM_CAPACITY` when the principal or the namespace is full.
   * @throws {RangeError} when `jti` was already issued (outstanding or tombstone), or a time is not finite.
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when Redis is unreachable, does not
   *   answer within `timeoutMs`, fails, or answers something unexpected.
   */
  async issue(jti: string, principal: string, expiresAtMs: number, nowMs: number = Date.now()): Promise<void> {
    finiteMs('expiresAtMs', expiresAtMs);
    finiteMs('nowMs', nowMs);
    const remaining = Math.max(0, Math.ceil(expiresAtMs - nowMs));
    const px = Math.max(1, remaining + this.clockSkewMs);
    const reply = await this.#script(
      ISSUE_SHA,
      ISSUE_SCRIPT,
      [this.#prefix + 'jti:' + jti, this.#prefix + 'out', this.#prefix + 'p:' + principal],
      [jti, principal, String(expiresAtMs), String(nowMs), String(px), String(this.maxPerPrincipal), String(this.maxTotal)],
    );
    switch (reply) {
      case 'issued':
        return;
      case 'duplicate':
        throw new RangeError('jti already issued');
      case 'capacity-principal':
        throw new ConfirmCapacityError('principal');
      case 'capacity-total':
        throw new ConfirmCapacityError('total');
      default:
        throw new ConfirmLedgerUnavailableError({ cause: new TypeError('unexpected reply to issue') });
    }
  }

  /**
   * Atomically redeems a confirmation (see {@link Ledger.spend}); one Lua script.
   *
   * @param jti - the nonce given to {@link issue}.
   * @param nowMs - the caller's current time in milliseconds; `nowMs >= expiresAtMs` is `'expired'`.
   * @returns `'spent'` for exactly one caller; `'already-spent'`, `'unknown'` or `'expired'` otherwise.
   * @throws {RangeError} when `nowMs` is not finite.
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when Redis is unreachable, does not
   *   answer within `timeoutMs`, fails, or answers something unexpected.
   */
  async spend(jti: string, nowMs: number): Promise<SpendOutcome> {
    finiteMs('nowMs', nowMs);
    const reply = await this.#script(
      SPEND_SHA,
      SPEND_SCRIPT,
      [this.#prefix + 'jti:' + jti, this.#prefix + 'out', this.#prefix + 'spent'],
      [jti, String(nowMs), this.#prefix + 'p:', String(this.maxTotal), this.#prefix + 'jti:'],
    );
    if (reply !== undefined && SPEND_OUTCOMES.has(reply)) return reply as SpendOutcome;
    throw new ConfirmLedgerUnavailableError({ cause: new TypeError('unexpected reply to spend') });
  }

  /**
   * Stops using Redis. Closes the client only if the ledger created it. Idempotent;
   * later calls reject with `ERR_CONFIRM_LEDGER_UNAVAILABLE`.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const p of this.#pending) p.reject(new Error('ledger closed'));
    this.#pending.clear();
    this.#stopTimer();
    const client = this.#owned;
    if (client === undefined) return;
    if (client.isReady) {
      let timer: NodeJS.Timeout | undefined;
      const graceful = client.close().then(
        () => true,
        () => false,
      );
      const late = new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), this.timeoutMs);
      });
      const done = await Promise.race([graceful, late]);
      clearTimeout(timer);
      if (!done && client.isOpen) client.destroy();
    } else if (client.isOpen) {
      client.destroy(); // stops the reconnect loop
    }
  }

  /** Runs a script by hash (loading it on `NOSCRIPT`) under one deadline; returns its text reply. */
  async #script(sha: string, script: string, keys: string[], args: string[]): Promise<string | undefined> {
    if (this.#closed) throw new ConfirmLedgerUnavailableError({ cause: new Error('ledger closed') });
    const n = String(keys.length);
    try {
      const reply = await this.#withDeadline(async () => {
        try {
          return await this.#client.sendCommand(['EVALSHA', sha, n, ...keys, ...args], COMMAND_OPTIONS);
        } catch (error) {
          if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
          return await this.#client.sendCommand(['EVAL', script, n, ...keys, ...args], COMMAND_OPTIONS);
        }
      });
      return replyText(reply);
    } catch (error) {
      throw new ConfirmLedgerUnavailableError({ cause: error });
    }
  }

  /**
   * Settles with `work()` or rejects once `timeoutMs` has passed. One shared
   * interval timer checks the pending operations (in start order, so in deadline
   * order) instead of one timer per operation.
   */
  #withDeadline<T>(work: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const pending: Pending = { deadline: performance.now() + this.timeoutMs, reject };
      this.#pending.add(pending);
      this.#startTimer();
      let running: Promise<T>;
      try {
        running = work();
      } catch (error) {
        this.#pending.delete(pending);
        reject(error);
        return;
      }
      running.then(
        (value) => {
          if (this.#pending.delete(pending)) resolve(value);
        },
        (error: unknown) => {
          if (this.#pending.delete(pending)) reject(error);
        },
      );
    });
  }

  #startTimer(): void {
    if (this.#timer !== undefined) return;
    const tick = Math.min(100, Math.max(5, Math.floor(this.timeoutMs / 20)));
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
      p.reject(new DeadlineError(this.timeoutMs));
    }
    if (this.#pending.size === 0) this.#stopTimer();
  }
}
