/**
 * `mcp-confirm proxy --approval passkey --approvers PATH` over stdio: the built CLI as real
 * subprocesses (enrolment, and the proxy in front of the 2025-era fixture upstream,
 * fixtures/upstream.mjs over stdio), a real v2 client pinned to 2026-07-28 declaring URL-mode
 * elicitation, and real headless Chromium with a WebAuthn virtual authenticator (CDP).
 * Needs `npm run build` first, and chromium (a failure, not a skip, when missing).
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client, type InputRequiredResult } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, newAuthPage, outcomeOf, type AuthPage, type Browser } from '../helpers/browser.js';
import { callTool, type Reply } from '../helpers/harness.js';
import { enrolOnPage, startEnrol } from '../helpers/passkeyCli.js';
import { stderrSays } from '../helpers/processes.js';
import { upstreamCalls as calls } from '../helpers/upstreamCalls.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');
const FIXTURE = resolve(import.meta.dirname, 'fixtures/upstream.mjs');
const URL_ACCEPT = { confirm: { action: 'accept' } };

let R: string;
let approversPath: string;
let browser: Browser;
let ann: AuthPage;
const children: ChildProcess[] = [];
const clients: Client[] = [];

/** Enrols the authenticator of `page` as `name` with `mcp-confirm approvers enroll` (its first stdout line is the page URL). */
async function enrol(page: AuthPage, name: string): Promise<void> {
  await enrolOnPage(page, await startEnrol(['--approvers', approversPath, '--name', name], children));
}

beforeAll(async () => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-proxypasskey-')));
  approversPath = join(R, 'approvers.json');
  browser = await launchBrowser();
  ann = await newAuthPage(browser);
  await enrol(ann, 'ann');
}, 180_000);

afterAll(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => {})));
  for (const c of children) if (c.exitCode === null) c.kill();
  await browser?.close();
  rmSync(R, { recursive: true, force: true });
});

