/**
 * Serving over HTTP, each figure against its floor in the same run: loopback only, without token
 * auth, one v2 client (protocol 2026-07-28, stateless) in this process and each server in a
 * process of its own.
 *
 * - Round 1 of `delete_file` (`tools/call` answered `input_required`) per second, `mcp-confirm
 *   --root DIR --http 127.0.0.1:0` (the built CLI from `.bench-dist/`, its real `delete_file`:
 *   roots, the file's identity, the question, a ledger slot, the seal; its event line on stderr)
 *   against a bare SDK `createMcpHandler` server with one tool that answers `input_required` at
 *   once (`bench/fixtures/httpServer.ts bare`). Round 1 takes a ledger slot, and without tokens
 *   every caller is the one principal `local` (1,000 outstanding at most), so after each timed
 *   batch its states are declined in round 2, untimed, which frees their slots.
 * - A whole confirmed call (both rounds) over HTTP, the same MRTR tool behind mcp-confirm served
 *   as `--http` serves it (`createHttpApp`, `listenHttp`) against the same tool protected by the
 *   SDK's `createRequestStateCodec` under `createMcpHandler`.
 *
 * Each round runs one batch of each side, the order alternating; the ratios are medians of the
 * per-round ratios.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { REPO, type Proc } from './lbDeployment.js';
import { twoRounds, type Figure } from './mrtr.js';

const FIXTURE = join(REPO, '.bench-dist/bench/fixtures/httpServer.js');
const CLI = join(REPO, '.bench-dist/src/cli/main.js');

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

/** Spawns `node ARGS…` and waits for its `… at http://…/mcp;` line on stderr. */
async function startServer(args: string[], what: string): Promise<{ url: URL; stop: () => Promise<void> }> {
  const proc = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr.setEncoding('utf8');
  const exited = new Promise<void>((res) => proc.once('exit', () => res()));
  const url = await new Promise<URL>((resolve, reject) => {
    const onData = (c: string): void => {
      err += c;
      const m = / at (http:\/\/\S+\/mcp);/.exec(err);
      if (m) {
        proc.stderr.off('data', onData);
        proc.stderr.resume(); // keep draining: the CLI writes one event line per call
        resolve(new URL(m[1]!));
      }
    };
    proc.stderr.on('data', onData);
    proc.once('exit', () => reject(new Error(`${what} exited before listening:\n${err}`)));
  });
  return {
    url,
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
    },
  } satisfies Pick<Proc, 'stop'> & { url: URL };
}

async function connectHttp(url: URL): Promise<Client> {
  const client = new Client(
    { name: 'bench', version: '0' },
    {
      capabilities: { elicitation: { form: {} } },
      versionNegotiation: { mode: { pin: '2026-07-28' } },
      inputRequired: { autoFulfill: false },
    },
  );
  await client.connect(new StreamableHTTPClientTransport(url));
  return client;
}

type Call = (client: Client, i: number) => Promise<unknown>;

/** `calls` calls, `inFlight` at a time; returns calls per second. */
async function rate(client: Client, call: Call, calls: number, inFlight: number, start: number): Promise<number> {
  let next = 0;
  const t0 = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < calls) await call(client, start + next++);
    }),
  );
  return calls / (Number(process.hrtime.bigint() - t0) / 1e9);
}

/** Round 1 of `delete_file` on `path`; returns its `requestState` (the call must be answered `input_required`). */
async function roundOneOf(client: Client, path: string): Promise<string> {
  const r = (await client.request(
    { method: 'tools/call', params: { name: 'delete_file', arguments: { path } } } as never,
    { allowInputRequired: true } as never,
  )) as { resultType?: string; requestState?: string };
  if (r.resultType !== 'input_required' || typeof r.requestState !== 'string')
    throw new Error(`bench: round 1 over http was not answered input_required: ${JSON.stringify(r).slice(0, 200)}`);
  return r.requestState;
}

/** Round 2 declining `state`: spends its slot, deletes nothing. */
async function decline(client: Client, path: string, state: string): Promise<void> {
  const r = (await client.request(
    {
      method: 'tools/call',
      params: {
        name: 'delete_file',
        arguments: { path },
        inputResponses: { confirm: { action: 'decline' } },
        requestState: state,
      },
    } as never,
    { allowInputRequired: true } as never,
  )) as CallToolResult;
  if (r.isError) throw new Error(`bench: a declined round 2 was refused: ${JSON.stringify(r).slice(0, 200)}`);
}

