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

/**
 * Opens the ledger a `--ledger` value names. A Redis ledger is returned at once
 * and connects (and reconnects) in the background: until it is connected,
 * confirmations fail closed with `ERR_CONFIRM_LEDGER_UNAVAILABLE`.
 *
 * @param spec - `memory`, `sqlite:PATH` or `redis://HOST:PORT[/DB]`.
 * @param audience - the server's audience; namespaces the Redis keys.
 * @param log - where to report connection trouble (stderr).
 * @throws {UsageError} for an unknown spec, or a SQLite file that cannot be opened.
 */
export async function openLedger(spec: string, audience: string, log: (line: string) => void = () => {}): Promise<Ledger> {
  if (spec === 'memory') return new MemoryLedger();
  if (spec.startsWith('sqlite:')) {
    const path = spec.slice('sqlite:'.length);
    if (path === '') throw new UsageError('--ledger sqlite:PATH needs a file path');
    const { SqliteLedger } = await import('../stores/sqlite.js');
    try {
      return new SqliteLedger({ path });
    } catch (e) {
      const cause = (e as { cause?: unknown }).cause;
      const reason = cause instanceof Error ? cause.message : (e as Error).message;
      throw new UsageError(`--ledger ${spec}: cannot open the SQLite ledger: ${reason}`);
    }
  }
  if (spec.startsWith('redis://') || spec.startsWith('rediss://')) {
    let url: URL;
    try {
      url = new URL(spec);
    } catch {
      throw new UsageError(`--ledger: ${JSON.stringify(spec)} is not a valid redis:// URL`);
    }
    const { RedisLedger } = await import('../stores/redis.js');
    let lastReport = 0;
    const shown = `${url.protocol}//${url.host}${url.pathname}`; // never the password
    try {
      return new RedisLedger({
        url: spec,
        namespace: audience,
        onError: (error) => {
          const now = Date.now();
          if (now - lastReport < 5_000) return;
          lastReport = now;
          log(`Redis ledger at ${shown}: ${error instanceof Error ? error.message : String(error)} (retrying; confirmations are refused meanwhile)`);
        },
      });
    } catch (e) {
      throw new UsageError(`--ledger: ${(e as Error).message}`);
    }
  }
  throw new UsageError(`--ledger: unknown ledger ${JSON.stringify(spec)} (use memory, sqlite:PATH or redis://HOST:PORT[/DB])`);
}
