/**
 * `mcp-confirm proxy --http … --approval passkey --approvers PATH --public-url URL`: the built CLI as
 * real subprocesses (enrolment with `--public-url` and `--principal ISS SUB`; the proxy in front of
 * the 2025-era fixture upstream over stdio, fixtures/upstream.mjs, and in front of a Streamable
 * HTTP upstream, fixtures/httpUpstream.mjs, with `--upstream-url`), real v2 clients pinned to
 * 2026-07-28 over Streamable HTTP with real JWTs (RS256, a local JWK set), and real headless
 * Chromium with WebAuthn virtual authenticators (CDP).
 *
 * As in passkeyHttp.test.ts, the public URL is `http://approve.test:PORT` (RP ID `approve.test`):
 * Chromium maps the name to 127.0.0.1 (`--host-resolver-rules`) and treats those origins as secure
 * (`--unsafely-treat-insecure-origin-as-secure`); Node's own requests go to 127.0.0.1 with
 * `Host: approve.test:PORT`. Needs `npm run build` first, and chromium (a failure, not a skip).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/client';
import type { CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, type Reply } from '../helpers/harness.js';
import {
  assertionIn,
  launchBrowser,
  newAuthPage,
  outcomeOf,
  rawRequest,
  type AuthPage,
  type Browser,
} from '../helpers/browser.js';
import { upstreamCalls } from '../helpers/upstreamCalls.js';
import { enrolOnPage, startEnrol as startEnrolOf, type Enrolment } from '../helpers/passkeyCli.js';
import {
  connectUrlClient as connectUrlClientOf,
  enrolArgs,
  enrolAuthorisedBy,
  freePortOn,
  mintToken,
  openInFront as open,
  pageRequest,
  urlElicitation,
  writeSigningKey,
} from '../helpers/passkeyHttp.js';
import { runCli, startHttpServer, type HttpServerProcess } from '../helpers/httpServer.js';

const STDIO_UPSTREAM = resolve(import.meta.dirname, 'fixtures/upstream.mjs');
const HTTP_UPSTREAM = resolve(import.meta.dirname, 'fixtures/httpUpstream.mjs');
const ISSUER = 'https://auth.example.test';
const HOST = 'approve.test';
const URL_ACCEPT = { confirm: { action: 'accept' } };
const publicUrl = (port: number): string => `http://${HOST}:${port}`;

let dir: string;
let jwksPath: string;
let approversPath: string;
let signingKey: CryptoKey;
let browser: Browser;
/** Approver for principal u1 only. */
let ann: AuthPage;
/** Approver for principal u2 only, on an authenticator of his own. */
let bob: AuthPage;
/** The port of the proxy in front of the stdio upstream, and of the one in front of the HTTP upstream. */
let P1: number;
let P2: number;
/** Where the stdio upstream writes (calls.log: one JSON line per write_note call). */
let upstreamDir: string;
let proxy: HttpServerProcess;
const children: ChildProcess[] = [];
const servers: HttpServerProcess[] = [];
const clients: Client[] = [];

/** A port free on 127.0.0.1, ::1 at once. */
const freePort = (): Promise<number> => freePortOn(['127.0.0.1', '::1']);

/** A JWT access token of `sub` at ISSUER for the resource (the public URL's /mcp) on `port`. */
const token = (sub: string, port: number): Promise<string> =>
  mintToken(signingKey, ISSUER, sub, `${publicUrl(port)}/mcp`);

/** A URL-mode v2 client with a bearer token (closed after all). */
async function connectUrlClient(mcpUrl: URL, bearer: string): Promise<Client> {
  const client = await connectUrlClientOf('proxy-passkey-http-test', mcpUrl, bearer);
  clients.push(client);
  return client;
}

const elicitation = urlElicitation;

const round1 = (c: Client, text: string): Promise<Reply> => callTool(c, { name: 'write_note', arguments: { text } });
const round2 = (c: Client, text: string, state: string): Promise<Reply> =>
  callTool(c, { name: 'write_note', arguments: { text }, inputResponses: URL_ACCEPT, requestState: state });
const textOf = (r: Reply): string => (r.kind === 'result' ? r.text : JSON.stringify(r));

/** How many times the upstream writing in `where` was called with write_note(`text`). */
const callsWith = (where: string, text: string): number => upstreamCalls(where).filter((t) => t === text).length;

async function approveOnPage(page: AuthPage, url: string): Promise<string> {
  await open(page, url);
  await page.page.click('#approve');
  return outcomeOf(page.page);
}

/** Starts `mcp-confirm approvers enroll …`; resolves with the first stdout line (the URL) and the exit. */
const startEnrol = (args: string[]): Promise<Enrolment> => startEnrolOf(args, children);

