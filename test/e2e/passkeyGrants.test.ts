/**
 * Grants with passkey approval, end to end: the built CLI over stdio (`--approval passkey
 * --grants same-directory`), a real v2 MCP Client pinned to 2026-07-28, and real headless
 * Chromium with a WebAuthn virtual authenticator. The page offers "Approve this call" and
 * "Approve and allow similar calls" only when a grant is offered; only its button creates the
 * grant (case grant-5 of ../shared/cases: a client's `scope: grant` is ignored); the page of the
 * call that created a grant revokes it. Every attack has its control.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess, until } from '../helpers/processes.js';
import { callTool, type Reply } from '../helpers/harness.js';
import {
  assertionIn,
  launchBrowser,
  newAuthPage,
  outcomeOf,
  postJson,
  type AuthPage,
  type Browser,
} from '../helpers/browser.js';
import { MAIN } from '../helpers/httpServer.js';
import {
  enrolOnPage,
  FORM_ACCEPT,
  pageElicitation as elicitation,
  startEnrol,
  startPasskeyStdio,
  URL_ACCEPT,
  URL_RE,
  type PasskeyStdioServer as Served,
} from '../helpers/passkeyCli.js';

const DOCS = resolve(import.meta.dirname, '../../docs');
const FORM_ACCEPT_GRANT = { confirm: { action: 'accept', content: { confirmed: true, scope: 'grant' } } };

let dir: string;
let root: string;
let approversPath: string;
let keyFile: string;
let browser: Browser;
let ann: AuthPage;
const children: ChildProcess[] = [];
const clients: Client[] = [];

/** The CLI over stdio with passkey approval (and `--grants same-directory` unless `grants: false`; `--plans` with `plans`). */
function startServer(
  options: { grants?: boolean; plans?: boolean; mode?: 'url' | 'form'; audit?: string } = {},
): Promise<Served> {
  return startPasskeyStdio(
    {
      name: 'passkey-grants-test',
      root,
      approvers: approversPath,
      ...(options.mode === undefined ? {} : { mode: options.mode }),
      extra: [
        ...(options.grants === false ? [] : ['--grants', 'same-directory']),
        ...(options.plans === true ? ['--plans'] : []),
        ...(options.audit === undefined ? [] : ['--key-file', keyFile, '--audit', options.audit]),
      ],
    },
    clients,
  );
}

function text(reply: Reply): string {
  if (reply.kind !== 'result') throw new Error(`expected a result, got ${JSON.stringify(reply)}`);
  return reply.text;
}

function cacheFile(name: string): string {
  const p = join(root, 'cache', name);
  writeFileSync(p, 'cache\n');
  return p;
}

/** The texts of the page's buttons, in order. */
async function buttons(page: AuthPage): Promise<string[]> {
  return (await page.page.locator('button').allTextContents()).map((t) => t.trim());
}

/** How many times the page in ann's tab shows a grant offer ("Or allow:"), in its visible text. */
async function offersShown(): Promise<number> {
  return (await ann.page.locator('body').innerText()).split('Or allow:').length - 1;
}

/** Opens the approval page and clicks `button` (`#approve` or `#approve-grant`); the page's outcome. */
async function approveOnPage(url: string, button: '#approve' | '#approve-grant'): Promise<string> {
  await ann.page.goto(url);
  await ann.page.click(button);
  return outcomeOf(ann.page);
}

/** Asks, approves on the page with `button`, retries with `answer`: the final reply. */
async function approved(
  s: Served,
  path: string,
  button: '#approve' | '#approve-grant',
  answer: unknown = URL_ACCEPT,
): Promise<{ reply: Reply; url: string }> {
  const e = elicitation(await s.call(path));
  expect(await approveOnPage(e.url, button)).toContain('approved by ann');
  return { reply: await s.call(path, { inputResponses: answer, requestState: e.state }), url: e.url };
}

beforeAll(async () => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-passkey-grants-')));
  root = join(dir, 'root');
  mkdirSync(join(root, 'cache'), { recursive: true });
  mkdirSync(join(dir, 'log'));
  approversPath = join(dir, 'approvers.json');
  keyFile = join(dir, 'keys.json');
  writeFileSync(keyFile, (await runProcess(process.execPath, [MAIN, 'keygen', '--kid', 'k1'])).stdout);
  browser = await launchBrowser();
  ann = await newAuthPage(browser);
  // Enrol ann's passkey with the CLI's enrolment page.
  await enrolOnPage(ann, await startEnrol(['--approvers', approversPath, '--name', 'ann'], children));
}, 180_000);

