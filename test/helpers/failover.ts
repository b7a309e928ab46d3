/**
 * One failover run, shared by test/e2e/postgresFailover.test.ts (one run per named kill point) and
 * scripts/soakFailover.ts (`npm run soak:failover -- N`, random kill points).
 *
 * A primary with a synchronous standby (test/store/postgresPair.ts); server A, the demo server with
 * a real `PostgresStore` on the primary (through {@link startPgWireProxy}, which only watches the
 * wire and tells when to crash); a real `Client` pinned to 2026-07-28 driving the rounds by hand.
 * The primary is crashed (every process stopped, then SIGKILL) at the kill point, the standby
 * promoted, and server B, the same demo server with the same keys and a new `PostgresStore` on the
 * promoted standby, is handed every state again. What it checks, per state: never two deletions
 * (the file is recreated after each deletion, so a second one would show), every spend acknowledged
 * by the primary present on the new primary (B refuses the state as spent and the `ledger` row is
 * spent), and a state whose spend was not acknowledged deleted nothing on A.
 */
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDemoServer } from '../../src/demo/deleteFile.js';
import { KeyRing } from '../../src/state/keyRing.js';
import { PostgresStore } from '../../src/store/postgres.js';
import { freshSchema } from '../store/postgresServer.js';
import {
  crashPrimary,
  primarySettings,
  promoteStandby,
  queryOnce,
  removePair,
  replicationOf,
  startPair,
  waitGone,
  type PostgresPair,
} from '../store/postgresPair.js';
import { ACCEPT, asked, connect, type Connected, type Reply } from './harness.js';
import { startPgWireProxy, type PgWireProxy, type Verdict, type WireMessage } from './pgWireProxy.js';

/**
 * Where the primary is crashed:
 * - `after-issue`: round 1 answered (the `jti` issued and acknowledged), before round 2;
 * - `before-commit`: round 2's spend ran its `UPDATE … SET spent = true`, and its `COMMIT` is about
 *   to reach the primary: the primary crashes first and the `COMMIT` is never delivered;
 * - `after-ack`: round 2 answered (the file deleted, the client told so);
 * - `during-action`: the spend's `COMMIT` was acknowledged by the primary; the primary crashes as
 *   that acknowledgement (its `ReadyForQuery`) is on its way to the store, so the store reads
 *   `spent` and the action (re-check, unlink) runs with the primary already dead;
 * - `{ message: n, lost? }`: before the n-th wire message (from 1, either direction, any connection)
 *   of round 2's store traffic; a message from the store is then never delivered, one from the
 *   server (sent before the crash) still is unless `lost` (lost with the host's network). Past the
 *   last message: as `after-ack`.
 * - `{ commitWaitMs: n }`: `n` ms after the first spend's `COMMIT` was delivered to the primary
 *   (0: on the next turn of the event loop), while the primary flushes it and waits for the
 *   standby to apply it, or later: a point in time rather than at a message boundary.
 */
export type KillPoint =
  | 'after-issue'
  | 'before-commit'
  | 'after-ack'
  | 'during-action'
  | { message: number; lost?: boolean }
  | { commitWaitMs: number };

export const NAMED_KILL_POINTS = ['after-issue', 'before-commit', 'after-ack', 'during-action'] as const;

export function describePoint(point: KillPoint): string {
  if (typeof point === 'string') return point;
  if ('message' in point) return `message ${point.message}${point.lost ? ' (lost)' : ''}`;
  return `${point.commitWaitMs} ms after the spend's COMMIT was sent`;
}

/** What a round 2 answered, in short: `deleted`, a refusal code, or what else came. */
export type Outcome = string;

export interface StateRun {
  name: string;
  /** Round 2 on server A (the primary), whatever the crash left of it. */
  onPrimary: Outcome;
  /** The file after server A's round 2: `intact` or `gone`. */
  fileAfterPrimary: 'intact' | 'gone';
  /** Round 2 with the same state on server B (the promoted standby), the file recreated if gone. */
  onNewPrimary: Outcome;
  /** The same state once more on server B (the file recreated if gone). */
  replayOnNewPrimary: Outcome;
  /** How many of the three round 2s deleted the file. */
  deletions: number;
}

export interface FailoverRun {
  point: string;
  /** Where the crash actually happened (a message point past the end becomes `after-ack`). */
  crashedAt: string;
  /** The wire messages of one round 2 (the calibration state's), either direction. */
  messagesPerRound2: number;
  /** The calibration state, spent and acknowledged before anything else: on server B. */
  earlierOnNewPrimary: Outcome;
  states: StateRun[];
  /** Spends acknowledged by server A (the calibration state's included). */
  acknowledgedSpends: number;
  /** `ledger` rows spent on the promoted standby before server B touched anything. */
  spentRowsOnNewPrimary: number;
  /** Broken promises; empty when the run is sound. */
  violations: string[];
}

