/**
 * What `mcp-confirm proxy` relays besides tools (the built CLI as a real subprocess): resources,
 * templates, prompts, completions, logging, list_changed, progress, cancellation, roots and an
 * upstream's own input_required. Upstreams: the 2025-era fixture (SDK v1, fixtures/upstream.mjs),
 * the 2026-era fixture (SDK v2 served with serveStdio, fixtures/upstream2026.mjs) and
 * `@modelcontextprotocol/server-filesystem` 2026.8.31 (tools only; roots). Clients: the v2 client
 * pinned to 2026-07-28 and the v1 client (2025). Needs `npm run build` first.
 */
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createRequire } from 'node:module';
import { Client, LOG_LEVEL_META_KEY, ProtocolError } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, MANUAL_CLIENT_OPTIONS } from '../helpers/harness.js';
import { stderrSays, until } from '../helpers/processes.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');
const FS_SERVER = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-filesystem/dist/index.js');
const FIXTURE = resolve(import.meta.dirname, 'fixtures/upstream.mjs');
const FIXTURE_2026 = resolve(import.meta.dirname, 'fixtures/upstream2026.mjs');

let R: string;
const closers: Array<() => Promise<unknown>> = [];
beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-relay-')));
});
afterAll(async () => {
  await Promise.all(closers.splice(0).map((c) => c().catch(() => {})));
  rmSync(R, { recursive: true, force: true });
});

let dirs = 0;
function freshDir(): string {
  const dir = join(R, `d${++dirs}`);
  mkdirSync(dir);
  return dir;
}

function proxyArgs(upstream: string[]): string[] {
  return [MAIN, 'proxy', '--', process.execPath, ...upstream];
}

/** The v2 client pinned 2026-07-28, with list_changed handlers counting each kind. */
async function v2(upstream: string[], options: { stderr?: (s: string) => void } = {}) {
  const changes = { tools: 0, resources: 0, prompts: 0 };
  const count = (kind: keyof typeof changes) => ({
    autoRefresh: false,
    debounceMs: 0,
    onChanged: () => void changes[kind]++,
  });
  const client = new Client(
    { name: 'relay-test', version: '0.0.0' },
    {
      ...MANUAL_CLIENT_OPTIONS,
      listChanged: { tools: count('tools'), resources: count('resources'), prompts: count('prompts') },
    },
  );
  const logs: Array<{ level: string; data: unknown }> = [];
  client.setNotificationHandler(
    'notifications/message',
    (n) => void logs.push({ level: n.params.level, data: n.params.data }),
  );
  const transport = new StdioClientTransport({ command: process.execPath, args: proxyArgs(upstream), stderr: 'pipe' });
  transport.stderr?.on('data', (chunk: Buffer) => options.stderr?.(chunk.toString('utf8')));
  await client.connect(transport);
  closers.push(() => client.close());
  return { client, changes, logs };
}

/** The 2025-era v1 client. */
async function v1(upstream: string[], roots?: () => Array<{ uri: string; name?: string }>) {
  const client = new V1Client(
    { name: 'relay-legacy', version: '0.0.0' },
    { capabilities: roots ? { roots: { listChanged: true } } : {} },
  );
  if (roots) client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: roots() }));
  const changes = { tools: 0, resources: 0, prompts: 0 };
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes.tools++);
  client.setNotificationHandler(ResourceListChangedNotificationSchema, () => void changes.resources++);
  client.setNotificationHandler(PromptListChangedNotificationSchema, () => void changes.prompts++);
  const logs: Array<{ level: string; data: unknown }> = [];
  client.setNotificationHandler(
    LoggingMessageNotificationSchema,
    (n) => void logs.push({ level: n.params.level, data: n.params.data }),
  );
  await client.connect(
    new V1StdioClientTransport({ command: process.execPath, args: proxyArgs(upstream), stderr: 'pipe' }),
  );
  closers.push(() => client.close());
  return { client, changes, logs };
}