/** The proxy's own arguments for a deployment whose public URL is http://approve.test:PORT (then the upstream). */
function proxyArgs(port: number, extra: string[] = []): string[] {
  return [
    'proxy',
    '--http',
    `127.0.0.1:${port}`,
    '--auth-issuer',
    ISSUER,
    '--auth-jwks',
    jwksPath,
    '--resource',
    `${publicUrl(port)}/mcp`,
    '--approval',
    'passkey',
    '--approvers',
    approversPath,
    '--public-url',
    publicUrl(port),
    '--approval-wait',
    '0',
    ...extra,
  ];
}

async function serve(args: string[]): Promise<HttpServerProcess> {
  const server = await startHttpServer(args);
  servers.push(server);
  return server;
}

/** Starts the HTTP fixture upstream of `era` writing in `where`; resolves with its endpoint URL (its first stdout line). */
async function startHttpUpstream(era: '2025' | '2026', where: string): Promise<string> {
  const child = spawn(process.execPath, [HTTP_UPSTREAM, era, where], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((res, rej) => {
    createInterface({ input: child.stdout! }).once('line', res);
    child.once('exit', (code) => rej(new Error(`the HTTP upstream exited with ${code} before listening`)));
  });
}

beforeAll(async () => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-proxy-passkey-http-')));
  upstreamDir = join(dir, 'upstream');
  mkdirSync(upstreamDir);
  approversPath = join(dir, 'approvers.json');
  jwksPath = join(dir, 'jwks.json');
  signingKey = await writeSigningKey(jwksPath);
  P1 = await freePort();
  P2 = await freePort();
  browser = await launchBrowser([
    `--host-resolver-rules=MAP ${HOST} 127.0.0.1`,
    `--unsafely-treat-insecure-origin-as-secure=${[P1, P2].map(publicUrl).join(',')}`,
  ]);
  ann = await newAuthPage(browser);
  bob = await newAuthPage(browser);
  // ann: the first approver, for u1.
  await enrolOnPage(ann, await startEnrol(enrolArgs(approversPath, 'ann', publicUrl(P1), ISSUER, 'u1')), open);
  // bob, for u2, on his own authenticator: ann's passkey authorises the enrolment first (the file
  // already holds her), then bob's page registers his.
  await enrolAuthorisedBy(ann, bob, await startEnrol(enrolArgs(approversPath, 'bob', publicUrl(P1), ISSUER, 'u2')));
  proxy = await serve([...proxyArgs(P1), '--', process.execPath, STDIO_UPSTREAM, upstreamDir]);
}, 300_000);

afterAll(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => {})));
  for (const s of servers) if (s.proc.exitCode === null) s.proc.kill('SIGTERM');
  await Promise.all(servers.map((s) => s.exited));
  for (const c of children) if (c.exitCode === null) c.kill();
  await browser?.close();
  rmSync(dir, { recursive: true, force: true });
}, 120_000);

