/**
 * `--audit PATH` and `mcp-confirm audit verify`: the built CLI as a real
 * subprocess (stdio and --http) with real clients; the trail read back and
 * verified by the built CLI.
 */
import {
  closeSync,
  constants,
  existsSync,
  mkdirSync,
  openSync,
  readSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { runProcess, type Finished } from '../helpers/processes.js';
import { startAudited } from '../helpers/auditTrail.js';
import { KeyRing } from 'mcp-confirm';
import { canonicalDigest } from '../../src/state/digest.js';
import { ACCEPT, asked, callTool } from '../helpers/harness.js';
import { connectModern, startHttpServer } from '../helpers/httpServer.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const B64U_43 = /^[A-Za-z0-9_-]{43}$/;

let R: string;
let root: string;
let keyFile: string;
const cleanups: Array<() => Promise<unknown>> = [];

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
});
beforeEach(async () => {
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-audit-')));
  root = join(R, 'root');
  mkdirSync(root);
  mkdirSync(join(R, 'log'));
  writeFileSync(join(root, 'cache.txt'), 'cache');
  writeFileSync(join(root, 'thesis.txt'), 'thesis');
  keyFile = join(R, 'keys.json');
  writeFileSync(keyFile, (await run(['keygen', '--kid', 'k1'])).stdout);
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  rmSync(R, { recursive: true, force: true });
});

function run(args: string[]): Promise<Finished> {
  return runProcess(process.execPath, [MAIN, ...args]);
}

function verify(file: string, keys = keyFile): Promise<Finished> {
  return run(['audit', 'verify', file, '--key-file', keys]);
}

/**
 * Starts `mcp-confirm --root … --key-file … --audit R/log/trail` over stdio; resolves once its trail file is
 * named on stderr. `endInput()` is a clean stop (the trail gets its closed line).
 */
async function serveAudited(
  extra: string[] = [],
): Promise<{ client: Client; trail: string; stderr: () => string; endInput: () => Promise<unknown> }> {
  return startAudited(['--root', root, '--key-file', keyFile, '--audit', join(R, 'log', 'trail'), ...extra], cleanups);
}

type Line = Record<string, unknown>;
function linesOf(file: string): Line[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Line);
}

async function localTag(): Promise<string> {
  const ring = await KeyRing.fromFile(keyFile);
  return KeyRing.principalTag(ring.sealing, 'local');
}

const DECLINE = { confirm: { action: 'decline' } };
const CANCEL = { confirm: { action: 'cancel' } };

