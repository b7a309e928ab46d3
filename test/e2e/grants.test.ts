/**
 * Grants ("this call, or calls like it, for a while") and plans ("these exact calls, once each")
 * for `delete_file`, end to end: a real v2 `Client` pinned to 2026-07-28 (rounds driven by hand)
 * and the 2025-era v1 client, against `serveStdio` over the in-memory transport. Files are real;
 * directories are swapped for real. Cases grant-1, grant-2, grant-4 and plan-1 of
 * ../shared/cases, each attack with its control.
 */
import { existsSync, mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDemoServer } from '../../src/demo/deleteFile.js';
import { GRANT_OFFER_SCHEMA, CONFIRM_SCHEMA } from '../../src/guard/answer.js';
import type { ConfirmEvent } from '../../src/guard/confirmation.js';
import { KeyRing } from '../../src/state/keyRing.js';
import { MemoryLedger } from '../../src/store/memory.js';
import { SqliteLedger } from '../../src/store/sqlite.js';
import { ACCEPT, asked, connect, connectV1, type Connected, type Reply } from '../helpers/harness.js';

const GRANT_ACCEPT = { confirm: { action: 'accept', content: { confirmed: true, scope: 'grant' } } } as const;
const SAME_DIR = { arguments: { path: 'same-directory' as const }, maxUses: 20, maxSeconds: 900 };

let R: string;
let root: string;
const open: Connected[] = [];
const closers: Array<() => unknown> = [];

beforeEach(() => {
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-grants-')));
  root = join(R, 'root');
  mkdirSync(join(root, 'cache', 'sub'), { recursive: true });
  mkdirSync(join(root, 'docs'));
  for (let i = 0; i < 25; i++) writeFileSync(join(root, 'cache', `f${i}.tmp`), `cache ${i}`);
  writeFileSync(join(root, 'cache', 'sub', 'x'), 'sub');
  writeFileSync(join(root, 'thesis.txt'), 'thesis');
  writeFileSync(join(root, 'docs', 'x'), 'docs');
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
  for (const close of closers.splice(0).reverse()) await close();
  rmSync(R, { recursive: true, force: true });
});

async function serve(options: Parameters<typeof createDemoServer>[0] extends infer O ? Partial<O> : never = {}) {
  const events: ConfirmEvent[] = [];
  const store = options.store ?? new MemoryLedger();
  const built = await createDemoServer({ roots: [root], store, onEvent: (e) => events.push(e), ...options });
  const c = await connect(built.factory);
  open.push(c);
  return { ...built, c, store, events };
}

/**
 * Two serving processes' servers, each with `options`, on one SQLite ledger file (a connection each),
 * with one key ring (as from one --key-file): the principal `local` has the same tag in both, so
 * only the process binding keeps them apart.
 */
async function twoOnOneLedger(options: Parameters<typeof serve>[0]) {
  const file = join(R, 'ledger.db');
  const keys = await KeyRing.random();
  const storeA = await SqliteLedger.open({ path: file });
  const storeB = await SqliteLedger.open({ path: file });
  closers.push(
    () => storeA.close(),
    () => storeB.close(),
  );
  return {
    a: await serve({ ...options, keys, store: storeA }),
    b: await serve({ ...options, keys, store: storeB }),
  };
}

function schemaOf(reply: Reply): unknown {
  if (reply.kind !== 'input_required') throw new Error(`expected input_required, got ${JSON.stringify(reply)}`);
  const entry = reply.result.inputRequests?.confirm as { params?: { requestedSchema?: unknown } } | undefined;
  return entry?.params?.requestedSchema;
}

/** Asks, then answers with `answer`: the final reply. */
async function confirmWith(c: Connected, path: string, answer: unknown): Promise<Reply> {
  const first = asked(await c.call('delete_file', { path }));
  return c.call('delete_file', { path }, { requestState: first.state, inputResponses: answer });
}

function resultText(reply: Reply): string {
  if (reply.kind !== 'result') throw new Error(`expected a result, got ${JSON.stringify(reply)}`);
  return reply.text;
}

