/**
 * The time rules of passkey approval, with an injected clock (no real waiting): an
 * approval must be redeemed within 120 s of being given, and an approval past the
 * TTL approves nothing. The server is the library's demo server served by
 * `serveStdio` over the in-memory transport, a real v2 client pinned to
 * 2026-07-28, and real headless Chromium with a virtual authenticator.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, InMemoryTransport, type InputRequiredResult } from '@modelcontextprotocol/client';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ElicitationCompleteNotificationSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadApproversForServer } from '../../src/approval/approvers.js';
import { enrollApprover } from '../../src/approval/enroll.js';
import { PasskeyApproval } from '../../src/approval/passkey.js';
import { MemoryLedger } from '../../src/store/memory.js';
import { createDemoServer } from '../../src/demo/deleteFile.js';
import { launchBrowser, newAuthPage, outcomeOf, postJson, type AuthPage, type Browser } from '../helpers/browser.js';
import { callTool, type Reply } from '../helpers/harness.js';

let dir: string;
let root: string;
let browser: Browser;
let ann: AuthPage;
let approval: PasskeyApproval;
let factory: () => import('@modelcontextprotocol/server').McpServer;
let client: Client;
let clock = Date.now();
const close: Array<() => Promise<unknown>> = [];

function url(reply: Reply): { url: string; state: string } {
  if (reply.kind !== 'input_required' || reply.state === undefined)
    throw new Error(`expected input_required, got ${JSON.stringify(reply)}`);
  const entry = (reply.result as InputRequiredResult).inputRequests?.confirm as { params: { url: string } };
  return { url: entry.params.url, state: reply.state };
}

const call = (path: string, extra: Record<string, unknown> = {}) =>
  callTool(client, { name: 'delete_file', arguments: { path }, ...extra });
const ACCEPT = { confirm: { action: 'accept' } };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mcp-confirm-window-'));
  root = join(dir, 'root');
  mkdirSync(root);
  browser = await launchBrowser();
  ann = await newAuthPage(browser);
  const approversPath = join(dir, 'approvers.json');
  const enrolled = enrollApprover({
    approversPath,
    name: 'ann',
    onUrl: (u) => {
      void (async () => {
        await ann.page.goto(u);
        await ann.page.click('#enroll');
      })();
    },
  });
  await enrolled;
  const ledger = new MemoryLedger();
  approval = await PasskeyApproval.start({
    store: ledger,
    approvers: await loadApproversForServer(approversPath, [root]),
    waitSeconds: 0,
    now: () => clock,
  });
  close.push(() => approval.close());
  const built = await createDemoServer({
    roots: [root],
    store: ledger,
    approval,
    now: () => clock,
    ttlSeconds: 300,
    onEvent: () => {},
  });
  factory = built.factory;
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const handle = serveStdio(built.factory, { transport: serverSide, onerror: () => {} });
  close.push(() => handle.close());
  client = new Client(
    { name: 'window-test', version: '0.0.0' },
    {
      capabilities: { elicitation: { url: {} } },
      versionNegotiation: { mode: { pin: '2026-07-28' } },
      inputRequired: { autoFulfill: false },
    },
  );
  await client.connect(clientSide);
  close.push(() => client.close());
}, 180_000);

afterAll(async () => {
  for (const c of close.reverse()) await c().catch(() => {});
  await browser?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('passkey approval time rules (injected clock)', { timeout: 180_000 }, () => {
  it('attack: an approval redeemed 120 s after it was given is refused with ERR_CONFIRM_APPROVAL_EXPIRED; control: at 119.999 s it deletes', async () => {
    for (const [name, delayMs, deleted] of [
      ['late.txt', 120_000, false],
      ['in-time.txt', 119_999, true],
    ] as const) {
      const target = join(root, name);
      writeFileSync(target, 'x');
      clock = Date.now();
      const asked = url(await call(name));
      clock += 1_000;
      await ann.page.goto(asked.url);
      await ann.page.click('#approve');
      expect(await outcomeOf(ann.page)).toContain('approved');
      clock += delayMs;
      const r2 = await call(name, { inputResponses: ACCEPT, requestState: asked.state });
      if (deleted) {
        expect(r2).toMatchObject({ kind: 'result', isError: false });
        expect(existsSync(target)).toBe(false);
      } else {
        expect(r2).toMatchObject({ kind: 'result', isError: true });
        expect((r2 as { text: string }).text).toMatch(/^\[ERR_CONFIRM_APPROVAL_EXPIRED\]/);
        expect(existsSync(target)).toBe(true);
        // Spent: the same state cannot be tried again.
        const again = await call(name, { inputResponses: ACCEPT, requestState: asked.state });
        expect((again as { text: string }).text).toMatch(/^\[ERR_CONFIRM_SPENT\]/);
      }
    }
  });

  it('attack: an approval id past the TTL shows expired and gives no challenge; control: 1 s before, it offers one', async () => {
    writeFileSync(join(root, 'ttl.txt'), 'x');
    clock = Date.now();
    const issuedAt = clock;
    const asked = url(await call('ttl.txt'));
    const origin = new URL(asked.url).origin;
    clock = issuedAt + 299_000;
    await ann.page.goto(asked.url);
    expect(await ann.page.locator('#approve').count()).toBe(1);
    expect((await postJson(`${asked.url}/options`, {}, origin)).status).toBe(200);
    clock = issuedAt + 300_000;
    await ann.page.goto(asked.url);
    expect(await outcomeOf(ann.page)).toContain('expired');
    expect(await ann.page.locator('#approve').count()).toBe(0);
    expect((await postJson(`${asked.url}/options`, {}, origin)).status).toBe(404);
    // The state itself has expired too: the SDK refuses it before any handler runs.
    const r2 = await call('ttl.txt', { inputResponses: ACCEPT, requestState: asked.state });
    expect(r2).toMatchObject({ kind: 'error', code: -32602 });
    expect(existsSync(join(root, 'ttl.txt'))).toBe(true);
  });

  it('2025-era client with URL mode: the shim sends elicitation/create mode url with the page URL; approved there, deleted; notifications/elicitation/complete names it', async () => {
    clock = Date.now();
    const target = join(root, 'legacy.txt');
    writeFileSync(target, 'x');
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const handle = serveStdio(factory, { transport: serverSide, onerror: () => {} });
    const v1 = new V1Client({ name: 'legacy-url', version: '0.0.0' }, { capabilities: { elicitation: { url: {} } } });
    const events: string[] = [];
    let asked: { mode?: string; url?: string; elicitationId?: string; message?: string } = {};
    v1.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => {
      events.push(`complete ${n.params.elicitationId}`);
    });
    v1.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked = req.params as typeof asked;
      await ann.page.goto(asked.url!);
      await ann.page.click('#approve');
      expect(await outcomeOf(ann.page)).toContain('approved');
      events.push('approved on the page');
      return { action: 'accept' };
    });
    try {
      await v1.connect(clientSide as never);
      const result = (await v1.callTool({ name: 'delete_file', arguments: { path: 'legacy.txt' } })) as {
        content: Array<{ text?: string }>;
        isError?: boolean;
      };
      expect(asked.mode).toBe('url');
      expect(asked.url).toMatch(/^http:\/\/localhost:[0-9]+\/approve\/[A-Za-z0-9_-]+$/);
      expect(asked.message).toContain('legacy.txt');
      expect(result.isError).not.toBe(true);
      expect(result.content[0]?.text).toMatch(/^Deleted /);
      expect(existsSync(target)).toBe(false);
      // The elicitationId is the approval id (the URL's last segment); the page's decision completed it.
      expect(asked.url!.endsWith(`/${asked.elicitationId}`)).toBe(true);
      expect(events).toContain(`complete ${asked.elicitationId}`);
    } finally {
      await v1.close().catch(() => {});
      await handle.close().catch(() => {});
    }
  });
});
