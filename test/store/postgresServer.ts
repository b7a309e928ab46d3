/**
 * The PostgreSQL of the test runner (scripts/test.sh starts it and exports PG_URL), fresh schemas on
 * it, and a throwaway server owned by one test (scripts/start-postgres.sh) for the tests that stop,
 * freeze or restart the server. Missing is a failure, never a skip.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { PostgresStore, type PostgresStoreOptions } from '../../src/store/postgres.js';
import { PROCESS_DEADLINE_MS } from '../helpers/deadlines.js';

const SCRIPT = fileURLToPath(new URL('../../scripts/start-postgres.sh', import.meta.url));

/** The URL of the runner's PostgreSQL. @throws when PG_URL is not set. */
export function pgUrl(): string {
  const url = process.env.PG_URL;
  if (!url)
    throw new Error(
      'PG_URL is not set: start PostgreSQL with scripts/start-postgres.sh and export PG_URL=postgres://postgres@127.0.0.1:PORT/postgres',
    );
  return url;
}

/** A fresh schema name: each test gets its own tables. */
export const freshSchema = (): string => `t_${randomBytes(8).toString('hex')}`;

/** Opens a store on the runner's PostgreSQL in a fresh schema (or the one given). */
export function openStore(options: Partial<PostgresStoreOptions> = {}): Promise<PostgresStore> {
  return PostgresStore.open({ url: pgUrl(), schema: freshSchema(), connectTimeoutMs: 30_000, ...options });
}

/** A plain `pg` client on `url` (the test's own connection, e.g. to hold a lock). */
export async function rawClient(url = pgUrl()): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  await client.connect();
  return client;
}

export interface OwnPostgres {
  port: number;
  pid: number;
  dataDir: string;
  url: string;
}

/** Starts a PostgreSQL of the test's own; on `port` with `dataDir` to restart one in the same place. */
export function startPostgres(port?: number, dataDir?: string): OwnPostgres {
  const args = port === undefined ? [SCRIPT] : [SCRIPT, String(port), dataDir ?? ''];
  const out = execFileSync('bash', args, { encoding: 'utf8', timeout: PROCESS_DEADLINE_MS }).trim();
  const [p, pid, dir] = out.split(/\s+/);
  if (!Number.isInteger(Number(p)) || !Number.isInteger(Number(pid)) || !dir)
    throw new Error(`start-postgres.sh printed ${JSON.stringify(out)}`);
  return { port: Number(p), pid: Number(pid), dataDir: dir, url: `postgres://postgres@127.0.0.1:${p}/postgres` };
}

/** Sends `signal` to our own server, ignoring "no such process". */
export function signalPostgres(server: OwnPostgres, signal: NodeJS.Signals): void {
  try {
    process.kill(server.pid, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

/** Stops our own server (fast shutdown, SIGCONT first in case it is frozen) and removes its data. */
export async function removePostgres(server: OwnPostgres): Promise<void> {
  signalPostgres(server, 'SIGCONT');
  signalPostgres(server, 'SIGINT');
  const until = Date.now() + PROCESS_DEADLINE_MS;
  for (;;) {
    try {
      process.kill(server.pid, 0);
    } catch {
      break;
    }
    if (Date.now() > until) {
      signalPostgres(server, 'SIGKILL');
      break;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  rmSync(server.dataDir, { recursive: true, force: true });
}