function textOf(result: { content?: unknown }): string {
  return ((result.content ?? []) as Array<{ text?: string }>).map((c) => c.text ?? '').join(' ');
}

describe.each([
  ['the 2025-era fixture (SDK v1)', FIXTURE],
  ['the 2026-era fixture (SDK v2, serveStdio)', FIXTURE_2026],
])('resources, prompts and completions relayed from %s', (_label, fixture) => {
  it('to the v2 client pinned 2026-07-28: list, templates, read, prompts, get, complete', async () => {
    const { client } = await v2([fixture, freshDir()]);
    expect(client.getServerCapabilities()).toMatchObject({ resources: {}, prompts: {}, completions: {}, tools: {} });
    expect((await client.listResources()).resources.map((r) => r.uri)).toEqual(['fixture://notes/one']);
    expect((await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate)).toEqual([
      'fixture://notes/{name}',
    ]);
    const read = await client.readResource({ uri: 'fixture://notes/abc' });
    expect(read.contents).toEqual([
      { uri: 'fixture://notes/abc', mimeType: 'text/plain', text: 'the note at fixture://notes/abc' },
    ]);
    // The proxy speaks for itself: the upstream's serverInfo stamp does not pass through.
    expect(read._meta?.['io.modelcontextprotocol/serverInfo']).toEqual({
      name: 'mcp-confirm-proxy',
      version: (createRequire(import.meta.url)('../../package.json') as { version: string }).version,
    });
    expect((await client.listPrompts()).prompts.map((p) => p.name)).toEqual(['greet']);
    const got = await client.getPrompt({ name: 'greet', arguments: { who: 'bob' } });
    expect(got.messages[0]?.content).toEqual({ type: 'text', text: 'Say hello to bob' });
    const done = await client.complete({
      ref: { type: 'ref/prompt', name: 'greet' },
      argument: { name: 'who', value: 'al' },
    });
    expect(done.completion.values).toEqual(['alice', 'albert']);
  });

  it('to the v1 client (2025): list, templates, read, prompts, get, complete', async () => {
    const { client } = await v1([fixture, freshDir()]);
    expect((await client.listResources()).resources.map((r) => r.uri)).toEqual(['fixture://notes/one']);
    expect((await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate)).toEqual([
      'fixture://notes/{name}',
    ]);
    expect((await client.readResource({ uri: 'fixture://notes/x' })).contents[0]).toMatchObject({
      text: 'the note at fixture://notes/x',
    });
    expect((await client.listPrompts()).prompts.map((p) => p.name)).toEqual(['greet']);
    expect((await client.getPrompt({ name: 'greet', arguments: { who: 'ann' } })).messages[0]?.content).toEqual({
      type: 'text',
      text: 'Say hello to ann',
    });
    expect(
      (await client.complete({ ref: { type: 'ref/prompt', name: 'greet' }, argument: { name: 'who', value: 'b' } }))
        .completion.values,
    ).toEqual(['bob']);
  });
});

describe('capabilities offered', () => {
  it('only what the upstream offers: server-filesystem (tools only) gives tools and nothing else', async () => {
    const { client } = await v2([FS_SERVER, freshDir()]);
    const caps = client.getServerCapabilities() ?? {};
    expect(
      Object.keys(caps).filter((k) => ['tools', 'resources', 'prompts', 'completions', 'logging'].includes(k)),
    ).toEqual(['tools']);
    // Control: tools are there.
    expect((await client.listTools()).tools.length).toBeGreaterThan(5);
  });
});

