/**
 * Notifications wired to passkey approval, end to end: the built CLI as a real subprocess (stdio
 * and `--http`) and the library (`PasskeyApproval` with `notify`, served by `serveStdio` over the
 * in-memory transport), real v2 MCP clients pinned to 2026-07-28, real headless Chromium with a
 * WebAuthn virtual authenticator, and local receivers (`node:http` on 127.0.0.1, port 0) for each
 * channel: `standard` (verified with the `standardwebhooks` package as the oracle), `slack` and
 * `ntfy`; one that hangs, one that answers 500 then 200, one that is down. Every attack has its
 * control. Waits are by order (a receiver's count, a log line), never by time.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/client';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeyRing } from 'mcp-confirm';
import { createDemoServer } from 'mcp-confirm/demo';
import { loadApproversForServer, Notifier, parseNotifySpec, PasskeyApproval } from 'mcp-confirm/approval';
import { MemoryLedger } from 'mcp-confirm';
import { callTool, connect, type Reply } from '../helpers/harness.js';
import { InPlaceStdioTransport, runProcess, stderrSays, until } from '../helpers/processes.js';
import { startHttpServer, connectModern } from '../helpers/httpServer.js';
import {
  assertionIn,
  launchBrowser,
  newAuthPage,
  outcomeOf,
  postJson,
  type AuthPage,
  type Browser,
} from '../helpers/browser.js';
import { downOrigin, SECRET_PATH, SECRET_QUERY, startReceiver, type Receiver } from '../notify/receiver.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');
const DOCS = resolve(import.meta.dirname, '../../docs');
const URL_RE = /http:\/\/localhost:[0-9]+\/approve\/[A-Za-z0-9_-]+/;
const FORM_ACCEPT = { confirm: { action: 'accept', content: { confirmed: true } } };

let dir: string;
let root: string;
let approversPath: string;
let keyFile: string;
let secretFile: string;
let secret: string;
let browser: Browser;
let ann: AuthPage;
const children: ChildProcess[] = [];
const cleanups: Array<() => Promise<unknown>> = [];

/** Enrols `ann` with the CLI (`approvers enroll`) on her page's virtual authenticator. */
async function enrolAnn(): Promise<void> {
  const child = spawn(process.execPath, [MAIN, 'approvers', 'enroll', '--approvers', approversPath, '--name', 'ann'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const exit = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
  const url = await new Promise<string>((res, rej) => {
    createInterface({ input: child.stdout! }).once('line', res);
    void exit.then((code) => rej(new Error(`enrol exited ${code} before printing a URL`)));
  });
  await ann.page.goto(url);
  await ann.page.click('#enroll');
  expect(await outcomeOf(ann.page)).toContain('enrolled');
  expect(await exit).toBe(0);
}

function file(name: string): string {
  const p = join(root, name);
  writeFileSync(p, 'data\n');
  return p;
}

interface Served {
  client: Client;
  stderr: () => string;
  call(path: string, extra?: { inputResponses?: unknown; requestState?: unknown }): Promise<Reply>;
}

/** The CLI over stdio with passkey approval and `extra` flags; a v2 client declaring form elicitation (the URL is in the message). */
async function startCli(extra: string[], env: Record<string, string> = {}): Promise<Served> {
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
      ...extra,
    ],
    env: { ...(process.env as Record<string, string>), ...env },
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (c: Buffer) => (err += c.toString('utf8')));
  const client = new Client(
    { name: 'notify-test', version: '0.0.0' },
    {
      capabilities: { elicitation: { form: {} } },
      versionNegotiation: { mode: { pin: '2026-07-28' } },
      inputRequired: { autoFulfill: false },
    },
  );
  await client.connect(transport);
  cleanups.push(() => client.close().catch(() => {}));
  return {
    client,
    stderr: () => err,
    call: (path, more = {}) => callTool(client, { name: 'delete_file', arguments: { path }, ...more }),
  };
}

