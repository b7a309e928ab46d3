/**
 * A {@link Ledger} in a SQLite file (better-sqlite3): shared by every process
 * on one host that opens the same file. Subpath export `mcp-confirm/stores/sqlite`,
 * so the root import of the package never loads the native driver.
 *
 * Layout (SQLite 3.35+ for `RETURNING`; better-sqlite3 12 bundles 3.53):
 * ```sql
 * mcp_confirm_ledger (jti TEXT PRIMARY KEY, principal TEXT, expires_at_ms INTEGER,
 *                     spent INTEGER 0|1) WITHOUT ROWID      -- one row per confirmation
 * mcp_confirm_ledger_counts (scope, name, n)                -- ('total',''), ('spent',''),
 *                                                           -- ('principal', <principal>)
 * mcp_confirm_audit_heads (path TEXT PRIMARY KEY, trail, seq, mac) WITHOUT ROWID
 *                                                           -- one audit trail head per trail file,
 *                                                           -- created on its first record
 * mcp_confirm_grants (id TEXT PRIMARY KEY, audience, principal, tool, scope, binding, summary,
 *                     policy_digest, approver, max_uses, uses_left, created_at_ms,
 *                     expires_at_ms, revoked 0|1)       -- one row per grant
 * mcp_confirm_plans (id TEXT PRIMARY KEY, audience, principal, approver, created_at_ms,
 *                    expires_at_ms, slots, slots_left, binding)  -- one row per plan
 * mcp_confirm_plan_slots (plan_id, idx, slot_key, tool, identity, expires_at_ms,
 *                         PRIMARY KEY (plan_id, idx))   -- one row per unused slot
 *                                                       -- (the three created on the first grant
 *                                                       -- or plan call)
 * ```
 * A file the ledger creates gets 1 KiB pages (`PRAGMA page_size`, SQLite's default is
 * 4 KiB): each commit appends every page it changed to the WAL, so smaller pages mean
 * fewer bytes written per issue or spend. A file that exists keeps its page size.
 * Each connection checkpoints the WAL once it holds about 4 MB (`PRAGMA wal_autocheckpoint`
 * set to 4,096,000 bytes over the page size, 4,000 pages of 1 KiB; never below SQLite's
 * default of 1,000 pages), the size of SQLite's default WAL of 1,000 pages of 4 KiB: with
 * 1 KiB pages the default would checkpoint four times as often, and each checkpoint calls
 * `fsync` twice (WAL, then database file) even with `synchronous = NORMAL`. The `-wal`
 * file is reused after a checkpoint, not shrunk, so it stays at about 4 MB on disk.
 * The counts are kept by triggers inside the same statement that inserts, spends
 * or deletes a row, so they can never drift from the rows, and a bound check is
 * two primary-key reads instead of a `count(*)`. (Triggers rather than separate
 * statements: they run inside the statement, and separate statements would need the
 * explicit transaction this ledger avoids on its common paths.)
 *
 * - **spend** is ONE statement in autocommit mode, `UPDATE … SET spent = 1 WHERE
 *   jti = ? AND spent = 0 RETURNING expires_at_ms`. A write statement in autocommit
 *   mode is its own transaction and takes the database's single write lock before it
 *   reads, so of any number of concurrent spends in any number of processes exactly
 *   one sees the row with `spent = 0`. The returned expiry is then compared with the
 *   caller's `nowMs` (expired → the tombstone is deleted by a second statement,
 *   `'expired'`; between the two, a replay is told `'already-spent'`, also a refusal).
 *   No row: a row with `spent = 1` (a tombstone) means `'already-spent'`, no row at
 *   all `'unknown'` (one read).
 * - **issue** is ONE statement too while both bounds have room: `INSERT … SELECT …
 *   WHERE` the principal's count and the total are below their bounds, so the check
 *   and the insert are one atomic step. When it inserts nothing (a bound reached), a
 *   `BEGIN IMMEDIATE` transaction sweeps expired rows, reads the counts again, and
 *   refuses with `ERR_CONFIRM_CAPACITY` or inserts. Two processes can never both take
 *   the last slot. One statement instead of `BEGIN IMMEDIATE` + read + insert +
 *   `COMMIT` saves the work of three statements per call.
 * - **sweeping**: expired rows (outstanding or tombstones) are deleted when a
 *   bound is reached and every 256 operations of a process; tombstones beyond
 *   `maxTotal` are then dropped oldest-expiry first (a replay of a dropped one is
 *   `'unknown'`, still refused).
 *
 * ## Grants and plans
 * Each step of the {@link GrantStore} is one `BEGIN IMMEDIATE` transaction (or one statement),
 * under the same non-blocking retry and deadline as the ledger's steps:
 * - **spendGranting** / **spendPlanning**: in one transaction, the ledger's spend (the same
 *   statements as {@link SqliteLedger.spend}), then, only when it spent, expired grants (plans)
 *   are deleted, the live ones of the principal and binding and in all counted (`count(*)` over
 *   partial indexes of the live rows: exact, and few), and the row inserted or `'full'` answered.
 * - **takeGrantUse**: `UPDATE … SET uses_left = uses_left - 1 WHERE` a use is left, not revoked,
 *   not expired `… RETURNING`; with no row, the row is read for the reason. **revokeGrant**:
 *   `UPDATE … SET revoked = 1 WHERE` live.
 * - **takePlanSlot**: the unused slot row with the key of the live plan expiring first is deleted
 *   and its plan's `slots_left` decremented (the plan deleted at 0).
 * A grant used up or revoked stays until its expiry (so a take can say why), at most `maxGrants`
 * of them (the ones expiring first are deleted beyond that).
 *
 * ## Never blocking the event loop
 * better-sqlite3 is synchronous: a statement that waits for a lock waits on the
 * main thread, and with it every other request of the process. So SQLite's
 * `busy_timeout` is 0: a statement that meets another connection's write lock fails
 * at once with `SQLITE_BUSY`, nothing done, and the ledger runs the whole step (one
 * statement or one transaction) again from a timer, with a short backoff, until the
 * call's deadline `timeoutMs` (default 2 s); then it refuses with
 * `ERR_CONFIRM_LEDGER_UNAVAILABLE`. In between, the process answers other requests.
 * The same holds at open: the constructor never waits (when the file is new and
 * locked, creating the schema is left to the first call, within that call's
 * deadline), and {@link SqliteLedger.open} waits asynchronously. Housekeeping
 * sweeps are tried once, never waited for (skipped under a lock, tried again on the
 * next call). With `busy_timeout` 0 the connection has no busy handler at all, so no
 * other SQLite step waits on a lock either: automatic WAL checkpoints run in `PASSIVE`
 * mode, which skips what it cannot take (SQLite C API, `sqlite3_wal_autocheckpoint`
 * and `sqlite3_wal_checkpoint_v2`), and so does the checkpoint attempted at close.
 *
 * > [!WARNING]
 * > With `synchronous: 'normal'` (the default, WAL) a committed spend survives a
 * > crash of the process but not a power loss or OS crash: the last transactions
 * > can roll back, and a confirmation spent just before could then be spent
 * > again. Choose `synchronous: 'full'` (about 8× slower) if that matters.
 * > The file must be on a local disk: SQLite locking over NFS/SMB is unreliable,
 * > so this store is for processes on one host (use the Redis store across hosts).
 *
 * @module mcp-confirm/stores/sqlite
 */
