/**
 * `--ledger SPEC` → a {@link Ledger}: `memory` (one process), `sqlite:PATH`
 * (processes on one host sharing a file), `redis://HOST:PORT[/DB]` or
 * `rediss://…` (several hosts). The stores are imported only when named, so
 * `--ledger memory` loads no native driver.
 *
 * @module
 */
import type { Ledger } from '../ledger/ledger.js';
import { MemoryLedger } from '../ledger/memoryLedger.js';
import { UsageError } from './args.js';

/** How long start-up waits for a first Redis connection before serving anyway, in milliseconds. */
const STARTUP_WAIT_MS = 3_000;

/** How long start-up waits for a SQLite ledger file that another process holds locked, in milliseconds. */
const SQLITE_STARTUP_WAIT_MS = 10_000;

/** Between two attempts to open a locked SQLite ledger file, in milliseconds. */
const SQLITE_RETRY_MS = 25;

/** True when opening failed only because another connection held the file's lock (`SQLITE_BUSY`, `SQLITE_LOCKED`). */
function lockedByAnother(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^SQLITE_(BUSY|LOCKED)/.test(code)) return true;
  }
  return false;
}

/**
 * Opens the ledger a `--ledger` value names. A Redis ledger waits up to 3 s for
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
 * @throws {UsageError} for an unknown spec, a SQLite file that cannot be opened (or stays locked for
 *   10 s), or a Redis that refuses the connection.
 */
export async function openLedger(spec: string, audience: string, log: (line: string) => void = () => {}): Promise<Ledger> {
  if (spec === 'memory') return new MemoryLedger();
  if (spec.startsWith('sqlite:')) {
    const path = spec.slice('sqlite:'.length);
    if (path === '') throw new UsageError('--ledger sqlite:PATH needs a file path');
    const { SqliteLedger } = await import('../stores/sqlite.js');
    // Switching a fresh file to WAL needs its write lock, and SQLite refuses that switch at once
    // (SQLITE_BUSY, without waiting out busy_timeout) while another connection holds the lock: which
    // happens whenever replicas start together on a new ledger file. So a locked file is retried,
    // without blocking the event loop, until SQLITE_STARTUP_WAIT_MS.
    const deadline = Date.now() + SQLITE_STARTUP_WAIT_MS;
    let told = false;
    for (;;) {
      try {
        return new SqliteLedger({ path });
      } catch (e) {
        if (lockedByAnother(e) && Date.now() < deadline) {
          if (!told) log(`waiting for the SQLite ledger ${JSON.stringify(path)}: another process holds its lock`);
          told = true;
          await new Promise((r) => setTimeout(r, SQLITE_RETRY_MS));
          continue;
        }
        const cause = (e as { cause?: unknown }).cause;
        const reason = cause instanceof Error ? cause.message : (e as Error).message;
        throw new UsageError(`--ledger ${spec}: cannot open the SQLite ledger: ${reason}`);
      }
    }
  }
  if (spec.startsWith('redis://') || spec.startsWith('rediss://')) {
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
    const { RedisLedger } = await import('../stores/redis.js');
    let lastReport = 0;
    let refusal: string | undefined;
    const shown = `${url.protocol}//${url.host}${url.pathname}`; // never the password
    let ledger;
    try {
      ledger = new RedisLedger({
        url: spec,
        namespace: audience,
        onError: (error) => {
          const message = error instanceof Error ? error.message : String(error);
          // A reply error while connecting (bad database, password, ACL) is configuration, not an outage.
          if (/^(ERR|WRONGPASS|NOAUTH|NOPERM)\b/.test(message)) refusal ??= message;
          const now = Date.now();
          if (now - lastReport < 5_000) return;
          lastReport = now;
          log(`Redis ledger at ${shown}: ${message} (retrying; confirmations are refused meanwhile)`);
        },
      });
    } catch (e) {
      throw new UsageError(`--ledger: ${(e as Error).message}`);
    }
    // Give the first connection a moment, to tell a configuration error (exit 2) from an outage (serve, refuse, recover).
    const deadline = Date.now() + STARTUP_WAIT_MS;
    while (!ledger.isReady && refusal === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    if (refusal !== undefined) {
      await ledger.close().catch(() => {});
      throw new UsageError(`--ledger: Redis at ${shown} refused the connection: ${refusal}`);
    }
    if (!ledger.isReady) log(`Redis ledger at ${shown} is not reachable yet: serving anyway; confirmations are refused until it is`);
    return ledger;
  }
  throw new UsageError('--ledger: unknown ledger (use memory, sqlite:PATH or redis://HOST:PORT[/DB])');
}