export interface FailoverOptions {
  point: KillPoint | ((messagesPerRound2: number) => KillPoint);
  /** States whose round 2 runs on A at the same time as the victim's (the soak uses some). Defaults to 0. */
  bystanders?: number;
  /**
   * A directory for a data directory made by initdb once and copied for each pair (made when
   * missing; the caller removes it). Without it every run runs initdb.
   */
  template?: string;
}

const SPEND_SQL = /\bSET spent = true\b/;

function outcomeOf(reply: Reply): Outcome {
  if (reply.kind === 'result') {
    if (!reply.isError && /^Deleted /.test(reply.text)) return 'deleted';
    const code = /^\[([A-Z_]+)\]/.exec(reply.text)?.[1];
    return code ?? `result: ${reply.text.slice(0, 80)}`;
  }
  if (reply.kind === 'error') return `error ${reply.code}`;
  return 'input_required';
}

/** One round 2 that never throws (a transport failure is an outcome too). */
async function round2(server: Connected, path: string, state: string): Promise<Outcome> {
  try {
    return outcomeOf(await server.call('delete_file', { path }, { inputResponses: ACCEPT, requestState: state }));
  } catch (error) {
    return `threw ${(error as Error).message}`;
  }
}

export async function runFailover(options: FailoverOptions): Promise<FailoverRun> {
  const open: Array<{ close(): Promise<void> }> = [];
  let pair: PostgresPair | undefined;
  let proxy: PgWireProxy | undefined;
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-pg-failover-')));
  try {
    pair = await startPair(options.template);
    const p = pair;
    const replication = await replicationOf(p);
    if (replication?.state !== 'streaming' || replication.syncState !== 'sync')
      throw new Error(`the standby is not synchronous: ${JSON.stringify(replication)}`);
    const settings = await primarySettings(p);
    if (settings.synchronousCommit !== 'remote_apply' || settings.fsync !== 'on' || !settings.synchronousStandbyNames)
      throw new Error(`the primary is not set up for the failover: ${JSON.stringify(settings)}`);
    proxy = await startPgWireProxy(p.primary.port);
    const schema = freshSchema();
    // A generous deadline: on a loaded machine a commit that waits for the standby's apply must not be
    // refused for lateness (the crash, not the clock, is what this run is about).
    const storeOptions = { schema, timeoutMs: 15_000, connectTimeoutMs: 30_000 };
    const storeA = await PostgresStore.open({ url: proxy.url, ...storeOptions });
    open.push(storeA);
    const keys = await KeyRing.fromSpecs([KeyRing.generateSpec('k1')]);
    const serverA = await connect((await createDemoServer({ roots: [root], keys, store: storeA })).factory);
    open.push(serverA);

    // The calibration state: spent and acknowledged before any crash; its round 2's wire messages counted.
    writeFileSync(join(root, 'earlier.txt'), 'earlier');
    const earlier = asked(await serverA.call('delete_file', { path: 'earlier.txt' })).state;
    let counted = 0;
    proxy.setHook(() => {
      counted++;
      return 'forward';
    });
    const earlierOnPrimary = await round2(serverA, 'earlier.txt', earlier);
    proxy.setHook(() => 'forward');
    if (earlierOnPrimary !== 'deleted') throw new Error(`the calibration round 2 answered ${earlierOnPrimary}`);
    const messagesPerRound2 = counted;

    const names = ['victim.txt', ...Array.from({ length: options.bystanders ?? 0 }, (_, i) => `bystander-${i}.txt`)];
    const states: string[] = [];
    for (const name of names) {
      writeFileSync(join(root, name), name);
      states.push(asked(await serverA.call('delete_file', { path: name })).state);
    }

    const point = typeof options.point === 'function' ? options.point(messagesPerRound2) : options.point;
    let crashedAt: string | undefined;
    const crash = (where: string): void => {
      if (crashedAt !== undefined) return;
      crashedAt = where;
      crashPrimary(p);
    };

    // Per connection: whether its open transaction ran the spend's UPDATE, and whether its COMMIT was answered.
    const spending = new Set<number>();
    const committed = new Set<number>();
    let seen = 0;
    let commitTimer = false;
    proxy.setHook((m: WireMessage): Verdict => {
      if (crashedAt !== undefined) return 'forward';
      if (m.direction === 'frontend' && (m.type === 'P' || m.type === 'Q') && SPEND_SQL.test(m.text))
        spending.add(m.connection);
      if (typeof point === 'object' && 'message' in point) {
        if (++seen === point.message) {
          crash(`message ${seen} (${m.direction} ${m.type || 'startup'}${m.text ? ` ${m.text.slice(0, 40)}` : ''})`);
          return m.direction === 'frontend' || point.lost === true ? 'drop' : 'forward';
        }
        return 'forward';
      }
      if (typeof point === 'object' && 'commitWaitMs' in point) {
        if (m.direction === 'frontend' && m.type === 'Q' && /^COMMIT\b/.test(m.text) && spending.has(m.connection)) {
          if (!commitTimer) {
            const ms = point.commitWaitMs;
            const later = (): void => crash(`${ms} ms after the spend's COMMIT was sent`);
            commitTimer = true;
            // After this message is written (the hook runs before the write).
            setImmediate(() => (ms === 0 ? later() : setTimeout(later, ms)));
          }
        }
        return 'forward';
      }
      if (point === 'before-commit' && m.direction === 'frontend' && m.type === 'Q' && /^COMMIT\b/.test(m.text)) {
        if (spending.has(m.connection)) {
          crash('before-commit');
          return 'drop';
        }
      }
      if (point === 'during-action' && m.direction === 'backend' && spending.has(m.connection)) {
        if (m.type === 'C' && m.text === 'COMMIT') committed.add(m.connection);
        if (m.type === 'Z' && committed.has(m.connection)) {
          crash('during-action');
          return 'forward';
        }
      }
      if (m.direction === 'backend' && m.type === 'Z' && m.text === 'I') {
        spending.delete(m.connection);
        committed.delete(m.connection);
      }
      return 'forward';
    });

    if (point === 'after-issue') crash('after-issue');
    const onPrimary = await Promise.all(names.map((name, i) => round2(serverA, name, states[i]!)));
    crash('after-ack');
    const fileAfterPrimary = names.map((name): 'intact' | 'gone' => (existsSync(join(root, name)) ? 'intact' : 'gone'));
    await waitGone(p.primary.pid);
    await promoteStandby(p);

    const [rows] = await queryOnce<{ spent: string }>(
      p.standby.url,
      `SELECT count(*) FILTER (WHERE spent) AS spent FROM ${schema}.ledger`,
    );
    const spentRowsOnNewPrimary = Number(rows?.spent ?? NaN);

    const storeB = await PostgresStore.open({ url: p.standby.url, ...storeOptions });
    open.push(storeB);
    const serverB = await connect((await createDemoServer({ roots: [root], keys, store: storeB })).factory);
    open.push(serverB);

    const violations: string[] = [];
    writeFileSync(join(root, 'earlier.txt'), 'earlier again');
    const earlierOnNewPrimary = await round2(serverB, 'earlier.txt', earlier);
    if (earlierOnNewPrimary !== 'ERR_CONFIRM_SPENT')
      violations.push(`earlier.txt: acknowledged before the crash, on the new primary ${earlierOnNewPrimary}`);
    if (readFileSync(join(root, 'earlier.txt'), 'utf8') !== 'earlier again')
      violations.push('earlier.txt: deleted a second time');

    const runs: StateRun[] = [];
    for (const [i, name] of names.entries()) {
      const file = join(root, name);
      const a = onPrimary[i]!;
      const before = fileAfterPrimary[i]!;
      if (a === 'deleted' && before !== 'gone') violations.push(`${name}: A said deleted but the file is there`);
      if (a !== 'deleted' && (before !== 'intact' || readFileSync(file, 'utf8') !== name))
        violations.push(`${name}: A answered ${a} but the file was touched`);
      if (!existsSync(file)) writeFileSync(file, 'again');
      const b = await round2(serverB, name, states[i]!);
      if (!existsSync(file)) writeFileSync(file, 'again');
      const replay = await round2(serverB, name, states[i]!);
      const deletions = [a, b, replay].filter((o) => o === 'deleted').length;
      if (deletions > 1) violations.push(`${name}: deleted ${deletions} times (A ${a}, B ${b}, replay ${replay})`);
      if (a === 'deleted' && b !== 'ERR_CONFIRM_SPENT')
        violations.push(`${name}: spend acknowledged on the primary, on the new primary ${b}`);
      if (a !== 'deleted' && b !== 'deleted' && b !== 'ERR_CONFIRM_SPENT')
        violations.push(`${name}: not deleted on A (${a}), on the new primary ${b}`);
      if (replay !== 'ERR_CONFIRM_SPENT') violations.push(`${name}: replay on the new primary ${replay}`);
      runs.push({
        name,
        onPrimary: a,
        fileAfterPrimary: before,
        onNewPrimary: b,
        replayOnNewPrimary: replay,
        deletions,
      });
    }
    const acknowledgedSpends = 1 + onPrimary.filter((o) => o === 'deleted').length;
    if (!(spentRowsOnNewPrimary >= acknowledgedSpends))
      violations.push(
        `${acknowledgedSpends} spends acknowledged, ${spentRowsOnNewPrimary} spent rows on the promoted standby`,
      );
    return {
      point: describePoint(point),
      crashedAt: crashedAt!,
      messagesPerRound2,
      earlierOnNewPrimary,
      states: runs,
      acknowledgedSpends,
      spentRowsOnNewPrimary,
      violations,
    };
  } finally {
    await Promise.all(open.map((o) => o.close().catch(() => {})));
    await proxy?.close();
    if (pair) await removePair(pair);
    rmSync(root, { recursive: true, force: true });
  }
}