/** Round 1's approval URL (in the form elicitation's message) and state. */
function round1(reply: Reply): { url: string; state: string } {
  if (reply.kind !== 'input_required' || reply.state === undefined)
    throw new Error(`expected input_required, got ${JSON.stringify(reply)}`);
  const url = URL_RE.exec(reply.message ?? '')?.[0];
  if (url === undefined) throw new Error(`no approval URL in ${JSON.stringify(reply.message)}`);
  return { url, state: reply.state };
}

async function receiver(answer?: Parameters<typeof startReceiver>[0]): Promise<Receiver> {
  const rx = await startReceiver(answer);
  cleanups.push(() => rx.close());
  return rx;
}

/** A `standard` event's payload, verified by the `standardwebhooks` package (throws when it does not verify). */
function verified(rx: Receiver, index: number): { type: string; timestamp: string; data: Record<string, unknown> } {
  const r = rx.received[index]!;
  return new Webhook(secret).verify(r.body, r.headers) as never;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mcp-confirm-notify-'));
  root = join(dir, 'root');
  mkdirSync(root);
  approversPath = join(dir, 'approvers.json');
  keyFile = join(dir, 'keys.json');
  writeFileSync(keyFile, (await runProcess(process.execPath, [MAIN, 'keygen', '--kid', 'k1'])).stdout);
  chmodSync(keyFile, 0o600);
  secret = `whsec_${randomBytes(32).toString('base64')}`;
  secretFile = join(dir, 'hook.secret');
  writeFileSync(secretFile, `${secret}\n`);
  chmodSync(secretFile, 0o600);
  browser = await launchBrowser();
  ann = await newAuthPage(browser);
  await enrolAnn();
}, 180_000);

afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  for (const c of children) if (c.exitCode === null) c.kill();
  await browser?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('--notify over stdio (real CLI, real Chromium)', { timeout: 180_000 }, () => {
  it('sends approval.requested to standard, slack and ntfy on round 1 and approval.decided (approved) once the page approves; no question, no argument value, no channel path anywhere', async () => {
    const std = await receiver();
    const slack = await receiver();
    const ntfy = await receiver();
    const trailPrefix = join(dir, 'trail');
    const s = await startCli(
      [
        '--key-file',
        keyFile,
        '--audit',
        trailPrefix,
        '--notify',
        `standard:${std.url}`,
        '--notify',
        'slack:$NOTIFY_TEST_SLACK_URL',
        '--notify',
        `ntfy:${ntfy.url}`,
        '--notify-secret-file',
        secretFile,
      ],
      { NOTIFY_TEST_SLACK_URL: slack.url },
    );
    const target = file('notified-secret-name.txt');
    const r1 = round1(await s.call('notified-secret-name.txt'));
    await until(() => std.received.length >= 1 && slack.received.length >= 1 && ntfy.received.length >= 1);

    // standard: a Standard Webhooks event the oracle verifies, with the URL, tool, audience, expiry and tag.
    const requested = verified(std, 0);
    expect(requested.type).toBe('approval.requested');
    expect(requested.data).toMatchObject({ url: r1.url, tool: 'delete_file', audience: 'mcp-confirm' });
    expect(requested.data.approvalId).toBe(r1.url.split('/').pop());
    expect(Date.parse(requested.data.expiresAt as string)).toBeGreaterThan(Date.parse(requested.timestamp));
    expect(requested.data).not.toHaveProperty('question');
    // The principal's tag exactly as the audit trail writes it (its "asked" line), never the principal.
    await stderrSays(s.stderr, 'audit trail: ');
    const trail = /audit trail: (\S+\.jsonl)/.exec(s.stderr())![1]!;
    const asked = readFileSync(trail, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.event === 'asked');
    expect(asked?.principal).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(requested.data.principalTag).toBe(asked!.principal);
    // slack: text and a link button to the page.
    const message = JSON.parse(slack.received[0]!.body) as {
      text: string;
      blocks: Array<{ type: string; elements?: Array<{ type: string; url: string }> }>;
    };
    expect(message.text).toContain('Approval requested');
    expect(message.blocks.find((b) => b.type === 'actions')?.elements?.[0]).toMatchObject({
      type: 'button',
      url: r1.url,
    });
    // ntfy: a title, the page as Click, high priority.
    expect(ntfy.received[0]!.headers).toMatchObject({ title: 'Approval requested', click: r1.url, priority: 'high' });
    // No question, no argument value, in any body; a secret path only in the request line it was sent to.
    for (const rx of [std, slack, ntfy]) {
      expect(rx.received[0]!.body).not.toContain('notified-secret-name');
      expect(rx.received[0]!.path).toBe(`${SECRET_PATH}${SECRET_QUERY}`);
    }
    await stderrSays(s.stderr, 'notify 3 channels');

    // The page approves: approval.decided (approved, by ann) to every channel, then the retry deletes.
    await ann.page.goto(r1.url);
    await ann.page.click('#approve');
    expect(await outcomeOf(ann.page)).toContain('approved');
    await until(() => std.received.length >= 2 && slack.received.length >= 2 && ntfy.received.length >= 2);
    const decided = verified(std, 1);
    expect(decided).toMatchObject({
      type: 'approval.decided',
      data: { decision: 'approved', approvers: ['ann'], url: r1.url, principalTag: asked!.principal },
    });
    expect(std.received[1]!.headers['webhook-id']).not.toBe(std.received[0]!.headers['webhook-id']);
    expect(JSON.parse(slack.received[1]!.body).text).toContain('Approval approved');
    expect(ntfy.received[1]!.headers).toMatchObject({ title: 'Approval approved', click: r1.url });
    for (const rx of [std, slack, ntfy]) expect(rx.received[1]!.body).not.toContain('notified-secret-name');
    const r2 = await s.call('notified-secret-name.txt', { inputResponses: FORM_ACCEPT, requestState: r1.state });
    expect(r2).toMatchObject({ kind: 'result', isError: false });
    expect(existsSync(target)).toBe(false);
    expect(s.stderr()).not.toContain('SECRET');
  });

  it('--notify-include-question: the rendered question (with the file name) reaches every channel', async () => {
    const std = await receiver();
    const slack = await receiver();
    const ntfy = await receiver();
    const s = await startCli([
      '--notify',
      `standard:${std.url}`,
      '--notify',
      `slack:${slack.url}`,
      '--notify',
      `ntfy:${ntfy.url}`,
      '--notify-secret-file',
      secretFile,
      '--notify-include-question',
    ]);
    file('asked-about.txt');
    round1(await s.call('asked-about.txt'));
    await until(() => std.received.length >= 1 && slack.received.length >= 1 && ntfy.received.length >= 1);
    expect(verified(std, 0).data.question).toContain('asked-about.txt');
    expect(slack.received[0]!.body).toContain('asked-about.txt');
    expect(ntfy.received[0]!.body).toContain('asked-about.txt');
  });

  it('with --notify, Deny needs an enrolled passkey: a bare POST is refused and nothing is decided; an approve assertion cannot deny; the page Deny with the passkey denies (approval.decided declined)', async () => {
    const ntfy = await receiver();
    const s = await startCli(['--notify', `ntfy:${ntfy.url}`]);
    const target = file('veto-me.txt');
    const r1 = round1(await s.call('veto-me.txt'));
    const origin = new URL(r1.url).origin;
    // A stranger holding the link: refused, still pending.
    const bare = await postJson(`${r1.url}/deny`, {}, origin);
    expect(bare.status).toBe(400);
    expect(JSON.parse(bare.body)).toMatchObject({ outcome: 'refused' });
    expect(JSON.parse(bare.body).message).toContain('nothing was denied');
    // An assertion over an approve challenge does not deny (the challenges are kept apart).
    await ann.page.goto(r1.url);
    const approveOptions = JSON.parse((await postJson(`${r1.url}/options`, {}, origin)).body).options;
    const forApprove = await assertionIn(ann.page, approveOptions);
    const crossed = await postJson(`${r1.url}/deny`, forApprove, origin);
    expect(crossed.status).toBe(403);
    // Nor does a deny assertion approve.
    const denyOptions = JSON.parse((await postJson(`${r1.url}/deny/options`, {}, origin)).body).options;
    const forDeny = await assertionIn(ann.page, denyOptions);
    expect((await postJson(`${r1.url}/assertion`, forDeny, origin)).status).toBe(403);
    // Still pending: the page offers both buttons, and says Deny asks the passkey.
    await ann.page.goto(r1.url);
    expect(await ann.page.locator('#deny-note').textContent()).toContain('Denying asks your passkey too');
    await ann.page.screenshot({ path: join(DOCS, 'approval-page-notify.png'), fullPage: true });
    expect(ntfy.received).toHaveLength(1);
    // Control: the page's Deny with ann's passkey denies.
    await ann.page.click('#deny');
    expect(await outcomeOf(ann.page)).toContain('denied by ann');
    await until(() => ntfy.received.length >= 2);
    expect(ntfy.received[1]!.headers).toMatchObject({ title: 'Approval declined', click: r1.url });
    const r2 = await s.call('veto-me.txt', { inputResponses: FORM_ACCEPT, requestState: r1.state });
    expect(r2).toMatchObject({ kind: 'result', isError: false, text: 'You declined; nothing was deleted.' });
    expect(existsSync(target)).toBe(true);
    await stderrSays(s.stderr, 'approval page: denied by ann');
  });

  it('control: without --notify, Deny works as today (no passkey asked)', async () => {
    const s = await startCli([]);
    file('plain-deny.txt');
    const r1 = round1(await s.call('plain-deny.txt'));
    const denied = await postJson(`${r1.url}/deny`, {}, new URL(r1.url).origin);
    expect(denied.status).toBe(200);
    expect(JSON.parse(denied.body)).toMatchObject({ outcome: 'denied' });
    await ann.page.goto(r1.url);
    expect(await ann.page.locator('#deny-note').count()).toBe(0);
  });

  it('a channel that is down: the call is unaffected; stderr reports the channel by origin, never its path or query', async () => {
    const origin = await downOrigin();
    const s = await startCli(['--notify', `ntfy:${origin}${SECRET_PATH}${SECRET_QUERY}`]);
    file('down-channel.txt');
    const r1 = round1(await s.call('down-channel.txt'));
    expect(r1.url).toMatch(URL_RE);
    await stderrSays(s.stderr, `notify ntfy ${origin}: gave up on an event after 4 attempt(s): network error`);
    expect(s.stderr()).not.toContain('SECRET');
  });
});