import { closeSync, openSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { ConfirmCapacityError, ConfirmLedgerUnavailableError } from '../errors.js';
import type { ConfirmStore } from './confirmStore.js';
import { checkNewLinkApproval, type LinkedApproval, type NewLinkApproval, type OpenLinkOutcome } from './linkStore.js';
import type { Ledger, SpendOutcome } from './ledger.js';
import {
  checkAttachGrant,
  applyVote,
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
import { BusyRetry, isBusy } from './busyRetry.js';
import { sqliteDriver } from './driver.js';
import {
  checkGrantQuery,
  checkNewGrant,
  checkNewPlan,
  checkNowMs,
  DEFAULT_MAX_GRANTS,
  DEFAULT_MAX_GRANTS_PER_PRINCIPAL,
  type Grant,
  type GrantQuery,
  type GrantStore,
  type NewGrant,
  type NewPlan,
  type SpendCreating,
  type TakeGrantOutcome,
  type TakenPlanSlot,
} from './grantStore.js';

/** Options of {@link SqliteLedger}. */
export interface SqliteLedgerOptions {
  /** Path of the database file; created when missing (its directory must exist). Not `':memory:'`. */
  path: string;
  /** Most outstanding confirmations one principal may hold. Defaults to 1,000. */
  maxPerPrincipal?: number;
  /** Most outstanding confirmations in total; also the (approximate) bound on tombstones. Defaults to 100,000. */
  maxTotal?: number;
  /**
   * Deadline of every issue, spend or sweep (and of {@link SqliteLedger.open}), in
   * milliseconds, as RedisLedger's `timeoutMs`. While another connection holds the
   * database's write lock the call waits without blocking the event loop (it retries
   * from a timer; SQLite's own `busy_timeout` is always 0), and once the deadline has
   * passed it is refused with `ERR_CONFIRM_LEDGER_UNAVAILABLE`, nothing done.
   * Defaults to 2,000 (2 seconds).
   */
  timeoutMs?: number;
  /** SQLite `synchronous` with WAL: `'normal'` (default) or `'full'` (fsync per commit). */
  synchronous?: 'normal' | 'full';
  /** Most live grants one principal may hold under one binding (see {@link GrantStore}). Defaults to 16. */
  maxGrantsPerPrincipal?: number;
  /**
   * Most live grants in the file; also the bound on ended grants kept until their expiry (so that
   * a take can say `'exhausted'` or `'revoked'`). Defaults to 10,000.
   */
  maxGrants?: number;
  /** Most live plans one principal may hold under one binding. Defaults to 16. */
  maxPlansPerPrincipal?: number;
  /** Most live plans in the file. Defaults to 10,000. */
  maxPlans?: number;
}

const TABLE = 'mcp_confirm_ledger';
const COUNTS = 'mcp_confirm_ledger_counts';
/** Page size of a new database file, in bytes (SQLite's default is 4,096). */
const PAGE_SIZE = 1024;
/**
 * Size of the WAL, in bytes, at which a commit checkpoints it (`PRAGMA wal_autocheckpoint`
 * counts pages): SQLite's default is 1,000 pages, 4,096,000 bytes with its default 4 KiB pages.
 * With the ledger's 1 KiB pages the default would checkpoint four times as often, each
 * checkpoint with two `fsync` calls (WAL, then database) even with `synchronous = NORMAL`.
 */
const WAL_CHECKPOINT_BYTES = 1_000 * 4_096;
/** Every this many operations a process sweeps expired rows and caps tombstones. */
const MAINTENANCE_EVERY = 256;
/** Every table, index and trigger of {@link SCHEMA}: when all exist, opening needs no write lock. */
const SCHEMA_OBJECTS = [
  TABLE,
  COUNTS,
  `${TABLE}_expiry`,
  `${TABLE}_issued`,
  `${TABLE}_spent`,
  `${TABLE}_dropped_outstanding`,
  `${TABLE}_dropped_tombstone`,
];

const SCHEMA = `
CREATE TABLE IF NOT EXISTS ${TABLE} (
  jti TEXT NOT NULL PRIMARY KEY,
  principal TEXT NOT NULL,
  expires_at_ms INTEGER NOT NULL,
  spent INTEGER NOT NULL DEFAULT 0 CHECK (spent IN (0, 1))
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS ${TABLE}_expiry ON ${TABLE} (expires_at_ms);
CREATE TABLE IF NOT EXISTS ${COUNTS} (
  scope TEXT NOT NULL CHECK (scope IN ('total', 'spent', 'principal')),
  name TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (scope, name)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS ${TABLE}_issued AFTER INSERT ON ${TABLE} WHEN new.spent = 0 BEGIN
  INSERT INTO ${COUNTS} (scope, name, n) VALUES ('total', '', 1), ('principal', new.principal, 1)
    ON CONFLICT (scope, name) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER IF NOT EXISTS ${TABLE}_spent AFTER UPDATE OF spent ON ${TABLE}
  WHEN old.spent = 0 AND new.spent = 1 BEGIN
  UPDATE ${COUNTS} SET n = n - 1 WHERE scope = 'total' AND name = '';
  UPDATE ${COUNTS} SET n = n - 1 WHERE scope = 'principal' AND name = old.principal;
  INSERT INTO ${COUNTS} (scope, name, n) VALUES ('spent', '', 1)
    ON CONFLICT (scope, name) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER IF NOT EXISTS ${TABLE}_dropped_outstanding AFTER DELETE ON ${TABLE} WHEN old.spent = 0 BEGIN
  UPDATE ${COUNTS} SET n = n - 1 WHERE scope = 'total' AND name = '';
  UPDATE ${COUNTS} SET n = n - 1 WHERE scope = 'principal' AND name = old.principal;
END;
CREATE TRIGGER IF NOT EXISTS ${TABLE}_dropped_tombstone AFTER DELETE ON ${TABLE} WHEN old.spent = 1 BEGIN
  UPDATE ${COUNTS} SET n = n - 1 WHERE scope = 'spent' AND name = '';
END;
`;

function finiteMs(name: string, value: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw new RangeError(`${name} must be a finite number of milliseconds`);
  return value;
}

function isUniqueViolation(error: unknown): boolean {
  return (
    error instanceof Error &&
    ((error as { code?: unknown }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY' ||
      (error as { code?: unknown }).code === 'SQLITE_CONSTRAINT_UNIQUE')
  );
}

/** Errors of our own making pass through; anything else from the driver fails closed. */
function unavailable(error: unknown): Error {
  if (error instanceof ConfirmCapacityError || error instanceof ConfirmLedgerUnavailableError) return error;
  return new ConfirmLedgerUnavailableError({ cause: error });
}

type Statement<P extends unknown[], R> = Database.Statement<P, R>;

/** What the ledger runs once the schema exists: prepared statements and transactions. */
interface Ops {
  /** One statement: inserts when both counts are below their bounds; `false` when it did not (a bound reached). */
  tryIssue: (jti: string, principal: string, expiresAtMs: number) => boolean;
  /** One transaction: at a bound, sweeps expired rows and decides again; throws ConfirmCapacityError or inserts. */
  issueAtBound: (jti: string, principal: string, expiresAtMs: number, nowMs: number) => void;
  /** One statement: marks an outstanding row spent; its expiry, or `undefined` when no outstanding row matched. */
  spend: (jti: string) => number | undefined;
  /** One statement: drops the tombstone of an entry found expired at its spend. */
  dropExpired: (jti: string) => void;
  /** One read: `'already-spent'` when a tombstone is there, else `'unknown'`. */
  notOutstanding: (jti: string) => SpendOutcome;
  maintain: (nowMs: number) => void;
}

interface Statements {
  counts: Statement<[string], { held: number | null; total: number | null }>;
  insert: Statement<[string, string, number], unknown>;
  insertBelowBounds: Statement<[string, string, number, string, number, number], unknown>;
  spend: Statement<[string], { expires_at_ms: number }>;
  state: Statement<[string], { spent: number }>;
  dropSpent: Statement<[string], unknown>;
  sweep: Statement<[number], unknown>;
  spentCount: Statement<[], { n: number }>;
  capTombstones: Statement<[number], unknown>;
  dropEmptyPrincipals: Statement<[], unknown>;
}

/**
 * A ledger in a SQLite database file, safe for many processes on one host.
 *
 * @example
 * ```ts
 * import { randomUUID } from 'node:crypto';
 * import { SqliteLedger } from 'mcp-confirm/stores/sqlite';
 *
 * const ledger = new SqliteLedger({ path: '/var/lib/mcp-confirm/ledger.db' });
 * const jti = randomUUID();
 * await ledger.issue(jti, 'alice@example.com', Date.now() + 300_000);
 * await ledger.spend(jti, Date.now()); // 'spent' in exactly one process
 * ```
 */
export class SqliteLedger implements ConfirmStore {
  readonly kind = 'sqlite';
  /** Every process on this host that opens the same file sees the same entries. */
  readonly shared = true;
  readonly path: string;
  readonly maxPerPrincipal: number;
  readonly maxTotal: number;
  readonly maxGrantsPerPrincipal: number;
  readonly maxGrants: number;
  readonly maxPlansPerPrincipal: number;
  readonly maxPlans: number;
  /** Deadline of every call, in milliseconds (see {@link SqliteLedgerOptions.timeoutMs}). */
  readonly timeoutMs: number;
  readonly #db: Database.Database;
  readonly #retry: BusyRetry;
  #ops: Ops | undefined;
  #count = 0;
  #maintenanceDue = false;
  #closed = false;

  /**
   * Opens (creating when missing) the database file, switches it to WAL and
   * creates the schema. Never waits for a lock: when another connection holds the
   * write lock of a file that still needs its schema (or WAL mode), that is left to
   * the first call (within its deadline); see {@link SqliteLedger.isReady}.
   *
   * @param options - see {@link SqliteLedgerOptions}.
   * @throws {RangeError} when a bound or `timeoutMs` is not a positive integer, or `path` is empty or `':memory:'`.
   * @throws {ConfigError} `ERR_CONFIG_STORE_DRIVER` when the optional peer dependency `better-sqlite3` is not
   *   installed (nothing created).
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the file cannot be opened or
   *   is not a usable SQLite database (missing directory, no permission, corrupted file).
   */
  constructor(options: SqliteLedgerOptions) {
    if (typeof options?.path !== 'string' || options.path === '' || options.path === ':memory:') {
      throw new RangeError('path must name a database file (not empty, not :memory:)');
    }
    this.path = options.path;
    this.maxPerPrincipal = positiveInteger('maxPerPrincipal', options.maxPerPrincipal, 1_000);
    this.maxTotal = positiveInteger('maxTotal', options.maxTotal, 100_000);
    this.timeoutMs = positiveInteger('timeoutMs', options.timeoutMs, 2_000);
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
    const synchronous = options.synchronous ?? 'normal';
    if (synchronous !== 'normal' && synchronous !== 'full')
      throw new RangeError("synchronous must be 'normal' or 'full'");
    this.#retry = new BusyRetry(this.timeoutMs);
    // The driver before the file: without it, nothing is created.
    const Driver = sqliteDriver();

    // A new file is created readable by its owner only (it holds confirmations, approvals with their
    // questions and paths, and challenges); SQLite gives its -wal and -shm files the database file's
    // mode. An existing file keeps its mode. Any failure here is left to the open below to report.
    if (this.path !== '' && this.path !== ':memory:') {
      try {
        closeSync(openSync(this.path, 'wx', 0o600));
      } catch {
        // exists already (kept as it is), or cannot be created (reported by the open below)
      }
    }
    let db: Database.Database;
    try {
      // timeout 0: no busy handler, so SQLite never sleeps on the main thread waiting for a lock.
      db = new Driver(this.path, { timeout: 0 });
    } catch (error) {
      throw unavailable(error);
    }
    this.#db = db;
    try {
      db.pragma('busy_timeout = 0');
      db.pragma(`synchronous = ${synchronous.toUpperCase()}`);
      this.#setup();
    } catch (error) {
      if (isBusy(error)) return; // locked now: the first call sets up, within its deadline
      try {
        db.close();
      } catch {
        // already failing closed; the first error is the one to report
      }
      throw unavailable(error);
    }
  }

  /**
   * `true` once the file is in WAL mode with the schema and the statements are prepared;
   * `false` while that waits for another connection's write lock (or after close).
   */
  get isReady(): boolean {
    return this.#ops !== undefined && !this.#closed;
  }

  /**
   * WAL mode, schema and statements, once; synchronous and all or nothing, so it
   * is retried as a whole on `SQLITE_BUSY`. Reads first, so that a file that already
   * has its schema needs no write lock to open.
   */
  #setup(): Ops {
    if (this.#ops !== undefined) return this.#ops;
    const db = this.#db;
    if (String(db.pragma('journal_mode', { simple: true })).toLowerCase() !== 'wal') {
      // A new file gets 1 KiB pages: every commit appends each page it changed to the WAL, and a ledger
      // commit changes a few small rows, so smaller pages mean less to write per issue or spend
      // (measured: about 1.4× the pairs/s of 4 KiB pages). An existing file keeps its page size.
      if (Number(db.pragma('page_count', { simple: true })) === 0) db.pragma(`page_size = ${PAGE_SIZE}`);
      const mode = db.pragma('journal_mode = WAL', { simple: true });
      if (String(mode).toLowerCase() !== 'wal') throw new Error(`journal_mode is ${String(mode)}, not wal`);
    }
    // Checkpoint at the byte size of SQLite's default WAL whatever the page size (a setting of this connection).
    const pageSize = Number(db.pragma('page_size', { simple: true }));
    db.pragma(`wal_autocheckpoint = ${Math.max(1_000, Math.round(WAL_CHECKPOINT_BYTES / pageSize))}`);
    const present = db
      .prepare(`SELECT count(*) AS n FROM sqlite_schema WHERE name IN (${SCHEMA_OBJECTS.map(() => '?').join(', ')})`)
      .get(...SCHEMA_OBJECTS) as { n: number };
    if (present.n !== SCHEMA_OBJECTS.length) db.transaction(() => db.exec(SCHEMA)).immediate();
    const stmts: Statements = {
      counts: db.prepare(
        `SELECT (SELECT n FROM ${COUNTS} WHERE scope = 'principal' AND name = ?) AS held,
                (SELECT n FROM ${COUNTS} WHERE scope = 'total' AND name = '') AS total`,
      ),
      insert: db.prepare(`INSERT INTO ${TABLE} (jti, principal, expires_at_ms, spent) VALUES (?, ?, ?, 0)`),
      insertBelowBounds: db.prepare(
        `INSERT INTO ${TABLE} (jti, principal, expires_at_ms, spent) SELECT ?, ?, ?, 0
           WHERE coalesce((SELECT n FROM ${COUNTS} WHERE scope = 'principal' AND name = ?), 0) < ?
             AND coalesce((SELECT n FROM ${COUNTS} WHERE scope = 'total' AND name = ''), 0) < ?`,
      ),
      spend: db.prepare(`UPDATE ${TABLE} SET spent = 1 WHERE jti = ? AND spent = 0 RETURNING expires_at_ms`),
      state: db.prepare(`SELECT spent FROM ${TABLE} WHERE jti = ?`),
      dropSpent: db.prepare(`DELETE FROM ${TABLE} WHERE jti = ? AND spent = 1`),
      sweep: db.prepare(`DELETE FROM ${TABLE} WHERE expires_at_ms <= ?`),
      spentCount: db.prepare(`SELECT coalesce((SELECT n FROM ${COUNTS} WHERE scope = 'spent' AND name = ''), 0) AS n`),
      capTombstones: db.prepare(
        `DELETE FROM ${TABLE} WHERE jti IN
           (SELECT jti FROM ${TABLE} WHERE spent = 1 ORDER BY expires_at_ms LIMIT ?)`,
      ),
      dropEmptyPrincipals: db.prepare(`DELETE FROM ${COUNTS} WHERE scope = 'principal' AND n <= 0`),
    };
    const maxPerPrincipal = this.maxPerPrincipal;
    const maxTotal = this.maxTotal;
    const ops: Ops = {
      // Each of these runs as ONE statement in autocommit mode: a write statement takes the database's write
      // lock before it reads anything (SQLite C API, "Transaction": a write statement in autocommit mode is its
      // own transaction), so its reads and its write are one atomic step across processes, without the two
      // extra statements of BEGIN IMMEDIATE … COMMIT. The counter table is kept by the triggers of SCHEMA
      // inside the same statement.
      tryIssue: (jti, principal, expiresAtMs) =>
        stmts.insertBelowBounds.run(jti, principal, expiresAtMs, principal, maxPerPrincipal, maxTotal).changes === 1,
      issueAtBound: db.transaction((jti: string, principal: string, expiresAtMs: number, nowMs: number) => {
        let c = stmts.counts.get(principal);
        if ((c?.held ?? 0) >= maxPerPrincipal || (c?.total ?? 0) >= maxTotal) {
          // Only at a bound pay for a sweep; then decide.
          stmts.sweep.run(nowMs);
          c = stmts.counts.get(principal);
          if ((c?.held ?? 0) >= maxPerPrincipal) throw new ConfirmCapacityError('principal');
          if ((c?.total ?? 0) >= maxTotal) throw new ConfirmCapacityError('total');
        }
        stmts.insert.run(jti, principal, expiresAtMs);
      }).immediate,
      spend: (jti) => {
        const row = stmts.spend.get(jti);
        if (row === undefined) return undefined;
        if (typeof row.expires_at_ms !== 'number') throw new TypeError('unexpected expires_at_ms');
        return row.expires_at_ms;
      },
      dropExpired: (jti) => {
        stmts.dropSpent.run(jti);
      },
      notOutstanding: (jti) => (stmts.state.get(jti)?.spent === 1 ? 'already-spent' : 'unknown'),
      maintain: db.transaction((nowMs: number) => {
        stmts.sweep.run(nowMs);
        const excess = (stmts.spentCount.get()?.n ?? 0) - maxTotal;
        if (excess > 0) stmts.capTombstones.run(excess);
        stmts.dropEmptyPrincipals.run();
      }).immediate,
    };
    this.#ops = ops;
    return ops;
  }

  /**
   * Opens a ledger as the constructor does, then, when another connection's write lock
   * kept it from setting up the file, waits for that (without blocking the event loop)
   * up to `timeoutMs`.
   *
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` as the constructor, or when the
   *   file is still locked after `timeoutMs` (the ledger is closed again).
   * @throws {RangeError | TypeError} for bad options, as the constructor.
   */
  static async open(options: SqliteLedgerOptions): Promise<SqliteLedger> {
    const ledger = new SqliteLedger(options);
    try {
      await ledger.#retry.run(() => ledger.#setup());
    } catch (error) {
      await ledger.close();
      throw unavailable(error);
    }
    return ledger;
  }

  /**
   * Records a new outstanding confirmation (see {@link Ledger.issue}).
   *
   * @param jti - the random nonce, primary key.
   * @param principal - opaque tag of who asked; bounded by `maxPerPrincipal`.
   * @param expiresAtMs - Unix time in milliseconds at which the entry expires.
   * @param nowMs - the caller's current time in milliseconds. Defaults to `Date.now()`.
   * @throws {ConfirmCapacityError} `ERR_CONFIRM_CAPACITY` when the principal or the file is full.
   * @throws {RangeError} when `jti` was already issued (outstanding or spent), or a time is not finite.
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` on any driver failure
   *   (still locked by another connection after `timeoutMs`, I/O error, corruption, closed ledger).
   */
  async issue(jti: string, principal: string, expiresAtMs: number, nowMs: number = Date.now()): Promise<void> {
    finiteMs('expiresAtMs', expiresAtMs);
    finiteMs('nowMs', nowMs);
    if (this.#closed) throw new ConfirmLedgerUnavailableError();
    try {
      // Below both bounds (the common case) one INSERT … SELECT; at a bound, the sweeping transaction.
      const issued = await this.#retry.run(() => this.#setup().tryIssue(jti, principal, expiresAtMs));
      if (!issued) await this.#retry.run(() => this.#setup().issueAtBound(jti, principal, expiresAtMs, nowMs));
    } catch (error) {
      if (isUniqueViolation(error)) throw new RangeError('jti already issued');
      throw unavailable(error);
    }
    this.#maybeMaintain(nowMs);
  }

  /**
   * Atomically redeems a confirmation (see {@link Ledger.spend}): one `UPDATE … RETURNING`
   * in autocommit mode (its own transaction, under the write lock). Waits, without blocking
   * the event loop, while another connection holds the write lock, up to `timeoutMs`.
   *
   * @param jti - the nonce given to {@link issue}.
   * @param nowMs - the caller's current time in milliseconds; `nowMs >= expiresAtMs` is `'expired'`.
   * @returns `'spent'` for exactly one caller; `'already-spent'`, `'unknown'` or `'expired'` otherwise.
   * @throws {RangeError} when `nowMs` is not finite.
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` on any driver failure (still
   *   locked after `timeoutMs`: nothing was spent, the confirmation stays outstanding; only an
   *   expired one, consumed by the UPDATE before its tombstone could be dropped, then answers
   *   `'already-spent'` instead of `'unknown'` until swept).
   */
  async spend(jti: string, nowMs: number): Promise<SpendOutcome> {
    finiteMs('nowMs', nowMs);
    if (this.#closed) throw new ConfirmLedgerUnavailableError();
    let outcome: SpendOutcome;
    try {
      // Each step is retried on its own: the UPDATE that spends is never run twice once it succeeded.
      const expiresAtMs = await this.#retry.run(() => this.#setup().spend(jti));
      if (expiresAtMs === undefined) {
        outcome = await this.#retry.run(() => this.#setup().notOutstanding(jti));
      } else if (nowMs >= expiresAtMs) {
        // Consumed by the UPDATE above; drop the tombstone so a replay is 'unknown', as in the memory ledger.
        await this.#retry.run(() => this.#setup().dropExpired(jti));
        outcome = 'expired';
      } else {
        outcome = 'spent';
      }
    } catch (error) {
      throw unavailable(error);
    }
    this.#maybeMaintain(nowMs);
    return outcome;
  }

  /**
   * Deletes every entry and tombstone with `expiresAtMs <= nowMs` and drops
   * tombstones beyond `maxTotal`, oldest expiry first.
   *
   * @param nowMs - current time in milliseconds. Defaults to `Date.now()`.
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` on any driver failure (still
   *   locked by another connection after `timeoutMs`).
   */
  async sweep(nowMs: number = Date.now()): Promise<void> {
    finiteMs('nowMs', nowMs);
    if (this.#closed) throw new ConfirmLedgerUnavailableError();
    try {
      await this.#retry.run(() => this.#setup().maintain(nowMs));
    } catch (error) {
      throw unavailable(error);
    }
  }

  /**
   * Closes the database handle. Calls still waiting for a lock reject with
   * `ERR_CONFIRM_LEDGER_UNAVAILABLE` (nothing done). Idempotent; later calls reject likewise.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#retry.cancelAll(new ConfirmLedgerUnavailableError({ cause: new Error('ledger closed') }));
    try {
      this.#db.close();
    } catch {
      // closing twice or on a broken file: nothing left to release
    }
  }

  // ---- ApprovalStore (see approvalStore.ts). Additive: own tables, created on first use; every
  // statement runs through #approvalOp, which retries on SQLITE_BUSY without blocking (BusyRetry).

  #approval: ApprovalStatements | undefined;

  /**
   * Runs one approval-store step: creates the tables on first use, fails closed on any driver error.
   *
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` on any driver failure or a closed ledger.
   */
  async #approvalOp<T>(step: (stmts: ApprovalStatements, db: Database.Database) => T): Promise<T> {
    if (this.#closed) throw new ConfirmLedgerUnavailableError();
    try {
      // The same non-blocking retry as issue and spend: SQLITE_BUSY reruns the whole step from a timer until the deadline.
      return await this.#retry.run(() => {
        this.#approval ??= prepareApprovalStatements(this.#db);
        return step(this.#approval, this.#db);
      });
    } catch (error) {
      if (error instanceof RangeError) throw error;
      throw unavailable(error);
    }
  }

  /** {@link ApprovalStore.openApproval}: one `INSERT` (the id and the jti are both unique). */
  async openApproval(approval: NewApproval, nowMs: number): Promise<void> {
    checkNewApproval(approval);
    finiteMs('nowMs', nowMs);
    const required = requiredOf(approval);
    await this.#approvalOp((st, db) => {
      const open = (): void => {
        // Expired approvals go, and with them their quorum rows.
        if (st.sweepApprovals.run(nowMs).changes > 0) st.sweepQuorums.run();
        try {
          st.insertApproval.run(approval.id, approval.jti, approval.principal, approval.view, approval.expiresAtMs);
        } catch (error) {
          if (isUniqueViolation(error)) throw new RangeError('approval already opened');
          throw error;
        }
        // A quorum's size is written in the same transaction: no step ever sees the approval without it.
        if (required !== undefined) st.setRequired.run(required, approval.id);
      };
      if (required === undefined) open();
      else db.transaction(open).immediate();
    });
  }

  /** {@link ApprovalStore.approvalById}. */
  async approvalById(id: string, nowMs: number): Promise<ApprovalRecord | undefined> {
    finiteMs('nowMs', nowMs);
    return this.#approvalOp((st) => toRecord(st.approvalById.get(id, nowMs)));
  }

  /** {@link ApprovalStore.approvalByJti}. */
  async approvalByJti(jti: string, nowMs: number): Promise<ApprovalRecord | undefined> {
    finiteMs('nowMs', nowMs);
    return this.#approvalOp((st) => toRecord(st.approvalByJti.get(jti, nowMs)));
  }

  /**
   * {@link ApprovalStore.decideApproval}: one `UPDATE … WHERE status = 'pending' … RETURNING` (an
   * approval of a quorum is left to {@link countApproval}).
   */
  async decideApproval(id: string, decision: ApprovalDecision, nowMs: number): Promise<DecideOutcome> {
    finiteMs('nowMs', nowMs);
    const scope = decidedScope(decision) ?? null;
    return this.#approvalOp((st) => {
      const row = st.decide.get(
        decision.status,
        decision.approver,
        decision.credentialId,
        nowMs,
        scope,
        id,
        nowMs,
        decision.status,
      );
      if (row !== undefined) return 'decided';
      const existing = st.approvalState.get(id);
      if (existing === undefined) return 'unknown';
      if (nowMs >= existing.expires_at_ms) return 'expired';
      return 'already-decided';
    });
  }

  /** {@link ApprovalStore.countApproval}: read, count and write in one `BEGIN IMMEDIATE` transaction. */
  async countApproval(id: string, vote: ApprovalVote, nowMs: number): Promise<CountOutcome> {
    checkVote(vote);
    finiteMs('nowMs', nowMs);
    return this.#approvalOp((st, db) =>
      db
        .transaction((): CountOutcome => {
          const row = st.voteState.get(id);
          if (row === undefined || row.status === null) return 'unknown';
          const { outcome, write } = applyVote(
            {
              status: row.status as ApprovalStatus,
              expiresAtMs: row.expires_at_ms,
              ...(row.approvals_required !== null ? { approvalsRequired: row.approvals_required } : {}),
              ...(row.approvals !== null ? { approvals: parseApprovals(row.approvals)! } : {}),
            },
            vote,
            nowMs,
          );
          if (write === undefined) return outcome;
          const list = JSON.stringify(write.approvals);
          st.setApprovals.run(list, id);
          if (write.approved !== undefined) {
            const a = write.approved;
            st.approveCounted.run(a.approver, a.credentialId, nowMs, a.scope ?? null, id);
          }
          return outcome;
        })
        .immediate(),
    );
  }

  /** {@link ApprovalStore.attachGrant}: one `UPDATE … WHERE status = 'approved' AND grant_id IS NULL …`. */
  async attachGrant(id: string, grantId: string, untilMs: number, nowMs: number): Promise<boolean> {
    checkAttachGrant(grantId, untilMs);
    finiteMs('nowMs', nowMs);
    return this.#approvalOp((st) => st.attachGrant.run(grantId, untilMs, id, nowMs).changes === 1);
  }

  /**
   * {@link ApprovalStore.putChallenge}; expired challenges are swept, beyond 8 (`MAX_CHALLENGES_PER_APPROVAL`)
   * of one id its oldest dropped, beyond `maxTotal` in all the oldest dropped; one transaction.
   */
  async putChallenge(challenge: string, id: string, expiresAtMs: number, nowMs: number): Promise<void> {
    finiteMs('expiresAtMs', expiresAtMs);
    finiteMs('nowMs', nowMs);
    await this.#approvalOp((st, db) =>
      db
        .transaction(() => {
          st.sweepChallenges.run(nowMs);
          const excess = (st.challengeCount.get()?.n ?? 0) - this.maxTotal + 1;
          if (excess > 0) st.capChallenges.run(excess);
          st.capApprovalChallenges.run(id, id, MAX_CHALLENGES_PER_APPROVAL - 1);
          try {
            st.insertChallenge.run(challenge, id, expiresAtMs);
          } catch (error) {
            if (isUniqueViolation(error)) throw new RangeError('challenge already issued');
            throw error;
          }
        })
        .immediate(),
    );
  }

  /** {@link ApprovalStore.takeChallenge}: one `DELETE … RETURNING`. */
  async takeChallenge(challenge: string, nowMs: number): Promise<string | undefined> {
    finiteMs('nowMs', nowMs);
    return this.#approvalOp((st) => {
      const row = st.takeChallenge.get(challenge);
      return row !== undefined && nowMs < row.expires_at_ms ? row.approval_id : undefined;
    });
  }

  /** {@link ApprovalStore.advanceCounter}: read, compare and write in one `BEGIN IMMEDIATE` transaction. */
  async advanceCounter(credentialId: string, newCounter: number, enrolledCounter: number): Promise<boolean> {
    return this.#approvalOp((st, db) =>
      db
        .transaction(() => {
          const stored = st.counter.get(credentialId)?.counter ?? enrolledCounter;
          if (!counterAccepted(stored, newCounter)) return false;
          st.setCounter.run(credentialId, newCounter);
          return true;
        })
        .immediate(),
    );
  }

  // ---- LinkStore (see linkStore.ts). Additive: its own table beside the approvals, created on first
  // use; every step one statement or one `BEGIN IMMEDIATE` transaction, retried as the approval steps are.

  #link: LinkStatements | undefined;

  /** {@link ApprovalStore.openApproval} with its link, counted and checked in one `BEGIN IMMEDIATE` transaction. */
  async openLinkApproval(approval: NewLinkApproval, maxPending: number, nowMs: number): Promise<OpenLinkOutcome> {
    checkNewLinkApproval(approval, maxPending);
    finiteMs('nowMs', nowMs);
    return this.#approvalOp((st, db) => {
      const lk = (this.#link ??= prepareLinkStatements(db));
      return db
        .transaction((): OpenLinkOutcome => {
          lk.sweep.run(nowMs);
          if (lk.live.get(approval.linkKey, nowMs) !== undefined) return 'exists';
          if ((lk.pendingOf.get(approval.principal, nowMs)?.n ?? 0) >= maxPending) return 'too-many';
          if (st.sweepApprovals.run(nowMs).changes > 0) st.sweepQuorums.run();
          try {
            st.insertApproval.run(approval.id, approval.jti, approval.principal, approval.view, approval.expiresAtMs);
          } catch (error) {
            if (isUniqueViolation(error)) throw new RangeError('approval already opened');
            throw error;
          }
          // A quorum's size in the same transaction, as openApproval writes it.
          const required = requiredOf(approval);
          if (required !== undefined) st.setRequired.run(required, approval.id);
          lk.insert.run(approval.linkKey, approval.id, approval.principal, approval.kept, approval.expiresAtMs);
          return 'opened';
        })
        .immediate();
    });
  }

  /** {@link mcp-confirm!LinkStore.approvalByLink}: one `SELECT` joining the link to its approval. */
  async approvalByLink(linkKey: string, nowMs: number): Promise<LinkedApproval | undefined> {
    finiteMs('nowMs', nowMs);
    return this.#approvalOp((_st, db) => {
      const row = (this.#link ??= prepareLinkStatements(db)).read.get(linkKey, nowMs);
      if (row === undefined) return undefined;
      const { kept, ...approval } = row;
      return { approval: toRecord(approval)!, kept };
    });
  }

  /** {@link mcp-confirm!LinkStore.finishLink}: one `DELETE` of the key's link to that approval. */
  async finishLink(linkKey: string, id: string, nowMs: number): Promise<boolean> {
    finiteMs('nowMs', nowMs);
    return this.#approvalOp(
      (_st, db) => (this.#link ??= prepareLinkStatements(db)).finish.run(linkKey, id).changes === 1,
    );
  }

  // ---- AuditHeadStore (see auditHeads.ts). Additive: its own table, created on the first record
  // (a read of a file without it changes nothing); one statement per step, retried as issue and spend are.

  #heads: AuditHeadStatements | undefined;

  /**
   * {@link AuditHeadStore.recordAuditHead}: one `INSERT … ON CONFLICT (path) DO UPDATE … WHERE` another
   * trail or a later `seq` (autocommit: atomic across processes).
   */
  async recordAuditHead(path: string, head: AuditHead): Promise<void> {
    checkAuditHead(path, head);
    await this.#headOp(true, (st) => {
      st!.record.run(path, head.trail, head.seq, head.mac);
    });
  }

  /** {@link AuditHeadStore.auditHead}: one read; `undefined` also when the file never held a head (nothing is created). */
  async auditHead(path: string): Promise<AuditHead | undefined> {
    checkAuditHeadPath(path);
    return this.#headOp(false, (st) => {
      const row = st?.read.get(path);
      if (row === undefined) return undefined;
      const head = { trail: row.trail, seq: row.seq, mac: row.mac };
      if (!isAuditHead(head)) throw new TypeError('unexpected audit head row');
      return head;
    });
  }

  /**
   * Runs one audit-head step with its statements (`undefined` when the table does not exist and
   * `create` is false), retried on `SQLITE_BUSY` without blocking.
   *
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` on any driver failure or a closed ledger.
   */
  async #headOp<T>(create: boolean, step: (stmts: AuditHeadStatements | undefined) => T): Promise<T> {
    if (this.#closed) throw new ConfirmLedgerUnavailableError();
    try {
      return await this.#retry.run(() => {
        this.#setup();
        this.#heads ??= prepareAuditHeadStatements(this.#db, create);
        return step(this.#heads);
      });
    } catch (error) {
      throw unavailable(error);
    }
  }

  // ---- GrantStore (see grantStore.ts). Additive: own tables, created on the first grant or plan call;
  // every step is one transaction (or statement) run through #grantOp, retried on SQLITE_BUSY as the others.

  #grantOps: GrantOps | undefined;

  /**
   * Runs one grant-store step: the ledger's setup first (a spend needs it), the tables on first use;
   * a `RangeError` of the step (a duplicate id) passes through, any driver error fails closed.
   *
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` on any driver failure or a closed ledger.
   */
  async #grantOp<T>(step: (ops: GrantOps) => T): Promise<T> {
    if (this.#closed) throw new ConfirmLedgerUnavailableError();
    try {
      return await this.#retry.run(() => {
        const ledger = this.#setup();
        this.#grantOps ??= prepareGrantOps(this.#db, ledger, this);
        return step(this.#grantOps);
      });
    } catch (error) {
      if (error instanceof RangeError) throw error;
      throw unavailable(error);
    }
  }

  /** {@link GrantStore.spendGranting}: the spend and the creation in one `BEGIN IMMEDIATE` transaction. */
  async spendGranting(jti: string, nowMs: number, grant: NewGrant): Promise<SpendCreating> {
    checkNewGrant(grant, nowMs);
    const result = await this.#grantOp((ops) => ops.spendGranting(jti, nowMs, grant));
    this.#maybeMaintain(nowMs);
    return result;
  }

  /** {@link GrantStore.findGrants}: one read. */
  async findGrants(query: GrantQuery, nowMs: number): Promise<Grant[]> {
    checkGrantQuery(query);
    checkNowMs(nowMs);
    return this.#grantOp((ops) => ops.findGrants(query, nowMs));
  }

  /** {@link GrantStore.takeGrantUse}: one transaction (the conditional `UPDATE … RETURNING`, and the reason when none). */
  async takeGrantUse(id: string, nowMs: number): Promise<TakeGrantOutcome> {
    checkNowMs(nowMs);
    return this.#grantOp((ops) => ops.takeGrantUse(id, nowMs));
  }

  /** {@link GrantStore.revokeGrant}: one transaction. */
  async revokeGrant(id: string, nowMs: number): Promise<'revoked' | 'unknown'> {
    checkNowMs(nowMs);
    return this.#grantOp((ops) => ops.revokeGrant(id, nowMs));
  }

  /** {@link GrantStore.spendPlanning}: the spend and the creation in one `BEGIN IMMEDIATE` transaction. */
  async spendPlanning(jti: string, nowMs: number, plan: NewPlan): Promise<SpendCreating> {
    checkNewPlan(plan, nowMs);
    const result = await this.#grantOp((ops) => ops.spendPlanning(jti, nowMs, plan));
    this.#maybeMaintain(nowMs);
    return result;
  }

  /** {@link GrantStore.takePlanSlot}: one transaction. */
  async takePlanSlot(key: string, nowMs: number): Promise<TakenPlanSlot | undefined> {
    checkNowMs(nowMs);
    return this.#grantOp((ops) => ops.takePlanSlot(key, nowMs));
  }

  /**
   * Every {@link MAINTENANCE_EVERY} calls, one attempt at housekeeping, never waited
   * for: under another connection's lock it fails at once (`busy_timeout` 0) and is
   * tried again after the next call.
   */
  #maybeMaintain(nowMs: number): void {
    if (++this.#count % MAINTENANCE_EVERY !== 0 && !this.#maintenanceDue) return;
    try {
      this.#setup().maintain(nowMs);
      this.#maintenanceDue = false;
    } catch (error) {
      // Housekeeping only: the operation itself succeeded, and the next one will
      // report a broken store. Bounds are still enforced by issue's own sweep.
      this.#maintenanceDue = isBusy(error) && !this.#closed;
    }
  }
}

