/**
 * A PostgreSQL primary with a synchronous standby of the test's own (scripts/start-postgres-pair.sh:
 * fsync on, `synchronous_commit = remote_apply`, `synchronous_standby_names = 'FIRST 1 (standby1)'`,
 * the standby from `pg_basebackup -R`), and what a failover does to it: the primary crashed (every
 * one of its processes stopped, then killed: nothing it had not sent before that instant is sent),
 * the standby promoted. PostgreSQL missing is a failure, never a skip.
 */
import { readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { runProcess } from '../helpers/processes.js';
import { PROCESS_DEADLINE_MS } from '../helpers/deadlines.js';
import { childrenOf, procState, runuserOf } from './postgresServer.js';

const SCRIPT = fileURLToPath(new URL('../../scripts/start-postgres-pair.sh', import.meta.url));

export interface PairMember {
  port: number;
  /** The postmaster's PID. */
  pid: number;
  url: string;
}

export interface PostgresPair {
  primary: PairMember;
  standby: PairMember;
  /** Holds both data directories and their logs. */
  dir: string;
}

const urlOf = (port: number): string => `postgres://postgres@127.0.0.1:${port}/postgres`;

/**
 * Starts a primary and its synchronous standby (the primary a copy of `template`, a data directory
 * made by initdb once and made when missing: see the script); resolves once the primary's `pg_stat_replication`
 * shows the standby `streaming` and `sync` (the script waits for it; {@link replicationOf} checks again).
 */
export async function startPair(template?: string): Promise<PostgresPair> {
  const run = await runProcess('bash', template === undefined ? [SCRIPT] : [SCRIPT, template]);
  const out = run.stdout.trim();
  const [pPort, pPid, sPort, sPid, dir] = out.split(/\s+/);
  if (run.status !== 0 || !dir || ![pPort, pPid, sPort, sPid].every((n) => Number.isInteger(Number(n))))
    throw new Error(`start-postgres-pair.sh failed (${run.status}): ${JSON.stringify(out)} ${run.stderr}`);
  return {
    primary: { port: Number(pPort), pid: Number(pPid), url: urlOf(Number(pPort)) },
    standby: { port: Number(sPort), pid: Number(sPid), url: urlOf(Number(sPort)) },
    dir,
  };
}

/** Runs one query on a fresh connection to `url`. */
export async function queryOnce<R extends pg.QueryResultRow>(
  url: string,
  text: string,
  values: unknown[] = [],
): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end().catch(() => {});
  }
}

/** The standby as the primary sees it: `{ state, syncState }` of `application_name = 'standby1'`. */
export async function replicationOf(pair: PostgresPair): Promise<{ state: string; syncState: string } | undefined> {
  const rows = await queryOnce<{ state: string; sync_state: string }>(
    pair.primary.url,
    "SELECT state, sync_state FROM pg_stat_replication WHERE application_name = 'standby1'",
  );
  const row = rows[0];
  return row === undefined ? undefined : { state: row.state, syncState: row.sync_state };
}