/**
 * The HTTP rows (see the module's comment). Takes about a minute on 2 cores.
 *
 * @param options.calls - calls per batch (round 1: at most 900, under the one principal's 1,000 slots). Defaults to 600.
 * @param options.runs - rounds. Defaults to 7.
 * @param options.inFlight - calls in flight at once. Defaults to 4.
 */
export async function benchHttp(options: { calls?: number; runs?: number; inFlight?: number } = {}): Promise<Figure[]> {
  const calls = Math.min(options.calls ?? 600, 900);
  const runs = options.runs ?? 7;
  const inFlight = options.inFlight ?? 4;
  const dir = mkdtempSync(join(tmpdir(), 'mcp-confirm-bench-http-'));
  const root = join(dir, 'root');
  mkdirSync(root);
  const victim = join(root, 'victim.txt');
  writeFileSync(victim, 'kept: round 1 never deletes, round 2 declines\n');
  const servers = await Promise.all([
    startServer([CLI, '--root', root, '--http', '127.0.0.1:0'], 'mcp-confirm --http'),
    startServer([FIXTURE, 'bare'], 'bare createMcpHandler server'),
    startServer([FIXTURE, 'codec'], 'codec createMcpHandler server'),
    startServer([FIXTURE, 'confirmed'], 'confirmed createHttpApp server'),
  ]);
  const [cliServer, bareServer, codecServer, confirmedServer] = servers;
  try {
    const cli = await connectHttp(cliServer.url);
    const bare = await connectHttp(bareServer.url);
    const codec = await connectHttp(codecServer.url);
    const confirmed = await connectHttp(confirmedServer.url);
    const pending: string[] = [];
    const cliRoundOne: Call = async (c) => void pending.push(await roundOneOf(c, victim));
    const bareRoundOne: Call = (c, i) => roundOneOf(c, `/data/file-${i}.txt`);
    const whole: Call = (c, i) => twoRounds(c, i);
    const declinePending = async (): Promise<void> => {
      for (const state of pending.splice(0)) await decline(cli, victim, state);
    };
    // Warm-up.
    await rate(cli, cliRoundOne, 200, inFlight, 0);
    await declinePending();
    await rate(bare, bareRoundOne, 200, inFlight, 0);
    await rate(codec, whole, 200, inFlight, 0);
    await rate(confirmed, whole, 200, inFlight, 0);
    const r1 = { ours: [] as number[], bare: [] as number[], ratio: [] as number[] };
    const call = { ours: [] as number[], codec: [] as number[], ratio: [] as number[] };
    let n = 1000;
    for (let r = 0; r < runs; r++) {
      const first = r % 2 === 0;
      const a = first ? await rate(cli, cliRoundOne, calls, inFlight, n) : 0;
      const b = await rate(bare, bareRoundOne, calls, inFlight, n);
      const ours = first ? a : await rate(cli, cliRoundOne, calls, inFlight, n);
      await declinePending();
      r1.ours.push(ours);
      r1.bare.push(b);
      r1.ratio.push(ours / b);
      const c = first ? await rate(confirmed, whole, calls, inFlight, n) : 0;
      const d = await rate(codec, whole, calls, inFlight, n);
      const e = first ? c : await rate(confirmed, whole, calls, inFlight, n);
      call.ours.push(e);
      call.codec.push(d);
      call.ratio.push(d / e); // time per call, ours over the codec's
      n += calls;
    }
    await Promise.all([cli.close(), bare.close(), codec.close(), confirmed.close()]);
    const note = 'over HTTP on loopback, no token auth';
    return [
      {
        name: `round-1 tools/call, bare SDK createMcpHandler server (${note})`,
        value: median(r1.bare),
        unit: 'calls/s',
      },
      { name: `round-1 tools/call, mcp-confirm --http (${note})`, value: median(r1.ours), unit: 'calls/s' },
      { name: 'round-1 over http / bare SDK createMcpHandler', value: median(r1.ratio), unit: 'ratio', target: 0.8 },
      {
        name: `confirmed call (both rounds), SDK createRequestStateCodec over createMcpHandler (${note})`,
        value: median(call.codec),
        unit: 'calls/s',
      },
      {
        name: `confirmed call (both rounds), mcp-confirm over createHttpApp (${note})`,
        value: median(call.ours),
        unit: 'calls/s',
      },
      {
        name: 'confirmed call over http / SDK codec over http',
        value: median(call.ratio),
        unit: 'ratio',
        target: 1.0,
        targetKind: 'max',
      },
    ];
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    rmSync(dir, { recursive: true, force: true });
  }
}
