/**
 * A {@link Ledger} in Redis (node-redis 6): shared by every process on every
 * host that talks to the same Redis. Subpath export `mcp-confirm/stores/redis`,
 * so the root import of the package never loads the driver.
 *
 * ## Keys (all of one namespace share the hash tag `{namespace}`, one cluster slot)
 * ```text
 * mcp-confirm:{NS}:jti:JTI        string  "o|EXPIRES_AT_MS|PRINCIPAL"   outstanding
 *                                         "s|"                          tombstone (spent)
 *                                         PX = remaining lifetime + clockSkewMs (garbage collection only)
 * mcp-confirm:{NS}:out            zset    member JTI, score EXPIRES_AT_MS: every outstanding entry
 * mcp-confirm:{NS}:p:PRINCIPAL    zset    the same, for one principal
 * mcp-confirm:{NS}:spent-order    list    JTI of every spend, oldest first: tombstones (for their bound)
 * mcp-confirm:{NS}:ah:PATH        hash    trail, seq, mac: the head of the audit trail file at PATH
 *                                         (no TTL: kept as long as the trail may be verified)
 * mcp-confirm:{NS}:gr:ID          hash    a grant: id, principal, aud, tool, scope, binding, summary,
 *                                         policy, approver, max, left, created, exp, revoked (0|1), bk
 *                                         PX = remaining lifetime + clockSkewMs
 * mcp-confirm:{NS}:gr-live        zset    member ID, score EXPIRES_AT_MS: every live grant
 * mcp-confirm:{NS}:gr-p:PRINCIPAL zset    the same, for one principal
 * mcp-confirm:{NS}:gr-b:BK        zset    the same, for one principal and binding (BK: unpadded
 *                                         base64url SHA-256 of the JSON [principal, binding]):
 *                                         what the bound maxGrantsPerPrincipal counts
 * mcp-confirm:{NS}:gr-ended       zset    the grants ended by their last use or revocation, kept
 *                                         (with their hash) until their expiry, at most maxGrants
 * mcp-confirm:{NS}:pl:ID          hash    a plan: id, principal, aud, approver, created, exp, slots,
 *                                         left, binding, bk, and per slot I: k:I (key), t:I (tool), i:I (identity),
 *                                         x:KEY = I while unused; PX as a grant's; deleted at left 0
 * mcp-confirm:{NS}:pl-live        zset    member ID, score EXPIRES_AT_MS: every live plan
 * mcp-confirm:{NS}:pl-p:PRINCIPAL zset    the same, for one principal
 * mcp-confirm:{NS}:pl-b:BK        zset    the same, for one principal and binding: what the bound
 *                                         maxPlansPerPrincipal counts
 * mcp-confirm:{NS}:pl-s:KEY       zset    member ID, score EXPIRES_AT_MS: the plans holding an unused
 *                                         slot with that key
 * ```
 * The zsets of grants and plans get a TTL as the ledger's (a record's TTL plus 24 hours when they
 * hold a shorter one), so they never expire before a record they count.
 * Earlier scripts wrote tombstones as `"s|EXPIRES_AT_MS"`; they are read as tombstones
 * (`'already-spent'`) and evicted like the new ones, so a store written by an earlier
 * version keeps working, and earlier and current processes may share it (an earlier
 * process reads `"s|"` as a tombstone too). Version 0.1.0 also kept the tombstones'
 * bound in a zset `mcp-confirm:{NS}:spent`; it is no longer read or written, and goes
 * away with its own 24-hour TTL.
 * `NS` is the `namespace` option, normally the server's audience.
 *
 * ## Atomicity
 * Both operations are one Lua script each (`EVALSHA`, falling back to `EVAL`);
 * Redis runs a script to the end before any other command, so:
 * - **issue** reads the two zset sizes, and at a bound first removes members
 *   whose score (expiry) is `<= nowMs` and reads again; then refuses
 *   (`ERR_CONFIRM_CAPACITY`), or writes the entry with `SET NX` (a jti already
 *   there, outstanding or tombstone, is refused) and adds it to both zsets. Two
 *   issuers can never both take the last slot.
 * - **spend** writes the tombstone and reads what it replaced in one command
 *   (`SET … XX GET KEEPTTL`): nothing → `'unknown'` (nothing written); a
 *   tombstone → `'already-spent'`; outstanding → removed from the zsets, then
 *   compared with the caller's `nowMs` (`nowMs >= expiresAtMs` → deleted,
 *   `'expired'`), else its jti is appended to the spend list → `'spent'`; any
 *   other value is put back as it was and the spend fails. Exactly one of any
 *   number of concurrent spends, from any process, reads the outstanding value.
 *
 * Each operation is one round trip: one `EVALSHA` (the script text is sent only
 * after a `NOSCRIPT` answer). The key names and bounds are constants of each
 * ledger's script text (so Redis caches two scripts per namespace and bounds),
 * and a call sends only the entry key and what changes: issue 4 arguments
 * (principal, expiresAtMs, nowMs, TTL), spend 1 (nowMs). A script's cost is
 * mostly Redis's fixed cost per script call plus one per `redis.call`, so the
 * scripts call as few commands as they can: issue 7 (ZCARD, SET NX PX, ZADD and
 * PTTL, the zset ones twice), spend 4 (SET … XX GET KEEPTTL, ZREM twice, RPUSH);
 * the tombstones' bound is an O(1) list push whose reply is the new length (no
 * separate count), and its evictions come in batches (see "Bounds").
 *
 * Expiry is decided only by the caller's clock (`expiresAtMs` vs `nowMs`); the
 * Redis TTL is a garbage collector set to the remaining lifetime plus
 * `clockSkewMs`, so a store clock running ahead by less than that never drops an
 * entry early, and one that drops it anyway makes the spend `'unknown'` (still a
 * refusal). A zset whose TTL an issue finds shorter than the new entry's (or
 * unset, when the zset was just created) gets that entry's TTL plus 24 hours;
 * otherwise its TTL is left alone (a PTTL read, cheaper than a PEXPIRE on every
 * issue). A zset therefore never expires before an entry it counts, and the
 * zsets of idle principals and namespaces go away at most 24 hours after their
 * last entry's. The spend list gets a 24-hour TTL when it is created.
 *
 * ## Bounds
 * Outstanding entries per principal (`maxPerPrincipal`) and in total
 * (`maxTotal`) are the sizes of the zsets, so they are exact and need no counter
 * that could drift. Tombstones are capped at `maxTotal` by the spend list: when a
 * spend takes it beyond `maxTotal`, the oldest spends are popped and their
 * tombstones deleted (a replay of one is then `'unknown'`, still refused), as the
 * memory ledger drops its oldest, in one batch down to `maxTotal - ⌊maxTotal / 1024⌋`
 * (99,903 of the default 100,000; exactly `maxTotal` below 1,024), so that at the
 * cap one spend in 98 evicts instead of every spend. The list
 * may also hold jtis whose tombstone Redis already expired; they count toward the
 * cap (so it never lets more through) until popped. When the list itself expires
 * (24 hours after it was created), the tombstones it tracked are no longer counted
 * and go away with their own TTL (at most the entry's lifetime plus `clockSkewMs`):
 * meanwhile up to 2 × `maxTotal` tombstones exist (for entries living under 24 hours).
 *
 * > [!NOTE]
 * > Processes of an earlier version sharing the store set the zsets' TTL to
 * > 24 hours on every issue; while they run, an entry living longer than 24 hours
 * > may stop counting toward the bounds 24 hours after their last issue (single
 * > use is unaffected).
 *
 * Grants and plans ({@link GrantStore}) are one script per step too: `spendGranting` and
 * `spendPlanning` run the ledger's spend script text, unchanged, as a local function of the script
 * that then creates the record, so the spend and the creation are one atomic step (see
 * redisScripts.ts). Their bounds are the sizes of the `-live` and `-p:` zsets (expired members
 * removed first), exact as the ledger's.
 *
 * ## Failure
 * Fails closed: a lost connection (commands are not queued while offline), no
 * answer within `timeoutMs`, a script error or an unexpected reply all reject
 * with `ERR_CONFIRM_LEDGER_UNAVAILABLE`. The client reconnects on its own with
 * capped backoff, and the ledger works again as soon as Redis answers.
 *
 * Nothing waits on the event loop: every call is a promise settled by Redis's
 * reply or by the deadline (one shared interval timer), so while Redis is frozen
 * (`DEBUG SLEEP`, a stopped process, a long script, a stalled network) the process
 * keeps answering other requests, and each ledger call is refused at its own
 * deadline.
 *
 * > [!WARNING]
 * > A call refused at its deadline has usually already reached Redis, which runs
 * > it when it resumes: a spend is then applied (the confirmation is used up
 * > although the caller was told "unavailable"; its retry is refused as already
 * > used, and the human is asked again: the safe direction), and an issue is
 * > applied too (an entry nobody holds, counted against the principal's bound
 * > until it expires). This does not depend on Redis's script cache: a script
 * > Redis no longer has (`NOSCRIPT`, after a restart or `SCRIPT FLUSH`) is sent
 * > again with `EVAL` even after the deadline. It is not applied only when the
 * > connection is lost first, or the ledger was closed before Redis answered.
 * > Durability decides what a Redis restart or failover does. Without any
 * > persistence every entry is forgotten: outstanding confirmations become
 * > `'unknown'` (safe). With AOF `appendfsync everysec`, RDB snapshots, or a
 * > failover to a replica that had not yet received the last writes, an issue
 * > can survive while the spend that followed it is lost, and that confirmation
 * > could then be spent a second time. Use no persistence, or AOF with
 * > `appendfsync always` on a single primary.
 *
 * @module mcp-confirm/stores/redis
 */
