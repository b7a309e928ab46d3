/**
 * `mcp-confirm proxy` as a real subprocess (the built CLI) in front of a real upstream,
 * `@modelcontextprotocol/server-filesystem` 2026.8.31 (SDK v1, 2025 era), spawned by the proxy;
 * a real v2 client pinned to 2026-07-28 (rounds driven by hand) and the v1 client in front.
 * Failure cases use a small v1 upstream (fixtures/upstream.mjs). Needs `npm run build` first.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createRequire } from 'node:module';
import { Client, ProtocolError } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProcess, stderrSays } from '../helpers/processes.js';
import { ACCEPT, asked, callTool, MANUAL_CLIENT_OPTIONS, type Reply } from '../helpers/harness.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');
const FS_SERVER = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-filesystem/dist/index.js');
const FIXTURE = resolve(import.meta.dirname, 'fixtures/upstream.mjs');
const DECLINE = { confirm: { action: 'decline' } } as const;

let R: string;
const closers: Array<() => Promise<unknown>> = [];

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-proxy-')));
});
afterAll(async () => {
  await Promise.all(closers.splice(0).map((c) => c().catch(() => {})));
  rmSync(R, { recursive: true, force: true });
});

/** A fresh directory under the test's temporary directory. */
function freshDir(name: string): string {
  const dir = join(R, name);
  mkdirSync(dir);
  return dir;
}