const APPROVALS = 'mcp_confirm_approvals';
const CHALLENGES = 'mcp_confirm_challenges';
const COUNTERS = 'mcp_confirm_counters';
/** A quorum's size and its counted approvals, one row per approval that has either (its own table: the approvals table is unchanged). */
const QUORUMS = 'mcp_confirm_approval_quorums';

const APPROVAL_SCHEMA = `
CREATE TABLE IF NOT EXISTS ${APPROVALS} (
  id TEXT NOT NULL PRIMARY KEY,
  jti TEXT NOT NULL UNIQUE,
  principal TEXT NOT NULL,
  view TEXT NOT NULL,
  expires_at_ms INTEGER NOT NULL,
  status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'declined')),
  decided_at_ms INTEGER NOT NULL DEFAULT 0,
  approver TEXT NOT NULL DEFAULT '',
  credential_id TEXT NOT NULL DEFAULT '',
  scope TEXT,
  grant_id TEXT
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS ${APPROVALS}_expiry ON ${APPROVALS} (expires_at_ms);
CREATE TABLE IF NOT EXISTS ${CHALLENGES} (
  challenge TEXT NOT NULL PRIMARY KEY,
  approval_id TEXT NOT NULL,
  expires_at_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS ${CHALLENGES}_expiry ON ${CHALLENGES} (expires_at_ms);
CREATE INDEX IF NOT EXISTS ${CHALLENGES}_approval ON ${CHALLENGES} (approval_id, expires_at_ms);
CREATE TABLE IF NOT EXISTS ${COUNTERS} (
  credential_id TEXT NOT NULL PRIMARY KEY,
  counter INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ${QUORUMS} (
  id TEXT NOT NULL PRIMARY KEY,
  approvals_required INTEGER NOT NULL DEFAULT 1,
  approvals TEXT
) WITHOUT ROWID;
`;

