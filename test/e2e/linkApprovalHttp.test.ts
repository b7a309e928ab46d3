/**
 * Approval by link over `--http` (issue 19 part 1): the built CLI as a subprocess (`--http …
 * --auth-issuer … --approval passkey --public-url …`), real v2 clients without elicitation over
 * Streamable HTTP with real JWTs, and real headless Chromium with a virtual authenticator. An
 * approval given by link is bound to the principal that asked (case link-2); without token auth
 * (every caller `local`) the link flow is off and such a client is refused as before.
 *
 * The public URL is `http://approve.test:PORT` (Chromium maps the name to 127.0.0.1 and treats the
 * origin as secure), as in passkeyHttp.test.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { exportJWK, generateKeyPair, type CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, type Reply } from '../helpers/harness.js';
import { launchBrowser, newAuthPage, outcomeOf, type AuthPage, type Browser } from '../helpers/browser.js';
import { freePortOn, mintToken } from '../helpers/passkeyHttp.js';
import { MAIN, startHttpServer, type HttpServerProcess } from '../helpers/httpServer.js';

const ISSUER = 'https://auth.example.test';
const HOST = 'approve.test';
const META_KEY = 'mcp-confirm/approval';
const publicUrl = (port: number): string => `http://${HOST}:${port}`;

let dir: string;
let root: string;
let jwksPath: string;
let approversPath: string;
let signingKey: CryptoKey;
let browser: Browser;
/** Approver for principal u1 only. */
let ann: AuthPage;
let P1: number;
let P2: number;
let server: HttpServerProcess;
const children: ChildProcess[] = [];
const servers: HttpServerProcess[] = [];
const clients: Client[] = [];

const freePort = (): Promise<number> => freePortOn(['127.0.0.1', '::1']);
const token = (sub: string, port: number): Promise<string> =>
  mintToken(signingKey, ISSUER, sub, `${publicUrl(port)}/mcp`);

/** A v2 client pinned to 2026-07-28 over Streamable HTTP declaring no elicitation, optionally with a bearer token. */
async function connectNoElicitation(mcpUrl: URL, bearer?: string): Promise<Client> {
  const client = new Client(
    { name: 'link-http-test', version: '0.0.0' },
    { capabilities: {}, versionNegotiation: { mode: { pin: '2026-07-28' } }, inputRequired: { autoFulfill: false } },
  );
  const requestInit: RequestInit = bearer ? { headers: { Authorization: `Bearer ${bearer}` } } : {};
  await client.connect(new StreamableHTTPClientTransport(mcpUrl, { requestInit }));
  clients.push(client);
  return client;
}

const del = (c: Client, path: string): Promise<Reply> => callTool(c, { name: 'delete_file', arguments: { path } });
const textOf = (r: Reply): string => (r.kind === 'result' ? r.text : JSON.stringify(r));

