/**
 * Two-round MRTR calls through a real v2 Client over the in-memory transport,
 * side by side in one run: a bare SDK tool (no protection), a tool protected
 * only by the SDK's own createRequestStateCodec (HMAC), and the same tool
 * behind mcp-confirm (sealed, bound, spent once). Also seal+open per second.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { Client, InMemoryTransport, ProtocolError } from '@modelcontextprotocol/client';
import {
  McpServer,
  createRequestStateCodec,
  inputRequired,
  inputResponse,
  type CallToolResult,
} from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';
import { createConfirmation } from '../src/guard/confirmation.js';
import { KeyRing } from '../src/state/keyRing.js';
import { Sealer } from '../src/state/sealer.js';
import { question } from '../src/prompt/render.js';

export interface Figure {
  name: string;
  value: number;
  unit: string;
  target?: number;
  /** 'max' when the figure must stay at or below its target. */
  targetKind?: 'min' | 'max';
  note?: string;
}

const Input = z.strictObject({ path: z.string() });
const SCHEMA = {
  type: 'object' as const,
  properties: { confirmed: { type: 'boolean' as const } },
  required: ['confirmed'],
};
const done = (path: string): CallToolResult => ({ content: [{ type: 'text', text: `deleted ${path}` }] });

export function bareServer(): McpServer {
  const server = new McpServer({ name: 'bare', version: '0' });
  server.registerTool('delete_file', { inputSchema: Input }, async ({ path }, ctx) => {
    const a = inputResponse(ctx.mcpReq.inputResponses, 'confirm');
    if (ctx.mcpReq.requestState() !== undefined && a.kind === 'elicit' && a.action === 'accept') return done(path);
    return inputRequired({
      inputRequests: {
        confirm: inputRequired.elicit({ message: `Permanently delete ${path}?`, requestedSchema: SCHEMA }),
      },
      requestState: 'round-1',
    });
  });
  return server;
}

export function codecServerFactory(): () => McpServer {
  const codec = createRequestStateCodec<{ path: string }>({ key: randomBytes(32), ttlSeconds: 300 });
  return () => {
    const server = new McpServer({ name: 'codec', version: '0' }, { requestState: { verify: codec.verify } });
    server.registerTool('delete_file', { inputSchema: Input }, async ({ path }, ctx) => {
      const a = inputResponse(ctx.mcpReq.inputResponses, 'confirm');
      if (ctx.mcpReq.requestState() !== undefined && a.kind === 'elicit' && a.action === 'accept') return done(path);
      return inputRequired({
        inputRequests: {
          confirm: inputRequired.elicit({ message: `Permanently delete ${path}?`, requestedSchema: SCHEMA }),
        },
        requestState: await codec.mint({ path }, ctx),
      });
    });
    return server;
  };
}

export async function confirmedServerFactory(): Promise<() => McpServer> {
  const confirmation = await createConfirmation({ store: undefined });
  return () => {
    const server = new McpServer({ name: 'confirmed', version: '0' }, { ...confirmation.serverOptions });
    confirmation.register(
      server,
      'delete_file',
      { inputSchema: Input },
      {
        question: (args) => question`Permanently delete ${args.path}?`,
        act: (args) => done(args.path),
      },
    );
    return server;
  };
}

export async function connectTo(factory: () => McpServer): Promise<Client> {
  const [c, s] = InMemoryTransport.createLinkedPair();
  serveStdio(factory, { transport: s });
  const client = new Client(
    { name: 'bench', version: '0' },
    {
      capabilities: { elicitation: { form: {} } },
      versionNegotiation: { mode: { pin: '2026-07-28' } },
      inputRequired: { autoFulfill: false },
    },
  );
  await client.connect(c);
  return client;
}

