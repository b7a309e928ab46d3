/**
 * Where an audit trail starts and ends (issue 16, part 3): the opening line that names the trail, the
 * `closed` line of a clean stop, the head recorded in a shared store, and what `audit verify` makes of
 * a cut end, a trail of another process put in one's place, a legacy trail, and a failed write.
 *
 * The built CLI as a real subprocess the test spawned (so it can end its stdin, signal it, kill it),
 * with a real v2 client pinned to 2026-07-28; every trail checked by the built `mcp-confirm audit verify`.
 * Needs `npm run build`, `prlimit` (util-linux) for the failed writes, and REDIS_URL for the Redis case
 * (missing: the test fails, it is never skipped).
 */
import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import type { Client } from '@modelcontextprotocol/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ACCEPT, asked, callTool } from '../helpers/harness.js';
import {
  linesOf,
  MAIN,
  OPEN_SENTENCE,
  startAudited,
  textLinesOf,
  verifyTrail,
  type AuditedProcess,
} from '../helpers/auditTrail.js';
import { runProcess, until } from '../helpers/processes.js';

const LEGACY = resolve(import.meta.dirname, 'fixtures/auditLegacy');
const LEGACY_TRAIL = join(LEGACY, 'trail.20261202T004235431Z.7593.jsonl');
const OPENING_KEYS = ['event', 'heads', 'host', 'kid', 'mac', 'pid', 'seq', 'started', 'time', 'trail'];
const CLOSING_KEYS = ['event', 'kid', 'lines', 'mac', 'seq', 'time'];

let R: string;
let root: string;
let keyFile: string;
const cleanups: Array<() => Promise<unknown>> = [];

beforeEach(async () => {
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-trailends-')));
  root = join(R, 'root');
  mkdirSync(root);
  mkdirSync(join(R, 'log'));
  for (const name of ['a.txt', 'b.txt', 'c.txt', 'd.txt']) writeFileSync(join(root, name), name);
  keyFile = join(R, 'keys.json');
  const keygen = await runProcess(process.execPath, [MAIN, 'keygen', '--kid', 'k1']);
  writeFileSync(keyFile, keygen.stdout, { mode: 0o600 });
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  rmSync(R, { recursive: true, force: true });
});

/** `mcp-confirm --root ROOT --key-file KEYS --audit R/log/trail …extra` over stdio. */
function serve(extra: string[] = []): Promise<AuditedProcess> {
  return startAudited(['--root', root, '--key-file', keyFile, '--audit', join(R, 'log', 'trail'), ...extra], cleanups);
}

/** Asks, accepts, and checks the file is gone: three decision lines (asked, confirmed, acted). */
async function confirmDelete(client: Client, path: string): Promise<void> {
  const { state } = asked(await callTool(client, { name: 'delete_file', arguments: { path } }));
  expect(
    await callTool(client, { name: 'delete_file', arguments: { path }, inputResponses: ACCEPT, requestState: state }),
  ).toMatchObject({ kind: 'result', isError: false });
  expect(existsSync(join(root, path))).toBe(false);
}

function writeLines(file: string, lines: string[]): void {
  writeFileSync(file, lines.map((l) => `${l}\n`).join(''));
}

