/**
 * The link flow (issue 19 part 1, the contract in the link branch's docs) through the real clients
 * that cannot elicit: with passkey approval, round 1 of a destructive call opens a pending approval
 * and answers an error result that carries the approval page's URL (in its text and, for a client
 * that shows the result's `_meta`, under `_meta["mcp-confirm/approval"]`), with nothing done; the
 * same call again while the approval is pending gets the same link; another argument is another
 * approval. Over `--http` the flow needs token auth (every caller of an unauthenticated listener is
 * `local`); without it such a client is refused as with form approval.
 */
import { createMCPClient } from '@ai-sdk/mcp';
import { Experimental_StdioMCPTransport } from '@ai-sdk/mcp/mcp-stdio';
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { MCPClient as MastraClient } from '@mastra/mcp';
import { MCPClient as McpUseClient } from 'mcp-use/client';
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import {
  approversFile,
  cleanUp,
  freePort,
  httpServer,
  inspectorCall,
  onCleanUp,
  refusalText,
  scratch,
  stdioServer,
  textOf,
  tokenIssuer,
  type Scratch,
} from './helpers.js';

process.env.MCP_USE_ANONYMIZED_TELEMETRY = 'false';
afterAll(cleanUp);

const META_KEY = 'mcp-confirm/approval';
const URL_RE = /https?:\/\/[^\s`'"]+\/approve\/[A-Za-z0-9_-]+/;

/** What one link-flow answer told the client. */
interface Pending {
  text: string;
  url: string;
  /** `_meta["mcp-confirm/approval"]`, when the client shows the result's `_meta`. */
  meta?: { id: string; url: string; status: string; expiresAt: string };
}

/** Reads a pending answer from a result (its text and `_meta`) or, for a client that throws on an error result, from the error's text. */
async function pendingOf(call: () => Promise<unknown>): Promise<Pending> {
  let text: string;
  let meta: Pending['meta'];
  try {
    const r = (await call()) as { isError?: boolean; content?: unknown; _meta?: Record<string, any> };
    // Mastra's onToolError: 'return' hands back the raw result; every client that keeps the flag must show it set.
    if (r && typeof r === 'object' && 'isError' in r) expect(r.isError).toBe(true);
    text = textOf(r);
    meta = r._meta?.[META_KEY];
  } catch (e) {
    text = await refusalText(() => Promise.reject(e));
  }
  const url = URL_RE.exec(text)?.[0];
  if (!url) throw new Error(`no approval URL in ${JSON.stringify(text)}`);
  return { text, url, ...(meta ? { meta } : {}) };
}

/** The contract's round-1 answer: the code, the link, the tool, "Nothing was done", and the `_meta` when shown. */
function expectPending(p: Pending, origin: RegExp): void {
  expect(p.text).toContain('[ERR_CONFIRM_APPROVAL_PENDING]');
  expect(p.text).toContain('delete_file');
  expect(p.text).toContain('Nothing was done');
  expect(p.url).toMatch(origin);
  if (p.meta) {
    expect(p.meta.status).toBe('pending');
    expect(p.meta.url).toBe(p.url);
    expect(p.url.endsWith(`/approve/${p.meta.id}`)).toBe(true);
    expect(Number.isNaN(Date.parse(p.meta.expiresAt))).toBe(false);
  }
}

const STDIO_ORIGIN = /^http:\/\/localhost:\d+\/approve\//;

/** Passkey approval over stdio; a retry while pending answers at once (`--approval-wait 0`). */
function passkeyArgs(s: Scratch): string[] {
  return ['--approval', 'passkey', '--approvers', approversFile(s), '--approval-wait', '0'];
}

/** One client that cannot elicit, started against `server`, calling delete_file. */
type Caller = (path: string) => Promise<unknown>;

const stdioClients: Array<[string, (s: Scratch, extra: string[]) => Promise<{ call: Caller; showsMeta: boolean }>]> = [
  [
    'LangChain MCP adapters',
    async (s, extra) => {
      const srv = stdioServer(s, extra);
      const client = new MultiServerMCPClient({
        mcpServers: { files: { transport: 'stdio', command: srv.command, args: srv.args } },
      });
      onCleanUp(() => client.close());
      const tool = (await client.getTools()).find((t) => t.name.endsWith('delete_file'))!;
      return { call: (path) => tool.invoke({ path }), showsMeta: false };
    },
  ],
  [
    'the AI SDK client without elicitation (its default)',
    async (s, extra) => {
      const srv = stdioServer(s, extra);
      const client = await createMCPClient({
        transport: new Experimental_StdioMCPTransport({ command: srv.command, args: srv.args }),
      });
      onCleanUp(() => client.close());
      return { call: (path) => client.callTool({ name: 'delete_file', arguments: { path } }), showsMeta: true };
    },
  ],
  [
    'the Mastra client without an inputRequests handler',
    async (s, extra) => {
      const srv = stdioServer(s, extra);
      const mcp = new MastraClient({
        id: `interop-${randomUUID()}`,
        servers: { files: { command: srv.command, args: srv.args, stderr: 'ignore', onToolError: 'return' } as any },
      });
      onCleanUp(() => mcp.disconnect());
      const tool = (await mcp.listTools())['files_delete_file']!;
      return { call: (path) => tool.execute!({ path }, {} as any), showsMeta: false };
    },
  ],
  [
    'the mcp-use client without onElicitation',
    async (s, extra) => {
      const srv = stdioServer(s, extra);
      const client = new McpUseClient({ mcpServers: { files: { command: srv.command, args: srv.args } } } as any);
      onCleanUp(() => client.closeAllSessions());
      const session = await client.createSession('files');
      return { call: (path) => session.callTool('delete_file', { path }), showsMeta: true };
    },
  ],
];

describe.each(stdioClients)('the link flow over stdio: %s', (_name, start) => {
  it('gets the approval link, nothing deleted; the same call again gets the same link; another file gets another', async () => {
    const s = scratch();
    s.file('a.txt');
    s.file('b.txt');
    const { call, showsMeta } = await start(s, passkeyArgs(s));

    const first = await pendingOf(() => call('a.txt'));
    expectPending(first, STDIO_ORIGIN);
    if (showsMeta) expect(first.meta).toBeDefined();
    expect(s.exists('a.txt')).toBe(true);

    const again = await pendingOf(() => call('a.txt'));
    expectPending(again, STDIO_ORIGIN);
    expect(again.url).toBe(first.url);
    expect(s.exists('a.txt')).toBe(true);

    const other = await pendingOf(() => call('b.txt'));
    expectPending(other, STDIO_ORIGIN);
    expect(other.url).not.toBe(first.url);
    expect(s.exists('b.txt')).toBe(true);
  });
});

describe('the link flow: the Inspector CLI', () => {
  it('over stdio: each run (its own server process) prints the pending result with the link and its _meta; nothing deleted', async () => {
    const s = scratch();
    s.file('a.txt');
    const srv = stdioServer(s, passkeyArgs(s));
    const out = await inspectorCall(s, [srv.command, ...srv.args], 'a.txt');
    expect(out.code).not.toBe(0);
    const printed = JSON.parse(out.stdout.slice(0, out.stdout.lastIndexOf('}') + 1));
    const p = await pendingOf(async () => printed);
    expectPending(p, STDIO_ORIGIN);
    expect(p.meta).toBeDefined();
    expect(s.exists('a.txt')).toBe(true);
  });

  it('over --http with token auth: the same, the link on the public URL; a second run gets the same link', async () => {
    const s = scratch();
    s.file('a.txt');
    const { extra, token, origin } = await tokenDeployment(s);
    const srv = await httpServer(s, extra, `127.0.0.1:${extra[extra.indexOf('--public-url') + 1]!.split(':').pop()}`);
    const run = async (): Promise<Pending> => {
      const out = await inspectorCall(s, [srv.direct.href, '--transport', 'http'], 'a.txt', [
        '--header',
        `Authorization: Bearer ${token}`,
      ]);
      const printed = JSON.parse(out.stdout.slice(0, out.stdout.lastIndexOf('}') + 1));
      return pendingOf(async () => printed);
    };
    const first = await run();
    expectPending(first, origin);
    const again = await run();
    expect(again.url).toBe(first.url);
    expect(s.exists('a.txt')).toBe(true);
  });
});

/** Passkey approval over --http with token auth: the resource and public URL on one fixed port, an approver for the token's subject. */
async function tokenDeployment(s: Scratch): Promise<{ extra: string[]; token: string; origin: RegExp }> {
  const port = await freePort();
  const issuer = tokenIssuer(s);
  const resource = `http://127.0.0.1:${port}/mcp`;
  const publicUrl = `http://localhost:${port}`;
  const approvers = approversFile(s, [JSON.stringify(['jwt', issuer.issuer, 'alice'])]);
  return {
    extra: [
      '--auth-issuer',
      issuer.issuer,
      '--auth-jwks',
      issuer.jwksPath,
      '--resource',
      resource,
      '--approval',
      'passkey',
      '--approvers',
      approvers,
      '--public-url',
      publicUrl,
      '--approval-wait',
      '0',
    ],
    token: issuer.token('alice', resource),
    origin: new RegExp(`^http://localhost:${port}/approve/`),
  };
}

