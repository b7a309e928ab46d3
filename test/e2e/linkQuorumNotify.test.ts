/**
 * Link approval, quorum and notifications together (issue 19 parts 1, 2 and 3), end to end: the
 * built CLI over stdio (`mcp-confirm --root R --approval passkey --approvers-required 2 --notify
 * standard:… --notify slack:… --notify ntfy:…`), a real v2 MCP client pinned to 2026-07-28 that
 * declares no elicitation (so it gets the link flow), real headless Chromium with one WebAuthn
 * virtual authenticator per approver (ann, bob; eve enrolled elsewhere for the same RP ID), and
 * local receivers for each channel, the `standard` events verified with the `standardwebhooks`
 * package as the oracle. A notification goes to every channel at each step: `approval.requested`,
 * `approval.counted` (1 of 2 approvals), `approval.decided`. Every attack has its control. Waits
 * are by order (a receiver's count), never by time; each channel's events arrive in the order
 * they were queued, so "no event in between" is read from the sequence.
 */
import { randomBytes } from 'node:crypto';
import { type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, type CallToolResult } from '@modelcontextprotocol/client';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  assertionIn,
  launchBrowser,
  newAuthPage,
  outcomeOf,
  postJson,
  type AuthPage,
  type Browser,
} from '../helpers/browser.js';
import { callTool, type Reply } from '../helpers/harness.js';
import { MAIN } from '../helpers/httpServer.js';
import { enrolOnPage, pageElicitation, startEnrol, URL_ACCEPT } from '../helpers/passkeyCli.js';
import { InPlaceStdioTransport, until } from '../helpers/processes.js';
import { startReceiver, type Receiver } from '../notify/receiver.js';

const META_KEY = 'mcp-confirm/approval';

let dir: string;
let root: string;
let approversPath: string;
let secret: string;
let secretFile: string;
let browser: Browser;
let ann: AuthPage;
let bob: AuthPage;
let eve: AuthPage;
const children: ChildProcess[] = [];
const cleanups: Array<() => Promise<unknown>> = [];

/** Opens `url` in `page`, brought to the front: WebAuthn answers only a focused document. */
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

/** Enrols `page`'s authenticator as `name` into a file of its own; that file's approver. */
async function enrolAlone(page: AuthPage, name: string): Promise<Record<string, unknown>> {
  const path = join(dir, `alone-${name}.json`);
  await enrolOnPage(page, await startEnrol(['--approvers', path, '--name', name], children), open);
  return (JSON.parse(readFileSync(path, 'utf8')) as { approvers: Array<Record<string, unknown>> }).approvers[0]!;
}

/** The three channels' receivers of one server. */
interface Channels {
  std: Receiver;
  slack: Receiver;
  ntfy: Receiver;
}

interface Served {
  channels: Channels;
  stderr: () => string;
  call(path: string, extra?: { inputResponses?: unknown; requestState?: unknown }): Promise<Reply>;
}

/**
 * The CLI over stdio with passkey approval, a quorum of 2, no wait for the page, and a standard,
 * a slack and an ntfy channel at fresh receivers; a v2 client declaring `elicitation` (default:
 * none, the link flow).
 */
async function startServer(elicitation?: { url: Record<string, never> }): Promise<Served> {
  const channels: Channels = { std: await startReceiver(), slack: await startReceiver(), ntfy: await startReceiver() };
  for (const rx of Object.values(channels)) cleanups.push(() => rx.close());
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
      '2',
      '--notify',
      `standard:${channels.std.url}`,
      '--notify',
      'slack:$LINK_QUORUM_SLACK_URL',
      '--notify',
      `ntfy:${channels.ntfy.url}`,
      '--notify-secret-file',
      secretFile,
    ],
    env: { ...(process.env as Record<string, string>), LINK_QUORUM_SLACK_URL: channels.slack.url },
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (c: Buffer) => (err += c.toString('utf8')));
  const client = new Client(
    { name: 'link-quorum-notify-test', version: '0.0.0' },
    {
      capabilities: elicitation === undefined ? {} : { elicitation },
      versionNegotiation: { mode: { pin: '2026-07-28' } },
      inputRequired: { autoFulfill: false },
    },
  );
  await client.connect(transport);
  cleanups.push(() => client.close().catch(() => {}));
  return {
    channels,
    stderr: () => err,
    call: (path, extra = {}) => callTool(client, { name: 'delete_file', arguments: { path }, ...extra }),
  };
}

