/**
 * Directory-swap race against delete_file, through a real client.
 *
 * The tester's attack: `root/a/` is a real directory holding a planted file `Documents`;
 * `root/a_alt` is a symbolic link to `victim-home/` (outside every root), which holds a
 * `Documents` of its own (a directory with `thesis.tex`, or a file). A separate process
 * (a tiny C program compiled here with `cc`) swaps `root/a` and `root/a_alt` atomically
 * with renameat2(RENAME_EXCHANGE) in a tight loop while a client asks to delete
 * `a/Documents` and accepts, over and over. A path-based rename can then resolve its source
 * through the symbolic link and its destination through the real directory, moving the
 * victim into the root. The same with the victim one directory deeper (`a/sub/Documents`),
 * where a path-based round 1 could record a directory of the victim's as "on the way".
 *
 * Every round goes through a real v2 `Client` pinned to 2026-07-28 (in-memory transport
 * against `serveStdio` of the demo server). A missing `cc`, or a kernel or file system
 * without RENAME_EXCHANGE, fails the test: it never skips.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { findQuarantineLeftovers } from '../../src/fs/target.js';
import { Roots } from '../../src/fs/roots.js';
import { createDemoServer } from '../../src/demo/deleteFile.js';
import { ACCEPT, connect, type Connected, type Reply } from '../helpers/harness.js';

const SOURCE = resolve(import.meta.dirname, 'fixtures', 'exchange.c');
const PLANTED = 'planted\n'; // 8 bytes
const THESIS = '\\documentclass{article} the thesis, must survive\n';
/** Accepted round 2s per race test, at least; most round 1s are refused while the swaps run, so this takes a few thousand cycles. */
const REDEMPTIONS = 300;
/** Exchanges the flipper must have done before the race may end. */
const MIN_SWAPS = 10_000;
/**
 * Confirmation cycles (round 1, then round 2 when asked) at most: a bound on attempts, not on
 * time, far above what the race needs (about 3,000 cycles on the 2-core machine of its making).
 * A run that reaches it fails, naming what it saw.
 */
const MAX_CYCLES = 200_000;
/** The flipper's own bound on work: it only ends a run nobody stops. */
const MAX_SWAPS = 1_000_000_000;

let binDir: string;
let flipperBin: string;

beforeAll(() => {
  binDir = mkdtempSync(join(tmpdir(), 'mcp-confirm-exchange-'));
  flipperBin = join(binDir, 'exchange');
  // Throws (failing every test here) when cc is missing or the program does not compile.
  execFileSync('cc', ['-O2', '-o', flipperBin, SOURCE], { stdio: 'pipe' });
});
afterAll(() => rmSync(binDir, { recursive: true, force: true }));

let R: string; // a fresh temporary directory, canonical
let root: string; // R/root, the server's only root
let home: string; // R/victim-home, outside every root
const open: Connected[] = [];
let flipper: ChildProcess | undefined;

beforeEach(() => {
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-fsrace-')));
  root = join(R, 'root');
  home = join(R, 'victim-home');
  mkdirSync(root);
  mkdirSync(home);
});
afterEach(async () => {
  if (flipper && flipper.exitCode === null && flipper.signalCode === null) flipper.kill('SIGKILL');
  flipper = undefined;
  await Promise.all(open.splice(0).map((c) => c.close()));
  rmSync(R, { recursive: true, force: true });
});

interface Layout {
  /** The path the client asks to delete, relative to the root. */
  path: string;
  /** The planted file the client may legitimately delete. */
  planted: string;
  /** The victim entry outside the root. */
  victim: string;
}

/**
 * Builds the tester's layout. `depth` 1: `a/Documents`; `depth` 2: `a/sub/Documents`.
 * The victim `Documents` is a directory holding `thesis.tex`, or a file.
 */
function layout(kind: 'directory' | 'file', depth: 1 | 2): Layout {
  const below = depth === 1 ? [] : ['sub'];
  mkdirSync(join(root, 'a', ...below), { recursive: true });
  const planted = join(root, 'a', ...below, 'Documents');
  writeFileSync(planted, PLANTED);
  mkdirSync(join(home, ...below), { recursive: true });
  const victim = join(home, ...below, 'Documents');
  if (kind === 'directory') {
    mkdirSync(victim);
    writeFileSync(join(victim, 'thesis.tex'), THESIS);
  } else {
    writeFileSync(victim, THESIS);
  }
  symlinkSync(home, join(root, 'a_alt'));
  expect(lstatSync(join(root, 'a_alt')).isSymbolicLink()).toBe(true);
  return { path: ['a', ...below, 'Documents'].join('/'), planted, victim };
}

