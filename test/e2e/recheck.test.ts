/**
 * The re-check of delete_file end to end (issue 4): non-regular files refused before
 * asking, swaps between round 1 and round 2 that test/e2e/deleteFile.test.ts does not
 * cover yet, hard links (and a file re-created by link(2)), the fs-4 flip race against a separate flipping process, and the
 * start-up report of quarantine leftovers by the built CLI.
 *
 * Every round goes through a real v2 `Client` pinned to 2026-07-28 (in-memory transport
 * against `serveStdio`, or the built CLI as a subprocess); `inspectFile`/`deleteVerified`
 * are never called directly. FIFOs, sockets, symlinks and hard links are made for real,
 * and a failure to make one fails the test (never skips it).
 */
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isQuarantineName, QUARANTINE_PREFIX } from '../../src/fs/target.js';
import { MemoryLedger } from '../../src/store/memory.js';
import { createDemoServer } from '../../src/demo/deleteFile.js';
import {
  ACCEPT,
  asked,
  callTool,
  connect,
  type Connected,
  type Reply,
  MANUAL_CLIENT_OPTIONS,
} from '../helpers/harness.js';
import { startFlipper, type Flipper } from '../helpers/flipper.js';
import { InPlaceStdioTransport, until } from '../helpers/processes.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');
const VICTIM = 'victim: must survive\n'; // 21 bytes, never 5

let R: string; // a fresh temporary directory, canonical
let root: string; // R/allowed, the server's root
let outside: string; // R/outside, never a root
let victim: string; // R/outside/victim.txt
const open: Connected[] = [];
const cleanups: Array<() => unknown> = [];

