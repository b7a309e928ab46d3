/**
 * `mcp-confirm proxy` with a Streamable HTTP upstream (`--upstream-url`, `--upstream-header`) and
 * serving its client over Streamable HTTP (`--http` with JWT auth): the built CLI as a real
 * subprocess; the upstream a real SDK server over HTTP in a child process
 * (fixtures/httpUpstream.mjs, built with SDK v1 for the 2025 era and SDK v2 for 2026), recording
 * the headers of every request it receives; real clients (v2 pinned to 2026-07-28, v1 for 2025).
 * Needs `npm run build` first.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createServer as createTcpServer } from 'node:net';
import { createInterface } from 'node:readline';
import { Client, LOG_LEVEL_META_KEY } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCEPT, asked, callTool, MANUAL_CLIENT_OPTIONS } from '../helpers/harness.js';
import {
  connectLegacy,
  connectModern,
  MCP_POST_HEADERS,
  LEGACY_INITIALIZE,
  rawRequest,
  startHttpServer,
  type HttpServerProcess,
} from '../helpers/httpServer.js';
import { runProcess } from '../helpers/processes.js';
import { resultText as text, startStdioProxy, type StdioProxy } from '../helpers/proxyProcess.js';
import { mintToken, writeSigningKey } from '../helpers/tokens.js';
import { upstreamCalls as calls } from '../helpers/upstreamCalls.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');
const HTTP_UPSTREAM = resolve(import.meta.dirname, 'fixtures/httpUpstream.mjs');
const STDIO_UPSTREAM = resolve(import.meta.dirname, 'fixtures/upstream.mjs');
const ISSUER = 'https://auth.example.test';
/** The upstream's own credential, handed to the proxy through the environment. */
const UPSTREAM_SECRET = 'Bearer upstream-secret-7f3a9c';
const TENANT_KEY = 'tenant-key-51be0d';

let R: string;
let jwksPath: string;
let signingKey: CryptoKey;
const children: ChildProcess[] = [];
const closers: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-proxyhttp-')));
  jwksPath = join(R, 'jwks.json');
  signingKey = await writeSigningKey(jwksPath);
  // The proxies started by these tests read their upstream credentials from here ($VAR).
  process.env['PROXY_TEST_UPSTREAM_AUTH'] = UPSTREAM_SECRET;
  process.env['PROXY_TEST_TENANT_KEY'] = TENANT_KEY;
});
afterAll(async () => {
  for (const c of closers.splice(0).reverse()) await c().catch(() => {});
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(R, { recursive: true, force: true });
});

let dirs = 0;
function freshDir(): string {
  const dir = join(R, `d${++dirs}`);
  mkdirSync(dir);
  return dir;
}