import { createHash } from 'node:crypto';
import { ConfirmCapacityError, ConfirmLedgerUnavailableError } from '../errors.js';
import type { ConfirmStore } from './confirmStore.js';
import type { Ledger, SpendOutcome } from './ledger.js';
import {
  checkAttachGrant,
  checkNewApproval,
  checkVote,
  parseApprovals,
  requiredOf,
  counterAccepted,
  decidedScope,
  MAX_CHALLENGES_PER_APPROVAL,
  type ApprovalDecision,
  type ApprovalRecord,
  type ApprovalStatus,
  type ApprovalStore,
  type ApprovalVote,
  type CountOutcome,
  type DecideOutcome,
  type NewApproval,
} from './approvalStore.js';
import { positiveInteger } from './ledger.js';
import { checkAuditHead, checkAuditHeadPath, isAuditHead, type AuditHead, type AuditHeadStore } from './auditHeads.js';
import { redisDriver } from './driver.js';
import { DeadlineError, DeadlineRunner, type RedisCommandClient } from './redisDeadline.js';
import {
  APPROVAL_ATTACH_GRANT_SCRIPT,
  APPROVAL_ATTACH_GRANT_SHA,
  APPROVAL_COUNT_SCRIPT,
  APPROVAL_COUNT_SHA,
  APPROVAL_DECIDE_SCRIPT,
  APPROVAL_DECIDE_SHA,
  APPROVAL_OPEN_QUORUM_SCRIPT,
  APPROVAL_OPEN_QUORUM_SHA,
  APPROVAL_OPEN_SCRIPT,
  APPROVAL_OPEN_SHA,
  APPROVAL_READ_SCRIPT,
  APPROVAL_READ_SHA,
  AUDIT_HEAD_READ_SCRIPT,
  AUDIT_HEAD_READ_SHA,
  AUDIT_HEAD_RECORD_SCRIPT,
  AUDIT_HEAD_RECORD_SHA,
  CHALLENGE_PUT_SCRIPT,
  CHALLENGE_PUT_SHA,
  CHALLENGE_TAKE_SCRIPT,
  CHALLENGE_TAKE_SHA,
  COUNTER_SCRIPT,
  COUNTER_SHA,
  findGrantsScript,
  issueScript,
  revokeGrantScript,
  sha1,
  spendGrantingScript,
  spendPlanningScript,
  spendScript,
  takeGrantUseScript,
  takePlanSlotScript,
} from './redisScripts.js';
import {
  LINK_FINISH_SCRIPT,
  LINK_FINISH_SHA,
  LINK_OPEN_SCRIPT,
  LINK_OPEN_SHA,
  LINK_READ_SCRIPT,
  LINK_READ_SHA,
} from './redisLinkScripts.js';
import { checkNewLinkApproval, type LinkedApproval, type NewLinkApproval, type OpenLinkOutcome } from './linkStore.js';
import {
  checkGrantQuery,
  checkNewGrant,
  checkNewPlan,
  checkNowMs,
  DEFAULT_MAX_GRANTS,
  DEFAULT_MAX_GRANTS_PER_PRINCIPAL,
  oldestFirst,
  type Grant,
  type GrantQuery,
  type GrantStore,
  type NewGrant,
  type NewPlan,
  type SpendCreating,
  type TakeGrantOutcome,
  type TakenPlanSlot,
} from './grantStore.js';

