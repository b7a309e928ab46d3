/**
 * `mcp-confirm proxy` against hostile or failing upstream answers and oversized arguments: the
 * built CLI as a real subprocess, a real v2 client pinned to 2026-07-28 driving the rounds by hand.
 * The HTTP upstream is fixtures/httpUpstream.mjs (SDK v1, 2025 era) behind a small node:http
 * front in this process that can answer with an error status and a body echoing the request's
 * headers (as a gateway might); the stdio upstream is fixtures/upstream.mjs.
 * Needs `npm run build` first.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCEPT, asked, callTool, MANUAL_CLIENT_OPTIONS, type Reply } from '../helpers/harness.js';
import { runProcess, until } from '../helpers/processes.js';
import { upstreamCalls as calls } from '../helpers/upstreamCalls.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');
const HTTP_UPSTREAM = resolve(import.meta.dirname, 'fixtures/httpUpstream.mjs');
const STDIO_UPSTREAM = resolve(import.meta.dirname, 'fixtures/upstream.mjs');
/** The upstream credential the proxy is configured with (through the environment). */
const SECRET = 'Bearer gateway-echo-secret-91c2f7';

let R: string;
const children: ChildProcess[] = [];
const closers: Array<() => Promise<unknown>> = [];

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-proxyhard-')));
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

