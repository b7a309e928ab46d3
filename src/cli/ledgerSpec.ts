/**
 * `--ledger SPEC` → a {@link ConfirmStore}: `memory` (one process), `sqlite:PATH`
 * (processes on one host sharing a file), `redis://HOST:PORT[/DB]` or
 * `rediss://…` (several hosts), `postgres://…` or `postgresql://…` (several hosts; across a
 * failover with a synchronous standby). The stores are imported only when named, so
 * `--ledger memory` loads no native driver.
 *
 * @module
 */
import type { ConfirmStore } from '../store/confirmStore.js';
import { MemoryLedger } from '../store/memory.js';
import { ConfigError } from '../errors.js';
import { asUsageError, UsageError } from './common.js';

/**
 * Parses a `redis://` or `rediss://` `--ledger` value, without connecting.
 *
 * @throws {UsageError} when it is not a URL, or its path is not a database number (`/0`); the
 *   message never echoes the value (it may hold a password).
 */
export function redisUrl(spec: string): URL {
  let url: URL;
  try {
    url = new URL(spec);
  } catch {
    // Never echo the value: it may hold a password.
    throw new UsageError('--ledger: not a valid redis://[[USER]:PASSWORD@]HOST:PORT[/DB] URL');
  }
  if (url.pathname !== '' && url.pathname !== '/' && !/^\/[0-9]{1,5}$/.test(url.pathname)) {
    throw new UsageError('--ledger: the Redis database must be a number, as in redis://HOST:PORT/0');
  }
  return url;
}

/** A Redis URL as messages show it: scheme, host, port and database, never a user name or password. */
function shownRedisUrl(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname}`;
}

/** Whether a `--ledger` value names the PostgreSQL store (`postgres://…` or `postgresql://…`). */
export function isPostgresSpec(spec: string): boolean {
  return spec.startsWith('postgres://') || spec.startsWith('postgresql://');
}

/**
 * Parses a `postgres://` or `postgresql://` `--ledger` value, without connecting: the URL given to
 * the `pg` package (without `schema`), and the schema its `?schema=NAME` names (default `mcp_confirm`).
 *
 * @throws {UsageError} when it is not a URL or its schema is not a lower-case identifier; the
 *   message never echoes the value (it may hold a password).
 */
export function postgresSpec(spec: string): { url: string; schema: string | undefined; shown: string } {
  let url: URL;
  try {
    url = new URL(spec);
  } catch {
    throw new UsageError('--ledger: not a valid postgres://[USER[:PASSWORD]@]HOST[:PORT]/DB URL');
  }
  const schema = url.searchParams.get('schema') ?? undefined;
  if (schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema))
    throw new UsageError('--ledger: the schema must be a lower-case identifier (a-z, 0-9, _; at most 63)');
  url.searchParams.delete('schema');
  // Shown: scheme, host, port and database only (never a user name, a password or the query).
  return { url: url.href, schema, shown: `${url.protocol}//${url.host}${url.pathname}` };
}

/**
 * A `--ledger` value as messages show it: `sqlite:PATH` and `memory` as given; a Redis or PostgreSQL
 * URL without its user name, password and query (`redis://HOST:PORT/DB`), or `a Redis URL` / `a
 * PostgreSQL URL` when it does not parse.
 */
export function shownLedger(spec: string): string {
  if (isPostgresSpec(spec)) {
    try {
      const url = new URL(spec);
      return `${url.protocol}//${url.host}${url.pathname}`;
    } catch {
      return 'a PostgreSQL URL'; // never echo the value: it may hold a password
    }
  }
  if (!spec.startsWith('redis://') && !spec.startsWith('rediss://')) return spec;
  try {
    return shownRedisUrl(new URL(spec));
  } catch {
    return 'a Redis URL'; // never echo the value: it may hold a password
  }
}

/** How long start-up waits for a first Redis connection before serving anyway, in milliseconds. */
const STARTUP_WAIT_MS = 3_000;

/**
 * Opens the ledger a `--ledger` value names. A SQLite ledger never waits: when
 * another process holds the write lock of a file that still needs its schema, the
 * server starts anyway (logged) and each call waits up to the ledger's 2 s deadline
 * without blocking other requests. A Redis ledger waits up to 3 s for
 * its first connection: a reply error then (a database out of range, a wrong
 * password) is a configuration error; an unreachable server is not: the server
 * starts, confirmations fail closed with `ERR_CONFIRM_LEDGER_UNAVAILABLE`, and the
 * ledger keeps reconnecting in the background.
 *
 * @param spec - `memory`, `sqlite:PATH` or `redis://HOST:PORT[/DB]`.
 * @param audience - the server's audience; namespaces the Redis keys.
 * @param log - where to report connection trouble (stderr).
 * A SQLite file that another process holds locked (replicas starting together on a new file) is
 * retried for up to 10 s.
 *
 * @throws {UsageError} for an unknown spec, a store whose driver package (better-sqlite3, redis) is not
 *   installed, a SQLite file that cannot be opened (or stays locked for
 *   10 s), or a Redis that refuses the connection.
 */
