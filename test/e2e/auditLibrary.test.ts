/**
 * The library's audit trail (`createConfirmation({ audit })` with an
 * `AuditLog`) through real clients of both eras over `serveStdio`
 * (in-memory transport); the interval of the refused-state count is injected,
 * so nothing waits for real time.
 */
import { createHmac, hkdfSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import canonicalize from 'canonicalize';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuditKeys, AuditLog, createDemoServer, KeyRing, verifyAuditTrail, type KeySpec } from 'mcp-confirm';
import { ACCEPT, asked, connect, connectV1 } from '../helpers/harness.js';

let R: string;
let root: string;
let spec: KeySpec;
const cleanups: Array<() => Promise<unknown>> = [];

beforeEach(() => {
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-auditlib-')));
  root = join(R, 'root');
  mkdirSync(root);
  writeFileSync(join(root, 'cache.txt'), 'cache');
  spec = KeyRing.generateSpec('k1');
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  rmSync(R, { recursive: true, force: true });
});

/** A demo server with an audit trail whose interval ticks only when the test says so. */
async function audited(): Promise<{ factory: Parameters<typeof connect>[0]; audit: AuditLog; tick: () => void; events: () => string[]; keys: AuditKeys }> {
  const keys = await AuditKeys.fromSpecs([spec]);
  let flush: (() => void) | undefined;
  let intervalMs: number | undefined;
  const audit = await AuditLog.open({
    path: join(R, 'trail.jsonl'),
    keys,
    stateRefusedIntervalMs: 60_000,
    schedule: (f, ms) => {
      flush = f;
      intervalMs = ms;
      return () => (flush = undefined);
    },
  });
  expect(intervalMs).toBe(60_000);
  cleanups.push(() => audit.close());
  const { factory } = await createDemoServer({ roots: [root], keys: await KeyRing.fromSpecs([spec]), audit });
  return {
    factory,
    audit,
    keys,
    tick: () => flush?.(),
    events: () => lines().map((l) => String(l['event'])),
  };
}