export async function twoRounds(client: Client, i: number): Promise<void> {
  const args = { path: `/data/file-${i}.txt` };
  const r1 = (await client.request(
    { method: 'tools/call', params: { name: 'delete_file', arguments: args } } as never,
    { allowInputRequired: true } as never,
  )) as {
    requestState?: string;
  };
  const r2 = (await client.request(
    {
      method: 'tools/call',
      params: {
        name: 'delete_file',
        arguments: args,
        inputResponses: { confirm: { action: 'accept', content: { confirmed: true } } },
        requestState: r1.requestState,
      },
    } as never,
    { allowInputRequired: true } as never,
  )) as CallToolResult;
  if (r2.isError || !r2.content) throw new Error('bench call failed');
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

/**
 * Measures µs per two-round call for the three servers, interleaved: each round runs one batch
 * of each server, the order rotating from round to round (so none always runs first or last),
 * over several rounds. The µs figures are medians over rounds; each ratio is the median of the
 * per-round ratios, which a load spike spanning one round moves less than a ratio of medians.
 */
export async function benchMrtr(options: { calls?: number; runs?: number } = {}): Promise<Figure[]> {
  const calls = options.calls ?? 1000;
  const runs = options.runs ?? 9;
  const clients = {
    bare: await connectTo(bareServer),
    codec: await connectTo(codecServerFactory()),
    confirmed: await connectTo(await confirmedServerFactory()),
  };
  const names = Object.keys(clients) as Array<keyof typeof clients>;
  const samples: Record<keyof typeof clients, number[]> = { bare: [], codec: [], confirmed: [] };
  const toBare: number[] = [];
  const toCodec: number[] = [];
  let n = 0;
  for (const client of Object.values(clients)) for (let i = 0; i < 300; i++) await twoRounds(client, n++); // warm-up
  for (let r = 0; r < runs; r++) {
    const round = {} as Record<keyof typeof clients, number>;
    for (let k = 0; k < names.length; k++) {
      const name = names[(r + k) % names.length]!;
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < calls; i++) await twoRounds(clients[name], n++);
      round[name] = Number(process.hrtime.bigint() - t0) / 1000 / calls;
      samples[name].push(round[name]);
    }
    toBare.push(round.confirmed / round.bare);
    toCodec.push(round.confirmed / round.codec);
  }
  await Promise.all(Object.values(clients).map((c) => c.close()));
  return [
    { name: 'two-round MRTR call, bare SDK (no protection)', value: median(samples.bare), unit: 'µs/call' },
    { name: 'two-round MRTR call, SDK createRequestStateCodec', value: median(samples.codec), unit: 'µs/call' },
    { name: 'two-round MRTR call, mcp-confirm', value: median(samples.confirmed), unit: 'µs/call' },
    { name: 'confirmed call / bare SDK MRTR', value: median(toBare), unit: 'ratio', target: 2.0, targetKind: 'max' },
    { name: 'confirmed call / SDK codec MRTR', value: median(toCodec), unit: 'ratio', target: 0.8, targetKind: 'max' },
  ];
}

/**
 * The same tool on an SDK server whose `requestState` verify hook refuses every state at once
 * (no decoding, no crypto): what the SDK's own refusal path (`-32602`, error objects on both
 * sides) costs, the floor any verify hook's garbage-flood ratio can reach.
 */
export function refusingServer(): McpServer {
  const server = new McpServer(
    { name: 'refusing', version: '0' },
    {
      requestState: {
        verify: async () => {
          throw new Error('refused');
        },
      },
    },
  );
  server.registerTool('delete_file', { inputSchema: Input }, async ({ path }) => done(path));
  return server;
}

/** One round-1 `tools/call` (no state, no answers); the server answers `input_required`. */
export async function roundOne(client: Client, i: number): Promise<string | undefined> {
  const r = (await client.request(
    { method: 'tools/call', params: { name: 'delete_file', arguments: { path: `/data/file-${i}.txt` } } } as never,
    { allowInputRequired: true } as never,
  )) as { resultType?: string; requestState?: string };
  if (r.resultType !== 'input_required') throw new Error('bench round 1 was not answered with input_required');
  return r.requestState;
}