/** Starts the HTTP fixture upstream of `era` in `dir`; resolves with its endpoint URL (its first stdout line). */
async function startUpstream(era: '2025' | '2026', dir: string): Promise<string> {
  const child = spawn(process.execPath, [HTTP_UPSTREAM, era, dir], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((res, rej) => {
    createInterface({ input: child.stdout! }).once('line', res);
    child.once('exit', (code) => rej(new Error(`the HTTP upstream exited with ${code} before listening`)));
  });
}

/** The headers of every request the upstream received, in order. */
function headersSeen(dir: string): Array<Record<string, string>> {
  return readFileSync(join(dir, 'headers.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, string>);
}

const HEADER_ARGS = [
  '--upstream-header',
  'X-Tenant-Key: $PROXY_TEST_TENANT_KEY',
  '--upstream-header',
  'X-Client-Name: mcp-confirm tests',
];

/** The environment of a proxy started by the SDK's stdio transports. */
function proxyEnv(): Record<string, string> {
  return { PATH: process.env['PATH'] ?? '', PROXY_TEST_TENANT_KEY: TENANT_KEY };
}

/** `mcp-confirm proxy --upstream-url URL [headers] [extra]` over stdio with the manual v2 client. */
function stdioProxy(url: string, extra: string[] = []): Promise<StdioProxy> {
  // The SDK's stdio transport passes only a few variables by default: the $VAR ones are given explicitly, as a host's "env" would.
  return startStdioProxy(['--upstream-url', url, ...HEADER_ARGS, ...extra], {
    name: 'proxy-http-test',
    closers,
    env: proxyEnv(),
  });
}

describe.each([
  ['2025', 'SDK v1, 2025-11-25'],
  ['2026', 'SDK v2, 2026-07-28'],
] as const)('--upstream-url: a Streamable HTTP upstream of the %s era (%s)', (era, _built) => {
  it('write_note asks and forwards exactly the confirmed text once; the replay is ERR_CONFIRM_SPENT; read_note passes with no question', async () => {
    const dir = freshDir();
    const { client, stderr } = await stdioProxy(await startUpstream(era, dir));
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(['read_note', 'write_note']);
    const { state, message } = asked(
      await callTool(client, { name: 'write_note', arguments: { text: 'exactly this' } }),
    );
    expect(message).toContain(`of the upstream server \`http-upstream-${era}\``);
    expect(message).toContain('Argument `text`: `exactly this`');
    expect(calls(dir)).toEqual([]);
    const done = await callTool(client, {
      name: 'write_note',
      arguments: { text: 'exactly this' },
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(text(done)).toBe('written');
    expect(calls(dir)).toEqual(['exactly this']);
    const replay = await callTool(client, {
      name: 'write_note',
      arguments: { text: 'exactly this' },
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(replay.kind === 'result' && replay.text.startsWith('[ERR_CONFIRM_SPENT]')).toBe(true);
    const moved = asked(await callTool(client, { name: 'write_note', arguments: { text: 'harmless' } }));
    const attack = await callTool(client, {
      name: 'write_note',
      arguments: { text: 'evil' },
      inputResponses: ACCEPT,
      requestState: moved.state,
    });
    expect(attack.kind === 'result' && attack.text.startsWith('[ERR_CONFIRM_MISMATCH]')).toBe(true);
    expect(calls(dir)).toEqual(['exactly this']);
    expect(text(await callTool(client, { name: 'read_note', arguments: {} }))).toBe('exactly this');
    // Every upstream request carried the configured headers, the $VAR one read from the environment.
    const seen = headersSeen(dir);
    expect(seen.length).toBeGreaterThan(3);
    for (const h of seen) expect(h).toMatchObject({ 'x-tenant-key': TENANT_KEY, 'x-client-name': 'mcp-confirm tests' });
    expect(stderr()).toContain(`upstream at ${url(seen)}`);
    expect(stderr()).not.toContain(TENANT_KEY);
  });

  it('a 2025-era v1 client over stdio is asked once through elicitation/create and the upstream called once', async () => {
    const dir = freshDir();
    const upstream = await startUpstream(era, dir);
    const questions: string[] = [];
    const client = new V1Client({ name: 'legacy', version: '0.0.0' }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      questions.push((req.params as { message: string }).message);
      return { action: 'accept', content: { confirmed: true } };
    });
    await client.connect(
      new V1StdioClientTransport({
        command: process.execPath,
        args: [MAIN, 'proxy', '--upstream-url', upstream, ...HEADER_ARGS],
        env: proxyEnv(),
        stderr: 'pipe',
      }),
    );
    closers.push(() => client.close());
    const r = (await client.callTool({ name: 'write_note', arguments: { text: 'from v1' } })) as {
      content: Array<{ text?: string }>;
      isError?: boolean;
    };
    expect(r.isError ?? false).toBe(false);
    expect(r.content[0]?.text).toBe('written');
    expect(questions).toHaveLength(1);
    expect(questions[0]).toContain('Argument `text`: `from v1`');
    expect(calls(dir)).toEqual(['from v1']);
  });
});

/** The upstream URL as the proxy names it, from the Host header the upstream saw. */
function url(seen: Array<Record<string, string>>): string {
  return `http://${seen[0]!['host']}/mcp`;
}

/** A JWT access token for the proxy's resource, subject `sub`. */
function token(resource: URL, sub: string): Promise<string> {
  return mintToken(signingKey, ISSUER, sub, resource.href, { clientId: 'notes-app', lifetimeSeconds: 600 });
}

describe('mcp-confirm proxy --http: the client side over Streamable HTTP with JWT auth', () => {
  let dir: string;
  let proxy: HttpServerProcess;

  beforeAll(async () => {
    dir = freshDir();
    const upstream = await startUpstream('2025', dir);
    proxy = await startHttpServer([
      'proxy',
      '--http',
      '127.0.0.1:0',
      '--auth-issuer',
      ISSUER,
      '--auth-jwks',
      jwksPath,
      '--upstream-url',
      upstream,
      '--upstream-header',
      'Authorization: $PROXY_TEST_UPSTREAM_AUTH',
    ]);
    closers.push(async () => {
      if (proxy.proc.exitCode === null) proxy.proc.kill('SIGKILL');
      await proxy.exited;
    });
  });

  it("no token passthrough: the upstream sees only the configured Authorization, never the client's token; control: the client's confirmed call reached it", async () => {
    const clientToken = await token(proxy.url, 'u1');
    const client = await connectModern(proxy.url, clientToken);
    closers.push(() => client.close());
    const before = headersSeen(dir).length;
    const { state } = asked(await callTool(client, { name: 'write_note', arguments: { text: 'passthrough check' } }));
    expect(
      text(
        await callTool(client, {
          name: 'write_note',
          arguments: { text: 'passthrough check' },
          inputResponses: ACCEPT,
          requestState: state,
        }),
      ),
    ).toBe('written');
    expect(calls(dir)).toContain('passthrough check');
    const seen = headersSeen(dir);
    expect(seen.length).toBeGreaterThan(before);
    const signature = clientToken.split('.')[2]!;
    for (const h of seen) {
      expect(h['authorization']).toBe(UPSTREAM_SECRET);
      expect(JSON.stringify(h)).not.toContain(signature);
      expect(JSON.stringify(h)).not.toContain('notes-app');
    }
    expect(readFileSync(join(dir, 'headers.jsonl'), 'utf8')).not.toContain(clientToken);
    // Neither credential reaches the proxy's diagnostics.
    expect(proxy.stderr()).not.toContain(UPSTREAM_SECRET);
    expect(proxy.stderr()).not.toContain(signature);
  });

  it("the main server's rules: 401 with the RFC 9728 challenge without a token, 403 for a foreign Host, /healthz answers", async () => {
    const none = await rawRequest(proxy.url, {
      headers: { ...MCP_POST_HEADERS, Host: proxy.url.host },
      body: LEGACY_INITIALIZE,
    });
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toContain(
      `resource_metadata="http://${proxy.url.host}/.well-known/oauth-protected-resource/mcp"`,
    );
    const foreign = await rawRequest(proxy.url, {
      headers: { ...MCP_POST_HEADERS, Host: 'evil.example.test' },
      body: LEGACY_INITIALIZE,
    });
    expect(foreign.status).toBe(403);
    const health = await rawRequest(proxy.url, { method: 'GET', path: '/healthz', headers: { Host: proxy.url.host } });
    expect(health.status).toBe(200);
  });

  it('attack: a state asked by U1 and redeemed by U2 is refused (-32602) and nothing is forwarded; control: U1 redeems it once, the replay is ERR_CONFIRM_SPENT', async () => {
    const u1 = await connectModern(proxy.url, await token(proxy.url, 'u1'));
    const u2 = await connectModern(proxy.url, await token(proxy.url, 'u2'));
    closers.push(
      () => u1.close(),
      () => u2.close(),
    );
    const args = { text: 'only for u1' };
    const { state } = asked(await callTool(u1, { name: 'write_note', arguments: args }));
    const stolen = await callTool(u2, {
      name: 'write_note',
      arguments: args,
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(stolen).toMatchObject({ kind: 'error', code: -32602 });
    expect(calls(dir)).not.toContain('only for u1');
    expect(
      text(await callTool(u1, { name: 'write_note', arguments: args, inputResponses: ACCEPT, requestState: state })),
    ).toBe('written');
    expect(calls(dir).filter((c) => c === 'only for u1')).toHaveLength(1);
    const replay = await callTool(u1, {
      name: 'write_note',
      arguments: args,
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(replay.kind === 'result' && replay.text.startsWith('[ERR_CONFIRM_SPENT]')).toBe(true);
    expect(calls(dir).filter((c) => c === 'only for u1')).toHaveLength(1);
  });

  it('a 2025-era v1 client with a token is asked through a pushed elicitation/create and the upstream is called once', async () => {
    const { client, asked: questions } = await connectLegacy(
      proxy.url,
      async () => ({ action: 'accept', content: { confirmed: true } }),
      await token(proxy.url, 'u3'),
    );
    closers.push(() => client.close());
    const r = (await client.callTool({ name: 'write_note', arguments: { text: 'legacy over http' } })) as {
      content: Array<{ text?: string }>;
      isError?: boolean;
    };
    expect(r.isError ?? false).toBe(false);
    expect(r.content[0]?.text).toBe('written');
    expect(questions).toHaveLength(1);
    expect(questions[0]).toContain('Argument `text`: `legacy over http`');
    expect(calls(dir).filter((c) => c === 'legacy over http')).toHaveLength(1);
  });
});

describe('mcp-confirm proxy --http: one upstream shared by every client', () => {
  /** A v2 client (no token, loopback) that records the log messages it receives. */
  async function loggingClient(connect: (c: Client) => Promise<void>): Promise<{ client: Client; logs: string[] }> {
    const client = new Client({ name: 'proxy-shared', version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
    const logs: string[] = [];
    client.setNotificationHandler('notifications/message', (n) => void logs.push(String(n.params.data)));
    await connect(client);
    closers.push(() => client.close());
    return { client, logs };
  }

  it("the upstream's log messages reach no client over HTTP and logging is not offered; control: over stdio the same upstream's messages arrive", async () => {
    const proxy = await startHttpServer([
      'proxy',
      '--http',
      '127.0.0.1:0',
      '--',
      process.execPath,
      STDIO_UPSTREAM,
      freshDir(),
    ]);
    closers.push(async () => {
      if (proxy.proc.exitCode === null) proxy.proc.kill('SIGKILL');
      await proxy.exited;
    });
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
    const overHttp = await loggingClient((c) => c.connect(new StreamableHTTPClientTransport(proxy.url)));
    expect(overHttp.client.getServerCapabilities()?.logging).toBeUndefined();
    expect(
      text(await callTool(overHttp.client, { name: 'log', arguments: {}, _meta: { [LOG_LEVEL_META_KEY]: 'debug' } })),
    ).toBe('logged');
    // A relayed message travels on the request's own stream, before its result: none came.
    expect(overHttp.logs).toEqual([]);
    const overStdio = await loggingClient((c) =>
      c.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: [MAIN, 'proxy', '--', process.execPath, STDIO_UPSTREAM, freshDir()],
          stderr: 'pipe',
        }),
      ),
    );
    expect(overStdio.client.getServerCapabilities()?.logging).toEqual({});
    expect(
      text(await callTool(overStdio.client, { name: 'log', arguments: {}, _meta: { [LOG_LEVEL_META_KEY]: 'debug' } })),
    ).toBe('logged');
    while (overStdio.logs.length < 2) await new Promise((r) => setTimeout(r, 20));
    expect(overStdio.logs).toEqual(['a debug detail', 'an error report']);
  });
});

describe('proxy upstream options: clear errors (exit 2), nothing secret echoed', () => {
  const run = (args: string[], env: NodeJS.ProcessEnv = process.env) =>
    runProcess(process.execPath, [MAIN, 'proxy', ...args], { env });

  it('neither -- COMMAND nor --upstream-url, and both, are refused', async () => {
    const neither = await run([]);
    expect(neither.status).toBe(2);
    expect(neither.stderr).toContain('or its Streamable HTTP endpoint with --upstream-url URL');
    const both = await run(['--upstream-url', 'http://127.0.0.1:9/mcp', '--', process.execPath, 'x.mjs']);
    expect(both.status).toBe(2);
    expect(both.stderr).toContain('give either [--] COMMAND or --upstream-url URL, not both');
    const bothWithoutDash = await run(['--upstream-url', 'http://127.0.0.1:9/mcp', process.execPath, 'x.mjs']);
    expect(bothWithoutDash.status).toBe(2);
    expect(bothWithoutDash.stderr).toContain('give either [--] COMMAND or --upstream-url URL, not both');
    const headerAlone = await run(['--upstream-header', 'X-A: b', '--', process.execPath, 'x.mjs']);
    expect(headerAlone.status).toBe(2);
    expect(headerAlone.stderr).toContain('--upstream-header needs --upstream-url URL');
  });

  it('a $VAR that is not set is named, and no header value is echoed', async () => {
    const env = { ...process.env };
    delete env['PROXY_TEST_NOT_SET'];
    const r = await run(
      [
        '--upstream-url',
        'http://127.0.0.1:9/mcp',
        '--upstream-header',
        'X-Api-Key: s3cr3t-literal',
        '--upstream-header',
        'Authorization: $PROXY_TEST_NOT_SET',
      ],
      env,
    );
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(
      '--upstream-header Authorization: the environment variable PROXY_TEST_NOT_SET is not set',
    );
    expect(r.stderr).not.toContain('s3cr3t-literal');
  });

  it('a header without NAME: VALUE is named by position, its text not echoed; a reserved or repeated name is refused', async () => {
    const malformed = await run([
      '--upstream-url',
      'http://127.0.0.1:9/mcp',
      '--upstream-header',
      'Bearer s3cr3t-token',
    ]);
    expect(malformed.status).toBe(2);
    expect(malformed.stderr).toContain("--upstream-header #1 must be 'NAME: VALUE'");
    expect(malformed.stderr).not.toContain('s3cr3t-token');
    const reserved = await run([
      '--upstream-url',
      'http://127.0.0.1:9/mcp',
      '--upstream-header',
      'Mcp-Session-Id: abc',
    ]);
    expect(reserved.status).toBe(2);
    expect(reserved.stderr).toContain('--upstream-header Mcp-Session-Id: this header is set by the MCP transport');
    const twice = await run([
      '--upstream-url',
      'http://127.0.0.1:9/mcp',
      '--upstream-header',
      'X-A: 1',
      '--upstream-header',
      'x-a: 2',
    ]);
    expect(twice.status).toBe(2);
    expect(twice.stderr).toContain('--upstream-header x-a is given twice');
  });

  it('a bad --upstream-url is refused without echoing it; an unreachable one exits 1 naming its origin and path, not its query', async () => {
    const ftp = await run(['--upstream-url', 'ftp://127.0.0.1/mcp?key=s3cr3t-q']);
    expect(ftp.status).toBe(2);
    expect(ftp.stderr).toContain('--upstream-url must be an absolute http or https URL');
    expect(ftp.stderr).not.toContain('s3cr3t-q');
    const userinfo = await run(['--upstream-url', 'https://me:s3cr3t-pw@mcp.example.test/mcp']);
    expect(userinfo.status).toBe(2);
    expect(userinfo.stderr).toContain('must not carry user info');
    expect(userinfo.stderr).not.toContain('s3cr3t-pw');
    // Port 9 (discard) on loopback: nothing listens there on a test machine.
    const down = await run(['--upstream-url', 'http://127.0.0.1:9/mcp?key=s3cr3t-q']);
    expect(down.status).toBe(1);
    expect(down.stderr).toContain(
      'the upstream server at http://127.0.0.1:9/mcp could not be reached or did not complete the handshake',
    );
    expect(down.stderr).not.toContain('s3cr3t-q');
  });

  it('--http on a taken address exits 2 naming it, and ends the upstream it had started (the process exits); control: a free port serves', async () => {
    const taken = createTcpServer();
    await new Promise<void>((res) => taken.listen(0, '127.0.0.1', () => res()));
    closers.push(() => new Promise<void>((res) => taken.close(() => res())));
    const port = (taken.address() as { port: number }).port;
    const r = await run(['--http', `127.0.0.1:${port}`, '--', process.execPath, STDIO_UPSTREAM, freshDir()]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`--http 127.0.0.1:${port}: cannot listen (EADDRINUSE)`);
    const free = await startHttpServer([
      'proxy',
      '--http',
      '127.0.0.1:0',
      '--',
      process.execPath,
      STDIO_UPSTREAM,
      freshDir(),
    ]);
    closers.push(async () => {
      if (free.proc.exitCode === null) free.proc.kill('SIGKILL');
      await free.exited;
    });
    expect(free.stderr()).toContain('serving `fixture-upstream` `1.0.0` over Streamable HTTP at ');
  });

  it('--http with --approval passkey without --public-url is refused naming it (test/e2e/proxyPasskeyHttp.test.ts serves it); --audit without --key-file is refused', async () => {
    const passkey = await run([
      '--http',
      '127.0.0.1:0',
      '--approval',
      'passkey',
      '--approvers',
      join(R, 'approvers.json'),
      '--',
      process.execPath,
      'x.mjs',
    ]);
    expect(passkey.status).toBe(2);
    expect(passkey.stderr).toContain('--approval passkey with --http needs --public-url URL');
    const audit = await run(['--audit', join(R, 'trail'), '--', process.execPath, 'x.mjs']);
    expect(audit.status).toBe(2);
    expect(audit.stderr).toContain('--audit needs --key-file PATH');
  });
});