describe('mcp-confirm proxy --notify (real CLI, fixture upstream)', { timeout: 180_000 }, () => {
  it("sends the proxied tool's approval request: the tool's name and the link, never an argument value", async () => {
    const std = await receiver();
    const ntfy = await receiver();
    const upstreamDir = join(dir, 'upstream');
    mkdirSync(upstreamDir, { recursive: true });
    const transport = new InPlaceStdioTransport({
      command: process.execPath,
      args: [
        MAIN,
        'proxy',
        '--approval',
        'passkey',
        '--approvers',
        approversPath,
        '--approval-wait',
        '0',
        '--notify',
        `standard:${std.url}`,
        '--notify',
        `ntfy:${ntfy.url}`,
        '--notify-secret-file',
        secretFile,
        '--',
        process.execPath,
        resolve(import.meta.dirname, 'fixtures/upstream.mjs'),
        upstreamDir,
      ],
      stderr: 'pipe',
    });
    let err = '';
    transport.stderr?.on('data', (c: Buffer) => (err += c.toString('utf8')));
    const client = new Client(
      { name: 'notify-proxy-test', version: '0.0.0' },
      {
        capabilities: { elicitation: { form: {} } },
        versionNegotiation: { mode: { pin: '2026-07-28' } },
        inputRequired: { autoFulfill: false },
      },
    );
    await client.connect(transport);
    cleanups.push(() => client.close().catch(() => {}));
    const r1 = round1(await callTool(client, { name: 'write_note', arguments: { text: 'PROXIED-ARGUMENT-VALUE' } }));
    await until(() => std.received.length >= 1 && ntfy.received.length >= 1);
    expect(verified(std, 0)).toMatchObject({
      type: 'approval.requested',
      data: { tool: 'write_note', url: r1.url, audience: 'mcp-confirm' },
    });
    expect(ntfy.received[0]!.headers).toMatchObject({ click: r1.url, priority: 'high' });
    for (const rx of [std, ntfy]) expect(rx.received[0]!.body).not.toContain('PROXIED-ARGUMENT-VALUE');
    await stderrSays(() => err, 'notify 2 channels');
    expect(err).not.toContain('SECRET');
  });
});