/**
 * `count` tampered copies of a compact JWE `state`: each flips a different character of the
 * ciphertext segment (part 4), so every copy decodes to other bytes and fails its open (the
 * AES-GCM tag check), and none is the same string as another.
 */
export function tamperedCopies(state: string, count: number): string[] {
  const parts = state.split('.');
  const ct = parts[3] ?? '';
  if (parts.length !== 5 || ct.length < count)
    throw new Error('bench expected a compact JWE with a long enough ciphertext');
  return Array.from({ length: count }, (_, k) => {
    const i = Math.floor((k * ct.length) / count);
    const copy = [...parts];
    copy[3] = ct.slice(0, i) + (ct[i] === 'A' ? 'B' : 'A') + ct.slice(i + 1);
    return copy.join('.');
  });
}

/** One round-2 call carrying a tampered state; resolves once the server refused it with -32602. */
export async function tamperedRoundTwo(client: Client, i: number, state: string): Promise<void> {
  try {
    await client.request(
      {
        method: 'tools/call',
        params: {
          name: 'delete_file',
          arguments: { path: `/data/file-${i}.txt` },
          inputResponses: { confirm: { action: 'accept', content: { confirmed: true } } },
          requestState: state,
        },
      } as never,
      { allowInputRequired: true } as never,
    );
  } catch (error) {
    if (error instanceof ProtocolError && error.code === -32602) return;
    throw error;
  }
  throw new Error('bench: a tampered state was not refused');
}

/**
 * Garbage floods: round-2 calls carrying a tampered state, each refused with `-32602`
 * (one failed open each), per second through a real v2 Client (in-memory transport), against
 * the bare SDK server's round-1 `tools/call` of the same tool with no state, per second.
 * Beside them, the same tampered round 2 against {@link refusingServer} (a hook that refuses at
 * once): the SDK's own cost of a refusal. Interleaved: one batch of each per round, several
 * rounds; each ratio is the median of the per-round ratios.
 */
export async function benchGarbage(options: { calls?: number; runs?: number } = {}): Promise<Figure[]> {
  const calls = options.calls ?? 2000;
  const runs = options.runs ?? 7;
  const bare = await connectTo(bareServer);
  const confirmed = await connectTo(await confirmedServerFactory());
  const floor = await connectTo(refusingServer);
  const state = await roundOne(confirmed, 0);
  if (state === undefined) throw new Error('bench: round 1 of the confirmed server carried no requestState');
  const forged = tamperedCopies(state, 64);
  const batch = async (one: (i: number) => Promise<unknown>): Promise<number> => {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) await one(i);
    return calls / (Number(process.hrtime.bigint() - t0) / 1e9);
  };
  const bareCall = (i: number): Promise<unknown> => roundOne(bare, i);
  const garbageCall = (i: number): Promise<unknown> => tamperedRoundTwo(confirmed, i, forged[i % forged.length]!);
  const floorCall = (i: number): Promise<unknown> => tamperedRoundTwo(floor, i, forged[i % forged.length]!);
  for (let i = 0; i < 300; i++) {
    await bareCall(i);
    await garbageCall(i);
    await floorCall(i);
  } // warm-up
  const bareRates: number[] = [];
  const garbageRates: number[] = [];
  const floorRates: number[] = [];
  const ratios: number[] = [];
  const floorRatios: number[] = [];
  for (let r = 0; r < runs; r++) {
    const order = r % 2 === 0 ? (['bare', 'garbage', 'floor'] as const) : (['floor', 'garbage', 'bare'] as const);
    const rate: Record<(typeof order)[number], number> = { bare: 0, garbage: 0, floor: 0 };
    for (const side of order)
      rate[side] = await batch(side === 'bare' ? bareCall : side === 'garbage' ? garbageCall : floorCall);
    bareRates.push(rate.bare);
    garbageRates.push(rate.garbage);
    floorRates.push(rate.floor);
    ratios.push(rate.garbage / rate.bare);
    floorRatios.push(rate.floor / rate.bare);
  }
  await Promise.all([bare.close(), confirmed.close(), floor.close()]);
  return [
    { name: 'round-1 tools/call, bare SDK (no state)', value: median(bareRates), unit: 'calls/s' },
    { name: 'round-2 call with a tampered state, refused with -32602', value: median(garbageRates), unit: 'calls/s' },
    { name: 'tampered round 2 refused / bare round trip', value: median(ratios), unit: 'ratio', target: 0.8 },
    {
      name: "the same round 2, refused by a verify hook that opens nothing (the SDK's own refusal path)",
      value: median(floorRates),
      unit: 'calls/s',
    },
    {
      name: 'refused by a hook that opens nothing / bare round trip (the floor of the row above)',
      value: median(floorRatios),
      unit: 'ratio',
    },
  ];
}