/** The link of a pending answer: its text names the URL and the tool, its `_meta` the same link. */
function linkOf(reply: Reply): { id: string; url: string } {
  if (reply.kind !== 'result') throw new Error(`expected a result, got ${JSON.stringify(reply).slice(0, 400)}`);
  expect(reply.isError).toBe(true);
  const meta = (reply.result as CallToolResult)._meta?.[META_KEY] as { id: string; url: string; status: string };
  expect(meta.status).toBe('pending');
  expect(reply.text).toBe(
    `[ERR_CONFIRM_APPROVAL_PENDING] This call needs a person's approval. Open ${meta.url} and approve it with your passkey, then call \`delete_file\` again with exactly the same arguments. Nothing was done.`,
  );
  return { id: meta.id, url: meta.url };
}

function textOf(reply: Reply): string {
  if (reply.kind !== 'result') throw new Error(`expected a result, got ${JSON.stringify(reply).slice(0, 400)}`);
  return reply.text;
}

function file(name: string): string {
  const p = join(root, name);
  writeFileSync(p, 'data\n');
  return p;
}

type StandardEvent = { type: string; timestamp: string; data: Record<string, unknown> };

/** Every `standard` event received so far, each verified by the `standardwebhooks` package (throws when one does not verify). */
function events(rx: Receiver): StandardEvent[] {
  return rx.received.map((r) => new Webhook(secret).verify(r.body, r.headers) as StandardEvent);
}

/** Waits until each channel has `n` events. */
async function eachHas(channels: Channels, n: number): Promise<void> {
  await until(() => Object.values(channels).every((rx) => rx.received.length >= n));
}

beforeAll(async () => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-link-quorum-')));
  root = join(dir, 'root');
  mkdirSync(root);
  secret = `whsec_${randomBytes(32).toString('base64')}`;
  secretFile = join(dir, 'hook.secret');
  writeFileSync(secretFile, `${secret}\n`);
  chmodSync(secretFile, 0o600);
  browser = await launchBrowser();
  ann = await newAuthPage(browser);
  bob = await newAuthPage(browser);
  eve = await newAuthPage(browser);
  const a = await enrolAlone(ann, 'ann');
  const b = await enrolAlone(bob, 'bob');
  // eve holds a real passkey for this RP ID, but is not one of this server's approvers.
  await enrolAlone(eve, 'eve');
  approversPath = join(dir, 'approvers.json');
  writeFileSync(approversPath, JSON.stringify({ version: 1, rpId: 'localhost', approvers: [a, b] }, null, 2));
  chmodSync(approversPath, 0o600);
}, 240_000);

afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  for (const c of children) if (c.exitCode === null) c.kill();
  await browser?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe(
  'a client without elicitation, --approvers-required 2 and --notify (real CLI, real Chromium, two approvers)',
  { timeout: 240_000 },
  () => {
    it('link → approval.requested; ann approves → approval.counted (1 of 2), the retry still pending, nothing deleted; ann again counts once; bob approves → approval.decided (approved by ann, bob); the retry deletes once; the next retry does not delete again', async () => {
      const s = await startServer();
      const { std, slack, ntfy } = s.channels;
      const target = file('quorum-link-secret-name.txt');

      // Round 1: the link, nothing deleted; every channel hears approval.requested with the same link.
      const link = linkOf(await s.call('quorum-link-secret-name.txt'));
      expect(existsSync(target)).toBe(true);
      await eachHas(s.channels, 1);
      expect(events(std)[0]).toMatchObject({
        type: 'approval.requested',
        data: { approvalId: link.id, url: link.url, tool: 'delete_file', audience: 'mcp-confirm' },
      });
      expect(ntfy.received[0]!.headers).toMatchObject({ title: 'Approval requested', click: link.url });

      // ann approves: counted, 1 of 2. Every channel hears approval.counted with the link.
      expect(await press(ann, link.url, '#approve')).toBe(
        'counted: 1 of 2 approvals (by ann): the call waits for 1 more approver, each with their own passkey',
      );
      await eachHas(s.channels, 2);
      const counted = events(std)[1]!;
      expect(counted).toMatchObject({
        type: 'approval.counted',
        data: { approvalId: link.id, url: link.url, approvals: 1, approvalsRequired: 2, approvers: ['ann'] },
      });
      expect(counted.data).not.toHaveProperty('decision');
      const slackCounted = JSON.parse(slack.received[1]!.body) as {
        text: string;
        blocks: Array<{ type: string; elements?: Array<{ url: string }> }>;
      };
      expect(slackCounted.text).toBe('1 of 2 approvals: `delete_file` on `mcp-confirm` (by `ann`)');
      expect(slackCounted.blocks.find((b) => b.type === 'actions')?.elements?.[0]?.url).toBe(link.url);
      expect(ntfy.received[1]!.headers).toMatchObject({ title: '1 of 2 approvals', click: link.url });
      expect(ntfy.received[1]!.body).toContain('1 of 2 approvals');

      // The retry still waits: the same link, nothing new opened, nothing deleted.
      expect(linkOf(await s.call('quorum-link-secret-name.txt')).id).toBe(link.id);
      expect(existsSync(target)).toBe(true);

      // Attack: ann again is counted once (refused; the page still says 1 of 2).
      expect(await press(ann, link.url, '#approve')).toBe(
        'refused: ann has already approved this call: another approver must approve it with their own passkey; nothing was approved',
      );
      await open(ann, link.url);
      expect(await ann.page.locator('#quorum-count').textContent()).toBe('1 of 2 approvals');
      expect(linkOf(await s.call('quorum-link-secret-name.txt')).id).toBe(link.id);
      expect(existsSync(target)).toBe(true);

      // Control: bob completes the quorum; every channel hears approval.decided (approved, both named).
      expect(await press(bob, link.url, '#approve')).toBe(
        'approved: 2 of 2 approvals: approved by ann, bob; the tool call runs once when the client retries it',
      );
      await eachHas(s.channels, 3);
      // In order, one per step: ann's second approval sent nothing.
      expect(events(std).map((e) => e.type)).toEqual(['approval.requested', 'approval.counted', 'approval.decided']);
      expect(events(std)[2]).toMatchObject({
        data: { approvalId: link.id, decision: 'approved', approvers: ['ann', 'bob'] },
      });
      expect(JSON.parse(slack.received[2]!.body).text).toBe(
        'Approval approved: `delete_file` on `mcp-confirm` by `ann`, `bob`',
      );
      expect(ntfy.received[2]!.headers).toMatchObject({ title: 'Approval approved', click: link.url });
      // One principal tag on every event; no file name, argument or credential in any body.
      expect(new Set(events(std).map((e) => e.data.principalTag)).size).toBe(1);
      for (const rx of [std, slack, ntfy])
        for (const r of rx.received) {
          expect(r.body).not.toContain('quorum-link-secret-name');
          expect(r.body).not.toContain('credentialId');
        }

      // The retry deletes, once.
      expect(textOf(await s.call('quorum-link-secret-name.txt'))).toMatch(/^Deleted /);
      expect(existsSync(target)).toBe(false);
      // A second retry (a file of the same name and size there again: the same question) does not
      // delete it: the approval is spent and its link finished, so a new link is asked for.
      writeFileSync(target, 'data\n');
      const next = linkOf(await s.call('quorum-link-secret-name.txt'));
      expect(next.id).not.toBe(link.id);
      expect(existsSync(target)).toBe(true);
      await eachHas(s.channels, 4);
      expect(events(std)[3]).toMatchObject({ type: 'approval.requested', data: { approvalId: next.id } });
      // The standard events verify only under their own secret (the oracle is not vacuous).
      expect(() =>
        new Webhook(`whsec_${randomBytes(32).toString('base64')}`).verify(
          std.received[1]!.body,
          std.received[1]!.headers,
        ),
      ).toThrow(WebhookVerificationError);
    });

    it('attack: one approves and the other denies (with their passkey): approval.decided (declined), the retry deletes nothing; control: the call asked anew is approved by both and deletes', async () => {
      const s = await startServer();
      const { std } = s.channels;
      const target = file('quorum-link-deny.txt');
      const link = linkOf(await s.call('quorum-link-deny.txt'));
      expect(await press(ann, link.url, '#approve')).toContain('counted: 1 of 2 approvals (by ann)');
      // With notifications, Deny asks bob's passkey.
      expect(await press(bob, link.url, '#deny')).toContain('denied by bob; nothing will be done');
      await eachHas(s.channels, 3);
      expect(events(std).map((e) => e.type)).toEqual(['approval.requested', 'approval.counted', 'approval.decided']);
      expect(events(std)[2]!.data).toMatchObject({ approvalId: link.id, decision: 'declined' });
      expect(events(std)[2]!.data).not.toHaveProperty('approvers');
      expect(s.channels.ntfy.received[2]!.headers).toMatchObject({ title: 'Approval declined', click: link.url });
      expect(textOf(await s.call('quorum-link-deny.txt'))).toBe('You declined; nothing was deleted.');
      expect(existsSync(target)).toBe(true);
      // Control: asked anew (a new link), both approve, the retry deletes.
      const again = linkOf(await s.call('quorum-link-deny.txt'));
      expect(again.id).not.toBe(link.id);
      await press(bob, again.url, '#approve');
      await press(ann, again.url, '#approve');
      expect(textOf(await s.call('quorum-link-deny.txt'))).toMatch(/^Deleted /);
      expect(existsSync(target)).toBe(false);
      await eachHas(s.channels, 6);
      expect(
        events(std)
          .slice(3)
          .map((e) => [e.type, e.data.approvalId, e.data.approvers]),
      ).toEqual([
        ['approval.requested', again.id, undefined],
        ['approval.counted', again.id, ['bob']],
        ['approval.decided', again.id, ['bob', 'ann']],
      ]);
    });

    it("attack: a non-approver's passkey (eve) and another argument count for nothing and send no step; control: ann's approval is counted and sent", async () => {
      const s = await startServer();
      const { std } = s.channels;
      const target = file('quorum-link-eve.txt');
      const other = file('quorum-link-other.txt');
      const link = linkOf(await s.call('quorum-link-eve.txt'));
      await eachHas(s.channels, 1);
      // eve signs this approval's challenge with her own resident passkey: refused, not counted.
      await open(eve, link.url);
      const origin = new URL(link.url).origin;
      const options = JSON.parse((await postJson(`${link.url}/options`, {}, origin)).body) as {
        options: Record<string, unknown>;
      };
      const assertion = await assertionIn(eve.page, { ...options.options, allowCredentials: [] });
      const refused = await postJson(`${link.url}/assertion`, assertion, origin);
      expect(refused.status).toBe(403);
      expect(JSON.parse(refused.body).message).toContain('not an approver');
      await open(eve, link.url);
      expect(await eve.page.locator('#quorum-count').textContent()).toBe('0 of 2 approvals');
      // Another argument is another call: its own link, nothing deleted.
      const otherLink = linkOf(await s.call('quorum-link-other.txt'));
      expect(otherLink.id).not.toBe(link.id);
      // Control: ann's approval is counted, and its step is the next event after the two requests.
      expect(await press(ann, link.url, '#approve')).toContain('counted: 1 of 2 approvals (by ann)');
      await eachHas(s.channels, 3);
      expect(events(std).map((e) => [e.type, e.data.approvalId])).toEqual([
        ['approval.requested', link.id],
        ['approval.requested', otherLink.id],
        ['approval.counted', link.id],
      ]);
      expect(linkOf(await s.call('quorum-link-eve.txt')).id).toBe(link.id);
      expect(existsSync(target)).toBe(true);
      expect(existsSync(other)).toBe(true);
    });
  },
);