export type { RedisCommandClient } from './redisDeadline.js';

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
   * 1 to 200 characters, well-formed (no lone surrogate: Redis keys are UTF-8, where every lone
   * surrogate becomes U+FFFD, so `'\uD800'` and `'\uDFFF'` would share one store), no `{`, `}` or
   * control characters. Defaults to `'mcp-confirm'`.
   */
  namespace?: string;
  /** Most outstanding confirmations one principal may hold. Defaults to 1,000. */
  maxPerPrincipal?: number;
  /** Most outstanding confirmations in total; also the approximate bound on tombstones. Defaults to 100,000. */
  maxTotal?: number;
  /**
   * Deadline of every issue or spend, in milliseconds: a call with no answer by then is refused with
   * `ERR_CONFIRM_LEDGER_UNAVAILABLE` (the event loop is never blocked meanwhile; Redis may still apply
   * the call later, see "Failure"). Defaults to 2,000 (2 seconds).
   */
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
  /** Most live grants one principal may hold under one binding (see {@link GrantStore}). Defaults to 16. */
  maxGrantsPerPrincipal?: number;
  /**
   * Most live grants in the namespace; also the bound on ended grants kept until their expiry (so
   * that a take can say `'exhausted'` or `'revoked'`). Defaults to 10,000.
   */
  maxGrants?: number;
  /** Most live plans one principal may hold under one binding. Defaults to 16. */
  maxPlansPerPrincipal?: number;
  /** Most live plans in the namespace. Defaults to 10,000. */
  maxPlans?: number;
}

const SPEND_OUTCOMES: ReadonlySet<string> = new Set<SpendOutcome>(['spent', 'already-spent', 'unknown', 'expired']);

function nonNegativeInteger(name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v < 0)
    throw new RangeError(`${name} must be a non-negative integer, got ${String(value)}`);
  return v;
}

function finiteMs(name: string, value: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw new RangeError(`${name} must be a finite number of milliseconds`);
  return value;
}

/**
 * The name part of the zset counting the live grants (or plans) of one principal and binding:
 * unpadded base64url SHA-256 of the JSON array `[principal, binding]` (43 characters, whatever
 * their lengths; the JSON keeps the two apart).
 */
function boundKey(record: { principal: string; binding: string }): string {
  return createHash('sha256')
    .update(JSON.stringify([record.principal, record.binding]))
    .digest('base64url');
}

/** The grant and plan scripts of a ledger, by the method that runs each. */
type GrantScriptName =
  'spendGranting' | 'takeGrantUse' | 'revokeGrant' | 'findGrants' | 'spendPlanning' | 'takePlanSlot';

/**
 * Reads the reply of a spendGranting or spendPlanning script.
 *
 * @throws {RangeError} for `'duplicate'` (nothing spent).
 * @throws {ConfirmLedgerUnavailableError} for any other unexpected reply.
 */
function spendCreating(reply: string | undefined, record: 'grant' | 'plan', method: string): SpendCreating {
  if (reply === 'duplicate') throw new RangeError(`${record} id already in the store`);
  const bar = reply === undefined ? -1 : reply.indexOf('|');
  const spend = bar < 0 ? '' : reply!.slice(0, bar);
  const created = bar < 0 ? '' : reply!.slice(bar + 1);
  if (
    SPEND_OUTCOMES.has(spend) &&
    (spend === 'spent' ? created === 'created' || created === 'full' : created === 'none')
  ) {
    return { spend: spend as SpendOutcome, created: created as SpendCreating['created'] };
  }
  throw new ConfirmLedgerUnavailableError({ cause: new TypeError(`unexpected reply to ${method}`) });
}

