/**
 * The proxy's cost on the calls it passes. Eight paths, each a real v2 `Client` over stdio, each
 * calling a read-only tool that the proxy passes with no question:
 * - `read_file` of `@modelcontextprotocol/server-filesystem` (2025 era, built on the v1 `McpServer`,
 *   which announces tool-list changes) called directly (the client in the 2025 era), through
 *   `mcp-confirm proxy` (the list kept until a notice) and through a bare SDK relay
 *   (`fixtures/bareRelay.ts`: a client to the upstream and a server to the caller, nothing else),
 *   the floor of any proxy (one more process hop);
 * - `read_file` of an upstream that announces no tool-list changes (`fixtures/listChangedUpstream.ts
 *   FILE --quiet`) through `mcp-confirm proxy` (default: the list read before each decision), through
 *   `mcp-confirm proxy --list-max-age 300` and through the bare relay;
 * - `read_note` of an upstream that announces tool-list changes (`fixtures/listChangedUpstream.ts`)
 *   through `mcp-confirm proxy` (the list kept until a notice) and through the bare relay.
 * The proxied and relayed clients are pinned to 2026-07-28. Each round makes CALLS calls on every
 * path, interleaved (one call on each path in turn, the order rotated every call), each call timed
 * alone, so every path sees the same machine load; a path's figure for the round is the median of
 * its calls. The ms rows are medians over the rounds, the ratio rows medians of the per-round ratios.
 */
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { Figure } from './mrtr.js';

const CALLS = 150;
const ROUNDS = 9;
/** `--list-max-age` of the aged path: longer than the whole run. */
const LIST_MAX_AGE = '300';
const PROXY_MAIN = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
const BARE_RELAY = fileURLToPath(new URL('./fixtures/bareRelay.js', import.meta.url));
const LIST_CHANGED_UPSTREAM = fileURLToPath(new URL('./fixtures/listChangedUpstream.js', import.meta.url));

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** One client path: its spawned command and the call it repeats. */
interface Path {
  readonly key: 'direct' | 'proxied' | 'relayFs' | 'quietProxied' | 'aged' | 'relayQuiet' | 'notes' | 'relayNotes';
  readonly args: string[];
  readonly modern: boolean;
  readonly tool: string;
  readonly arguments: Record<string, unknown>;
  client?: Client;
}

/** One call on `path`, timed, in ms. */
async function timedCall(path: Path): Promise<number> {
  const t0 = performance.now();
  await path.client!.callTool({ name: path.tool, arguments: path.arguments });
  return performance.now() - t0;
}