/** The link of a pending answer (its `_meta` entry, the same URL as in its text). */
function linkOf(r: Reply): { id: string; url: string } {
  if (r.kind !== 'result') throw new Error(`expected a result, got ${JSON.stringify(r)}`);
  expect(r.isError).toBe(true);
  expect(r.text).toMatch(/^\[ERR_CONFIRM_APPROVAL_PENDING\] This call needs a person's approval\. Open /);
  expect(r.text).toContain('then call `delete_file` again with exactly the same arguments. Nothing was done.');
  const meta = (r.result as CallToolResult)._meta?.[META_KEY] as { id: string; url: string; status: string };
  expect(meta.status).toBe('pending');
  expect(meta.url).toMatch(new RegExp(`^http://approve\\.test:[0-9]+/approve/${meta.id}$`));
  expect(r.text).toContain(`Open ${meta.url} and approve it`);
  return meta;
}

function file(name: string): string {
  const p = join(root, name);
  writeFileSync(p, 'data\n');
  return p;
}

/** Starts `mcp-confirm approvers enroll …`; resolves with the first stdout line (the URL) and the exit. */
function startEnrol(args: string[]): Promise<{ url: string; exit: Promise<{ code: number | null; stderr: string }> }> {
  const child = spawn(process.execPath, [MAIN, 'approvers', 'enroll', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const exit = new Promise<{ code: number | null; stderr: string }>((res) =>
    child.once('exit', (code) => res({ code, stderr })),
  );
  return new Promise((res, rej) => {
    createInterface({ input: child.stdout! }).once('line', (url) => res({ url, exit }));
    void exit.then((e) => rej(new Error(`enrol exited ${e.code} before printing a URL: ${e.stderr}`)));
  });
}

async function approveOnPage(url: string): Promise<void> {
  await ann.page.bringToFront();
  await ann.page.goto(url);
  await ann.page.click('#approve');
  expect(await outcomeOf(ann.page)).toContain('approved by ann');
}

beforeAll(async () => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-link-http-')));
  root = join(dir, 'root');
  mkdirSync(root);
  approversPath = join(dir, 'approvers.json');
  const pair = await generateKeyPair('RS256', { extractable: true });
  signingKey = pair.privateKey;
  jwksPath = join(dir, 'jwks.json');
  writeFileSync(
    jwksPath,
    JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' }] }),
  );
  P1 = await freePort();
  P2 = await freePort();
  browser = await launchBrowser([
    `--host-resolver-rules=MAP ${HOST} 127.0.0.1`,
    `--unsafely-treat-insecure-origin-as-secure=${[P1, P2].map(publicUrl).join(',')}`,
  ]);
  ann = await newAuthPage(browser);
  const enrol = await startEnrol([
    '--approvers',
    approversPath,
    '--name',
    'ann',
    '--public-url',
    publicUrl(P1),
    '--principal',
    ISSUER,
    'u1',
  ]);
  await ann.page.goto(enrol.url);
  await ann.page.click('#enroll');
  expect(await outcomeOf(ann.page)).toContain('enrolled');
  expect((await enrol.exit).code).toBe(0);
  server = await startHttpServer([
    '--root',
    root,
    '--http',
    `127.0.0.1:${P1}`,
    '--auth-issuer',
    ISSUER,
    '--auth-jwks',
    jwksPath,
    '--resource',
    `${publicUrl(P1)}/mcp`,
    '--approval',
    'passkey',
    '--approvers',
    approversPath,
    '--public-url',
    publicUrl(P1),
    '--approval-wait',
    '0',
  ]);
  servers.push(server);
}, 300_000);

afterAll(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => {})));
  for (const s of servers) if (s.proc.exitCode === null) s.proc.kill('SIGTERM');
  await Promise.all(servers.map((s) => s.exited));
  for (const c of children) if (c.exitCode === null) c.kill();
  await browser?.close();
  rmSync(dir, { recursive: true, force: true });
}, 120_000);

describe('approval by link over --http (built CLI, real JWTs, real Chromium)', { timeout: 300_000 }, () => {
  it("case link-2 (someone else's retry): U1's call approved on the page; U2's same call is not approved for U2 (a link of its own), nothing deleted; U1's retry then deletes once", async () => {
    const u1 = await connectNoElicitation(server.url, await token('u1', P1));
    const u2 = await connectNoElicitation(server.url, await token('u2', P1));
    const target = file('link-2.txt');
    const asked = linkOf(await del(u1, 'link-2.txt'));
    await approveOnPage(asked.url);
    expect(existsSync(target)).toBe(true); // the page only records; the retry acts
    const other = linkOf(await del(u2, 'link-2.txt'));
    expect(other.id).not.toBe(asked.id);
    expect(existsSync(target)).toBe(true);
    // Control: U1's own retry deletes, once.
    expect(textOf(await del(u1, 'link-2.txt'))).toMatch(/^Deleted `.*link-2\.txt` \(5 bytes\)\.$/);
    expect(existsSync(target)).toBe(false);
    file('link-2.txt');
    const again = linkOf(await del(u1, 'link-2.txt'));
    expect(again.id).not.toBe(asked.id);
    expect(existsSync(target)).toBe(true);
  });

  it('without token auth (every caller local) the link flow is off: a client without elicitation is refused as before (-32021), nothing deleted; control: with token auth it gets a link', async () => {
    const open = await startHttpServer([
      '--root',
      root,
      '--http',
      `127.0.0.1:${P2}`,
      '--approval',
      'passkey',
      '--approvers',
      approversPath,
      '--public-url',
      publicUrl(P2),
      '--allowed-hosts',
      HOST,
      '--approval-wait',
      '0',
    ]);
    servers.push(open);
    const target = file('no-tokens.txt');
    const c = await connectNoElicitation(open.url);
    expect(await del(c, 'no-tokens.txt')).toEqual({
      kind: 'error',
      code: -32021,
      message:
        '[ERR_CONFIRM_NO_ELICITATION] This tool needs a human confirmation, but the client did not declare the elicitation capability, so it cannot ask; nothing was done.',
      data: { requiredCapabilities: { elicitation: { form: {} } } },
    });
    expect(existsSync(target)).toBe(true);
    // Control: the server with token auth gives the same kind of client a link.
    const u1 = await connectNoElicitation(server.url, await token('u1', P1));
    linkOf(await del(u1, 'no-tokens.txt'));
    expect(existsSync(target)).toBe(true);
  });
});