describe('control: a client that elicits (URL mode), same flags', { timeout: 240_000 }, () => {
  it('gets the page by URL-mode elicitation instead of a link, and the channels hear the same steps: requested, counted, decided; the retry deletes once', async () => {
    const s = await startServer({ url: {} });
    const { std } = s.channels;
    const target = file('quorum-url.txt');
    const e = pageElicitation(await s.call('quorum-url.txt'));
    expect(e.mode).toBe('url');
    expect(await press(ann, e.url, '#approve')).toContain('counted: 1 of 2 approvals (by ann)');
    const waiting = pageElicitation(
      await s.call('quorum-url.txt', { inputResponses: URL_ACCEPT, requestState: e.state }),
    );
    expect(waiting.url).toBe(e.url);
    expect(await press(bob, e.url, '#approve')).toContain('approved: 2 of 2 approvals: approved by ann, bob');
    expect(textOf(await s.call('quorum-url.txt', { inputResponses: URL_ACCEPT, requestState: e.state }))).toMatch(
      /^Deleted /,
    );
    expect(existsSync(target)).toBe(false);
    await eachHas(s.channels, 3);
    expect(
      events(std).map((ev) => [ev.type, ev.data.url, ev.data.approvals ?? null, ev.data.decision ?? null]),
    ).toEqual([
      ['approval.requested', e.url, null, null],
      ['approval.counted', e.url, 1, null],
      ['approval.decided', e.url, null, 'approved'],
    ]);
  });
});
