/**
 * What the proxy suites over stdio share (test/e2e/proxyGrants.test.ts, proxyRealServers.test.ts,
 * proxyHttp.test.ts): a temporary root for the suite, `mcp-confirm proxy ARGS…` spawned by the
 * SDK's base stdio transport (which probes `server/discover` on a throwaway sibling first, as hosts
 * do) with a v2 client pinned to 2026-07-28 that answers no round itself, the proxy run to its exit
 * with stdin closed, and a result's text.
 */
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll } from 'vitest';
import { callTool, MANUAL_CLIENT_OPTIONS, type Reply } from './harness.js';
import { MAIN } from './httpServer.js';
import { runProcess, type Finished } from './processes.js';

/** What to close after all: each suite's own list, closed by {@link useProxyRoot}'s `afterAll`. */
export type Closers = Array<() => Promise<unknown>>;

/**
 * Registers the suite's `beforeAll` (the built CLI must exist; a fresh real-path temporary
 * directory `mcp-confirm-PREFIX-…`) and `afterAll` (every closer in `closers`, then the directory
 * removed). Returns the directory, known once `beforeAll` has run.
 */
export function useProxyRoot(prefix: string, closers: Closers): () => string {
  let root: string | undefined;
  beforeAll(() => {
    if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
    root = realpathSync(mkdtempSync(join(tmpdir(), `mcp-confirm-${prefix}-`)));
  });
  afterAll(async () => {
    await Promise.all(closers.splice(0).map((c) => c().catch(() => {})));
    if (root !== undefined) rmSync(root, { recursive: true, force: true });
  });
  return () => {
    if (root === undefined) throw new Error('the proxy root is made in beforeAll');
    return root;
  };
}

/** A proxy over stdio with its client: what it wrote to stderr so far, and tool calls by hand. */
export interface StdioProxy {
  client: Client;
  transport: StdioClientTransport;
  stderr: () => string;
  call: (name: string, args: unknown, extra?: object) => Promise<Reply>;
}

/**
 * Spawns `mcp-confirm proxy ARGS…` (the args as given: with or without `--`) through the SDK's base
 * stdio transport and connects a v2 client named `name` (closed by `closers`).
 *
 * @param options.clientOptions - the client's options; defaults to {@link MANUAL_CLIENT_OPTIONS}.
 * @param options.env - the proxy's whole environment; by default the SDK's few inherited variables.
 */
export async function startStdioProxy(
  args: readonly string[],
  options: {
    name: string;
    closers: Closers;
    clientOptions?: ConstructorParameters<typeof Client>[1];
    env?: Record<string, string>;
  },
): Promise<StdioProxy> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MAIN, 'proxy', ...args],
    ...(options.env === undefined ? {} : { env: options.env }),
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  const client = new Client({ name: options.name, version: '0.0.0' }, options.clientOptions ?? MANUAL_CLIENT_OPTIONS);
  await client.connect(transport);
  options.closers.push(() => client.close());
  return {
    client,
    transport,
    stderr: () => err,
    call: (name, a, extra = {}) => callTool(client, { name, arguments: a, ...extra }),
  };
}

/** Runs `mcp-confirm proxy ARGS…` with stdin closed at once, to its exit. */
export function runProxy(args: readonly string[]): Promise<Finished> {
  return runProcess(process.execPath, [MAIN, 'proxy', ...args], { input: '' });
}

/** A result's text; throws, showing the reply, when it is not a result. */
export function resultText(reply: Reply): string {
  if (reply.kind !== 'result') throw new Error(`expected a result, got ${JSON.stringify(reply).slice(0, 600)}`);
  return reply.text;
}