describe('--notify flags (real CLI)', { timeout: 180_000 }, () => {
  const run = (args: string[], env: Record<string, string> = {}) =>
    runProcess(process.execPath, [MAIN, ...args], { env: { ...process.env, ...env } });

  it('--notify without --approval passkey is a start-up error naming the flag (serve and proxy); control: with it, the server starts', async () => {
    const served = await run(['--root', root, '--notify', `ntfy:http://127.0.0.1:9${SECRET_PATH}`]);
    expect(served.status).toBe(2);
    expect(served.stderr).toContain('--notify needs --approval passkey');
    const proxied = await run(['proxy', '--notify', `ntfy:http://127.0.0.1:9${SECRET_PATH}`, '--', 'node', 'x.js']);
    expect(proxied.status).toBe(2);
    expect(proxied.stderr).toContain('--notify needs --approval passkey');
    for (const r of [served, proxied]) expect(r.stderr).not.toContain('SECRET');
    const started = await startCli(['--notify', `ntfy:http://127.0.0.1:9${SECRET_PATH}`]);
    expect((await started.client.listTools()).tools.map((t) => t.name)).toEqual(['delete_file']);
  });

  it('refuses bad channels by flag and origin (or $NAME), never the path, query or secret', async () => {
    const passkey = ['--root', root, '--approval', 'passkey', '--approvers', approversPath];
    const unset = await run([...passkey, '--notify', 'slack:$NOTIFY_TEST_UNSET']);
    expect(unset.status).toBe(2);
    expect(unset.stderr).toContain(
      '--notify slack:$NOTIFY_TEST_UNSET: the environment variable NOTIFY_TEST_UNSET is not set',
    );
    const noSecret = await run([...passkey, '--notify', `standard:http://127.0.0.1:9${SECRET_PATH}`]);
    expect(noSecret.status).toBe(2);
    expect(noSecret.stderr).toContain('--notify standard:http://127.0.0.1:9: a standard channel needs');
    expect(noSecret.stderr).toContain('--notify-secret-file PATH');
    const plainHttp = await run([...passkey, '--notify', `ntfy:http://ntfy.example.com${SECRET_PATH}${SECRET_QUERY}`]);
    expect(plainHttp.status).toBe(2);
    expect(plainHttp.stderr).toContain('--notify ntfy:http://ntfy.example.com: the URL must be https');
    const unknown = await run([...passkey, '--notify', `teams:https://example.com${SECRET_PATH}`]);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain('--notify channel teams: unknown kind');
    const badSecret = join(dir, 'bad.secret');
    writeFileSync(badSecret, 'not-a-secret-SECRET\n');
    const wrong = await run([
      ...passkey,
      '--notify',
      `standard:https://hooks.example.com${SECRET_PATH}`,
      '--notify-secret-file',
      badSecret,
    ]);
    expect(wrong.status).toBe(2);
    expect(wrong.stderr).toContain('does not hold a Standard Webhooks secret');
    for (const r of [unset, noSecret, plainHttp, unknown, wrong]) expect(r.stderr).not.toContain('SECRET');
    const alone = await run([...passkey, '--notify-include-question']);
    expect(alone.status).toBe(2);
    expect(alone.stderr).toContain('--notify-secret-file and --notify-include-question need --notify SPEC');
  });
});

