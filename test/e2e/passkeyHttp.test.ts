/**
 * Passkey approval over `--http` end to end: the built CLI as real subprocesses (enrolment with
 * `--public-url` and `--principal ISS SUB`, servers with `--http … --approval passkey --public-url`),
 * real MCP clients over Streamable HTTP with real JWTs (RS256, a local JWK set), and real headless
 * Chromium with WebAuthn virtual authenticators (CDP).
 *
 * The public URL is `http://approve.test:PORT`, so the RP ID is `approve.test`, not `localhost`:
 * Chromium maps the name to 127.0.0.1 (`--host-resolver-rules`) and treats those origins as secure
 * (`--unsafely-treat-insecure-origin-as-secure`), as a TLS origin would be. Node's own requests go to
 * 127.0.0.1 with `Host: approve.test:PORT`.
 *
 * Replicas share one public URL: replica A listens on 127.0.0.2:PORT (only MCP clients reach it),
 * replica B on 127.0.0.1:PORT (where the browser's `approve.test` lands), with one key file and one
 * SQLite or Redis ledger. `REDIS_URL` (scripts/start-redis.sh) is required: missing, the Redis test fails.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitationCompleteNotificationSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
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
import { runProcess } from '../helpers/processes.js';
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
import { MAIN, runCli, startHttpServer, type HttpServerProcess } from '../helpers/httpServer.js';

const DOCS = resolve(import.meta.dirname, '../../docs');
const ISSUER = 'https://auth.example.test';
const HOST = 'approve.test';
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'";
const URL_ACCEPT = { confirm: { action: 'accept' } };
const publicUrl = (port: number): string => `http://${HOST}:${port}`;

let dir: string;
let root: string;
let jwksPath: string;
let approversPath: string;
let signingKey: CryptoKey;
let browser: Browser;
/** Approver for principal u1 only. */
let ann: AuthPage;
/** Approver for principal u2 only, on an authenticator of his own. */
let bob: AuthPage;
/** The single server's port, and the two replica pairs' ports. */
let P1: number;
let P2: number;
let P3: number;
let single: HttpServerProcess;
const children: ChildProcess[] = [];
const servers: HttpServerProcess[] = [];
const clients: Client[] = [];

/** A port free on 127.0.0.1, 127.0.0.2, ::1 at once. */
const freePort = (): Promise<number> => freePortOn(['127.0.0.1', '127.0.0.2', '::1']);

/** A JWT access token of `sub` at ISSUER for the resource (the public URL's /mcp) on `port`. */
const token = (sub: string, port: number): Promise<string> =>
  mintToken(signingKey, ISSUER, sub, `${publicUrl(port)}/mcp`);

/** A URL-mode v2 client with a bearer token (closed after all). */
async function connectUrlClient(mcpUrl: URL, bearer: string): Promise<Client> {
  const client = await connectUrlClientOf('passkey-http-test', mcpUrl, bearer);
  clients.push(client);
  return client;
}

const round1 = (c: Client, path: string): Promise<Reply> => callTool(c, { name: 'delete_file', arguments: { path } });
const round2 = (c: Client, path: string, state: string): Promise<Reply> =>
  callTool(c, { name: 'delete_file', arguments: { path }, inputResponses: URL_ACCEPT, requestState: state });
const textOf = (r: Reply): string => (r.kind === 'result' ? r.text : JSON.stringify(r));

const elicitation = urlElicitation;

function file(name: string, content = 'data\n'): string {
  const p = join(root, name);
  writeFileSync(p, content);
  return p;
}

async function optionsFor(pageUrl: string): Promise<Record<string, unknown>> {
  const r = await pageRequest(`${pageUrl}/options`, { origin: new URL(pageUrl).origin, body: {} });
  expect(r.status, r.body).toBe(200);
  return (JSON.parse(r.body) as { options: Record<string, unknown> }).options;
}