describe('the link flow over --http: LangChain MCP adapters', () => {
  it('with token auth: gets the approval link on the public URL, nothing deleted; the retry gets the same link', async () => {
    const s = scratch();
    s.file('a.txt');
    const { extra, token, origin } = await tokenDeployment(s);
    const port = extra[extra.indexOf('--public-url') + 1]!.split(':').pop();
    const srv = await httpServer(s, extra, `127.0.0.1:${port}`);
    const client = new MultiServerMCPClient({
      mcpServers: {
        files: { transport: 'http', url: srv.direct.href, headers: { Authorization: `Bearer ${token}` } },
      },
    });
    onCleanUp(() => client.close());
    const tool = (await client.getTools()).find((t) => t.name.endsWith('delete_file'))!;
    const first = await pendingOf(() => tool.invoke({ path: 'a.txt' }));
    expectPending(first, origin);
    const again = await pendingOf(() => tool.invoke({ path: 'a.txt' }));
    expect(again.url).toBe(first.url);
    expect(s.exists('a.txt')).toBe(true);
  });

  it('control: without token auth (every caller local) the link flow is off: refused as with form approval, nothing deleted', async () => {
    const s = scratch();
    s.file('a.txt');
    const srv = await httpServer(s, [...passkeyArgs(s), '--public-url', 'http://localhost:9']);
    const client = new MultiServerMCPClient({ mcpServers: { files: { transport: 'http', url: srv.url.href } } });
    onCleanUp(() => client.close());
    const tool = (await client.getTools()).find((t) => t.name.endsWith('delete_file'))!;
    const text = await refusalText(() => tool.invoke({ path: 'a.txt' }));
    expect(text).toContain('[ERR_CONFIRM_NO_ELICITATION]');
    expect(text).not.toMatch(URL_RE);
    expect(s.exists('a.txt')).toBe(true);
  });
});

describe('form approval after the link branch', () => {
  it('a client that cannot elicit is still refused, and the refusal says passkey approval would let it approve', async () => {
    const s = scratch();
    s.file('a.txt');
    const srv = stdioServer(s);
    const client = new MultiServerMCPClient({
      mcpServers: { files: { transport: 'stdio', command: srv.command, args: srv.args } },
    });
    onCleanUp(() => client.close());
    const tool = (await client.getTools()).find((t) => t.name.endsWith('delete_file'))!;
    const text = await refusalText(() => tool.invoke({ path: 'a.txt' }));
    expect(text).toContain('[ERR_CONFIRM_NO_ELICITATION]');
    expect(text).toMatch(/passkey/i);
    expect(s.exists('a.txt')).toBe(true);
  });
});