/** Starts the HTTP fixture upstream (2025 era) in `dir`; resolves with its endpoint URL. */
async function startUpstream(dir: string): Promise<string> {
  const child = spawn(process.execPath, [HTTP_UPSTREAM, '2025', dir], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((res, rej) => {
    createInterface({ input: child.stdout! }).once('line', res);
    child.once('exit', (code) => rej(new Error(`the HTTP upstream exited with ${code} before listening`)));
  });
}

/**
 * A front in front of the upstream at `target`: forwards every request as it is, except while
 * `failing` says so: then it answers 502 with a body quoting the request's headers.
 * `'tools/call'` fails only the POSTs whose JSON-RPC method is tools/call; `'all'` every request.
 */
/** Front modes: pass through, answer 502 to tools/call or to everything, or never answer tools/list. */
type FrontMode = 'none' | 'tools/call' | 'all' | 'hang tools/list';

async function startFront(target: string): Promise<{ url: string; fail(mode: FrontMode): void }> {
  let failing: FrontMode = 'none';
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const isCall = body.toString('utf8').includes('"method":"tools/call"');
      if (failing === 'hang tools/list' && body.toString('utf8').includes('"method":"tools/list"')) return; // never answered
      if (failing === 'all' || (failing === 'tools/call' && isCall)) {
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(`Bad gateway. Your request headers were: ${JSON.stringify(req.headers)}`);
        return;
      }
      const up = httpRequest(target, { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      up.on('error', () => res.destroy());
      up.end(body);
    });
  });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  closers.push(
    () =>
      new Promise((res) => {
        server.close(res);
        server.closeAllConnections(); // a hung request's connection too
      }),
  );
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/mcp`, fail: (mode) => (failing = mode) };
}

/** `mcp-confirm proxy --upstream-url URL --upstream-header 'Authorization: $VAR' [extra]` over stdio with the manual v2 client. */
async function httpProxy(url: string, extra: string[] = []): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [
      MAIN,
      'proxy',
      '--upstream-url',
      url,
      '--upstream-header',
      'Authorization: $HARDENING_UPSTREAM_AUTH',
      ...extra,
    ],
    env: { PATH: process.env['PATH'] ?? '', HARDENING_UPSTREAM_AUTH: SECRET },
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (c: Buffer) => (err += c.toString('utf8')));
  const client = new Client({ name: 'proxy-hardening-test', version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
  await client.connect(transport);
  closers.push(() => client.close());
  return { client, stderr: () => err };
}

/** `mcp-confirm proxy [extra] -- node fixtures/upstream.mjs DIR` over stdio with the manual v2 client. */
async function stdioProxy(dir: string, extra: string[] = []): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MAIN, 'proxy', ...extra, '--', process.execPath, STDIO_UPSTREAM, dir],
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (c: Buffer) => (err += c.toString('utf8')));
  const client = new Client({ name: 'proxy-hardening-test', version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
  await client.connect(transport);
  closers.push(() => client.close());
  return { client, stderr: () => err };
}

function text(reply: Reply): string {
  if (reply.kind !== 'result') throw new Error(`expected a result, got ${JSON.stringify(reply).slice(0, 400)}`);
  return reply.text;
}

describe('an HTTP upstream answering with an error status', () => {
  it('a 502 whose body echoes the configured Authorization header: the client gets HTTP 502, never the body; stderr neither', async () => {
    const dir = freshDir();
    const front = await startFront(await startUpstream(dir));
    const { client, stderr } = await httpProxy(front.url);
    // Control: healthy, the passed-through read answers normally.
    expect(text(await callTool(client, { name: 'read_note', arguments: {} }))).toBe('(no note)');
    front.fail('tools/call');
    const failed = await callTool(client, { name: 'read_note', arguments: {} });
    expect(failed.kind === 'result' && failed.isError).toBe(true);
    expect(text(failed)).toBe(
      '[ERR_CONFIRM_UPSTREAM_FAILED] The upstream server failed during the call (HTTP 502); whether it acted is unknown, and the call was not retried.',
    );
    await until(() => stderr().includes('upstream: HTTP 502'));
    expect(JSON.stringify(failed)).not.toContain('gateway-echo-secret');
    expect(stderr()).not.toContain('gateway-echo-secret');
    expect(stderr()).not.toContain('Bad gateway');
    // Control: healthy again, the same call answers normally.
    front.fail('none');
    expect(text(await callTool(client, { name: 'read_note', arguments: {} }))).toBe('(no note)');
    expect(calls(dir)).toEqual([]);
  });
});

describe('the refusal of a failed upstream request names what failed', () => {
  it('tools/list while the upstream fails: a plain failed message, no "whether it acted"; a failed tools/call still says whether it acted is unknown', async () => {
    const dir = freshDir();
    const front = await startFront(await startUpstream(dir));
    const { client } = await httpProxy(front.url);
    // Control: healthy, tools/list answers.
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(['read_note', 'write_note']);
    front.fail('all');
    const listed = await client.listTools().then(
      () => undefined,
      (e: unknown) => e as Error & { code?: number },
    );
    expect(listed?.code).toBe(-32603);
    expect(listed?.message).toContain(
      '[ERR_CONFIRM_UPSTREAM_FAILED] The upstream server failed to answer tools/list (HTTP 502).',
    );
    expect(listed?.message).not.toContain('acted');
    expect(listed?.message).not.toContain('retried');
    // A tools/call whose preliminary listing fails: nothing was forwarded, so the same plain message.
    expect(text(await callTool(client, { name: 'read_note', arguments: {} }))).toBe(
      '[ERR_CONFIRM_UPSTREAM_FAILED] The upstream server failed to answer tools/list (HTTP 502).',
    );
    // The forwarded tools/call itself failing: whether the upstream acted is unknown.
    front.fail('tools/call');
    expect(text(await callTool(client, { name: 'read_note', arguments: {} }))).toBe(
      '[ERR_CONFIRM_UPSTREAM_FAILED] The upstream server failed during the call (HTTP 502); whether it acted is unknown, and the call was not retried.',
    );
    front.fail('none');
    expect((await client.listTools()).tools).toHaveLength(2);
  });

  it('tools/list that the upstream never answers: ERR_CONFIRM_UPSTREAM_TIMEOUT without "whether it acted" (a hung tools/call says it: test/e2e/proxy.test.ts)', async () => {
    const dir = freshDir();
    const front = await startFront(await startUpstream(dir));
    const { client } = await httpProxy(front.url, ['--upstream-timeout', '1']);
    // Control: healthy, tools/list answers.
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(['read_note', 'write_note']);
    front.fail('hang tools/list');
    const listed = await client.listTools().then(
      () => undefined,
      (e: unknown) => e as Error & { code?: number },
    );
    expect(listed?.message).toContain(
      '[ERR_CONFIRM_UPSTREAM_TIMEOUT] The upstream server did not answer tools/list within 1 s; it was cancelled and not retried.',
    );
    expect(listed?.message).not.toContain('acted');
    // Control: answered again once the front passes tools/list through.
    front.fail('none');
    expect((await client.listTools()).tools.length).toBe(2);
  });
});

describe('the question bounds each whole value, a path-like one included', () => {
  /** A bound for these questions: the head line plus three summaries fit well within it. */
  const MAX_QUESTION_CHARS = 2000;

  it("'ok/'.repeat(20000) and a 1-line long value are summarised: the question stays under 2,000 characters with every argument present", async () => {
    const dir = freshDir();
    const { client } = await stdioProxy(dir);
    const pathLike = 'ok/'.repeat(20000);
    const oneLine = 'word '.repeat(3000).trim();
    const { message } = asked(
      await callTool(client, { name: 'write_note', arguments: { text: pathLike, other: oneLine, short: 'kept' } }),
    );
    expect(message.length).toBeLessThan(MAX_QUESTION_CHARS);
    const lines = message.split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[1]).toMatch(
      /^Argument `other`: a long value of 14999 bytes in 1 line, shown in part: `word word .*….* word word` \(shortened, fingerprint [0-9a-f]{16}\), fingerprint [0-9a-f]{16}$/,
    );
    expect(lines[2]).toBe('Argument `short`: `kept`');
    expect(lines[3]).toMatch(
      /^Argument `text`: a long value of 60000 bytes in 1 line, shown in part: `ok\/ok\/.*….*ok\/ok\/` \(shortened, fingerprint [0-9a-f]{16}\), fingerprint [0-9a-f]{16}$/,
    );
    expect(calls(dir)).toEqual([]);
  });

  it('control: a short path-like value is shown whole, component by component', async () => {
    const dir = freshDir();
    const { client } = await stdioProxy(dir);
    const path = '/home/me/projects/notes/2026/summary-of-the-week.txt';
    const { message } = asked(await callTool(client, { name: 'write_note', arguments: { text: path } }));
    expect(message.split('\n')[1]).toBe(`Argument \`text\`: \`${path}\``);
  });
});

