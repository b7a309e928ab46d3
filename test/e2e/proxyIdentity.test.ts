/**
 * The upstream identity a proxy state binds: two `mcp-confirm proxy` processes (the built CLI)
 * sharing `--key-file` and `--ledger sqlite:FILE`, each in front of
 * `@modelcontextprotocol/server-filesystem .` (SDK v1, 2025 era) in its own working directory, so
 * `notes.txt` means another file to each. A real v2 client pinned to 2026-07-28 drives the rounds
 * by hand; the roots case uses the 2025-era v1 client, the only era whose roots can be relayed.
 * Needs `npm run build` first.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema, ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCEPT, asked, callTool, MANUAL_CLIENT_OPTIONS, type Reply } from '../helpers/harness.js';
import { runProcess, until } from '../helpers/processes.js';
import { UPSTREAM_CHANGED_NOTICE } from '../../src/proxy/question.js';
import { pathToFileURL } from 'node:url';
import { InMemoryTransport } from '@modelcontextprotocol/client';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
// The built modules (the upstream runs under dist/proxy/supervisor.js, next to dist/proxy/upstream.js).
import { createConfirmation } from '../../dist/guard/confirmation.js';
import { wrapStore, type ConfirmStore } from '../../dist/store/confirmStore.js';
import { MemoryLedger } from '../../dist/store/memory.js';
import { createProxy } from '../../dist/proxy/server.js';
import { rootsDigestOf, Upstream } from '../../dist/proxy/upstream.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');
const FS_SERVER = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-filesystem/dist/index.js');

let R: string;
let keyFile: string;
const closers: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-identity-')));
  keyFile = join(R, 'keys.json');
  const keygen = await runProcess(process.execPath, [MAIN, 'keygen', '--kid', 'k1']);
  expect(keygen.status).toBe(0);
  writeFileSync(keyFile, keygen.stdout);
});
afterAll(async () => {
  for (const c of closers.splice(0).reverse()) await c().catch(() => {});
  rmSync(R, { recursive: true, force: true });
});

let dirs = 0;
/** A fresh project directory holding `notes.txt` with `content`. */
function project(content: string): string {
  const dir = join(R, `p${++dirs}`);
  mkdirSync(dir);
  writeFileSync(join(dir, 'notes.txt'), content);
  return dir;
}