/** Spawns `mcp-confirm proxy [proxyArgs] -- node UPSTREAM…` and connects the manual v2 client. */
async function spawnProxy(proxyArgs: string[], upstream: string[]): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MAIN, 'proxy', ...proxyArgs, '--', process.execPath, ...upstream],
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString('utf8');
  });
  const client = new Client({ name: 'proxy-test', version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
  await client.connect(transport);
  closers.push(() => client.close());
  return { client, stderr: () => err };
}

function text(reply: Reply): string {
  if (reply.kind !== 'result') throw new Error(`expected a result, got ${JSON.stringify(reply).slice(0, 400)}`);
  return reply.text;
}

function refusedWith(reply: Reply, code: string): boolean {
  return reply.kind === 'result' && reply.isError && reply.text.startsWith(`[${code}]`);
}

describe('proxy in front of server-filesystem, v2 client pinned 2026-07-28', () => {
  let client: Client;
  let root: string;
  const call = (name: string, args: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    callTool(client, { name, arguments: args, ...extra });

  beforeAll(async () => {
    root = freshDir('fs');
    writeFileSync(join(root, 'notes.txt'), 'first notes\n');
    ({ client } = await spawnProxy([], [FS_SERVER, root]));
  });

  it('lists the upstream tools with their annotations passed through', async () => {
    const { tools } = await client.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect(byName.get('write_file')?.annotations).toMatchObject({ destructiveHint: true, readOnlyHint: false });
    expect(byName.get('create_directory')?.annotations).toMatchObject({ destructiveHint: false });
    expect(byName.get('read_file')?.annotations).toMatchObject({ readOnlyHint: true });
    expect(byName.has('move_file') && byName.has('edit_file') && byName.has('list_directory')).toBe(true);
  });

  it('read_file and list_directory pass with no question', async () => {
    const read = await call('read_text_file', { path: join(root, 'notes.txt') });
    expect(text(read)).toContain('first notes');
    const list = await call('list_directory', { path: root });
    expect(text(list)).toContain('notes.txt');
    const legacyRead = await call('read_file', { path: join(root, 'notes.txt') });
    expect(text(legacyRead)).toContain('first notes');
  });

  it('write_file asks, writes exactly the confirmed content once; the replay is refused with ERR_CONFIRM_SPENT', async () => {
    const target = join(root, 'written.txt');
    const args = { path: target, content: 'exactly this\n' };
    const { state, message } = asked(await call('write_file', args));
    expect(message).toContain('`write_file`');
    expect(message).toContain('Argument `content`: `exactly this\\n`');
    expect(message).toContain(`Argument \`path\`: \`${target}\``);
    expect(existsSync(target)).toBe(false);
    const done = await call('write_file', args, { inputResponses: ACCEPT, requestState: state });
    expect(text(done)).toContain('Successfully wrote');
    expect(readFileSync(target, 'utf8')).toBe('exactly this\n');
    // Once: after someone else changes the file, replaying the same state writes nothing.
    writeFileSync(target, 'changed since');
    const replay = await call('write_file', args, { inputResponses: ACCEPT, requestState: state });
    expect(refusedWith(replay, 'ERR_CONFIRM_SPENT')).toBe(true);
    expect(readFileSync(target, 'utf8')).toBe('changed since');
  });

  it('a state moved onto other arguments is refused with ERR_CONFIRM_MISMATCH; control: the same state on its own arguments writes', async () => {
    const target = join(root, 'moved-state.txt');
    const { state } = asked(await call('write_file', { path: target, content: 'harmless' }));
    const moved = await call(
      'write_file',
      { path: target, content: 'evil' },
      { inputResponses: ACCEPT, requestState: state },
    );
    expect(refusedWith(moved, 'ERR_CONFIRM_MISMATCH')).toBe(true);
    // (Arguments edit_file's inputSchema accepts: the proxy checks them before the state.)
    const otherTool = await call(
      'edit_file',
      { path: target, edits: [{ oldText: 'harmless', newText: 'evil' }] },
      { inputResponses: ACCEPT, requestState: state },
    );
    expect(refusedWith(otherTool, 'ERR_CONFIRM_MISMATCH')).toBe(true);
    expect(existsSync(target)).toBe(false);
    const control = await call(
      'write_file',
      { path: target, content: 'harmless' },
      { inputResponses: ACCEPT, requestState: state },
    );
    expect(text(control)).toContain('Successfully wrote');
    expect(readFileSync(target, 'utf8')).toBe('harmless');
  });

  it('a forged answer without a state is asked, not forwarded; control: the state it then gets goes through', async () => {
    const target = join(root, 'forged.txt');
    const forged = await call('write_file', { path: target, content: 'x' }, { inputResponses: ACCEPT });
    const { state } = asked(forged);
    expect(existsSync(target)).toBe(false);
    const control = await call(
      'write_file',
      { path: target, content: 'x' },
      { inputResponses: ACCEPT, requestState: state },
    );
    expect(text(control)).toContain('Successfully wrote');
  });

  it('a declined write_file writes nothing', async () => {
    const target = join(root, 'declined.txt');
    const { state } = asked(await call('write_file', { path: target, content: 'no' }));
    const declined = await call(
      'write_file',
      { path: target, content: 'no' },
      { inputResponses: DECLINE, requestState: state },
    );
    // write_file declares an outputSchema: the proxy's own answer, with no structured content, is an error result.
    expect(declined).toMatchObject({ kind: 'result', isError: true });
    expect(text(declined)).toBe('You declined; nothing was forwarded to the upstream server.');
    expect(existsSync(target)).toBe(false);
  });

  it('a host that declines through callTool gets the decline as an error result for write_file, which declares an outputSchema (not a protocol error); control: accepting writes', async () => {
    const host = async (action: 'decline' | 'accept') => {
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [MAIN, 'proxy', '--', process.execPath, FS_SERVER, root],
      });
      const c = new Client({ name: 'proxy-host', version: '0.0.0' }, {
        capabilities: { elicitation: { form: {} } },
        versionNegotiation: { mode: { pin: '2026-07-28' } },
      } as never);
      c.setRequestHandler('elicitation/create', async () =>
        action === 'accept' ? { action, content: { confirmed: true } } : { action },
      );
      await c.connect(transport);
      closers.push(() => c.close());
      return c;
    };
    const target = join(root, 'host-declined.txt');
    const declining = await host('decline');
    const declined = await declining.callTool({ name: 'write_file', arguments: { path: target, content: 'no' } });
    expect(declined.isError).toBe(true);
    expect(JSON.stringify(declined.content)).toContain('You declined; nothing was forwarded to the upstream server.');
    expect(existsSync(target)).toBe(false);
    const accepting = await host('accept');
    const written = await accepting.callTool({ name: 'write_file', arguments: { path: target, content: 'yes' } });
    expect(written.isError).not.toBe(true);
    expect(readFileSync(target, 'utf8')).toBe('yes');
  });

  it('edit_file and move_file ask before anything changes; control: confirmed, they act', async () => {
    const file = join(root, 'edit-me.txt');
    writeFileSync(file, 'alpha beta\n');
    const editArgs = { path: file, edits: [{ oldText: 'beta', newText: 'gamma' }] };
    const edit = asked(await call('edit_file', editArgs));
    expect(edit.message).toContain('Argument `edits` (JSON): `[{"newText":"gamma","oldText":"beta"}]`');
    expect(readFileSync(file, 'utf8')).toBe('alpha beta\n');
    expect(text(await call('edit_file', editArgs, { inputResponses: ACCEPT, requestState: edit.state }))).toContain(
      'gamma',
    );
    expect(readFileSync(file, 'utf8')).toBe('alpha gamma\n');

    const moveArgs = { source: file, destination: join(root, 'edited.txt') };
    const move = asked(await call('move_file', moveArgs));
    expect(existsSync(file)).toBe(true);
    expect(text(await call('move_file', moveArgs, { inputResponses: ACCEPT, requestState: move.state }))).toContain(
      'Successfully moved',
    );
    expect(existsSync(join(root, 'edited.txt'))).toBe(true);
  });

  it('create_directory (destructiveHint false) passes by default with no question', async () => {
    const dir = join(root, 'made-by-default');
    const reply = await call('create_directory', { path: dir });
    expect(text(reply)).toContain('Successfully created');
    expect(existsSync(dir)).toBe(true);
  });

  it('a hostile file name in move_file is rendered safely: no raw control, bidi override or backtick in the question', async () => {
    const source = join(root, 'plain.txt');
    writeFileSync(source, 'p');
    const hostile = join(root, 'invoice\u202Etxt.exe`\nArgument `destination`: `/tmp/safe');
    const { message, state } = asked(await call('move_file', { source, destination: hostile }));
    expect(message).not.toMatch(/[\u202E\u0000-\u0009\u000B-\u001F]/u);
    expect(message).toContain('invoice⟨U+202E⟩txt.exe⟨U+0060⟩\\nArgument');
    // Exactly three lines: the head, then one per argument; the name cannot add one.
    expect(message.split('\n')).toHaveLength(3);
    expect(message.split('\n').filter((l) => l.startsWith('Argument `destination`'))).toHaveLength(1);
    const declined = await call(
      'move_file',
      { source, destination: hostile },
      { inputResponses: DECLINE, requestState: state },
    );
    expect(declined).toMatchObject({ kind: 'result', isError: true }); // move_file declares an outputSchema: the decline is an error result
    expect(existsSync(source)).toBe(true);
  });

  it('a long write_file content is shown by size, line count, first and last lines and a fingerprint; the confirmed content is written exactly', async () => {
    const target = join(root, 'long.txt');
    const content =
      ['HEAD LINE', ...Array.from({ length: 98 }, (_, i) => `middle line ${i} hidden`), 'TAIL LINE'].join('\n') + '\n';
    const { message, state } = asked(await call('write_file', { path: target, content }));
    const bytes = Buffer.byteLength(content, 'utf8');
    expect(message).toMatch(
      new RegExp(
        `Argument \`content\`: a long value of ${bytes} bytes in 100 lines, first line \`HEAD LINE\`, last line \`TAIL LINE\`, fingerprint [0-9a-f]{16}$`,
        'm',
      ),
    );
    expect(message).not.toContain('middle line 50');
    expect(
      text(await call('write_file', { path: target, content }, { inputResponses: ACCEPT, requestState: state })),
    ).toContain('Successfully wrote');
    expect(readFileSync(target, 'utf8')).toBe(content);
  });

  it('the upstream title and description never reach the question', async () => {
    const { tools } = await client.listTools();
    const description = tools.find((t) => t.name === 'write_file')?.description ?? '';
    expect(description.length).toBeGreaterThan(20);
    const { message } = asked(await call('write_file', { path: join(root, 'q.txt'), content: 'q' }));
    expect(message).not.toContain(description.slice(0, 20));
  });
});

