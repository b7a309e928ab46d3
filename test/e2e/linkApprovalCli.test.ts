/**
 * Approval by link through the built CLI over stdio (issue 19 part 1): `mcp-confirm proxy
 * --approval passkey` in front of the 2025-era fixture upstream, and `mcp-confirm --root R
 * --approval passkey` (`delete_file`), each with a real v2 client pinned to 2026-07-28 declaring no
 * elicitation, and real headless Chromium with a virtual authenticator. Both use the library's
 * guard, so the link flow is the same as in test/e2e/linkApproval.test.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { Client, type CallToolResult } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newAuthPage, outcomeOf, type AuthPage, type Browser } from '../helpers/browser.js';
import { callTool, type Reply } from '../helpers/harness.js';
import { upstreamCalls as calls } from '../helpers/upstreamCalls.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');
const FIXTURE = resolve(import.meta.dirname, 'fixtures/upstream.mjs');
const META_KEY = 'mcp-confirm/approval';

let R: string;
let approversPath: string;
let browser: Browser;
let ann: AuthPage;
const children: ChildProcess[] = [];
const clients: Client[] = [];

/** Enrols ann's authenticator with `mcp-confirm approvers enroll` (its first stdout line is the page URL). */
async function enrol(): Promise<void> {
  const child = spawn(process.execPath, [MAIN, 'approvers', 'enroll', '--approvers', approversPath, '--name', 'ann'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
  const url = await new Promise<string>((res, rej) => {
    createInterface({ input: child.stdout! }).once('line', res);
    void exited.then((code) => rej(new Error(`enrol exited ${code} before printing a URL: ${stderr}`)));
  });
  await ann.page.goto(url);
  await ann.page.click('#enroll');
  expect(await outcomeOf(ann.page)).toContain('enrolled');
  expect(await exited).toBe(0);
}

beforeAll(async () => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-proxylink-')));
  approversPath = join(R, 'approvers.json');
  browser = await launchBrowser();
  ann = await newAuthPage(browser);
  await enrol();
}, 180_000);

afterAll(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => {})));
  for (const c of children) if (c.exitCode === null) c.kill();
  await browser?.close();
  rmSync(R, { recursive: true, force: true });
});

/** The proxy with --approval passkey (no wait) in front of the fixture upstream writing in `dir`, and a client without elicitation. */
async function startProxy(dir: string): Promise<Client> {
  const transport = new StdioClientTransport({
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
      '--',
      process.execPath,
      FIXTURE,
      dir,
    ],
    stderr: 'pipe',
  });
  const client = new Client(
    { name: 'proxy-link-test', version: '0.0.0' },
    { capabilities: {}, versionNegotiation: { mode: { pin: '2026-07-28' } }, inputRequired: { autoFulfill: false } },
  );
  await client.connect(transport);
  clients.push(client);
  return client;
}

function linkOf(r: Reply): { id: string; url: string } {
  if (r.kind !== 'result') throw new Error(`expected a result, got ${JSON.stringify(r).slice(0, 400)}`);
  expect(r.isError).toBe(true);
  const meta = (r.result as CallToolResult)._meta?.[META_KEY] as { id: string; url: string; status: string };
  expect(meta.status).toBe('pending');
  expect(r.text).toBe(
    `[ERR_CONFIRM_APPROVAL_PENDING] This call needs a person's approval. Open ${meta.url} and approve it with your passkey, then call \`write_note\` again with exactly the same arguments. Nothing was done.`,
  );
  return meta;
}

describe(
  'mcp-confirm proxy --approval passkey: a client without elicitation approves by link',
  { timeout: 180_000 },
  () => {
    it('first call: a link, the upstream not called; approved on the page, the retry calls the upstream once; the next retry gets a new link', async () => {
      const dir = join(R, 'link');
      mkdirSync(dir);
      const client = await startProxy(dir);
      const args = { text: 'by link' };
      const first = linkOf(await callTool(client, { name: 'write_note', arguments: args }));
      expect(calls(dir)).toEqual([]);
      // Attack: another argument is not the approved call.
      await ann.page.goto(first.url);
      await ann.page.click('#approve');
      expect(await outcomeOf(ann.page)).toContain('approved');
      expect(linkOf(await callTool(client, { name: 'write_note', arguments: { text: 'other' } })).id).not.toBe(
        first.id,
      );
      expect(calls(dir)).toEqual([]);
      // Control: the exact call is done once.
      const done = await callTool(client, { name: 'write_note', arguments: args });
      expect(done).toMatchObject({ kind: 'result', isError: false, text: 'written' });
      expect(calls(dir)).toEqual(['by link']);
      const again = linkOf(await callTool(client, { name: 'write_note', arguments: args }));
      expect(again.id).not.toBe(first.id);
      expect(calls(dir)).toEqual(['by link']);
    });
  },
);

describe(
  'mcp-confirm --root R --approval passkey over stdio: a client without elicitation approves by link',
  { timeout: 180_000 },
  () => {
    it('first call: a link, nothing deleted; approved on the page, the retry deletes once; the next call gets a new link', async () => {
      const root = join(R, 'root');
      mkdirSync(root);
      const target = join(root, 'cli.txt');
      writeFileSync(target, 'x\n');
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [MAIN, '--root', root, '--approval', 'passkey', '--approvers', approversPath, '--approval-wait', '0'],
        stderr: 'pipe',
      });
      const client = new Client(
        { name: 'cli-link-test', version: '0.0.0' },
        {
          capabilities: {},
          versionNegotiation: { mode: { pin: '2026-07-28' } },
          inputRequired: { autoFulfill: false },
        },
      );
      await client.connect(transport);
      clients.push(client);
      const del = () => callTool(client, { name: 'delete_file', arguments: { path: 'cli.txt' } });
      const first = await del();
      if (first.kind !== 'result') throw new Error(`expected a result, got ${JSON.stringify(first).slice(0, 400)}`);
      const meta = (first.result as CallToolResult)._meta?.[META_KEY] as { id: string; url: string };
      expect(first.text).toBe(
        `[ERR_CONFIRM_APPROVAL_PENDING] This call needs a person's approval. Open ${meta.url} and approve it with your passkey, then call \`delete_file\` again with exactly the same arguments. Nothing was done.`,
      );
      expect(existsSync(target)).toBe(true);
      await ann.page.goto(meta.url);
      await ann.page.click('#approve');
      expect(await outcomeOf(ann.page)).toContain('approved');
      const done = await del();
      expect(done.kind === 'result' && done.text).toMatch(/^Deleted /);
      expect(existsSync(target)).toBe(false);
      writeFileSync(target, 'x\n');
      const again = await del();
      const againMeta = (again.kind === 'result' ? (again.result as CallToolResult)._meta?.[META_KEY] : undefined) as
        { id: string } | undefined;
      expect(againMeta?.id).toBeDefined();
      expect(againMeta?.id).not.toBe(meta.id);
      expect(existsSync(target)).toBe(true);
    });
  },
);