describe('--notify over --http: /metrics counts deliveries', { timeout: 180_000 }, () => {
  it('mcp_confirm_notify_events_total counts a sent event and a failed one (a channel that is down)', async () => {
    const std = await receiver();
    const down = await downOrigin();
    const server = await startHttpServer([
      '--root',
      root,
      '--http',
      '127.0.0.1:0',
      '--approval',
      'passkey',
      '--approvers',
      approversPath,
      '--public-url',
      'http://localhost:9',
      '--approval-wait',
      '0',
      '--notify',
      `standard:${std.url}`,
      '--notify',
      `ntfy:${down}${SECRET_PATH}`,
      '--notify-secret-file',
      secretFile,
    ]);
    cleanups.push(async () => {
      server.proc.kill();
      await server.exited;
    });
    expect(server.stderr()).toContain('notify 2 channels');
    const client = await connectModern(server.url);
    cleanups.push(() => client.close().catch(() => {}));
    file('over-http.txt');
    const r1 = await callTool(client, { name: 'delete_file', arguments: { path: 'over-http.txt' } });
    expect(r1.kind).toBe('input_required');
    await until(() => std.received.length >= 1);
    expect(verified(std, 0).type).toBe('approval.requested');
    const metrics = new URL('/metrics', server.url);
    const scrape = async (): Promise<string> => (await fetch(metrics)).text();
    await until(async () =>
      (await scrape()).includes('mcp_confirm_notify_events_total{channel="standard",outcome="sent"} 1'),
    );
    await server.waitForStderr(`notify ntfy ${down}: gave up`);
    const text = await scrape();
    expect(text).toContain('mcp_confirm_notify_events_total{channel="ntfy",outcome="failed"} 1');
    expect(text).toContain('mcp_confirm_notify_retries_total{channel="ntfy"} 3');
    expect(text).not.toContain('SECRET');
    expect(server.stderr()).not.toContain('SECRET');
  });
});

