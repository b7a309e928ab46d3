/**
 * A failover without a double spend (issue 21): a PostgreSQL primary with a synchronous standby
 * (`synchronous_commit = remote_apply`, `synchronous_standby_names`, fsync on; the standby from
 * `pg_basebackup -R`; scripts/start-postgres-pair.sh), the demo server on the primary with a real
 * `PostgresStore`, a real `Client` pinned to 2026-07-28 driving the rounds by hand. The primary is
 * crashed (every process stopped, then SIGKILL) at one named point per test, the standby promoted
 * (`pg_promote`), and the demo server on the promoted standby (same keys, a new store) is handed the
 * same state. The run itself is test/helpers/failover.ts (shared with `npm run soak:failover`).
 *
 * Each run also spends a calibration state, acknowledged before the crash: the control that an
 * acknowledged spend is refused (`ERR_CONFIRM_SPENT`) after the promotion. In every run a deleted
 * file is recreated before the state is tried again, so a second deletion would show (a recreated
 * file is a new inode, so the re-check would refuse it with ERR_CONFIRM_CHANGED: that too counts as
 * a broken promise, since the ledger must say ERR_CONFIRM_SPENT).
 *
 * The last test is the one moment a synchronous standby alone does not cover: a commit whose wait for
 * the standby is cancelled is committed on the primary only, and PostgreSQL answers it `COMMIT` with a
 * warning. The store refuses it (without that, the spend was acknowledged, the file deleted, and the
 * promoted standby spent the state again: ERR_CONFIRM_CHANGED on the recreated file).
 */
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDemoServer } from '../../src/demo/deleteFile.js';
import { KeyRing } from '../../src/state/keyRing.js';
import { PostgresStore } from '../../src/store/postgres.js';
import { runFailover, type FailoverOptions, type FailoverRun } from '../helpers/failover.js';
import { ACCEPT, asked, connect } from '../helpers/harness.js';
import {
  crashPrimary,
  killWalReceiver,
  promoteStandby,
  queryOnce,
  removePair,
  signalStandby,
  startPair,
  waitGone,
} from '../store/postgresPair.js';
import { freshSchema } from '../store/postgresServer.js';

// One initdb for the four pairs (each primary a copy of it).
let templateDir: string;
beforeAll(() => {
  templateDir = mkdtempSync(join(tmpdir(), 'mcp-confirm-pg-template-'));
});
afterAll(() => {
  rmSync(templateDir, { recursive: true, force: true });
});
const failover = (point: FailoverOptions['point']): Promise<FailoverRun> =>
  runFailover({ point, template: join(templateDir, 'data') });

function victim(run: FailoverRun) {
  expect(run.states).toHaveLength(1);
  return run.states[0]!;
}

function sound(run: FailoverRun): void {
  expect(run.violations, JSON.stringify(run)).toEqual([]);
  // The control: a spend acknowledged before the crash is spent on the promoted standby.
  expect(run.earlierOnNewPrimary).toBe('ERR_CONFIRM_SPENT');
  expect(run.spentRowsOnNewPrimary).toBe(run.acknowledgedSpends);
}

describe('PostgreSQL store with a synchronous standby: the primary crashed, the standby promoted', () => {
  it('(a) crashed after round 1 issued the state: the primary refuses it (ERR_CONFIRM_LEDGER_UNAVAILABLE), nothing deleted; on the promoted standby it is redeemed exactly once, its replay ERR_CONFIRM_SPENT', async () => {
    const run = await failover('after-issue');
    sound(run);
    expect(run.crashedAt).toBe('after-issue');
    expect(victim(run)).toEqual({
      name: 'victim.txt',
      onPrimary: 'ERR_CONFIRM_LEDGER_UNAVAILABLE',
      fileAfterPrimary: 'intact',
      onNewPrimary: 'deleted',
      replayOnNewPrimary: 'ERR_CONFIRM_SPENT',
      deletions: 1,
    });
  });

  it("(b) crashed before the spend's COMMIT reached the primary: refused (ERR_CONFIRM_LEDGER_UNAVAILABLE), nothing deleted; the spend never happened, so the promoted standby redeems the state exactly once, its replay ERR_CONFIRM_SPENT", async () => {
    const run = await failover('before-commit');
    sound(run);
    expect(run.crashedAt).toBe('before-commit');
    expect(victim(run)).toEqual({
      name: 'victim.txt',
      onPrimary: 'ERR_CONFIRM_LEDGER_UNAVAILABLE',
      fileAfterPrimary: 'intact',
      onNewPrimary: 'deleted',
      replayOnNewPrimary: 'ERR_CONFIRM_SPENT',
      deletions: 1,
    });
  });

  it('(c) crashed after the deletion was acknowledged to the client: the promoted standby refuses the same state with ERR_CONFIRM_SPENT and the file recreated at its path is intact (deleted once)', async () => {
    const run = await failover('after-ack');
    sound(run);
    expect(run.crashedAt).toBe('after-ack');
    expect(victim(run)).toEqual({
      name: 'victim.txt',
      onPrimary: 'deleted',
      fileAfterPrimary: 'gone',
      onNewPrimary: 'ERR_CONFIRM_SPENT',
      replayOnNewPrimary: 'ERR_CONFIRM_SPENT',
      deletions: 1,
    });
  });

  it("(d) crashed during the action (the spend's COMMIT acknowledged, the re-check and unlink run with the primary dead): deleted once; the promoted standby refuses the same state with ERR_CONFIRM_SPENT", async () => {
    const run = await failover('during-action');
    sound(run);
    expect(run.crashedAt).toBe('during-action');
    expect(victim(run)).toEqual({
      name: 'victim.txt',
      onPrimary: 'deleted',
      fileAfterPrimary: 'gone',
      onNewPrimary: 'ERR_CONFIRM_SPENT',
      replayOnNewPrimary: 'ERR_CONFIRM_SPENT',
      deletions: 1,
    });
  });
});

