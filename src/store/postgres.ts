/**
 * A {@link ConfirmStore} in PostgreSQL (the `pg` package, an optional peer dependency loaded only
 * when this store is opened): shared by every process on every host that uses the same database
 * and schema. Subpath export `mcp-confirm/stores/postgres`. See docs/postgres.md.
 *
 * ## Tables
 * Every table lives in one PostgreSQL schema (option `schema`, default `mcp_confirm`), version
 * {@link POSTGRES_SCHEMA_VERSION} (src/store/postgresSchema.ts): `meta` (the `schema_version`
 * row), `ledger` and `ledger_counts` (kept by a trigger inside the statement that changes a row),
 * `audit_heads`, `approvals`, `challenges`, `counters`, `approval_links`, `grants`, `plans`,
 * `plan_slots`. Opening reads the version row: a store of a higher version (a later mcp-confirm
 * made it) is refused with `ERR_CONFIG_STORE_SCHEMA`; a missing schema is created (option
 * `createSchema`, default `true`) in one transaction under `pg_advisory_xact_lock`, so replicas
 * starting together create it once; a role that may not `CREATE` uses a schema made beforehand
 * by `mcp-confirm store init` ({@link PostgresStore.init}).
 *
 * ## Atomicity: Read Committed, row locks, conditional statements
 * Every step is one statement or one transaction (`BEGIN` … `COMMIT`, Read Committed). Read
 * Committed rather than `SERIALIZABLE`: a serializable transaction may fail with a serialization
 * error under contention and would have to be retried (more round trips, and a spend retried after
 * an unknown outcome); instead each step either changes a row with a conditional statement
 * (`UPDATE … WHERE <still in the state we expect> RETURNING`, which under Read Committed re-checks
 * its `WHERE` on the newest version of the row after waiting for a concurrent writer, so of any
 * number of concurrent spends exactly one matches), or takes the lock its decision needs before it
 * reads (`SELECT … FOR UPDATE` on the row it decides on, or `pg_advisory_xact_lock` on what a bound
 * counts), so each read sees every committed step before it. The choice is explained per step below.
 *
 * ## Locks (no deadlocks)
 * The ledger's `'total'` count row is locked before any `'principal'` count row, by the issue
 * (explicitly) and by the trigger (it updates `'total'` first). Sweeps and caps delete with
 * `FOR UPDATE SKIP LOCKED`: they never wait for a row a concurrent step holds (that row is left for
 * a later sweep), so no step waits for a lock while holding one another step waits for.
 *
 * ## Deadline, failing closed
 * Every call has one deadline, `timeoutMs` (default 2 s): on the client (a timer; the event loop
 * is never blocked) and on the server (`statement_timeout` and `lock_timeout` of the store's
 * connections). A call with no answer by then is refused with `ERR_CONFIRM_LEDGER_UNAVAILABLE` and
 * its connection is destroyed: a transaction whose `COMMIT` was not sent is rolled back by the
 * server (nothing done). A database that is down, frozen, slow or read-only (a hot standby,
 * `default_transaction_read_only`) is refused the same way.
 *
 * > [!WARNING]
 * > A call refused at its deadline after its `COMMIT` (or its one statement) was sent may still be
 * > applied by the server: a spend is then used up although the caller was told "unavailable" (its
 * > retry is refused as already used, the human is asked again: the safe direction). A spend
 * > survives a failover only when it was committed on a synchronous standby
 * > (`synchronous_standby_names`, `synchronous_commit = remote_apply`); with an asynchronous
 * > standby a spend acknowledged just before the failover can be lost and the state spent again.
 * > While a synchronous standby is down, commits wait: spends then fail closed at the deadline.
 *
 * Strings are stored as UTF-8 `text`: a string with NUL cannot be stored (the call fails closed),
 * and a lone surrogate is stored as U+FFFD (jtis and principal tags are base64url, so neither
 * occurs in what the guard writes).
 *
 * @module mcp-confirm/stores/postgres
 */
import type { Pool, PoolClient, PoolConfig, QueryResult, QueryResultRow } from 'pg';
import { ConfigError, ConfirmCapacityError, ConfirmLedgerUnavailableError } from '../errors.js';
import type { ConfirmStore } from './confirmStore.js';
import type { SpendOutcome } from './ledger.js';
import { positiveInteger } from './ledger.js';
import {
  applyVote,
  checkAttachGrant,
  checkNewApproval,
  checkVote,
  counterAccepted,
  decidedScope,
  MAX_CHALLENGES_PER_APPROVAL,
  parseApprovals,
  requiredOf,
  type ApprovalDecision,
  type ApprovalRecord,
  type ApprovalStatus,
  type ApprovalVote,
  type CountOutcome,
  type DecideOutcome,
  type NewApproval,
} from './approvalStore.js';
import { checkAuditHead, checkAuditHeadPath, isAuditHead, type AuditHead } from './auditHeads.js';
import { checkNewLinkApproval, type LinkedApproval, type NewLinkApproval, type OpenLinkOutcome } from './linkStore.js';
import {
  checkGrantQuery,
  checkNewGrant,
  checkNewPlan,
  checkNowMs,
  DEFAULT_MAX_GRANTS,
  DEFAULT_MAX_GRANTS_PER_PRINCIPAL,
  type Grant,
  type GrantQuery,
  type NewGrant,
  type NewPlan,
  type SpendCreating,
  type TakeGrantOutcome,
  type TakenPlanSlot,
} from './grantStore.js';
import { DEFAULT_POSTGRES_SCHEMA, POSTGRES_SCHEMA_VERSION, SCHEMA_NAME, schemaSql } from './postgresSchema.js';

export { DEFAULT_POSTGRES_SCHEMA, POSTGRES_SCHEMA_VERSION } from './postgresSchema.js';

/** Options of {@link PostgresStore}. */
export interface PostgresStoreOptions {
  /**
   * A libpq-style connection URI, `postgres://[USER[:PASSWORD]@]HOST[:PORT]/DB[?sslmode=…]` (or
   * `postgresql://`). What it leaves out comes from the standard `PG*` environment variables
   * (`PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE`, `PGPASSWORD`, …) and the password from `~/.pgpass`
   * (or `PGPASSFILE`), as the `pg` package reads them. Omitted: all of it from those.
   */
  url?: string;
  /** The PostgreSQL schema holding the tables: a lower-case identifier (`[a-z_][a-z0-9_]*`, at most 63). Defaults to `'mcp_confirm'`. */
  schema?: string;
  /**
   * Whether opening creates the schema and its tables when missing (needs the `CREATE` privilege
   * on the database). With `false`, a missing schema is refused with `ERR_CONFIG_STORE_SCHEMA`
   * (create it with `mcp-confirm store init`). Defaults to `true`.
   */
  createSchema?: boolean;
  /** Most outstanding confirmations one principal may hold. Defaults to 1,000. */
  maxPerPrincipal?: number;
  /** Most outstanding confirmations in total; also the bound on tombstones. Defaults to 100,000. */
  maxTotal?: number;
  /**
   * Deadline of every call, in milliseconds, on the client and on the server (`statement_timeout`,
   * `lock_timeout`): a call with no answer by then is refused with `ERR_CONFIRM_LEDGER_UNAVAILABLE`.
   * Defaults to 2,000 (2 seconds).
   */
  timeoutMs?: number;
  /** Deadline of opening (connecting, reading or creating the schema), in milliseconds. Defaults to 10,000. */
  connectTimeoutMs?: number;
  /** Most connections the store keeps open to the database. Defaults to 10. */
  maxConnections?: number;
  /** Receives errors of idle connections (they are replaced on the next call). Defaults to ignoring them. */
  onError?: (error: unknown) => void;
  /** Most live grants one principal may hold under one binding (see `GrantStore`). Defaults to 16. */
  maxGrantsPerPrincipal?: number;
  /** Most live grants in the schema; also the bound on ended grants kept until their expiry. Defaults to 10,000. */
  maxGrants?: number;
  /** Most live plans one principal may hold under one binding. Defaults to 16. */
  maxPlansPerPrincipal?: number;
  /** Most live plans in the schema. Defaults to 10,000. */
  maxPlans?: number;
}

