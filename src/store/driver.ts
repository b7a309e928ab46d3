/**
 * The store drivers, loaded when a store is first used rather than when its module is imported.
 *
 * `better-sqlite3` (for `SqliteLedger`) and `redis` (for `RedisLedger` given a `url`) are
 * optional peer dependencies of mcp-confirm: installing the package for the in-memory ledger
 * installs (and compiles) neither. A store used without its driver refuses with one sentence that
 * names the package to install (`ERR_CONFIG_STORE_DRIVER`), before touching anything.
 *
 * Both drivers are CommonJS packages, so they are loaded synchronously with `require` from this
 * module's location: the stores' constructors stay synchronous, and the driver is resolved next to
 * mcp-confirm (the application's `node_modules`, or the same global prefix for `npm install -g`).
 *
 * @module
 */
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';
import { ConfigError } from '../errors.js';

const requireHere = createRequire(import.meta.url);

/** The `better-sqlite3` module: its `Database` constructor. */
export type SqliteDriver = typeof BetterSqlite3;
/** The `redis` module (node-redis). */
export type RedisDriver = typeof import('redis');

/** `true` when `error` says that `name` itself (not one of its own dependencies) cannot be found. */
function isMissing(error: unknown, name: string): boolean {
  return (
    (error as { code?: unknown } | null)?.code === 'MODULE_NOT_FOUND' &&
    error instanceof Error &&
    error.message.startsWith(`Cannot find module '${name}'`)
  );
}

function load<T>(name: string, store: string): T {
  try {
    return requireHere(name) as T;
  } catch (error) {
    if (isMissing(error, name)) {
      throw new ConfigError(
        'ERR_CONFIG_STORE_DRIVER',
        `the ${store} store needs the package ${name}, which is not installed: install it next to mcp-confirm (npm install ${name})`,
        { value: name, cause: error },
      );
    }
    throw error;
  }
}

/**
 * The `better-sqlite3` module, loaded on first use.
 *
 * @throws {ConfigError} `ERR_CONFIG_STORE_DRIVER` when `better-sqlite3` is not installed (`value`: `'better-sqlite3'`).
 */
export function sqliteDriver(): SqliteDriver {
  return load<SqliteDriver>('better-sqlite3', 'SQLite');
}

/**
 * The `redis` module, loaded on first use.
 *
 * @throws {ConfigError} `ERR_CONFIG_STORE_DRIVER` when `redis` is not installed (`value`: `'redis'`).
 */
export function redisDriver(): RedisDriver {
  return load<RedisDriver>('redis', 'Redis');
}
