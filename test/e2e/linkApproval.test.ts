/**
 * Approval by link (issue 19 part 1): with passkey approval, a client that declares no
 * elicitation gets a link to the approval page instead of a refusal, and the call is retried.
 * The library's demo server served by `serveStdio` over the in-memory transport, a real v2
 * client pinned to 2026-07-28 and a real v1 (`@modelcontextprotocol/sdk`) client, neither
 * declaring elicitation, and real headless Chromium with a virtual authenticator approving or
 * denying on the page. Each test has its own store and page; every attack has its control.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, InMemoryTransport, type CallToolResult } from '@modelcontextprotocol/client';
import type { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadApproversForServer } from '../../src/approval/approvers.js';
import { enrollApprover } from '../../src/approval/enroll.js';
import { PasskeyApproval } from '../../src/approval/passkey.js';
import { MemoryLedger } from '../../src/store/memory.js';
import { createDemoServer } from '../../src/demo/deleteFile.js';
import { APPROVAL_META_KEY } from '../../src/guard/linkRound.js';
import { launchBrowser, newAuthPage, outcomeOf, type AuthPage, type Browser } from '../helpers/browser.js';
import { callTool, type Reply } from '../helpers/harness.js';

const URL_RE = /http:\/\/localhost:[0-9]+\/approve\/[A-Za-z0-9_-]+/;
const TTL_SECONDS = 300;

let dir: string;
let root: string;
let approversPath: string;
let browser: Browser;
let ann: AuthPage;
const close: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mcp-confirm-link-'));
  root = join(dir, 'root');
  mkdirSync(root);
  browser = await launchBrowser();
  ann = await newAuthPage(browser);
  approversPath = join(dir, 'approvers.json');
  await enrollApprover({
    approversPath,
    name: 'ann',
    principals: ['local', 'U2'],
    onUrl: (u) => {
      void (async () => {
        await ann.page.goto(u);
        await ann.page.click('#enroll');
      })();
    },
  });
}, 180_000);

afterEach(async () => {
  for (const c of close.splice(0).reverse()) await c().catch(() => {});
});

afterAll(async () => {
  await browser?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The link a pending answer carries: its text names the URL and the tool, its `_meta` the same link. */
interface Link {
  id: string;
  url: string;
  expiresAt: string;
}

function linkOf(result: CallToolResult | undefined): Link {
  const text = (result?.content ?? []).map((c) => (c.type === 'text' ? c.text : '')).join('');
  expect(result?.isError).toBe(true);
  expect(text).toMatch(/^\[ERR_CONFIRM_APPROVAL_PENDING\] This call needs a person's approval\. Open /);
  const url = URL_RE.exec(text)?.[0];
  expect(text).toBe(
    `[ERR_CONFIRM_APPROVAL_PENDING] This call needs a person's approval. Open ${url} and approve it with your passkey, then call \`delete_file\` again with exactly the same arguments. Nothing was done.`,
  );
  const meta = (result?._meta as Record<string, unknown> | undefined)?.[APPROVAL_META_KEY] as Link & {
    status: string;
  };
  expect(meta).toMatchObject({ url, status: 'pending' });
  expect(meta.url.endsWith(`/${meta.id}`)).toBe(true);
  expect(new Date(meta.expiresAt).toISOString()).toBe(meta.expiresAt);
  return { id: meta.id, url: meta.url, expiresAt: meta.expiresAt };
}

function resultOf(reply: Reply): CallToolResult {
  if (reply.kind !== 'result') throw new Error(`expected a result, got ${JSON.stringify(reply)}`);
  return reply.result;
}

function textOf(result: CallToolResult): string {
  return (result.content ?? []).map((c) => (c.type === 'text' ? c.text : '')).join('');
}

interface Served {
  approval: PasskeyApproval;
  factory: () => McpServer;
  /** `delete_file` from a v2 client (2026-07-28) without elicitation. */
  call(path: string): Promise<CallToolResult>;
  /** `delete_file` from a v1 client (2025-era) without elicitation. */
  callV1(path: string): Promise<CallToolResult>;
  /** A second server process (another confirmation: another serving process) on the same store and page. */
  other(): Promise<{ call(path: string): Promise<CallToolResult> }>;
}

let clock = 0;
/** Who calls (the principal), settable by a test. */
let who = 'local';

async function v2Client(factory: () => McpServer): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const handle = serveStdio(factory, { transport: serverSide, onerror: () => {} });
  const client = new Client(
    { name: 'no-elicitation-v2', version: '0.0.0' },
    { capabilities: {}, versionNegotiation: { mode: { pin: '2026-07-28' } }, inputRequired: { autoFulfill: false } },
  );
  await client.connect(clientSide);
  close.push(
    () => client.close(),
    () => handle.close(),
  );
  return client;
}

