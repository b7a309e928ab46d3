/**
 * The failover soak (issue 21): `npm run soak:failover -- N` (default 50) runs N failovers of a
 * PostgreSQL primary with a synchronous standby (test/helpers/failover.ts, the run the CI test
 * makes once per named kill point), each at a random kill point, and prints a summary: never two
 * deletions of one state, every spend the primary acknowledged present after the promotion.
 *
 * Each run: a fresh pair (scripts/start-postgres-pair.sh), a calibration state spent and acknowledged
 * first, then a victim and 3 bystanders issued and their round 2s sent at once; the primary crashed at
 * one of: the four named points (after round 1's issue, before the spend's COMMIT, after the
 * acknowledgement, during the action), before a random wire message of the round 2s' store traffic,
 * or 0-10 ms after the first spend's COMMIT was sent (see `pick`). Needs PostgreSQL (Debian's `postgresql`); as root it runs the servers as
 * the `postgres` user. Exits 1 when any run broke a promise or could not run.
 *
 * Run: npm run soak:failover -- 50
 */
import { randomInt } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NAMED_KILL_POINTS, runFailover, type FailoverRun, type KillPoint } from '../test/helpers/failover.js';

const BYSTANDERS = 3;

const arg = process.argv[2];
const runs = arg === undefined ? 50 : Number(arg);
if (!Number.isSafeInteger(runs) || runs < 1) {
  console.error('usage: npm run soak:failover -- [RUNS]   (a positive whole number; default 50)');
  process.exit(2);
}

/**
 * A third of the runs at a named point; a third before a random wire message (past the end: after
 * the acknowledgement), half of those losing a message from the server too; a third 0-10 ms after
 * the first spend's COMMIT was sent (while the primary waits for the standby, or after).
 */
function pick(messagesPerRound2: number): KillPoint {
  switch (randomInt(3)) {
    case 0:
      return NAMED_KILL_POINTS[randomInt(NAMED_KILL_POINTS.length)]!;
    case 1:
      // The round 2s of 1 + BYSTANDERS states, and a few more for connections the pool opens meanwhile.
      return { message: 1 + randomInt(messagesPerRound2 * (1 + BYSTANDERS) + 8), lost: randomInt(2) === 0 };
    default:
      return { commitWaitMs: randomInt(11) };
  }
}

const template = mkdtempSync(join(tmpdir(), 'mcp-confirm-soak-template-'));
const results: FailoverRun[] = [];
const errors: string[] = [];
const started = Date.now();
try {
  for (let i = 1; i <= runs; i++) {
    try {
      const run = await runFailover({ point: pick, bystanders: BYSTANDERS, template: join(template, 'data') });
      results.push(run);
      const outcomes = run.states.map((s) => `${s.onPrimary}→${s.onNewPrimary}`).join(', ');
      console.log(
        `run ${i}/${runs}: ${run.point} (crashed at ${run.crashedAt}): ${outcomes}; acknowledged ${run.acknowledgedSpends}, spent rows after promotion ${run.spentRowsOnNewPrimary}${run.violations.length ? `; VIOLATIONS: ${run.violations.join('; ')}` : ''}`,
      );
    } catch (error) {
      errors.push(`run ${i}: ${(error as Error).stack ?? String(error)}`);
      console.log(`run ${i}/${runs}: could not run: ${(error as Error).message}`);
    }
  }
} finally {
  rmSync(template, { recursive: true, force: true });
}

const states = results.flatMap((r) => r.states);
const maxDeletions = Math.max(0, ...states.map((s) => s.deletions));
const twice = states.filter((s) => s.deletions > 1).length;
const acknowledged = results.reduce((n, r) => n + r.acknowledgedSpends, 0);
const acknowledgedPresent = results.reduce(
  (n, r) =>
    n +
    (r.earlierOnNewPrimary === 'ERR_CONFIRM_SPENT' ? 1 : 0) +
    r.states.filter((s) => s.onPrimary === 'deleted' && s.onNewPrimary === 'ERR_CONFIRM_SPENT').length,
  0,
);
const notAcknowledged = states.filter((s) => s.onPrimary !== 'deleted');
const redeemedAfter = notAcknowledged.filter((s) => s.onNewPrimary === 'deleted').length;
const spentUnacknowledged = notAcknowledged.filter((s) => s.onNewPrimary === 'ERR_CONFIRM_SPENT').length;
const byPoint = new Map<string, number>();
for (const r of results) {
  const key = r.point.startsWith('message ')
    ? 'a random wire message'
    : r.point.includes(' ms after ')
      ? 'a random time after a COMMIT was sent'
      : r.point;
  byPoint.set(key, (byPoint.get(key) ?? 0) + 1);
}
const violations = results.flatMap((r) => r.violations.map((v) => `${r.point}: ${v}`));

console.log('');
console.log(
  `failover soak: ${results.length} of ${runs} runs completed in ${Math.round((Date.now() - started) / 1000)} s`,
);
console.log(`- kill points: ${[...byPoint].map(([k, n]) => `${k} ${n}`).join(', ')}`);
console.log(
  `- states: ${states.length + results.length} (${results.length} calibration, ${states.length} in flight at the crash)`,
);
console.log(`- never two deletions: ${twice === 0 ? 'yes' : 'NO'} (most deletions of one state: ${maxDeletions})`);
console.log(
  `- acknowledged spends present after the promotion: ${acknowledgedPresent} of ${acknowledged} (refused as spent by the new primary)`,
);
console.log(
  `- spends not acknowledged by the primary: ${notAcknowledged.length}; redeemed once on the new primary: ${redeemedAfter}; already spent there (committed, acknowledgement lost): ${spentUnacknowledged}`,
);
console.log(`- violations: ${violations.length}`);
for (const v of violations) console.log(`  - ${v}`);
if (errors.length) {
  console.log(`- runs that could not run: ${errors.length}`);
  for (const e of errors) console.error(e);
}
process.exit(violations.length === 0 && errors.length === 0 && acknowledgedPresent === acknowledged ? 0 : 1);