/** Every entry under `dir` (not following symbolic links): relative name -> `dev:ino` and, for files, content. */
function snapshot(dir: string, prefix = ''): Map<string, string> {
  const out = new Map<string, string>();
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    const st = lstatSync(p, { bigint: true });
    const rel = prefix + name;
    out.set(rel, `${st.dev}:${st.ino}:${st.isFile() ? readFileSync(p, 'utf8') : st.isDirectory() ? 'dir' : 'other'}`);
    if (st.isDirectory()) for (const [k, v] of snapshot(p, `${rel}/`)) out.set(k, v);
  }
  return out;
}

/** `dev:ino` of every entry under `dir`, not following symbolic links. */
function identitiesUnder(dir: string): Set<string> {
  const ids = new Set<string>();
  for (const v of snapshot(dir).values()) ids.add(v.split(':').slice(0, 2).join(':'));
  return ids;
}

async function serve(): Promise<Connected> {
  const { factory } = await createDemoServer({ roots: [root] });
  const c = await connect(factory);
  open.push(c);
  return c;
}

const del = (c: Connected, path: string, extra?: { inputResponses?: unknown; requestState?: unknown }) =>
  c.call('delete_file', { path }, extra);
const codeOf = (reply: Reply): string | undefined =>
  reply.kind === 'result' && reply.isError ? /^\[([A-Z_]+)\] /.exec(reply.text)?.[1] : undefined;
const isDeletion = (reply: Reply, planted: string): boolean =>
  reply.kind === 'result' &&
  !reply.isError &&
  reply.text.startsWith('Deleted ') &&
  reply.text.includes(planted) &&
  reply.text.endsWith('(8 bytes).');

/** Re-creates the planted file if it is missing; create-only, so it never replaces or writes through anything. */
function replant(planted: string): void {
  try {
    writeFileSync(planted, PLANTED, { flag: 'wx' });
  } catch {
    // EEXIST: still there (or, while `a` is swapped, the victim's entry holds the name).
  }
}

interface SwapReport {
  swaps: number;
  /** `signal` (the test said stop), `max swaps`, `orphaned`, `error`; absent on a progress line. */
  stopped?: string;
}

/**
 * Starts the flipper swapping root/a and root/a_alt until told to stop: `progress()` is its last
 * progress line; `stop()` signals it and resolves its last line once it has ended.
 */
function startFlipper(): {
  progress: () => SwapReport;
  stop: () => Promise<{ status: number | null; report: SwapReport; stderr: string }>;
} {
  const child = spawn(flipperBin, [join(root, 'a'), join(root, 'a_alt'), String(MAX_SWAPS)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  flipper = child;
  let out = '';
  let err = '';
  let last: SwapReport = { swaps: 0 };
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString('utf8');
    const lines = out.split('\n');
    out = lines.pop()!;
    for (const line of lines) if (line) last = JSON.parse(line) as SwapReport;
  });
  child.stderr!.on('data', (d: Buffer) => (err += d.toString('utf8')));
  const closed = new Promise<number | null>((res) => child.on('close', (status) => res(status)));
  return {
    progress: () => last,
    stop: async () => {
      child.kill('SIGTERM');
      const status = await closed;
      return { status, report: last, stderr: err };
    },
  };
}

/** The victim and everything in victim-home are exactly as before; nothing of theirs is inside the root; no quarantine entry anywhere. */
async function expectVictimIntact(before: Map<string, string>, victimIds: Set<string>): Promise<void> {
  expect(snapshot(home)).toEqual(before);
  const inRoot = identitiesUnder(root);
  for (const id of victimIds) expect(inRoot.has(id), `a victim inode ${id} is inside the root`).toBe(false);
  expect(await findQuarantineLeftovers(await Roots.open([R]))).toEqual([]);
}

const ROUND1 = new Set(['ERR_CONFIRM_SYMLINK', 'ERR_CONFIRM_GONE', 'ERR_CONFIRM_OUTSIDE_ROOTS']);
const ROUND2 = new Set(['ERR_CONFIRM_CHANGED', 'ERR_CONFIRM_GONE']);