describe(
  'the library: PasskeyApproval({ notify }) with createDemoServer (in-memory client)',
  { timeout: 180_000 },
  () => {
    /** A demo server with passkey approval notifying `notifier`; the confirmation's keys known to the test. */
    async function library(notify: Notifier, ttlSeconds = 300) {
      const store = new MemoryLedger();
      const approval = await PasskeyApproval.start({
        store,
        approvers: await loadApproversForServer(approversPath, [root]),
        waitSeconds: 0,
        notify: { to: notify },
      });
      cleanups.push(() => approval.close());
      const keys = await KeyRing.random();
      const demo = await createDemoServer({ roots: [root], approval, keys, ttlSeconds });
      const connected = await connect(demo.factory);
      cleanups.push(() => connected.close());
      return { approval, keys, call: (path: string, extra = {}) => connected.call('delete_file', { path }, extra) };
    }

    it('a channel that hangs: round 1 is answered while the receiver holds the request unanswered (nothing sent, failed or dropped yet)', async () => {
      const rx = await receiver(() => 'hang');
      // The attempt's deadline only guards against a hang of the test itself; closing aborts the attempt.
      const notifier = new Notifier({ channels: [parseNotifySpec(`slack:${rx.url}`)], log: () => {} });
      const lib = await library(notifier);
      file('hang.txt');
      expect((await lib.call('hang.txt')).kind).toBe('input_required');
      await until(() => rx.received.length === 1);
      expect(notifier.counters().slack).toEqual({ sent: 0, failed: 0, dropped: 0, retried: 0 });
      await notifier.close(0);
      expect(notifier.counters().slack).toMatchObject({ sent: 0, dropped: 1 });
    });

    it('a channel that never answers within the attempt deadline: the call completes, the delivery times out and is reported', async () => {
      const rx = await receiver(() => 'hang');
      const lines: string[] = [];
      const notifier = new Notifier({
        channels: [parseNotifySpec(`slack:${rx.url}`)],
        attemptTimeoutMs: 500,
        retries: 0,
        log: (l) => lines.push(l),
      });
      cleanups.push(() => notifier.close(0));
      const lib = await library(notifier);
      file('timeout.txt');
      expect((await lib.call('timeout.txt')).kind).toBe('input_required');
      await until(() => lines.length === 1);
      expect(lines).toEqual([
        `notify slack ${rx.origin}: gave up on an event after 1 attempt(s): no answer within 500 ms`,
      ]);
      expect(notifier.counters().slack).toMatchObject({ sent: 0, failed: 1 });
      expect(rx.received.length).toBeLessThanOrEqual(1);
    });

    it('a receiver answering 500 then 200: retried with the same webhook-id, both attempts verify, delivered once', async () => {
      const rx = await receiver((_r, i) => (i === 0 ? 500 : 200));
      const notifier = new Notifier({
        channels: [parseNotifySpec(`standard:${rx.url}`, { defaultSecretFile: secretFile })],
        backoffMs: 1,
        log: () => {},
      });
      cleanups.push(() => notifier.close(0));
      const lib = await library(notifier);
      file('retry.txt');
      const r1 = await lib.call('retry.txt');
      expect(r1.kind).toBe('input_required');
      await notifier.idle();
      expect(rx.received).toHaveLength(2);
      expect(rx.received[1]!.headers['webhook-id']).toBe(rx.received[0]!.headers['webhook-id']);
      expect(verified(rx, 0)).toEqual(verified(rx, 1));
      expect(notifier.counters().standard).toEqual({ sent: 1, failed: 0, dropped: 0, retried: 1 });
    });

    it("the client's decline sends approval.decided (declined), with the confirmation's principal tag", async () => {
      const rx = await receiver();
      const notifier = new Notifier({
        channels: [parseNotifySpec(`standard:${rx.url}`, { defaultSecretFile: secretFile })],
        log: () => {},
      });
      cleanups.push(() => notifier.close(0));
      const lib = await library(notifier);
      file('declined.txt');
      const r1 = await lib.call('declined.txt');
      if (r1.kind !== 'input_required') throw new Error('expected input_required');
      const declined = await lib.call('declined.txt', {
        inputResponses: { confirm: { action: 'decline' } },
        requestState: r1.state,
      });
      expect(declined).toMatchObject({ kind: 'result', isError: false });
      await until(() => rx.received.length >= 2);
      expect(verified(rx, 1)).toMatchObject({ type: 'approval.decided', data: { decision: 'declined' } });
      expect(verified(rx, 1).data.approvalId).toBe(verified(rx, 0).data.approvalId);
      // The tag is the confirmation's: KeyRing.principalTag under its sealing key, of the principal local.
      expect(verified(rx, 0).data.principalTag).toBe(KeyRing.principalTag(lib.keys.sealing, 'local'));
      for (const r of rx.received) expect(r.body).not.toContain('declined.txt');
    });

    it('an approval left alone past its TTL sends approval.decided (expired), once', async () => {
      const rx = await receiver();
      const notifier = new Notifier({
        channels: [parseNotifySpec(`standard:${rx.url}`, { defaultSecretFile: secretFile })],
        log: () => {},
      });
      cleanups.push(() => notifier.close(0));
      const lib = await library(notifier, 1);
      file('expires.txt');
      expect((await lib.call('expires.txt')).kind).toBe('input_required');
      await until(() => rx.received.length >= 2);
      const last = verified(rx, 1);
      expect(last).toMatchObject({ type: 'approval.decided', data: { decision: 'expired', tool: 'delete_file' } });
      expect(verified(rx, 0).data.approvalId).toBe(last.data.approvalId);
      await notifier.idle();
      expect(rx.received).toHaveLength(2);
      for (const r of rx.received) expect(r.body).not.toContain('expires.txt');
    });

    it('refuses a notify option that is not a Notifier or NotifyChannels (TypeError); control: an empty channel list leaves Deny as today', async () => {
      const approvers = await loadApproversForServer(approversPath, [root]);
      await expect(
        PasskeyApproval.start({ store: new MemoryLedger(), approvers, notify: ['https://hooks.example.com'] as never }),
      ).rejects.toThrow(TypeError);
      await expect(
        PasskeyApproval.start({ store: new MemoryLedger(), approvers, notify: { to: 'x' } as never }),
      ).rejects.toThrow(TypeError);
      const none = await PasskeyApproval.start({ store: new MemoryLedger(), approvers, notify: [] });
      cleanups.push(() => none.close());
      expect(none.notifier).toBeUndefined();
    });
  },
);