describe(
  'mcp-confirm proxy --http --approval passkey --public-url (real Chromium, RP ID approve.test, real JWTs)',
  { timeout: 300_000 },
  () => {
    it('approved on the page at the public URL (served on the --http listener, no bearer token), the upstream tool is called once with exactly the text; the replay is ERR_CONFIRM_SPENT', async () => {
      expect(proxy.stderr()).toContain(
        `serving \`fixture-upstream\` \`1.0.0\` over Streamable HTTP at http://127.0.0.1:${P1}/mcp; resource ${publicUrl(P1)}/mcp; auth issuer "${ISSUER}"; upstream spawned over stdio;`,
      );
      expect(proxy.stderr()).toContain(`approval passkey, page at ${publicUrl(P1)}/approve/… (RP ID approve.test)`);
      const c = await connectUrlClient(proxy.url, await token('u1', P1));
      const text = 'approved through the proxy over HTTP';
      const e = elicitation(await round1(c, text));
      expect(e.mode).toBe('url');
      expect(e.url).toMatch(new RegExp(`^http://approve\\.test:${P1}/approve/[A-Za-z0-9_-]{32}$`));
      expect(e.message).toContain('Run the tool `write_note` of the upstream server `fixture-upstream`');
      // The page: no Authorization header (the browser has none), while MCP on the same listener wants a token.
      expect(
        (
          await rawRequest(proxy.url.href, {
            method: 'POST',
            headers: { host: proxy.url.host, 'content-type': 'application/json' },
            body: '{}',
          })
        ).status,
      ).toBe(401);
      const page = await pageRequest(e.url);
      expect(page.status).toBe(200);
      expect(page.body).toContain('id="approve"');
      await open(ann, e.url);
      const facts = (await ann.page.locator('dl.facts').textContent()) ?? '';
      expect(facts).toContain('u1 (issuer https://auth.example.test)');
      expect(facts).toContain('write_note');
      expect(await ann.page.locator('#values').textContent()).toContain(text);
      await ann.page.click('#approve');
      expect(await outcomeOf(ann.page)).toContain('approved by ann');
      // The page only records the approval: nothing reached the upstream yet.
      expect(callsWith(upstreamDir, text)).toBe(0);
      expect(await round2(c, text, e.state)).toMatchObject({ kind: 'result', isError: false, text: 'written' });
      expect(callsWith(upstreamDir, text)).toBe(1);
      expect(readFileSync(join(upstreamDir, 'note.txt'), 'utf8')).toBe(text);
      expect(textOf(await round2(c, text, e.state))).toMatch(/^\[ERR_CONFIRM_SPENT\]/);
      expect(callsWith(upstreamDir, text)).toBe(1);
      await proxy.waitForStderr('approval page: approved by `ann`');
      await proxy.waitForStderr('confirmed and forwarded (approved by `ann`)');
    });

    it("attack: an approver enrolled for principal U1 cannot approve U2's proxied call (nothing forwarded); control: U2's own approver approves it and it is forwarded once", async () => {
      const c = await connectUrlClient(proxy.url, await token('u2', P1));
      const text = "u2's note";
      const e = elicitation(await round1(c, text));
      await open(ann, e.url);
      expect(await ann.page.locator('dl.facts').textContent()).toContain('u2 (issuer https://auth.example.test)');
      // Through the page: the challenge allows only u2's approvers' credentials; ann's authenticator has none of them.
      expect(await approveOnPage(ann, e.url)).toContain('refused');
      // Her own valid, user-verified assertion for this approval's challenge, asked without a credential list: refused by the proxy.
      await open(ann, e.url);
      const options = await pageRequest(`${e.url}/options`, { origin: publicUrl(P1), body: {} });
      expect(options.status, options.body).toBe(200);
      const assertion = await assertionIn(ann.page, {
        ...(JSON.parse(options.body) as { options: Record<string, unknown> }).options,
        allowCredentials: [],
      });
      const saved = JSON.parse(readFileSync(approversPath, 'utf8')) as {
        approvers: Array<{ name: string; credentialId: string }>;
      };
      expect(assertion.id).toBe(saved.approvers.find((a) => a.name === 'ann')!.credentialId);
      const r = await pageRequest(`${e.url}/assertion`, { origin: publicUrl(P1), body: assertion });
      expect(r.status).toBe(403);
      expect(JSON.parse(r.body).message).toContain('not an approver for this principal');
      // U2's retry: asked again with the same URL; nothing forwarded.
      expect(elicitation(await round2(c, text, e.state)).url).toBe(e.url);
      expect(callsWith(upstreamDir, text)).toBe(0);
      // Control: bob, u2's approver, approves on the same page; the same retry is forwarded once.
      expect(await approveOnPage(bob, e.url)).toContain('approved by bob');
      expect(await round2(c, text, e.state)).toMatchObject({ kind: 'result', isError: false, text: 'written' });
      expect(callsWith(upstreamDir, text)).toBe(1);
    });

    it('attack: round 2 before the approval is asked again with the same URL and state, and nothing is forwarded; control: once approved, forwarded once', async () => {
      const c = await connectUrlClient(proxy.url, await token('u1', P1));
      const text = 'not before the passkey (HTTP)';
      const e = elicitation(await round1(c, text));
      for (let i = 0; i < 2; i++) {
        const again = elicitation(await round2(c, text, e.state));
        expect(again.url).toBe(e.url);
        expect(again.state).toBe(e.state);
        expect(callsWith(upstreamDir, text)).toBe(0);
      }
      expect(await approveOnPage(ann, e.url)).toContain('approved by ann');
      expect(await round2(c, text, e.state)).toMatchObject({ kind: 'result', isError: false, text: 'written' });
      expect(callsWith(upstreamDir, text)).toBe(1);
    });

    it('denied on the page: nothing is forwarded ("You declined; nothing was forwarded to the upstream server.")', async () => {
      const c = await connectUrlClient(proxy.url, await token('u1', P1));
      const text = 'denied over HTTP';
      const e = elicitation(await round1(c, text));
      await open(ann, e.url);
      await ann.page.click('#deny');
      expect(await outcomeOf(ann.page)).toContain('denied');
      expect(await round2(c, text, e.state)).toMatchObject({
        kind: 'result',
        text: 'You declined; nothing was forwarded to the upstream server.',
      });
      expect(callsWith(upstreamDir, text)).toBe(0);
    });

    it('with --upstream-url (a Streamable HTTP upstream): approved on the page, the upstream tool is called once; the replay is ERR_CONFIRM_SPENT', async () => {
      const where = join(dir, 'http-upstream');
      mkdirSync(where);
      const upstreamUrl = await startHttpUpstream('2026', where);
      const front = await serve([...proxyArgs(P2), '--upstream-url', upstreamUrl]);
      expect(front.stderr()).toContain(`upstream at ${upstreamUrl};`);
      expect(front.stderr()).toContain(`approval passkey, page at ${publicUrl(P2)}/approve/… (RP ID approve.test)`);
      const c = await connectUrlClient(front.url, await token('u1', P2));
      const text = 'through an HTTP upstream';
      const e = elicitation(await round1(c, text));
      expect(e.url).toMatch(new RegExp(`^http://approve\\.test:${P2}/approve/[A-Za-z0-9_-]{32}$`));
      expect(e.message).toContain('`http-upstream-2026`');
      expect(await approveOnPage(ann, e.url)).toContain('approved by ann');
      expect(callsWith(where, text)).toBe(0);
      expect(await round2(c, text, e.state)).toMatchObject({ kind: 'result', isError: false, text: 'written' });
      expect(callsWith(where, text)).toBe(1);
      expect(textOf(await round2(c, text, e.state))).toMatch(/^\[ERR_CONFIRM_SPENT\]/);
      expect(callsWith(where, text)).toBe(1);
      // SIGTERM drains and ends the proxy (the page, the upstream connection and the ledger closed): exit 0.
      front.proc.kill('SIGTERM');
      expect(await front.exited).toBe(0);
      await front.waitForStderr('mcp-confirm proxy: stopped');
    });

    it('refuses at start-up (exit 2, naming it) --http passkey without --public-url, a public URL whose host is not allowed or an IP, approvers of another RP ID, --approval-port with --http, --public-url over stdio; control: fixed, it serves', async () => {
      const upstream = ['--', process.execPath, STDIO_UPSTREAM, join(dir, 'refusals')];
      mkdirSync(join(dir, 'refusals'));
      const base = [
        'proxy',
        '--http',
        '127.0.0.1:0',
        '--auth-issuer',
        ISSUER,
        '--auth-jwks',
        jwksPath,
        '--approval',
        'passkey',
        '--approvers',
        approversPath,
      ];
      const resource = ['--resource', 'http://approve.test:9/mcp'];
      const localhostFile = join(dir, 'approvers-localhost.json');
      const saved = JSON.parse(readFileSync(approversPath, 'utf8')) as { approvers: unknown[] };
      writeFileSync(localhostFile, JSON.stringify({ version: 1, rpId: 'localhost', approvers: saved.approvers }), {
        mode: 0o600,
      });
      for (const [args, says] of [
        [[...base, ...resource], '--approval passkey with --http needs --public-url URL'],
        [[...base, '--public-url', 'http://approve.test:9'], '--public-url host approve.test is not an allowed host'],
        [[...base, ...resource, '--public-url', 'http://127.0.0.1:9'], 'cannot be an IP address'],
        [
          [...base, ...resource, '--public-url', 'http://approve.test:9', '--approval-port', '5000'],
          '--approval-port is for stdio',
        ],
        [
          ['proxy', '--approval', 'passkey', '--approvers', approversPath, '--public-url', 'http://approve.test:9'],
          '--public-url is for --http',
        ],
        [['proxy', '--http', '127.0.0.1:0', '--public-url', 'http://approve.test:9'], 'need --approval passkey'],
        [
          ['proxy', ...base.slice(1, -1), localhostFile, ...resource, '--public-url', 'http://approve.test:9'],
          'approvers ("ann", "bob") were enrolled for RP ID "localhost", but this page\'s RP ID is "approve.test"',
        ],
      ] as const) {
        const r = await runCli([...args, ...upstream]);
        expect(r.code, args.join(' ')).toBe(2);
        expect(r.stderr).toContain(says);
      }
      // Control: the public URL's host allowed by --allowed-hosts; it serves, with the secure-context warning for http://.
      const ok = await serve([...base, '--allowed-hosts', HOST, '--public-url', 'http://approve.test:9', ...upstream]);
      expect(ok.stderr()).toContain('approval passkey, page at http://approve.test:9/approve/… (RP ID approve.test)');
      expect(ok.stderr()).toContain(
        'warning: --public-url http://approve.test:9: browsers allow passkeys only in a secure context',
      );
      ok.proc.kill('SIGTERM');
      expect(await ok.exited).toBe(0);
    });
  },
);
