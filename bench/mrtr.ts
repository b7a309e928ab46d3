/**
 * Two-round MRTR calls through a real v2 Client over the in-memory transport,
 * side by side in one run: a bare SDK tool (no protection), a tool protected
 * only by the SDK's own createRequestStateCodec (HMAC), and the same tool
 * behind mcp-confirm (sealed, bound, spent once). Also seal+open per second.
 */
import { randomBytes } from 'node:crypto';
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import { McpServer, createRequestStateCodec, inputRequired, inputResponse, type CallToolResult } from '@modelcontextprotocol/server';
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
const SCHEMA = { type: 'object' as const, properties: { confirmed: { type: 'boolean' as const } }, required: ['confirmed'] };
const done = (path: string): CallToolResult => ({ content: [{ type: 'text', text: `deleted ${path}` }] });

function bareServer(): McpServer {
  const server = new McpServer({ name: 'bare', version: '0' });
  server.registerTool('delete_file', { inputSchema: Input }, async ({ path }, ctx) => {
    const a = inputResponse(ctx.mcpReq.inputResponses, 'confirm');
    if (ctx.mcpReq.requestState() !== undefined && a.kind === 'elicit' && a.action === 'accept') return done(path);
    return inputRequired({ inputRequests: { confirm: inputRequired.elicit({ message: `Permanently delete ${path}?`, requestedSchema: SCHEMA }) }, requestState: 'round-1' });
  });
  return server;
}

function codecServerFactory(): () => McpServer {
  const codec = createRequestStateCodec<{ path: string }>({ key: randomBytes(32), ttlSeconds: 300 });
  return () => {
    const server = new McpServer({ name: 'codec', version: '0' }, { requestState: { verify: codec.verify } });
    server.registerTool('delete_file', { inputSchema: Input }, async ({ path }, ctx) => {
      const a = inputResponse(ctx.mcpReq.inputResponses, 'confirm');
      if (ctx.mcpReq.requestState() !== undefined && a.kind === 'elicit' && a.action === 'accept') return done(path);
      return inputRequired({
        inputRequests: { confirm: inputRequired.elicit({ message: `Permanently delete ${path}?`, requestedSchema: SCHEMA }) },
        requestState: await codec.mint({ path }, ctx),
      });
    });
    return server;
  };
}

async function confirmedServerFactory(): Promise<() => McpServer> {
  const confirmation = await createConfirmation({ ledger: undefined });
  return () => {
    const server = new McpServer({ name: 'confirmed', version: '0' }, { ...confirmation.serverOptions });
    confirmation.register(server, 'delete_file', { inputSchema: Input }, {
      question: (args) => question`Permanently delete ${args.path}?`,
      act: (args) => done(args.path),
    });
    return server;
  };
}

async function connectTo(factory: () => McpServer): Promise<Client> {
  const [c, s] = InMemoryTransport.createLinkedPair();
  serveStdio(factory, { transport: s });
  const client = new Client(
    { name: 'bench', version: '0' },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } }, inputRequired: { autoFulfill: false } },
  );
  await client.connect(c);
  return client;
}

async function twoRounds(client: Client, i: number): Promise<void> {
  const args = { path: `/data/file-${i}.txt` };
  const r1 = (await client.request({ method: 'tools/call', params: { name: 'delete_file', arguments: args } } as never, { allowInputRequired: true } as never)) as {
    requestState?: string;
  };
  const r2 = (await client.request(
    {
      method: 'tools/call',
      params: { name: 'delete_file', arguments: args, inputResponses: { confirm: { action: 'accept', content: { confirmed: true } } }, requestState: r1.requestState },
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
 * Measures µs per two-round call for the three servers, interleaved (one batch of each per
 * run, several runs, median), and the ratios.
 */
export async function benchMrtr(options: { calls?: number; runs?: number } = {}): Promise<Figure[]> {
  const calls = options.calls ?? 1500;
  const runs = options.runs ?? 7;
  const clients = {
    bare: await connectTo(bareServer),
    codec: await connectTo(codecServerFactory()),
    confirmed: await connectTo(await confirmedServerFactory()),
  };
  const samples: Record<keyof typeof clients, number[]> = { bare: [], codec: [], confirmed: [] };
  let n = 0;
  for (const client of Object.values(clients)) for (let i = 0; i < 300; i++) await twoRounds(client, n++); // warm-up
  for (let r = 0; r < runs; r++) {
    for (const [name, client] of Object.entries(clients) as Array<[keyof typeof clients, Client]>) {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < calls; i++) await twoRounds(client, n++);
      samples[name].push(Number(process.hrtime.bigint() - t0) / 1000 / calls);
    }
  }
  await Promise.all(Object.values(clients).map((c) => c.close()));
  const bare = median(samples.bare);
  const codec = median(samples.codec);
  const confirmed = median(samples.confirmed);
  return [
    { name: 'two-round MRTR call, bare SDK (no protection)', value: bare, unit: 'µs/call' },
    { name: 'two-round MRTR call, SDK createRequestStateCodec', value: codec, unit: 'µs/call' },
    { name: 'two-round MRTR call, mcp-confirm', value: confirmed, unit: 'µs/call' },
    { name: 'confirmed call / bare SDK MRTR', value: confirmed / bare, unit: 'ratio' },
    { name: 'confirmed call / SDK codec MRTR', value: confirmed / codec, unit: 'ratio', target: 1.5, targetKind: 'max' },
  ];
}

/** Seal+open pairs per second under one key (compact JWE, dir + A256GCM, synchronously over node:crypto). */
export async function benchSeal(options: { pairs?: number; runs?: number } = {}): Promise<Figure[]> {
  const pairs = options.pairs ?? 20_000;
  const runs = options.runs ?? 5;
  const sealer = new Sealer({ keys: await KeyRing.random(), audience: 'bench', ttlSeconds: 300 });
  const input = { tool: 'delete_file', args: 'A'.repeat(43), question: 'B'.repeat(43), fingerprint: { path: '/data/x', size: '12' }, principal: 'local', nowMs: Date.now() };
  const rates: number[] = [];
  for (let r = 0; r < runs + 1; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < pairs; i++) {
      const { state } = sealer.sealSync(input);
      sealer.openSync(state, { principal: 'local', nowMs: input.nowMs });
    }
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    if (r > 0) rates.push(pairs / s);
  }
  return [{ name: 'seal+open', value: median(rates), unit: 'pairs/s', target: 50_000, targetKind: 'min' }];
}