/** A server with passkey approval (its own store and page), and both clients. */
async function serve(options: { waitSeconds?: number; approval?: 'passkey' | 'form' } = {}): Promise<Served> {
  clock = Date.now();
  who = 'local';
  const store = new MemoryLedger();
  const approval = await PasskeyApproval.start({
    store,
    approvers: await loadApproversForServer(approversPath, [root]),
    waitSeconds: options.waitSeconds ?? 0,
    now: () => clock,
  });
  close.push(() => approval.close());
  const build = () =>
    createDemoServer({
      roots: [root],
      store,
      ...(options.approval === 'form' ? {} : { approval }),
      now: () => clock,
      ttlSeconds: TTL_SECONDS,
      principal: () => who,
      onEvent: () => {},
    });
  const { factory } = await build();
  const client = await v2Client(factory);
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const handle = serveStdio(factory, { transport: serverSide, onerror: () => {} });
  const v1 = new V1Client({ name: 'no-elicitation-v1', version: '0.0.0' }, { capabilities: {} });
  await v1.connect(clientSide as never);
  close.push(
    () => v1.close(),
    () => handle.close(),
  );
  return {
    approval,
    factory,
    call: async (path) => resultOf(await callTool(client, { name: 'delete_file', arguments: { path } })),
    callV1: async (path) => (await v1.callTool({ name: 'delete_file', arguments: { path } })) as CallToolResult,
    other: async () => {
      const second = await v2Client((await build()).factory);
      return { call: async (path) => resultOf(await callTool(second, { name: 'delete_file', arguments: { path } })) };
    },
  };
}

function file(name: string, content = 'x\n'): string {
  const p = join(root, name);
  writeFileSync(p, content);
  return p;
}

async function decideOnPage(url: string, button: '#approve' | '#deny'): Promise<void> {
  await ann.page.goto(url);
  await ann.page.click(button);
  expect(await outcomeOf(ann.page)).toContain(button === '#approve' ? 'approved' : 'denied');
}