async function approveOnPage(page: AuthPage, url: string): Promise<string> {
  await open(page, url);
  await page.page.click('#approve');
  return outcomeOf(page.page);
}

/** Starts `mcp-confirm approvers enroll …`; resolves with the first stdout line (the URL) and the exit. */
const startEnrol = (args: string[]): Promise<Enrolment> => startEnrolOf(args, children);

/** The server arguments of a deployment whose public URL is http://approve.test:PORT. */
function serveArgs(bind: string, port: number, extra: string[] = []): string[] {
  return [
    '--root',
    root,
    '--http',
    `${bind}:${port}`,
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
    ...extra,
  ];
}

async function serve(args: string[]): Promise<HttpServerProcess> {
  const server = await startHttpServer(args);
  servers.push(server);
  return server;
}

beforeAll(async () => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-passkey-http-')));
  root = join(dir, 'root');
  mkdirSync(root);
  approversPath = join(dir, 'approvers.json');
  jwksPath = join(dir, 'jwks.json');
  signingKey = await writeSigningKey(jwksPath);
  P1 = await freePort();
  P2 = await freePort();
  P3 = await freePort();
  browser = await launchBrowser([
    `--host-resolver-rules=MAP ${HOST} 127.0.0.1`,
    `--unsafely-treat-insecure-origin-as-secure=${[P1, P2, P3].map(publicUrl).join(',')}`,
  ]);
  ann = await newAuthPage(browser);
  bob = await newAuthPage(browser);
  // ann: the first approver, for u1.
  const first = await startEnrol(enrolArgs(approversPath, 'ann', publicUrl(P1), ISSUER, 'u1'));
  expect(first.url).toMatch(new RegExp(`^http://approve\\.test:${P1}/enroll/[A-Za-z0-9_-]+$`));
  await enrolOnPage(ann, first, open);
  // bob, for u2, on his own authenticator: ann's passkey authorises the enrolment first (the file
  // already holds her), then bob's page registers his.
  await enrolAuthorisedBy(ann, bob, await startEnrol(enrolArgs(approversPath, 'bob', publicUrl(P1), ISSUER, 'u2')));
  single = await serve(serveArgs('127.0.0.1', P1, ['--approval-wait', '0']));
}, 300_000);

afterAll(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => {})));
  for (const s of servers) if (s.proc.exitCode === null) s.proc.kill('SIGTERM');
  await Promise.all(servers.map((s) => s.exited));
  for (const c of children) if (c.exitCode === null) c.kill();
  await browser?.close();
  rmSync(dir, { recursive: true, force: true });
}, 120_000);

