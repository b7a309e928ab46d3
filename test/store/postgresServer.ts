/**
 * The PostgreSQL of the test runner (scripts/test.sh starts it and exports PG_URL), fresh schemas on
 * it, and a throwaway server owned by one test (scripts/start-postgres.sh) for the tests that stop,
 * freeze or restart the server. Missing is a failure, never a skip.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
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

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

/** The state letter of a process in /proc (`undefined` when it is gone). */
export function procState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return undefined;
  }
}

/** The children of `pid` (the server's backends and workers), from /proc. */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/**
 * Sends `sig` to our own server's postmaster; SIGSTOP and SIGCONT also to every process it started
 * (each connection has its own backend process: freezing the postmaster alone freezes none of them).
 */
export function signalPostgres(server: OwnPostgres, sig: NodeJS.Signals): void {
  if (sig === 'SIGSTOP' || sig === 'SIGCONT') for (const child of childrenOf(server.pid)) signal(child, sig);
  signal(server.pid, sig);
  if (sig === 'SIGCONT') continueRunuser(server.pid);
}

/**
 * As root the server runs under `runuser`, which stops itself when its child stops (as `su` does)
 * and then never reaps it: continues the `runuser` that started `pid`, if any, so that it resumes
 * waiting, reaps the server when it ends and exits (else it stays stopped, holding a zombie, after
 * the tests). Call it with the pid read before the server ended, or while it runs.
 */
export function continueRunuser(pid: number): void {
  const parent = runuserOf(pid);
  if (parent !== undefined) signal(parent, 'SIGCONT');
}

/** The `runuser` process that started `pid`, or undefined (not root, or gone). */
export function runuserOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return readFileSync(`/proc/${ppid}/comm`, 'utf8').trim() === 'runuser' ? ppid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Resolves once the postmaster has exited (gone, or a zombie nobody reaped: a container's init may
 * not reap orphans).
 */
export async function waitPostgresGone(server: OwnPostgres): Promise<void> {
  const until = Date.now() + PROCESS_DEADLINE_MS;
  for (;;) {
    const state = procState(server.pid);
    if (state === undefined || state === 'Z') return;
    if (Date.now() > until) throw new Error(`postgres ${server.pid} still running after ${PROCESS_DEADLINE_MS} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Stops our own server (fast shutdown, SIGCONT first in case it is frozen) and removes its data. */
export async function removePostgres(server: OwnPostgres): Promise<void> {
  const runuser = runuserOf(server.pid);
  signalPostgres(server, 'SIGCONT');
  signalPostgres(server, 'SIGINT');
  await waitPostgresGone(server).catch(() => signalPostgres(server, 'SIGKILL'));
  if (runuser !== undefined) signal(runuser, 'SIGCONT');
  rmSync(server.dataDir, { recursive: true, force: true });
}