/** Seal+open pairs per second under one key (compact JWE, dir + A256GCM, synchronously over node:crypto). */
export async function benchSeal(options: { pairs?: number; runs?: number } = {}): Promise<Figure[]> {
  const pairs = options.pairs ?? 20_000;
  const runs = options.runs ?? 7;
  const keys = await KeyRing.random();
  const sealer = new Sealer({ keys, audience: 'bench', ttlSeconds: 300 });
  const input = {
    tool: 'delete_file',
    args: 'A'.repeat(43),
    question: 'B'.repeat(43),
    fingerprint: { path: '/data/x', size: '12' },
    principal: 'local',
    nowMs: Date.now(),
  };
  const ours = (): number => {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < pairs; i++) {
      const { state } = sealer.sealSync(input);
      sealer.openSync(state, { principal: 'local', nowMs: input.nowMs });
    }
    return pairs / (Number(process.hrtime.bigint() - t0) / 1e9);
  };
  // The floor: what node:crypto itself costs for the same work, one AES-256-GCM seal and open of a
  // plaintext of the same length under the same header as AAD, each with the new cipher context
  // node:crypto requires; no claims, no base64url, no checks (a fixed IV: only the cipher is timed).
  const { claims, state } = sealer.sealSync(input);
  const plaintext = Buffer.from(JSON.stringify(claims), 'utf8');
  const aad = Buffer.from(state.slice(0, state.indexOf('.')), 'ascii');
  const key = keys.sealing.secretKey;
  const iv = randomBytes(12);
  const floor = (): number => {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < pairs; i++) {
      const c = createCipheriv('aes-256-gcm', key, iv, { authTagLength: 16 });
      c.setAAD(aad);
      const ct = c.update(plaintext);
      c.final();
      const tag = c.getAuthTag();
      const d = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: 16 });
      d.setAAD(aad);
      d.setAuthTag(tag);
      d.update(ct);
      d.final();
    }
    return pairs / (Number(process.hrtime.bigint() - t0) / 1e9);
  };
  ours();
  floor(); // warm-up
  const rates: number[] = [];
  const floors: number[] = [];
  const ratios: number[] = [];
  for (let r = 0; r < runs; r++) {
    const [a, b] = r % 2 === 0 ? [ours(), floor()] : ([floor(), ours()].reverse() as [number, number]);
    rates.push(a);
    floors.push(b);
    ratios.push(a / b);
  }
  return [
    { name: 'seal+open', value: median(rates), unit: 'pairs/s', target: 50_000, targetKind: 'min' },
    {
      name: 'node:crypto alone: AES-256-GCM seal + open of the same bytes, a new cipher context each (the floor of the row above)',
      value: median(floors),
      unit: 'pairs/s',
    },
    { name: 'seal+open / its node:crypto floor', value: median(ratios), unit: 'ratio' },
  ];
}