describe('mcp-confirm --audit PATH (stdio) writes one line per decision', () => {
  it('a confirmed delete writes asked, confirmed, acted (in that order) with tool, principal tag, jti, argument digest, question, outcome, kid, mac', async () => {
    const { client, trail } = await serveAudited();
    expect(trail.startsWith(join(R, 'log', 'trail.'))).toBe(true);
    const { state, message } = asked(await callTool(client, { name: 'delete_file', arguments: { path: 'cache.txt' } }));
    // Round 1's line is written before the question goes out (after the trail's opening line).
    expect(linesOf(trail).map((l) => l['event'])).toEqual(['opened', 'asked']);
    const done = await callTool(client, {
      name: 'delete_file',
      arguments: { path: 'cache.txt' },
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(done).toMatchObject({ kind: 'result', isError: false });
    expect(existsSync(join(root, 'cache.txt'))).toBe(false);

    const lines = linesOf(trail).slice(1);
    expect(lines.map((l) => l['event'])).toEqual(['asked', 'confirmed', 'acted']);
    const tag = await localTag();
    const argsDigest = canonicalDigest({ path: 'cache.txt' });
    lines.forEach((l, i) => {
      expect(l['seq']).toBe(i + 2);
      expect(l['time']).toMatch(ISO_MS);
      expect(l['tool']).toBe('delete_file');
      expect(l['principal']).toBe(tag);
      expect(l['jti']).toMatch(/^[A-Za-z0-9_-]{22}$/);
      expect(l['jti']).toBe(lines[0]!['jti']);
      expect(l['args']).toBe(argsDigest);
      expect(l['question']).toBe(message);
      expect(l['kid']).toBe('k1');
      expect(l['mac']).toMatch(B64U_43);
      expect(l['count']).toBeNull();
      expect(l['code']).toBeNull();
    });
    expect(lines.map((l) => l['outcome'])).toEqual([null, 'accept', null]);
    // The principal is only ever a tag.
    expect(readFileSync(trail, 'utf8')).not.toContain('"local"');

    // The server still runs: the trail is open (4), its chain intact so far.
    const checked = await verify(trail);
    expect(checked.status).toBe(4);
    expect(checked.stdout).toBe('4\n');
  });

  it('decline, cancel, a replay (ERR_CONFIRM_SPENT), a mismatch (ERR_CONFIRM_MISMATCH) and a refusal before asking are each logged', async () => {
    const { client, trail } = await serveAudited();
    const call = (args: unknown, extra: Record<string, unknown> = {}) =>
      callTool(client, { name: 'delete_file', arguments: args, ...extra });

    const a = asked(await call({ path: 'cache.txt' }));
    expect(await call({ path: 'cache.txt' }, { inputResponses: DECLINE, requestState: a.state })).toMatchObject({
      kind: 'result',
      isError: false,
    });
    const replay = await call({ path: 'cache.txt' }, { inputResponses: ACCEPT, requestState: a.state });
    expect(replay.kind === 'result' && replay.text.startsWith('[ERR_CONFIRM_SPENT]')).toBe(true);

    const b = asked(await call({ path: 'cache.txt' }));
    expect(await call({ path: 'cache.txt' }, { inputResponses: CANCEL, requestState: b.state })).toMatchObject({
      kind: 'result',
      isError: false,
    });

    const c = asked(await call({ path: 'cache.txt' }));
    const mismatch = await call({ path: 'thesis.txt' }, { inputResponses: ACCEPT, requestState: c.state });
    expect(mismatch.kind === 'result' && mismatch.text.startsWith('[ERR_CONFIRM_MISMATCH]')).toBe(true);
    const outside = await call({ path: '/etc/passwd' });
    expect(outside.kind === 'result' && outside.text.startsWith('[ERR_CONFIRM_OUTSIDE_ROOTS]')).toBe(true);
    // Control: the same state for its own call still deletes (a mismatch does not spend it).
    expect(await call({ path: 'cache.txt' }, { inputResponses: ACCEPT, requestState: c.state })).toMatchObject({
      kind: 'result',
      isError: false,
    });
    expect(existsSync(join(root, 'thesis.txt'))).toBe(true);
    expect(existsSync(join(root, 'cache.txt'))).toBe(false);

    const lines = linesOf(trail).slice(1);
    const summary = lines.map((l) => [l['event'], l['outcome'], l['code']]);
    expect(summary).toEqual([
      ['asked', null, null],
      ['declined', 'decline', null],
      ['refused', null, 'ERR_CONFIRM_SPENT'],
      ['asked', null, null],
      ['cancelled', 'cancel', null],
      ['asked', null, null],
      ['refused', null, 'ERR_CONFIRM_MISMATCH'],
      ['refused', null, 'ERR_CONFIRM_OUTSIDE_ROOTS'],
      ['confirmed', 'accept', null],
      ['acted', null, null],
    ]);
    // The replay names the spent jti; the mismatch names the state's jti and the digest of the call as presented.
    expect(lines[2]!['jti']).toBe(lines[0]!['jti']);
    expect(lines[6]!['jti']).toBe(lines[5]!['jti']);
    expect(lines[6]!['args']).toBe(canonicalDigest({ path: 'thesis.txt' }));
    // Refused before asking: no jti and no question, but the principal tag and the digest.
    expect(lines[7]).toMatchObject({
      jti: null,
      question: null,
      principal: await localTag(),
      args: canonicalDigest({ path: '/etc/passwd' }),
    });
    expect((await verify(trail)).stdout).toBe(`${lines.length + 1}\n`);
  });
});

describe('mcp-confirm audit verify FILE --key-file PATH', () => {
  /** A closed trail of 8 lines (the opening line, two confirmed deletes, the closed line) and its lines as text. */
  async function sixLineTrail(): Promise<{ trail: string; text: string[] }> {
    const { client, trail, endInput } = await serveAudited();
    for (const path of ['cache.txt', 'thesis.txt']) {
      const { state } = asked(await callTool(client, { name: 'delete_file', arguments: { path } }));
      await callTool(client, { name: 'delete_file', arguments: { path }, inputResponses: ACCEPT, requestState: state });
    }
    await endInput();
    const text = readFileSync(trail, 'utf8').split('\n').slice(0, -1);
    expect(text).toHaveLength(8);
    return { trail, text };
  }

  function variant(name: string, lines: string[]): string {
    const file = join(R, name);
    writeFileSync(file, lines.map((l) => `${l}\n`).join(''));
    return file;
  }

  it('exits 0 on an intact (closed) trail and prints its last seq on stdout', async () => {
    const { trail } = await sixLineTrail();
    const r = await verify(trail);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe('8\n');
  });

  it('exits 3 naming the first bad line when one byte of a line changed (inside the question text)', async () => {
    const { text } = await sixLineTrail();
    const changed = [...text];
    // thesis.txt's question on line 5: one digit of the size, still canonical JSON with the right seq.
    changed[4] = changed[4]!.replace('Size: 6 bytes', 'Size: 7 bytes');
    expect(changed[4]).not.toBe(text[4]);
    const r = await verify(variant('changed.jsonl', changed));
    expect(r.status).toBe(3);
    expect(r.stderr).toContain('broken at line 5');
    expect(r.stdout).toBe('');
  });

  it('exits 3 naming the first bad line when a middle line is deleted', async () => {
    const { text } = await sixLineTrail();
    const r = await verify(variant('deleted.jsonl', [...text.slice(0, 2), ...text.slice(3)]));
    expect(r.status).toBe(3);
    expect(r.stderr).toContain('broken at line 3');
  });

  it('exits 3 naming the first bad line when two lines are swapped', async () => {
    const { text } = await sixLineTrail();
    const swapped = [...text];
    [swapped[1], swapped[2]] = [swapped[2]!, swapped[1]!];
    const r = await verify(variant('swapped.jsonl', swapped));
    expect(r.status).toBe(3);
    expect(r.stderr).toContain('broken at line 2');
  });

  it('exits 3 naming the line when a line with the same seq from another trail (same keys) is swapped in', async () => {
    const { text } = await sixLineTrail();
    writeFileSync(join(root, 'cache.txt'), 'again');
    const other = await serveAudited();
    const { state } = asked(await callTool(other.client, { name: 'delete_file', arguments: { path: 'cache.txt' } }));
    await callTool(other.client, {
      name: 'delete_file',
      arguments: { path: 'cache.txt' },
      inputResponses: ACCEPT,
      requestState: state,
    });
    const foreign = readFileSync(other.trail, 'utf8').split('\n');
    expect(JSON.parse(foreign[2]!)).toMatchObject({ seq: 3, event: 'confirmed' });
    const mixed = [...text];
    mixed[2] = foreign[2]!;
    // Control: the other trail is intact so far on its own (open: its server still runs).
    expect((await verify(other.trail)).status).toBe(4);
    const r = await verify(variant('foreign.jsonl', mixed));
    expect(r.status).toBe(3);
    expect(r.stderr).toContain('broken at line 3');
  });

  it('cutting lines off the end takes the closed line with them: the file alone reads as open (exit 4) with a smaller last seq (with --ledger it is cut: test/e2e/auditTrailEnds.test.ts)', async () => {
    const { text } = await sixLineTrail();
    const r = await verify(variant('cut.jsonl', text.slice(0, 4)));
    expect(r.status).toBe(4);
    expect(r.stdout).toBe('4\n');
    expect(r.stderr).toContain('is open (not closed');
  });

  it('exits 3 at line 1 under another key file, and for a last line without its newline', async () => {
    const { trail, text } = await sixLineTrail();
    const otherKeys = join(R, 'other-keys.json');
    writeFileSync(otherKeys, (await run(['keygen', '--kid', 'k1'])).stdout);
    const wrongKey = await verify(trail, otherKeys);
    expect(wrongKey.status).toBe(3);
    expect(wrongKey.stderr).toContain('broken at line 1');
    const partial = join(R, 'partial.jsonl');
    writeFileSync(partial, `${text.slice(0, 5).join('\n')}\n${text[5]!.slice(0, 20)}`);
    const r = await verify(partial);
    expect(r.status).toBe(3);
    expect(r.stderr).toContain('broken at line 6');
  });

  it('exits 2 on usage errors: no FILE, no --key-file, no or an unknown audit command, another flag, an unreadable FILE or key file, a memory or missing or unknown --ledger, --audience without --ledger', async () => {
    const file = join(R, 'empty.jsonl');
    writeFileSync(file, '');
    const cases: Array<[string[], RegExp]> = [
      [['audit', 'verify', '--key-file', keyFile], /needs the trail FILE/],
      [['audit', 'verify', file], /needs --key-file/],
      [['audit'], /audit needs a command/],
      [['audit', 'check', file, '--key-file', keyFile], /unknown audit command: check/],
      [['audit', 'verify', file, '--key-file', keyFile, '--root', root], /takes only --key-file/],
      [['audit', 'verify', join(R, 'missing.jsonl'), '--key-file', keyFile], /cannot read audit trail .*ENOENT/],
      [['audit', 'verify', file, '--key-file', join(R, 'missing.json')], /cannot read key file/],
      [['audit', 'verify', file, '--key-file', keyFile, '--ledger', 'memory'], /needs a shared store/],
      [
        ['audit', 'verify', file, '--key-file', keyFile, '--ledger', `sqlite:${join(R, 'missing.db')}`],
        /no such SQLite file/,
      ],
      [['audit', 'verify', file, '--key-file', keyFile, '--ledger', 'bogus'], /unknown ledger/],
      [['audit', 'verify', file, '--key-file', keyFile, '--audience', 'x'], /--audience only with --ledger/],
    ];
    for (const [args, message] of cases) {
      const r = await run(args);
      expect({ args, status: r.status }).toEqual({ args, status: 2 });
      expect(r.stderr).toMatch(message);
      expect(r.stdout).toBe('');
    }
    // Verifying created no ledger file.
    expect(existsSync(join(R, 'missing.db'))).toBe(false);
    // Control: the empty file with the key file is checked (no opening line: legacy, exit 5, last seq 0).
    expect(await verify(file)).toMatchObject({ status: 5, stdout: '0\n' });
  });
});

describe('--audit start-up and fail closed', () => {
  it('--audit without --key-file exits 2 saying why; an uncreatable trail exits 2 naming it', async () => {
    const noKeys = await run(['--root', root, '--audit', join(R, 'log', 'trail')]);
    expect(noKeys.status).toBe(2);
    expect(noKeys.stderr).toContain('--audit needs --key-file');
    const noDir = await run(['--root', root, '--key-file', keyFile, '--audit', join(R, 'missing-dir', 'trail')]);
    expect(noDir.status).toBe(2);
    expect(noDir.stderr).toMatch(/--audit: cannot create .*missing-dir.*ENOENT/);
    expect(readdirSync(join(R, 'log'))).toEqual([]);
  });

  it('two processes with the same --audit PATH write two files, each one chain', async () => {
    const a = await serveAudited();
    const b = await serveAudited();
    expect(a.trail).not.toBe(b.trail);
    asked(await callTool(a.client, { name: 'delete_file', arguments: { path: 'cache.txt' } }));
    asked(await callTool(b.client, { name: 'delete_file', arguments: { path: 'cache.txt' } }));
    asked(await callTool(a.client, { name: 'delete_file', arguments: { path: 'thesis.txt' } }));
    expect((await verify(a.trail)).stdout).toBe('3\n');
    expect((await verify(b.trail)).stdout).toBe('2\n');
  });

  it('a "confirmed" line that cannot be written (the trail replaced by a directory) refuses the delete with ERR_CONFIRM_AUDIT_UNAVAILABLE; the file stays', async () => {
    const { client, trail } = await serveAudited();
    const { state } = asked(await callTool(client, { name: 'delete_file', arguments: { path: 'cache.txt' } }));
    renameSync(trail, `${trail}.aside`);
    mkdirSync(trail);
    const refused = await callTool(client, {
      name: 'delete_file',
      arguments: { path: 'cache.txt' },
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(
      refused.kind === 'result' && refused.isError && refused.text.startsWith('[ERR_CONFIRM_AUDIT_UNAVAILABLE]'),
    ).toBe(true);
    expect(readFileSync(join(root, 'cache.txt'), 'utf8')).toBe('cache');
    // Control: once the trail is back, a new confirmation deletes, and the chain goes on from the last line written.
    rmSync(trail, { recursive: true });
    renameSync(`${trail}.aside`, trail);
    const again = asked(await callTool(client, { name: 'delete_file', arguments: { path: 'cache.txt' } }));
    const done = await callTool(client, {
      name: 'delete_file',
      arguments: { path: 'cache.txt' },
      inputResponses: ACCEPT,
      requestState: again.state,
    });
    expect(done).toMatchObject({ kind: 'result', isError: false });
    expect(existsSync(join(root, 'cache.txt'))).toBe(false);
    expect(linesOf(trail).map((l) => l['event'])).toEqual(['opened', 'asked', 'asked', 'confirmed', 'acted']);
    expect(await verify(trail)).toMatchObject({ status: 4, stdout: '5\n' });
  });

  it('a trail replaced by a symbolic link (to /dev/full) is not followed: the delete is refused, the file stays', async () => {
    const { client, trail } = await serveAudited();
    const { state } = asked(await callTool(client, { name: 'delete_file', arguments: { path: 'cache.txt' } }));
    unlinkSync(trail);
    symlinkSync('/dev/full', trail);
    const refused = await callTool(client, {
      name: 'delete_file',
      arguments: { path: 'cache.txt' },
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(refused.kind === 'result' && refused.text.startsWith('[ERR_CONFIRM_AUDIT_UNAVAILABLE]')).toBe(true);
    expect(existsSync(join(root, 'cache.txt'))).toBe(true);
  });

  it('a trail replaced by a FIFO, with and without a reader, refuses the delete at once with ERR_CONFIRM_AUDIT_UNAVAILABLE (never hangs, never feeds the pipe); the file stays', async () => {
    const { client, trail } = await serveAudited();
    const { state } = asked(await callTool(client, { name: 'delete_file', arguments: { path: 'cache.txt' } }));
    renameSync(trail, `${trail}.aside`);
    execFileSync('mkfifo', [trail]);
    // No reader: the open must not wait for one.
    const refused = await callTool(client, {
      name: 'delete_file',
      arguments: { path: 'cache.txt' },
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(refused.kind === 'result' && refused.text.startsWith('[ERR_CONFIRM_AUDIT_UNAVAILABLE]')).toBe(true);
    expect(existsSync(join(root, 'cache.txt'))).toBe(true);
    // A reader on the pipe: the open succeeds, but a pipe is not a regular file, so nothing is written to it.
    const reader = openSync(trail, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      const r = await callTool(client, { name: 'delete_file', arguments: { path: 'cache.txt' } });
      expect(r.kind === 'result' && r.text.startsWith('[ERR_CONFIRM_AUDIT_UNAVAILABLE]')).toBe(true);
      let got = 0;
      try {
        got = readSync(reader, Buffer.alloc(65_536));
      } catch (e) {
        expect((e as NodeJS.ErrnoException).code).toBe('EAGAIN'); // an empty pipe
      }
      expect(got).toBe(0);
    } finally {
      closeSync(reader);
    }
    expect(existsSync(join(root, 'cache.txt'))).toBe(true);
  });

  it('a question whose "asked" line cannot be written is not asked', async () => {
    const { client, trail } = await serveAudited();
    unlinkSync(trail);
    const r = await callTool(client, { name: 'delete_file', arguments: { path: 'cache.txt' } });
    expect(r.kind === 'result' && r.text.startsWith('[ERR_CONFIRM_AUDIT_UNAVAILABLE]')).toBe(true);
    // The trail is not silently re-created.
    expect(existsSync(trail)).toBe(false);
  });
});

describe('--audit over --http', () => {
  it('a confirmed delete through a 2026-era client is logged; forged states are one aggregated line written at SIGTERM, then the closed line; the trail verifies intact', async () => {
    const server = await startHttpServer([
      '--root',
      root,
      '--http',
      '127.0.0.1:0',
      '--key-file',
      keyFile,
      '--audit',
      join(R, 'log', 'trail'),
    ]);
    cleanups.push(async () => {
      if (server.proc.exitCode === null) server.proc.kill('SIGKILL');
      await server.exited;
    });
    const trail = /audit trail: (\S+\.jsonl)[ \n]/.exec(server.stderr())?.[1];
    expect(trail).toBeDefined();
    const client = await connectModern(server.url);
    cleanups.push(() => client.close());
    const { state } = asked(await callTool(client, { name: 'delete_file', arguments: { path: 'cache.txt' } }));
    expect(
      await callTool(client, {
        name: 'delete_file',
        arguments: { path: 'cache.txt' },
        inputResponses: ACCEPT,
        requestState: state,
      }),
    ).toMatchObject({ kind: 'result', isError: false });
    for (let i = 0; i < 25; i++) {
      const forged = await callTool(client, {
        name: 'delete_file',
        arguments: { path: 'thesis.txt' },
        inputResponses: ACCEPT,
        requestState: `forged-${i}`,
      });
      expect(forged).toMatchObject({ kind: 'error', code: -32602 });
    }
    // Counted, not written yet.
    expect(linesOf(trail!).map((l) => l['event'])).toEqual(['opened', 'asked', 'confirmed', 'acted']);
    await client.close();
    server.proc.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    const lines = linesOf(trail!);
    // SIGTERM is a clean stop: the count, then the closed line.
    expect(lines.map((l) => l['event'])).toEqual(['opened', 'asked', 'confirmed', 'acted', 'states-refused', 'closed']);
    expect(lines[4]).toMatchObject({ count: 25, tool: null, jti: null, principal: null });
    expect(lines[5]).toMatchObject({ seq: 6, lines: 6 });
    expect(lines[1]!['principal']).toBe(await localTag());
    expect(await verify(trail!)).toMatchObject({ status: 0, stdout: '6\n' });
    expect(existsSync(join(root, 'thesis.txt'))).toBe(true);
  });
});