/** Creates the client an owned ledger uses. */
function ownedClient(url: string, options: { connectTimeoutMs: number; onError: (error: unknown) => void }) {
  const { createClient } = redisDriver();
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
      reconnectStrategy: (retries: number) =>
        Math.min(25 * 2 ** Math.min(retries, 10), 1_000) + Math.floor(Math.random() * 50),
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
 * ```ts
 * import { randomUUID } from 'node:crypto';
 * import { RedisLedger } from 'mcp-confirm/stores/redis';
 *
 * const ledger = await RedisLedger.open({ url: 'redis://127.0.0.1:6379/0', namespace: 'files.example.com' });
 * const jti = randomUUID();
 * await ledger.issue(jti, 'alice@example.com', Date.now() + 300_000);
 * await ledger.spend(jti, Date.now()); // 'spent' for exactly one caller anywhere
 * ```
 */
export class RedisLedger implements ConfirmStore {
  readonly kind = 'redis';
  readonly shared = true;
  readonly namespace: string;
  readonly maxPerPrincipal: number;
  readonly maxTotal: number;
  readonly timeoutMs: number;
  readonly clockSkewMs: number;
  readonly connectTimeoutMs: number;
  readonly maxGrantsPerPrincipal: number;
  readonly maxGrants: number;
  readonly maxPlansPerPrincipal: number;
  readonly maxPlans: number;
  readonly #runner: DeadlineRunner;
  readonly #owned: OwnedClient | undefined;
  readonly #prefix: string;
  readonly #entryPrefix: string;
  readonly #issueScript: string;
  readonly #issueSha: string;
  readonly #spendScript: string;
  readonly #spendSha: string;
  /** The grant and plan scripts of this ledger: [sha, text] each. */
  readonly #grantScripts: Record<GrantScriptName, readonly [string, string]>;

  /**
   * Creates the ledger. With `url`, the owned client starts connecting in the
   * background; until it is connected every operation rejects with
   * `ERR_CONFIRM_LEDGER_UNAVAILABLE` (use {@link RedisLedger.open} to wait).
   *
   * @param options - see {@link RedisLedgerOptions}.
   * @throws {TypeError} when not exactly one of `url` and `client` is given, or `url` is not a `redis:`/`rediss:` URL.
   * @throws {RangeError} when a bound, `timeoutMs`, `clockSkewMs` or `connectTimeoutMs` is not a valid integer,
   *   or `namespace` is empty, longer than 200 characters, not well-formed (a lone surrogate), or contains `{`, `}`
   *   or a control character.
   * @throws {ConfigError} `ERR_CONFIG_STORE_DRIVER` when `url` is given and the optional peer dependency `redis`
   *   is not installed (a `client` given needs no driver of ours).
   */
  constructor(options: RedisLedgerOptions) {
    if ((options.url === undefined) === (options.client === undefined))
      throw new TypeError('give exactly one of url and client');
    const namespace = options.namespace ?? 'mcp-confirm';
    if (
      typeof namespace !== 'string' ||
      namespace.length === 0 ||
      namespace.length > 200 ||
      !namespace.isWellFormed() ||
      /[{}\u0000-\u001f\u007f]/.test(namespace)
    ) {
      throw new RangeError('namespace must be 1 to 200 well-formed characters without {, } or control characters');
    }
    this.namespace = namespace;
    this.maxPerPrincipal = positiveInteger('maxPerPrincipal', options.maxPerPrincipal, 1_000);
    this.maxTotal = positiveInteger('maxTotal', options.maxTotal, 100_000);
    this.timeoutMs = positiveInteger('timeoutMs', options.timeoutMs, 2_000);
    this.clockSkewMs = nonNegativeInteger('clockSkewMs', options.clockSkewMs, 60_000);
    this.connectTimeoutMs = positiveInteger('connectTimeoutMs', options.connectTimeoutMs, 5_000);
    this.#prefix = `mcp-confirm:{${namespace}}:`;
    this.#entryPrefix = this.#prefix + 'jti:';
    this.#issueScript = issueScript(this.#prefix, this.maxPerPrincipal, this.maxTotal);
    this.#issueSha = sha1(this.#issueScript);
    this.#spendScript = spendScript(this.#prefix, this.maxTotal);
    this.#spendSha = sha1(this.#spendScript);
    this.maxGrantsPerPrincipal = positiveInteger(
      'maxGrantsPerPrincipal',
      options.maxGrantsPerPrincipal,
      DEFAULT_MAX_GRANTS_PER_PRINCIPAL,
    );
    this.maxGrants = positiveInteger('maxGrants', options.maxGrants, DEFAULT_MAX_GRANTS);
    this.maxPlansPerPrincipal = positiveInteger(
      'maxPlansPerPrincipal',
      options.maxPlansPerPrincipal,
      DEFAULT_MAX_GRANTS_PER_PRINCIPAL,
    );
    this.maxPlans = positiveInteger('maxPlans', options.maxPlans, DEFAULT_MAX_GRANTS);
    const named = (text: string): readonly [string, string] => [sha1(text), text];
    this.#grantScripts = {
      spendGranting: named(spendGrantingScript(this.#prefix, this.maxTotal, this)),
      takeGrantUse: named(takeGrantUseScript(this.#prefix, this.maxGrants)),
      revokeGrant: named(revokeGrantScript(this.#prefix, this.maxGrants)),
      findGrants: named(findGrantsScript(this.#prefix)),
      spendPlanning: named(spendPlanningScript(this.#prefix, this.maxTotal, this)),
      takePlanSlot: named(takePlanSlotScript(this.#prefix)),
    };

    if (options.url !== undefined) {
      let protocol: string;
      try {
        protocol = new URL(options.url).protocol;
      } catch {
        throw new TypeError('url must be a redis:// or rediss:// URL');
      }
      if (protocol !== 'redis:' && protocol !== 'rediss:')
        throw new TypeError('url must be a redis:// or rediss:// URL');
      const onError = options.onError ?? (() => {});
      const client = ownedClient(options.url, { connectTimeoutMs: this.connectTimeoutMs, onError });
      this.#owned = client;
      this.#runner = new DeadlineRunner(client, this.timeoutMs);
      // Retries forever in the background (see reconnectStrategy) until close().
      void client.connect().catch(onError);
    } else {
      const client = options.client;
      if (typeof client?.sendCommand !== 'function') throw new TypeError('client must have a sendCommand method');
      this.#owned = undefined;
      this.#runner = new DeadlineRunner(client, this.timeoutMs);
    }
  }

  /**
   * Creates a ledger and, for `url`, waits until its client is connected.
   *
   * @param options - see {@link RedisLedgerOptions}.
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when no connection is made within
   *   `connectTimeoutMs` (the client is closed again).
   * @throws {TypeError | RangeError} for bad options, as the constructor.
   * @throws {ConfigError} `ERR_CONFIG_STORE_DRIVER` without the `redis` package, as the constructor.
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
    return this.#owned === undefined ? !this.#runner.closed : this.#owned.isReady;
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
    const reply = await this.#runner.run(
      [
        'EVALSHA',
        this.#issueSha,
        '1',
        this.#entryPrefix + jti,
        principal,
        String(expiresAtMs),
        String(nowMs),
        String(px),
      ],
      this.#issueScript,
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
    const reply = await this.#runner.run(
      ['EVALSHA', this.#spendSha, '1', this.#entryPrefix + jti, String(nowMs)],
      this.#spendScript,
    );
    if (reply !== undefined && SPEND_OUTCOMES.has(reply)) return reply as SpendOutcome;
    throw new ConfirmLedgerUnavailableError({ cause: new TypeError('unexpected reply to spend') });
  }

  // ---- ApprovalStore (see approvalStore.ts). Additive: own keys, one Lua script per step.

  /** {@link ApprovalStore.openApproval}: one script (`ap:ID` hash and `apj:JTI` index, both new or nothing). */
  async openApproval(approval: NewApproval, nowMs: number): Promise<void> {
    checkNewApproval(approval);
    finiteMs('nowMs', nowMs);
    const px = Math.max(1, Math.ceil(approval.expiresAtMs - nowMs) + this.clockSkewMs);
    const required = requiredOf(approval);
    const keys = [this.#prefix + 'ap:' + approval.id, this.#prefix + 'apj:' + approval.jti];
    const args = [
      approval.id,
      approval.jti,
      approval.principal,
      approval.view,
      String(approval.expiresAtMs),
      String(px),
    ];
    // A quorum's size is written by the same script: no step ever sees the approval without it.
    const reply =
      required === undefined
        ? await this.#runner.script(APPROVAL_OPEN_SHA, APPROVAL_OPEN_SCRIPT, keys, args)
        : await this.#runner.script(APPROVAL_OPEN_QUORUM_SHA, APPROVAL_OPEN_QUORUM_SCRIPT, keys, [
            ...args,
            String(required),
          ]);
    if (reply === 'opened') return;
    if (reply === 'duplicate') throw new RangeError('approval already opened');
    throw new ConfirmLedgerUnavailableError({ cause: new TypeError('unexpected reply to openApproval') });
  }

  /** {@link ApprovalStore.approvalById}. */
  async approvalById(id: string, nowMs: number): Promise<ApprovalRecord | undefined> {
    finiteMs('nowMs', nowMs);
    return this.#readApproval([this.#prefix + 'ap:' + id, ''], nowMs);
  }

  /** {@link ApprovalStore.approvalByJti}. */
  async approvalByJti(jti: string, nowMs: number): Promise<ApprovalRecord | undefined> {
    finiteMs('nowMs', nowMs);
    return this.#readApproval([this.#prefix + 'apj:' + jti, this.#prefix + 'ap:'], nowMs);
  }

  /** {@link ApprovalStore.decideApproval}: one script (pending and unexpired, else nothing changes). */
  async decideApproval(id: string, decision: ApprovalDecision, nowMs: number): Promise<DecideOutcome> {
    finiteMs('nowMs', nowMs);
    const reply = await this.#runner.script(
      APPROVAL_DECIDE_SHA,
      APPROVAL_DECIDE_SCRIPT,
      [this.#prefix + 'ap:' + id],
      [decision.status, decision.approver, decision.credentialId, String(nowMs), decidedScope(decision) ?? ''],
    );
    if (reply === 'decided' || reply === 'already-decided' || reply === 'unknown' || reply === 'expired') return reply;
    throw new ConfirmLedgerUnavailableError({ cause: new TypeError('unexpected reply to decideApproval') });
  }

  /** {@link ApprovalStore.countApproval}: one script (pending and unexpired, each approver once). */
  async countApproval(id: string, vote: ApprovalVote, nowMs: number): Promise<CountOutcome> {
    checkVote(vote);
    finiteMs('nowMs', nowMs);
    const reply = await this.#runner.script(
      APPROVAL_COUNT_SHA,
      APPROVAL_COUNT_SCRIPT,
      [this.#prefix + 'ap:' + id],
      [
        vote.approver,
        vote.credentialId,
        String(nowMs),
        vote.scope === 'call' || vote.scope === 'grant' ? vote.scope : '',
      ],
    );
    if (
      reply === 'approved' ||
      reply === 'counted' ||
      reply === 'already-counted' ||
      reply === 'already-decided' ||
      reply === 'unknown' ||
      reply === 'expired'
    )
      return reply;
    throw new ConfirmLedgerUnavailableError({ cause: new TypeError('unexpected reply to countApproval') });
  }

  /** {@link ApprovalStore.attachGrant}: one script (approved, unexpired, no grant yet; else nothing changes). */
  async attachGrant(id: string, grantId: string, untilMs: number, nowMs: number): Promise<boolean> {
    checkAttachGrant(grantId, untilMs);
    finiteMs('nowMs', nowMs);
    const px = Math.max(1, Math.ceil(untilMs - nowMs) + this.clockSkewMs);
    const reply = await this.#runner.script(
      APPROVAL_ATTACH_GRANT_SHA,
      APPROVAL_ATTACH_GRANT_SCRIPT,
      [this.#prefix + 'ap:' + id],
      [grantId, String(untilMs), String(nowMs), String(px), this.#prefix + 'apj:'],
    );
    if (reply === 'attached' || reply === 'no') return reply === 'attached';
    throw new ConfirmLedgerUnavailableError({ cause: new TypeError('unexpected reply to attachGrant') });
  }

  /**
   * {@link ApprovalStore.putChallenge}: `SET NX PX` (the Redis TTL only collects it; expiry is decided by `nowMs`),
   * and the approval's list of challenge keys, beyond 8 (`MAX_CHALLENGES_PER_APPROVAL`) its oldest deleted.
   */
  async putChallenge(challenge: string, id: string, expiresAtMs: number, nowMs: number): Promise<void> {
    finiteMs('expiresAtMs', expiresAtMs);
    finiteMs('nowMs', nowMs);
    const px = Math.max(1, Math.ceil(expiresAtMs - nowMs) + this.clockSkewMs);
    const reply = await this.#runner.script(
      CHALLENGE_PUT_SHA,
      CHALLENGE_PUT_SCRIPT,
      [this.#prefix + 'ch:' + challenge, this.#prefix + 'chl:' + id],
      [`${expiresAtMs}|${id}`, String(px), String(MAX_CHALLENGES_PER_APPROVAL)],
    );
    if (reply === 'put') return;
    if (reply === 'duplicate') throw new RangeError('challenge already issued');
    throw new ConfirmLedgerUnavailableError({ cause: new TypeError('unexpected reply to putChallenge') });
  }

  /** {@link ApprovalStore.takeChallenge}: `GETDEL` inside one script. */
  async takeChallenge(challenge: string, nowMs: number): Promise<string | undefined> {
    finiteMs('nowMs', nowMs);
    const reply = await this.#runner.script(
      CHALLENGE_TAKE_SHA,
      CHALLENGE_TAKE_SCRIPT,
      [this.#prefix + 'ch:' + challenge],
      [],
    );
    if (reply === 'none') return undefined;
    const bar = reply === undefined ? -1 : reply.indexOf('|');
    if (reply === undefined || bar < 1)
      throw new ConfirmLedgerUnavailableError({ cause: new TypeError('unexpected reply to takeChallenge') });
    const expiresAtMs = Number(reply.slice(0, bar));
    return nowMs < expiresAtMs ? reply.slice(bar + 1) : undefined;
  }

  /** {@link ApprovalStore.advanceCounter}: read, compare and write in one script. */
  async advanceCounter(credentialId: string, newCounter: number, enrolledCounter: number): Promise<boolean> {
    if (!counterAccepted(-1, newCounter) || !Number.isSafeInteger(enrolledCounter) || enrolledCounter < 0) return false;
    const reply = await this.#runner.script(
      COUNTER_SHA,
      COUNTER_SCRIPT,
      [this.#prefix + 'ctr:' + credentialId],
      [String(newCounter), String(enrolledCounter)],
    );
    if (reply === 'advanced') return true;
    if (reply === 'refused') return false;
    throw new ConfirmLedgerUnavailableError({ cause: new TypeError('unexpected reply to advanceCounter') });
  }

  // ---- LinkStore (see linkStore.ts). Additive: own keys (lk…, lkp…), one Lua script per step (redisLinkScripts.ts).

  /** {@link mcp-confirm!LinkStore.openLinkApproval}: one script (checks, counts, then the approval, its index and its link). */
  async openLinkApproval(approval: NewLinkApproval, maxPending: number, nowMs: number): Promise<OpenLinkOutcome> {
    checkNewLinkApproval(approval, maxPending);
    finiteMs('nowMs', nowMs);
    const px = Math.max(1, Math.ceil(approval.expiresAtMs - nowMs) + this.clockSkewMs);
    const principalKey = this.#prefix + 'lkp:' + createHash('sha256').update(approval.principal).digest('hex');
    const reply = await this.#runner.script(
      LINK_OPEN_SHA,
      LINK_OPEN_SCRIPT,
      [
        this.#prefix + 'lk:' + approval.linkKey,
        principalKey,
        this.#prefix + 'ap:' + approval.id,
        this.#prefix + 'apj:' + approval.jti,
      ],
      [
        approval.id,
        approval.jti,
        approval.principal,
        approval.view,
        String(approval.expiresAtMs),
        String(px),
        approval.kept,
        String(nowMs),
        String(maxPending),
        this.#prefix + 'ap:',
        // A quorum's size, written by the same script ('' for one approver).
        String(requiredOf(approval) ?? ''),
      ],
    );
    if (reply === 'opened' || reply === 'exists' || reply === 'too-many') return reply;
    if (reply === 'duplicate') throw new RangeError('approval already opened');
    throw new ConfirmLedgerUnavailableError({ cause: new TypeError('unexpected reply to openLinkApproval') });
  }

  /** {@link mcp-confirm!LinkStore.approvalByLink}: one script (the link and its approval). */
  async approvalByLink(linkKey: string, nowMs: number): Promise<LinkedApproval | undefined> {
    finiteMs('nowMs', nowMs);
    const reply = await this.#runner.script(
      LINK_READ_SHA,
      LINK_READ_SCRIPT,
      [this.#prefix + 'lk:' + linkKey],
      [this.#prefix + 'ap:'],
    );
    if (reply === 'none') return undefined;
    let parsed: { kept?: unknown; approval?: unknown };
    try {
      parsed = JSON.parse(reply ?? '') as { kept?: unknown; approval?: unknown };
      if (typeof parsed.kept !== 'string') throw new TypeError('kept');
    } catch (cause) {
      throw new ConfirmLedgerUnavailableError({ cause });
    }
    const kept = parsed.kept;
    const approval = this.#approvalOf(JSON.stringify(parsed.approval), nowMs);
    return approval === undefined ? undefined : { approval, kept };
  }

  /** {@link mcp-confirm!LinkStore.finishLink}: one script (only the key's link to that approval). */
  async finishLink(linkKey: string, id: string, nowMs: number): Promise<boolean> {
    finiteMs('nowMs', nowMs);
    const reply = await this.#runner.script(
      LINK_FINISH_SHA,
      LINK_FINISH_SCRIPT,
      [this.#prefix + 'lk:' + linkKey],
      [id],
    );
    if (reply === 'finished' || reply === 'no') return reply === 'finished';
    throw new ConfirmLedgerUnavailableError({ cause: new TypeError('unexpected reply to finishLink') });
  }

  // ---- AuditHeadStore (see auditHeads.ts). Additive: its own key per trail path, one script per step.

  /** {@link AuditHeadStore.recordAuditHead}: one script (another trail replaces, a later seq moves forward). */
  async recordAuditHead(path: string, head: AuditHead): Promise<void> {
    checkAuditHead(path, head);
    const reply = await this.#runner.script(
      AUDIT_HEAD_RECORD_SHA,
      AUDIT_HEAD_RECORD_SCRIPT,
      [this.#prefix + 'ah:' + path],
      [head.trail, String(head.seq), head.mac],
    );
    if (reply === 'recorded' || reply === 'kept') return;
    throw new ConfirmLedgerUnavailableError({ cause: new TypeError('unexpected reply to recordAuditHead') });
  }

  /** {@link AuditHeadStore.auditHead}. */
  async auditHead(path: string): Promise<AuditHead | undefined> {
    checkAuditHeadPath(path);
    const reply = await this.#runner.script(
      AUDIT_HEAD_READ_SHA,
      AUDIT_HEAD_READ_SCRIPT,
      [this.#prefix + 'ah:' + path],
      [],
    );
    if (reply === 'none') return undefined;
    const [trail, seq, mac, ...rest] = (reply ?? '').split('|');
    const head = { trail, seq: Number(seq), mac };
    if (rest.length > 0 || !/^[0-9]+$/.test(seq ?? '') || !isAuditHead(head))
      throw new ConfirmLedgerUnavailableError({ cause: new TypeError('unexpected reply to auditHead') });
    return head;
  }

  // ---- GrantStore (see grantStore.ts). Additive: own keys (gr…, pl…), one Lua script per step.

  /** Runs one of this ledger's grant scripts; its text reply. */
  #grantScript(name: GrantScriptName, keys: string[], args: string[]): Promise<string | undefined> {
    const [sha, text] = this.#grantScripts[name];
    return this.#runner.script(sha, text, keys, args);
  }

  /**
   * {@link GrantStore.spendGranting}: one script, the ledger's spend and the grant's creation.
   * The grant's TTL in Redis is its remaining lifetime plus `clockSkewMs` (garbage collection only).
   */
  async spendGranting(jti: string, nowMs: number, grant: NewGrant): Promise<SpendCreating> {
    checkNewGrant(grant, nowMs);
    const px = Math.max(1, Math.ceil(grant.expiresAtMs - nowMs) + this.clockSkewMs);
    const reply = await this.#grantScript(
      'spendGranting',
      [this.#entryPrefix + jti, this.#prefix + 'gr:' + grant.id, this.#prefix + 'gr-b:' + boundKey(grant)],
      [
        String(nowMs),
        grant.principal,
        grant.audience,
        grant.tool,
        grant.scope,
        grant.binding,
        grant.summary,
        grant.policyDigest,
        grant.approver,
        String(grant.maxUses),
        String(grant.createdAtMs),
        String(grant.expiresAtMs),
        String(px),
      ],
    );
    return spendCreating(reply, 'grant', 'spendGranting');
  }

  /** {@link GrantStore.findGrants}: one script reading the principal's (or the namespace's) live grants. */
  async findGrants(query: GrantQuery, nowMs: number): Promise<Grant[]> {
    checkGrantQuery(query);
    checkNowMs(nowMs);
    const asked = (value: string | undefined): string => (value === undefined ? '' : '=' + value);
    const reply = await this.#grantScript(
      'findGrants',
      [],
      [String(nowMs), asked(query.principal), asked(query.audience), asked(query.tool)],
    );
    let grants: Grant[];
    try {
      const list = JSON.parse(reply ?? '') as unknown;
      if (!Array.isArray(list)) throw new TypeError('not a list');
      grants = list.map((o: Record<string, unknown>) => {
        const g: Grant = {
          id: String(o['id']),
          audience: String(o['aud']),
          principal: String(o['principal']),
          tool: String(o['tool']),
          scope: String(o['scope']),
          binding: String(o['binding']),
          summary: String(o['summary']),
          policyDigest: String(o['policy']),
          approver: String(o['approver']),
          maxUses: Number(o['max']),
          usesLeft: Number(o['left']),
          createdAtMs: Number(o['created']),
          expiresAtMs: Number(o['exp']),
        };
        for (const n of [g.maxUses, g.usesLeft, g.createdAtMs, g.expiresAtMs])
          if (!Number.isSafeInteger(n)) throw new TypeError('numbers');
        return g;
      });
    } catch (cause) {
      throw new ConfirmLedgerUnavailableError({ cause });
    }
    return grants.sort(oldestFirst);
  }

  /** {@link GrantStore.takeGrantUse}: one script. */
  async takeGrantUse(id: string, nowMs: number): Promise<TakeGrantOutcome> {
    checkNowMs(nowMs);
    const reply = await this.#grantScript('takeGrantUse', [this.#prefix + 'gr:' + id], [String(nowMs)]);
    if (reply === 'unknown' || reply === 'expired' || reply === 'revoked' || reply === 'exhausted')
      return { taken: false, reason: reply };
    const m = /^taken\|([0-9]+)\|([0-9]+)$/.exec(reply ?? '');
    if (m === null)
      throw new ConfirmLedgerUnavailableError({ cause: new TypeError('unexpected reply to takeGrantUse') });
    return { taken: true, usesLeft: Number(m[1]), expiresAtMs: Number(m[2]) };
  }

  /** {@link GrantStore.revokeGrant}: one script. */
  async revokeGrant(id: string, nowMs: number): Promise<'revoked' | 'unknown'> {
    checkNowMs(nowMs);
    const reply = await this.#grantScript('revokeGrant', [this.#prefix + 'gr:' + id], [String(nowMs)]);
    if (reply === 'revoked' || reply === 'unknown') return reply;
    throw new ConfirmLedgerUnavailableError({ cause: new TypeError('unexpected reply to revokeGrant') });
  }

  /** {@link GrantStore.spendPlanning}: one script, the ledger's spend and the plan's creation. */
  async spendPlanning(jti: string, nowMs: number, plan: NewPlan): Promise<SpendCreating> {
    checkNewPlan(plan, nowMs);
    const px = Math.max(1, Math.ceil(plan.expiresAtMs - nowMs) + this.clockSkewMs);
    const args = [
      String(nowMs),
      plan.principal,
      plan.audience,
      plan.approver,
      String(plan.createdAtMs),
      String(plan.expiresAtMs),
      String(px),
      String(plan.slots.length),
      plan.binding,
    ];
    for (const slot of plan.slots) args.push(slot.key, slot.tool, slot.identity);
    const reply = await this.#grantScript(
      'spendPlanning',
      [this.#entryPrefix + jti, this.#prefix + 'pl:' + plan.id, this.#prefix + 'pl-b:' + boundKey(plan)],
      args,
    );
    return spendCreating(reply, 'plan', 'spendPlanning');
  }

  /** {@link GrantStore.takePlanSlot}: one script. */
  async takePlanSlot(key: string, nowMs: number): Promise<TakenPlanSlot | undefined> {
    checkNowMs(nowMs);
    const reply = await this.#grantScript('takePlanSlot', [this.#prefix + 'pl-s:' + key], [String(nowMs)]);
    if (reply === 'none') return undefined;
    const m = /^taken\|([A-Za-z0-9_-]+)\|([0-9]+)\|([0-9]+)\|([0-9]+)\|/.exec(reply ?? '');
    if (m === null)
      throw new ConfirmLedgerUnavailableError({ cause: new TypeError('unexpected reply to takePlanSlot') });
    return {
      planId: m[1]!,
      index: Number(m[2]),
      slotsLeft: Number(m[3]),
      expiresAtMs: Number(m[4]),
      identity: reply!.slice(m[0].length),
    };
  }

  async #readApproval(keys: [string, string], nowMs: number): Promise<ApprovalRecord | undefined> {
    const reply = await this.#runner.script(APPROVAL_READ_SHA, APPROVAL_READ_SCRIPT, [keys[0]], [keys[1]]);
    if (reply === 'none') return undefined;
    return this.#approvalOf(reply, nowMs);
  }

  /** The approval of a read script's JSON reply; `undefined` when expired. @throws {ConfirmLedgerUnavailableError} on an unexpected reply. */
  #approvalOf(reply: string | null | undefined, nowMs: number): ApprovalRecord | undefined {
    let record: ApprovalRecord;
    try {
      const o = JSON.parse(reply ?? '') as Record<string, unknown>;
      const status = o.status as ApprovalStatus;
      if (status !== 'pending' && status !== 'approved' && status !== 'declined') throw new TypeError('status');
      record = {
        id: String(o.id),
        jti: String(o.jti),
        principal: String(o.principal),
        view: String(o.view),
        expiresAtMs: Number(o.exp),
        status,
        decidedAtMs: Number(o.dec),
        approver: String(o.approver),
        credentialId: String(o.cred),
        ...(o.scope === 'call' || o.scope === 'grant' ? { scope: o.scope } : {}),
        ...(typeof o.grant === 'string' && o.grant !== '' ? { grantId: o.grant } : {}),
        ...(typeof o.req === 'string' && Number(o.req) > 1 ? { approvalsRequired: Number(o.req) } : {}),
        ...(typeof o.votes === 'string' && o.votes !== '' ? { approvals: parseApprovals(o.votes)! } : {}),
      };
      if (!Number.isFinite(record.expiresAtMs) || !Number.isFinite(record.decidedAtMs)) throw new TypeError('times');
    } catch (cause) {
      throw new ConfirmLedgerUnavailableError({ cause });
    }
    return nowMs < record.expiresAtMs ? record : undefined;
  }

  /**
   * Stops using Redis. Closes the client only if the ledger created it. Idempotent;
   * later calls reject with `ERR_CONFIRM_LEDGER_UNAVAILABLE`.
   */
  async close(): Promise<void> {
    if (this.#runner.closed) return;
    this.#runner.close();
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
}
