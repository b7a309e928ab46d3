/**
 * `mcp-confirm --root DIR --http HOST:PORT`: the built CLI as a real subprocess
 * on a real node:http listener, with real clients of both protocol eras over
 * Streamable HTTP; graceful SIGTERM.
 */
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ACCEPT, asked, callTool } from '../helpers/harness.js';
import {
  connectLegacy,
  connectModern,
  LEGACY_INITIALIZE,
  rawRequest,
  startHttpServer,
  type HttpServerProcess,
} from '../helpers/httpServer.js';

let R: string;
let root: string;
const cleanups: Array<() => Promise<unknown>> = [];

beforeEach(() => {
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-httpserve-')));
  root = join(R, 'root');
  mkdirSync(root);
  writeFileSync(join(root, 'cache.txt'), 'cache');
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  rmSync(R, { recursive: true, force: true });
});

async function serve(extra: string[] = []): Promise<HttpServerProcess> {
  const server = await startHttpServer(['--root', root, '--http', '127.0.0.1:0', ...extra]);
  cleanups.push(async () => {
    if (server.proc.exitCode === null) server.proc.kill('SIGKILL');
    await server.exited;
  });
  return server;
}

describe('mcp-confirm --http serves both protocol eras at /mcp', () => {
  it('a 2025-era v1 client (StreamableHTTPClientTransport) is asked through a pushed elicitation/create and deletes the file once', async () => {
    const server = await serve();
    const { client, asked: questions } = await connectLegacy(server.url, async () => ({
      action: 'accept',
      content: { confirmed: true },
    }));
    cleanups.push(() => client.close());
    const first = (await client.callTool({ name: 'delete_file', arguments: { path: 'cache.txt' } })) as {
      content: Array<{ text?: string }>;
      isError?: boolean;
    };
    expect(first.isError ?? false).toBe(false);
    expect(first.content[0]?.text).toMatch(/^Deleted `.*cache\.txt` \(5 bytes\)\.$/);
    expect(questions).toHaveLength(1);
    expect(questions[0]).toContain('cache.txt');
    expect(existsSync(join(root, 'cache.txt'))).toBe(false);
    // Once: the same call again is refused before asking (the file is gone).
    const again = (await client.callTool({ name: 'delete_file', arguments: { path: 'cache.txt' } })) as {
      content: Array<{ text?: string }>;
      isError?: boolean;
    };
    expect(again.isError).toBe(true);
    expect(again.content[0]?.text).toMatch(/^\[ERR_CONFIRM_GONE\]/);
    expect(questions).toHaveLength(1);
  });

  it('a 2025-era v1 client that declines deletes nothing, over the same session', async () => {
    const server = await serve();
    const { client, asked: questions } = await connectLegacy(server.url, async () => ({ action: 'decline' }));
    cleanups.push(() => client.close());
    const r = (await client.callTool({ name: 'delete_file', arguments: { path: 'cache.txt' } })) as {
      content: Array<{ text?: string }>;
      isError?: boolean;
    };
    expect(r.content[0]?.text).toContain('nothing was deleted');
    expect(questions).toHaveLength(1);
    expect(existsSync(join(root, 'cache.txt'))).toBe(true);
  });

  it('a v2 client pinned to 2026-07-28 confirms and deletes once statelessly; the replayed state is ERR_CONFIRM_SPENT', async () => {
    const server = await serve();
    const client = await connectModern(server.url);
    cleanups.push(() => client.close());
    const { state, message } = asked(await callTool(client, { name: 'delete_file', arguments: { path: 'cache.txt' } }));
    expect(message).toContain('cache.txt');
    expect(existsSync(join(root, 'cache.txt'))).toBe(true);
    const done = await callTool(client, {
      name: 'delete_file',
      arguments: { path: 'cache.txt' },
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(done).toMatchObject({ kind: 'result', isError: false });
    expect(existsSync(join(root, 'cache.txt'))).toBe(false);
    writeFileSync(join(root, 'cache.txt'), 'cache');
    const replay = await callTool(client, {
      name: 'delete_file',
      arguments: { path: 'cache.txt' },
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(replay.kind === 'result' && replay.text.startsWith('[ERR_CONFIRM_SPENT]')).toBe(true);
    expect(existsSync(join(root, 'cache.txt'))).toBe(true);
  });

  it('warns on stderr that every caller is one principal when serving loopback without auth', async () => {
    const server = await serve();
    expect(server.stderr()).toContain('every caller is the same principal "local"');
  });
});

describe('graceful SIGTERM', () => {
  /** Opens a raw connection, sends the headers of a 2025 initialize POST with Expect: 100-continue, and waits for "100 Continue" (the server has the request). */
  async function startSlowRequest(url: URL) {
    const socket = connect(Number(url.port), url.hostname);
    let received = '';
    const waiters: Array<() => void> = [];
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => {
      received += c;
      for (const w of waiters.splice(0)) w();
    });
    const until = (pattern: RegExp): Promise<void> =>
      new Promise((res) => {
        const check = (): void => (pattern.test(received) ? res() : void waiters.push(check));
        check();
      });
    const closed = new Promise<void>((res) => socket.once('close', () => res()));
    socket.write(
      `POST /mcp HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n` +
        `Content-Length: ${Buffer.byteLength(LEGACY_INITIALIZE)}\r\nExpect: 100-continue\r\n\r\n`,
    );
    await until(/HTTP\/1\.1 100 Continue\r\n\r\n/);
    return { socket, until, closed, received: () => received };
  }

  it('stops accepting, lets an in-flight request finish, then exits 0', async () => {
    const server = await serve();
    const slow = await startSlowRequest(server.url);
    server.proc.kill('SIGTERM');
    await server.waitForStderr('no longer accepting');
    expect(server.stderr()).toContain('draining in-flight requests (up to 10s)'); // the default drain deadline
    // The request began before SIGTERM and is answered after it.
    slow.socket.write(LEGACY_INITIALIZE);
    await slow.until(/HTTP\/1\.1 200 OK[\s\S]*"protocolVersion"/);
    expect(await server.exited).toBe(0);
    await server.waitForStderr('stopped'); // the last line, maybe still in the pipe at 'exit'
    expect(server.stderr()).not.toContain('drain deadline reached');
    slow.socket.destroy();
  });

  it('closes the ledger before exiting: the write-ahead log of the SQLite ledger, present while serving, is checkpointed and removed', async () => {
    const db = join(R, 'ledger.db');
    const server = await serve(['--ledger', `sqlite:${db}`]);
    writeFileSync(join(root, 'wal.txt'), 'x');
    const client = await connectModern(server.url);
    cleanups.push(() => client.close());
    expect(asked(await callTool(client, { name: 'delete_file', arguments: { path: 'wal.txt' } }))).toBeDefined();
    expect(existsSync(`${db}-wal`)).toBe(true); // control: open and written
    server.proc.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    await server.waitForStderr('stopped');
    expect(existsSync(`${db}-wal`)).toBe(false);
    expect(existsSync(db)).toBe(true);
  });

  it('exits 0 at the drain deadline when an in-flight request never finishes', async () => {
    const server = await serve(['--drain-seconds', '1']);
    const slow = await startSlowRequest(server.url);
    server.proc.kill('SIGTERM');
    await slow.closed;
    expect(await server.exited).toBe(0);
    await server.waitForStderr('drain deadline reached');
    expect(slow.received()).not.toContain('200 OK');
  });
});

describe('Host and Origin checks (DNS rebinding)', () => {
  const headersWith = (extra: Record<string, string>) => ({
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    ...extra,
  });

  it('dns-rebinding: Host evil.example.com with that Origin gets 403; the same request with the bound Host gets 200', async () => {
    const server = await serve();
    const evil = await rawRequest(server.url, {
      headers: headersWith({ Host: 'evil.example.com', Origin: 'http://evil.example.com' }),
      body: LEGACY_INITIALIZE,
    });
    expect(evil.status).toBe(403);
    expect(evil.headers['mcp-session-id']).toBeUndefined();
    const evilHostOnly = await rawRequest(server.url, {
      headers: headersWith({ Host: `evil.example.com:${server.url.port}` }),
      body: LEGACY_INITIALIZE,
    });
    expect(evilHostOnly.status).toBe(403);
    const control = await rawRequest(server.url, {
      headers: headersWith({ Host: server.url.host }),
      body: LEGACY_INITIALIZE,
    });
    expect(control.status).toBe(200);
    expect(control.headers['mcp-session-id']).toEqual(expect.any(String));
  });

  it('answers a malformed Host (credentials in it) with 400 without echoing it, on /mcp and /healthz; control: the bound Host', async () => {
    const server = await serve();
    for (const path of ['/mcp', '/healthz']) {
      const bad = await rawRequest(server.url, {
        path,
        method: path === '/mcp' ? 'POST' : 'GET',
        headers: headersWith({ Host: '127.0.0.1@evil.example.com' }),
        ...(path === '/mcp' ? { body: LEGACY_INITIALIZE } : {}),
      });
      expect(bad.status).toBe(400);
      expect(bad.body).not.toContain('evil.example.com');
    }
    expect(server.stderr()).not.toContain('evil.example.com');
    const control = await rawRequest(server.url, {
      path: '/healthz',
      method: 'GET',
      headers: { Host: server.url.host },
    });
    expect(control.status).toBe(200);
  });

  it('refuses a tools/call whose Host is foreign with 403, and nothing is deleted', async () => {
    const server = await serve();
    const call = JSON.stringify({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: {
        name: 'delete_file',
        arguments: { path: 'cache.txt' },
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
        },
      },
    });
    const evil = await rawRequest(server.url, {
      headers: headersWith({
        Host: 'evil.example.com',
        'MCP-Protocol-Version': '2026-07-28',
        'Mcp-Method': 'tools/call',
        'Mcp-Name': 'delete_file',
      }),
      body: call,
    });
    expect(evil.status).toBe(403);
    const control = await rawRequest(server.url, {
      headers: headersWith({
        Host: server.url.host,
        'MCP-Protocol-Version': '2026-07-28',
        'Mcp-Method': 'tools/call',
        'Mcp-Name': 'delete_file',
      }),
      body: call,
    });
    expect(control.status).toBe(200);
    expect(control.body).toContain('input_required');
    expect(existsSync(join(root, 'cache.txt'))).toBe(true);
  });

  it('refuses a present Origin of another host with 403; an Origin of the bound host passes', async () => {
    const server = await serve();
    const foreign = await rawRequest(server.url, {
      headers: headersWith({ Host: server.url.host, Origin: 'https://evil.example.com' }),
      body: LEGACY_INITIALIZE,
    });
    expect(foreign.status).toBe(403);
    const opaque = await rawRequest(server.url, {
      headers: headersWith({ Host: server.url.host, Origin: 'null' }),
      body: LEGACY_INITIALIZE,
    });
    expect(opaque.status).toBe(403);
    const own = await rawRequest(server.url, {
      headers: headersWith({ Host: server.url.host, Origin: `http://${server.url.host}` }),
      body: LEGACY_INITIALIZE,
    });
    expect(own.status).toBe(200);
  });

  it('accepts localhost for a loopback bind and a name given in --allowed-hosts, and nothing else', async () => {
    const server = await serve(['--allowed-hosts', 'mcp.internal.example']);
    for (const host of [`localhost:${server.url.port}`, `mcp.internal.example:${server.url.port}`]) {
      const r = await rawRequest(server.url, { headers: headersWith({ Host: host }), body: LEGACY_INITIALIZE });
      expect(r.status, host).toBe(200);
    }
    const other = await rawRequest(server.url, {
      headers: headersWith({ Host: `other.internal.example:${server.url.port}` }),
      body: LEGACY_INITIALIZE,
    });
    expect(other.status).toBe(403);
  });
});

describe('operations: /healthz and /metrics', () => {
  it('/healthz answers 200 while the ledger answers, and 503 when the ledger (an unreachable Redis) does not', async () => {
    const server = await serve();
    const ok = await fetch(new URL('/healthz', server.url));
    expect(ok.status).toBe(200);
    const down = await serve(['--ledger', 'redis://127.0.0.1:1']);
    const refused = await fetch(new URL('/healthz', down.url));
    expect(refused.status).toBe(503);
    expect(await refused.text()).toBe('ledger unavailable\n');
  });

  it('/metrics counts decisions by event and code and times each ledger call, in the Prometheus text format', async () => {
    const server = await serve();
    const client = await connectModern(server.url);
    cleanups.push(() => client.close());
    const { state } = asked(await callTool(client, { name: 'delete_file', arguments: { path: 'cache.txt' } }));
    expect(
      await callTool(client, {
        name: 'delete_file',
        arguments: { path: 'cache.txt' },
        inputResponses: ACCEPT,
        requestState: state,
      }),
    ).toMatchObject({ kind: 'result', isError: false });
    writeFileSync(join(root, 'cache.txt'), 'cache');
    const replay = await callTool(client, {
      name: 'delete_file',
      arguments: { path: 'cache.txt' },
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(replay.kind === 'result' && replay.text.startsWith('[ERR_CONFIRM_SPENT]')).toBe(true);
    const r = await fetch(new URL('/metrics', server.url));
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toContain('text/plain');
    const text = await r.text();
    expect(text).toContain('mcp_confirm_decisions_total{event="asked",code=""} 1');
    expect(text).toContain('mcp_confirm_decisions_total{event="confirmed",code=""} 1');
    expect(text).toContain('mcp_confirm_decisions_total{event="refused",code="ERR_CONFIRM_SPENT"} 1');
    expect(text).toContain('mcp_confirm_ledger_seconds_count{op="issue",result="ok"} 1');
    expect(text).toContain('mcp_confirm_ledger_seconds_count{op="spend",result="ok"} 2');
    expect(text).toMatch(/^process_cpu_seconds_total /m);
  });

  it('answers /healthz and /metrics only for an allowed Host', async () => {
    const server = await serve();
    for (const path of ['/healthz', '/metrics']) {
      const r = await rawRequest(server.url, { method: 'GET', path, headers: { Host: 'evil.example.com' } });
      expect(r.status, path).toBe(403);
    }
  });
});