describe('list_changed relayed', () => {
  it('tools, resources and prompts list_changed reach the v2 client pinned 2026-07-28, and the lists show the change', async () => {
    const { client, changes } = await v2([FIXTURE, freshDir()]);
    expect((await client.listTools()).tools.map((t) => t.name)).not.toContain('extra');
    expect(textOf((await client.callTool({ name: 'change', arguments: {} })) as { content?: unknown })).toBe('changed');
    await until(() => changes.tools > 0 && changes.resources > 0 && changes.prompts > 0);
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('extra');
    expect((await client.listResources()).resources.map((r) => r.uri)).toContain('fixture://notes/two');
    expect((await client.listPrompts()).prompts.map((p) => p.name)).toContain('farewell');
  });

  it('tools, resources and prompts list_changed reach the v1 client (2025)', async () => {
    const { client, changes } = await v1([FIXTURE, freshDir()]);
    await client.callTool({ name: 'change', arguments: {} });
    await until(() => changes.tools > 0 && changes.resources > 0 && changes.prompts > 0);
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('extra');
  });
});

describe('logging relayed', () => {
  it('v1 client: setLevel error reaches the upstream, so only the error message arrives; control: at debug both arrive', async () => {
    const { client, logs } = await v1([FIXTURE, freshDir()]);
    await client.setLoggingLevel('error');
    await client.callTool({ name: 'log', arguments: {} });
    // The upstream sends debug before error, in order: once the error is here, a debug would be too.
    await until(() => logs.some((l) => l.level === 'error'));
    expect(logs).toEqual([{ level: 'error', data: 'an error report' }]);
    await client.setLoggingLevel('debug');
    await client.callTool({ name: 'log', arguments: {} });
    await until(() => logs.length >= 3);
    expect(logs.slice(1)).toEqual([
      { level: 'debug', data: 'a debug detail' },
      { level: 'error', data: 'an error report' },
    ]);
  });

  it("v2 client pinned 2026-07-28: the upstream's messages arrive on the request in flight, at that request's log level", async () => {
    const { client, logs } = await v2([FIXTURE, freshDir()]);
    await callTool(client, { name: 'log', arguments: {}, _meta: { [LOG_LEVEL_META_KEY]: 'error' } });
    await until(() => logs.length >= 1);
    expect(logs).toEqual([{ level: 'error', data: 'an error report' }]);
    await callTool(client, { name: 'log', arguments: {}, _meta: { [LOG_LEVEL_META_KEY]: 'debug' } });
    await until(() => logs.length >= 3);
    expect(logs.slice(1).map((l) => l.level)).toEqual(['debug', 'error']);
  });
});

describe('progress and cancellation relayed', () => {
  it.each(['v2', 'v1'] as const)(
    "%s client: the upstream's progress reaches the client's onprogress before the result",
    async (kind) => {
      const dir = freshDir();
      const seen: Array<{ progress: number; total?: number; message?: string }> = [];
      const onprogress = (p: { progress: number; total?: number; message?: string }) => {
        seen.push({
          progress: p.progress,
          ...(p.total === undefined ? {} : { total: p.total }),
          ...(p.message === undefined ? {} : { message: p.message }),
        });
        // The upstream answers only once this file exists: the result cannot come before the progress.
        writeFileSync(join(dir, 'progress-seen'), '');
      };
      const result =
        kind === 'v2'
          ? await (await v2([FIXTURE, dir])).client.callTool({ name: 'slow', arguments: {} }, { onprogress })
          : await (
              await v1([FIXTURE, dir])
            ).client.callTool({ name: 'slow', arguments: {} }, undefined, { onprogress });
      expect(textOf(result as { content?: unknown })).toBe('slow done');
      expect(seen).toEqual([{ progress: 1, total: 2, message: 'half' }]);
    },
  );

  it.each(['v2', 'v1'] as const)(
    '%s client: cancelling a call cancels it at the upstream (notifications/cancelled reaches it)',
    async (kind) => {
      const dir = freshDir();
      const abort = new AbortController();
      const pending =
        kind === 'v2'
          ? (await v2([FIXTURE, dir])).client.callTool({ name: 'wait_cancel', arguments: {} }, { signal: abort.signal })
          : (await v1([FIXTURE, dir])).client.callTool({ name: 'wait_cancel', arguments: {} }, undefined, {
              signal: abort.signal,
            });
      const settled = pending.then(
        () => 'answered',
        () => 'rejected',
      );
      await until(() => existsSync(join(dir, 'cancel-started')));
      abort.abort('the user gave up');
      expect(await settled).toBe('rejected');
      await until(() => existsSync(join(dir, 'cancelled')));
      expect(existsSync(join(dir, 'cancelled'))).toBe(true);
    },
  );
});

