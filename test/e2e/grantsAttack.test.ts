/**
 * Grants and plans, faults found by an attack pass (issue 18), end to end through a real v2
 * `Client` pinned to 2026-07-28 (rounds driven by hand) against `serveStdio` over the in-memory
 * transport, on real files:
 *
 * - F2: the bound on live grants and plans counts per principal and binding: two serving processes
 *   (both the principal `local` over stdio) on one SQLite ledger each get their whole bound.
 * - F3: a call that took a grant's use or a plan slot and was then refused by the re-check says
 *   that the use or slot is spent.
 * - F4: counts agree in number ("1 more call like this one needs", "no more calls", a plan of one).
 * - F5: a hard-linked file deleted under a grant or a plan slot (no question) says, in its result,
 *   that only this name was removed.
 *
 * Each attack has its control.
 */
import {
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDemoServer } from '../../src/demo/deleteFile.js';
import type { ConfirmEvent } from '../../src/guard/confirmation.js';
import { KeyRing } from '../../src/state/keyRing.js';
import { MemoryLedger } from '../../src/store/memory.js';
import { SqliteLedger } from '../../src/store/sqlite.js';
import { ACCEPT, asked, connect, type Connected, type Reply } from '../helpers/harness.js';

const GRANT_ACCEPT = { confirm: { action: 'accept', content: { confirmed: true, scope: 'grant' } } } as const;
const SAME_DIR = { arguments: { path: 'same-directory' as const }, maxUses: 20, maxSeconds: 900 };
const GRANTED_RE = /Granted \(grant ([A-Za-z0-9_-]{22})\)/;

let R: string;
let root: string;
const open: Connected[] = [];
const closers: Array<() => unknown> = [];

beforeEach(() => {
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-grants-attack-')));
  root = join(R, 'root');
  mkdirSync(join(root, 'cache'), { recursive: true });
  for (let i = 0; i < 10; i++) writeFileSync(join(root, 'cache', `f${i}.tmp`), `cache ${i}`);
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
  for (const close of closers.splice(0).reverse()) await close();
  rmSync(R, { recursive: true, force: true });
});

type ServeOptions = Partial<Parameters<typeof createDemoServer>[0]>;