/** `mcp-confirm proxy --key-file K --ledger sqlite:LEDGER [extra] -- node server-filesystem .`, started in `cwd`, with the manual v2 client. */
async function proxyIn(cwd: string, ledger: string, extra: string[] = []): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [
      MAIN,
      'proxy',
      '--key-file',
      keyFile,
      '--ledger',
      `sqlite:${ledger}`,
      ...extra,
      '--',
      process.execPath,
      FS_SERVER,
      '.',
    ],
    cwd,
    stderr: 'pipe',
  });
  transport.stderr?.on('data', () => {});
  const client = new Client({ name: 'identity-test', version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
  await client.connect(transport);
  closers.push(() => client.close());
  return client;
}

const WRITE = { path: 'notes.txt', content: 'written through the proxy\n' };
const writeNotes = (client: Client, extra: Record<string, unknown> = {}) =>
  callTool(client, { name: 'write_file', arguments: WRITE, ...extra });

function wrote(reply: Reply): void {
  if (reply.kind !== 'result' || reply.isError || !reply.text.includes('Successfully wrote'))
    throw new Error(`expected a write, got ${JSON.stringify(reply).slice(0, 400)}`);
}

let ledgers = 0;
const freshLedger = () => join(R, `ledger${++ledgers}.db`);

describe('a state does not cross to a proxy whose upstream acts on another project', () => {
  it("a write_file asked through the proxy in one project, presented to the proxy in another (same keys and SQLite ledger), is asked again there and the other project's notes.txt is intact; control: the first proxy redeems it", async () => {
    const ledger = freshLedger();
    const first = project('first project\n');
    const second = project('second project\n');
    const a = await proxyIn(first, ledger);
    const b = await proxyIn(second, ledger);
    const { state } = asked(await writeNotes(a));
    const there = asked(await writeNotes(b, { inputResponses: ACCEPT, requestState: state }));
    expect(there.state).not.toBe(state);
    expect(there.message.split('\n')[0]).toBe(UPSTREAM_CHANGED_NOTICE);
    expect(readFileSync(join(second, 'notes.txt'), 'utf8')).toBe('second project\n');
    expect(readFileSync(join(first, 'notes.txt'), 'utf8')).toBe('first project\n');
    // Control: the state was good, and is still unspent, for the project it was asked for.
    wrote(await writeNotes(a, { inputResponses: ACCEPT, requestState: state }));
    expect(readFileSync(join(first, 'notes.txt'), 'utf8')).toBe(WRITE.content);
    expect(readFileSync(join(second, 'notes.txt'), 'utf8')).toBe('second project\n');
  });

  it("control: two proxies in the same working directory accept each other's states, spent once through the shared ledger", async () => {
    const ledger = freshLedger();
    const shared = project('shared project\n');
    const a = await proxyIn(shared, ledger);
    const b = await proxyIn(shared, ledger);
    const { state, message } = asked(await writeNotes(a));
    expect(message).not.toContain(UPSTREAM_CHANGED_NOTICE);
    wrote(await writeNotes(b, { inputResponses: ACCEPT, requestState: state }));
    expect(readFileSync(join(shared, 'notes.txt'), 'utf8')).toBe(WRITE.content);
    const replay = await writeNotes(a, { inputResponses: ACCEPT, requestState: state });
    expect(replay.kind === 'result' && replay.isError && replay.text.startsWith('[ERR_CONFIRM_SPENT]')).toBe(true);
  });
});

describe('--upstream-id NAME', () => {
  it("the same id in two working directories is the operator's explicit choice: the state is accepted by the other proxy (its notes.txt written); another id in the first directory asks again", async () => {
    const ledger = freshLedger();
    const first = project('first project\n');
    const second = project('second project\n');
    const a = await proxyIn(first, ledger, ['--upstream-id', 'notes-project']);
    const b = await proxyIn(second, ledger, ['--upstream-id', 'notes-project']);
    const other = await proxyIn(first, ledger, ['--upstream-id', 'another-project']);
    const { state } = asked(await writeNotes(a));
    // Another id, even in the same directory as the proxy that asked: asked again, nothing written.
    const again = asked(await writeNotes(other, { inputResponses: ACCEPT, requestState: state }));
    expect(again.message.split('\n')[0]).toBe(UPSTREAM_CHANGED_NOTICE);
    expect(readFileSync(join(first, 'notes.txt'), 'utf8')).toBe('first project\n');
    // The same id: the operator said these are one upstream, so the second project's file is written.
    wrote(await writeNotes(b, { inputResponses: ACCEPT, requestState: state }));
    expect(readFileSync(join(second, 'notes.txt'), 'utf8')).toBe(WRITE.content);
    expect(readFileSync(join(first, 'notes.txt'), 'utf8')).toBe('first project\n');
  });

  it('a bad --upstream-id exits 2 naming the rule, before anything is started; control: --help shows the flag', async () => {
    for (const bad of ['', 'a\u0007b', 'x'.repeat(201)]) {
      const marker = join(R, `never-${Math.random().toString(36).slice(2)}`);
      const r = await runProcess(process.execPath, [
        MAIN,
        'proxy',
        '--upstream-id',
        bad,
        '--',
        process.execPath,
        '-e',
        `require('fs').writeFileSync(${JSON.stringify(marker)}, '')`,
      ]);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain('--upstream-id must be 1 to 200 characters without control characters');
      expect(r.stdout).toBe('');
      expect(existsSync(marker)).toBe(false);
    }
    const help = await runProcess(process.execPath, [MAIN, 'proxy', '--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('--upstream-id NAME');
  });
});

describe('the roots relayed to the upstream are bound', () => {
  /** server-filesystem in `start` behind the proxy, with a v1 client declaring `roots` and answering every question yes. */
  async function rootedProxy(
    start: string,
    initialRoots: Array<{ uri: string; name: string }>,
    onQuestion: (message: string, n: number) => Promise<void>,
  ) {
    let roots = initialRoots;
    const questions: string[] = [];
    let err = '';
    const client = new V1Client(
      { name: 'roots-test', version: '0.0.0' },
      { capabilities: { roots: { listChanged: true }, elicitation: {} } },
    );
    client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots }));
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      const message = (req.params as { message: string }).message;
      questions.push(message);
      await onQuestion(message, questions.length);
      return { action: 'accept', content: { confirmed: true } };
    });
    const transport = new V1StdioClientTransport({
      command: process.execPath,
      args: [MAIN, 'proxy', '--', process.execPath, FS_SERVER, start],
      stderr: 'pipe',
    });
    transport.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
    await client.connect(transport);
    closers.push(() => client.close());
    // server-filesystem asks for the roots once initialized and logs each update on stderr (relayed by the proxy).
    const updates = () => err.split('Updated allowed directories from MCP roots').length - 1;
    await until(() => updates() >= 1);
    return { client, questions, updates, setRoots: (r: typeof roots) => (roots = r) };
  }

  it('roots changed between the rounds ask again, the fresh question saying the upstream is not the one asked about; the write happens once, after the second yes', async () => {
    const start = project('start\n');
    const first = project('first root\n');
    const second = project('second root\n');
    const target = join(first, 'notes.txt');
    let proxy: Awaited<ReturnType<typeof rootedProxy>> | undefined;
    proxy = await rootedProxy(start, [{ uri: `file://${first}`, name: 'first' }], async (_message, n) => {
      if (n !== 1) return;
      // While the first question is open, the client's roots change and the upstream takes them.
      proxy!.setRoots([
        { uri: `file://${first}`, name: 'first' },
        { uri: `file://${second}`, name: 'second' },
      ]);
      await proxy!.client.sendRootsListChanged();
      await until(() => proxy!.updates() >= 2);
      // Nothing was written while asked.
      expect(readFileSync(target, 'utf8')).toBe('first root\n');
    });
    const result = (await proxy.client.callTool({
      name: 'write_file',
      arguments: { path: target, content: 'after the roots changed\n' },
    })) as { isError?: boolean };
    expect(result.isError ?? false).toBe(false);
    expect(proxy.questions).toHaveLength(2);
    expect(proxy.questions[0]).not.toContain(UPSTREAM_CHANGED_NOTICE);
    expect(proxy.questions[1]?.split('\n')[0]).toBe(UPSTREAM_CHANGED_NOTICE);
    expect(readFileSync(target, 'utf8')).toBe('after the roots changed\n');
  });

  it('control: roots unchanged between the rounds: one question, written', async () => {
    const start = project('start\n');
    const first = project('first root\n');
    const target = join(first, 'notes.txt');
    const proxy = await rootedProxy(start, [{ uri: `file://${first}`, name: 'first' }], async () => {});
    const result = (await proxy.client.callTool({
      name: 'write_file',
      arguments: { path: target, content: 'roots steady\n' },
    })) as { isError?: boolean };
    expect(result.isError ?? false).toBe(false);
    expect(proxy.questions).toHaveLength(1);
    expect(readFileSync(target, 'utf8')).toBe('roots steady\n');
  });
});