describe('the first line names the trail', () => {
  it('line 1 is "opened" with a random trail id, the host name, the pid and the start time in the file name; audit verify prints them; two processes get two trail ids', async () => {
    const a = await serve();
    const b = await serve();
    await confirmDelete(a.client, 'a.txt');
    const [opening, ...rest] = linesOf(a.trail);
    expect(Object.keys(opening!).sort()).toEqual(OPENING_KEYS);
    expect(opening).toMatchObject({
      event: 'opened',
      seq: 1,
      host: hostname(),
      pid: a.child.pid,
      heads: null,
      kid: 'k1',
    });
    expect(opening!['trail']).toMatch(/^[A-Za-z0-9_-]{22}$/);
    // The file name's time and pid are the opening line's.
    const stamp = new Date(opening!['started'] as string).toISOString().replace(/[-:]/g, '').replace('.', '');
    expect(basename(a.trail)).toBe(`trail.${stamp}.${a.child.pid}.jsonl`);
    expect(rest.map((l) => l['event'])).toEqual(['asked', 'confirmed', 'acted']);
    expect(a.stderr()).toContain(`(trail ${opening!['trail'] as string})`);
    // Control: another process, another trail.
    const other = linesOf(b.trail)[0]!;
    expect(other['trail']).not.toBe(opening!['trail']);
    expect(other['pid']).toBe(b.child.pid);

    expect(await a.endInput()).toEqual({ code: 0, signal: null });
    const r = await verifyTrail(a.trail, keyFile);
    expect(r.status).toBe(0);
    expect(r.stderr).toContain(`trail ${opening!['trail'] as string}, host `);
    expect(r.stderr).toContain(hostname());
    expect(r.stderr).toContain(`pid ${a.child.pid}, started ${opening!['started'] as string}`);
  });

  it("no line of one trail verifies after another trail's opening line, even its first decision under the same key file (the chain starts from the opening line)", async () => {
    const a = await serve();
    const b = await serve();
    asked(await callTool(a.client, { name: 'delete_file', arguments: { path: 'a.txt' } }));
    asked(await callTool(b.client, { name: 'delete_file', arguments: { path: 'a.txt' } }));
    const mine = textLinesOf(a.trail);
    const theirs = textLinesOf(b.trail);
    expect(JSON.parse(theirs[1]!)).toMatchObject({ seq: 2, event: 'asked', args: JSON.parse(mine[1]!).args });
    writeLines(join(R, 'spliced.jsonl'), [mine[0]!, theirs[1]!]);
    const spliced = await verifyTrail(join(R, 'spliced.jsonl'), keyFile);
    expect(spliced.status).toBe(3);
    expect(spliced.stderr).toContain('broken at line 2: mac does not match');
    // Control: each trail as written verifies (open: both servers still run).
    for (const p of [a, b]) expect((await verifyTrail(p.trail, keyFile)).status).toBe(4);
  });
});

describe('a clean stop writes the closed line', () => {
  const stops: Array<[string, (p: AuditedProcess) => Promise<unknown>]> = [
    ['the end of stdin', (p) => p.endInput()],
    ['SIGTERM', (p) => p.stop('SIGTERM')],
    ['SIGINT', (p) => p.stop('SIGINT')],
  ];
  for (const [name, stop] of stops) {
    it(`${name}: the last line is "closed" with the count of lines; audit verify: intact, exit 0`, async () => {
      const p = await serve();
      await confirmDelete(p.client, 'a.txt');
      // While the server runs, its trail is open.
      expect((await verifyTrail(p.trail, keyFile)).status).toBe(4);
      expect(await stop(p)).toEqual({ code: 0, signal: null });
      const lines = linesOf(p.trail);
      expect(lines.map((l) => l['event'])).toEqual(['opened', 'asked', 'confirmed', 'acted', 'closed']);
      expect(Object.keys(lines[4]!).sort()).toEqual(CLOSING_KEYS);
      expect(lines[4]).toMatchObject({ seq: 5, lines: 5, kid: 'k1' });
      const r = await verifyTrail(p.trail, keyFile);
      expect(r).toMatchObject({ status: 0, stdout: '5\n' });
      expect(r.stderr).toContain('is intact: closed after 5 line(s)');
    });
  }
});

