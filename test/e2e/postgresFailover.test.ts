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
 * file is recreated before the state is tried again, so a second deletion would show.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runFailover, type FailoverOptions, type FailoverRun } from '../helpers/failover.js';

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
