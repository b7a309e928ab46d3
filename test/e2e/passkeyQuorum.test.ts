/**
 * Quorum (issue 19 part 3): `--approvers-required N` and the proxy policy's `quorum`, end to end:
 * the built CLI as real subprocesses (enrolment, the stdio server, the proxy in front of the
 * fixture upstream), a real v2 MCP Client pinned to 2026-07-28 declaring URL-mode elicitation, and
 * real headless Chromium with one WebAuthn virtual authenticator (CDP) per approver. Every attack
 * has its control.
 *
 * ann and bob are enrolled each into an empty file, then put together in one approvers file (the
 * way a team enrols its first approvers together); enrolment with a quorum is tested on its own.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
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
import { createInterface } from 'node:readline';
import { Client, type InputRequiredResult } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InPlaceStdioTransport, runProcess, stderrSays, until } from '../helpers/processes.js';
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
import { upstreamCalls } from '../helpers/upstreamCalls.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');
const FIXTURE = resolve(import.meta.dirname, 'fixtures/upstream.mjs');
const DOCS = resolve(import.meta.dirname, '../../docs');
const URL_ACCEPT = { confirm: { action: 'accept' } };

let dir: string;
let root: string;
let approversPath: string;
let keyFile: string;
let browser: Browser;
let ann: AuthPage;
let bob: AuthPage;
let eve: AuthPage;
const children: ChildProcess[] = [];
const clients: Client[] = [];

interface Enrolment {
  url: string;
  exit: Promise<{ code: number | null; stderr: string }>;
}

/** Starts `mcp-confirm approvers enroll`; resolves with the first stdout line (the URL). */
function startEnrol(args: string[]): Promise<Enrolment> {
  const child = spawn(process.execPath, [MAIN, 'approvers', 'enroll', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const exit = new Promise<{ code: number | null; stderr: string }>((res) =>
    child.once('exit', (code) => res({ code, stderr })),
  );
  return new Promise((res, rej) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', (url) => res({ url, exit }));
    void exit.then((e) => rej(new Error(`enrol exited ${e.code} before printing a URL: ${e.stderr}`)));
  });
}

/** Enrols `page`'s authenticator as `name` into a file of its own (empty before), and returns that file's approver. */
async function enrolAlone(page: AuthPage, name: string): Promise<Record<string, unknown>> {
  const path = join(dir, `alone-${name}.json`);
  const e = await startEnrol(['--approvers', path, '--name', name]);
  await open(page, e.url);
  await page.page.click('#enroll');
  expect(await outcomeOf(page.page)).toContain('enrolled');
  expect((await e.exit).code).toBe(0);
  return (JSON.parse(readFileSync(path, 'utf8')) as { approvers: Array<Record<string, unknown>> }).approvers[0]!;
}

function writeApprovers(path: string, approvers: unknown[], extra: Record<string, unknown> = {}): void {
  writeFileSync(path, JSON.stringify({ version: 1, rpId: 'localhost', approvers, ...extra }, null, 2));
  chmodSync(path, 0o600);
}

interface Served {
  client: Client;
  stderr: () => string;
  call(path: string, extra?: { inputResponses?: unknown; requestState?: unknown }): Promise<Reply>;
}

/** The CLI server over stdio with --approval passkey --approvers-required N (no wait for the page). */
async function startServer(required: number, audit?: string): Promise<Served> {
  const transport = new InPlaceStdioTransport({
    command: process.execPath,
    args: [
      MAIN,
      '--root',
      root,
      '--approval',
      'passkey',
      '--approvers',
      approversPath,
      '--approval-wait',
      '0',
      '--approvers-required',
      String(required),
      ...(audit === undefined ? [] : ['--key-file', keyFile, '--audit', audit]),
    ],
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (c: Buffer) => (err += c.toString('utf8')));
  const client = new Client(
    { name: 'quorum-test', version: '0.0.0' },
    {
      capabilities: { elicitation: { url: {} } },
      versionNegotiation: { mode: { pin: '2026-07-28' } },
      inputRequired: { autoFulfill: false },
    },
  );
  await client.connect(transport);
  clients.push(client);
  return {
    client,
    stderr: () => err,
    call: (path, extra = {}) => callTool(client, { name: 'delete_file', arguments: { path }, ...extra }),
  };
}

/** Round 1's URL-mode elicitation: the page URL and the state. */
function elicitation(reply: Reply): { url: string; state: string } {
  if (reply.kind !== 'input_required' || reply.state === undefined)
    throw new Error(`expected input_required, got ${JSON.stringify(reply).slice(0, 400)}`);
  const entry = (reply.result as InputRequiredResult).inputRequests?.confirm as { params: { url?: string } };
  if (entry.params.url === undefined) throw new Error(`no URL in ${JSON.stringify(reply).slice(0, 400)}`);
  return { url: entry.params.url, state: reply.state };
}

function file(name: string): string {
  const p = join(root, name);
  writeFileSync(p, 'data\n');
  return p;
}

/** Opens `url` in `page`, brought to the front: WebAuthn answers only a focused document (each approver has their own tab and authenticator). */
async function open(page: AuthPage, url: string): Promise<void> {
  await page.page.bringToFront();
  await page.page.goto(url);
}

/** Presses a button of the approval page with `page`'s authenticator; the outcome line. */
async function press(page: AuthPage, url: string, button: '#approve' | '#deny'): Promise<string> {
  await open(page, url);
  await page.page.click(button);
  return outcomeOf(page.page);
}

/** The retry of round 2 with the client's accept (URL mode) and the round's state. */
function retry(s: Served, path: string, e: { state: string }): Promise<Reply> {
  return s.call(path, { inputResponses: URL_ACCEPT, requestState: e.state });
}

function textOf(reply: Reply): string {
  if (reply.kind !== 'result') throw new Error(`expected a result, got ${JSON.stringify(reply).slice(0, 400)}`);
  return reply.text;
}

beforeAll(async () => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-quorum-')));
  root = join(dir, 'root');
  mkdirSync(root);
  approversPath = join(dir, 'approvers.json');
  keyFile = join(dir, 'keys.json');
  writeFileSync(keyFile, (await runProcess(process.execPath, [MAIN, 'keygen', '--kid', 'k1'])).stdout);
  browser = await launchBrowser();
  ann = await newAuthPage(browser);
  bob = await newAuthPage(browser);
  eve = await newAuthPage(browser);
  const a = await enrolAlone(ann, 'ann');
  const b = await enrolAlone(bob, 'bob');
  // eve is an approver only in her own file: a real passkey for this RP ID, but not one of this server's approvers.
  await enrolAlone(eve, 'eve');
  writeApprovers(approversPath, [a, b]);
}, 240_000);

afterAll(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => {})));
  for (const c of children) if (c.exitCode === null) c.kill();
  await browser?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe(
  'quorum: --approvers-required 2 over stdio (real Chromium, two virtual authenticators, real CLI)',
  { timeout: 240_000 },
  () => {
    it('two distinct approvers approve: the page shows 1 of 2 approvals in between, the file is deleted once, the replay is refused, and the confirmed line names both', async () => {
      mkdirSync(join(dir, 'log'));
      const trail = join(dir, 'log', 'trail');
      const s = await startServer(2, trail);
      const target = file('two.txt');
      const e = elicitation(await s.call('two.txt'));
      expect(await press(ann, e.url, '#approve')).toBe(
        'counted: 1 of 2 approvals (by ann): the call waits for 1 more approver, each with their own passkey',
      );
      // Waiting: the retry is asked again with the same page, nothing done.
      expect(elicitation(await retry(s, 'two.txt', e)).url).toBe(e.url);
      expect(existsSync(target)).toBe(true);
      // The page, reloaded, says where the quorum stands.
      await open(ann, e.url);
      expect(await ann.page.locator('#quorum-count').textContent()).toBe('1 of 2 approvals');
      expect(await ann.page.locator('#quorum').textContent()).toContain('(by ann)');
      await ann.page.screenshot({ path: join(DOCS, 'approval-page-quorum.png'), fullPage: true });
      expect(await press(bob, e.url, '#approve')).toBe(
        'approved: 2 of 2 approvals: approved by ann, bob; the tool call runs once when the client retries it',
      );
      expect(textOf(await retry(s, 'two.txt', e))).toMatch(/^Deleted /);
      expect(existsSync(target)).toBe(false);
      // The replay: spent.
      expect(textOf(await retry(s, 'two.txt', e))).toMatch(/^\[ERR_CONFIRM_SPENT\]/);
      await until(() => s.stderr().includes('approved by ann, bob'));
      const name = readdirSync(join(dir, 'log')).find((f) => f.startsWith('trail.'))!;
      // The server ends with its client (end of input), closing the trail with its last line.
      await s.client.close();
      await until(() => readFileSync(join(dir, 'log', name), 'utf8').includes('"event":"closed"'));
      const lines = readFileSync(join(dir, 'log', name), 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const confirmed = lines.filter((l) => l['event'] === 'confirmed');
      expect(confirmed).toHaveLength(1);
      expect(confirmed[0]).toMatchObject({ approver: 'ann, bob', approvers: ['ann', 'bob'], outcome: 'accept' });
      expect(lines.filter((l) => l['event'] === 'acted')).toHaveLength(1);
      const verify = await runProcess(process.execPath, [
        MAIN,
        'audit',
        'verify',
        join(dir, 'log', name),
        '--key-file',
        keyFile,
      ]);
      expect(verify.status).toBe(0);
    });

    it('attack: one approver approving twice is counted once and the call still waits; control: a second distinct approver completes it', async () => {
      const s = await startServer(2);
      const target = file('twice.txt');
      const e = elicitation(await s.call('twice.txt'));
      expect(await press(ann, e.url, '#approve')).toContain('counted: 1 of 2 approvals (by ann)');
      expect(await press(ann, e.url, '#approve')).toBe(
        'refused: ann has already approved this call: another approver must approve it with their own passkey; nothing was approved',
      );
      await open(ann, e.url);
      expect(await ann.page.locator('#quorum-count').textContent()).toBe('1 of 2 approvals');
      expect(elicitation(await retry(s, 'twice.txt', e)).url).toBe(e.url);
      expect(existsSync(target)).toBe(true);
      // Control.
      expect(await press(bob, e.url, '#approve')).toContain('approved: 2 of 2 approvals: approved by ann, bob');
      expect(textOf(await retry(s, 'twice.txt', e))).toMatch(/^Deleted /);
      expect(existsSync(target)).toBe(false);
    });

    it('attack: one approves and the other denies: nothing is done, and a later approval changes nothing; control: the same call asked anew can be approved', async () => {
      const s = await startServer(2);
      const target = file('deny.txt');
      const e = elicitation(await s.call('deny.txt'));
      expect(await press(ann, e.url, '#approve')).toContain('counted');
      expect(await press(bob, e.url, '#deny')).toBe('denied: nothing will be done');
      const after = await retry(s, 'deny.txt', e);
      expect(after).toMatchObject({ kind: 'result', isError: false, text: 'You declined; nothing was deleted.' });
      expect(existsSync(target)).toBe(true);
      // The page is decided: a later approval is refused.
      await open(bob, e.url);
      expect(await bob.page.locator('#approve').count()).toBe(0);
      const late = await postJson(`${e.url}/options`, {}, new URL(e.url).origin);
      expect(late.status).toBe(409);
      // Control: asked anew, both approve, deleted.
      const again = elicitation(await s.call('deny.txt'));
      expect(again.url).not.toBe(e.url);
      await press(bob, again.url, '#approve');
      await press(ann, again.url, '#approve');
      expect(textOf(await retry(s, 'deny.txt', again))).toMatch(/^Deleted /);
      expect(existsSync(target)).toBe(false);
    });

    it("attack: a non-approver's passkey (eve, enrolled elsewhere for this RP ID) is refused and not counted; control: an enrolled approver's counts", async () => {
      const s = await startServer(2);
      const target = file('eve.txt');
      const e = elicitation(await s.call('eve.txt'));
      await open(eve, e.url);
      const options = await postJson(`${e.url}/options`, {}, new URL(e.url).origin);
      expect(options.status).toBe(200);
      // eve signs this approval's challenge with her own resident passkey (no allow-list to stop her authenticator).
      const assertion = await assertionIn(eve.page, {
        ...(JSON.parse(options.body) as { options: Record<string, unknown> }).options,
        allowCredentials: [],
      });
      const r = await postJson(`${e.url}/assertion`, assertion, new URL(e.url).origin);
      expect(r.status).toBe(403);
      expect(JSON.parse(r.body).message).toContain('not an approver');
      await open(eve, e.url);
      expect(await eve.page.locator('#quorum-count').textContent()).toBe('0 of 2 approvals');
      // Control: ann's counts (1 of 2), bob's completes it.
      expect(await press(ann, e.url, '#approve')).toContain('counted: 1 of 2 approvals (by ann)');
      expect(await press(bob, e.url, '#approve')).toContain('approved: 2 of 2 approvals');
      expect(textOf(await retry(s, 'eve.txt', e))).toMatch(/^Deleted /);
      expect(existsSync(target)).toBe(false);
    });

    it('attack: --approvers-required above the approvers enrolled for a principal is a start-up error (exit 2); control: 2 with two approvers serves, and 1 is as before (one approval acts)', async () => {
      const r = await runProcess(process.execPath, [
        MAIN,
        '--root',
        root,
        '--approval',
        'passkey',
        '--approvers',
        approversPath,
        '--approvers-required',
        '3',
      ]);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(
        '--approvers-required: 3 distinct approvers must approve each call, but the principal local has 2 enrolled approvers; enrol more, or require fewer',
      );
      const form = await runProcess(process.execPath, [MAIN, '--root', root, '--approvers-required', '2']);
      expect(form.status).toBe(2);
      expect(form.stderr).toContain('--approvers-required needs --approval passkey');
      // Control: 2 serves (the tools are listed).
      const two = await startServer(2);
      expect((await two.client.listTools()).tools.map((t) => t.name)).toContain('delete_file');
      // Control: with 1, one approval acts, and the page shows no quorum.
      const one = await startServer(1);
      const target = file('one.txt');
      const e = elicitation(await one.call('one.txt'));
      await open(ann, e.url);
      expect(await ann.page.locator('#quorum').count()).toBe(0);
      expect(await press(ann, e.url, '#approve')).toBe(
        'approved: approved by ann; the tool call runs once when the client retries it',
      );
      expect(textOf(await retry(one, 'one.txt', e))).toMatch(/^Deleted /);
      expect(existsSync(target)).toBe(false);
    });
  },
);

describe('quorum in the proxy policy (real Chromium, real CLI)', { timeout: 240_000 }, () => {
  async function startProxy(policy: unknown, upstreamDir: string): Promise<{ client: Client; stderr: () => string }> {
    const policyPath = join(dir, `policy-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(policyPath, JSON.stringify(policy));
    const transport = new InPlaceStdioTransport({
      command: process.execPath,
      args: [
        MAIN,
        'proxy',
        '--policy',
        policyPath,
        '--approval',
        'passkey',
        '--approvers',
        approversPath,
        '--approval-wait',
        '0',
        '--',
        process.execPath,
        FIXTURE,
        upstreamDir,
      ],
      stderr: 'pipe',
    });
    let err = '';
    transport.stderr?.on('data', (c: Buffer) => (err += c.toString('utf8')));
    const client = new Client(
      { name: 'quorum-proxy-test', version: '0.0.0' },
      {
        capabilities: { elicitation: { url: {} } },
        versionNegotiation: { mode: { pin: '2026-07-28' } },
        inputRequired: { autoFulfill: false },
      },
    );
    await client.connect(transport);
    clients.push(client);
    return { client, stderr: () => err };
  }

  it('a tool matched by "quorum" globs needs the largest of them (2): one approval waits, the second acts once; control: a tool no glob matches acts on one approval', async () => {
    const upstreamDir = join(dir, 'upstream-a');
    mkdirSync(upstreamDir);
    const { client } = await startProxy(
      { confirm: ['write_note', 'remove'], quorum: { 'write_*': 2, 'w*': 1, 'nothing_*': 2 } },
      upstreamDir,
    );
    const args = { text: 'quorum note' };
    const e = elicitation(await callTool(client, { name: 'write_note', arguments: args }));
    expect(await press(ann, e.url, '#approve')).toContain('counted: 1 of 2 approvals (by ann)');
    const waiting = await callTool(client, {
      name: 'write_note',
      arguments: args,
      inputResponses: URL_ACCEPT,
      requestState: e.state,
    });
    expect(elicitation(waiting).url).toBe(e.url);
    expect(upstreamCalls(upstreamDir)).toEqual([]);
    expect(await press(bob, e.url, '#approve')).toContain('approved: 2 of 2 approvals: approved by ann, bob');
    const done = await callTool(client, {
      name: 'write_note',
      arguments: args,
      inputResponses: URL_ACCEPT,
      requestState: e.state,
    });
    expect(done.kind).toBe('result');
    expect(upstreamCalls(upstreamDir)).toEqual(['quorum note']);
    // Control: `remove` (confirmed, no quorum glob matches) acts on one approval.
    const r = elicitation(await callTool(client, { name: 'remove', arguments: {} }));
    expect(await press(ann, r.url, '#approve')).toBe(
      'approved: approved by ann; the tool call runs once when the client retries it',
    );
    const removed = await callTool(client, {
      name: 'remove',
      arguments: {},
      inputResponses: URL_ACCEPT,
      requestState: r.state,
    });
    expect(removed.kind).toBe('result');
  });

  it('attack: a policy quorum above the approvers is a start-up error (exit 2); control: one they can meet serves', async () => {
    const policyPath = join(dir, 'policy-three.json');
    writeFileSync(policyPath, JSON.stringify({ quorum: { 'delete_*': 3 } }));
    const r = await runProcess(process.execPath, [
      MAIN,
      'proxy',
      '--policy',
      policyPath,
      '--approval',
      'passkey',
      '--approvers',
      approversPath,
      '--',
      process.execPath,
      FIXTURE,
      join(dir, 'never'),
    ]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(
      '--policy quorum: 3 distinct approvers must approve each call, but the principal local has 2 enrolled approvers',
    );
    const upstreamDir = join(dir, 'upstream-b');
    mkdirSync(upstreamDir);
    const { client, stderr } = await startProxy({ quorum: { 'delete_*': 2 } }, upstreamDir);
    await stderrSays(stderr, 'serving');
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('write_note');
  });
});

describe('enrolment with a quorum (real Chromium, real CLI)', { timeout: 240_000 }, () => {
  it('attack: with --approvers-required 2 one existing approver cannot enrol a new name, twice or directly; control: a second distinct approver authorises it, and the file records 2 for later enrolments', async () => {
    const path = join(dir, 'approvers-enrol.json');
    writeFileSync(path, readFileSync(approversPath));
    chmodSync(path, 0o600);
    const e = await startEnrol([
      '--approvers',
      path,
      '--name',
      'carol',
      '--approvers-required',
      '2',
      '--timeout',
      '600',
    ]);
    const origin = new URL(e.url).origin;
    await open(ann, e.url);
    expect(await ann.page.locator('#quorum').textContent()).toContain('requires 2 distinct existing approvers');
    await ann.page.click('#enroll');
    expect(await outcomeOf(ann.page)).toBe(
      'counted: confirmed by ann; 1 more existing approver must confirm on their own device',
    );
    // Attack: ann again is not a second approver.
    await open(ann, e.url);
    await ann.page.click('#enroll');
    expect(await outcomeOf(ann.page)).toBe(
      'refused: ann has already confirmed this enrolment: another approver must confirm it with their own passkey; nothing was enrolled',
    );
    // Attack: registering now (one approver so far) is refused; the options still ask for an approver.
    expect(JSON.parse((await postJson(`${e.url}/options`, {}, origin)).body).step).toBe('authenticate');
    const direct = await postJson(
      `${e.url}/register`,
      { id: 'x', response: { clientDataJSON: Buffer.from('{}').toString('base64url') } },
      origin,
    );
    expect(direct.status).toBeGreaterThanOrEqual(400);
    expect((JSON.parse(readFileSync(path, 'utf8')) as { approvers: unknown[] }).approvers).toHaveLength(2);
    // Control: bob confirms; the quorum is met, and the new passkey is created on his device.
    await open(bob, e.url);
    await bob.page.click('#enroll');
    expect(await outcomeOf(bob.page)).toContain('enrolled');
    expect((await e.exit).code).toBe(0);
    const saved = JSON.parse(readFileSync(path, 'utf8')) as {
      approversRequired?: number;
      approvers: Array<{ name: string }>;
    };
    expect(saved.approvers.map((a) => a.name)).toEqual(['ann', 'bob', 'carol']);
    expect(saved.approversRequired).toBe(2);
    // Later, without the flag: the file's 2 still applies (one approver is counted, not enough).
    const later = await startEnrol(['--approvers', path, '--name', 'dave', '--timeout', '600']);
    await open(ann, later.url);
    await ann.page.click('#enroll');
    expect(await outcomeOf(ann.page)).toContain('counted: confirmed by ann; 1 more existing approver must confirm');
    children.at(-1)!.kill();
    await later.exit;
    // Control: the same enrolment with a quorum of 1 (a file recording none) is authorised by one approver.
    const single = join(dir, 'approvers-single.json');
    writeFileSync(single, readFileSync(approversPath));
    chmodSync(single, 0o600);
    const one = await startEnrol(['--approvers', single, '--name', 'carol', '--timeout', '600']);
    await open(ann, one.url);
    await ann.page.click('#enroll');
    expect(await outcomeOf(ann.page)).toContain('enrolled');
    expect((await one.exit).code).toBe(0);
  });
});