function lines(): Array<Record<string, unknown>> {
  return readFileSync(join(R, 'trail.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** Lets the flush started by a tick finish: it queued its line, and the line's write resolves in order. */
async function settled(audit: AuditLog): Promise<void> {
  await audit.record({ event: 'refused', tool: 'marker', principal: null, jti: null, args: null, question: null, outcome: null, code: null, count: null, approver: null });
}

describe('refused states are counted and written as one line per interval', () => {
  it('a flood of 1,000 forged states writes one states-refused line with count 1000 per interval, not 1,000 lines', async () => {
    const { factory, audit, tick, events, keys } = await audited();
    const c = await connect(factory);
    cleanups.push(() => c.close());
    for (let i = 0; i < 1000; i++) {
      const r = await c.call('delete_file', { path: 'cache.txt' }, { inputResponses: ACCEPT, requestState: `forged.${i}` });
      expect(r.kind === 'error' && r.code === -32602).toBe(true);
    }
    // Counted, not written: the flood wrote nothing.
    expect(readFileSync(join(R, 'trail.jsonl'), 'utf8')).toBe('');
    tick();
    await settled(audit);
    expect(events()).toEqual(['states-refused', 'refused']);
    expect(lines()[0]).toMatchObject({ seq: 1, event: 'states-refused', count: 1000, tool: null, jti: null, principal: null, question: null });
    // The next interval counts afresh; an interval without refusals writes nothing.
    for (let i = 0; i < 3; i++) await c.call('delete_file', { path: 'cache.txt' }, { inputResponses: ACCEPT, requestState: `forged.again.${i}` });
    tick();
    await settled(audit);
    tick();
    await settled(audit);
    expect(events()).toEqual(['states-refused', 'refused', 'states-refused', 'refused', 'refused']);
    expect(lines()[2]).toMatchObject({ event: 'states-refused', count: 3 });
    // Control: a genuine confirmation still goes through and is logged line by line.
    const { state } = asked(await c.call('delete_file', { path: 'cache.txt' }));
    expect(await c.call('delete_file', { path: 'cache.txt' }, { inputResponses: ACCEPT, requestState: state })).toMatchObject({ kind: 'result', isError: false });
    expect(events().slice(-3)).toEqual(['asked', 'confirmed', 'acted']);
    expect(verifyAuditTrail(readFileSync(join(R, 'trail.jsonl')), keys)).toMatchObject({ intact: true, lastSeq: 8 });
  });

  it('close() writes the count not yet written, then refuses further lines', async () => {
    const { factory, audit, events } = await audited();
    const c = await connect(factory);
    cleanups.push(() => c.close());
    for (let i = 0; i < 7; i++) await c.call('delete_file', { path: 'cache.txt' }, { inputResponses: ACCEPT, requestState: `forged.${i}` });
    await audit.close();
    expect(events()).toEqual(['states-refused']);
    expect(lines()[0]).toMatchObject({ count: 7 });
    await expect(settled(audit)).rejects.toMatchObject({ code: 'ERR_CONFIRM_AUDIT_UNAVAILABLE' });
  });
});

describe('the guard hands each decision to the audit trail', () => {
  it('a 2025-era client (legacy elicitation/create) that confirms writes asked, confirmed, acted with the question it was shown', async () => {
    const { factory, events } = await audited();
    const v1 = await connectV1(factory, { answer: () => ({ action: 'accept', content: { confirmed: true } }) });
    cleanups.push(() => v1.close());
    const r = await v1.callTool('delete_file', { path: 'cache.txt' });
    expect(r.isError).toBe(false);
    expect(events()).toEqual(['asked', 'confirmed', 'acted']);
    expect(lines()[0]!['question']).toBe(v1.asked[0]);
  });

  it('no answer asks again with a new jti (asked-again, outcome no-answer)', async () => {
    const { factory, events } = await audited();
    const c = await connect(factory);
    cleanups.push(() => c.close());
    const first = asked(await c.call('delete_file', { path: 'cache.txt' }));
    asked(await c.call('delete_file', { path: 'cache.txt' }, { requestState: first.state }));
    expect(events()).toEqual(['asked', 'asked-again']);
    const [a, b] = lines();
    expect(b).toMatchObject({ outcome: 'no-answer', tool: 'delete_file', principal: a!['principal'], args: a!['args'] });
    expect(b!['jti']).not.toBe(a!['jti']);
  });

  it('a file changed after the confirmation writes confirmed, then failed with ERR_CONFIRM_CHANGED (and no separate refused line)', async () => {
    const { factory, events } = await audited();
    const c = await connect(factory);
    cleanups.push(() => c.close());
    const { state } = asked(await c.call('delete_file', { path: 'cache.txt' }));
    writeFileSync(join(root, 'cache.txt'), 'changed after the question');
    const r = await c.call('delete_file', { path: 'cache.txt' }, { inputResponses: ACCEPT, requestState: state });
    expect(r.kind === 'result' && r.text.startsWith('[ERR_CONFIRM_CHANGED]')).toBe(true);
    expect(events()).toEqual(['asked', 'confirmed', 'failed']);
    expect(lines()[2]).toMatchObject({ code: 'ERR_CONFIRM_CHANGED', jti: lines()[0]!['jti'] });
    expect(readFileSync(join(root, 'cache.txt'), 'utf8')).toBe('changed after the question');
  });

  it('line 1\'s mac is what the README documents: HMAC-SHA256 under HKDF-SHA256(key, "mcp-confirm/v1/audit-salt", "mcp-confirm/v1/audit-mac") of the RFC 8785 form of ["mcp-confirm/v1/audit-genesis", line without mac]; line 2 chains from line 1', async () => {
    const { factory } = await audited();
    const c = await connect(factory);
    cleanups.push(() => c.close());
    const { state } = asked(await c.call('delete_file', { path: 'cache.txt' }));
    await c.call('delete_file', { path: 'cache.txt' }, { inputResponses: { confirm: { action: 'decline' } }, requestState: state });
    const macKey = Buffer.from(hkdfSync('sha256', Buffer.from(spec.k, 'base64url'), 'mcp-confirm/v1/audit-salt', 'mcp-confirm/v1/audit-mac', 32));
    let previous = 'mcp-confirm/v1/audit-genesis';
    const text = readFileSync(join(R, 'trail.jsonl'), 'utf8').split('\n').slice(0, -1);
    expect(text).toHaveLength(2);
    for (const line of text) {
      const { mac, ...rest } = JSON.parse(line) as Record<string, unknown>;
      expect(line).toBe(canonicalize({ ...rest, mac }));
      expect(mac).toBe(createHmac('sha256', macKey).update(canonicalize([previous, rest])!, 'utf8').digest('base64url'));
      previous = mac as string;
    }
  });

  it('AuditLog.open refuses an existing file (one writer per chain)', async () => {
    const keys = await AuditKeys.fromSpecs([spec]);
    writeFileSync(join(R, 'taken.jsonl'), '');
    await expect(AuditLog.open({ path: join(R, 'taken.jsonl'), keys })).rejects.toMatchObject({ code: 'EEXIST' });
    // Control: a new path opens.
    const log = await AuditLog.open({ path: join(R, 'fresh.jsonl'), keys });
    await log.close();
  });
});