interface ApprovalRow {
  id: string;
  jti: string;
  principal: string;
  view: string;
  expires_at_ms: number;
  status: string;
  decided_at_ms: number;
  approver: string;
  credential_id: string;
  scope: string | null;
  grant_id: string | null;
  approvals_required: number | null;
  approvals: string | null;
}

/**
 * Columns added to the approvals table after its first release, each with its type: a file made
 * before them gets them (`ALTER TABLE … ADD COLUMN`, NULL in existing rows) when its approval
 * statements are first prepared.
 */
const APPROVAL_ADDED_COLUMNS: ReadonlyArray<readonly [string, string]> = [
  ['scope', 'TEXT'],
  ['grant_id', 'TEXT'],
];

interface ApprovalStatements {
  insertApproval: Statement<[string, string, string, string, number], unknown>;
  sweepApprovals: Statement<[number], unknown>;
  approvalById: Statement<[string, number], ApprovalRow>;
  approvalByJti: Statement<[string, number], ApprovalRow>;
  decide: Statement<[string, string, string, number, string | null, string, number, string], { id: string }>;
  setRequired: Statement<[number, string], unknown>;
  sweepQuorums: Statement<[], unknown>;
  voteState: Statement<
    [string],
    { status: string; expires_at_ms: number; approvals_required: number | null; approvals: string | null }
  >;
  setApprovals: Statement<[string, string], unknown>;
  approveCounted: Statement<[string, string, number, string | null, string], unknown>;
  attachGrant: Statement<[string, number, string, number], unknown>;
  approvalState: Statement<[string], { expires_at_ms: number }>;
  insertChallenge: Statement<[string, string, number], unknown>;
  sweepChallenges: Statement<[number], unknown>;
  challengeCount: Statement<[], { n: number }>;
  capChallenges: Statement<[number], unknown>;
  capApprovalChallenges: Statement<[string, string, number], unknown>;
  takeChallenge: Statement<[string], { approval_id: string; expires_at_ms: number }>;
  counter: Statement<[string], { counter: number }>;
  setCounter: Statement<[string, number], unknown>;
}

