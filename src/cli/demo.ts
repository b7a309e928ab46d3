/**
 * `mcp-confirm demo`: the whole thing on real files. A temporary root with
 * `cache.txt` and `thesis.txt`, the real server as a subprocess over stdio, a
 * real MCP client pinned to protocol 2026-07-28 driving the rounds by hand,
 * a human (you, or `--yes`) answering, then three attacks and which layer
 * refuses each.
 *
 * @module
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline/promises';
import { fileURLToPath } from 'node:url';
import { Client, ProtocolError, type CallToolResult, type InputRequiredResult } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { PACKAGE_VERSION } from '../defaults.js';
import { EXIT_USAGE } from './common.js';

/**
 * The SDK's stdio transport, probing in place. The base `StdioClientTransport` runs the
 * `server/discover` probe on a disposable sibling process (a 2025-era server may exit on a request
 * before `initialize`) and only then starts the session's process: two cold starts before the first
 * call. The demo talks to its own 2026-era server, which answers the probe, so a subclass (which the
 * SDK probes on the connection itself) runs exactly one server process per demo.
 */
class OwnServerTransport extends StdioClientTransport {}

const out = (line = ''): void => {
  process.stdout.write(`${line}\n`);
};

type Reply =
  | { kind: 'result'; result: CallToolResult }
  | { kind: 'input_required'; result: InputRequiredResult }
  | { kind: 'error'; code: number; message: string };

function textOf(result: CallToolResult): string {
  return result.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join(' ');
}

function describe(reply: Reply): string {
  if (reply.kind === 'error') return `JSON-RPC error ${reply.code} "${reply.message}"`;
  if (reply.kind === 'input_required') return 'input_required (asked again)';
  return `${reply.result.isError ? 'isError: ' : ''}${textOf(reply.result)}`;
}

/**
 * Runs the demo.
 *
 * @param options.yes - answer yes without asking.
 * @returns the process exit code: 0 when every attack was refused and thesis.txt is intact, 1 otherwise,
 *   2 when there is no terminal to ask and no `--yes`.
 */