describe('proxy policy', () => {
  it('a denied tool is not listed and its call is refused; a named create_directory asks; control: an allowed glob passes', async () => {
    const root = freshDir('policy');
    const policyFile = join(R, 'policy.json');
    writeFileSync(
      policyFile,
      JSON.stringify({ deny: ['move_*'], confirm: ['create_directory'], allow: ['write_file'] }),
    );
    const { client } = await spawnProxy(['--policy', policyFile], [FS_SERVER, root]);
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).not.toContain('move_file');
    expect(names).toContain('create_directory');
    writeFileSync(join(root, 'a.txt'), 'a');
    const denied = await callTool(client, {
      name: 'move_file',
      arguments: { source: join(root, 'a.txt'), destination: join(root, 'b.txt') },
    });
    expect(refusedWith(denied, 'ERR_CONFIRM_POLICY_DENIED')).toBe(true);
    expect(existsSync(join(root, 'a.txt'))).toBe(true);
    const dir = join(root, 'named');
    const { state } = asked(await callTool(client, { name: 'create_directory', arguments: { path: dir } }));
    expect(existsSync(dir)).toBe(false);
    expect(
      text(
        await callTool(client, {
          name: 'create_directory',
          arguments: { path: dir },
          inputResponses: ACCEPT,
          requestState: state,
        }),
      ),
    ).toContain('Successfully created');
    // Control: write_file is allowed by the policy, so it passes with no question.
    expect(
      text(await callTool(client, { name: 'write_file', arguments: { path: join(root, 'w.txt'), content: 'w' } })),
    ).toContain('Successfully wrote');
    expect(readFileSync(join(root, 'w.txt'), 'utf8')).toBe('w');
  });

  it('--confirm-unnamed asks for create_directory and even read_file', async () => {
    const root = freshDir('unnamed');
    writeFileSync(join(root, 'r.txt'), 'r');
    const { client } = await spawnProxy(['--confirm-unnamed'], [FS_SERVER, root]);
    asked(await callTool(client, { name: 'create_directory', arguments: { path: join(root, 'd') } }));
    asked(await callTool(client, { name: 'read_text_file', arguments: { path: join(root, 'r.txt') } }));
    expect(existsSync(join(root, 'd'))).toBe(false);
  });

  it.each([
    ['{"deny": ["ok", 3]}', 'deny[1] must be a string'],
    ['{"confirm": "write_file"}', 'confirm must be an array'],
    ['{"alow": []}', 'unknown key "alow"'],
    ['{"allow": [""]}', 'allow[0] is empty'],
    ['{"deny": ["a\\u0007b"]}', 'deny[0] contains a control character'],
    ['not json', 'not valid JSON'],
    ['[]', 'must be a JSON object'],
  ])('policy %s exits 2 naming the bad entry (%s), never starting the upstream', async (policy, expected) => {
    const file = join(R, `bad-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, policy);
    const marker = join(R, `never-${Math.random().toString(36).slice(2)}`);
    const r = await runProcess(process.execPath, [
      MAIN,
      'proxy',
      '--policy',
      file,
      '--',
      process.execPath,
      '-e',
      `require('fs').writeFileSync(${JSON.stringify(marker)}, '')`,
    ]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`--policy ${file}: `);
    expect(r.stderr).toContain(expected);
    expect(r.stdout).toBe('');
    expect(existsSync(marker)).toBe(false);
  });

  it('a missing upstream command exits 2 with the usage', async () => {
    const r = await runProcess(process.execPath, [MAIN, 'proxy']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("give the upstream command after the proxy's options (or after --)");
  });
});

describe('proxy with the 2025-era v1 client in front', () => {
  it('write_file is asked once through elicitation/create and writes; read_text_file passes with no question', async () => {
    const root = freshDir('v1');
    writeFileSync(join(root, 'r.txt'), 'v1 read');
    const asked: string[] = [];
    const client = new V1Client({ name: 'legacy', version: '0.0.0' }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push((req.params as { message: string }).message);
      return { action: 'accept', content: { confirmed: true } };
    });
    await client.connect(
      new V1StdioClientTransport({
        command: process.execPath,
        args: [MAIN, 'proxy', '--', process.execPath, FS_SERVER, root],
        stderr: 'pipe',
      }),
    );
    closers.push(() => client.close());
    const read = (await client.callTool({ name: 'read_text_file', arguments: { path: join(root, 'r.txt') } })) as {
      content: Array<{ text?: string }>;
    };
    expect(read.content[0]?.text).toBe('v1 read');
    expect(asked).toHaveLength(0);
    const write = (await client.callTool({
      name: 'write_file',
      arguments: { path: join(root, 'w.txt'), content: 'from v1' },
    })) as { content: Array<{ text?: string }>; isError?: boolean };
    expect(write.isError ?? false).toBe(false);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('`write_file`');
    expect(readFileSync(join(root, 'w.txt'), 'utf8')).toBe('from v1');
  });
});

describe('proxy binding to the tool definition', () => {
  it('a definition changed between the rounds asks again and forwards nothing; control: the fresh state goes through', async () => {
    const dir = freshDir('bump');
    const { client } = await spawnProxy([], [FIXTURE, dir]);
    const args = { text: 'hello' };
    const first = asked(await callTool(client, { name: 'write_note', arguments: args }));
    expect(text(await callTool(client, { name: 'bump', arguments: {} }))).toBe('v2');
    const again = await callTool(client, {
      name: 'write_note',
      arguments: args,
      inputResponses: ACCEPT,
      requestState: first.state,
    });
    const second = asked(again);
    expect(second.state).not.toBe(first.state);
    expect(existsSync(join(dir, 'note.txt'))).toBe(false);
    expect(
      text(
        await callTool(client, {
          name: 'write_note',
          arguments: args,
          inputResponses: ACCEPT,
          requestState: second.state,
        }),
      ),
    ).toBe('written');
    expect(readFileSync(join(dir, 'note.txt'), 'utf8')).toBe('hello');
  });

  it('a tool gone from the list between the rounds is refused with ERR_CONFIRM_UPSTREAM_TOOL_GONE', async () => {
    const dir = freshDir('gone');
    const { client } = await spawnProxy([], [FIXTURE, dir]);
    const { state } = asked(await callTool(client, { name: 'write_note', arguments: { text: 'x' } }));
    expect(text(await callTool(client, { name: 'remove', arguments: {} }))).toBe('removed');
    const gone = await callTool(client, {
      name: 'write_note',
      arguments: { text: 'x' },
      inputResponses: ACCEPT,
      requestState: state,
    });
    expect(refusedWith(gone, 'ERR_CONFIRM_UPSTREAM_TOOL_GONE')).toBe(true);
    expect(existsSync(join(dir, 'note.txt'))).toBe(false);
    expect((await client.listTools()).tools.map((t) => t.name)).not.toContain('write_note');
  });
});

describe('proxy upstream failures', () => {
  it('the upstream killed mid-call gives ERR_CONFIRM_UPSTREAM_FAILED, then tools/list and tools/call answer ERR_CONFIRM_UPSTREAM_DOWN', async () => {
    const dir = freshDir('killed');
    const { client, stderr } = await spawnProxy([], [FIXTURE, dir]);
    const pid = Number(text(await callTool(client, { name: 'pid', arguments: {} })));
    expect(Number.isSafeInteger(pid) && pid > 0).toBe(true);
    const inFlight = callTool(client, { name: 'hang', arguments: {} });
    // The call is in flight once the upstream has written its marker.
    while (!existsSync(join(dir, 'started'))) await new Promise((r) => setTimeout(r, 20));
    process.kill(pid, 'SIGKILL');
    const failed = await inFlight;
    expect(refusedWith(failed, 'ERR_CONFIRM_UPSTREAM_FAILED')).toBe(true);
    expect(text(failed)).toContain('not retried');
    const list = await client.listTools().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(list).toBeInstanceOf(ProtocolError);
    expect((list as ProtocolError).message).toContain('[ERR_CONFIRM_UPSTREAM_DOWN]');
    expect((list as ProtocolError).message).toContain('killed by SIGKILL');
    const again = await client.listTools().catch((e: unknown) => e);
    expect((again as ProtocolError).message).toContain('[ERR_CONFIRM_UPSTREAM_DOWN]');
    expect(refusedWith(await callTool(client, { name: 'pid', arguments: {} }), 'ERR_CONFIRM_UPSTREAM_DOWN')).toBe(true);
    await stderrSays(stderr, 'it is not restarted');
  });

  it('an upstream that never answers gives ERR_CONFIRM_UPSTREAM_TIMEOUT at the deadline, after the call reached it', async () => {
    const dir = freshDir('hang');
    // The hang is endless, so any deadline ends it; the policy names the tool so no listing shares the deadline.
    const policyFile = join(R, 'hang-policy.json');
    writeFileSync(policyFile, JSON.stringify({ allow: ['hang'] }));
    const { client } = await spawnProxy(['--upstream-timeout', '1', '--policy', policyFile], [FIXTURE, dir]);
    const hung = await callTool(client, { name: 'hang', arguments: {} });
    expect(refusedWith(hung, 'ERR_CONFIRM_UPSTREAM_TIMEOUT')).toBe(true);
    expect(text(hung)).toContain('the call was cancelled and not retried; whether it acted is unknown');
    expect(existsSync(join(dir, 'started'))).toBe(true);
  });

  it("the upstream's own elicitation request is refused with a clear error, never shown to the client", async () => {
    const dir = freshDir('ask');
    const { client } = await spawnProxy([], [FIXTURE, dir]);
    const reply = await callTool(client, { name: 'ask', arguments: {} });
    expect(reply.kind).toBe('result');
    expect(text(reply)).toContain('upstream elicitation and sampling requests are refused');
  });
});