function prepareApprovalStatements(db: Database.Database): ApprovalStatements {
  db.transaction(() => {
    db.exec(APPROVAL_SCHEMA);
    // A file made before a column was added gets it here (in the same write transaction, so two processes never both add it).
    const have = new Set(
      (db.prepare(`PRAGMA table_info(${APPROVALS})`).all() as Array<{ name: string }>).map((c) => c.name),
    );
    for (const [name, type] of APPROVAL_ADDED_COLUMNS)
      if (!have.has(name)) db.exec(`ALTER TABLE ${APPROVALS} ADD COLUMN ${name} ${type}`);
  }).immediate();
  const columns =
    'a.id, jti, principal, view, expires_at_ms, status, decided_at_ms, approver, credential_id, scope, grant_id, approvals_required, approvals';
  // Every read of an approval brings its quorum row along (none: one approver, nothing counted).
  const joined = `${APPROVALS} a LEFT JOIN ${QUORUMS} q ON q.id = a.id`;
  return {
    insertApproval: db.prepare(
      `INSERT INTO ${APPROVALS} (id, jti, principal, view, expires_at_ms) VALUES (?, ?, ?, ?, ?)`,
    ),
    sweepApprovals: db.prepare(`DELETE FROM ${APPROVALS} WHERE expires_at_ms <= ?`),
    sweepQuorums: db.prepare(
      `DELETE FROM ${QUORUMS} WHERE NOT EXISTS (SELECT 1 FROM ${APPROVALS} a WHERE a.id = ${QUORUMS}.id)`,
    ),
    approvalById: db.prepare(`SELECT ${columns} FROM ${joined} WHERE a.id = ? AND expires_at_ms > ?`),
    approvalByJti: db.prepare(`SELECT ${columns} FROM ${joined} WHERE jti = ? AND expires_at_ms > ?`),
    decide: db.prepare(
      `UPDATE ${APPROVALS} SET status = ?, approver = ?, credential_id = ?, decided_at_ms = ?, scope = ?
        WHERE id = ? AND status = 'pending' AND expires_at_ms > ?
          AND (? = 'declined' OR NOT EXISTS
            (SELECT 1 FROM ${QUORUMS} q WHERE q.id = ${APPROVALS}.id AND q.approvals_required > 1)) RETURNING id`,
    ),
    setRequired: db.prepare(`INSERT INTO ${QUORUMS} (approvals_required, id) VALUES (?, ?)`),
    voteState: db.prepare(`SELECT status, expires_at_ms, approvals_required, approvals FROM ${joined} WHERE a.id = ?`),
    setApprovals: db.prepare(
      `INSERT INTO ${QUORUMS} (approvals, id) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET approvals = excluded.approvals`,
    ),
    approveCounted: db.prepare(
      `UPDATE ${APPROVALS} SET status = 'approved', approver = ?, credential_id = ?, decided_at_ms = ?, scope = ?
        WHERE id = ?`,
    ),
    attachGrant: db.prepare(
      `UPDATE ${APPROVALS} SET grant_id = ?, expires_at_ms = max(expires_at_ms, ?)
        WHERE id = ? AND status = 'approved' AND grant_id IS NULL AND expires_at_ms > ?`,
    ),
    approvalState: db.prepare(`SELECT expires_at_ms FROM ${APPROVALS} WHERE id = ?`),
    insertChallenge: db.prepare(`INSERT INTO ${CHALLENGES} (challenge, approval_id, expires_at_ms) VALUES (?, ?, ?)`),
    sweepChallenges: db.prepare(`DELETE FROM ${CHALLENGES} WHERE expires_at_ms <= ?`),
    challengeCount: db.prepare(`SELECT count(*) AS n FROM ${CHALLENGES}`),
    capChallenges: db.prepare(
      `DELETE FROM ${CHALLENGES} WHERE challenge IN (SELECT challenge FROM ${CHALLENGES} ORDER BY expires_at_ms LIMIT ?)`,
    ),
    // Keeps the newest `LIMIT` challenges of one approval (by expiry, then challenge), deleting the rest.
    capApprovalChallenges: db.prepare(
      `DELETE FROM ${CHALLENGES} WHERE approval_id = ? AND challenge NOT IN
        (SELECT challenge FROM ${CHALLENGES} WHERE approval_id = ? ORDER BY expires_at_ms DESC, challenge DESC LIMIT ?)`,
    ),
    takeChallenge: db.prepare(`DELETE FROM ${CHALLENGES} WHERE challenge = ? RETURNING approval_id, expires_at_ms`),
    counter: db.prepare(`SELECT counter FROM ${COUNTERS} WHERE credential_id = ?`),
    setCounter: db.prepare(
      `INSERT INTO ${COUNTERS} (credential_id, counter) VALUES (?, ?) ON CONFLICT (credential_id) DO UPDATE SET counter = excluded.counter`,
    ),
  };
}