describe.each([
  { kind: 'directory' as const, depth: 1 as const },
  { kind: 'file' as const, depth: 1 as const },
  { kind: 'directory' as const, depth: 2 as const },
  { kind: 'file' as const, depth: 2 as const },
])('a victim $kind outside the root, $depth level(s) below the swapped directory', ({ kind, depth }) => {
  it(`never moves, renames or deletes the victim ${kind} while another process swaps root/a with a symlink to victim-home (renameat2 RENAME_EXCHANGE) during at least ${REDEMPTIONS} accepted confirmations`, async () => {
    const { path, planted, victim } = layout(kind, depth);
    const before = snapshot(home);
    const victimIds = identitiesUnder(home);
    const c = await serve();
    const swapper = startFlipper();

    const outcomes = new Map<string, number>();
    const count = (k: string) => outcomes.set(k, (outcomes.get(k) ?? 0) + 1);
    const seen = (k: string) => outcomes.get(k) ?? 0;
    const unexpected: string[] = [];
    let cycles = 0;
    let redeemed = 0;
    // What the race needs before it ends: the confirmations redeemed, the swaps done, and round 2
    // both deleting the planted file and refusing a swapped directory, and round 1 seeing the symlink.
    const needed = (): boolean =>
      redeemed >= REDEMPTIONS &&
      swapper.progress().swaps >= MIN_SWAPS &&
      seen('round 2 deleted the planted file') > 0 &&
      seen('round 2 ERR_CONFIRM_CHANGED') > 0 &&
      seen('round 1 ERR_CONFIRM_SYMLINK') > 0;
    while (!needed() && cycles < MAX_CYCLES && swapper.progress().stopped === undefined) {
      cycles += 1;
      replant(planted);
      const first = await del(c, path);
      if (first.kind !== 'input_required' || typeof first.state !== 'string') {
        const code = codeOf(first);
        if (code && ROUND1.has(code)) count(`round 1 ${code}`);
        else unexpected.push(`round 1: ${JSON.stringify(first)}`);
        continue;
      }
      count('round 1 asked');
      redeemed += 1;
      const second = await del(c, path, { inputResponses: ACCEPT, requestState: first.state });
      const code = codeOf(second);
      if (isDeletion(second, planted)) count('round 2 deleted the planted file');
      else if (code && ROUND2.has(code)) count(`round 2 ${code}`);
      else unexpected.push(`round 2: ${JSON.stringify(second)}`);
    }
    const { status, report, stderr } = await swapper.stop();
    const summary = JSON.stringify({ cycles, redeemed, report, outcomes: Object.fromEntries(outcomes) });
    expect(status, stderr).toBe(0);
    expect(report.stopped, summary).toBe('signal');

    // The names are back as they started (the flipper stops between iterations).
    expect(lstatSync(join(root, 'a')).isDirectory(), summary).toBe(true);
    expect(lstatSync(join(root, 'a_alt')).isSymbolicLink(), summary).toBe(true);
    // The victim is the very same entry with the very same content, outside the root, and
    // nothing from outside the root appeared inside it; no quarantine entry anywhere.
    await expectVictimIntact(before, victimIds);
    expect(readFileSync(kind === 'directory' ? join(victim, 'thesis.tex') : victim, 'utf8')).toBe(THESIS);
    // Every reply was a deletion of the planted file or a documented refusal.
    expect(unexpected, summary).toEqual([]);
    // Not vacuous: the race ended because all it needed had happened (not at the bound of
    // cycles): the swaps really ran during the cycles; every confirmation asked for was redeemed;
    // round 2 both deleted the planted file and refused a swapped directory; round 1 saw the
    // symbolic link.
    expect(report.swaps, summary).toBeGreaterThanOrEqual(MIN_SWAPS);
    expect(redeemed, summary).toBeGreaterThanOrEqual(REDEMPTIONS);
    expect(seen('round 2 deleted the planted file'), summary).toBeGreaterThan(0);
    expect(seen('round 2 ERR_CONFIRM_CHANGED'), summary).toBeGreaterThan(0);
    expect(seen('round 1 ERR_CONFIRM_SYMLINK'), summary).toBeGreaterThan(0);
    console.info(`fsRace ${kind} depth ${depth}: ${summary}`);
  });

  it(`control: without the flipper, the same flow deletes the planted file and leaves the victim ${kind} intact`, async () => {
    const { path, planted } = layout(kind, depth);
    const before = snapshot(home);
    const victimIds = identitiesUnder(home);
    const c = await serve();
    const first = await del(c, path);
    expect(first.kind, JSON.stringify(first)).toBe('input_required');
    const second = await del(c, path, {
      inputResponses: ACCEPT,
      requestState: first.kind === 'input_required' ? first.state : undefined,
    });
    expect(isDeletion(second, planted), JSON.stringify(second)).toBe(true);
    expect(() => lstatSync(planted)).toThrow(/ENOENT/);
    await expectVictimIntact(before, victimIds);
  });
});
