/**
 * `mcp-confirm proxy` (the built CLI as a real subprocess) against an upstream whose tool list
 * changes while the proxy reads it: fixtures/listRace.mjs (SDK v1, 2025 era, over stdio), driven by
 * the test through a control socket. Its tools/list handler takes its snapshot, says so and waits
 * for the test's release; the test makes `target` destructive and has the upstream send
 * notifications/tools/list_changed, and only once that notice is written does it release the old
 * snapshot. So the notice reaches the proxy before the old answer, on the one ordered stdio stream:
 * the order is proven by events, not by timing. A real v2 client pinned to 2026-07-28 drives the
 * rounds by hand. Needs `npm run build` first.
 */
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCEPT, asked, callTool, MANUAL_CLIENT_OPTIONS, type Reply } from '../helpers/harness.js';
import { TOOL_CHANGED_NOTICE } from '../../src/proxy/question.js';

const MAIN = resolve(import.meta.dirname, '../../dist/cli/main.js');
const FIXTURE = resolve(import.meta.dirname, 'fixtures/listRace.mjs');
const DESTRUCTIVE = { annotations: { readOnlyHint: false, destructiveHint: true } };

let R: string;
const closers: Array<() => Promise<unknown>> = [];
beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-listrace-')));
});
afterAll(async () => {
  for (const c of closers.splice(0).reverse()) await c().catch(() => {});
  rmSync(R, { recursive: true, force: true });
});

type FixtureEvent =
  | { event: 'hello'; pid: number }
  | { event: 'ok'; id: number }
  | { event: 'held'; n: number }
  | { event: 'list'; n: number; cursor: string | null }
  | { event: 'called'; args: unknown };

/** The test's end of the fixture's control socket: its events in order, and commands answered once done. */
interface Control {
  readonly events: FixtureEvent[];
  /** Sends a command; resolves once the fixture has carried it out. */
  command(cmd: Record<string, unknown>): Promise<void>;
  /** Resolves once an event satisfying `match` has arrived (it may have already). */
  waitFor(match: (e: FixtureEvent) => boolean): Promise<FixtureEvent>;
  /** The listings made for the client: every tools/list request after the proxy's start-up listing (n 1). */
  listings(): Array<{ n: number; cursor: string | null }>;
  calls(): unknown[];
}

let sockets = 0;
/**
 * Listens on a fresh Unix socket. The fixture's session process and the SDK's short-lived probe
 * process (the same command) both connect; `connect(pid)` resolves with the control of the one
 * whose hello carried `pid`.
 */
async function controlSocket(): Promise<{ path: string; connect(pid: number): Promise<Control> }> {
  const path = join(R, `c${++sockets}.sock`);
  const server: Server = createServer();
  const peers: Socket[] = [];
  const byPid = new Map<number, Control>();
  const helloWaiters: Array<() => void> = [];
  server.on('connection', (socket) => {
    peers.push(socket);
    socket.on('error', () => {});
    const control = controlOf(socket);
    createInterface({ input: socket }).on('line', (line) => {
      const event = JSON.parse(line) as FixtureEvent;
      if (event.event === 'hello') {
        byPid.set(event.pid, control);
        for (const w of helloWaiters.splice(0)) w();
      }
      control.arrived(event);
    });
  });
  await new Promise<void>((res) => server.listen(path, res));
  closers.push(
    () =>
      new Promise((res) => {
        for (const p of peers) p.destroy();
        server.close(() => res(undefined));
      }),
  );
  return {
    path,
    connect: async (pid) => {
      while (!byPid.has(pid)) await new Promise<void>((res) => helloWaiters.push(res));
      return byPid.get(pid)!;
    },
  };
}

/** The control of one connection: its events in order, and commands answered once done. */
function controlOf(socket: Socket): Control & { arrived(e: FixtureEvent): void } {
  const events: FixtureEvent[] = [];
  const waiters: Array<{ match: (e: FixtureEvent) => boolean; resolve: (e: FixtureEvent) => void }> = [];
  let ids = 0;
  const waitFor = (match: (e: FixtureEvent) => boolean): Promise<FixtureEvent> => {
    const seen = events.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolveEvent) => waiters.push({ match, resolve: resolveEvent }));
  };
  return {
    events,
    arrived: (event) => {
      events.push(event);
      for (const w of waiters.splice(0)) {
        if (w.match(event)) w.resolve(event);
        else waiters.push(w);
      }
    },
    command: async (cmd) => {
      const id = ++ids;
      socket.write(`${JSON.stringify({ ...cmd, id })}\n`);
      await waitFor((e) => e.event === 'ok' && e.id === id);
    },
    waitFor,
    listings: () => events.flatMap((e) => (e.event === 'list' && e.n > 1 ? [{ n: e.n, cursor: e.cursor }] : [])),
    calls: () => events.flatMap((e) => (e.event === 'called' ? [e.args] : [])),
  };
}