function toRecord(row: ApprovalRow | undefined): ApprovalRecord | undefined {
  if (row === undefined) return undefined;
  const status = row.status as ApprovalStatus;
  if (status !== 'pending' && status !== 'approved' && status !== 'declined')
    throw new TypeError('unexpected approval status');
  return {
    id: row.id,
    jti: row.jti,
    principal: row.principal,
    view: row.view,
    expiresAtMs: row.expires_at_ms,
    status,
    decidedAtMs: row.decided_at_ms,
    approver: row.approver,
    credentialId: row.credential_id,
    ...(row.scope === 'call' || row.scope === 'grant' ? { scope: row.scope } : {}),
    ...(typeof row.grant_id === 'string' && row.grant_id !== '' ? { grantId: row.grant_id } : {}),
    ...(typeof row.approvals_required === 'number' && row.approvals_required > 1
      ? { approvalsRequired: row.approvals_required }
      : {}),
    ...(typeof row.approvals === 'string' && row.approvals !== '' ? { approvals: parseApprovals(row.approvals)! } : {}),
  };
}

const LINKS = 'mcp_confirm_approval_links';

/** The links of link approvals (see linkStore.ts): one per key, each to one approval, expiring with it. */
const LINK_SCHEMA = `
CREATE TABLE IF NOT EXISTS ${LINKS} (
  link_key TEXT NOT NULL PRIMARY KEY,
  approval_id TEXT NOT NULL,
  principal TEXT NOT NULL,
  kept TEXT NOT NULL,
  expires_at_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS ${LINKS}_principal ON ${LINKS} (principal, expires_at_ms);
CREATE INDEX IF NOT EXISTS ${LINKS}_expiry ON ${LINKS} (expires_at_ms);
`;

interface LinkStatements {
  sweep: Statement<[number], unknown>;
  live: Statement<[string, number], { approval_id: string }>;
  pendingOf: Statement<[string, number], { n: number }>;
  insert: Statement<[string, string, string, string, number], unknown>;
  read: Statement<[string, number], ApprovalRow & { kept: string }>;
  finish: Statement<[string, string], unknown>;
}