describe('PostgreSQL store with a synchronous standby: a commit whose wait for the standby was cancelled', () => {
  it('is not taken as a spend: with the standby unreachable, a round 2 whose COMMIT wait is cancelled (pg_cancel_backend, as statement_timeout does) is refused with ERR_CONFIRM_LEDGER_UNAVAILABLE, nothing deleted; the primary crashed and the standby promoted, the state is redeemed exactly once', async () => {
    const pair = await startPair(join(templateDir, 'data'));
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-pg-syncwait-')));
    const open: Array<{ close(): Promise<void> }> = [];
    try {
      const schema = freshSchema();
      // A deadline far longer than the test: the wait ends by the cancel, not by the store's clock.
      const storeOptions = { schema, timeoutMs: 600_000, connectTimeoutMs: 30_000 };
      const storeA = await PostgresStore.open({ url: pair.primary.url, ...storeOptions });
      open.push(storeA);
      const keys = await KeyRing.fromSpecs([KeyRing.generateSpec('k1')]);
      const serverA = await connect((await createDemoServer({ roots: [root], keys, store: storeA })).factory);
      open.push(serverA);
      const file = join(root, 'victim.txt');
      writeFileSync(file, 'victim');
      const { state } = asked(await serverA.call('delete_file', { path: 'victim.txt' }));

      // The standby becomes unreachable: frozen whole, so nothing it receives from now on is applied.
      signalStandby(pair, 'SIGSTOP');
      const roundTwo = serverA.call(
        'delete_file',
        { path: 'victim.txt' },
        { inputResponses: ACCEPT, requestState: state },
      );
      // The spend's COMMIT waits for the standby (wait_event SyncRep); cancel that wait, as statement_timeout would.
      let cancelled = false;
      while (!cancelled) {
        const rows = await queryOnce<{ cancelled: boolean }>(
          pair.primary.url,
          "SELECT pg_cancel_backend(pid) AS cancelled FROM pg_stat_activity WHERE wait_event = 'SyncRep'",
        );
        cancelled = rows.some((r) => r.cancelled);
        if (!cancelled) await new Promise((r) => setTimeout(r, 20));
      }
      const onPrimary = await roundTwo;
      // PostgreSQL committed it locally and answered COMMIT with a warning; the standby never had it.
      expect(onPrimary.kind === 'result' ? onPrimary.text : onPrimary).toMatch(/^\[ERR_CONFIRM_LEDGER_UNAVAILABLE\]/);
      expect(readFileSync(file, 'utf8')).toBe('victim');

      // The primary dies while the standby is still unreachable (what was in flight to it is lost).
      crashPrimary(pair);
      await waitGone(pair.primary.pid);
      killWalReceiver(pair);
      signalStandby(pair, 'SIGCONT');
      await promoteStandby(pair);
      const storeB = await PostgresStore.open({ url: pair.standby.url, ...storeOptions });
      open.push(storeB);
      const serverB = await connect((await createDemoServer({ roots: [root], keys, store: storeB })).factory);
      open.push(serverB);
      const again = { inputResponses: ACCEPT, requestState: state };
      expect(await serverB.call('delete_file', { path: 'victim.txt' }, again)).toMatchObject({
        kind: 'result',
        isError: false,
      });
      expect(existsSync(file)).toBe(false);
      writeFileSync(file, 'again');
      const replay = await serverB.call('delete_file', { path: 'victim.txt' }, again);
      expect(replay.kind === 'result' ? replay.text : replay).toMatch(/^\[ERR_CONFIRM_SPENT\]/);
      expect(readFileSync(file, 'utf8')).toBe('again');
    } finally {
      await Promise.all(open.map((o) => o.close().catch(() => {})));
      signalStandby(pair, 'SIGCONT');
      await removePair(pair);
      rmSync(root, { recursive: true, force: true });
    }
  });
});