afterAll(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => {})));
  for (const c of children) if (c.exitCode === null) c.kill();
  await browser?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('grants with passkey approval (real Chromium, real CLI)', { timeout: 180_000 }, () => {
  it('without a grant configured, the question has no offer and the page is as before: one "Approve with passkey" button and Deny', async () => {
    const s = await startServer({ grants: false });
    cacheFile('plain.tmp');
    const e = elicitation(await s.call('cache/plain.tmp'));
    expect(e.message).not.toContain('Or allow');
    await ann.page.goto(e.url);
    expect(await buttons(ann)).toEqual(['Approve with passkey', 'Deny']);
    expect(await ann.page.locator('#approve-grant, #grant, .grant-offer').count()).toBe(0);
    expect(await ann.page.locator('.note').textContent()).toBe(
      'Approving asks your passkey (with user verification). The tool call then runs once, when the client retries it.',
    );
    await ann.page.click('#deny');
    expect(await outcomeOf(ann.page)).toContain('denied');
  });

  it('with a grant offered, the question carries the offer and the page shows two approve buttons, the offer whole and once (beside its button, not in the question too); "Approve and allow similar calls" creates the grant, and later calls run under it without visiting the page', async () => {
    const s = await startServer();
    const first = cacheFile('g0.tmp');
    const e = elicitation(await s.call('cache/g0.tmp'));
    expect(e.message).toContain('Or allow: delete any file directly in');
    expect(e.message).toContain('for 15 minutes, at most 20 files; each is still re-checked before it is deleted.');
    await ann.page.goto(e.url);
    expect(await buttons(ann)).toEqual(['Approve this call', 'Deny', 'Approve and allow similar calls']);
    // The offer's line, whole, as the question carries it (code spans shown as code, not as backticks).
    const offerLine = e.message.slice(e.message.indexOf('Or allow:')).split('\n')[0]!;
    expect(await ann.page.locator('#grant').textContent()).toBe(offerLine.replaceAll('`', ''));
    // The offer is shown once, beside its button: the question above shows what was asked before it
    // (what the client was asked, and what is sealed and bound, still carry the offer: see e.message).
    const asked = e.message.slice(0, e.message.indexOf('\n\nOr allow:'));
    expect(await ann.page.locator('#question').textContent()).toBe(asked.replaceAll('`', ''));
    expect(await ann.page.locator('#question').innerText()).toMatch(/This cannot be undone\.$/);
    expect(await offersShown()).toBe(1);
    mkdirSync(DOCS, { recursive: true });
    await ann.page.screenshot({ path: join(DOCS, 'approval-page-grant.png'), fullPage: true });
    await ann.page.click('#approve-grant');
    expect(await outcomeOf(ann.page)).toContain('approved by ann, with similar calls');
    expect(existsSync(first)).toBe(true); // the page only records
    const done = await s.call('cache/g0.tmp', { inputResponses: URL_ACCEPT, requestState: e.state });
    const granted = /Granted \(grant ([A-Za-z0-9_-]{22})\): 19 more calls like this one need no question/.exec(
      text(done),
    );
    expect(granted).not.toBeNull();
    expect(existsSync(first)).toBe(false);
    // Later calls in the directory: no question, no page.
    for (let i = 1; i <= 3; i++) {
      const target = cacheFile(`g${i}.tmp`);
      const reply = await s.call(`cache/g${i}.tmp`);
      expect(text(reply)).toContain(`Done under grant ${granted![1]}`);
      expect(existsSync(target)).toBe(false);
    }
    // Control: a file outside the granted directory is still asked.
    writeFileSync(join(root, 'outside.txt'), 'x');
    expect(elicitation(await s.call('outside.txt')).url).toMatch(URL_RE);
    expect(existsSync(join(root, 'outside.txt'))).toBe(true);
    // The page of the approving call now shows the grant with its Revoke button.
    await ann.page.goto(e.url);
    expect(await ann.page.locator('#grant-id').textContent()).toBe(granted![1]);
    expect(await ann.page.locator('#granted #grant').textContent()).toBe(offerLine.replaceAll('`', ''));
    expect(await ann.page.locator('#question').textContent()).toBe(asked.replaceAll('`', ''));
    expect(await offersShown()).toBe(1);
    expect(await buttons(ann)).toEqual(['Revoke']);
    await ann.page.screenshot({ path: join(DOCS, 'approval-page-granted.png'), fullPage: true });
    await until(() => s.stderr().includes('approval page: approved by ann, with similar calls'));
  });

  it('a plan with passkey approval: its page is titled "Approve this plan?" and lists every call; approved there, each call then runs once without a question (control: one call\'s page is titled "Approve this tool call?")', async () => {
    const s = await startServer({ grants: false, plans: true });
    const files = ['plan0.tmp', 'plan1.tmp'].map(cacheFile);
    const calls = {
      calls: ['cache/plan0.tmp', 'cache/plan1.tmp'].map((path) => ({ tool: 'delete_file', arguments: { path } })),
    };
    const plan = (extra: { inputResponses?: unknown; requestState?: unknown } = {}): Promise<Reply> =>
      callTool(s.client, { name: 'confirm_plan', arguments: calls, ...extra });
    const e = elicitation(await plan());
    expect(e.message).toContain('Approve this plan of 2 calls?');
    await ann.page.goto(e.url);
    expect(await ann.page.locator('h1').textContent()).toBe('Approve this plan?');
    expect(await ann.page.title()).toContain('Approve a plan');
    expect(await ann.page.locator('#question').textContent()).toContain('2. Permanently delete the file');
    expect(await ann.page.locator('.note').textContent()).toBe(
      'Approving asks your passkey (with user verification). The plan is stored, when the client retries it; approving runs nothing itself, and each call listed may then be made once, exactly as listed, without another question.',
    );
    mkdirSync(DOCS, { recursive: true });
    await ann.page.screenshot({ path: join(DOCS, 'approval-page-plan.png'), fullPage: true });
    await ann.page.click('#approve');
    expect(await outcomeOf(ann.page)).toContain('approved by ann');
    expect(text(await plan({ inputResponses: URL_ACCEPT, requestState: e.state }))).toContain(
      'approved: make each of its 2 calls once, exactly as listed',
    );
    for (const [i, file] of files.entries()) {
      expect(text(await s.call(`cache/plan${i}.tmp`))).toContain('Done under plan');
      expect(existsSync(file)).toBe(false);
    }
    // Control: the page of one call keeps its title.
    cacheFile('single.tmp');
    const one = elicitation(await s.call('cache/single.tmp'));
    await ann.page.goto(one.url);
    expect(await ann.page.locator('h1').textContent()).toBe('Approve this tool call?');
    expect(await ann.page.title()).toContain('Approve a tool call');
    await ann.page.click('#deny');
    expect(await outcomeOf(ann.page)).toContain('denied');
  });

  it('attack: an assertion POSTed with scope "grant" to a page that offers no grant approves this call only, and a scope the page did not offer never creates one; control: the same POST on a page with an offer creates the grant', async () => {
    const origin = (url: string): string => new URL(url).origin;
    const scripted = async (url: string): Promise<void> => {
      await ann.page.goto(url);
      const options = JSON.parse((await postJson(`${url}/options`, {}, origin(url))).body) as { options: unknown };
      const assertion = await assertionIn(ann.page, options.options);
      const r = await postJson(`${url}/assertion`, { ...assertion, scope: 'grant' }, origin(url));
      expect(r.status).toBe(200);
    };
    const plain = await startServer({ grants: false });
    const target = cacheFile('s0.tmp');
    const e = elicitation(await plain.call('cache/s0.tmp'));
    await scripted(e.url);
    const done = await plain.call('cache/s0.tmp', { inputResponses: URL_ACCEPT, requestState: e.state });
    expect(text(done)).toMatch(/^Deleted /);
    expect(text(done)).not.toContain('Granted');
    expect(existsSync(target)).toBe(false);
    const next = cacheFile('s1.tmp');
    expect(elicitation(await plain.call('cache/s1.tmp')).url).toMatch(URL_RE);
    expect(existsSync(next)).toBe(true);
    // Control: with an offer, the same scripted POST from the page's origin is the second button.
    const offering = await startServer();
    const f = elicitation(await offering.call('cache/s1.tmp'));
    await scripted(f.url);
    const granted = await offering.call('cache/s1.tmp', { inputResponses: URL_ACCEPT, requestState: f.state });
    expect(text(granted)).toContain('Granted (grant ');
  });

  it('"Approve this call" with a grant offered deletes this file only: no grant, the next call is asked', async () => {
    const s = await startServer();
    const target = cacheFile('c0.tmp');
    const { reply, url } = await approved(s, 'cache/c0.tmp', '#approve');
    expect(text(reply)).toMatch(/^Deleted /);
    expect(text(reply)).not.toContain('Granted');
    expect(existsSync(target)).toBe(false);
    const next = cacheFile('c1.tmp');
    expect(elicitation(await s.call('cache/c1.tmp')).message).toContain('Or allow');
    expect(existsSync(next)).toBe(true);
    // Its page shows no grant and no Revoke button; the question as it was asked, its offer once.
    await ann.page.goto(url);
    expect(await ann.page.locator('#revoke, #granted').count()).toBe(0);
    expect(await ann.page.locator('#question').innerText()).toContain('This cannot be undone.\n\nOr allow:');
    expect(await offersShown()).toBe(1);
  });

  it('grant-5: the page approves "this call" while the client answers scope "grant": no grant is created (control: the page\'s second button creates it, whatever the client answers)', async () => {
    const s = await startServer({ mode: 'form' });
    const target = cacheFile('w0.tmp');
    const { reply } = await approved(s, 'cache/w0.tmp', '#approve', FORM_ACCEPT_GRANT);
    expect(text(reply)).toMatch(/^Deleted /);
    expect(text(reply)).not.toContain('Granted');
    expect(existsSync(target)).toBe(false);
    const asked = cacheFile('w1.tmp');
    expect(elicitation(await s.call('cache/w1.tmp')).message).toContain('Or allow');
    expect(existsSync(asked)).toBe(true);
    // Control: the page's second button, and a client answer without any scope.
    const { reply: granted } = await approved(s, 'cache/w1.tmp', '#approve-grant', FORM_ACCEPT);
    expect(text(granted)).toContain('Granted (grant ');
    const under = cacheFile('w2.tmp');
    expect(text(await s.call('cache/w2.tmp'))).toContain('Done under grant');
    expect(existsSync(under)).toBe(false);
  });

  it('Revoke on the page of the approving call ends the grant: the next call is asked, and the trail has its grant-revoked line (attack: a Revoke from another origin or none is refused, the grant still used)', async () => {
    const trailBase = join(dir, 'log', 'trail');
    const s = await startServer({ audit: trailBase });
    cacheFile('r0.tmp');
    const { reply, url } = await approved(s, 'cache/r0.tmp', '#approve-grant');
    const id = /Granted \(grant ([A-Za-z0-9_-]{22})\)/.exec(text(reply))?.[1];
    expect(id).toBeDefined();
    // Attack: a Revoke without the page's Origin, or from another origin, is refused and revokes nothing.
    for (const origin of [undefined, 'http://localhost:1', 'null']) {
      const r = await postJson(`${url}/revoke`, {}, origin);
      expect(r.status).toBe(403);
    }
    const still = cacheFile('r1.tmp');
    expect(text(await s.call('cache/r1.tmp'))).toContain(`Done under grant ${id}`);
    expect(existsSync(still)).toBe(false);
    // The page's own Revoke button.
    await ann.page.goto(url);
    await ann.page.click('#revoke');
    const revokeOutcome = ann.page.locator('#revoke-outcome');
    await revokeOutcome.filter({ hasText: /\S/ }).waitFor();
    expect(await revokeOutcome.textContent()).toBe(
      `revoked: grant ${id} revoked: later calls like this one are asked again`,
    );
    const after = cacheFile('r2.tmp');
    expect(elicitation(await s.call('cache/r2.tmp')).message).toContain('Permanently delete');
    expect(existsSync(after)).toBe(true);
    // A second Revoke finds it ended.
    const again = await postJson(`${url}/revoke`, {}, new URL(url).origin);
    expect(again.status).toBe(409);
    expect(JSON.parse(again.body)).toMatchObject({ outcome: 'ended' });
    await until(() => s.stderr().includes(`approval page: grant ${id} revoked`));
    const trail = readdirSync(join(dir, 'log')).find((f) => f.startsWith('trail.'));
    const lines = readFileSync(join(dir, 'log', trail!), 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const events = lines.map((l) => l['event']);
    expect(events.filter((e) => e === 'granted')).toHaveLength(1);
    const revoked = lines.filter((l) => l['event'] === 'grant-revoked');
    expect(revoked).toHaveLength(1);
    expect(revoked[0]).toMatchObject({ tool: 'delete_file', grant: id, approver: null });
    expect(revoked[0]!['jti']).toBe(lines.find((l) => l['event'] === 'granted')!['jti']);
  });
});