/** What the primary runs with: `synchronous_commit`, `synchronous_standby_names`, `fsync`. */
export async function primarySettings(
  pair: PostgresPair,
): Promise<{ synchronousCommit: string; synchronousStandbyNames: string; fsync: string }> {
  const rows = await queryOnce<{ name: string; setting: string }>(
    pair.primary.url,
    "SELECT name, setting FROM pg_settings WHERE name IN ('synchronous_commit', 'synchronous_standby_names', 'fsync')",
  );
  const get = (name: string): string => rows.find((r) => r.name === name)?.setting ?? '';
  return {
    synchronousCommit: get('synchronous_commit'),
    synchronousStandbyNames: get('synchronous_standby_names'),
    fsync: get('fsync'),
  };
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

const crashed = new WeakSet<PostgresPair>();

/**
 * Crashes the primary, synchronously: the postmaster is stopped first (once it shows as stopped it
 * forks no new process), then every process it started (backends, the WAL sender, the writers), then all of them are killed
 * with SIGKILL. A crash of the host as far as the standby and the clients can tell: a commit record
 * the WAL sender had not sent is never sent, and no backend answers again. Safe to call from a
 * proxy's hook (nothing awaits).
 */
export function crashPrimary(pair: PostgresPair): void {
  // Once: its PID may be reused after it is reaped.
  if (crashed.has(pair)) return;
  crashed.add(pair);
  // As root the postmaster runs under runuser, which stops with it and must be let go after (see continueRunuser).
  const runuser = runuserOf(pair.primary.pid);
  signal(pair.primary.pid, 'SIGSTOP');
  // kill() returns before the signal is acted on: on another core the postmaster may still fork a
  // backend. Only once it shows as stopped is its list of children final.
  for (let i = 0; i < 1_000_000; i++) {
    const state = procState(pair.primary.pid);
    if (state === undefined || state === 'T' || state === 'Z') break;
  }
  const stopped = new Set<number>();
  for (;;) {
    const fresh = childrenOf(pair.primary.pid).filter((child) => !stopped.has(child));
    if (fresh.length === 0) break;
    for (const child of fresh) {
      signal(child, 'SIGSTOP');
      stopped.add(child);
    }
  }
  for (const child of stopped) signal(child, 'SIGKILL');
  signal(pair.primary.pid, 'SIGKILL');
  if (runuser !== undefined) signal(runuser, 'SIGCONT');
}

/** Sends `sig` to the standby's postmaster and every process it started (SIGSTOP and SIGCONT freeze and thaw it whole). */
export function signalStandby(pair: PostgresPair, sig: NodeJS.Signals): void {
  if (sig === 'SIGCONT') signal(pair.standby.pid, sig);
  for (const child of childrenOf(pair.standby.pid)) signal(child, sig);
  if (sig !== 'SIGCONT') signal(pair.standby.pid, sig);
  const runuser = sig === 'SIGCONT' ? runuserOf(pair.standby.pid) : undefined;
  if (runuser !== undefined) signal(runuser, 'SIGCONT');
}

/**
 * Kills the standby's WAL receiver (SIGKILL): whatever WAL sat unread in its connection is lost, as
 * when the network to the standby fails with the primary. The standby's postmaster treats it as a
 * crash of one of its processes: it restarts them and recovers from its own WAL, still a standby.
 * @throws when it has none.
 */
export function killWalReceiver(pair: PostgresPair): void {
  const receiver = childrenOf(pair.standby.pid).find((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('walreceiver');
    } catch {
      return false;
    }
  });
  if (receiver === undefined) throw new Error('the standby has no WAL receiver');
  signal(receiver, 'SIGKILL');
}

/** Resolves once the postmaster `pid` has exited (gone, or a zombie nobody reaps). */
export async function waitGone(pid: number): Promise<void> {
  const until = Date.now() + PROCESS_DEADLINE_MS;
  for (;;) {
    const state = procState(pid);
    if (state === undefined || state === 'Z') return;
    if (Date.now() > until) throw new Error(`process ${pid} still running after ${PROCESS_DEADLINE_MS} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Promotes the standby (`SELECT pg_promote(true, 60)`: waits until it has left recovery) and checks it
 * is out of recovery.
 */
export async function promoteStandby(pair: PostgresPair): Promise<void> {
  // A standby restarting after a crash of one of its processes refuses connections for a moment (57P03).
  const until = Date.now() + PROCESS_DEADLINE_MS;
  for (;;) {
    try {
      await queryOnce(pair.standby.url, 'SELECT 1');
      break;
    } catch (error) {
      if ((error as { code?: string }).code !== '57P03' || Date.now() > until) throw error;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  const [done] = await queryOnce<{ promoted: boolean }>(pair.standby.url, 'SELECT pg_promote(true, 60) AS promoted');
  if (done?.promoted !== true) throw new Error('pg_promote did not complete within 60 s');
  const [state] = await queryOnce<{ recovery: boolean }>(pair.standby.url, 'SELECT pg_is_in_recovery() AS recovery');
  if (state?.recovery !== false) throw new Error('the promoted standby is still in recovery');
}

/**
 * Stops both servers (the primary killed if still alive, the standby by an immediate shutdown: its data
 * is thrown away) and removes their data.
 */
export async function removePair(pair: PostgresPair): Promise<void> {
  const standbyRunuser = runuserOf(pair.standby.pid);
  crashPrimary(pair);
  signal(pair.standby.pid, 'SIGCONT');
  signal(pair.standby.pid, 'SIGQUIT');
  await waitGone(pair.primary.pid);
  await waitGone(pair.standby.pid).catch(() => {
    for (const child of childrenOf(pair.standby.pid)) signal(child, 'SIGKILL');
    signal(pair.standby.pid, 'SIGKILL');
  });
  if (standbyRunuser !== undefined) signal(standbyRunuser, 'SIGCONT');
  rmSync(pair.dir, { recursive: true, force: true });
}