describe('grants for delete_file (form answers, 2026-07-28 client)', () => {
  it('without a grant configured, the question and its form are exactly as before (no offer, no scope field)', async () => {
    const { c } = await serve();
    const first = await c.call('delete_file', { path: 'cache/f0.tmp' });
    expect(asked(first).message).not.toContain('Or allow');
    expect(schemaOf(first)).toEqual(CONFIRM_SCHEMA);
    // A client that sends scope: grant anyway gets this call only.
    const done = await c.call(
      'delete_file',
      { path: 'cache/f0.tmp' },
      { requestState: asked(first).state, inputResponses: GRANT_ACCEPT },
    );
    expect(resultText(done)).toMatch(/^Deleted /);
    expect(resultText(done)).not.toContain('Granted');
    expect(asked(await c.call('delete_file', { path: 'cache/f1.tmp' })).message).toContain('Permanently delete');
    expect(existsSync(join(root, 'cache', 'f1.tmp'))).toBe(true);
  });

  it('deletes 20 cache files with one question under a same-directory grant, and asks for the 21st', async () => {
    const { c, events } = await serve({ grant: SAME_DIR });
    const first = await c.call('delete_file', { path: 'cache/f0.tmp' });
    const { message } = asked(first);
    expect(message).toContain('Or allow: delete any file directly in');
    expect(message).toContain('/cache/');
    expect(message).toContain('for 15 minutes, at most 20 files; each is still re-checked before it is deleted.');
    expect(schemaOf(first)).toEqual(GRANT_OFFER_SCHEMA);
    const granted = await c.call(
      'delete_file',
      { path: 'cache/f0.tmp' },
      { requestState: asked(first).state, inputResponses: GRANT_ACCEPT },
    );
    expect(resultText(granted)).toMatch(
      /Granted \(grant [A-Za-z0-9_-]{22}\): 19 more calls like this one need no question/,
    );
    expect(existsSync(join(root, 'cache', 'f0.tmp'))).toBe(false);
    for (let i = 1; i < 20; i++) {
      const reply = await c.call('delete_file', { path: `cache/f${i}.tmp` });
      expect(resultText(reply)).toContain(`Done under grant`);
      expect(resultText(reply)).toContain(i < 19 ? `${19 - i} more call` : 'no more calls: the grant is used up');
      expect(existsSync(join(root, 'cache', `f${i}.tmp`))).toBe(false);
    }
    // The 21st: the grant is used up, so it is asked, and nothing is deleted unasked.
    const twentyFirst = await c.call('delete_file', { path: 'cache/f20.tmp' });
    expect(asked(twentyFirst).message).toContain('Permanently delete');
    expect(existsSync(join(root, 'cache', 'f20.tmp'))).toBe(true);
    const kinds = events.map((e) => e.type);
    expect(kinds.filter((k) => k === 'asked')).toHaveLength(2);
    expect(kinds.filter((k) => k === 'granted')).toHaveLength(1);
    expect(kinds.filter((k) => k === 'acted-under-grant')).toHaveLength(19);
    expect(kinds.filter((k) => k === 'grant-exhausted')).toHaveLength(1);
  });

  it('a form answer without scope approves this call only (control: scope "grant" creates the grant)', async () => {
    const { c } = await serve({ grant: SAME_DIR });
    expect(resultText(await confirmWith(c, 'cache/f0.tmp', ACCEPT))).not.toContain('Granted');
    expect(asked(await c.call('delete_file', { path: 'cache/f1.tmp' })).message).toContain('Or allow');
    expect(existsSync(join(root, 'cache', 'f1.tmp'))).toBe(true);
    // Control.
    expect(resultText(await confirmWith(c, 'cache/f1.tmp', GRANT_ACCEPT))).toContain('Granted');
    expect(resultText(await c.call('delete_file', { path: 'cache/f2.tmp' }))).toContain('Done under grant');
  });

  it('grant-1: a path that climbs out, doubles a separator, adds "." or a level, or is absolute is asked (control: cache/f2.tmp runs under it)', async () => {
    const { c } = await serve({ grant: SAME_DIR });
    await confirmWith(c, 'cache/f0.tmp', GRANT_ACCEPT);
    writeFileSync(join(root, 'cache', 'x'), 'x');
    for (const path of [
      'cache/../thesis.txt',
      'cache/./x',
      'cache//x',
      'cache/sub/x',
      join(root, 'cache', 'f1.tmp'),
      join(root, 'docs', 'x'),
      'docs/x',
    ]) {
      const reply = await c.call('delete_file', { path });
      // Asked (or refused before asking): never done under the grant.
      if (reply.kind === 'result') expect(reply.isError, path).toBe(true);
      else expect(asked(reply).message, path).toContain('Permanently delete');
    }
    for (const f of ['thesis.txt', 'cache/x', 'cache/sub/x', 'cache/f1.tmp', 'docs/x'])
      expect(existsSync(join(root, f)), f).toBe(true);
    expect(resultText(await c.call('delete_file', { path: 'cache/f2.tmp' }))).toContain('Done under grant');
    expect(existsSync(join(root, 'cache', 'f2.tmp'))).toBe(false);
  });

  it('grant-2: a directory swapped for another of the same name is asked; nothing in the old one is touched (control: before the swap, it runs)', async () => {
    const { c } = await serve({ grant: SAME_DIR });
    await confirmWith(c, 'cache/f0.tmp', GRANT_ACCEPT);
    expect(resultText(await c.call('delete_file', { path: 'cache/f1.tmp' }))).toContain('Done under grant');
    renameSync(join(root, 'cache'), join(root, 'cache.old'));
    mkdirSync(join(root, 'cache'));
    writeFileSync(join(root, 'cache', 'f2.tmp'), 'new');
    expect(asked(await c.call('delete_file', { path: 'cache/f2.tmp' })).message).toContain('Permanently delete');
    expect(existsSync(join(root, 'cache', 'f2.tmp'))).toBe(true);
    expect(existsSync(join(root, 'cache.old', 'f2.tmp'))).toBe(true);
  });

  it('subtree grants reach below the directory, same-directory grants do not', async () => {
    const { c } = await serve({ grant: { arguments: { path: 'subtree' }, maxUses: 5, maxSeconds: 60 } });
    const first = await c.call('delete_file', { path: 'cache/f0.tmp' });
    expect(asked(first).message).toContain('or below it for 1 minute, at most 5 files');
    await c.call(
      'delete_file',
      { path: 'cache/f0.tmp' },
      { requestState: asked(first).state, inputResponses: GRANT_ACCEPT },
    );
    expect(resultText(await c.call('delete_file', { path: 'cache/sub/x' }))).toContain('Done under grant');
    expect(existsSync(join(root, 'cache', 'sub', 'x'))).toBe(false);
    // Outside the subtree: asked.
    expect(asked(await c.call('delete_file', { path: 'docs/x' })).message).toContain('Permanently delete');
  });

  it('grant-4: a grant with one use left and 16 concurrent calls: exactly one runs under it, 15 are asked', async () => {
    const { c } = await serve({ grant: { arguments: { path: 'same-directory' }, maxUses: 2, maxSeconds: 900 } });
    await confirmWith(c, 'cache/f0.tmp', GRANT_ACCEPT);
    const replies = await Promise.all(
      Array.from({ length: 16 }, (_, i) => c.call('delete_file', { path: `cache/f${i + 1}.tmp` })),
    );
    expect(replies.filter((r) => r.kind === 'result' && r.text.includes('Done under grant'))).toHaveLength(1);
    expect(replies.filter((r) => r.kind === 'input_required')).toHaveLength(15);
    const left = Array.from({ length: 16 }, (_, i) => existsSync(join(root, 'cache', `f${i + 1}.tmp`)));
    expect(left.filter((present) => !present)).toHaveLength(1);
  });

  it('an expired or revoked grant is not used (control: before expiry, it is)', async () => {
    let nowMs = Date.now();
    const { c, store } = await serve({ grant: { ...SAME_DIR, maxSeconds: 60 }, now: () => nowMs });
    await confirmWith(c, 'cache/f0.tmp', GRANT_ACCEPT);
    nowMs += 59_000;
    expect(resultText(await c.call('delete_file', { path: 'cache/f1.tmp' }))).toContain('Done under grant');
    nowMs += 1_000; // expiry is exclusive at its end
    expect(asked(await c.call('delete_file', { path: 'cache/f2.tmp' })).message).toContain('Permanently delete');
    expect(existsSync(join(root, 'cache', 'f2.tmp'))).toBe(true);
    // A new grant, revoked in the store: asked.
    await confirmWith(c, 'cache/f2.tmp', GRANT_ACCEPT);
    const [grant] = await store.findGrants({}, nowMs);
    expect(grant).toBeDefined();
    expect(await store.revokeGrant(grant!.id, nowMs)).toBe('revoked');
    expect(asked(await c.call('delete_file', { path: 'cache/f3.tmp' })).message).toContain('Permanently delete');
    expect(existsSync(join(root, 'cache', 'f3.tmp'))).toBe(true);
  });

  it('over stdio a grant serves only the serving process that gave it, even on a shared ledger (control: another connection of the same process uses it)', async () => {
    const { a, b } = await twoOnOneLedger({ grant: SAME_DIR });
    await confirmWith(a.c, 'cache/f0.tmp', GRANT_ACCEPT);
    expect(asked(await b.c.call('delete_file', { path: 'cache/f1.tmp' })).message).toContain('Permanently delete');
    expect(existsSync(join(root, 'cache', 'f1.tmp'))).toBe(true);
    // Control: a second connection to the first process's server.
    const { connect: again } = await import('../helpers/harness.js');
    const a2 = await again(a.factory);
    open.push(a2);
    expect(resultText(await a2.call('delete_file', { path: 'cache/f1.tmp' }))).toContain('Done under grant');
  });

  it('the 2025-era v1 client can take a grant through its elicitation form', async () => {
    const built = await createDemoServer({ roots: [root], store: new MemoryLedger(), grant: SAME_DIR });
    const v1 = await connectV1(built.factory, {
      answer: () => ({ action: 'accept', content: { confirmed: true, scope: 'grant' } }),
    });
    closers.push(() => v1.close());
    expect((await v1.callTool('delete_file', { path: 'cache/f0.tmp' })).text).toContain('Granted');
    expect(v1.asked).toHaveLength(1);
    expect((await v1.callTool('delete_file', { path: 'cache/f1.tmp' })).text).toContain('Done under grant');
    expect(v1.asked).toHaveLength(1);
    expect(existsSync(join(root, 'cache', 'f1.tmp'))).toBe(false);
  });
});