export async function benchProxy(): Promise<Figure[]> {
  const fsServer = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-filesystem/dist/index.js');
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-bench-proxy-')));
  const file = join(root, 'notes.txt');
  writeFileSync(file, 'some notes\n'.repeat(20));
  const node = process.execPath;
  const fs = [node, fsServer, root];
  const notes = [node, LIST_CHANGED_UPSTREAM, file];
  const quiet = [node, LIST_CHANGED_UPSTREAM, file, '--quiet'];
  const readFile = { tool: 'read_file', arguments: { path: file } };
  const readQuiet = { tool: 'read_file', arguments: {} };
  const readNote = { tool: 'read_note', arguments: {} };
  const paths: Path[] = [
    { key: 'direct', args: [fsServer, root], modern: false, ...readFile },
    { key: 'proxied', args: [PROXY_MAIN, 'proxy', '--', ...fs], modern: true, ...readFile },
    { key: 'relayFs', args: [BARE_RELAY, ...fs], modern: true, ...readFile },
    { key: 'quietProxied', args: [PROXY_MAIN, 'proxy', '--', ...quiet], modern: true, ...readQuiet },
    {
      key: 'aged',
      args: [PROXY_MAIN, 'proxy', '--list-max-age', LIST_MAX_AGE, '--', ...quiet],
      modern: true,
      ...readQuiet,
    },
    { key: 'relayQuiet', args: [BARE_RELAY, ...quiet], modern: true, ...readQuiet },
    { key: 'notes', args: [PROXY_MAIN, 'proxy', '--', ...notes], modern: true, ...readNote },
    { key: 'relayNotes', args: [BARE_RELAY, ...notes], modern: true, ...readNote },
  ];
  try {
    for (const p of paths) {
      p.client = new Client(
        { name: `bench-${p.key}`, version: '0' },
        p.modern ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {},
      );
      await p.client.connect(new StdioClientTransport({ command: node, args: p.args, stderr: 'ignore' }));
      // Warm each path.
      for (let i = 0; i < 20; i++) await p.client.callTool({ name: p.tool, arguments: p.arguments });
    }
    const ms = new Map<Path['key'], number[]>(paths.map((p) => [p.key, []]));
    const ratios = {
      direct: [] as number[],
      fsRelay: [] as number[],
      relay: [] as number[],
      aged: [] as number[],
      notes: [] as number[],
    };
    for (let r = 0; r < ROUNDS; r++) {
      const calls = new Map<Path['key'], number[]>(paths.map((p) => [p.key, []]));
      for (let c = 0; c < CALLS; c++) {
        for (let i = 0; i < paths.length; i++) {
          const p = paths[(i + c) % paths.length]!;
          calls.get(p.key)!.push(await timedCall(p));
        }
      }
      const round = new Map<Path['key'], number>(paths.map((p) => [p.key, median(calls.get(p.key)!)]));
      for (const [k, v] of round) ms.get(k)!.push(v);
      const at = (k: Path['key']) => round.get(k)!;
      ratios.direct.push(at('proxied') / at('direct'));
      ratios.fsRelay.push(at('proxied') / at('relayFs'));
      ratios.relay.push(at('quietProxied') / at('relayQuiet'));
      ratios.aged.push(at('aged') / at('relayQuiet'));
      ratios.notes.push(at('notes') / at('relayNotes'));
    }
    const m = (k: Path['key']) => median(ms.get(k)!);
    const perCall = 'ms per call (median)';
    const ratio = '× (ratio)';
    return [
      { name: 'proxy: read_file, upstream direct', value: m('direct'), unit: perCall },
      { name: 'proxy: passed-through read_file', value: m('proxied'), unit: perCall },
      { name: 'proxy: passed-through read_file / upstream direct', value: median(ratios.direct), unit: ratio },
      { name: 'proxy: read_file through a bare SDK relay (the floor)', value: m('relayFs'), unit: perCall },
      {
        name: 'proxy: passed-through read_file / bare SDK relay (server-filesystem, which announces list changes)',
        value: median(ratios.fsRelay),
        unit: ratio,
      },
      {
        name: 'proxy: read_file through a bare SDK relay, upstream announces no list changes',
        value: m('relayQuiet'),
        unit: perCall,
      },
      {
        name: 'proxy: passed-through read_file, default (a list per decision)',
        value: m('quietProxied'),
        unit: perCall,
      },
      {
        name: 'proxy: passed-through read_file / bare SDK relay, default',
        value: median(ratios.relay),
        unit: ratio,
      },
      { name: `proxy: passed-through read_file, --list-max-age ${LIST_MAX_AGE}`, value: m('aged'), unit: perCall },
      {
        name: 'proxy: passed-through read_file / bare SDK relay, --list-max-age',
        value: median(ratios.aged),
        unit: ratio,
        target: 1.15,
        targetKind: 'max',
      },
      {
        name: 'proxy: call through a bare SDK relay, upstream announces list changes',
        value: m('relayNotes'),
        unit: perCall,
      },
      { name: 'proxy: passed-through call, upstream announces list changes', value: m('notes'), unit: perCall },
      {
        name: 'proxy: passed-through call / bare SDK relay, upstream announces list changes',
        value: median(ratios.notes),
        unit: ratio,
        target: 1.15,
        targetKind: 'max',
      },
    ];
  } finally {
    for (const p of paths) await p.client?.close().catch(() => {});
    rmSync(root, { recursive: true, force: true });
  }
}