/** The `pg` module's part the store uses. */
interface PgModule {
  Pool: new (config: PoolConfig) => Pool;
}

/**
 * Loads the `pg` package (an optional peer dependency).
 *
 * @throws {ConfigError} `ERR_CONFIG_STORE_DRIVER` when it is not installed.
 */
async function loadPg(): Promise<PgModule> {
  let mod: { default?: PgModule } & Partial<PgModule>;
  try {
    mod = (await import('pg')) as unknown as { default?: PgModule } & Partial<PgModule>;
  } catch (error) {
    throw new ConfigError(
      'ERR_CONFIG_STORE_DRIVER',
      'The PostgreSQL store needs the pg package, which is not installed (npm install pg).',
      { cause: error },
    );
  }
  const pg = mod.Pool !== undefined ? (mod as PgModule) : mod.default;
  if (typeof pg?.Pool !== 'function')
    throw new ConfigError('ERR_CONFIG_STORE_DRIVER', 'The pg package installed has no Pool class (install pg 8).');
  return pg;
}

/**
 * The server answered a step with a warning (SQLSTATE class 01), the cause of an
 * `ERR_CONFIRM_LEDGER_UNAVAILABLE`. The one that matters: a commit whose wait for a synchronous
 * standby was cancelled (by `statement_timeout`, `pg_cancel_backend`, …) is answered `COMMIT` with
 * the warning "canceling wait for synchronous replication … The transaction has already committed
 * locally, but might not have been replicated to the standby": taken as done, a spend the standby
 * never had could be spent again after a failover. Refused instead: it stays applied on the primary
 * (a retry there is refused as already used: the safe side), and nothing is acted on.
 */
class ServerWarning extends Error {
  constructor(readonly sqlState: string) {
    super(`PostgreSQL answered with a warning (SQLSTATE ${sqlState})`);
    this.name = 'ServerWarning';
  }
}

/** No answer within the deadline (the cause of an `ERR_CONFIRM_LEDGER_UNAVAILABLE`). */
export class PostgresDeadlineError extends Error {
  constructor(timeoutMs: number) {
    super(`no answer from PostgreSQL within ${timeoutMs} ms`);
    this.name = 'PostgresDeadlineError';
  }
}

/** Runs one statement of a step: its rows and row count. */
type Query = <R extends QueryResultRow = QueryResultRow>(text: string, values?: unknown[]) => Promise<QueryResult<R>>;

const SPEND_OUTCOMES: ReadonlySet<string> = new Set<SpendOutcome>(['spent', 'already-spent', 'unknown', 'expired']);
/** Every this many calls a process sweeps expired rows and caps tombstones (not waited for). */
const MAINTENANCE_EVERY = 256;

function finiteMs(name: string, value: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw new RangeError(`${name} must be a finite number of milliseconds`);
  return value;
}

/** SQLSTATE of a server error, when it is one. */
function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

const isUniqueViolation = (error: unknown): boolean => sqlState(error) === '23505';

/** Errors of our own making pass through; anything else from the driver or the server fails closed. */
function unavailable(error: unknown): Error {
  if (
    error instanceof ConfirmCapacityError ||
    error instanceof ConfirmLedgerUnavailableError ||
    error instanceof ConfigError ||
    error instanceof RangeError
  )
    return error;
  return new ConfirmLedgerUnavailableError({ cause: error });
}

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

const APPROVAL_COLUMNS =
  'a.id, a.jti, a.principal, a.view, a.expires_at_ms, a.status, a.decided_at_ms, a.approver, a.credential_id, a.scope, a.grant_id, a.approvals_required, a.approvals';

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

const GRANT_COLUMNS =
  'id, audience, principal, tool, scope, binding, summary, policy_digest, approver, max_uses, uses_left, created_at_ms, expires_at_ms';

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

/** Validated options, shared by the constructor and {@link PostgresStore.init}. */
function readOptions(options: PostgresStoreOptions) {
  if (typeof options !== 'object' || options === null) throw new TypeError('options must be an object');
  if (options.url !== undefined) {
    let protocol: string;
    try {
      protocol = new URL(options.url).protocol;
    } catch {
      // Never echo the value: it may hold a password.
      throw new TypeError('url must be a postgres:// or postgresql:// URL');
    }
    if (protocol !== 'postgres:' && protocol !== 'postgresql:')
      throw new TypeError('url must be a postgres:// or postgresql:// URL');
  }
  const schema = options.schema ?? DEFAULT_POSTGRES_SCHEMA;
  if (typeof schema !== 'string' || !SCHEMA_NAME.test(schema))
    throw new RangeError('schema must be a lower-case identifier: a-z or _, then a-z, 0-9 or _, at most 63');
  if (options.createSchema !== undefined && typeof options.createSchema !== 'boolean')
    throw new TypeError('createSchema must be a boolean');
  return {
    url: options.url,
    schema,
    createSchema: options.createSchema ?? true,
    maxPerPrincipal: positiveInteger('maxPerPrincipal', options.maxPerPrincipal, 1_000),
    maxTotal: positiveInteger('maxTotal', options.maxTotal, 100_000),
    timeoutMs: positiveInteger('timeoutMs', options.timeoutMs, 2_000),
    connectTimeoutMs: positiveInteger('connectTimeoutMs', options.connectTimeoutMs, 10_000),
    maxConnections: positiveInteger('maxConnections', options.maxConnections, 10),
    maxGrantsPerPrincipal: positiveInteger(
      'maxGrantsPerPrincipal',
      options.maxGrantsPerPrincipal,
      DEFAULT_MAX_GRANTS_PER_PRINCIPAL,
    ),
    maxGrants: positiveInteger('maxGrants', options.maxGrants, DEFAULT_MAX_GRANTS),
    maxPlansPerPrincipal: positiveInteger(
      'maxPlansPerPrincipal',
      options.maxPlansPerPrincipal,
      DEFAULT_MAX_GRANTS_PER_PRINCIPAL,
    ),
    maxPlans: positiveInteger('maxPlans', options.maxPlans, DEFAULT_MAX_GRANTS),
    onError: options.onError ?? (() => {}),
  };
}

type Settings = ReturnType<typeof readOptions>;