describe("the upstream's roots/list relayed", () => {
  const allowed = async (client: {
    callTool: (p: { name: string; arguments: Record<string, unknown> }) => Promise<unknown>;
  }) => textOf((await client.callTool({ name: 'list_allowed_directories', arguments: {} })) as { content?: unknown });

  it("v1 client declaring roots: server-filesystem takes the client's roots, and again after roots/list_changed", async () => {
    const start = freshDir();
    const first = freshDir();
    const second = freshDir();
    let roots = [{ uri: `file://${first}`, name: 'first' }];
    const { client } = await v1([FS_SERVER, start], () => roots);
    await until(async () => (await allowed(client)).includes(first));
    expect(await allowed(client)).not.toContain(start);
    roots = [{ uri: `file://${second}`, name: 'second' }];
    await client.sendRootsListChanged();
    await until(async () => (await allowed(client)).includes(second));
    expect(await allowed(client)).not.toContain(first);
  });

  it('v2 client pinned 2026-07-28: its roots cannot be asked (no server-to-client requests), so server-filesystem keeps its command-line directory and says why', async () => {
    const start = freshDir();
    let err = '';
    const { client } = await v2([FS_SERVER, start], { stderr: (s) => (err += s) });
    await until(() => err.includes('Failed to request initial roots from client'));
    // The proxy's own line: on the same pipe as the upstream's, but from another process, so before or after it.
    await stderrSays(() => err, 'has no server-to-client requests, so its roots cannot be asked');
    expect(await allowed(client)).toContain(start);
  });

  it('control: v1 client without roots: server-filesystem keeps its command-line directory', async () => {
    const start = freshDir();
    const { client } = await v1([FS_SERVER, start]);
    expect(await allowed(client)).toContain(start);
  });
});

describe("the upstream's own input_required", () => {
  it('a 2026-era upstream answering input_required gives ERR_CONFIRM_UPSTREAM_INPUT; control: its log tool answers', async () => {
    const { client } = await v2([FIXTURE_2026, freshDir()]);
    const reply = await callTool(client, { name: 'needs_input', arguments: {} });
    expect(reply.kind === 'result' && reply.isError && reply.text.startsWith('[ERR_CONFIRM_UPSTREAM_INPUT]')).toBe(
      true,
    );
    const control = await callTool(client, { name: 'log', arguments: {} });
    expect(control.kind === 'result' && control.text).toBe('logged');
  });
});

describe('upstream errors relayed', () => {
  it("an upstream's JSON-RPC error on resources/read reaches the client as a JSON-RPC error; control: a known URI reads", async () => {
    const { client } = await v2([FIXTURE_2026, freshDir()]);
    const e = await client.readResource({ uri: 'nothing://here' }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ProtocolError);
    expect((e as ProtocolError).message).toContain('nothing://here');
    expect((await client.readResource({ uri: 'fixture://notes/one' })).contents).toHaveLength(1);
  });
});

describe('shutdown', () => {
  it('a client disconnecting ends the proxy without reporting the upstream as down; control: the serving line was logged', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: proxyArgs([FIXTURE, freshDir()]),
      stderr: 'pipe',
    });
    let err = '';
    const ended = new Promise<void>((resolve) => {
      transport.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
      transport.stderr?.on('end', () => resolve());
    });
    const client = new Client({ name: 'bye', version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
    await client.connect(transport);
    await client.listTools();
    await client.close();
    await ended;
    expect(err).toContain('serving `fixture-upstream`');
    expect(err).not.toContain('is down');
  });
});