/** The link statements, the table created first (the approvals table exists: prepared before). */
function prepareLinkStatements(db: Database.Database): LinkStatements {
  db.transaction(() => db.exec(LINK_SCHEMA)).immediate();
  const columns =
    'a.id, a.jti, a.principal, a.view, a.expires_at_ms, a.status, a.decided_at_ms, a.approver, a.credential_id, a.scope, a.grant_id, q.approvals_required, q.approvals';
  return {
    sweep: db.prepare(`DELETE FROM ${LINKS} WHERE expires_at_ms <= ?`),
    live: db.prepare(
      `SELECT l.approval_id FROM ${LINKS} l JOIN ${APPROVALS} a ON a.id = l.approval_id
        WHERE l.link_key = ? AND a.expires_at_ms > ?`,
    ),
    pendingOf: db.prepare(
      `SELECT count(*) AS n FROM ${LINKS} l JOIN ${APPROVALS} a ON a.id = l.approval_id
        WHERE l.principal = ? AND a.status = 'pending' AND a.expires_at_ms > ?`,
    ),
    insert: db.prepare(
      `INSERT INTO ${LINKS} (link_key, approval_id, principal, kept, expires_at_ms) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (link_key) DO UPDATE SET approval_id = excluded.approval_id, principal = excluded.principal,
          kept = excluded.kept, expires_at_ms = excluded.expires_at_ms`,
    ),
    read: db.prepare(
      // With the approval's quorum row, as every read of an approval brings it (none: one approver).
      `SELECT ${columns}, l.kept FROM ${LINKS} l JOIN ${APPROVALS} a ON a.id = l.approval_id
        LEFT JOIN ${QUORUMS} q ON q.id = a.id
        WHERE l.link_key = ? AND a.expires_at_ms > ?`,
    ),
    finish: db.prepare(`DELETE FROM ${LINKS} WHERE link_key = ? AND approval_id = ?`),
  };
}

const AUDIT_HEADS = 'mcp_confirm_audit_heads';

const AUDIT_HEADS_SCHEMA = `
CREATE TABLE IF NOT EXISTS ${AUDIT_HEADS} (
  path TEXT NOT NULL PRIMARY KEY,
  trail TEXT NOT NULL,
  seq INTEGER NOT NULL CHECK (seq >= 1),
  mac TEXT NOT NULL
) WITHOUT ROWID;
`;

interface AuditHeadStatements {
  record: Statement<[string, string, number, string], unknown>;
  read: Statement<[string], { trail: string; seq: number; mac: string }>;
}

/** The audit-head statements; with `create`, the table first; without, `undefined` while the table does not exist. */
function prepareAuditHeadStatements(db: Database.Database, create: boolean): AuditHeadStatements | undefined {
  if (create) {
    db.transaction(() => db.exec(AUDIT_HEADS_SCHEMA)).immediate();
  } else if (
    db.prepare(`SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?`).get(AUDIT_HEADS) === undefined
  ) {
    return undefined;
  }
  return {
    record: db.prepare(
      `INSERT INTO ${AUDIT_HEADS} (path, trail, seq, mac) VALUES (?, ?, ?, ?)
         ON CONFLICT (path) DO UPDATE SET trail = excluded.trail, seq = excluded.seq, mac = excluded.mac
         WHERE excluded.trail <> ${AUDIT_HEADS}.trail OR excluded.seq > ${AUDIT_HEADS}.seq`,
    ),
    read: db.prepare(`SELECT trail, seq, mac FROM ${AUDIT_HEADS} WHERE path = ?`),
  };
}

const GRANTS = 'mcp_confirm_grants';
const PLANS = 'mcp_confirm_plans';
const PLAN_SLOTS = 'mcp_confirm_plan_slots';

/**
 * The grant and plan tables. Rowid tables (a grant's texts may be kilobytes, beyond what suits a
 * `WITHOUT ROWID` table's pages). The partial indexes hold the live grants (per principal and in
 * all) and the ended ones, so each bound is a `count(*)` over exactly the rows it counts.
 */
const GRANT_SCHEMA = `
CREATE TABLE IF NOT EXISTS ${GRANTS} (
  id TEXT NOT NULL PRIMARY KEY,
  audience TEXT NOT NULL,
  principal TEXT NOT NULL,
  tool TEXT NOT NULL,
  scope TEXT NOT NULL,
  binding TEXT NOT NULL,
  summary TEXT NOT NULL,
  policy_digest TEXT NOT NULL,
  approver TEXT NOT NULL,
  max_uses INTEGER NOT NULL,
  uses_left INTEGER NOT NULL CHECK (uses_left >= 0),
  created_at_ms INTEGER NOT NULL,
  expires_at_ms INTEGER NOT NULL,
  revoked INTEGER NOT NULL DEFAULT 0 CHECK (revoked IN (0, 1))
);
CREATE INDEX IF NOT EXISTS ${GRANTS}_expiry ON ${GRANTS} (expires_at_ms);
CREATE INDEX IF NOT EXISTS ${GRANTS}_live_all ON ${GRANTS} (expires_at_ms) WHERE uses_left > 0 AND revoked = 0;
CREATE INDEX IF NOT EXISTS ${GRANTS}_ended ON ${GRANTS} (expires_at_ms, id) WHERE uses_left = 0 OR revoked = 1;
CREATE TABLE IF NOT EXISTS ${PLANS} (
  id TEXT NOT NULL PRIMARY KEY,
  audience TEXT NOT NULL,
  principal TEXT NOT NULL,
  approver TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  expires_at_ms INTEGER NOT NULL,
  slots INTEGER NOT NULL,
  binding TEXT NOT NULL DEFAULT '',
  slots_left INTEGER NOT NULL CHECK (slots_left >= 0)
);
CREATE INDEX IF NOT EXISTS ${PLANS}_expiry ON ${PLANS} (expires_at_ms);
CREATE TABLE IF NOT EXISTS ${PLAN_SLOTS} (
  plan_id TEXT NOT NULL,
  idx INTEGER NOT NULL,
  slot_key TEXT NOT NULL,
  tool TEXT NOT NULL,
  identity TEXT NOT NULL,
  expires_at_ms INTEGER NOT NULL,
  PRIMARY KEY (plan_id, idx)
);
CREATE INDEX IF NOT EXISTS ${PLAN_SLOTS}_key ON ${PLAN_SLOTS} (slot_key, expires_at_ms, plan_id);
CREATE INDEX IF NOT EXISTS ${PLAN_SLOTS}_expiry ON ${PLAN_SLOTS} (expires_at_ms);
`;

/**
 * The indexes each bound per principal and binding counts over, created after {@link GRANT_SCHEMA}
 * and after a plans table made before it had a `binding` column gained one.
 */
const GRANT_BOUND_INDEXES = `
CREATE INDEX IF NOT EXISTS ${GRANTS}_live_bound ON ${GRANTS} (principal, binding, expires_at_ms) WHERE uses_left > 0 AND revoked = 0;
CREATE INDEX IF NOT EXISTS ${PLANS}_bound ON ${PLANS} (principal, binding, expires_at_ms);
`;

/** Every table and index of {@link GRANT_SCHEMA}: when all exist, the first grant call needs no write lock to set up. */
const GRANT_SCHEMA_OBJECTS = [
  GRANTS,
  `${GRANTS}_expiry`,
  `${GRANTS}_live_bound`,
  `${GRANTS}_live_all`,
  `${GRANTS}_ended`,
  PLANS,
  `${PLANS}_bound`,
  `${PLANS}_expiry`,
  PLAN_SLOTS,
  `${PLAN_SLOTS}_key`,
  `${PLAN_SLOTS}_expiry`,
];

interface GrantRow {
  id: string;
  audience: string;
  principal: string;
  tool: string;
  scope: string;
  binding: string;
  summary: string;
  policy_digest: string;
  approver: string;
  max_uses: number;
  uses_left: number;
  created_at_ms: number;
  expires_at_ms: number;
}

/** What the grant-store steps run: each one transaction (or one statement), all or nothing. */
interface GrantOps {
  spendGranting: (jti: string, nowMs: number, grant: NewGrant) => SpendCreating;
  findGrants: (query: GrantQuery, nowMs: number) => Grant[];
  takeGrantUse: (id: string, nowMs: number) => TakeGrantOutcome;
  revokeGrant: (id: string, nowMs: number) => 'revoked' | 'unknown';
  spendPlanning: (jti: string, nowMs: number, plan: NewPlan) => SpendCreating;
  takePlanSlot: (key: string, nowMs: number) => TakenPlanSlot | undefined;
}

/** The ledger's spend inside a transaction: the same statements and outcomes as {@link SqliteLedger.spend}. */
function spendInTransaction(ledger: Ops, jti: string, nowMs: number): SpendOutcome {
  const expiresAtMs = ledger.spend(jti);
  if (expiresAtMs === undefined) return ledger.notOutstanding(jti);
  if (nowMs >= expiresAtMs) {
    ledger.dropExpired(jti);
    return 'expired';
  }
  return 'spent';
}

function toGrant(row: GrantRow): Grant {
  return {
    id: row.id,
    audience: row.audience,
    principal: row.principal,
    tool: row.tool,
    scope: row.scope,
    binding: row.binding,
    summary: row.summary,
    policyDigest: row.policy_digest,
    approver: row.approver,
    maxUses: row.max_uses,
    usesLeft: row.uses_left,
    createdAtMs: row.created_at_ms,
    expiresAtMs: row.expires_at_ms,
  };
}