beforeEach(() => {
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-recheck-')));
  root = join(R, 'allowed');
  outside = join(R, 'outside');
  victim = join(outside, 'victim.txt');
  mkdirSync(join(root, 'a'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(root, 'a', 'data.txt'), 'data');
  writeFileSync(victim, VICTIM);
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await Promise.all(open.splice(0).map((c) => c.close()));
  rmSync(R, { recursive: true, force: true });
});

async function serve() {
  const ledger = new MemoryLedger();
  const built = await createDemoServer({ roots: [root], store: ledger });
  const c = await connect(built.factory);
  open.push(c);
  return { ...built, c, ledger };
}

const del = (c: Connected, path: string, extra?: { inputResponses?: unknown; requestState?: unknown }) =>
  c.call('delete_file', { path }, extra);
const codeOf = (reply: Reply): string | undefined =>
  reply.kind === 'result' && reply.isError ? /^\[([A-Z_]+)\] /.exec(reply.text)?.[1] : undefined;

function expectRefused(reply: Reply, errorCode: string): string {
  expect(reply.kind, JSON.stringify(reply)).toBe('result');
  if (reply.kind !== 'result') return '';
  expect(reply.isError, reply.text).toBe(true);
  expect(reply.text.startsWith(`[${errorCode}] `), reply.text).toBe(true);
  return reply.text;
}

/** The result of a deletion: its path and size, and (`names` > 1) that the file's other names keep its content. */
function expectDeleted(reply: Reply, path: string, bytes: number, names = 1): void {
  const others =
    names > 1
      ? ` It had ${names} names (hard links): only this name was removed; its content stays under the ${names === 2 ? 'other name' : `${names - 1} other names`}.`
      : '';
  expect(reply, JSON.stringify(reply)).toMatchObject({
    kind: 'result',
    isError: false,
    text: `Deleted \`${path}\` (${bytes} bytes).${others}`,
  });
}

/** `dev:ino` of `path` (lstat): proves an entry is the very same one. */
function identity(path: string): string {
  const st = lstatSync(path, { bigint: true });
  return `${st.dev}:${st.ino}`;
}

/** Makes a real FIFO with mkfifo(1); fails the test if it cannot. */
function mkfifo(path: string): void {
  execFileSync('mkfifo', [path]);
  expect(lstatSync(path).isFIFO()).toBe(true);
}

/** Makes a real symlink; fails the test if it cannot. */
function symlink(target: string, path: string): void {
  symlinkSync(target, path);
  expect(lstatSync(path).isSymbolicLink()).toBe(true);
}

/** Makes a real listening unix socket; fails the test if it cannot; closed after the test. */
async function mksocket(path: string): Promise<Server> {
  const server = createServer();
  await new Promise<void>((res, rej) => {
    server.once('error', rej);
    server.listen(path, () => res());
  });
  cleanups.push(() => new Promise<void>((res) => server.close(() => res())));
  expect(lstatSync(path).isSocket()).toBe(true);
  return server;
}

function quarantinedIn(dir: string): string[] {
  return readdirSync(dir).filter(isQuarantineName);
}

describe('non-regular files are refused before asking', () => {
  it('refuses a FIFO with ERR_CONFIRM_NOT_REGULAR_FILE before asking, without opening it, and uses no ledger slot', async () => {
    const fifo = join(root, 'a', 'pipe');
    mkfifo(fifo);
    const { c, ledger } = await serve();
    // Opening a FIFO with no writer would hang; the refusal must come back at once.
    const text = expectRefused(await del(c, 'a/pipe'), 'ERR_CONFIRM_NOT_REGULAR_FILE');
    expect(text).toContain('FIFO');
    expect(ledger.size).toBe(0);
    expect(lstatSync(fifo).isFIFO()).toBe(true);
    // Control: a regular file in the same directory is asked about, and takes a slot.
    asked(await del(c, 'a/data.txt'));
    expect(ledger.size).toBe(1);
  });

  it('refuses a unix socket with ERR_CONFIRM_NOT_REGULAR_FILE before asking and uses no ledger slot', async () => {
    const sock = join(root, 'a', 'sock');
    await mksocket(sock);
    const { c, ledger } = await serve();
    const text = expectRefused(await del(c, sock), 'ERR_CONFIRM_NOT_REGULAR_FILE');
    expect(text).toContain('socket');
    expect(ledger.size).toBe(0);
    expect(lstatSync(sock).isSocket()).toBe(true);
    asked(await del(c, 'a/data.txt'));
    expect(ledger.size).toBe(1);
  });
});

describe('round-2 swaps of a/data.txt (fs-3 and siblings)', () => {
  const data = () => join(root, 'a', 'data.txt');

  it('control: the same flow with nothing swapped between rounds deletes a/data.txt', async () => {
    const { c } = await serve();
    const { state } = asked(await del(c, 'a/data.txt'));
    expectDeleted(await del(c, 'a/data.txt', { inputResponses: ACCEPT, requestState: state }), data(), 4);
    expect(existsSync(data())).toBe(false);
    expect(quarantinedIn(join(root, 'a'))).toEqual([]);
  });

  it('refuses a file swapped for a FIFO between rounds with ERR_CONFIRM_CHANGED (fs-3); the FIFO and data.bak are intact', async () => {
    const { c } = await serve();
    const { state } = asked(await del(c, 'a/data.txt'));
    renameSync(data(), join(root, 'a', 'data.bak'));
    mkfifo(data());
    const text = expectRefused(
      await del(c, 'a/data.txt', { inputResponses: ACCEPT, requestState: state }),
      'ERR_CONFIRM_CHANGED',
    );
    expect(text).toContain('FIFO');
    expect(lstatSync(data()).isFIFO()).toBe(true);
    expect(readFileSync(join(root, 'a', 'data.bak'), 'utf8')).toBe('data');
    expect(quarantinedIn(join(root, 'a'))).toEqual([]);
  });

  it('refuses a file rewritten in place with a different size between rounds with ERR_CONFIRM_CHANGED; the new content is kept', async () => {
    const { c } = await serve();
    const { state } = asked(await del(c, 'a/data.txt'));
    const before = identity(data());
    writeFileSync(data(), 'data, and a paragraph written after the question was asked');
    expect(identity(data())).toBe(before); // the same inode: rewritten in place, not replaced
    expectRefused(await del(c, 'a/data.txt', { inputResponses: ACCEPT, requestState: state }), 'ERR_CONFIRM_CHANGED');
    expect(readFileSync(data(), 'utf8')).toBe('data, and a paragraph written after the question was asked');
    expect(quarantinedIn(join(root, 'a'))).toEqual([]);
  });

  it('refuses a file that gained a hard link between rounds with ERR_CONFIRM_CHANGED (the human was not told of the other name); both names keep the data', async () => {
    const { c } = await serve();
    const { state, message } = asked(await del(c, 'a/data.txt'));
    expect(message).not.toMatch(/hard link/);
    const other = join(outside, 'data.other-name');
    linkSync(data(), other);
    expect(lstatSync(data()).nlink).toBe(2);
    expectRefused(await del(c, 'a/data.txt', { inputResponses: ACCEPT, requestState: state }), 'ERR_CONFIRM_CHANGED');
    expect(readFileSync(data(), 'utf8')).toBe('data');
    expect(readFileSync(other, 'utf8')).toBe('data');
    expect(identity(other)).toBe(identity(data()));
    expect(quarantinedIn(join(root, 'a'))).toEqual([]);
  });

  it('refuses when the root directory itself was renamed away and replaced by another directory between rounds, with ERR_CONFIRM_CHANGED; nothing in the replacement or the original is deleted', async () => {
    const { c, ledger } = await serve();
    const { state } = asked(await del(c, 'a/data.txt'));
    renameSync(root, join(R, 'allowed.old'));
    mkdirSync(join(root, 'a'), { recursive: true });
    writeFileSync(data(), 'data'); // same name, same size, another file in another directory
    expectRefused(await del(c, 'a/data.txt', { inputResponses: ACCEPT, requestState: state }), 'ERR_CONFIRM_CHANGED');
    expect(readFileSync(data(), 'utf8')).toBe('data');
    expect(readFileSync(join(R, 'allowed.old', 'a', 'data.txt'), 'utf8')).toBe('data');
    expect(quarantinedIn(join(root, 'a'))).toEqual([]);
    expect(quarantinedIn(join(R, 'allowed.old', 'a'))).toEqual([]);
    // Asking again is refused too: the replacement is not the root pinned at start-up.
    const outstanding = ledger.size;
    expectRefused(await del(c, 'a/data.txt'), 'ERR_CONFIRM_OUTSIDE_ROOTS');
    expect(ledger.size).toBe(outstanding);
    expect(readFileSync(data(), 'utf8')).toBe('data');
  });

  it('refuses with ERR_CONFIRM_CHANGED when the root was replaced by another directory holding the very same a/ and file (only the root differs); the file is intact', async () => {
    const { c } = await serve();
    const { state } = asked(await del(c, 'a/data.txt'));
    const fileId = identity(data());
    const dirId = identity(join(root, 'a'));
    renameSync(root, join(R, 'allowed.old'));
    mkdirSync(root);
    renameSync(join(R, 'allowed.old', 'a'), join(root, 'a'));
    // Same directory, same file, same link count: everything below the root is what the human saw.
    expect(identity(join(root, 'a'))).toBe(dirId);
    expect(identity(data())).toBe(fileId);
    expect(lstatSync(data()).nlink).toBe(1);
    expectRefused(await del(c, 'a/data.txt', { inputResponses: ACCEPT, requestState: state }), 'ERR_CONFIRM_CHANGED');
    expect(readFileSync(data(), 'utf8')).toBe('data');
    expect(quarantinedIn(join(root, 'a'))).toEqual([]);
  });
});

describe('round-2 swap of a higher directory for a symlink out of the root', () => {
  // top/mid/data.txt; the attacker swaps `top` (not the file's parent) for a symlink to
  // R/outside/top, which holds a decoy top/mid/data.txt of the same size.
  const original = () => join(root, 'top', 'mid', 'data.txt');
  const decoy = () => join(outside, 'top', 'mid', 'data.txt');
  beforeEach(() => {
    mkdirSync(join(root, 'top', 'mid'), { recursive: true });
    writeFileSync(original(), 'mine');
    mkdirSync(join(outside, 'top', 'mid'), { recursive: true });
    writeFileSync(decoy(), 'them');
  });

  it('control: the same flow with nothing swapped deletes top/mid/data.txt and leaves the decoy outside alone', async () => {
    const { c } = await serve();
    const { state } = asked(await del(c, 'top/mid/data.txt'));
    expectDeleted(await del(c, 'top/mid/data.txt', { inputResponses: ACCEPT, requestState: state }), original(), 4);
    expect(existsSync(original())).toBe(false);
    expect(readFileSync(decoy(), 'utf8')).toBe('them');
  });

  it('refuses with ERR_CONFIRM_CHANGED when a directory two levels up was swapped for a symlink to a directory outside the root; the file outside and the original are intact', async () => {
    const { c } = await serve();
    const { state } = asked(await del(c, 'top/mid/data.txt'));
    renameSync(join(root, 'top'), join(root, 'top.old'));
    symlink(join(outside, 'top'), join(root, 'top'));
    // The path now resolves, through the symlink, to the decoy outside the root.
    expect(realpathSync(original())).toBe(decoy());
    const text = expectRefused(
      await del(c, 'top/mid/data.txt', { inputResponses: ACCEPT, requestState: state }),
      'ERR_CONFIRM_CHANGED',
    );
    expect(text).toContain('symbolic link');
    expect(readFileSync(decoy(), 'utf8')).toBe('them');
    expect(readFileSync(join(root, 'top.old', 'mid', 'data.txt'), 'utf8')).toBe('mine');
    expect(lstatSync(join(root, 'top')).isSymbolicLink()).toBe(true);
    expect(quarantinedIn(join(outside, 'top', 'mid'))).toEqual([]);
    expect(quarantinedIn(join(root, 'top.old', 'mid'))).toEqual([]);
  });
});

describe('hard links', () => {
  it('says in the question that deleting removes only this name when the file has other names, and after accepting the other name keeps the content', async () => {
    const file = join(root, 'a', 'report.txt');
    const other = join(outside, 'report-other-name.txt');
    writeFileSync(file, 'quarterly report');
    linkSync(file, other);
    expect(lstatSync(file).nlink).toBe(2);
    const { c } = await serve();
    const { state, message } = asked(await del(c, 'a/report.txt'));
    expect(message).toMatch(/hard links/);
    expect(message).toContain('only this name');
    expect(message).toContain('2 names');
    expectDeleted(await del(c, 'a/report.txt', { inputResponses: ACCEPT, requestState: state }), file, 16, 2);
    expect(existsSync(file)).toBe(false);
    expect(readFileSync(other, 'utf8')).toBe('quarterly report');
    expect(lstatSync(other).nlink).toBe(1);
  });

  it('refuses a replay onto the file re-created by link(2) between rounds (same device, inode, size, mtime and link count: only its ctime moved) with ERR_CONFIRM_CHANGED, the file intact; control: asked again and accepted, the untouched file is deleted', async () => {
    const file = join(root, 'a', 'report.txt');
    const keep = join(root, 'a', 'report.keep'); // another name of the same inode
    writeFileSync(file, 'quarterly report');
    linkSync(file, keep);
    const { c } = await serve();
    const { state } = asked(await del(c, 'a/report.txt'));
    const atRound1 = lstatSync(file, { bigint: true });
    // Remove the name and re-create it by link(2) from the other name, again until the change time
    // has moved on (the kernel stamps it from a coarse clock): a bound on attempts, not on time.
    let now = atRound1;
    for (let attempts = 0; now.ctimeNs === atRound1.ctimeNs && attempts < 1_000_000; attempts++) {
      unlinkSync(file);
      linkSync(keep, file);
      now = lstatSync(file, { bigint: true });
    }
    // Everything the re-check compares is as at round 1, but the change time.
    expect([now.dev, now.ino, now.size, now.mtimeNs, now.nlink]).toEqual([
      atRound1.dev,
      atRound1.ino,
      atRound1.size,
      atRound1.mtimeNs,
      atRound1.nlink,
    ]);
    expect(now.isFile()).toBe(true);
    expect(now.ctimeNs).not.toBe(atRound1.ctimeNs);
    const text = expectRefused(
      await del(c, 'a/report.txt', { inputResponses: ACCEPT, requestState: state }),
      'ERR_CONFIRM_CHANGED',
    );
    expect(text).toContain('modified');
    expect(readFileSync(file, 'utf8')).toBe('quarterly report');
    expect(identity(file)).toBe(identity(keep));
    expect(lstatSync(file).nlink).toBe(2);
    expect(quarantinedIn(join(root, 'a'))).toEqual([]);
    // Control: asked again about the file as it now is, and accepted, it is deleted (the other name keeps the data).
    const again = asked(await del(c, 'a/report.txt'));
    expectDeleted(await del(c, 'a/report.txt', { inputResponses: ACCEPT, requestState: again.state }), file, 16, 2);
    expect(existsSync(file)).toBe(false);
    expect(readFileSync(keep, 'utf8')).toBe('quarterly report');
  });

  it('control: the question for a file with one name does not mention hard links', async () => {
    const { c } = await serve();
    const { message } = asked(await del(c, 'a/data.txt'));
    expect(message).not.toMatch(/hard link|only this name/);
    expect(message).toContain(join(root, 'a', 'data.txt'));
  });
});

describe('fs-4: flip race through a real client', () => {
  /** The flips the race needs before it may end: enough for many windows between round 1 and round 2. */
  const MIN_FLIPS = 1000;
  /**
   * Confirmation cycles (round 1, then round 2 when asked) at most: a bound on attempts, not on time,
   * far above what the race needs (about 4,000 cycles on the 2-core machine of its making). A run
   * that reaches it fails, naming what it saw.
   */
  const MAX_CYCLES = 100_000;
  let flipper: Flipper | undefined;
  afterEach(() => {
    const child = flipper?.child;
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    flipper = undefined;
  });

  it(`never deletes the symlink target while another process flips a/data.txt between a file and a symlink to it at least ${MIN_FLIPS} times during fresh accepted confirmations`, async () => {
    const dir = join(root, 'a');
    writeFileSync(join(dir, 'data.txt'), 'data\n'); // 5 bytes; the victim is 21
    const victimId = identity(victim);
    const { c } = await serve();

    flipper = startFlipper(dir, victim, join(R, 'flipper.stop'));
    const outcomes = new Map<string, number>();
    const count = (k: string) => outcomes.set(k, (outcomes.get(k) ?? 0) + 1);
    const seen = (k: string) => outcomes.get(k) ?? 0;
    const unexpected: string[] = [];
    const ROUND1 = new Set(['ERR_CONFIRM_SYMLINK', 'ERR_CONFIRM_GONE', 'ERR_CONFIRM_OUTSIDE_ROOTS']);
    const ROUND2 = new Set(['ERR_CONFIRM_CHANGED', 'ERR_CONFIRM_GONE']);
    const deletedText = `Deleted \`${join(dir, 'data.txt')}\` (5 bytes).`;
    // What the race needs before it ends: the flips done, a deletion of the regular file (and the
    // flipper's fresh file after it), and a refusal of the symlink or of the change.
    const needed = (): boolean => {
      const { flips, recreated } = flipper!.progress();
      return (
        flips >= MIN_FLIPS &&
        recreated > 0 &&
        seen('round 2 deleted a regular file') > 0 &&
        seen('round 1 ERR_CONFIRM_SYMLINK') + seen('round 2 ERR_CONFIRM_CHANGED') > 0
      );
    };
    let cycles = 0;
    while (!needed() && cycles < MAX_CYCLES) {
      cycles += 1;
      const first = await del(c, 'a/data.txt');
      if (first.kind !== 'input_required') {
        const code = codeOf(first);
        if (code && ROUND1.has(code)) count(`round 1 ${code}`);
        else unexpected.push(`round 1: ${JSON.stringify(first)}`);
        continue;
      }
      count('round 1 asked');
      const { state } = asked(first);
      const second = await del(c, 'a/data.txt', { inputResponses: ACCEPT, requestState: state });
      const code = codeOf(second);
      if (second.kind === 'result' && !second.isError && second.text === deletedText)
        count('round 2 deleted a regular file');
      else if (code && ROUND2.has(code)) count(`round 2 ${code}`);
      else unexpected.push(`round 2: ${JSON.stringify(second)}`);
    }
    const report = await flipper.stop();
    const summary = JSON.stringify({
      cycles,
      report: { ...report, stderr: undefined },
      outcomes: Object.fromEntries(outcomes),
    });
    expect(report.status, report.stderr).toBe(0);
    expect(report.stopped, summary).toBe('stop file');

    // The victim is the very same file with the very same content.
    expect(identity(victim)).toBe(victimId);
    expect(readFileSync(victim, 'utf8')).toBe(VICTIM);
    // Every reply was a deletion of the 5-byte regular file or a documented refusal.
    expect(unexpected, summary).toEqual([]);
    // Whatever was left under a quarantine name is one of the flipper's symlinks, never data.
    for (const q of quarantinedIn(dir)) expect(lstatSync(join(dir, q)).isSymbolicLink(), q).toBe(true);
    // Not vacuous: the race ended because all it needed had happened (not at the bound of cycles):
    // the flipper really flipped and re-created the file, and the client saw deletions and refusals.
    expect(report.flips, summary).toBeGreaterThanOrEqual(MIN_FLIPS);
    expect(report.recreated, summary).toBeGreaterThan(0);
    expect(seen('round 2 deleted a regular file'), summary).toBeGreaterThan(0);
    expect(seen('round 1 ERR_CONFIRM_SYMLINK') + seen('round 2 ERR_CONFIRM_CHANGED'), summary).toBeGreaterThan(0);
    console.info(`fs-4 e2e: ${summary}`);
  });
});

describe('quarantine leftovers at start-up (built CLI)', () => {
  beforeAll(() => {
    if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
  });

  it('reports quarantine-named entries on stderr at start-up, leaves them in place, and ignores look-alikes', async () => {
    const hex = (ch: string) => ch.repeat(32);
    const top = join(root, QUARANTINE_PREFIX + hex('a'));
    const nested = join(root, 'a', QUARANTINE_PREFIX + '0123456789abcdef0123456789abcdef');
    const lookAlike = join(root, QUARANTINE_PREFIX + hex('b').slice(1)); // 31 hex digits
    const upper = join(root, QUARANTINE_PREFIX + hex('C')); // upper-case hex
    writeFileSync(top, 'left from an interrupted delete');
    writeFileSync(nested, 'nested leftover');
    writeFileSync(lookAlike, 'not a quarantine name');
    writeFileSync(upper, 'not a quarantine name either');
    expect(isQuarantineName(QUARANTINE_PREFIX + hex('a'))).toBe(true);

    const transport = new InPlaceStdioTransport({
      command: process.execPath,
      args: [MAIN, '--root', root],
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const client = new Client({ name: 'recheck-test', version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
    await client.connect(transport);
    cleanups.push(() => client.close().catch(() => {}));
    // The report and the serving line arrive on stderr, their own pipe: wait for them (by order, not time).
    await until(() => stderr.includes('serving delete_file'));

    const warnings = stderr.split('\n').filter((line) => line.includes('quarantine'));
    expect(warnings, stderr).toHaveLength(2);
    for (const p of [top, nested]) {
      expect(
        warnings.some((w) => w.includes(`\`${p}\``) && w.includes('left in place')),
        stderr,
      ).toBe(true);
    }
    expect(stderr).not.toContain(lookAlike);
    expect(stderr).not.toContain(upper);
    // The report comes before serving, and the server then serves.
    expect(stderr.indexOf('quarantine')).toBeLessThan(stderr.indexOf('serving delete_file'));
    asked(await callTool(client, { name: 'delete_file', arguments: { path: 'a/data.txt' } }));
    await client.close();
    // Left in place, content intact.
    expect(readFileSync(top, 'utf8')).toBe('left from an interrupted delete');
    expect(readFileSync(nested, 'utf8')).toBe('nested leftover');
    expect(readFileSync(lookAlike, 'utf8')).toBe('not a quarantine name');
    expect(readFileSync(join(root, 'a', 'data.txt'), 'utf8')).toBe('data');
  });
});