describe("--max-argument-bytes: a size bound on a call's arguments, checked before any rendering", () => {
  /** The default bound: 1 MiB of canonical JSON. */
  const BOUND = 1_048_576;
  /** `{"text":"…"}` around a value of `n` bytes: the canonical JSON is n + 11 bytes. */
  const textOf = (n: number) => 'a'.repeat(n);
  const WRAPPER = Buffer.byteLength(JSON.stringify({ text: '' }), 'utf8');

  it('arguments one byte over the default 1 MiB are refused with ERR_CONFIRM_BAD_ARGUMENT naming the size and the bound; nothing asked, the upstream not called', async () => {
    const dir = freshDir();
    const { client, stderr } = await stdioProxy(dir);
    const over = await callTool(client, { name: 'write_note', arguments: { text: textOf(BOUND - WRAPPER + 1) } });
    expect(over).toMatchObject({ kind: 'result', isError: true });
    expect(text(over)).toBe(
      `[ERR_CONFIRM_BAD_ARGUMENT] Bad argument: the arguments are ${BOUND + 1} bytes as canonical JSON (RFC 8785), more than the proxy's bound of ${BOUND} bytes (--max-argument-bytes); nothing was asked and nothing was done.`,
    );
    expect(stderr()).not.toContain('asked to confirm');
    expect(calls(dir)).toEqual([]);
  });

  it('control: arguments of exactly 1 MiB are asked, and the confirmed text is forwarded once', async () => {
    const dir = freshDir();
    const { client } = await stdioProxy(dir);
    const value = textOf(BOUND - WRAPPER);
    const { message, state } = asked(await callTool(client, { name: 'write_note', arguments: { text: value } }));
    expect(message).toContain(`Argument \`text\`: a long value of ${value.length} bytes in 1 line`);
    const done = await callTool(client, {
      name: 'write_note',
      arguments: { text: value },
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(done).toMatchObject({ kind: 'result', isError: false });
    expect(calls(dir)).toEqual([value]);
  });

  it('a lower --max-argument-bytes applies to every call, a passed-through one included; a bad value is refused at start-up (exit 2)', async () => {
    const dir = freshDir();
    const { client } = await stdioProxy(dir, ['--max-argument-bytes', '100']);
    const refused = await callTool(client, { name: 'write_note', arguments: { text: textOf(100 - WRAPPER + 1) } });
    expect(text(refused)).toContain(
      "the arguments are 101 bytes as canonical JSON (RFC 8785), more than the proxy's bound of 100 bytes",
    );
    asked(await callTool(client, { name: 'write_note', arguments: { text: textOf(100 - WRAPPER) } }));
    const read = await callTool(client, { name: 'pid', arguments: { pad: textOf(200) } });
    expect(text(read)).toContain('[ERR_CONFIRM_BAD_ARGUMENT]');
    expect(text(await callTool(client, { name: 'pid', arguments: {} }))).toMatch(/^[0-9]+$/);
    const bad = await runProcess(process.execPath, [
      MAIN,
      'proxy',
      '--max-argument-bytes',
      '0',
      '--',
      process.execPath,
      STDIO_UPSTREAM,
      dir,
    ]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('--max-argument-bytes must be a whole number of bytes from 1 to 1073741824, got "0"');
    expect(calls(dir)).toEqual([]);
  });
});

describe('an upstream command that ends before its handshake', () => {
  it('exits 1 saying how it ended (its exit code, or its signal), without an EPIPE line; a command that cannot be spawned names the spawn error (control)', async () => {
    const exited = await runProcess(process.execPath, [MAIN, 'proxy', '--', process.execPath, '-e', 'process.exit(3)']);
    expect(exited.status).toBe(1);
    expect(exited.stderr).toContain(
      'the upstream server could not be started or did not complete the handshake: it exited with code 3',
    );
    expect(exited.stderr).not.toContain('EPIPE');
    const killed = await runProcess(process.execPath, [
      MAIN,
      'proxy',
      '--',
      process.execPath,
      '-e',
      "process.kill(process.pid, 'SIGKILL')",
    ]);
    expect(killed.status).toBe(1);
    expect(killed.stderr).toContain('it was killed by SIGKILL');
    const missing = await runProcess(process.execPath, [MAIN, 'proxy', '--', '/nonexistent/mcp-confirm-upstream']);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('spawn /nonexistent/mcp-confirm-upstream ENOENT');
  });
});