export async function runDemo(options: { yes: boolean }): Promise<number> {
  const interactive = process.stdin.isTTY === true && process.stdout.isTTY === true;
  if (!options.yes && !interactive) {
    process.stderr.write(
      'mcp-confirm demo: no terminal to ask you on, and no --yes; run it in a terminal, or as `mcp-confirm demo --yes`.\n',
    );
    return EXIT_USAGE;
  }
  const root = await mkdtemp(join(tmpdir(), 'mcp-confirm-demo-'));
  const thesisText = 'Chapter 1. Four years of work that must never be deleted by a replayed "yes".\n';
  await writeFile(join(root, 'cache.txt'), 'stale cache, safe to delete\n');
  await writeFile(join(root, 'thesis.txt'), thesisText);

  const serverMain = fileURLToPath(new URL('./main.js', import.meta.url));
  const transport = new OwnServerTransport({
    command: process.execPath,
    args: [serverMain, '--root', root],
    stderr: 'pipe',
  });
  const client = new Client(
    { name: 'mcp-confirm-demo', version: PACKAGE_VERSION },
    {
      capabilities: { elicitation: { form: {} } },
      versionNegotiation: { mode: { pin: '2026-07-28' } },
      inputRequired: { autoFulfill: false },
    },
  );
  const call = async (params: Record<string, unknown>): Promise<Reply> => {
    try {
      const r = (await client.request(
        { method: 'tools/call', params } as never,
        { allowInputRequired: true } as never,
      )) as CallToolResult | InputRequiredResult;
      if ((r as InputRequiredResult).resultType === 'input_required')
        return { kind: 'input_required', result: r as InputRequiredResult };
      return { kind: 'result', result: r as CallToolResult };
    } catch (e) {
      if (e instanceof ProtocolError) return { kind: 'error', code: e.code, message: e.message };
      throw e;
    }
  };

  let failures = 0;
  const expect = (label: string, reply: Reply, ok: boolean, layer: string): void => {
    out(`  → ${describe(reply)}`);
    out(ok ? `  REFUSED by ${layer}.` : `  !! NOT REFUSED as expected (${label})`);
    if (!ok) failures++;
  };

  try {
    await client.connect(transport);
    out(`mcp-confirm demo`);
    out(`  root: ${root} (cache.txt, thesis.txt)`);
    out(`  server: ${process.execPath} ${serverMain} --root ${root}   (a real subprocess over stdio)`);
    out(
      `  client: MCP SDK v2 Client, protocol ${client.getNegotiatedProtocolVersion() ?? '?'}, driving the rounds by hand`,
    );
    out();

    out(`1. The model calls delete_file {"path":"cache.txt"} (round 1).`);
    const round1 = await call({ name: 'delete_file', arguments: { path: 'cache.txt' } });
    if (round1.kind !== 'input_required') {
      out(`  unexpected: ${describe(round1)}`);
      return 1;
    }
    const ask = round1.result.inputRequests?.confirm as
      { params?: { message?: string } } | { message?: string } | undefined;
    const message =
      (ask as { params?: { message?: string } })?.params?.message ??
      (ask as { message?: string })?.message ??
      '(no message)';
    const state = round1.result.requestState ?? '';
    out(
      `  The server answers input_required with one form elicitation and a sealed requestState (${state.length} characters, opaque to the client).`,
    );
    out(`  Nothing on disk has changed yet. The question the human sees:`);
    out();
    out(`    ${message}`);
    out();

    let yes = options.yes;
    if (!yes) {
      const rl = createInterface({ input: process.stdin, output: process.stdout });
      // End of input (Ctrl-D) is the default answer: no.
      const answer = await rl.question('  Confirm? [y/N] ').catch(() => '');
      rl.close();
      yes = /^y(es)?$/i.test(answer.trim());
    } else {
      out(`  Confirm? [y/N] y   (--yes)`);
    }

    out();
    out(`2. The client retries with the answer and the echoed requestState (round 2).`);
    const inputResponses = { confirm: { action: 'accept', content: { confirmed: yes } } };
    const accepting = { confirm: { action: 'accept', content: { confirmed: true } } };
    const round2 = await call({
      name: 'delete_file',
      arguments: { path: 'cache.txt' },
      inputResponses,
      requestState: state,
    });
    out(`  → ${describe(round2)}`);
    const cacheGone = await readFile(join(root, 'cache.txt')).then(
      () => false,
      () => true,
    );
    out(`  cache.txt is ${cacheGone ? 'gone' : 'still there'}.`);
    out();

    out(
      yes
        ? `3. Attacks, each reusing the approval just given:`
        : `3. Attacks, each reusing the round-2 request just sent (its requestState and an accepting answer):`,
    );
    out(`  a) The same request replayed a second time.`);
    const replay = await call({
      name: 'delete_file',
      arguments: { path: 'cache.txt' },
      inputResponses: accepting,
      requestState: state,
    });
    expect(
      'replay',
      replay,
      replay.kind === 'result' && textOf(replay.result).startsWith('[ERR_CONFIRM_SPENT]'),
      'the ledger: the jti was spent once, atomically [ERR_CONFIRM_SPENT]',
    );
    out(`  b) The state asked for cache.txt moved onto thesis.txt.`);
    const moved = await call({
      name: 'delete_file',
      arguments: { path: 'thesis.txt' },
      inputResponses: accepting,
      requestState: state,
    });
    expect(
      'moved',
      moved,
      moved.kind === 'result' && textOf(moved.result).startsWith('[ERR_CONFIRM_MISMATCH]'),
      'the argument binding: the sealed digest names cache.txt [ERR_CONFIRM_MISMATCH]',
    );
    out(`  c) A forged requestState (one character of the ciphertext changed).`);
    const at = Math.floor(state.length * 0.75);
    const forged = state.slice(0, at) + (state[at] === 'A' ? 'B' : 'A') + state.slice(at + 1);
    const forgery = await call({
      name: 'delete_file',
      arguments: { path: 'thesis.txt' },
      inputResponses: accepting,
      requestState: forged,
    });
    expect(
      'forged',
      forgery,
      forgery.kind === 'error' && forgery.code === -32602,
      "the seal: AES-256-GCM authentication failed in the SDK's requestState.verify hook (-32602)",
    );
    out();

    const thesisNow = await readFile(join(root, 'thesis.txt'), 'utf8').catch(() => null);
    if (thesisNow === thesisText) out(`thesis.txt is intact.`);
    else {
      out(`!! thesis.txt was changed or deleted.`);
      failures++;
    }
    return failures === 0 ? 0 : 1;
  } finally {
    await client.close().catch(() => {});
    await rm(root, { recursive: true, force: true });
  }
}
