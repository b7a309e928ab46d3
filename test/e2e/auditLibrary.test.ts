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
import { AuditKeys, AuditLog, KeyRing, MemoryLedger, verifyAuditTrail, type KeySpec } from 'mcp-confirm';
import { createDemoServer } from 'mcp-confirm/demo';
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
async function audited(): Promise<{
  factory: Parameters<typeof connect>[0];
  audit: AuditLog;
  tick: () => void;
  events: () => string[];
  keys: AuditKeys;
}> {
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
  await audit.record({
    event: 'refused',
    tool: 'marker',
    principal: null,
    jti: null,
    args: null,
    question: null,
    outcome: null,
    code: null,
    count: null,
    approver: null,
  });
}

describe('refused states are counted and written as one line per interval', () => {
  it('a flood of 1,000 forged states writes one states-refused line with count 1000 per interval, not 1,000 lines', async () => {
    const { factory, audit, tick, events, keys } = await audited();
    const c = await connect(factory);
    cleanups.push(() => c.close());
    for (let i = 0; i < 1000; i++) {
      const r = await c.call(
        'delete_file',
        { path: 'cache.txt' },
        { inputResponses: ACCEPT, requestState: `forged.${i}` },
      );
      expect(r.kind === 'error' && r.code === -32602).toBe(true);
    }
    // Counted, not written: the flood wrote nothing after the trail's opening line.
    expect(events()).toEqual(['opened']);
    tick();
    await settled(audit);
    expect(events()).toEqual(['opened', 'states-refused', 'refused']);
    expect(lines()[1]).toMatchObject({
      seq: 2,
      event: 'states-refused',
      count: 1000,
      tool: null,
      jti: null,
      principal: null,
      question: null,
    });
    // The next interval counts afresh; an interval without refusals writes nothing.
    for (let i = 0; i < 3; i++)
      await c.call('delete_file', { path: 'cache.txt' }, { inputResponses: ACCEPT, requestState: `forged.again.${i}` });
    tick();
    await settled(audit);
    tick();
    await settled(audit);
    expect(events()).toEqual(['opened', 'states-refused', 'refused', 'states-refused', 'refused', 'refused']);
    expect(lines()[3]).toMatchObject({ event: 'states-refused', count: 3 });
    // Control: a genuine confirmation still goes through and is logged line by line.
    const { state } = asked(await c.call('delete_file', { path: 'cache.txt' }));
    expect(
      await c.call('delete_file', { path: 'cache.txt' }, { inputResponses: ACCEPT, requestState: state }),
    ).toMatchObject({ kind: 'result', isError: false });
    expect(events().slice(-3)).toEqual(['asked', 'confirmed', 'acted']);
    // Still being written: open (not closed), every line good.
    expect(verifyAuditTrail(readFileSync(join(R, 'trail.jsonl')), keys)).toMatchObject({
      status: 'open',
      intact: false,
      lastSeq: 9,
    });
  });

  it('close() writes the count not yet written and the closed line, then refuses further lines', async () => {
    const { factory, audit, events } = await audited();
    const c = await connect(factory);
    cleanups.push(() => c.close());
    for (let i = 0; i < 7; i++)
      await c.call('delete_file', { path: 'cache.txt' }, { inputResponses: ACCEPT, requestState: `forged.${i}` });
    await audit.close();
    expect(events()).toEqual(['opened', 'states-refused', 'closed']);
    expect(lines()[1]).toMatchObject({ count: 7 });
    expect(lines()[2]).toMatchObject({ seq: 3, lines: 3 });
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
    expect(events()).toEqual(['opened', 'asked', 'confirmed', 'acted']);
    expect(lines()[1]!['question']).toBe(v1.asked[0]);
  });

  it('no answer asks again with a new jti (asked-again, outcome no-answer)', async () => {
    const { factory, events } = await audited();
    const c = await connect(factory);
    cleanups.push(() => c.close());
    const first = asked(await c.call('delete_file', { path: 'cache.txt' }));
    asked(await c.call('delete_file', { path: 'cache.txt' }, { requestState: first.state }));
    expect(events()).toEqual(['opened', 'asked', 'asked-again']);
    const [, a, b] = lines();
    expect(b).toMatchObject({
      outcome: 'no-answer',
      tool: 'delete_file',
      principal: a!['principal'],
      args: a!['args'],
    });
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
    expect(events()).toEqual(['opened', 'asked', 'confirmed', 'failed']);
    expect(lines()[3]).toMatchObject({ code: 'ERR_CONFIRM_CHANGED', jti: lines()[1]!['jti'] });
    expect(readFileSync(join(root, 'cache.txt'), 'utf8')).toBe('changed after the question');
  });

  it('line 1\'s (the opening line\'s) mac is what docs/audit.md documents: HMAC-SHA256 under HKDF-SHA256(key, "mcp-confirm/v1/audit-salt", "mcp-confirm/v1/audit-mac") of the RFC 8785 form of ["mcp-confirm/v1/audit-genesis", line without mac]; each later line chains from the one before', async () => {
    const { factory } = await audited();
    const c = await connect(factory);
    cleanups.push(() => c.close());
    const { state } = asked(await c.call('delete_file', { path: 'cache.txt' }));
    await c.call(
      'delete_file',
      { path: 'cache.txt' },
      { inputResponses: { confirm: { action: 'decline' } }, requestState: state },
    );
    const macKey = Buffer.from(
      hkdfSync('sha256', Buffer.from(spec.k, 'base64url'), 'mcp-confirm/v1/audit-salt', 'mcp-confirm/v1/audit-mac', 32),
    );
    let previous = 'mcp-confirm/v1/audit-genesis';
    const text = readFileSync(join(R, 'trail.jsonl'), 'utf8').split('\n').slice(0, -1);
    expect(text).toHaveLength(3);
    expect(JSON.parse(text[0]!)).toMatchObject({ event: 'opened', seq: 1 });
    for (const line of text) {
      const { mac, ...rest } = JSON.parse(line) as Record<string, unknown>;
      expect(line).toBe(canonicalize({ ...rest, mac }));
      expect(mac).toBe(
        createHmac('sha256', macKey)
          .update(canonicalize([previous, rest])!, 'utf8')
          .digest('base64url'),
      );
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

describe('with a head store (the memory ledger, for the library)', () => {
  it('records the head after each line is on disk; verifyAuditTrail with it: closed is intact, a cut end is cut with the count of lines missing, another trail at the path is replaced, no head is unrecorded', async () => {
    const keys = await AuditKeys.fromSpecs([spec]);
    const ledger = new MemoryLedger();
    const path = join(R, 'trail.jsonl');
    const audit = await AuditLog.open({ path, keys, heads: ledger });
    cleanups.push(() => audit.close());
    expect(audit.headKey).toBe(path);
    // The opening line names the store's kind; its head is recorded before open() resolves.
    expect(lines()[0]).toMatchObject({ event: 'opened', heads: 'memory', trail: audit.trail.id });
    expect(await ledger.auditHead(path)).toEqual({ trail: audit.trail.id, seq: 1, mac: lines()[0]!['mac'] });
    const { factory } = await createDemoServer({ roots: [root], keys: await KeyRing.fromSpecs([spec]), audit });
    const c = await connect(factory);
    cleanups.push(() => c.close());
    const { state } = asked(await c.call('delete_file', { path: 'cache.txt' }));
    expect(
      await c.call('delete_file', { path: 'cache.txt' }, { inputResponses: ACCEPT, requestState: state }),
    ).toMatchObject({ kind: 'result', isError: false });
    await audit.close();
    const all = readFileSync(path);
    const head = await ledger.auditHead(path);
    expect(head).toEqual(audit.head);
    expect(head).toMatchObject({ seq: 5 });
    expect(verifyAuditTrail(all, keys, { head })).toMatchObject({
      status: 'intact',
      intact: true,
      lastSeq: 5,
      headSeq: 5,
    });
    const cut = Buffer.from(
      all
        .toString('utf8')
        .split('\n')
        .slice(0, 3)
        .map((l) => `${l}\n`)
        .join(''),
    );
    expect(verifyAuditTrail(cut, keys)).toMatchObject({ status: 'open', lastSeq: 3 });
    expect(verifyAuditTrail(cut, keys, { head })).toMatchObject({
      status: 'cut',
      intact: false,
      lastSeq: 3,
      headSeq: 5,
      missing: 2,
    });
    // Another trail (same keys) at this path: the store records this one.
    const other = await AuditLog.open({ path: join(R, 'other.jsonl'), keys });
    await other.close();
    expect(verifyAuditTrail(readFileSync(join(R, 'other.jsonl')), keys, { head })).toMatchObject({
      status: 'replaced',
      recorded: audit.trail.id,
      trail: { id: other.trail.id },
    });
    expect(verifyAuditTrail(all, keys, { head: null })).toMatchObject({
      status: 'unrecorded',
      trail: { id: audit.trail.id },
    });
  });
});

describe('a head store that fails', () => {
  it('never refuses a line: every decision is written, the failure is reported once per run of failures, and the head is recorded again once the store answers (control: the head then matches)', async () => {
    const keys = await AuditKeys.fromSpecs([spec]);
    const ledger = new MemoryLedger();
    let down = true;
    const flaky = {
      kind: 'flaky',
      recordAuditHead: (path: string, head: Parameters<MemoryLedger['recordAuditHead']>[1]) =>
        down ? Promise.reject(new Error('store down')) : ledger.recordAuditHead(path, head),
      auditHead: (path: string) => ledger.auditHead(path),
    };
    const errors: string[] = [];
    const path = join(R, 'trail.jsonl');
    const audit = await AuditLog.open({ path, keys, heads: flaky, onError: (e) => errors.push(e.message) });
    cleanups.push(() => audit.close());
    expect(lines()[0]).toMatchObject({ heads: 'flaky' });
    const { factory } = await createDemoServer({ roots: [root], keys: await KeyRing.fromSpecs([spec]), audit });
    const c = await connect(factory);
    cleanups.push(() => c.close());
    const { state } = asked(await c.call('delete_file', { path: 'cache.txt' }));
    expect(
      await c.call('delete_file', { path: 'cache.txt' }, { inputResponses: ACCEPT, requestState: state }),
    ).toMatchObject({ kind: 'result', isError: false });
    expect(lines().map((l) => l['event'])).toEqual(['opened', 'asked', 'confirmed', 'acted']);
    expect(errors.filter((m) => m.startsWith('cannot record its head in the store'))).toHaveLength(1);
    expect(await ledger.auditHead(path)).toBeUndefined();
    down = false;
    await audit.close();
    expect(errors.some((m) => m.startsWith('its head is recorded in the store again'))).toBe(true);
    expect(await ledger.auditHead(path)).toEqual(audit.head);
    expect(audit.head).toMatchObject({ seq: 5 });
  });
});