describe('a kill -9', () => {
  it('leaves the trail open, not broken (exit 4, the open sentence); against the SQLite store it is open too, never cut; a clean stop on the same store (control) is intact', async () => {
    const ledger = `sqlite:${join(R, 'ledger.db')}`;
    const p = await serve(['--ledger', ledger]);
    await confirmDelete(p.client, 'a.txt');
    expect(await p.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    expect(linesOf(p.trail).map((l) => l['event'])).toEqual(['opened', 'asked', 'confirmed', 'acted']);
    const alone = await verifyTrail(p.trail, keyFile);
    expect(alone).toMatchObject({ status: 4, stdout: '4\n' });
    expect(alone.stderr).toContain(OPEN_SENTENCE);
    expect(alone.stderr).not.toContain('broken');
    const stored = await verifyTrail(p.trail, keyFile, ['--ledger', ledger]);
    expect(stored).toMatchObject({ status: 4, stdout: '4\n' });
    expect(stored.stderr).toContain(OPEN_SENTENCE);
    expect(stored.stderr).not.toContain('is cut');
    // Control: a clean stop on the same store.
    const q = await serve(['--ledger', ledger]);
    await confirmDelete(q.client, 'b.txt');
    expect(await q.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    expect((await verifyTrail(q.trail, keyFile, ['--ledger', ledger])).status).toBe(0);
  });
});

describe('a cut end', () => {
  it('without --ledger reads as open (its closed line is gone); with --ledger sqlite:… it is cut, exit 3, naming how many lines are missing; uncut (control) it is intact against the store, which holds its head', async () => {
    const ledger = join(R, 'ledger.db');
    const p = await serve(['--ledger', `sqlite:${ledger}`]);
    await confirmDelete(p.client, 'a.txt');
    await confirmDelete(p.client, 'b.txt');
    expect(await p.endInput()).toEqual({ code: 0, signal: null });
    const text = textLinesOf(p.trail);
    expect(text).toHaveLength(8);
    // The store holds the head of the trail: its id, and the seq and mac of its closed line.
    const db = new Database(ledger, { readonly: true });
    const row = db.prepare('SELECT path, trail, seq, mac FROM mcp_confirm_audit_heads').all();
    db.close();
    const last = JSON.parse(text[7]!) as Record<string, unknown>;
    expect(row).toEqual([{ path: p.trail, trail: JSON.parse(text[0]!).trail, seq: 8, mac: last['mac'] }]);
    const control = await verifyTrail(p.trail, keyFile, ['--ledger', `sqlite:${ledger}`]);
    expect(control).toMatchObject({ status: 0, stdout: '8\n' });
    expect(control.stderr).toContain('the store records line 8 as its head');

    writeLines(p.trail, text.slice(0, 5));
    const alone = await verifyTrail(p.trail, keyFile);
    expect(alone).toMatchObject({ status: 4, stdout: '5\n' });
    expect(alone.stderr).toContain(OPEN_SENTENCE);
    expect(alone.stderr).toContain('verify with --ledger to tell a cut end');
    const cut = await verifyTrail(p.trail, keyFile, ['--ledger', `sqlite:${ledger}`]);
    expect(cut).toMatchObject({ status: 3, stdout: '' });
    expect(cut.stderr).toContain(
      'is cut: it ends at line 5, but the store records line 8 as written: 3 line(s) missing',
    );
    // Only the closed line cut off: one line missing.
    writeLines(p.trail, text.slice(0, 7));
    expect((await verifyTrail(p.trail, keyFile, ['--ledger', `sqlite:${ledger}`])).stderr).toContain(
      '1 line(s) missing',
    );
  });

  it("--audit DIRLINK/../trail with DIRLINK a symbolic link to Y/sub: the trail is written in Y, its head recorded under Y's real path, and audit verify --ledger of Y/trail.… finds it (intact, exit 0); control: the same path as given verifies too", async () => {
    const ledger = join(R, 'ledger.db');
    mkdirSync(join(R, 'Y', 'sub'), { recursive: true });
    symlinkSync(join(R, 'Y', 'sub'), join(R, 'log', 'dirlink'));
    const p = await startAudited(
      [
        '--root',
        root,
        '--key-file',
        keyFile,
        '--audit',
        `${join(R, 'log', 'dirlink')}/../trail`,
        '--ledger',
        `sqlite:${ledger}`,
      ],
      cleanups,
    );
    await confirmDelete(p.client, 'a.txt');
    expect(await p.endInput()).toEqual({ code: 0, signal: null });
    // The system took .. after the link: the file is in Y, not in log (path.join would have dropped it by text).
    expect(p.trail).toContain('/dirlink/../trail.');
    const written = join(R, 'Y', basename(p.trail));
    expect(existsSync(written)).toBe(true);
    expect(readdirSync(join(R, 'log'))).toEqual(['dirlink']);
    const db = new Database(ledger, { readonly: true });
    const rows = db.prepare('SELECT path FROM mcp_confirm_audit_heads').all();
    db.close();
    expect(rows).toEqual([{ path: written }]);
    const verified = await verifyTrail(written, keyFile, ['--ledger', `sqlite:${ledger}`]);
    expect(verified.stderr).not.toContain('no head');
    expect(verified).toMatchObject({ status: 0, stdout: '5\n' });
    // Control: the path as the server was given it names the same file and the same head.
    expect(await verifyTrail(p.trail, keyFile, ['--ledger', `sqlite:${ledger}`])).toMatchObject({
      status: 0,
      stdout: '5\n',
    });
  });

  it('with --ledger redis://… and --audience NAME: the head is kept under that namespace; a cut end is cut (exit 3), uncut (control) intact; another --audience finds no head (exit 3)', async () => {
    const url = process.env.REDIS_URL;
    if (!url)
      throw new Error(
        'REDIS_URL is not set: start Redis with scripts/start-redis.sh and export REDIS_URL=redis://127.0.0.1:PORT',
      );
    const audience = `trail-test-${basename(R)}`;
    const p = await serve(['--ledger', url, '--audience', audience]);
    expect(p.stderr()).toContain('heads recorded in the redis ledger');
    await confirmDelete(p.client, 'a.txt');
    expect(await p.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    const text = textLinesOf(p.trail);
    expect(text).toHaveLength(5);
    expect((await verifyTrail(p.trail, keyFile, ['--ledger', url, '--audience', audience])).status).toBe(0);
    const elsewhere = await verifyTrail(p.trail, keyFile, ['--ledger', url, '--audience', `${audience}-other`]);
    expect(elsewhere.status).toBe(3);
    expect(elsewhere.stderr).toContain('the store records no head for this path');
    writeLines(p.trail, text.slice(0, 3));
    const cut = await verifyTrail(p.trail, keyFile, ['--ledger', url, '--audience', audience]);
    expect(cut.status).toBe(3);
    expect(cut.stderr).toContain(
      'is cut: it ends at line 3, but the store records line 5 as written: 2 line(s) missing',
    );
  });
});

describe('another trail in its place', () => {
  /** Two servers on one key file and one SQLite store, each with one confirmed delete, stopped cleanly. */
  async function twoTrails(): Promise<{ a: string; b: string; ledger: string; idA: string; idB: string }> {
    const ledger = `sqlite:${join(R, 'ledger.db')}`;
    const a = await serve(['--ledger', ledger]);
    const b = await serve(['--ledger', ledger]);
    await confirmDelete(a.client, 'a.txt');
    await confirmDelete(b.client, 'b.txt');
    await confirmDelete(b.client, 'c.txt');
    expect(await a.endInput()).toEqual({ code: 0, signal: null });
    expect(await b.endInput()).toEqual({ code: 0, signal: null });
    // Control: each trail at its own path is intact, against the store too.
    for (const t of [a.trail, b.trail]) {
      expect((await verifyTrail(t, keyFile)).status).toBe(0);
      expect((await verifyTrail(t, keyFile, ['--ledger', ledger])).status).toBe(0);
    }
    return {
      a: a.trail,
      b: b.trail,
      ledger,
      idA: linesOf(a.trail)[0]!['trail'] as string,
      idB: linesOf(b.trail)[0]!['trail'] as string,
    };
  }

  it('a whole trail of another process (same key file, same store) put at this path: exit 3 without --ledger (its file name names another process) and with --ledger (the store records another trail id)', async () => {
    const { a, b, ledger, idA, idB } = await twoTrails();
    copyFileSync(b, a);
    const alone = await verifyTrail(a, keyFile);
    expect(alone).toMatchObject({ status: 3, stdout: '' });
    expect(alone.stderr).toMatch(
      /is broken: its file name names pid [0-9]+ started at [0-9T]+Z, but its opening line names pid [0-9]+ started at [0-9T]+Z \(another process's trail in its place\)/,
    );
    const stored = await verifyTrail(a, keyFile, ['--ledger', ledger]);
    expect(stored.status).toBe(3);
    expect(stored.stderr).toContain(
      `is not the trail recorded for this path: the file holds trail ${idB}, the store records trail ${idA}`,
    );
  });

  it('a prefix of another trail (its opening line and first lines) put at this path: exit 3, with --ledger naming both trail ids; the same prefix at its own path is open, and with --ledger cut', async () => {
    const { a, b, ledger, idA, idB } = await twoTrails();
    const prefix = textLinesOf(b).slice(0, 4);
    writeLines(a, prefix);
    expect((await verifyTrail(a, keyFile)).status).toBe(3);
    const stored = await verifyTrail(a, keyFile, ['--ledger', ledger]);
    expect(stored.status).toBe(3);
    expect(stored.stderr).toContain(`the file holds trail ${idB}, the store records trail ${idA}`);
    // The same prefix where it was written: without the store it is only open; the store shows the cut.
    writeLines(b, prefix);
    expect((await verifyTrail(b, keyFile)).status).toBe(4);
    const cut = await verifyTrail(b, keyFile, ['--ledger', ledger]);
    expect(cut.status).toBe(3);
    expect(cut.stderr).toContain('it ends at line 4, but the store records line 8 as written: 4 line(s) missing');
  });
});

describe('a trail written before trails were named', () => {
  it('verifies as legacy (exit 5, its last seq on stdout), not intact; a changed byte in it is broken (exit 3); a new trail stopped cleanly (control) is intact', async () => {
    const legacyKeys = join(R, 'legacy-keys.json');
    copyFileSync(join(LEGACY, 'keys.json'), legacyKeys);
    const trail = join(R, basename(LEGACY_TRAIL));
    copyFileSync(LEGACY_TRAIL, trail);
    const r = await verifyTrail(trail, legacyKeys);
    expect(r).toMatchObject({ status: 5, stdout: '5\n' });
    expect(r.stderr).toContain(
      'is legacy (no opening line: written before trails were named): 5 line(s) chained intact',
    );
    expect(r.stderr).not.toContain('intact:');
    writeFileSync(trail, readFileSync(trail, 'utf8').replace('"outcome":"accept"', '"outcome":"decline"'));
    const changed = await verifyTrail(trail, legacyKeys);
    expect(changed.status).toBe(3);
    expect(changed.stderr).toContain('broken at line 2');
    const p = await serve();
    expect(await p.endInput()).toEqual({ code: 0, signal: null });
    expect(await verifyTrail(p.trail, keyFile)).toMatchObject({ status: 0, stdout: '2\n' });
  });

  it('a legacy-looking file (no opening line) at a path whose head the store holds is not that trail: exit 3 with --ledger', async () => {
    const ledger = `sqlite:${join(R, 'ledger.db')}`;
    const p = await serve(['--ledger', ledger]);
    await confirmDelete(p.client, 'a.txt');
    expect(await p.endInput()).toEqual({ code: 0, signal: null });
    // Its own lines without the opening line: seq 2 on line 1, so the chain is broken, and the store says so too.
    writeLines(p.trail, textLinesOf(p.trail).slice(1));
    expect((await verifyTrail(p.trail, keyFile, ['--ledger', ledger])).status).toBe(3);
    // An empty file (every line cut) at that path: legacy on its own, not the recorded trail against the store.
    writeFileSync(p.trail, '');
    expect((await verifyTrail(p.trail, keyFile)).status).toBe(5);
    const stored = await verifyTrail(p.trail, keyFile, ['--ledger', ledger]);
    expect(stored.status).toBe(3);
    expect(stored.stderr).toContain('is not the trail recorded for this path: the file has no opening line');
  });
});

describe('a failed write is cut back', () => {
  /** Lets the server's files grow to `bytes` at most (soft RLIMIT_FSIZE; Node ignores SIGXFSZ, so a write past it fails with EFBIG). */
  function limitFileSize(pid: number, bytes: number | 'unlimited'): void {
    execFileSync('prlimit', ['--pid', String(pid), `--fsize=${bytes}:`]);
  }

  it('a line written only in part (EFBIG mid-line) is cut back to the end of the last line written and the call refused; once writes work, the chain goes on and the trail closes intact', async () => {
    const p = await serve();
    const { state } = asked(await callTool(p.client, { name: 'delete_file', arguments: { path: 'a.txt' } }));
    const before = readFileSync(p.trail);
    limitFileSize(p.child.pid!, before.length + 20);
    const refused = await callTool(p.client, {
      name: 'delete_file',
      arguments: { path: 'a.txt' },
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(
      refused.kind === 'result' && refused.isError && refused.text.startsWith('[ERR_CONFIRM_AUDIT_UNAVAILABLE]'),
    ).toBe(true);
    expect(existsSync(join(root, 'a.txt'))).toBe(true);
    // stderr is a pipe of its own: wait for the line, by order.
    await until(() => p.stderr().includes('cutting back the partial write'));
    // Exactly the lines before the failed one: the partial line is gone.
    expect(readFileSync(p.trail).equals(before)).toBe(true);
    expect((await verifyTrail(p.trail, keyFile)).status).toBe(4);
    limitFileSize(p.child.pid!, 'unlimited');
    await confirmDelete(p.client, 'a.txt');
    expect(await p.endInput()).toEqual({ code: 0, signal: null });
    expect(linesOf(p.trail).map((l) => l['event'])).toEqual([
      'opened',
      'asked',
      'asked',
      'confirmed',
      'acted',
      'closed',
    ]);
    expect(await verifyTrail(p.trail, keyFile)).toMatchObject({ status: 0, stdout: '6\n' });
  });

  it('when the last line this process wrote is not in the file (replaced by a cut copy), the partial line is not cut into it: every later line is refused, even once writes work again', async () => {
    const p = await serve();
    const { state } = asked(await callTool(p.client, { name: 'delete_file', arguments: { path: 'a.txt' } }));
    const text = textLinesOf(p.trail);
    renameSync(p.trail, `${p.trail}.aside`);
    writeLines(p.trail, text.slice(0, 1)); // the opening line only: the "asked" line is gone
    limitFileSize(p.child.pid!, statSync(p.trail).size + 20);
    const refused = await callTool(p.client, {
      name: 'delete_file',
      arguments: { path: 'a.txt' },
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(refused.kind === 'result' && refused.text.startsWith('[ERR_CONFIRM_AUDIT_UNAVAILABLE]')).toBe(true);
    await until(() =>
      p
        .stderr()
        .includes(
          'cannot cut back a partial write (the last line this process wrote is not in the file); refusing every later line',
        ),
    );
    limitFileSize(p.child.pid!, 'unlimited');
    renameSync(`${p.trail}.aside`, p.trail);
    const later = await callTool(p.client, { name: 'delete_file', arguments: { path: 'a.txt' } });
    expect(later.kind === 'result' && later.text.startsWith('[ERR_CONFIRM_AUDIT_UNAVAILABLE]')).toBe(true);
    expect(existsSync(join(root, 'a.txt'))).toBe(true);
    // Nothing more was written to the trail put back, and no closed line is claimed at the stop.
    expect(await p.endInput()).toEqual({ code: 0, signal: null });
    expect(textLinesOf(p.trail)).toEqual(text);
    expect((await verifyTrail(p.trail, keyFile)).status).toBe(4);
  });
});