describe('what the state binds holds at the moment the call is written to the upstream', () => {
  /**
   * The proxy in this process (createProxy over serveStdio's in-memory transport) in front of a real
   * server-filesystem, with a MemoryLedger whose spend waits for the test (the ordering hook: round 2
   * has passed its re-check when spend is called), and a 2025-era v1 client declaring roots whose
   * answers the test can hold.
   */
  async function heldProxy(root: string) {
    let roots = [{ uri: pathToFileURL(root).href, name: 'project' }];
    let heldRoots: Array<() => void> = [];
    let holdRoots = false;
    const rootsAsked: Array<() => void> = [];
    let spendCalled: (() => void) | undefined;
    let spendGate: Promise<void> | undefined;
    const memory = new MemoryLedger();
    const store: ConfirmStore = wrapStore(memory, async (method, run) => {
      if (method === 'spend') {
        spendCalled?.();
        if (spendGate) await spendGate;
      }
      return run();
    });
    const confirmation = await createConfirmation({ store, audience: 'mcp-confirm-proxy' });
    const upstream = await Upstream.spawn({ command: [process.execPath, FS_SERVER, root] });
    closers.push(() => upstream.close());
    const proxy = createProxy({ confirmation, upstream });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const handle = serveStdio(proxy.factory, { transport: serverSide, onerror: () => {} });
    closers.push(() => handle.close());
    const questions: string[] = [];
    let onQuestion: (
      n: number,
    ) => Promise<{ action: 'accept' | 'decline'; content?: { confirmed: boolean } }> = async () => ({
      action: 'accept',
      content: { confirmed: true },
    });
    const client = new V1Client(
      { name: 'roots-race', version: '0.0.0' },
      { capabilities: { roots: { listChanged: true }, elicitation: {} } },
    );
    client.setRequestHandler(ListRootsRequestSchema, async () => {
      for (const w of rootsAsked.splice(0)) w();
      if (!holdRoots) return { roots };
      const answer = roots;
      return new Promise((resolve) => heldRoots.push(() => resolve({ roots: answer })));
    });
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      questions.push((req.params as { message: string }).message);
      return onQuestion(questions.length);
    });
    await client.connect(clientSide as never);
    closers.push(() => client.close());
    const digestOf = (r: typeof roots) => rootsDigestOf(r);
    // server-filesystem asks for the roots once initialized.
    await until(() => upstream.rootsDigest === digestOf(roots));
    return {
      client,
      upstream,
      questions,
      digestOf,
      setRoots: (r: typeof roots) => (roots = r),
      onQuestion: (f: typeof onQuestion) => (onQuestion = f),
      /** Holds every later roots/list answer until {@link releaseRoots}; resolves once the upstream asked. */
      holdRootsAndNotify: async () => {
        holdRoots = true;
        const asked = new Promise<void>((r) => rootsAsked.push(r));
        await client.sendRootsListChanged();
        await asked;
      },
      releaseRoots: () => {
        holdRoots = false;
        for (const r of heldRoots.splice(0)) r();
      },
      /** The next spend waits until the returned `open` is called; `called` resolves when it starts. */
      gateSpend: () => {
        let open!: () => void;
        spendGate = new Promise<void>((r) => (open = r));
        const called = new Promise<void>((r) => (spendCalled = r));
        return { called, open };
      },
    };
  }

  it("roots switched from A to B after the human's yes, their answer relayed while round 2 spends the jti (after its re-check): nothing is forwarded, B/notes.txt is intact, the human is asked again saying the upstream changed", async () => {
    const a = project('A original\n');
    const b = project('B original\n');
    const p = await heldProxy(a);
    const gate = p.gateSpend();
    p.onQuestion(async (n) => {
      if (n !== 1) return { action: 'decline' };
      // The human said yes about A. The client now switches to B and holds the upstream's roots/list.
      p.setRoots([{ uri: pathToFileURL(b).href, name: 'project' }]);
      await p.holdRootsAndNotify();
      return { action: 'accept', content: { confirmed: true } };
    });
    const result = p.client.callTool({
      name: 'write_file',
      arguments: { path: 'notes.txt', content: 'ATTACKER\n' },
    }) as Promise<{ content: Array<{ text: string }>; isError?: boolean }>;
    // Round 2 passed its re-check (roots still A) and is spending: now the held answer (B) goes out.
    await gate.called;
    expect(p.upstream.rootsDigest).toBe(p.digestOf([{ uri: pathToFileURL(a).href, name: 'project' }]));
    p.releaseRoots();
    await until(() => p.upstream.rootsDigest === p.digestOf([{ uri: pathToFileURL(b).href, name: 'project' }]));
    gate.open();
    const r = await result;
    expect(r.content[0]?.text).toBe('You declined; nothing was forwarded to the upstream server.');
    expect(p.questions).toHaveLength(2);
    expect(p.questions[1]?.split('\n')[0]).toBe(UPSTREAM_CHANGED_NOTICE);
    expect(readFileSync(join(b, 'notes.txt'), 'utf8')).toBe('B original\n');
    expect(readFileSync(join(a, 'notes.txt'), 'utf8')).toBe('A original\n');
  });

  it('control: the same order of events with the roots answered unchanged (A again) while round 2 spends: one question, notes.txt in A written once', async () => {
    const a = project('A original\n');
    const b = project('B original\n');
    const p = await heldProxy(a);
    const gate = p.gateSpend();
    p.onQuestion(async () => {
      await p.holdRootsAndNotify();
      return { action: 'accept', content: { confirmed: true } };
    });
    const result = p.client.callTool({
      name: 'write_file',
      arguments: { path: 'notes.txt', content: 'confirmed\n' },
    }) as Promise<{ content: Array<{ text: string }>; isError?: boolean }>;
    await gate.called;
    p.releaseRoots();
    // The upstream asks again and gets the same roots: the digest stays, the call goes on.
    await until(() => p.upstream.rootsDigest === p.digestOf([{ uri: pathToFileURL(a).href, name: 'project' }]));
    gate.open();
    const r = await result;
    expect(r.isError ?? false).toBe(false);
    expect(r.content[0]?.text).toContain('Successfully wrote');
    expect(p.questions).toHaveLength(1);
    expect(readFileSync(join(a, 'notes.txt'), 'utf8')).toBe('confirmed\n');
    expect(readFileSync(join(b, 'notes.txt'), 'utf8')).toBe('B original\n');
  });
});