/** A serving process's server (its own confirmation layer: its own process binding) and a client connected to it. */
async function serve(options: ServeOptions = {}) {
  const built = await createDemoServer({ roots: [root], store: new MemoryLedger(), ...options });
  const c = await connect(built.factory);
  open.push(c);
  return { ...built, c };
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

function refusalText(reply: Reply): string {
  if (reply.kind !== 'result' || !reply.isError) throw new Error(`expected a refusal, got ${JSON.stringify(reply)}`);
  return reply.text;
}

/**
 * Two serving processes of the same host set-up on one SQLite ledger file (bounds as given): one
 * key ring (as from one --key-file), so the principal `local` has one tag in both; each has its
 * own confirmation layer, so its own process binding.
 */
async function twoProcesses(
  bounds: { maxGrantsPerPrincipal?: number; maxPlansPerPrincipal?: number },
  options: ServeOptions,
) {
  const file = join(R, 'ledger.db');
  const keys = await KeyRing.random();
  const storeA = await SqliteLedger.open({ path: file, ...bounds });
  const storeB = await SqliteLedger.open({ path: file, ...bounds });
  closers.push(
    () => storeA.close(),
    () => storeB.close(),
  );
  return {
    a: await serve({ ...options, keys, store: storeA }),
    b: await serve({ ...options, keys, store: storeB }),
  };
}

const plan = (paths: string[]) => ({ calls: paths.map((path) => ({ tool: 'delete_file', arguments: { path } })) });

/** Approves a plan of `paths` in one question: its result text. */
async function approvePlan(c: Connected, paths: string[]): Promise<string> {
  const first = asked(await c.call('confirm_plan', plan(paths)));
  return resultText(await c.call('confirm_plan', plan(paths), { requestState: first.state, inputResponses: ACCEPT }));
}

describe('F2: the bound on live grants and plans counts per principal and binding', () => {
  it('two serving processes (both local over stdio) on one SQLite ledger with a bound of 1 each create their grant; a second grant in the same process is not created (control)', async () => {
    const { a, b } = await twoProcesses({ maxGrantsPerPrincipal: 1 }, { grant: SAME_DIR });
    expect(resultText(await confirmWith(a.c, 'cache/f0.tmp', GRANT_ACCEPT))).toMatch(GRANTED_RE);
    // B's host app is another process: A's grant does not fill B's bound.
    const byB = resultText(await confirmWith(b.c, 'cache/f1.tmp', GRANT_ACCEPT));
    expect(byB).toMatch(GRANTED_RE);
    expect(byB).not.toContain('No grant was created');
    expect(resultText(await b.c.call('delete_file', { path: 'cache/f2.tmp' }))).toContain('Done under grant');
    // Control: A's own bound is full; a grant offered and accepted there is "this call" only.
    mkdirSync(join(root, 'other'));
    writeFileSync(join(root, 'other', 'x.tmp'), 'x');
    const again = resultText(await confirmWith(a.c, 'other/x.tmp', GRANT_ACCEPT));
    expect(again).toContain('No grant was created');
    expect(existsSync(join(root, 'other', 'x.tmp'))).toBe(false);
  });

  it('two serving processes on one SQLite ledger with a bound of 1 plan each both have their plan stored; a second plan in the same process is refused (control)', async () => {
    const { a, b } = await twoProcesses({ maxPlansPerPrincipal: 1 }, { plans: true });
    expect(await approvePlan(a.c, ['cache/f0.tmp', 'cache/f1.tmp'])).toContain('approved');
    expect(await approvePlan(b.c, ['cache/f2.tmp', 'cache/f3.tmp'])).toContain('approved');
    expect(resultText(await b.c.call('delete_file', { path: 'cache/f2.tmp' }))).toContain('Done under plan');
    // Control: A's bound is full.
    const first = asked(await a.c.call('confirm_plan', plan(['cache/f4.tmp'])));
    const full = await a.c.call('confirm_plan', plan(['cache/f4.tmp']), {
      requestState: first.state,
      inputResponses: ACCEPT,
    });
    expect(refusalText(full)).toContain('ERR_CONFIRM_PLAN');
    // It says what the bound counts, not a default it may not have (this one is 1), and that nothing was stored.
    expect(refusalText(full)).toContain('counted per serving process over stdio');
    expect(refusalText(full)).toContain('this plan was not stored and nothing was done');
  });
});

describe('F3: a refusal after a grant use or a plan slot was taken says it is spent', () => {
  it('a file changed after the grant use was taken is refused and kept, and the refusal says the use was spent and what is left; control: the next call under the grant counts on from there', async () => {
    let changeOnUse: string | undefined;
    const onEvent = (e: ConfirmEvent): void => {
      // Right after the use is taken and its audit line written, before the action's re-check.
      if (e.type === 'acted-under-grant' && changeOnUse !== undefined) appendFileSync(changeOnUse, ' and more');
    };
    const { c } = await serve({ grant: SAME_DIR, onEvent });
    const id = GRANTED_RE.exec(resultText(await confirmWith(c, 'cache/f0.tmp', GRANT_ACCEPT)))![1]!;
    changeOnUse = join(root, 'cache', 'f1.tmp');
    const refused = refusalText(await c.call('delete_file', { path: 'cache/f1.tmp' }));
    expect(refused).toMatch(/^\[ERR_CONFIRM_(CHANGED|GONE)\]/);
    expect(refused).toContain(
      `This call used one use of grant ${id} although nothing was done: 18 more calls and 15 minutes left.`,
    );
    expect(readFileSync(changeOnUse, 'utf8')).toBe('cache 1 and more');
    changeOnUse = undefined;
    expect(resultText(await c.call('delete_file', { path: 'cache/f2.tmp' }))).toContain(
      `Done under grant ${id} (no question asked): 17 more calls and 15 minutes left.`,
    );
  });

  it('a planned file changed since the plan is refused and kept, and the refusal says its slot is used; control: the unchanged one runs under the plan, and the changed one is asked from then on', async () => {
    const { c } = await serve({ plans: true });
    const approved = await approvePlan(c, ['cache/f0.tmp', 'cache/f1.tmp']);
    const id = /Plan ([A-Za-z0-9_-]{22}) approved/.exec(approved)![1]!;
    writeFileSync(join(root, 'cache', 'f0.tmp'), 'replaced with other content');
    const refused = refusalText(await c.call('delete_file', { path: 'cache/f0.tmp' }));
    expect(refused).toMatch(/^\[ERR_CONFIRM_(CHANGED|GONE)\]/);
    expect(refused).toContain(
      `This call used its slot of plan ${id} although nothing was done: the slot cannot be used again, and the same call is asked from now on (1 of its calls left).`,
    );
    expect(existsSync(join(root, 'cache', 'f0.tmp'))).toBe(true);
    expect(resultText(await c.call('delete_file', { path: 'cache/f1.tmp' }))).toContain(
      `Done under plan ${id}, approved before (no question asked): none of its calls left.`,
    );
    expect(asked(await c.call('delete_file', { path: 'cache/f0.tmp' })).message).toContain('Permanently delete');
  });

  it('control: a refusal of a call that took no use (round 1 refuses a file that is gone) says nothing of a grant', async () => {
    const { c } = await serve({ grant: SAME_DIR });
    await confirmWith(c, 'cache/f0.tmp', GRANT_ACCEPT);
    const refused = refusalText(await c.call('delete_file', { path: 'cache/missing.tmp' }));
    expect(refused).not.toContain('grant');
    expect(resultText(await c.call('delete_file', { path: 'cache/f1.tmp' }))).toContain('18 more calls');
  });
});

describe('F4: counts agree in number', () => {
  it('a grant of 2 uses: "1 more call like this one needs no question", then "no more calls: the grant is used up"; the third call is asked', async () => {
    const { c } = await serve({ grant: { ...SAME_DIR, maxUses: 2 } });
    const granted = resultText(await confirmWith(c, 'cache/f0.tmp', GRANT_ACCEPT));
    const id = GRANTED_RE.exec(granted)![1]!;
    expect(granted).toContain(
      `Granted (grant ${id}): 1 more call like this one needs no question for 15 minutes; each is still checked before it runs.`,
    );
    expect(resultText(await c.call('delete_file', { path: 'cache/f1.tmp' }))).toContain(
      `Done under grant ${id} (no question asked): no more calls: the grant is used up.`,
    );
    expect(asked(await c.call('delete_file', { path: 'cache/f2.tmp' })).message).toContain('Permanently delete');
  });

  it('control: a grant of 3 uses says "2 more calls like this one need no question", then "1 more call and 15 minutes left"', async () => {
    const { c } = await serve({ grant: { ...SAME_DIR, maxUses: 3 } });
    const granted = resultText(await confirmWith(c, 'cache/f0.tmp', GRANT_ACCEPT));
    expect(granted).toContain('2 more calls like this one need no question for 15 minutes');
    expect(resultText(await c.call('delete_file', { path: 'cache/f1.tmp' }))).toContain(
      '(no question asked): 1 more call and 15 minutes left.',
    );
  });

  it('a plan of one call: "Approve this plan of 1 call?" and "make its one call once"; control: a plan of two says "each of its 2 calls"', async () => {
    const { c } = await serve({ plans: true });
    expect(asked(await c.call('confirm_plan', plan(['cache/f0.tmp']))).message).toContain(
      'Approve this plan of 1 call?',
    );
    expect(await approvePlan(c, ['cache/f0.tmp'])).toMatch(
      /^Plan [A-Za-z0-9_-]{22} approved: make its one call once, exactly as listed, within 5 minutes; it needs no other question\. Nothing was done yet\.$/,
    );
    expect(await approvePlan(c, ['cache/f1.tmp', 'cache/f2.tmp'])).toContain('make each of its 2 calls once');
  });
});

describe('F5: a hard-linked file deleted with no question says only this name was removed', () => {
  it('under a grant, the result says the file had 2 names and only this one was removed; the other name keeps the content (control: a file with one name says nothing of names)', async () => {
    const { c } = await serve({ grant: SAME_DIR });
    await confirmWith(c, 'cache/f0.tmp', GRANT_ACCEPT);
    const other = join(R, 'keep.tmp');
    linkSync(join(root, 'cache', 'f1.tmp'), other);
    const linked = resultText(await c.call('delete_file', { path: 'cache/f1.tmp' }));
    expect(linked).toContain('Done under grant');
    expect(linked).toContain(
      'It had 2 names (hard links): only this name was removed; its content stays under the other name.',
    );
    expect(existsSync(join(root, 'cache', 'f1.tmp'))).toBe(false);
    expect(readFileSync(other, 'utf8')).toBe('cache 1');
    const single = resultText(await c.call('delete_file', { path: 'cache/f2.tmp' }));
    expect(single).toContain('Done under grant');
    expect(single).not.toMatch(/names|hard link/);
  });

  it('under a plan slot, a file with 3 names says so: "the 2 other names"', async () => {
    const { c } = await serve({ plans: true });
    linkSync(join(root, 'cache', 'f3.tmp'), join(R, 'a.tmp'));
    linkSync(join(root, 'cache', 'f3.tmp'), join(R, 'b.tmp'));
    await approvePlan(c, ['cache/f3.tmp']);
    const text = resultText(await c.call('delete_file', { path: 'cache/f3.tmp' }));
    expect(text).toContain('Done under plan');
    expect(text).toContain(
      'It had 3 names (hard links): only this name was removed; its content stays under the 2 other names.',
    );
    expect(readFileSync(join(R, 'a.tmp'), 'utf8')).toBe('cache 3');
  });
});