/** The proxy with --approval passkey (no wait for the page) in front of the fixture upstream writing in `dir`. */
async function startProxy(
  dir: string,
  env: Record<string, string> = {},
): Promise<{ client: Client; stderr: () => string }> {
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
    ...(Object.keys(env).length > 0 ? { env: { ...process.env, ...env } as Record<string, string> } : {}),
  });
  let err = '';
  transport.stderr?.on('data', (c: Buffer) => (err += c.toString('utf8')));
  const client = new Client(
    { name: 'proxy-passkey-test', version: '0.0.0' },
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

/** Round 1's URL-mode elicitation: the page URL, the message and the state. */
function elicitation(reply: Reply): { mode: string | undefined; url: string; message: string; state: string } {
  if (reply.kind !== 'input_required' || reply.state === undefined)
    throw new Error(`expected input_required, got ${JSON.stringify(reply).slice(0, 400)}`);
  const entry = (reply.result as InputRequiredResult).inputRequests?.confirm as {
    params: { mode?: string; url?: string; message: string };
  };
  if (entry.params.url === undefined) throw new Error(`no URL in ${JSON.stringify(reply).slice(0, 400)}`);
  return { mode: entry.params.mode, url: entry.params.url, message: entry.params.message, state: reply.state };
}

/** A long multi-line note: over the question's size bound, with a middle line only the page shows. */
const LONG_NOTE = [
  'FIRST LINE of the note',
  ...Array.from({ length: 60 }, (_, i) => `middle line ${i}${i === 30 ? ' <b>SECRET MIDDLE</b> \u202E' : ''}`),
  'LAST LINE of the note',
].join('\n');

describe('mcp-confirm proxy --approval passkey over stdio (real Chromium, real CLI)', { timeout: 180_000 }, () => {
  it('approved on the passkey page, the upstream tool is called once with exactly the text; the page showed the whole long value the question only summarised; the replay is ERR_CONFIRM_SPENT', async () => {
    const dir = join(R, 'approve');
    mkdirSync(dir);
    const { client, stderr } = await startProxy(dir);
    const args = { text: LONG_NOTE };
    const e = elicitation(await callTool(client, { name: 'write_note', arguments: args }));
    expect(e.mode).toBe('url');
    expect(e.message).toContain('Run the tool `write_note` of the upstream server `fixture-upstream`');
    expect(e.message).toMatch(
      /Argument `text`: a long value of [0-9]+ bytes in 62 lines, first line `FIRST LINE of the note`, last line `LAST LINE of the note`, fingerprint [0-9a-f]{16}/,
    );
    expect(e.message).not.toContain('SECRET MIDDLE');
    // The page: the whole value, every line, rendered (escaped markup, no raw bidi control).
    await ann.page.goto(e.url);
    const values = (await ann.page.locator('#values').textContent()) ?? '';
    expect(values).toContain('argument `text`');
    expect(values).toContain('FIRST LINE of the note');
    expect(values).toContain('middle line 59');
    expect(values).toContain('<b>SECRET MIDDLE</b> ⟨U+202E⟩');
    expect(values).not.toContain('\u202E');
    expect(await ann.page.locator('#values b').count()).toBe(0);
    expect(values).toContain('LAST LINE of the note');
    await ann.page.click('#approve');
    expect(await outcomeOf(ann.page)).toContain('approved');
    // The page only records the approval: nothing reached the upstream yet.
    expect(calls(dir)).toEqual([]);
    const done = await callTool(client, {
      name: 'write_note',
      arguments: args,
      inputResponses: URL_ACCEPT,
      requestState: e.state,
    });
    expect(done).toMatchObject({ kind: 'result', isError: false, text: 'written' });
    expect(calls(dir)).toEqual([LONG_NOTE]);
    expect(readFileSync(join(dir, 'note.txt'), 'utf8')).toBe(LONG_NOTE);
    const replay = await callTool(client, {
      name: 'write_note',
      arguments: args,
      inputResponses: URL_ACCEPT,
      requestState: e.state,
    });
    expect(replay.kind === 'result' && replay.text.startsWith('[ERR_CONFIRM_SPENT]')).toBe(true);
    expect(calls(dir)).toEqual([LONG_NOTE]);
    await stderrSays(stderr, 'approved by `ann`');
  });

  it('attack: round 2 before the approval is asked again with the same URL and state, and the upstream is not called; control: once approved, called once', async () => {
    const dir = join(R, 'early');
    mkdirSync(dir);
    const { client } = await startProxy(dir);
    const args = { text: 'not before the passkey' };
    const e = elicitation(await callTool(client, { name: 'write_note', arguments: args }));
    for (let i = 0; i < 2; i++) {
      const again = elicitation(
        await callTool(client, {
          name: 'write_note',
          arguments: args,
          inputResponses: URL_ACCEPT,
          requestState: e.state,
        }),
      );
      expect(again.url).toBe(e.url);
      expect(again.state).toBe(e.state);
      expect(calls(dir)).toEqual([]);
    }
    await ann.page.goto(e.url);
    await ann.page.click('#approve');
    expect(await outcomeOf(ann.page)).toContain('approved');
    const done = await callTool(client, {
      name: 'write_note',
      arguments: args,
      inputResponses: URL_ACCEPT,
      requestState: e.state,
    });
    expect(done).toMatchObject({ kind: 'result', isError: false, text: 'written' });
    expect(calls(dir)).toEqual(['not before the passkey']);
  });

  it('denied on the page: the upstream is never called ("You declined; nothing was forwarded to the upstream server.")', async () => {
    const dir = join(R, 'deny');
    mkdirSync(dir);
    const { client } = await startProxy(dir);
    const args = { text: 'denied note' };
    const e = elicitation(await callTool(client, { name: 'write_note', arguments: args }));
    await ann.page.goto(e.url);
    await ann.page.click('#deny');
    expect(await outcomeOf(ann.page)).toContain('denied');
    const r2 = await callTool(client, {
      name: 'write_note',
      arguments: args,
      inputResponses: URL_ACCEPT,
      requestState: e.state,
    });
    expect(r2).toMatchObject({ kind: 'result', text: 'You declined; nothing was forwarded to the upstream server.' });
    expect(calls(dir)).toEqual([]);
  });

  it('the page renders an upstream tool name like any untrusted value (a right-to-left override and markup are escaped, never raw); control: approved, the tool runs once', async () => {
    const dir = join(R, 'odd');
    mkdirSync(dir);
    const { client } = await startProxy(dir, { FIXTURE_ODD_TOOL: '1' });
    const name = 'note\u202Etxt.exe<b>';
    const e = elicitation(await callTool(client, { name, arguments: {} }));
    await ann.page.goto(e.url);
    const facts = (await ann.page.locator('dl.facts').textContent()) ?? '';
    expect(facts).toContain('note⟨U+202E⟩txt.exe<b>');
    expect(facts).not.toContain('\u202E');
    expect(await ann.page.locator('dl.facts b').count()).toBe(0);
    await ann.page.click('#approve');
    expect(await outcomeOf(ann.page)).toContain('approved');
    const done = await callTool(client, { name, arguments: {}, inputResponses: URL_ACCEPT, requestState: e.state });
    expect(done).toMatchObject({ kind: 'result', isError: false, text: 'odd tool ran' });
    expect(calls(dir)).toEqual(['odd tool']);
  });
});