function makePool(pg: PgModule, o: Settings): Pool {
  const pool = new pg.Pool({
    // undefined: every setting from the PG* variables (and the password from ~/.pgpass), as libpq.
    ...(o.url !== undefined ? { connectionString: o.url } : {}),
    max: o.maxConnections,
    connectionTimeoutMillis: o.timeoutMs,
    // The server's half of the deadline: a statement (or a lock wait) longer than it is cancelled.
    statement_timeout: o.timeoutMs,
    lock_timeout: o.timeoutMs,
    // A connection the client dropped mid-transaction (its deadline) releases its locks soon.
    idle_in_transaction_session_timeout: Math.max(1_000, o.timeoutMs),
    application_name: 'mcp-confirm',
    keepAlive: true,
    idleTimeoutMillis: 30_000,
  });
  // Without a listener an idle connection's error would crash the process.
  pool.on('error', o.onError);
  // The pool listens only to idle connections: a connection lost while a call holds it (the server
  // crashed or terminated it, the network reset it), even in the same chunk as the answer that handed
  // it out, would emit an 'error' nobody hears, which ends the process. pg itself rejects the query in
  // flight (the call fails closed) and every later one, and the pool destroys the connection on release.
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

/**
 * A store in PostgreSQL, shared by every process and host using the same database and schema.
 *
 * @example
 * ```ts
 * import { randomUUID } from 'node:crypto';
 * import { PostgresStore } from 'mcp-confirm/stores/postgres';
 *
 * const store = await PostgresStore.open({ url: 'postgres://mcp@db.internal/mcp?sslmode=verify-full' });
 * const jti = randomUUID();
 * await store.issue(jti, 'local', Date.now() + 300_000);
 * const outcome = await store.spend(jti, Date.now()); // 'spent' for exactly one caller anywhere
 * ```
 */
export class PostgresStore implements ConfirmStore {
  readonly kind = 'postgres';
  readonly shared = true;
  /** The PostgreSQL schema holding the tables. */
  readonly schema: string;
  readonly maxPerPrincipal: number;
  readonly maxTotal: number;
  readonly timeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly maxGrantsPerPrincipal: number;
  readonly maxGrants: number;
  readonly maxPlansPerPrincipal: number;
  readonly maxPlans: number;
  readonly #pool: Pool;
  readonly #createSchema: boolean;
  /** Aborts of the calls in flight (close() ends them). */
  readonly #inFlight = new Set<(error: Error) => void>();
  #ready: Promise<void> | undefined;
  #isReady = false;
  #closed = false;
  #count = 0;

  private constructor(pool: Pool, o: Settings) {
    this.#pool = pool;
    this.schema = o.schema;
    this.#createSchema = o.createSchema;
    this.maxPerPrincipal = o.maxPerPrincipal;
    this.maxTotal = o.maxTotal;
    this.timeoutMs = o.timeoutMs;
    this.connectTimeoutMs = o.connectTimeoutMs;
    this.maxGrantsPerPrincipal = o.maxGrantsPerPrincipal;
    this.maxGrants = o.maxGrants;
    this.maxPlansPerPrincipal = o.maxPlansPerPrincipal;
    this.maxPlans = o.maxPlans;
  }

  /**
   * Creates a store without waiting for the database: the schema is read (or created) by
   * {@link PostgresStore.ready} or by the first call, and tried again by later calls while the
   * database cannot be reached.
   *
   * @param options - see {@link PostgresStoreOptions}.
   * @throws {ConfigError} `ERR_CONFIG_STORE_DRIVER` when the `pg` package is not installed.
   * @throws {TypeError | RangeError} for bad options (the message never echoes the URL).
   */
  static async create(options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const o = readOptions(options);
    const pg = await loadPg();
    return new PostgresStore(makePool(pg, o), o);
  }

  /**
   * Creates a store and waits until its schema is there (read, or created when `createSchema`).
   *
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the database cannot be
   *   reached or fails within `connectTimeoutMs` (the store is closed again).
   * @throws {ConfigError} `ERR_CONFIG_STORE_SCHEMA` when the schema is newer than this code knows, or
   *   missing while `createSchema` is `false` or the role may not create it; `ERR_CONFIG_STORE_DRIVER`
   *   when `pg` is not installed.
   * @throws {TypeError | RangeError} for bad options.
   */
  static async open(options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const store = await PostgresStore.create(options);
    try {
      await store.ready();
    } catch (error) {
      await store.close();
      throw error;
    }
    return store;
  }

  /**
   * Creates the schema and its tables when missing (`mcp-confirm store init`), for a deployment
   * whose serving role may not `CREATE`; changes nothing when they exist.
   *
   * @returns the schema version now in the database ({@link POSTGRES_SCHEMA_VERSION}).
   * @throws as {@link PostgresStore.open} (with `createSchema` forced on).
   */
  static async init(options: PostgresStoreOptions = {}): Promise<number> {
    const store = await PostgresStore.open({ ...options, createSchema: true });
    await store.close();
    return POSTGRES_SCHEMA_VERSION;
  }

  /** `true` once the schema was read (or created) and the store is not closed. */
  get isReady(): boolean {
    return this.#isReady && !this.#closed;
  }

  /**
   * Waits until the schema is there: read, or created (when `createSchema`) in one transaction
   * under `pg_advisory_xact_lock`, so replicas starting together create it once. Tried again by
   * the next call after a failure to reach the database.
   *
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the database cannot be reached.
   * @throws {ConfigError} `ERR_CONFIG_STORE_SCHEMA` (newer or missing schema, see {@link PostgresStore.open}).
   */
  ready(): Promise<void> {
    if (this.#closed) return Promise.reject(new ConfirmLedgerUnavailableError());
    this.#ready ??= this.#setup().then(
      () => {
        this.#isReady = true;
      },
      (error: unknown) => {
        // An outage is tried again by the next call; a schema refusal stays.
        if (!(error instanceof ConfigError)) this.#ready = undefined;
        throw unavailable(error);
      },
    );
    return this.#ready;
  }

  async #setup(): Promise<void> {
    const s = this.schema;
    // Reading first: a schema that exists needs no lock and no CREATE privilege.
    const version = await this.#run(false, this.connectTimeoutMs, (q) => this.#readVersion(q));
    if (version !== undefined) return this.#checkVersion(version);
    if (!this.#createSchema) {
      throw new ConfigError(
        'ERR_CONFIG_STORE_SCHEMA',
        `The PostgreSQL schema ${s} has no mcp-confirm tables; create them with mcp-confirm store init.`,
      );
    }
    try {
      await this.#run(true, this.connectTimeoutMs, async (q) => {
        // One transaction, under a lock of this schema's name: replicas starting together wait here, and
        // the second finds the version row the first committed.
        await q(`SET LOCAL statement_timeout = ${this.connectTimeoutMs}`);
        await q(`SET LOCAL lock_timeout = ${this.connectTimeoutMs}`);
        await q('SELECT pg_advisory_xact_lock(hashtext($1))', [`mcp-confirm schema ${s}`]);
        const again = await this.#readVersion(q);
        if (again !== undefined) return this.#checkVersion(again);
        await q(schemaSql(s));
      });
    } catch (error) {
      if (sqlState(error) === '42501') {
        throw new ConfigError(
          'ERR_CONFIG_STORE_SCHEMA',
          `The PostgreSQL role may not create the schema ${s}; create it with mcp-confirm store init as a role that may.`,
          { cause: error },
        );
      }
      throw error;
    }
  }

  async #readVersion(q: Query): Promise<number | undefined> {
    const present = await q<{ present: boolean }>('SELECT to_regclass($1) IS NOT NULL AS present', [
      `${this.schema}.meta`,
    ]);
    if (present.rows[0]?.present !== true) return undefined;
    const row = await q<{ value: string }>(`SELECT value FROM ${this.schema}.meta WHERE key = 'schema_version'`);
    const v = Number(row.rows[0]?.value);
    return Number.isSafeInteger(v) && v >= 1 ? v : undefined;
  }

  #checkVersion(version: number): void {
    if (version > POSTGRES_SCHEMA_VERSION) {
      throw new ConfigError(
        'ERR_CONFIG_STORE_SCHEMA',
        `The PostgreSQL schema ${this.schema} is at version ${version}, newer than this mcp-confirm knows (${POSTGRES_SCHEMA_VERSION}); upgrade mcp-confirm.`,
      );
    }
  }

  /**
   * Runs one step on one connection under one deadline of `deadlineMs`: in a transaction when `tx`
   * (`BEGIN` … `COMMIT`; a server error rolls it back), else as the step's one statement. At the
   * deadline, or on close(), the call is refused and the connection destroyed (the server rolls back
   * a transaction whose `COMMIT` was not sent).
   */
  #run<T>(tx: boolean, deadlineMs: number, step: (q: Query) => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(new ConfirmLedgerUnavailableError());
    let client: PoolClient | undefined;
    let released = false;
    let aborted: Error | undefined;
    let warning: ServerWarning | undefined;
    // A warning (SQLSTATE class 01) during the step: see ServerWarning.
    const onNotice = (notice: { code?: unknown }): void => {
      if (typeof notice.code === 'string' && notice.code.startsWith('01')) warning ??= new ServerWarning(notice.code);
    };
    const release = (destroy: boolean): void => {
      if (client === undefined || released) return;
      released = true;
      client.removeListener('notice', onNotice);
      client.release(destroy ? new Error('connection dropped by mcp-confirm') : undefined);
    };
    /** Refuses a step the server answered with a warning (after its statement or COMMIT: already applied). */
    const unwarned = (): void => {
      if (warning !== undefined) throw new ConfirmLedgerUnavailableError({ cause: warning });
    };
    const q: Query = (text, values) => {
      // Nothing more is sent once the call was refused: in particular no COMMIT.
      if (aborted !== undefined) return Promise.reject(aborted);
      return client!.query(text, values as unknown[]);
    };
    const work = (async () => {
      const c = await this.#pool.connect();
      client = c;
      c.on('notice', onNotice);
      if (aborted !== undefined) {
        release(true);
        throw aborted;
      }
      if (!tx) {
        let result: T;
        try {
          result = await step(q);
        } catch (error) {
          release(sqlState(error) === undefined);
          throw error;
        }
        release(false);
        unwarned();
        return result;
      }
      let result: T;
      try {
        await q('BEGIN');
        result = await step(q);
        await q('COMMIT');
      } catch (error) {
        if (aborted === undefined) {
          // A server error (a unique violation, a read-only database) or the step's own refusal: roll
          // back and keep the connection; a connection that cannot roll back is destroyed.
          try {
            await c.query('ROLLBACK');
            release(false);
          } catch {
            release(true);
          }
        } else {
          release(true);
        }
        throw error;
      }
      release(false);
      unwarned();
      return result;
    })();
    return new Promise<T>((resolve, reject) => {
      const abort = (error: Error): void => {
        if (aborted !== undefined) return;
        aborted = error;
        clearTimeout(timer);
        this.#inFlight.delete(abort);
        release(true);
        reject(error);
      };
      const timer = setTimeout(
        () => abort(new ConfirmLedgerUnavailableError({ cause: new PostgresDeadlineError(deadlineMs) })),
        deadlineMs,
      );
      this.#inFlight.add(abort);
      work.then(
        (value) => {
          if (aborted !== undefined) return;
          aborted = new ConfirmLedgerUnavailableError({ cause: new Error('step finished') });
          clearTimeout(timer);
          this.#inFlight.delete(abort);
          resolve(value);
        },
        (error: unknown) => {
          if (aborted !== undefined) return;
          aborted = error instanceof Error ? error : new Error(String(error));
          clearTimeout(timer);
          this.#inFlight.delete(abort);
          reject(error);
        },
      );
    });
  }

  /** One step of a public call: the schema first (within the call's deadline), then the step; any failure fails closed. */
  async #call<T>(tx: boolean, step: (q: Query) => Promise<T>): Promise<T> {
    if (this.#closed) throw new ConfirmLedgerUnavailableError();
    try {
      if (!this.#isReady) await this.#withinDeadline(this.ready());
      return await this.#run(tx, this.timeoutMs, step);
    } catch (error) {
      // A schema this store cannot use is a start-up error of open(); to a call it is an unavailable store.
      if (error instanceof ConfigError) throw new ConfirmLedgerUnavailableError({ cause: error });
      throw unavailable(error);
    }
  }

  /** `promise`, or a refusal once `timeoutMs` passed (the schema set-up of a call stays within its deadline). */
  #withinDeadline<T>(promise: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new ConfirmLedgerUnavailableError({ cause: new PostgresDeadlineError(this.timeoutMs) })),
        this.timeoutMs,
      );
      promise.then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (error: unknown) => {
          clearTimeout(timer);
          reject(error);
        },
      );
    });
  }

  /**
   * Closes every connection. Calls in flight are refused with `ERR_CONFIRM_LEDGER_UNAVAILABLE` (a
   * transaction not yet committed is rolled back). Idempotent; later calls are refused likewise.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const abort of [...this.#inFlight])
      abort(new ConfirmLedgerUnavailableError({ cause: new Error('store closed') }));
    try {
      await this.#pool.end();
    } catch {
      // already ending: nothing left to release
    }
  }

  // ---- Ledger

  /** Table name in this store's schema. */
  #t(name: string): string {
    return `${this.schema}.${name}`;
  }

  /**
   * `Ledger.issue`. One transaction: the `'total'` count row is locked first (`FOR UPDATE`), so
   * issues are serialized and each reads the counts every committed issue and spend left (exact
   * bounds); at a bound, expired rows are swept and the counts read again.
   *
   * @throws {ConfirmCapacityError} `ERR_CONFIRM_CAPACITY` when the principal or the store is full.
   * @throws {RangeError} when `jti` was already issued (outstanding or spent), or a time is not finite.
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the database fails or is late.
   */
  async issue(jti: string, principal: string, expiresAtMs: number, nowMs: number = Date.now()): Promise<void> {
    finiteMs('expiresAtMs', expiresAtMs);
    finiteMs('nowMs', nowMs);
    const counts = this.#t('ledger_counts');
    let outcome: 'issued' | 'principal' | 'total';
    try {
      outcome = await this.#call(true, async (q) => {
        const read = async (): Promise<{ held: number; total: number }> => {
          const total = await q<{ n: string }>(
            `SELECT n FROM ${counts} WHERE scope = 'total' AND name = '' FOR UPDATE`,
          );
          // A new statement after the lock is held: its snapshot sees every step committed before.
          const held = await q<{ n: string }>(`SELECT n FROM ${counts} WHERE scope = 'principal' AND name = $1`, [
            principal,
          ]);
          return { held: Number(held.rows[0]?.n ?? 0), total: Number(total.rows[0]?.n ?? 0) };
        };
        let c = await read();
        if (c.held >= this.maxPerPrincipal || c.total >= this.maxTotal) {
          // Only at a bound pay for a sweep; then decide (the sweep is kept even when refused).
          await q(this.#sweepLedgerSql(), [nowMs]);
          c = await read();
          if (c.held >= this.maxPerPrincipal) return 'principal';
          if (c.total >= this.maxTotal) return 'total';
        }
        await q(`INSERT INTO ${this.#t('ledger')} (jti, principal, expires_at_ms) VALUES ($1, $2, $3)`, [
          jti,
          principal,
          expiresAtMs,
        ]);
        return 'issued';
      });
    } catch (error) {
      if (isUniqueViolation((error as { cause?: unknown }).cause)) throw new RangeError('jti already issued');
      throw error;
    }
    if (outcome !== 'issued') throw new ConfirmCapacityError(outcome);
    this.#maybeMaintain(nowMs);
  }

  #sweepLedgerSql(): string {
    const ledger = this.#t('ledger');
    // SKIP LOCKED: a row a concurrent spend holds is left for a later sweep (never waited for).
    return `DELETE FROM ${ledger} WHERE jti IN
      (SELECT jti FROM ${ledger} WHERE expires_at_ms <= $1 FOR UPDATE SKIP LOCKED)`;
  }

  /** The ledger's spend as statements of the caller's transaction (also run by spendGranting/spendPlanning). */
  async #spendIn(q: Query, jti: string, nowMs: number): Promise<SpendOutcome> {
    const ledger = this.#t('ledger');
    // The conditional UPDATE: under Read Committed it waits for a concurrent spend of the same row and
    // re-checks `NOT spent` on the row that spend committed, so exactly one of them matches.
    const spent = await q<{ expires_at_ms: number }>(
      `UPDATE ${ledger} SET spent = true WHERE jti = $1 AND NOT spent RETURNING expires_at_ms`,
      [jti],
    );
    const row = spent.rows[0];
    if (row === undefined) {
      const state = await q<{ spent: boolean }>(`SELECT spent FROM ${ledger} WHERE jti = $1`, [jti]);
      return state.rows[0]?.spent === true ? 'already-spent' : 'unknown';
    }
    if (typeof row.expires_at_ms !== 'number') throw new TypeError('unexpected expires_at_ms');
    if (nowMs >= row.expires_at_ms) {
      // Consumed above; its tombstone goes in the same transaction, so a replay is 'unknown'.
      await q(`DELETE FROM ${ledger} WHERE jti = $1`, [jti]);
      return 'expired';
    }
    return 'spent';
  }

  /**
   * `Ledger.spend`. One transaction: the conditional `UPDATE … WHERE NOT spent RETURNING` (exactly
   * one of any number of concurrent spends matches), then the tombstone's read or the expired row's removal.
   *
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the database fails or is late
   *   (before the `COMMIT` was sent: nothing spent).
   */
  async spend(jti: string, nowMs: number): Promise<SpendOutcome> {
    finiteMs('nowMs', nowMs);
    const outcome = await this.#call(true, (q) => this.#spendIn(q, jti, nowMs));
    if (!SPEND_OUTCOMES.has(outcome)) throw new ConfirmLedgerUnavailableError();
    this.#maybeMaintain(nowMs);
    return outcome;
  }

  /**
   * Deletes every entry and tombstone with `expiresAtMs <= nowMs`, drops tombstones beyond `maxTotal`
   * (oldest expiry first) and the count rows of principals holding none. One transaction.
   *
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the database fails or is late.
   */
  async sweep(nowMs: number = Date.now()): Promise<void> {
    finiteMs('nowMs', nowMs);
    const ledger = this.#t('ledger');
    const counts = this.#t('ledger_counts');
    await this.#call(true, async (q) => {
      // The total row first, as every step that changes the counts (see "Locks").
      await q(`SELECT n FROM ${counts} WHERE scope = 'total' AND name = '' FOR UPDATE`);
      await q(this.#sweepLedgerSql(), [nowMs]);
      const spent = await q<{ n: string }>(`SELECT n FROM ${counts} WHERE scope = 'spent' AND name = ''`);
      const excess = Number(spent.rows[0]?.n ?? 0) - this.maxTotal;
      if (excess > 0) {
        await q(
          `DELETE FROM ${ledger} WHERE jti IN (SELECT jti FROM ${ledger} WHERE spent
             ORDER BY expires_at_ms LIMIT $1 FOR UPDATE SKIP LOCKED)`,
          [excess],
        );
      }
      await q(`DELETE FROM ${counts} WHERE scope = 'principal' AND n <= 0`);
    });
  }

  /** Every {@link MAINTENANCE_EVERY} calls, one sweep, never waited for (a failure is left to the next). */
  #maybeMaintain(nowMs: number): void {
    if (++this.#count % MAINTENANCE_EVERY !== 0) return;
    this.sweep(nowMs).catch(() => {});
  }

  // ---- ApprovalStore

  /**
   * `ApprovalStore.openApproval`. One transaction: expired approvals swept (`SKIP LOCKED`), then
   * one `INSERT` (the id and the jti are both unique: a duplicate is refused, nothing written).
   *
   * @throws {RangeError} when a field is malformed or the id or jti already has an approval.
   */
  async openApproval(approval: NewApproval, nowMs: number): Promise<void> {
    checkNewApproval(approval);
    finiteMs('nowMs', nowMs);
    await this.#unique('approval already opened', () =>
      this.#call(true, async (q) => {
        await this.#insertApproval(q, approval, nowMs);
      }),
    );
  }

  async #insertApproval(q: Query, approval: NewApproval, nowMs: number): Promise<void> {
    const approvals = this.#t('approvals');
    await q(
      `DELETE FROM ${approvals} WHERE id IN
        (SELECT id FROM ${approvals} WHERE expires_at_ms <= $1 FOR UPDATE SKIP LOCKED)`,
      [nowMs],
    );
    await q(
      `INSERT INTO ${approvals} (id, jti, principal, view, expires_at_ms, approvals_required) VALUES ($1, $2, $3, $4, $5, $6)`,
      [
        approval.id,
        approval.jti,
        approval.principal,
        approval.view,
        approval.expiresAtMs,
        requiredOf(approval) ?? null,
      ],
    );
  }

  /** Runs `step`, turning a unique violation (SQLSTATE 23505) into a `RangeError` with `message`. */
  async #unique<T>(message: string, step: () => Promise<T>): Promise<T> {
    try {
      return await step();
    } catch (error) {
      if (isUniqueViolation((error as { cause?: unknown }).cause)) throw new RangeError(message);
      throw error;
    }
  }

  /** `ApprovalStore.approvalById`: one `SELECT`. */
  async approvalById(id: string, nowMs: number): Promise<ApprovalRecord | undefined> {
    finiteMs('nowMs', nowMs);
    return this.#call(false, async (q) =>
      toRecord(
        (
          await q<ApprovalRow>(
            `SELECT ${APPROVAL_COLUMNS} FROM ${this.#t('approvals')} a WHERE a.id = $1 AND a.expires_at_ms > $2`,
            [id, nowMs],
          )
        ).rows[0],
      ),
    );
  }

  /** `ApprovalStore.approvalByJti`: one `SELECT`. */
  async approvalByJti(jti: string, nowMs: number): Promise<ApprovalRecord | undefined> {
    finiteMs('nowMs', nowMs);
    return this.#call(false, async (q) =>
      toRecord(
        (
          await q<ApprovalRow>(
            `SELECT ${APPROVAL_COLUMNS} FROM ${this.#t('approvals')} a WHERE a.jti = $1 AND a.expires_at_ms > $2`,
            [jti, nowMs],
          )
        ).rows[0],
      ),
    );
  }

  /**
   * `ApprovalStore.decideApproval`. One transaction: the conditional `UPDATE … WHERE status =
   * 'pending' … RETURNING` (of concurrent decisions exactly one matches, re-checked after waiting), and
   * when none matched the row's expiry is read for the reason.
   */
  async decideApproval(id: string, decision: ApprovalDecision, nowMs: number): Promise<DecideOutcome> {
    finiteMs('nowMs', nowMs);
    const approvals = this.#t('approvals');
    return this.#call(true, async (q) => {
      const done = await q(
        `UPDATE ${approvals} SET status = $1, approver = $2, credential_id = $3, decided_at_ms = $4, scope = $5
          WHERE id = $6 AND status = 'pending' AND expires_at_ms > $4
            AND ($1 = 'declined' OR coalesce(approvals_required, 1) <= 1) RETURNING id`,
        [decision.status, decision.approver, decision.credentialId, nowMs, decidedScope(decision) ?? null, id],
      );
      if (done.rows.length > 0) return 'decided';
      const state = await q<{ expires_at_ms: number }>(`SELECT expires_at_ms FROM ${approvals} WHERE id = $1`, [id]);
      const row = state.rows[0];
      if (row === undefined) return 'unknown';
      if (nowMs >= row.expires_at_ms) return 'expired';
      return 'already-decided';
    });
  }

  /**
   * `ApprovalStore.countApproval`. One transaction: the approval's row is locked (`SELECT … FOR
   * UPDATE`), the vote counted on what was read, and the row written; concurrent counts of one
   * approval wait for each other, so at most one completes the quorum.
   */
  async countApproval(id: string, vote: ApprovalVote, nowMs: number): Promise<CountOutcome> {
    checkVote(vote);
    finiteMs('nowMs', nowMs);
    const approvals = this.#t('approvals');
    return this.#call(true, async (q) => {
      const read = await q<{
        status: string;
        expires_at_ms: number;
        approvals_required: number | null;
        approvals: string | null;
      }>(`SELECT status, expires_at_ms, approvals_required, approvals FROM ${approvals} WHERE id = $1 FOR UPDATE`, [
        id,
      ]);
      const row = read.rows[0];
      if (row === undefined) return 'unknown';
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
      if (write.approved === undefined) {
        await q(`UPDATE ${approvals} SET approvals = $1 WHERE id = $2`, [list, id]);
      } else {
        const a = write.approved;
        await q(
          `UPDATE ${approvals} SET approvals = $1, status = 'approved', approver = $2, credential_id = $3,
             decided_at_ms = $4, scope = $5 WHERE id = $6`,
          [list, a.approver, a.credentialId, nowMs, a.scope ?? null, id],
        );
      }
      return outcome;
    });
  }

  /** `ApprovalStore.attachGrant`: one conditional `UPDATE` (approved, no grant yet, unexpired). */
  async attachGrant(id: string, grantId: string, untilMs: number, nowMs: number): Promise<boolean> {
    checkAttachGrant(grantId, untilMs);
    finiteMs('nowMs', nowMs);
    return this.#call(false, async (q) => {
      const done = await q(
        `UPDATE ${this.#t('approvals')} SET grant_id = $1, expires_at_ms = greatest(expires_at_ms, $2)
          WHERE id = $3 AND status = 'approved' AND grant_id IS NULL AND expires_at_ms > $4`,
        [grantId, untilMs, id, nowMs],
      );
      return done.rowCount === 1;
    });
  }

  /**
   * `ApprovalStore.putChallenge`. One transaction under `pg_advisory_xact_lock` of the approval
   * id (so the per-approval cap is exact): expired challenges swept, the oldest dropped beyond
   * `maxTotal` in all and beyond 8 (`MAX_CHALLENGES_PER_APPROVAL`) of the id, then the `INSERT`.
   *
   * @throws {RangeError} when the challenge was already issued.
   */
  async putChallenge(challenge: string, id: string, expiresAtMs: number, nowMs: number): Promise<void> {
    finiteMs('expiresAtMs', expiresAtMs);
    finiteMs('nowMs', nowMs);
    const ch = this.#t('challenges');
    await this.#unique('challenge already issued', () =>
      this.#call(true, async (q) => {
        await q('SELECT pg_advisory_xact_lock(hashtext($1))', [`${this.schema} challenges ${id}`]);
        await q(
          `DELETE FROM ${ch} WHERE challenge IN
            (SELECT challenge FROM ${ch} WHERE expires_at_ms <= $1 FOR UPDATE SKIP LOCKED)`,
          [nowMs],
        );
        const count = await q<{ n: number }>(`SELECT count(*)::int AS n FROM ${ch}`);
        const excess = (count.rows[0]?.n ?? 0) - this.maxTotal + 1;
        if (excess > 0) {
          await q(
            `DELETE FROM ${ch} WHERE challenge IN
              (SELECT challenge FROM ${ch} ORDER BY expires_at_ms LIMIT $1 FOR UPDATE SKIP LOCKED)`,
            [excess],
          );
        }
        await q(
          `DELETE FROM ${ch} WHERE approval_id = $1 AND challenge NOT IN
            (SELECT challenge FROM ${ch} WHERE approval_id = $1
              ORDER BY expires_at_ms DESC, challenge COLLATE "C" DESC LIMIT $2)`,
          [id, MAX_CHALLENGES_PER_APPROVAL - 1],
        );
        await q(`INSERT INTO ${ch} (challenge, approval_id, expires_at_ms) VALUES ($1, $2, $3)`, [
          challenge,
          id,
          expiresAtMs,
        ]);
      }),
    );
  }

  /** `ApprovalStore.takeChallenge`: one `DELETE … RETURNING` (of concurrent takes, one gets the row). */
  async takeChallenge(challenge: string, nowMs: number): Promise<string | undefined> {
    finiteMs('nowMs', nowMs);
    return this.#call(false, async (q) => {
      const taken = await q<{ approval_id: string; expires_at_ms: number }>(
        `DELETE FROM ${this.#t('challenges')} WHERE challenge = $1 RETURNING approval_id, expires_at_ms`,
        [challenge],
      );
      const row = taken.rows[0];
      return row !== undefined && nowMs < row.expires_at_ms ? row.approval_id : undefined;
    });
  }

  /**
   * `ApprovalStore.advanceCounter`. One transaction: the stored counter is read under a row lock
   * (`FOR UPDATE`); with none stored, the enrolled one decides, and the insert's `ON CONFLICT … WHERE`
   * re-checks the rule against a counter a concurrent step stored meanwhile.
   */
  async advanceCounter(credentialId: string, newCounter: number, enrolledCounter: number): Promise<boolean> {
    const counters = this.#t('counters');
    return this.#call(true, async (q) => {
      const read = await q<{ counter: string }>(`SELECT counter FROM ${counters} WHERE credential_id = $1 FOR UPDATE`, [
        credentialId,
      ]);
      const stored = read.rows[0] === undefined ? enrolledCounter : Number(read.rows[0].counter);
      if (!counterAccepted(stored, newCounter)) return false;
      const written = await q(
        `INSERT INTO ${counters} (credential_id, counter) VALUES ($1, $2)
          ON CONFLICT (credential_id) DO UPDATE SET counter = excluded.counter
          WHERE ${counters}.counter < excluded.counter OR (${counters}.counter = 0 AND excluded.counter = 0)`,
        [credentialId, newCounter],
      );
      return written.rowCount === 1;
    });
  }

  // ---- LinkStore

  /**
   * `LinkStore.openLinkApproval`. One transaction under `pg_advisory_xact_lock` of the link key
   * and then of the principal (always in that order), so the "live link" and "pending per principal"
   * checks see every committed open and none can pass together; then the approval and its link.
   */
  async openLinkApproval(approval: NewLinkApproval, maxPending: number, nowMs: number): Promise<OpenLinkOutcome> {
    checkNewLinkApproval(approval, maxPending);
    finiteMs('nowMs', nowMs);
    const links = this.#t('approval_links');
    const approvals = this.#t('approvals');
    return this.#unique('approval already opened', () =>
      this.#call(true, async (q): Promise<OpenLinkOutcome> => {
        await q('SELECT pg_advisory_xact_lock(hashtext($1))', [`${this.schema} link ${approval.linkKey}`]);
        await q('SELECT pg_advisory_xact_lock(hashtext($1))', [`${this.schema} link-principal ${approval.principal}`]);
        await q(
          `DELETE FROM ${links} WHERE link_key IN
            (SELECT link_key FROM ${links} WHERE expires_at_ms <= $1 FOR UPDATE SKIP LOCKED)`,
          [nowMs],
        );
        const live = await q(
          `SELECT 1 FROM ${links} l JOIN ${approvals} a ON a.id = l.approval_id
            WHERE l.link_key = $1 AND a.expires_at_ms > $2`,
          [approval.linkKey, nowMs],
        );
        if (live.rows.length > 0) return 'exists';
        const pending = await q<{ n: number }>(
          `SELECT count(*)::int AS n FROM ${links} l JOIN ${approvals} a ON a.id = l.approval_id
            WHERE l.principal = $1 AND a.status = 'pending' AND a.expires_at_ms > $2`,
          [approval.principal, nowMs],
        );
        if ((pending.rows[0]?.n ?? 0) >= maxPending) return 'too-many';
        await this.#insertApproval(q, approval, nowMs);
        await q(
          `INSERT INTO ${links} (link_key, approval_id, principal, kept, expires_at_ms) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (link_key) DO UPDATE SET approval_id = excluded.approval_id, principal = excluded.principal,
              kept = excluded.kept, expires_at_ms = excluded.expires_at_ms`,
          [approval.linkKey, approval.id, approval.principal, approval.kept, approval.expiresAtMs],
        );
        return 'opened';
      }),
    );
  }

  /** `LinkStore.approvalByLink`: one `SELECT` joining the link to its approval. */
  async approvalByLink(linkKey: string, nowMs: number): Promise<LinkedApproval | undefined> {
    finiteMs('nowMs', nowMs);
    return this.#call(false, async (q) => {
      const read = await q<ApprovalRow & { kept: string }>(
        `SELECT ${APPROVAL_COLUMNS}, l.kept FROM ${this.#t('approval_links')} l
          JOIN ${this.#t('approvals')} a ON a.id = l.approval_id WHERE l.link_key = $1 AND a.expires_at_ms > $2`,
        [linkKey, nowMs],
      );
      const row = read.rows[0];
      if (row === undefined) return undefined;
      const { kept, ...approval } = row;
      return { approval: toRecord(approval)!, kept };
    });
  }

  /** `LinkStore.finishLink`: one `DELETE` of the key's link to that approval. */
  async finishLink(linkKey: string, id: string, nowMs: number): Promise<boolean> {
    finiteMs('nowMs', nowMs);
    return this.#call(false, async (q) => {
      const done = await q(`DELETE FROM ${this.#t('approval_links')} WHERE link_key = $1 AND approval_id = $2`, [
        linkKey,
        id,
      ]);
      return done.rowCount === 1;
    });
  }

  // ---- AuditHeadStore

  /**
   * `AuditHeadStore.recordAuditHead`: one `INSERT … ON CONFLICT (path) DO UPDATE … WHERE` another
   * trail or a later `seq` (the conflict's row is locked and re-checked by the server).
   */
  async recordAuditHead(path: string, head: AuditHead): Promise<void> {
    checkAuditHead(path, head);
    const heads = this.#t('audit_heads');
    await this.#call(false, (q) =>
      q(
        `INSERT INTO ${heads} (path, trail, seq, mac) VALUES ($1, $2, $3, $4)
          ON CONFLICT (path) DO UPDATE SET trail = excluded.trail, seq = excluded.seq, mac = excluded.mac
          WHERE excluded.trail <> ${heads}.trail OR excluded.seq > ${heads}.seq`,
        [path, head.trail, head.seq, head.mac],
      ),
    );
  }

  /** `AuditHeadStore.auditHead`: one `SELECT`. */
  async auditHead(path: string): Promise<AuditHead | undefined> {
    checkAuditHeadPath(path);
    return this.#call(false, async (q) => {
      const read = await q<{ trail: string; seq: string; mac: string }>(
        `SELECT trail, seq, mac FROM ${this.#t('audit_heads')} WHERE path = $1`,
        [path],
      );
      const row = read.rows[0];
      if (row === undefined) return undefined;
      const head = { trail: row.trail, seq: Number(row.seq), mac: row.mac };
      if (!isAuditHead(head)) throw new TypeError('unexpected audit head row');
      return head;
    });
  }

  // ---- GrantStore

  /** Deletes ended grants beyond `maxGrants` (those expiring first), never waiting for a locked row. */
  async #capEnded(q: Query, nowMs: number): Promise<void> {
    const grants = this.#t('grants');
    await q(
      `DELETE FROM ${grants} WHERE id IN (SELECT id FROM ${grants}
         WHERE (uses_left = 0 OR revoked) AND expires_at_ms > $1
         ORDER BY expires_at_ms DESC, id COLLATE "C" DESC OFFSET $2 FOR UPDATE SKIP LOCKED)`,
      [nowMs, this.maxGrants],
    );
  }

  /**
   * `GrantStore.spendGranting`. One transaction: a duplicate id is refused first (rolled back,
   * nothing spent); the ledger's spend as {@link spend}; only when it spent, under
   * `pg_advisory_xact_lock` of the schema's grants (so two creations never both take the last place:
   * exact bounds), expired grants swept, the live ones counted (those of the grant's principal and
   * binding, and all), and the grant inserted or `'full'`.
   */
  async spendGranting(jti: string, nowMs: number, grant: NewGrant): Promise<SpendCreating> {
    checkNewGrant(grant, nowMs);
    const grants = this.#t('grants');
    const result = await this.#unique('grant id already in the store', () =>
      this.#call(true, async (q): Promise<SpendCreating> => {
        const exists = await q(`SELECT 1 FROM ${grants} WHERE id = $1`, [grant.id]);
        if (exists.rows.length > 0) throw new RangeError('grant id already in the store');
        const spend = await this.#spendIn(q, jti, nowMs);
        if (spend !== 'spent') return { spend, created: 'none' };
        await q('SELECT pg_advisory_xact_lock(hashtext($1))', [`${this.schema} grants`]);
        await q(
          `DELETE FROM ${grants} WHERE id IN
            (SELECT id FROM ${grants} WHERE expires_at_ms <= $1 FOR UPDATE SKIP LOCKED)`,
          [nowMs],
        );
        const c = await q<{ held: number; total: number }>(
          `SELECT (SELECT count(*) FROM ${grants} WHERE principal = $1 AND binding = $3 AND expires_at_ms > $2 AND uses_left > 0 AND NOT revoked)::int AS held,
                  (SELECT count(*) FROM ${grants} WHERE expires_at_ms > $2 AND uses_left > 0 AND NOT revoked)::int AS total`,
          [grant.principal, nowMs, grant.binding],
        );
        const { held, total } = c.rows[0]!;
        if (held >= this.maxGrantsPerPrincipal || total >= this.maxGrants) return { spend, created: 'full' };
        const g = grant;
        await q(
          `INSERT INTO ${grants} (${GRANT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
          [
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
          ],
        );
        if (g.maxUses === 1) await this.#capEnded(q, nowMs);
        return { spend, created: 'created' };
      }),
    );
    this.#maybeMaintain(nowMs);
    return result;
  }

  /** `GrantStore.findGrants`: one `SELECT`, oldest first. */
  async findGrants(query: GrantQuery, nowMs: number): Promise<Grant[]> {
    checkGrantQuery(query);
    checkNowMs(nowMs);
    return this.#call(false, async (q) => {
      const read = await q<GrantRow>(
        `SELECT ${GRANT_COLUMNS} FROM ${this.#t('grants')}
          WHERE expires_at_ms > $1 AND uses_left > 0 AND NOT revoked
            AND ($2::text IS NULL OR principal = $2) AND ($3::text IS NULL OR audience = $3)
            AND ($4::text IS NULL OR tool = $4)
          ORDER BY created_at_ms, id COLLATE "C"`,
        [nowMs, query.principal ?? null, query.audience ?? null, query.tool ?? null],
      );
      return read.rows.map(toGrant);
    });
  }

  /**
   * `GrantStore.takeGrantUse`. One transaction: the conditional `UPDATE … SET uses_left = uses_left
   * - 1 WHERE` live `RETURNING` (re-checked after waiting for a concurrent take, so of concurrent takes of
   * the last use exactly one matches); with none, the row read for the reason.
   */
  async takeGrantUse(id: string, nowMs: number): Promise<TakeGrantOutcome> {
    checkNowMs(nowMs);
    const grants = this.#t('grants');
    return this.#call(true, async (q): Promise<TakeGrantOutcome> => {
      const taken = await q<{ uses_left: number; expires_at_ms: number }>(
        `UPDATE ${grants} SET uses_left = uses_left - 1
          WHERE id = $1 AND expires_at_ms > $2 AND uses_left > 0 AND NOT revoked RETURNING uses_left, expires_at_ms`,
        [id, nowMs],
      );
      const row = taken.rows[0];
      if (row !== undefined) {
        if (row.uses_left === 0) await this.#capEnded(q, nowMs);
        return { taken: true, usesLeft: row.uses_left, expiresAtMs: row.expires_at_ms };
      }
      const read = await q<{ uses_left: number; expires_at_ms: number; revoked: boolean }>(
        `SELECT uses_left, expires_at_ms, revoked FROM ${grants} WHERE id = $1`,
        [id],
      );
      const state = read.rows[0];
      if (state === undefined) return { taken: false, reason: 'unknown' };
      if (nowMs >= state.expires_at_ms) return { taken: false, reason: 'expired' };
      if (state.revoked) return { taken: false, reason: 'revoked' };
      return { taken: false, reason: 'exhausted' };
    });
  }

  /** `GrantStore.revokeGrant`. One transaction: the conditional `UPDATE … SET revoked WHERE` live. */
  async revokeGrant(id: string, nowMs: number): Promise<'revoked' | 'unknown'> {
    checkNowMs(nowMs);
    return this.#call(true, async (q) => {
      const done = await q(
        `UPDATE ${this.#t('grants')} SET revoked = true
          WHERE id = $1 AND expires_at_ms > $2 AND uses_left > 0 AND NOT revoked RETURNING id`,
        [id, nowMs],
      );
      if (done.rows.length === 0) return 'unknown';
      await this.#capEnded(q, nowMs);
      return 'revoked';
    });
  }

  /**
   * `GrantStore.spendPlanning`. One transaction, as {@link spendGranting} with the schema's plans
   * lock: duplicate refused first, the spend, then (only when spent) sweep, count (the live plans of the
   * plan's principal and binding, and all), insert the plan (with its binding) and its slots.
   */
  async spendPlanning(jti: string, nowMs: number, plan: NewPlan): Promise<SpendCreating> {
    checkNewPlan(plan, nowMs);
    const plans = this.#t('plans');
    const slots = this.#t('plan_slots');
    const result = await this.#unique('plan id already in the store', () =>
      this.#call(true, async (q): Promise<SpendCreating> => {
        const exists = await q(`SELECT 1 FROM ${plans} WHERE id = $1`, [plan.id]);
        if (exists.rows.length > 0) throw new RangeError('plan id already in the store');
        const spend = await this.#spendIn(q, jti, nowMs);
        if (spend !== 'spent') return { spend, created: 'none' };
        await q('SELECT pg_advisory_xact_lock(hashtext($1))', [`${this.schema} plans`]);
        await q(
          `DELETE FROM ${plans} WHERE id IN (SELECT id FROM ${plans} WHERE expires_at_ms <= $1 FOR UPDATE SKIP LOCKED)`,
          [nowMs],
        );
        await q(
          `DELETE FROM ${slots} WHERE (plan_id, idx) IN
            (SELECT plan_id, idx FROM ${slots} WHERE expires_at_ms <= $1 FOR UPDATE SKIP LOCKED)`,
          [nowMs],
        );
        const c = await q<{ held: number; total: number }>(
          `SELECT (SELECT count(*) FROM ${plans} WHERE principal = $1 AND binding = $3 AND expires_at_ms > $2)::int AS held,
                  (SELECT count(*) FROM ${plans} WHERE expires_at_ms > $2)::int AS total`,
          [plan.principal, nowMs, plan.binding],
        );
        const { held, total } = c.rows[0]!;
        if (held >= this.maxPlansPerPrincipal || total >= this.maxPlans) return { spend, created: 'full' };
        const p = plan;
        await q(
          `INSERT INTO ${plans} (id, audience, principal, binding, approver, created_at_ms, expires_at_ms, slots, slots_left)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)`,
          [p.id, p.audience, p.principal, p.binding, p.approver, p.createdAtMs, p.expiresAtMs, p.slots.length],
        );
        await q(
          `INSERT INTO ${slots} (plan_id, idx, slot_key, tool, identity, expires_at_ms)
            SELECT $1, (u.i - 1)::int, u.k, u.t, u.d, $2
              FROM unnest($3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS u(k, t, d, i)`,
          [p.id, p.expiresAtMs, p.slots.map((s) => s.key), p.slots.map((s) => s.tool), p.slots.map((s) => s.identity)],
        );
        return { spend, created: 'created' };
      }),
    );
    this.#maybeMaintain(nowMs);
    return result;
  }

  /**
   * `GrantStore.takePlanSlot`. One transaction: the unused slot with the key of the live plan
   * expiring first is deleted (`FOR UPDATE SKIP LOCKED`: a slot a concurrent take holds is passed over,
   * so of concurrent takes of one slot exactly one deletes it), and its plan's `slots_left` decremented
   * (the plan deleted at 0).
   */
  async takePlanSlot(key: string, nowMs: number): Promise<TakenPlanSlot | undefined> {
    checkNowMs(nowMs);
    const plans = this.#t('plans');
    const slots = this.#t('plan_slots');
    return this.#call(true, async (q) => {
      for (;;) {
        const taken = await q<{ plan_id: string; idx: number; identity: string; expires_at_ms: number }>(
          `DELETE FROM ${slots} WHERE (plan_id, idx) IN
            (SELECT plan_id, idx FROM ${slots} WHERE slot_key = $1 AND expires_at_ms > $2
              ORDER BY expires_at_ms, plan_id COLLATE "C" LIMIT 1 FOR UPDATE SKIP LOCKED)
            RETURNING plan_id, idx, identity, expires_at_ms`,
          [key, nowMs],
        );
        const slot = taken.rows[0];
        if (slot === undefined) return undefined;
        const used = await q<{ slots_left: number }>(
          `UPDATE ${plans} SET slots_left = slots_left - 1 WHERE id = $1 RETURNING slots_left`,
          [slot.plan_id],
        );
        const plan = used.rows[0];
        if (plan === undefined) continue; // a slot whose plan is gone: dropped, and the next one tried
        if (plan.slots_left <= 0) await q(`DELETE FROM ${plans} WHERE id = $1`, [slot.plan_id]);
        return {
          planId: slot.plan_id,
          index: slot.idx,
          identity: slot.identity,
          slotsLeft: plan.slots_left,
          expiresAtMs: slot.expires_at_ms,
        };
      }
    });
  }
}