describe('approval by link: a client without elicitation, passkey approval', { timeout: 180_000 }, () => {
  it('first call (v2 client, 2026-07-28): a link to the page, nothing deleted; approved on the page, the retry deletes once', async () => {
    const s = await serve();
    const target = file('first.txt');
    const link = linkOf(await s.call('first.txt'));
    expect(existsSync(target)).toBe(true);
    await decideOnPage(link.url, '#approve');
    const done = await s.call('first.txt');
    expect(done.isError).not.toBe(true);
    expect(textOf(done)).toMatch(/^Deleted /);
    expect(existsSync(target)).toBe(false);
  });

  it('first call (v1 client, 2025-era): a link to the page, nothing deleted; approved on the page, the retry deletes once', async () => {
    const s = await serve();
    const target = file('first-v1.txt');
    const link = linkOf(await s.callV1('first-v1.txt'));
    expect(existsSync(target)).toBe(true);
    await decideOnPage(link.url, '#approve');
    const done = await s.callV1('first-v1.txt');
    expect(done.isError).not.toBe(true);
    expect(textOf(done)).toMatch(/^Deleted /);
    expect(existsSync(target)).toBe(false);
  });

  it('attack: a spent approval never approves again: the same call after the deletion (the file made again) gets a new link; control: the first retry deleted', async () => {
    const s = await serve();
    const target = file('again.txt');
    const first = linkOf(await s.call('again.txt'));
    await decideOnPage(first.url, '#approve');
    expect(textOf(await s.call('again.txt'))).toMatch(/^Deleted /);
    file('again.txt');
    const second = linkOf(await s.call('again.txt'));
    expect(second.id).not.toBe(first.id);
    expect(existsSync(target)).toBe(true);
  });

  it('a retry while still pending gets the same link and opens nothing new; control: once approved, it deletes', async () => {
    const s = await serve();
    const target = file('pending.txt');
    const first = linkOf(await s.call('pending.txt'));
    const again = linkOf(await s.call('pending.txt'));
    expect(again).toEqual(first);
    expect(linkOf(await s.callV1('pending.txt'))).toEqual(first);
    expect(existsSync(target)).toBe(true);
    // Nothing new was opened: 4 more different calls fill the 5 pending, a fifth different one is refused.
    for (const n of [1, 2, 3, 4]) linkOf(await s.call(file(`pending-${n}.txt`).slice(root.length + 1)));
    file('pending-5.txt');
    expect(textOf(await s.call('pending-5.txt'))).toMatch(/^\[ERR_CONFIRM_TOO_MANY_PENDING\] /);
    await decideOnPage(first.url, '#approve');
    expect(textOf(await s.call('pending.txt'))).toMatch(/^Deleted /);
    expect(existsSync(target)).toBe(false);
  });

  it('a retry sent before the approval waits for the page and deletes once it is approved (order: the retry sent, then approve clicked)', async () => {
    const s = await serve({ waitSeconds: 600 });
    const target = file('wait.txt');
    // Round 1 answers the link at once; the retry waits for the page's decision (up to the approval wait).
    const link = linkOf(await s.call('wait.txt'));
    const retry = s.call('wait.txt');
    await decideOnPage(link.url, '#approve');
    expect(textOf(await retry)).toMatch(/^Deleted /);
    expect(existsSync(target)).toBe(false);
  });

  it('declined on the page: the retry does nothing ("You declined"), and the next call asks anew with a new link', async () => {
    const s = await serve();
    const target = file('decline.txt');
    const first = linkOf(await s.call('decline.txt'));
    await decideOnPage(first.url, '#deny');
    const declined = await s.call('decline.txt');
    expect(declined.isError).not.toBe(true);
    expect(textOf(declined)).toBe('You declined; nothing was deleted.');
    expect(existsSync(target)).toBe(true);
    const next = linkOf(await s.call('decline.txt'));
    expect(next.id).not.toBe(first.id);
    // Control: the new link approves.
    await decideOnPage(next.url, '#approve');
    expect(textOf(await s.call('decline.txt'))).toMatch(/^Deleted /);
  });

  it('attack: an approval past its TTL approves nothing: the retry gets a new link; control: one second earlier it deletes', async () => {
    const s = await serve();
    const late = file('late.txt');
    const lateLink = linkOf(await s.call('late.txt'));
    await decideOnPage(lateLink.url, '#approve');
    clock += TTL_SECONDS * 1000;
    const renewed = linkOf(await s.call('late.txt'));
    expect(renewed.id).not.toBe(lateLink.id);
    expect(existsSync(late)).toBe(true);
    const inTime = file('in-time.txt');
    const inTimeLink = linkOf(await s.call('in-time.txt'));
    await decideOnPage(inTimeLink.url, '#approve');
    clock += TTL_SECONDS * 1000 - 1000;
    expect(textOf(await s.call('in-time.txt'))).toMatch(/^Deleted /);
    expect(existsSync(inTime)).toBe(false);
  });

  it('attack: an approval serves only its exact call: another argument, another principal, another question, another serving process each get their own link; control: the approved call deletes', async () => {
    const s = await serve();
    const a = file('a.txt');
    const b = file('b.txt');
    const link = linkOf(await s.call('a.txt'));
    await decideOnPage(link.url, '#approve');
    // Another argument (another file; and the same file by another spelling).
    expect(linkOf(await s.call('b.txt')).id).not.toBe(link.id);
    expect(linkOf(await s.call('./a.txt')).id).not.toBe(link.id);
    // Another principal.
    who = 'U2';
    expect(linkOf(await s.call('a.txt')).id).not.toBe(link.id);
    who = 'local';
    // Another serving process on the same store: bound to the process the link was given in.
    const other = await s.other();
    expect(linkOf(await other.call('a.txt')).id).not.toBe(link.id);
    expect(existsSync(a)).toBe(true);
    expect(existsSync(b)).toBe(true);
    // Control: the approved call deletes.
    expect(textOf(await s.call('a.txt'))).toMatch(/^Deleted /);
    expect(existsSync(a)).toBe(false);
  });

  it('attack: another question (the file grew since the approval) gets its own link, nothing deleted', async () => {
    const s = await serve();
    const target = file('grew.txt', 'x\n');
    const link = linkOf(await s.call('grew.txt'));
    await decideOnPage(link.url, '#approve');
    writeFileSync(target, 'grown to more bytes\n');
    expect(linkOf(await s.call('grew.txt')).id).not.toBe(link.id);
    expect(readFileSync(target, 'utf8')).toBe('grown to more bytes\n');
  });

  it('attack: two concurrent retries of one approval delete exactly once', async () => {
    const s = await serve();
    const target = file('race.txt');
    const link = linkOf(await s.call('race.txt'));
    await decideOnPage(link.url, '#approve');
    const results = await Promise.all(Array.from({ length: 8 }, () => s.call('race.txt')));
    const deleted = results.filter((r) => /^Deleted /.test(textOf(r)));
    expect(deleted).toHaveLength(1);
    for (const r of results.filter((x) => !deleted.includes(x))) expect(r.isError).toBe(true);
    expect(existsSync(target)).toBe(false);
  });

  it('attack: the file replaced by another of the same size between the approval and the retry is refused by the re-check; control: the original deletes', async () => {
    const s = await serve();
    const target = file('swap.txt', 'original\n');
    const link = linkOf(await s.call('swap.txt'));
    await decideOnPage(link.url, '#approve');
    renameSync(target, join(root, 'swap.bak'));
    writeFileSync(target, 'imposter\n');
    const r = await s.call('swap.txt');
    expect(textOf(r)).toMatch(/^\[ERR_CONFIRM_CHANGED\] /);
    expect(readFileSync(target, 'utf8')).toBe('imposter\n');
    expect(readFileSync(join(root, 'swap.bak'), 'utf8')).toBe('original\n');
    // Control: the same flow without the swap deletes.
    const kept = file('kept.txt', 'original\n');
    const ok = linkOf(await s.call('kept.txt'));
    await decideOnPage(ok.url, '#approve');
    expect(textOf(await s.call('kept.txt'))).toMatch(/^Deleted /);
    expect(existsSync(kept)).toBe(false);
  });

  it('case link-1 (fatigue): 20 different deletions in a row give 5 links, the other 15 are refused with ERR_CONFIRM_TOO_MANY_PENDING, nothing deleted; control: another principal still gets a link', async () => {
    const s = await serve();
    const names = Array.from({ length: 20 }, (_, i) => `fatigue-${i}.txt`);
    for (const n of names) file(n);
    const results: CallToolResult[] = [];
    for (const n of names) results.push(await s.call(n));
    const links = results.filter((r) => textOf(r).startsWith('[ERR_CONFIRM_APPROVAL_PENDING] '));
    const refused = results.filter((r) => textOf(r).startsWith('[ERR_CONFIRM_TOO_MANY_PENDING] '));
    expect(links).toHaveLength(5);
    expect(refused).toHaveLength(15);
    for (const r of refused) {
      expect(r.isError).toBe(true);
      expect(r._meta?.[APPROVAL_META_KEY]).toBeUndefined();
    }
    for (const n of names) expect(existsSync(join(root, n))).toBe(true);
    who = 'U2';
    linkOf(await s.call('fatigue-0.txt'));
  });

  it('case link-1 at once: 20 different deletions sent together give exactly 5 links, the other 15 ERR_CONFIRM_TOO_MANY_PENDING, nothing deleted; control: once one link is approved and used, the next call gets a link', async () => {
    const s = await serve();
    const names = Array.from({ length: 20 }, (_, i) => `burst-${i}.txt`);
    for (const n of names) file(n);
    const results = await Promise.all(names.map((n) => s.call(n)));
    const links = results.filter((r) => textOf(r).startsWith('[ERR_CONFIRM_APPROVAL_PENDING] '));
    const refused = results.filter((r) => textOf(r).startsWith('[ERR_CONFIRM_TOO_MANY_PENDING] '));
    expect(links).toHaveLength(5);
    expect(refused).toHaveLength(15);
    for (const n of names) expect(existsSync(join(root, n))).toBe(true);
    // Control: one of the five approved and used frees its place; a refused call then gets a link.
    const first = names[results.indexOf(links[0]!)]!;
    await decideOnPage(linkOf(links[0]!).url, '#approve');
    expect(textOf(await s.call(first))).toMatch(/^Deleted /);
    const waiting = names[results.indexOf(refused[0]!)]!;
    linkOf(await s.call(waiting));
    expect(existsSync(join(root, waiting))).toBe(true);
  });
});

describe('a client without elicitation under form approval', { timeout: 180_000 }, () => {
  it('is refused as before, the message saying passkey approval would let it approve (v2: -32021 with its data; v1: an isError result); nothing deleted', async () => {
    const s = await serve({ approval: 'form' });
    const target = file('form.txt');
    const sentence =
      'With passkey approval, this server would instead answer with a link where a person approves the call with their passkey.';
    const client = await v2Client(s.factory);
    const r = await callTool(client, { name: 'delete_file', arguments: { path: 'form.txt' } });
    expect(r).toMatchObject({
      kind: 'error',
      code: -32021,
      data: { requiredCapabilities: { elicitation: { form: {} } } },
    });
    expect(r.kind === 'error' && r.message).toContain(`[ERR_CONFIRM_NO_ELICITATION] `);
    expect(r.kind === 'error' && r.message).toContain(sentence);
    const v1 = await s.callV1('form.txt');
    expect(v1.isError).toBe(true);
    expect(textOf(v1)).toBe(
      `[ERR_CONFIRM_NO_ELICITATION] This tool needs a human confirmation, but the client did not declare the elicitation capability, so it cannot ask; nothing was done. ${sentence}`,
    );
    expect(existsSync(target)).toBe(true);
  });
});