export async function openLedger(
  spec: string,
  audience: string,
  log: (line: string) => void = () => {},
): Promise<ConfirmStore> {
  if (spec === 'memory') return new MemoryLedger();
  if (spec.startsWith('sqlite:')) {
    const path = spec.slice('sqlite:'.length);
    if (path === '') throw new UsageError('--ledger sqlite:PATH needs a file path');
    const { SqliteLedger } = await import('../store/sqlite.js');
    let ledger;
    try {
      ledger = new SqliteLedger({ path });
    } catch (e) {
      if (e instanceof ConfigError) throw asUsageError(e, `--ledger ${spec}: `); // no better-sqlite3
      const cause = (e as { cause?: unknown }).cause;
      const reason = cause instanceof Error ? cause.message : (e as Error).message;
      throw new UsageError(`--ledger ${spec}: cannot open the SQLite ledger: ${reason}`);
    }
    // Never waits at start-up: a new file locked by another process gets its schema with the first confirmation.
    if (!ledger.isReady) {
      log(
        `SQLite ledger ${path} is locked by another process: serving anyway; each confirmation waits up to ${ledger.timeoutMs} ms for the lock`,
      );
    }
    return ledger;
  }
  if (spec.startsWith('redis://') || spec.startsWith('rediss://')) {
    const url = redisUrl(spec);
    const { RedisLedger } = await import('../store/redis.js');
    let lastReport = 0;
    let refusal: string | undefined;
    let starting = true;
    const shown = shownRedisUrl(url);
    let ledger;
    try {
      ledger = new RedisLedger({
        url: spec,
        namespace: audience,
        onError: (error) => {
          const message = error instanceof Error ? error.message : String(error);
          // A reply error while connecting (bad database, password, ACL) is configuration, not an outage.
          if (/^(ERR|WRONGPASS|NOAUTH|NOPERM)\b/.test(message)) {
            refusal ??= message;
            if (starting) return; // reported once, as the start-up's usage error (exit 2), not as "retrying"
          }
          const now = Date.now();
          if (now - lastReport < 5_000) return;
          lastReport = now;
          log(`Redis ledger at ${shown}: ${message} (retrying; confirmations are refused meanwhile)`);
        },
      });
    } catch (e) {
      if (e instanceof ConfigError) throw asUsageError(e, `--ledger ${shown}: `); // no redis
      throw new UsageError(`--ledger: ${(e as Error).message}`);
    }
    // Give the first connection a moment, to tell a configuration error (exit 2) from an outage (serve, refuse, recover).
    const deadline = Date.now() + STARTUP_WAIT_MS;
    while (!ledger.isReady && refusal === undefined && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    if (refusal !== undefined) {
      await ledger.close().catch(() => {});
      throw new UsageError(`--ledger: Redis at ${shown} refused the connection: ${refusal}`);
    }
    starting = false;
    if (!ledger.isReady)
      log(`Redis ledger at ${shown} is not reachable yet: serving anyway; confirmations are refused until it is`);
    return ledger;
  }
  if (isPostgresSpec(spec)) return openPostgres(spec, log);
  throw new UsageError(
    '--ledger: unknown ledger (use memory, sqlite:PATH, redis://HOST:PORT[/DB] or postgres://HOST[:PORT]/DB)',
  );
}

/**
 * Opens the PostgreSQL store of a `postgres://` `--ledger` value: waits up to 3 s for its schema
 * (read, or created when missing). A configuration error (no `pg` package, a schema newer than this
 * version knows or missing and not creatable, a refused login) is a usage error (exit 2); an
 * unreachable database is not: the server starts, confirmations fail closed with
 * `ERR_CONFIRM_LEDGER_UNAVAILABLE`, and each call tries again.
 *
 * @throws {UsageError} as said; the message names the database by host, port and name only.
 */
async function openPostgres(spec: string, log: (line: string) => void): Promise<ConfirmStore> {
  const { url, schema, shown } = postgresSpec(spec);
  const { PostgresStore } = await import('../store/postgres.js');
  let store;
  try {
    store = await PostgresStore.create({ url, ...(schema !== undefined ? { schema } : {}) });
  } catch (e) {
    throw new UsageError(`--ledger: ${(e as Error).message}`);
  }
  let timer: NodeJS.Timeout | undefined;
  const waited = await Promise.race([
    store.ready().then(
      () => 'ready' as const,
      (e: unknown) => e,
    ),
    new Promise<'waiting'>((resolve) => {
      timer = setTimeout(() => resolve('waiting'), STARTUP_WAIT_MS);
    }),
  ]);
  clearTimeout(timer);
  if (waited === 'ready') return store;
  const cause = (waited as { cause?: unknown } | undefined)?.cause;
  // The server refused the login or the database (SQLSTATE class 28, 3D000): configuration, not an outage.
  const state = (cause as { code?: unknown } | undefined)?.code;
  if ((waited as { code?: unknown } | undefined)?.code?.toString().startsWith('ERR_CONFIG_')) {
    await store.close();
    throw new UsageError(`--ledger: PostgreSQL at ${shown}: ${(waited as Error).message}`);
  }
  if (typeof state === 'string' && (state.startsWith('28') || state === '3D000')) {
    await store.close();
    throw new UsageError(`--ledger: PostgreSQL at ${shown} refused the connection: ${(cause as Error).message}`);
  }
  log(`PostgreSQL ledger at ${shown} is not reachable yet: serving anyway; confirmations are refused until it is`);
  return store;
}