/** The grant tables (created when missing, in one `BEGIN IMMEDIATE`), their statements and the steps. */
function prepareGrantOps(
  db: Database.Database,
  ledger: Ops,
  bounds: { maxGrantsPerPrincipal: number; maxGrants: number; maxPlansPerPrincipal: number; maxPlans: number },
): GrantOps {
  const present = db
    .prepare(
      `SELECT count(*) AS n FROM sqlite_schema WHERE name IN (${GRANT_SCHEMA_OBJECTS.map(() => '?').join(', ')})`,
    )
    .get(...GRANT_SCHEMA_OBJECTS) as { n: number };
  if (present.n !== GRANT_SCHEMA_OBJECTS.length)
    db.transaction(() => {
      db.exec(GRANT_SCHEMA);
      // A plans table made before plans had a binding gets the column (existing rows: '').
      const have = (db.prepare(`PRAGMA table_info(${PLANS})`).all() as Array<{ name: string }>).map((c) => c.name);
      if (!have.includes('binding')) db.exec(`ALTER TABLE ${PLANS} ADD COLUMN binding TEXT NOT NULL DEFAULT ''`);
      db.exec(GRANT_BOUND_INDEXES);
    }).immediate();
  const LIVE = 'uses_left > 0 AND revoked = 0';
  const columns =
    'id, audience, principal, tool, scope, binding, summary, policy_digest, approver, max_uses, uses_left, created_at_ms, expires_at_ms';
  const st = {
    grantExists: db.prepare<[string], { one: number }>(`SELECT 1 AS one FROM ${GRANTS} WHERE id = ?`),
    sweepGrants: db.prepare<[number], unknown>(`DELETE FROM ${GRANTS} WHERE expires_at_ms <= ?`),
    grantCounts: db.prepare<[string, string, number, number], { held: number; total: number }>(
      `SELECT (SELECT count(*) FROM ${GRANTS} WHERE principal = ? AND binding = ? AND expires_at_ms > ? AND ${LIVE}) AS held,
              (SELECT count(*) FROM ${GRANTS} WHERE expires_at_ms > ? AND ${LIVE}) AS total`,
    ),
    insertGrant: db.prepare<
      [string, string, string, string, string, string, string, string, string, number, number, number, number],
      unknown
    >(`INSERT INTO ${GRANTS} (${columns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    // Keeps the `maxGrants` ended grants (used up or revoked, not expired) that expire last.
    capEnded: db.prepare<[number, number], unknown>(
      `DELETE FROM ${GRANTS} WHERE id IN (SELECT id FROM ${GRANTS} WHERE (uses_left = 0 OR revoked = 1) AND expires_at_ms > ?
         ORDER BY expires_at_ms DESC, id DESC LIMIT -1 OFFSET ?)`,
    ),
    findAll: db.prepare<[number], GrantRow>(
      `SELECT ${columns} FROM ${GRANTS} WHERE expires_at_ms > ? AND ${LIVE} ORDER BY created_at_ms, id`,
    ),
    findOf: db.prepare<[string, number], GrantRow>(
      `SELECT ${columns} FROM ${GRANTS} WHERE principal = ? AND expires_at_ms > ? AND ${LIVE} ORDER BY created_at_ms, id`,
    ),
    takeUse: db.prepare<[string, number], { uses_left: number; expires_at_ms: number }>(
      `UPDATE ${GRANTS} SET uses_left = uses_left - 1 WHERE id = ? AND expires_at_ms > ? AND ${LIVE} RETURNING uses_left, expires_at_ms`,
    ),
    grantState: db.prepare<[string], { uses_left: number; expires_at_ms: number; revoked: number }>(
      `SELECT uses_left, expires_at_ms, revoked FROM ${GRANTS} WHERE id = ?`,
    ),
    revoke: db.prepare<[string, number], { id: string }>(
      `UPDATE ${GRANTS} SET revoked = 1 WHERE id = ? AND expires_at_ms > ? AND ${LIVE} RETURNING id`,
    ),
    planExists: db.prepare<[string], { one: number }>(`SELECT 1 AS one FROM ${PLANS} WHERE id = ?`),
    sweepPlans: db.prepare<[number], unknown>(`DELETE FROM ${PLANS} WHERE expires_at_ms <= ?`),
    sweepSlots: db.prepare<[number], unknown>(`DELETE FROM ${PLAN_SLOTS} WHERE expires_at_ms <= ?`),
    planCounts: db.prepare<[string, string, number, number], { held: number; total: number }>(
      `SELECT (SELECT count(*) FROM ${PLANS} WHERE principal = ? AND binding = ? AND expires_at_ms > ?) AS held,
              (SELECT count(*) FROM ${PLANS} WHERE expires_at_ms > ?) AS total`,
    ),
    insertPlan: db.prepare<[string, string, string, string, string, number, number, number, number], unknown>(
      `INSERT INTO ${PLANS} (id, audience, principal, binding, approver, created_at_ms, expires_at_ms, slots, slots_left) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    insertSlot: db.prepare<[string, number, string, string, string, number], unknown>(
      `INSERT INTO ${PLAN_SLOTS} (plan_id, idx, slot_key, tool, identity, expires_at_ms) VALUES (?, ?, ?, ?, ?, ?)`,
    ),
    // The unused slot with the key of the live plan expiring first (then the lowest plan id).
    firstSlot: db.prepare<[string, number], { plan_id: string; idx: number; identity: string; expires_at_ms: number }>(
      `SELECT plan_id, idx, identity, expires_at_ms FROM ${PLAN_SLOTS} WHERE slot_key = ? AND expires_at_ms > ?
         ORDER BY expires_at_ms, plan_id LIMIT 1`,
    ),
    deleteSlot: db.prepare<[string, number], unknown>(`DELETE FROM ${PLAN_SLOTS} WHERE plan_id = ? AND idx = ?`),
    useSlot: db.prepare<[string], { slots_left: number }>(
      `UPDATE ${PLANS} SET slots_left = slots_left - 1 WHERE id = ? RETURNING slots_left`,
    ),
    deletePlan: db.prepare<[string], unknown>(`DELETE FROM ${PLANS} WHERE id = ?`),
  };
  const capEnded = (nowMs: number): void => {
    st.capEnded.run(nowMs, bounds.maxGrants);
  };
  return {
    spendGranting: db.transaction((jti: string, nowMs: number, g: NewGrant): SpendCreating => {
      // A duplicate id is refused before the spend: the transaction rolls back, nothing spent.
      if (st.grantExists.get(g.id) !== undefined) throw new RangeError('grant id already in the store');
      const spend = spendInTransaction(ledger, jti, nowMs);
      if (spend !== 'spent') return { spend, created: 'none' };
      st.sweepGrants.run(nowMs);
      const c = st.grantCounts.get(g.principal, g.binding, nowMs, nowMs)!;
      if (c.held >= bounds.maxGrantsPerPrincipal || c.total >= bounds.maxGrants) return { spend, created: 'full' };
      st.insertGrant.run(
        g.id,
        g.audience,
        g.principal,
        g.tool,
        g.scope,
        g.binding,
        g.summary,
        g.policyDigest,
        g.approver,
        g.maxUses,
        g.maxUses - 1,
        g.createdAtMs,
        g.expiresAtMs,
      );
      if (g.maxUses === 1) capEnded(nowMs);
      return { spend, created: 'created' };
    }).immediate,
    findGrants: (query, nowMs) =>
      (query.principal === undefined ? st.findAll.all(nowMs) : st.findOf.all(query.principal, nowMs))
        .filter(
          (row) =>
            (query.audience === undefined || row.audience === query.audience) &&
            (query.tool === undefined || row.tool === query.tool),
        )
        .map(toGrant),
    takeGrantUse: db.transaction((id: string, nowMs: number): TakeGrantOutcome => {
      const row = st.takeUse.get(id, nowMs);
      if (row !== undefined) {
        if (row.uses_left === 0) capEnded(nowMs);
        return { taken: true, usesLeft: row.uses_left, expiresAtMs: row.expires_at_ms };
      }
      const state = st.grantState.get(id);
      if (state === undefined) return { taken: false, reason: 'unknown' };
      if (nowMs >= state.expires_at_ms) return { taken: false, reason: 'expired' };
      if (state.revoked === 1) return { taken: false, reason: 'revoked' };
      return { taken: false, reason: 'exhausted' };
    }).immediate,
    revokeGrant: db.transaction((id: string, nowMs: number): 'revoked' | 'unknown' => {
      if (st.revoke.get(id, nowMs) === undefined) return 'unknown';
      capEnded(nowMs);
      return 'revoked';
    }).immediate,
    spendPlanning: db.transaction((jti: string, nowMs: number, p: NewPlan): SpendCreating => {
      if (st.planExists.get(p.id) !== undefined) throw new RangeError('plan id already in the store');
      const spend = spendInTransaction(ledger, jti, nowMs);
      if (spend !== 'spent') return { spend, created: 'none' };
      st.sweepPlans.run(nowMs);
      st.sweepSlots.run(nowMs);
      const c = st.planCounts.get(p.principal, p.binding, nowMs, nowMs)!;
      if (c.held >= bounds.maxPlansPerPrincipal || c.total >= bounds.maxPlans) return { spend, created: 'full' };
      st.insertPlan.run(
        p.id,
        p.audience,
        p.principal,
        p.binding,
        p.approver,
        p.createdAtMs,
        p.expiresAtMs,
        p.slots.length,
        p.slots.length,
      );
      p.slots.forEach((slot, i) => st.insertSlot.run(p.id, i, slot.key, slot.tool, slot.identity, p.expiresAtMs));
      return { spend, created: 'created' };
    }).immediate,
    takePlanSlot: db.transaction((key: string, nowMs: number): TakenPlanSlot | undefined => {
      for (;;) {
        const slot = st.firstSlot.get(key, nowMs);
        if (slot === undefined) return undefined;
        st.deleteSlot.run(slot.plan_id, slot.idx);
        const plan = st.useSlot.get(slot.plan_id);
        if (plan === undefined) continue; // a slot whose plan is gone: dropped, and the next one tried
        if (plan.slots_left <= 0) st.deletePlan.run(slot.plan_id);
        return {
          planId: slot.plan_id,
          index: slot.idx,
          identity: slot.identity,
          slotsLeft: plan.slots_left,
          expiresAtMs: slot.expires_at_ms,
        };
      }
    }).immediate,
  };
}