/**
 * The proxy in front of the fixture, with the manual v2 client; resolves with the control of the
 * fixture's session process, named by the pid in its version on the proxy's serving line.
 */
async function start(): Promise<{ client: Client; control: Control }> {
  const socket = await controlSocket();
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MAIN, 'proxy', '--', process.execPath, FIXTURE, socket.path],
    stderr: 'pipe',
  });
  const served = new Promise<number>((res) => {
    let err = '';
    transport.stderr?.on('data', (chunk: Buffer) => {
      err += chunk.toString('utf8');
      const m = /serving `list-race-upstream` `1\.0\.0-pid\.([0-9]+)`/.exec(err);
      if (m) res(Number(m[1]));
    });
  });
  const client = new Client({ name: 'list-race-test', version: '0.0.0' }, MANUAL_CLIENT_OPTIONS);
  await client.connect(transport);
  closers.push(() => client.close());
  const control = await socket.connect(await served);
  // The proxy lists the tools once at start-up, before its serving line (one page: the test has not
  // paged the list yet); listings() counts the later ones.
  await control.waitFor((e) => e.event === 'list' && e.n === 1);
  return { client, control };
}

const call = (client: Client, args: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  callTool(client, { name: 'target', arguments: args, ...extra });

function ran(reply: Reply): string {
  if (reply.kind !== 'result' || reply.isError)
    throw new Error(`expected a result, got ${JSON.stringify(reply).slice(0, 400)}`);
  return reply.text;
}

/** After the accepted call's result: its `called` event has arrived, and every earlier call's would have come before it. */
async function onlyCall(control: Control, args: unknown): Promise<void> {
  await control.waitFor((e) => e.event === 'called');
  expect(control.calls()).toEqual([args]);
}

describe('a tools/list_changed notice that arrives while the proxy reads the list', () => {
  it('a call whose listing was answered after the notice is asked, not forwarded: the old list is read again', async () => {
    const { client, control } = await start();
    await control.command({ cmd: 'hold', which: 'first' });
    const pending = call(client, { text: 'raced' });
    // The upstream has taken its snapshot (target read-only) and waits.
    await control.waitFor((e) => e.event === 'held');
    await control.command({ cmd: 'set', tool: DESTRUCTIVE, notify: true });
    await control.command({ cmd: 'release' });
    const { state, message } = asked(await pending);
    expect(message).toContain('`target`');
    // Listings: the held one (thrown away), the one read again after the notice (the policy's
    // decision: confirm), and the fresh one whose definition the state seals.
    expect(control.listings().map((l) => l.n)).toEqual([2, 3, 4]);
    // Confirmed, it is forwarded exactly once.
    expect(ran(await call(client, { text: 'raced' }, { inputResponses: ACCEPT, requestState: state }))).toBe(
      'ran raced',
    );
    await onlyCall(control, { text: 'raced' });
  });

  it("a client's tools/list answered after the notice is not cached: the next call is asked", async () => {
    const { client, control } = await start();
    await control.command({ cmd: 'hold', which: 'first' });
    const listed = client.listTools();
    await control.waitFor((e) => e.event === 'held');
    await control.command({ cmd: 'set', tool: DESTRUCTIVE, notify: true });
    await control.command({ cmd: 'release' });
    // The client gets the list as it is after the notice, not the snapshot from before it.
    const target = (await listed).tools.find((t) => t.name === 'target');
    expect(target?.annotations).toEqual(DESTRUCTIVE.annotations);
    const { state } = asked(await call(client, { text: 'after list' }));
    expect(ran(await call(client, { text: 'after list' }, { inputResponses: ACCEPT, requestState: state }))).toBe(
      'ran after list',
    );
    await onlyCall(control, { text: 'after list' });
  });

  it('a listing of several pages is not mixed from pages before and after the notice: it starts again from the first page', async () => {
    const { client, control } = await start();
    await control.command({ cmd: 'pages', size: 1 });
    // Page 1 (target, read-only) is answered; the request for page 2 is held.
    await control.command({ cmd: 'hold', which: 'later' });
    const pending = call(client, { text: 'paged' });
    await control.waitFor((e) => e.event === 'held');
    await control.command({ cmd: 'set', tool: DESTRUCTIVE, notify: true });
    await control.command({ cmd: 'release' });
    const { state } = asked(await pending);
    // Page 1 and 2 before the notice, then page 1 and 2 again after it (the decision: confirm),
    // then both pages of the fresh listing whose definition the state seals.
    expect(control.listings().map((l) => l.cursor)).toEqual([null, '1', null, '1', null, '1']);
    expect(ran(await call(client, { text: 'paged' }, { inputResponses: ACCEPT, requestState: state }))).toBe(
      'ran paged',
    );
    await onlyCall(control, { text: 'paged' });
  });

  it('control: without the race, a read-only target passes unasked, and once it became destructive (notice, nothing in flight) it is asked', async () => {
    const { client, control } = await start();
    expect(ran(await call(client, { text: 'read-only' }))).toBe('ran read-only');
    await control.command({ cmd: 'set', tool: DESTRUCTIVE, notify: true });
    const { state } = asked(await call(client, { text: 'destructive' }));
    expect(ran(await call(client, { text: 'destructive' }, { inputResponses: ACCEPT, requestState: state }))).toBe(
      'ran destructive',
    );
    await control.waitFor((e) => e.event === 'called' && JSON.stringify(e.args) === '{"text":"destructive"}');
    expect(control.calls()).toEqual([{ text: 'read-only' }, { text: 'destructive' }]);
  });

  it('a storm of 100 notices during a listing costs one more listing, shared by every call waiting (one in flight, one pending); control: a change after the storm is still seen', async () => {
    const { client, control } = await start();
    await control.command({ cmd: 'hold', which: 'first' });
    const first = call(client, { text: 'storm 0' });
    await control.waitFor((e) => e.event === 'held');
    await control.command({ cmd: 'notify', count: 100 });
    // Five more calls while the first listing is held, after the notices.
    const more = [1, 2, 3, 4, 5].map((i) => call(client, { text: `storm ${i}` }));
    await control.command({ cmd: 'release' });
    const texts = await Promise.all([first, ...more].map(async (p) => ran(await p)));
    expect(texts).toEqual([0, 1, 2, 3, 4, 5].map((i) => `ran storm ${i}`));
    // Whenever the five arrived (during the held listing, during the second, or after it), they
    // shared the pending listing, the one in flight, or its cached result: two listings in all.
    expect(control.listings()).toHaveLength(2);
    // Control: the storm did not swallow a real change (one listing for the decision, one fresh for the question).
    await control.command({ cmd: 'set', tool: DESTRUCTIVE, notify: true });
    asked(await call(client, { text: 'after the storm' }));
    expect(control.listings()).toHaveLength(4);
    await control.waitFor((e) => e.event === 'called' && JSON.stringify(e.args) === '{"text":"storm 5"}');
    expect(control.calls()).toHaveLength(6);
  });
});

describe('the definition digest covers the title and the outputSchema', () => {
  it.each([
    ['title', { title: 'A new title' }],
    ['outputSchema', { outputSchema: { type: 'object', properties: { ran: { type: 'string' } } } }],
    ['description', { description: 'Writes a note, and more.' }],
  ])(
    'a %s changed between the rounds asks again, the fresh question saying the upstream changed the tool; control: the fresh state goes through',
    async (_field, change) => {
      const { client, control } = await start();
      await control.command({ cmd: 'set', tool: DESTRUCTIVE, notify: true });
      const first = asked(await call(client, { text: 'defined' }));
      expect(first.message).not.toContain(TOOL_CHANGED_NOTICE);
      // Changed without a notice: round 2 reads the list afresh anyway.
      await control.command({ cmd: 'set', tool: change, notify: false });
      const again = asked(
        await call(client, { text: 'defined' }, { inputResponses: ACCEPT, requestState: first.state }),
      );
      expect(again.state).not.toBe(first.state);
      expect(again.message.split('\n')[0]).toBe(TOOL_CHANGED_NOTICE);
      expect(again.message).toContain('Run the tool `target`');
      expect(control.calls()).toEqual([]);
      const done = await call(client, { text: 'defined' }, { inputResponses: ACCEPT, requestState: again.state });
      expect(ran(done)).toBe('ran defined');
      await onlyCall(control, { text: 'defined' });
    },
  );

  it('control: a state answered without change needs no second question and carries no notice', async () => {
    const { client, control } = await start();
    await control.command({ cmd: 'set', tool: DESTRUCTIVE, notify: true });
    const first = asked(await call(client, { text: 'steady' }));
    // No answer: asked again, but nothing changed, so no notice.
    const again = asked(await call(client, { text: 'steady' }, { requestState: first.state }));
    expect(again.message).not.toContain(TOOL_CHANGED_NOTICE);
    expect(again.message.split('\n')[0]).toMatch(/^Run the tool `target`/);
    expect(ran(await call(client, { text: 'steady' }, { inputResponses: ACCEPT, requestState: again.state }))).toBe(
      'ran steady',
    );
    await onlyCall(control, { text: 'steady' });
  });
});