describe('passkey approval over --http (real Chromium, RP ID approve.test, real JWTs)', { timeout: 300_000 }, () => {
  it("enrolment with --public-url and --principal ISS SUB wrote RP ID approve.test and each approver's principal (iss + sub), mode 0600", async () => {
    expect(statSync(approversPath).mode & 0o777).toBe(0o600);
    const saved = JSON.parse(readFileSync(approversPath, 'utf8')) as {
      rpId: string;
      approvers: Array<{ name: string; principals: string[] }>;
    };
    expect(saved.rpId).toBe(HOST);
    expect(saved.approvers.map((a) => [a.name, a.principals])).toEqual([
      ['ann', [JSON.stringify(['jwt', ISSUER, 'u1'])]],
      ['bob', [JSON.stringify(['jwt', ISSUER, 'u2'])]],
    ]);
    const [annCred] = await ann.credentials();
    const [bobCred] = await bob.credentials();
    expect(annCred!.rpId).toBe(HOST);
    expect(bobCred!.rpId).toBe(HOST);
    expect((await ann.credentials()).length).toBe(1); // bob's passkey is on his authenticator only
    const list = await runProcess(process.execPath, [MAIN, 'approvers', 'list', '--approvers', approversPath]);
    expect(list.status).toBe(0);
    expect(list.stdout).toMatch(
      /^ann\tcredential \S+\tprincipals u1 \(issuer https:\/\/auth\.example\.test\)\trp approve\.test\tenrolled /m,
    );
    expect(list.stdout).toMatch(
      /^bob\tcredential \S+\tprincipals u2 \(issuer https:\/\/auth\.example\.test\)\trp approve\.test\tenrolled /m,
    );
    expect(single.stderr()).toContain(`approval passkey, page at ${publicUrl(P1)}/approve/… (RP ID approve.test)`);
  });

  it('approves over HTTP on the page at the public URL with the enrolled passkey: deleted once, the replay refused', async () => {
    const c = await connectUrlClient(single.url, await token('u1', P1));
    const target = file('http-approve.txt');
    const e = elicitation(await round1(c, 'http-approve.txt'));
    expect(e.mode).toBe('url');
    expect(e.url).toMatch(new RegExp(`^http://approve\\.test:${P1}/approve/[A-Za-z0-9_-]{32}$`));
    expect(e.message).toContain('http-approve.txt');
    const page = ann.page;
    await page.bringToFront();
    const response = await page.goto(e.url);
    const headers = response!.headers();
    expect(headers['content-security-policy']).toBe(CSP);
    expect(headers['cache-control']).toBe('no-store');
    expect(headers['referrer-policy']).toBe('no-referrer');
    expect(headers['x-content-type-options']).toBe('nosniff');
    const facts = (await page.locator('dl.facts').textContent()) ?? '';
    expect(facts).toContain('mcp-confirm');
    expect(facts).toContain('u1 (issuer https://auth.example.test)');
    expect(facts).toContain('delete_file');
    expect(await page.locator('#values').textContent()).toContain(target);
    mkdirSync(DOCS, { recursive: true });
    await page.screenshot({ path: join(DOCS, 'approval-page-http.png'), fullPage: true });
    await page.click('#approve');
    expect(await outcomeOf(page)).toContain('approved by ann');
    expect(existsSync(target)).toBe(true); // the page only records; the retry acts
    const r2 = await round2(c, 'http-approve.txt', e.state);
    expect(textOf(r2)).toMatch(/^Deleted `.*http-approve\.txt` \(5 bytes\)\.$/);
    expect(existsSync(target)).toBe(false);
    file('http-approve.txt');
    expect(textOf(await round2(c, 'http-approve.txt', e.state))).toMatch(/^\[ERR_CONFIRM_SPENT\]/);
    expect(existsSync(target)).toBe(true);
    await single.waitForStderr('approval page: approved by ann');
  });

  it('deny on the page over HTTP keeps the file: "You declined; nothing was deleted."', async () => {
    const c = await connectUrlClient(single.url, await token('u1', P1));
    const target = file('http-deny.txt');
    const e = elicitation(await round1(c, 'http-deny.txt'));
    await open(ann, e.url);
    await ann.page.click('#deny');
    expect(await outcomeOf(ann.page)).toContain('denied');
    const r2 = await round2(c, 'http-deny.txt', e.state);
    expect(r2).toMatchObject({ kind: 'result', isError: false, text: 'You declined; nothing was deleted.' });
    expect(existsSync(target)).toBe(true);
  });

  it('a 2025-era v1 client over HTTP (a session) is pushed the URL elicitation, the human approves on the page, the call deletes once, and notifications/elicitation/complete names the approval', async () => {
    const target = file('legacy.txt');
    const client = new V1Client(
      { name: 'passkey-http-legacy', version: '0.0.0' },
      { capabilities: { elicitation: { url: {} } } },
    );
    const completed: string[] = [];
    let completeSeen!: () => void;
    const complete = new Promise<void>((res) => (completeSeen = res));
    client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => {
      completed.push(n.params.elicitationId);
      completeSeen();
    });
    const asked: Array<{ mode?: string; url?: string; elicitationId?: string; message: string }> = [];
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      const params = req.params as { mode?: string; url?: string; elicitationId?: string; message: string };
      asked.push(params);
      // The human opens the link and approves with the passkey; the client then says only "accept".
      expect(await approveOnPage(ann, params.url!)).toContain('approved by ann');
      return { action: 'accept' } as never;
    });
    const transport = new V1StreamableHTTPClientTransport(single.url, {
      requestInit: { headers: { Authorization: `Bearer ${await token('u1', P1)}` } },
    });
    await client.connect(transport as never);
    try {
      const result = (await client.callTool({ name: 'delete_file', arguments: { path: 'legacy.txt' } })) as {
        content: Array<{ text: string }>;
        isError?: boolean;
      };
      expect(result.isError ?? false).toBe(false);
      expect(result.content[0]!.text).toMatch(/^Deleted `.*legacy\.txt` \(5 bytes\)\.$/);
      expect(existsSync(target)).toBe(false);
      expect(asked).toHaveLength(1);
      expect(asked[0]!.mode).toBe('url');
      expect(asked[0]!.url).toMatch(new RegExp(`^http://approve\\.test:${P1}/approve/[A-Za-z0-9_-]{32}$`));
      await complete;
      expect(completed).toEqual([asked[0]!.url!.split('/').pop()]);
    } finally {
      await client.close().catch(() => {});
    }
  });

  it("attack: an approver enrolled for principal U1 approving U2's call is refused, never deleted; control: U2's own approver approves it", async () => {
    const c = await connectUrlClient(single.url, await token('u2', P1));
    const target = file('u2-file.txt');
    const e = elicitation(await round1(c, 'u2-file.txt'));
    expect(await open(ann, e.url).then(() => ann.page.locator('dl.facts').textContent())).toContain(
      'u2 (issuer https://auth.example.test)',
    );
    // Through the page: the challenge allows only u2's approvers' credentials; ann's authenticator has none of them.
    const options = await optionsFor(e.url);
    const allowed = (options.allowCredentials as Array<{ id: string }>).map((c2) => c2.id);
    const saved = JSON.parse(readFileSync(approversPath, 'utf8')) as {
      approvers: Array<{ name: string; credentialId: string }>;
    };
    expect(allowed).toEqual(saved.approvers.filter((a) => a.name === 'bob').map((a) => a.credentialId));
    expect(await approveOnPage(ann, e.url)).toContain('refused');
    // Her own valid, user-verified assertion for this approval's challenge, asked without a credential list: refused by the server.
    await open(ann, e.url);
    const assertion = await assertionIn(ann.page, { ...(await optionsFor(e.url)), allowCredentials: [] });
    expect(assertion.id).toBe(saved.approvers.find((a) => a.name === 'ann')!.credentialId);
    const r = await pageRequest(`${e.url}/assertion`, { origin: publicUrl(P1), body: assertion });
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body).message).toContain('not an approver for this principal');
    // U2's retry: asked again with the same URL, nothing deleted.
    expect(elicitation(await round2(c, 'u2-file.txt', e.state)).url).toBe(e.url);
    expect(existsSync(target)).toBe(true);
    // Control: bob, u2's approver, approves on the same page; the same retry deletes.
    expect(await approveOnPage(bob, e.url)).toContain('approved by bob');
    expect(textOf(await round2(c, 'u2-file.txt', e.state))).toMatch(/^Deleted /);
    expect(existsSync(target)).toBe(false);
  });

  it('attack: the page without its approval id, on another Host, or POSTed without or with a foreign Origin is refused; control: the page needs no bearer token, and its own Origin is taken', async () => {
    const c = await connectUrlClient(single.url, await token('u1', P1));
    const target = file('http-origin.txt');
    const e = elicitation(await round1(c, 'http-origin.txt'));
    const origin = publicUrl(P1);
    // Without the approval id (or with one never issued): nothing.
    for (const path of ['/approve', '/approve/', `/approve/${'A'.repeat(32)}`, '/approve//options']) {
      const r = await pageRequest(`${origin}${path}`, path.endsWith('/options') ? { origin, body: {} } : {});
      expect(r.status, path).toBe(404);
      expect(r.body).not.toContain('id="approve"');
    }
    expect((await pageRequest(`${origin}/approve/${'A'.repeat(32)}/options`, { origin, body: {} })).status).toBe(404);
    // Another Host: a foreign name (the app's DNS-rebinding check), or the listener's own address (the page's own check).
    expect((await pageRequest(e.url, { host: `evil.test:${P1}` })).status).toBe(403);
    expect((await pageRequest(e.url, { host: `127.0.0.1:${P1}` })).status).toBe(421);
    // POSTs without Origin, with a foreign one, or with one differing in scheme, host or port.
    for (const bad of [
      undefined,
      `http://evil.test:${P1}`,
      `http://localhost:${P1}`,
      `http://127.0.0.1:${P1}`,
      `https://${HOST}:${P1}`,
      `http://${HOST}:1`,
      'null',
    ]) {
      for (const action of ['options', 'deny', 'assertion']) {
        const r = await pageRequest(`${e.url}/${action}`, { ...(bad === undefined ? {} : { origin: bad }), body: {} });
        expect(r.status, `${action} with Origin ${String(bad)}`).toBe(403);
      }
    }
    // Still pending. Control: the page answers without any Authorization header (MCP itself wants a token) …
    const page = await pageRequest(e.url);
    expect(page.status).toBe(200);
    expect(page.body).toContain('id="approve"');
    const mcp = await rawRequest(single.url.href, {
      method: 'POST',
      headers: { host: single.url.host, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(mcp.status).toBe(401);
    // … and a POST from the page's own origin is taken.
    expect((await pageRequest(`${e.url}/options`, { origin, body: {} })).status).toBe(200);
    expect((await pageRequest(`${e.url}/deny`, { origin, body: {} })).status).toBe(200);
    expect(textOf(await round2(c, 'http-origin.txt', e.state))).toBe('You declined; nothing was deleted.');
    expect(existsSync(target)).toBe(true);
  });

  it('refuses at start-up (exit 2, naming it) --http passkey without --public-url, a public URL whose host is not allowed, an IP or a path, approvers of another RP ID, --approval-port; control: each fixed, it serves', async () => {
    const base = [
      '--root',
      root,
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
    const localhostFile = join(dir, 'approvers-localhost.json');
    const saved = JSON.parse(readFileSync(approversPath, 'utf8')) as { approvers: unknown[] };
    writeFileSync(localhostFile, JSON.stringify({ version: 1, rpId: 'localhost', approvers: saved.approvers }), {
      mode: 0o600,
    });
    const resource = ['--resource', 'http://approve.test:9/mcp'];
    for (const [args, says] of [
      [[...base, ...resource], '--approval passkey with --http needs --public-url URL'],
      [[...base, '--public-url', 'http://approve.test:9'], '--public-url host approve.test is not an allowed host'],
      [[...base, ...resource, '--public-url', 'http://127.0.0.1:9'], 'cannot be an IP address'],
      [[...base, ...resource, '--public-url', 'http://approve.test:9/approve'], 'must be an origin only'],
      [[...base, ...resource, '--public-url', 'ftp://approve.test'], 'must be an http(s) URL'],
      [
        [...base, ...resource, '--public-url', 'http://approve.test:9', '--approval-port', '5000'],
        '--approval-port is for stdio',
      ],
      [
        [
          '--root',
          root,
          '--approval',
          'passkey',
          '--approvers',
          approversPath,
          '--public-url',
          'http://approve.test:9',
        ],
        '--public-url is for --http',
      ],
      [['--root', root, '--http', '127.0.0.1:0', '--public-url', 'http://approve.test:9'], 'need --approval passkey'],
    ] as const) {
      const r = await runCli([...args]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toContain(says);
    }
    // Approvers enrolled for another RP ID: named.
    const other = await runCli([
      ...base.slice(0, -1),
      localhostFile,
      ...resource,
      '--public-url',
      'http://approve.test:9',
    ]);
    expect(other.code).toBe(2);
    expect(other.stderr).toContain(
      'approvers ("ann", "bob") were enrolled for RP ID "localhost", but this page\'s RP ID is "approve.test"',
    );
    // Controls: the host allowed by --allowed-hosts instead of --resource; the right approvers file.
    const viaAllowed = await serve([...base, '--allowed-hosts', HOST, '--public-url', 'http://approve.test:9']);
    expect(viaAllowed.stderr()).toContain(
      'approval passkey, page at http://approve.test:9/approve/… (RP ID approve.test)',
    );
    expect(viaAllowed.stderr()).toContain(
      'warning: --public-url http://approve.test:9: browsers allow passkeys only in a secure context',
    );
    const viaResource = await serve([...base, ...resource, '--public-url', 'https://approve.test']);
    expect(viaResource.stderr()).toContain('page at https://approve.test/approve/…');
    expect(viaResource.stderr()).not.toContain('secure context');
    for (const s of [viaAllowed, viaResource]) s.proc.kill('SIGTERM');
    expect(await viaAllowed.exited).toBe(0);
    expect(await viaResource.exited).toBe(0);
  });

  it('refuses bad enrolment options for HTTP (exit 2 or 1, naming them): --principal without SUB or with a non-URL issuer, an IP public URL, a file of another RP ID', async () => {
    const enrol = (...args: string[]) =>
      runProcess(process.execPath, [
        MAIN,
        'approvers',
        'enroll',
        '--approvers',
        join(dir, 'new.json'),
        '--name',
        'carol',
        '--timeout',
        '5',
        ...args,
      ]);
    for (const [args, says] of [
      [['--principal', ISSUER], '--principal takes two values'],
      [['--principal', 'not-a-url', 'u1'], 'ISS is the token issuer, an http(s) URL'],
      [['--public-url', 'http://10.0.0.1:8080'], 'cannot be an IP address'],
      [['--public-url', 'http://approve.test:8080?x=1'], 'must be an origin only'],
    ] as const) {
      const r = await enrol(...args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).toContain(says);
      expect(r.stdout).toBe('');
    }
    expect(existsSync(join(dir, 'new.json'))).toBe(false);
    const list = await runProcess(process.execPath, [
      MAIN,
      'approvers',
      'list',
      '--approvers',
      approversPath,
      '--principal',
      ISSUER,
      'u1',
    ]);
    expect(list.status).toBe(2);
    expect(list.stderr).toContain('belong to approvers enroll');
    // Into a file made for approve.test, without --public-url (RP ID localhost): refused before any page starts.
    const mixed = await runProcess(process.execPath, [
      MAIN,
      'approvers',
      'enroll',
      '--approvers',
      approversPath,
      '--name',
      'carol',
      '--timeout',
      '5',
    ]);
    expect(mixed.status).toBe(1);
    expect(mixed.stdout).toBe('');
    expect(mixed.stderr).toContain('was made for RP ID "approve.test", not "localhost"');
  });
});

/** Starts replicas A (127.0.0.2:PORT, MCP clients only) and B (127.0.0.1:PORT, where the browser lands), sharing keys and `ledger`. */
async function replicaPair(port: number, ledger: string): Promise<{ a: HttpServerProcess; b: HttpServerProcess }> {
  const keygen = await runProcess(process.execPath, [MAIN, 'keygen', '--kid', 'r1']);
  const keyPath = join(dir, `keys-${port}.json`);
  writeFileSync(keyPath, keygen.stdout, { mode: 0o600 });
  const extra = [
    '--key-file',
    keyPath,
    '--ledger',
    ledger,
    '--audience',
    `passkey-http-${randomUUID()}`,
    '--approval-wait',
    '600',
  ];
  // One after the other: the first creates the SQLite file and its tables.
  const a = await serve(serveArgs('127.0.0.2', port, extra));
  const b = await serve(serveArgs('127.0.0.1', port, extra));
  return { a, b };
}

/**
 * Round 1 on A, the page approved on B (the browser's approve.test), round 2 on B; then round 1 on A
 * and round 2 on A sent before the approval, answered once B recorded it (A reads the shared store).
 */
async function acrossReplicas(port: number, ledger: string): Promise<void> {
  const { a, b } = await replicaPair(port, ledger);
  const bearer = await token('u1', port);
  const onA = await connectUrlClient(a.url, bearer);
  const onB = await connectUrlClient(b.url, bearer);
  expect(a.url.hostname).toBe('127.0.0.2');
  expect(b.url.hostname).toBe('127.0.0.1');
  // 1. Round 1 on A; page on B; round 2 on B.
  const first = file(`replica-1-${port}.txt`);
  const e1 = elicitation(await round1(onA, `replica-1-${port}.txt`));
  expect(e1.url.startsWith(`${publicUrl(port)}/approve/`)).toBe(true);
  expect(await approveOnPage(ann, e1.url)).toContain('approved by ann');
  await b.waitForStderr('approval page: approved by ann');
  expect(a.stderr()).not.toContain('approval page:'); // A never saw the page
  expect(textOf(await round2(onB, `replica-1-${port}.txt`, e1.state))).toMatch(/^Deleted /);
  expect(existsSync(first)).toBe(false);
  file(`replica-1-${port}.txt`);
  expect(textOf(await round2(onA, `replica-1-${port}.txt`, e1.state))).toMatch(/^\[ERR_CONFIRM_SPENT\]/); // spent once, anywhere
  expect(existsSync(first)).toBe(true);
  // 2. Round 1 on A; round 2 on A sent first, waiting; the page approved on B; A answers after.
  const second = file(`replica-2-${port}.txt`);
  const e2 = elicitation(await round1(onA, `replica-2-${port}.txt`));
  const order: string[] = [];
  const waiting = round2(onA, `replica-2-${port}.txt`, e2.state).then((r) => {
    order.push('round 2 on A answered');
    return r;
  });
  await open(ann, e2.url);
  order.push('approve clicked on B');
  await ann.page.click('#approve');
  expect(await outcomeOf(ann.page)).toContain('approved by ann');
  expect(textOf(await waiting)).toMatch(/^Deleted /);
  expect(order).toEqual(['approve clicked on B', 'round 2 on A answered']);
  expect(existsSync(second)).toBe(false);
  // A's log line arrives on its stderr, its own pipe, independently of its answer: waited for (a
  // read right after the answer failed once under load), then A is seen never to have served the page.
  await a.waitForStderr('confirmed and done (approved by ann)');
  expect(a.stderr()).not.toContain('approval page:');
}

describe(
  'passkey approval across two --http replicas sharing a ledger (page on one, rounds on the other)',
  { timeout: 300_000 },
  () => {
    it("SQLite: round 1 on replica A, approved on replica B's page, round 2 on B (the replay on A refused), and round 2 on A waiting for B's approval", async () => {
      await acrossReplicas(P2, `sqlite:${join(dir, 'ledger.sqlite')}`);
    });

    it("Redis: round 1 on replica A, approved on replica B's page, round 2 on B (the replay on A refused), and round 2 on A waiting for B's approval", async () => {
      const url = process.env.REDIS_URL;
      if (!url)
        throw new Error(
          'REDIS_URL is not set: start Redis with scripts/start-redis.sh and export REDIS_URL=redis://127.0.0.1:PORT',
        );
      await acrossReplicas(P3, url);
    });
  },
);
