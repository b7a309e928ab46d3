import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { Roots } from '../../src/fs/roots.js';
import { deleteVerified, inspectFile } from '../../src/fs/target.js';
import { identity, makeSandbox, VICTIM_CONTENT, type Sandbox } from './helpers.js';

let sb: Sandbox;
beforeEach(() => {
  sb = makeSandbox();
});
afterEach(() => sb.cleanup());

it('fs-4: never deletes the symlink target while another process flips the file and a symlink to it', async () => {
  const RUN_MS = 3000;
  writeFileSync(join(sb.allowed, 'data.txt'), 'data\n');
  const victimId = identity(sb.victim);
  const roots = await Roots.open([sb.allowed]);
  const flipper = promisify(execFile)(process.execPath, [
    resolve(import.meta.dirname, 'fixtures', 'flipper.cjs'),
    sb.allowed,
    sb.victim,
    String(RUN_MS),
  ]);
  const outcomes = new Map<string, number>();
  const count = (k: string) => outcomes.set(k, (outcomes.get(k) ?? 0) + 1);
  const end = Date.now() + RUN_MS - 200;
  while (Date.now() < end) {
    try {
      const fp = await inspectFile(roots, 'data.txt');
      await deleteVerified(roots, JSON.parse(JSON.stringify(fp)));
      count('deleted');
    } catch (error) {
      count(String((error as { code?: unknown }).code ?? (error as Error).name));
    }
  }
  const flips = Number((await flipper).stdout.trim());

  // The victim is the very same file, with its content.
  expect(identity(sb.victim)).toBe(victimId);
  expect(readFileSync(sb.victim, 'utf8')).toBe(VICTIM_CONTENT);
  // Every outcome is a deletion or one of the documented refusals: no crash, no other error.
  // (OUTSIDE_ROOTS: round 1's final realpath caught the symlink appearing mid-inspection.)
  const allowed = new Set(['deleted', 'ERR_CONFIRM_CHANGED', 'ERR_CONFIRM_GONE', 'ERR_CONFIRM_SYMLINK', 'ERR_CONFIRM_OUTSIDE_ROOTS']);
  expect([...outcomes.keys()].filter((k) => !allowed.has(k))).toEqual([]);
  // Not vacuous: the race really ran, and both real deletions and refusals happened.
  expect(flips).toBeGreaterThan(200);
  expect(outcomes.get('deleted') ?? 0, JSON.stringify([...outcomes])).toBeGreaterThan(0);
  expect((outcomes.get('ERR_CONFIRM_CHANGED') ?? 0) + (outcomes.get('ERR_CONFIRM_SYMLINK') ?? 0)).toBeGreaterThan(0);
});