describe('plans for delete_file (confirm_plan)', () => {
  const plan = (paths: string[]) => ({ calls: paths.map((path) => ({ tool: 'delete_file', arguments: { path } })) });

  it('is listed only with plans on', async () => {
    const off = await serve();
    expect((await off.c.client.listTools()).tools.map((t) => t.name)).toEqual(['delete_file']);
    const on = await serve({ plans: true });
    expect((await on.c.client.listTools()).tools.map((t) => t.name).sort()).toEqual(['confirm_plan', 'delete_file']);
  });

  it('a plan of 5 deletions approved once: each runs once without a question, a sixth is asked, a used slot is asked again', async () => {
    const { c, events } = await serve({ plans: true });
    const paths = [0, 1, 2, 3, 4].map((i) => `cache/f${i}.tmp`);
    const first = asked(await c.call('confirm_plan', plan(paths)));
    expect(first.message).toMatch(/^Approve this plan of 5 calls\?/);
    for (const i of paths.keys()) expect(first.message).toContain(`${i + 1}. Permanently delete the file`);
    const approved = await c.call('confirm_plan', plan(paths), { requestState: first.state, inputResponses: ACCEPT });
    expect(resultText(approved)).toMatch(/^Plan [A-Za-z0-9_-]{22} approved: make each of its 5 calls once/);
    for (const p of paths) expect(existsSync(join(root, p))).toBe(true); // approving does nothing
    for (const [i, p] of paths.entries()) {
      const reply = await c.call('delete_file', { path: p });
      expect(resultText(reply)).toContain(`Done under plan`);
      expect(resultText(reply)).toContain(i < 4 ? `${4 - i} of its calls left` : 'none of its calls left');
      expect(existsSync(join(root, p))).toBe(false);
    }
    expect(asked(await c.call('delete_file', { path: 'cache/f5.tmp' })).message).toContain('Permanently delete');
    writeFileSync(join(root, 'cache', 'f0.tmp'), 'again');
    expect(asked(await c.call('delete_file', { path: 'cache/f0.tmp' })).message).toContain('Permanently delete');
    expect(events.filter((e) => e.type === 'acted-under-plan')).toHaveLength(5);
    expect(events.filter((e) => e.type === 'plan-approved')).toHaveLength(1);
  });

  it('a file changed between the plan and the call is refused, nothing deleted (control: an unchanged one runs)', async () => {
    const { c } = await serve({ plans: true });
    const paths = ['cache/f0.tmp', 'cache/f1.tmp'];
    const first = asked(await c.call('confirm_plan', plan(paths)));
    await c.call('confirm_plan', plan(paths), { requestState: first.state, inputResponses: ACCEPT });
    rmSync(join(root, 'cache', 'f0.tmp'));
    writeFileSync(join(root, 'cache', 'f0.tmp'), 'replaced with other content');
    const changed = await c.call('delete_file', { path: 'cache/f0.tmp' });
    expect(changed.kind === 'result' && changed.isError).toBe(true);
    expect(resultText(changed)).toMatch(/ERR_CONFIRM_(CHANGED|GONE)/);
    expect(existsSync(join(root, 'cache', 'f0.tmp'))).toBe(true);
    expect(resultText(await c.call('delete_file', { path: 'cache/f1.tmp' }))).toContain('Done under plan');
  });

  it('plan-1: a declined plan lets none of its calls run unasked; an approved one does not cover a fourth call', async () => {
    const { c } = await serve({ plans: true });
    const three = ['cache/f0.tmp', 'cache/f1.tmp', 'cache/f2.tmp'];
    const first = asked(await c.call('confirm_plan', plan(three)));
    const declined = await c.call('confirm_plan', plan(three), {
      requestState: first.state,
      inputResponses: { confirm: { action: 'decline' } },
    });
    expect(resultText(declined)).toContain('You declined; nothing was approved.');
    for (const p of three) {
      expect(asked(await c.call('delete_file', { path: p })).message).toContain('Permanently delete');
      expect(existsSync(join(root, p))).toBe(true);
    }
    const again = asked(await c.call('confirm_plan', plan(three)));
    await c.call('confirm_plan', plan(three), { requestState: again.state, inputResponses: ACCEPT });
    expect(asked(await c.call('delete_file', { path: 'cache/f3.tmp' })).message).toContain('Permanently delete');
    for (const p of three) expect(resultText(await c.call('delete_file', { path: p }))).toContain('Done under plan');
  });

  it('refuses a plan naming another tool, repeating a call, or with a call its checks refuse, naming the call (control: the fixed plan is asked)', async () => {
    const { c } = await serve({ plans: true });
    const refused = async (input: unknown, says: RegExp) => {
      const reply = await c.call('confirm_plan', input);
      expect(reply.kind === 'result' && reply.isError, JSON.stringify(input)).toBe(true);
      expect(resultText(reply)).toMatch(says);
      expect(resultText(reply)).toContain('[ERR_CONFIRM_PLAN]');
    };
    await refused(
      { calls: [{ tool: 'rm_rf', arguments: { path: 'x' } }] },
      /Call 1 names .*rm_rf.*not a tool this server confirms/,
    );
    await refused(plan(['cache/f0.tmp', 'cache/f0.tmp']), /Call 2 repeats call 1/);
    await refused(
      plan(['cache/f0.tmp', 'cache/nothing-here']),
      /Call 2 .*delete_file.* was refused: \[ERR_CONFIRM_GONE\]/,
    );
    await refused(
      { calls: [{ tool: 'delete_file', arguments: { path: 'cache/f0.tmp', extra: 1 } }] },
      /Call 1 .* has arguments its tool does not accept/,
    );
    await refused(plan(Array.from({ length: 11 }, (_, i) => `cache/f${i}.tmp`)), /at most 10 calls/);
    expect(asked(await c.call('confirm_plan', plan(['cache/f0.tmp', 'cache/f1.tmp']))).message).toContain('2 calls');
  });

  it('a plan serves only the principal and process that approved it: another process on a shared ledger is asked', async () => {
    const { a, b } = await twoOnOneLedger({ plans: true });
    const first = asked(await a.c.call('confirm_plan', plan(['cache/f0.tmp', 'cache/f1.tmp'])));
    await a.c.call('confirm_plan', plan(['cache/f0.tmp', 'cache/f1.tmp']), {
      requestState: first.state,
      inputResponses: ACCEPT,
    });
    expect(asked(await b.c.call('delete_file', { path: 'cache/f0.tmp' })).message).toContain('Permanently delete');
    expect(existsSync(join(root, 'cache', 'f0.tmp'))).toBe(true);
    expect(resultText(await a.c.call('delete_file', { path: 'cache/f0.tmp' }))).toContain('Done under plan');
  });
});
