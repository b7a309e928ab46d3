/**
 * `mcp-confirm proxy --audit PATH --key-file PATH`: the built CLI as a real subprocess in front of
 * the 2025-era fixture upstream (fixtures/upstream.mjs, SDK v1 over stdio), a real v2 client
 * pinned to 2026-07-28; the trail read back and checked by `mcp-confirm audit verify`.
 * Needs `npm run build` first.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { KeyRing } from 'mcp-confirm';
import { canonicalDigest } from '../../src/state/digest.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCEPT, asked, callTool, MANUAL_CLIENT_OPTIONS } from '../helpers/harness.js';
import { runProcess } from '../helpers/processes.js';
import { startAudited, textLinesOf, verifyTrail, type AuditedProcess } from '../helpers/auditTrail.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');
const FIXTURE = resolve(import.meta.dirname, 'fixtures/upstream.mjs');
const DECLINE = { confirm: { action: 'decline' } };

let R: string;
let keyFile: string;
const closers: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-proxyaudit-')));
  mkdirSync(join(R, 'log'));
  keyFile = join(R, 'keys.json');
  const keygen = await runProcess(process.execPath, [MAIN, 'keygen', '--kid', 'k1']);
  expect(keygen.status).toBe(0);
  writeFileSync(keyFile, keygen.stdout);
});
afterAll(async () => {
  for (const c of closers.splice(0).reverse()) await c().catch(() => {});
  rmSync(R, { recursive: true, force: true });
});

type Line = Record<string, unknown>;
function linesOf(file: string): Line[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Line);
}

/** The proxy with --audit over stdio; resolves once its trail file is named on stderr (by order, not time). */
async function auditedProxy(dir: string): Promise<{ client: Client; trail: string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [
      MAIN,
      'proxy',
      '--key-file',
      keyFile,
      '--audit',
      join(R, 'log', 'proxy'),
      '--',
      process.execPath,
      FIXTURE,
      dir,
    ],
    stderr: 'pipe',
  });
  let err = '';
  const named = new Promise<string>((res) => {
    transport.stderr?.on('data', (chunk: Buffer) => {
      err += chunk.toString('utf8');
      const m = /audit trail: (\S+\.jsonl)[ \n]/.exec(err);
      if (m) res(m[1]!);
    });
  });
  const client = new Client({ name: 'proxy-audit-test', version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
  await client.connect(transport);
  closers.push(() => client.close());
  return { client, trail: await named };
}

describe('mcp-confirm proxy --audit PATH', () => {
  it('a confirmed proxied call writes asked, confirmed, acted; a declined one asked, declined; audit verify accepts the file', async () => {
    const dir = join(R, 'up');
    mkdirSync(dir);
    const { client, trail } = await auditedProxy(dir);
    expect(trail.startsWith(join(R, 'log', 'proxy.'))).toBe(true);
    const args = { text: 'audited note' };
    const { state, message } = asked(await callTool(client, { name: 'write_note', arguments: args }));
    expect(linesOf(trail).map((l) => l['event'])).toEqual(['opened', 'asked']);
    const done = await callTool(client, {
      name: 'write_note',
      arguments: args,
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(done).toMatchObject({ kind: 'result', isError: false, text: 'written' });
    expect(readFileSync(join(dir, 'note.txt'), 'utf8')).toBe('audited note');
    let lines = linesOf(trail).slice(1);
    expect(lines.map((l) => l['event'])).toEqual(['asked', 'confirmed', 'acted']);
    const ring = await KeyRing.fromFile(keyFile);
    for (const l of lines) {
      expect(l).toMatchObject({
        tool: 'write_note',
        jti: lines[0]!['jti'],
        question: message,
        principal: KeyRing.principalTag(ring.sealing, 'local'),
      });
      // The guard's arguments are the call's { arguments }: their digest is what the state binds.
      expect(l['args']).toBe(canonicalDigest({ arguments: args }));
    }
    // A declined call: its lines, and nothing forwarded.
    const declinedArgs = { text: 'never written' };
    const second = asked(await callTool(client, { name: 'write_note', arguments: declinedArgs }));
    await callTool(client, {
      name: 'write_note',
      arguments: declinedArgs,
      inputResponses: DECLINE,
      requestState: second.state,
    });
    lines = linesOf(trail).slice(1);
    expect(lines.map((l) => [l['event'], l['outcome']])).toEqual([
      ['asked', null],
      ['confirmed', 'accept'],
      ['acted', null],
      ['asked', null],
      ['declined', 'decline'],
    ]);
    expect(readFileSync(join(dir, 'calls.log'), 'utf8')).toBe('"audited note"\n');
    // The proxy still runs: open (exit 4), every line good so far.
    const verified = await runProcess(process.execPath, [MAIN, 'audit', 'verify', trail, '--key-file', keyFile]);
    expect(verified.status).toBe(4);
    expect(verified.stdout).toBe('6\n');
    expect(verified.stderr).toContain('is open (not closed');
  });

  /** The proxy with --audit (and `extra` flags) in front of the fixture upstream, spawned by the test so it can stop it. */
  function proxyAudited(dir: string, extra: string[] = []): Promise<AuditedProcess> {
    return startAudited(
      [
        'proxy',
        '--key-file',
        keyFile,
        '--audit',
        join(R, 'log', 'proxy'),
        ...extra,
        '--',
        process.execPath,
        FIXTURE,
        dir,
      ],
      closers,
    );
  }

  async function confirmedNote(client: Client, text: string): Promise<void> {
    const { state } = asked(await callTool(client, { name: 'write_note', arguments: { text } }));
    expect(
      await callTool(client, { name: 'write_note', arguments: { text }, inputResponses: ACCEPT, requestState: state }),
    ).toMatchObject({ kind: 'result', isError: false, text: 'written' });
  }

  for (const [name, stop] of [
    ['the end of stdin', (p: AuditedProcess) => p.endInput()],
    ['SIGTERM', (p: AuditedProcess) => p.stop('SIGTERM')],
  ] as const) {
    it(`a clean stop (${name}) writes the closed line with the count of lines: audit verify says intact, exit 0`, async () => {
      const dir = join(R, `stop-${name.replace(/\W/g, '')}`);
      mkdirSync(dir);
      const p = await proxyAudited(dir);
      await confirmedNote(p.client, 'closed note');
      expect(await stop(p)).toEqual({ code: 0, signal: null });
      const lines = linesOf(p.trail);
      expect(lines.map((l) => l['event'])).toEqual(['opened', 'asked', 'confirmed', 'acted', 'closed']);
      expect(lines[4]).toMatchObject({ seq: 5, lines: 5 });
      const verified = await verifyTrail(p.trail, keyFile);
      expect(verified).toMatchObject({ status: 0, stdout: '5\n' });
      expect(verified.stderr).toContain(`trail ${lines[0]!['trail'] as string}, host `);
    });
  }

  it('with --ledger sqlite:… the proxy records its trail head: a cut end is cut (exit 3, naming the missing lines), the whole trail (control) intact against the store', async () => {
    const dir = join(R, 'ledgered');
    mkdirSync(dir);
    const ledger = `sqlite:${join(R, 'proxy-ledger.db')}`;
    const p = await proxyAudited(dir, ['--ledger', ledger]);
    expect(p.stderr()).toContain('heads recorded in the sqlite ledger');
    await confirmedNote(p.client, 'one');
    await confirmedNote(p.client, 'two');
    expect(await p.endInput()).toEqual({ code: 0, signal: null });
    const text = textLinesOf(p.trail);
    expect(text).toHaveLength(8);
    expect(await verifyTrail(p.trail, keyFile, ['--ledger', ledger])).toMatchObject({ status: 0, stdout: '8\n' });
    writeFileSync(
      p.trail,
      text
        .slice(0, 4)
        .map((l) => `${l}\n`)
        .join(''),
    );
    expect((await verifyTrail(p.trail, keyFile)).status).toBe(4);
    const cut = await verifyTrail(p.trail, keyFile, ['--ledger', ledger]);
    expect(cut.status).toBe(3);
    expect(cut.stderr).toContain(
      'is cut: it ends at line 4, but the store records line 8 as written: 4 line(s) missing',
    );
  });
});
