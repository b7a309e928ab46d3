import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { Roots } from '../../src/fs/roots.js';
import { deleteVerified, inspectFile } from '../../src/fs/target.js';
import { startFlipper, type Flipper } from '../helpers/flipper.js';
import { identity, makeSandbox, VICTIM_CONTENT, type Sandbox } from './helpers.js';

/** The flips the race needs before it may end. */
const MIN_FLIPS = 500;
/**
 * Inspect-then-delete attempts at most: a bound on attempts, not on time, far above what the race
 * needs (about 27,000 attempts on the 2-core machine of its making: most are refused at once while
 * the name holds the symlink). A run that reaches it fails, naming what it saw.
 */
const MAX_ATTEMPTS = 1_000_000;

let sb: Sandbox;
let flipper: Flipper | undefined;
beforeEach(() => {
  sb = makeSandbox();
});
afterEach(() => {
  const child = flipper?.child;
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  flipper = undefined;
  sb.cleanup();
});

it(`fs-4: never deletes the symlink target while another process flips the file and a symlink to it at least ${MIN_FLIPS} times`, async () => {
  writeFileSync(join(sb.allowed, 'data.txt'), 'data\n');
  const victimId = identity(sb.victim);
  const roots = await Roots.open([sb.allowed]);
  flipper = startFlipper(sb.allowed, sb.victim, join(sb.R, 'flipper.stop'));
  const outcomes = new Map<string, number>();
  const count = (k: string) => outcomes.set(k, (outcomes.get(k) ?? 0) + 1);
  const seen = (k: string) => outcomes.get(k) ?? 0;
  // What the race needs before it ends: the flips done, a real deletion, and a refusal of the symlink or the change.
  const needed = (): boolean =>
    flipper!.progress().flips >= MIN_FLIPS &&
    seen('deleted') > 0 &&
    seen('ERR_CONFIRM_CHANGED') + seen('ERR_CONFIRM_SYMLINK') > 0;
  let attempts = 0;
  while (!needed() && attempts < MAX_ATTEMPTS) {
    attempts += 1;
    try {
      const fp = await inspectFile(roots, 'data.txt');
      await deleteVerified(roots, JSON.parse(JSON.stringify(fp)));
      count('deleted');
    } catch (error) {
      count(String((error as { code?: unknown }).code ?? (error as Error).name));
    }
    // Let the flipper's progress lines in (inspect and delete may not yield to the event loop).
    if (attempts % 20 === 0) await new Promise((r) => setImmediate(r));
  }
  const report = await flipper.stop();
  const summary = JSON.stringify({
    attempts,
    report: { ...report, stderr: undefined },
    outcomes: Object.fromEntries(outcomes),
  });
  expect(report.status, report.stderr).toBe(0);

  // The victim is the very same file, with its content.
  expect(identity(sb.victim)).toBe(victimId);
  expect(readFileSync(sb.victim, 'utf8')).toBe(VICTIM_CONTENT);
  // Every outcome is a deletion or one of the documented refusals: no crash, no other error.
  // (OUTSIDE_ROOTS: round 1's final realpath caught the symlink appearing mid-inspection.)
  const allowed = new Set([
    'deleted',
    'ERR_CONFIRM_CHANGED',
    'ERR_CONFIRM_GONE',
    'ERR_CONFIRM_SYMLINK',
    'ERR_CONFIRM_OUTSIDE_ROOTS',
  ]);
  expect(
    [...outcomes.keys()].filter((k) => !allowed.has(k)),
    summary,
  ).toEqual([]);
  // Not vacuous: the race ended because all it needed had happened (not at the bound of attempts).
  expect(report.flips, summary).toBeGreaterThanOrEqual(MIN_FLIPS);
  expect(seen('deleted'), summary).toBeGreaterThan(0);
  expect(seen('ERR_CONFIRM_CHANGED') + seen('ERR_CONFIRM_SYMLINK'), summary).toBeGreaterThan(0);
  console.info(`fs-4: ${summary}`);
});
