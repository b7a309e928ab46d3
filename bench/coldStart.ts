/**
 * Cold start: spawn to the first answer, as an MCP host sees it. Each run spawns
 * `mcp-confirm --root DIR` (the built CLI, memory ledger) and the bare SDK server with one tool
 * (bench/fixtures/bareServer.ts), in alternating order, writes one `initialize` request on stdin at
 * spawn, and times until the answer's line arrives on stdout. Medians of all runs and their ratio.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Figure } from './mrtr.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const BARE = fileURLToPath(new URL('./fixtures/bareServer.js', import.meta.url));
const MAIN = join(REPO, 'dist', 'cli', 'main.js');
const INITIALIZE = `${JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '0' } },
})}\n`;

/** Milliseconds from spawn to the first line on stdout, which must be the answer to request 1. */
function spawnToFirstAnswer(args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString('utf8');
      if (!out.includes('\n')) return;
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      child.kill();
      if (!/"id":1\b/.test(out) || !out.includes('"result"')) reject(new Error(`unexpected first answer: ${out.slice(0, 200)}`));
      else resolve(ms);
    });
    child.on('error', reject);
    child.stdin.on('error', () => {});
    child.stdin.write(INITIALIZE);
  });
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function benchColdStart(options: { runs?: number } = {}): Promise<Figure[]> {
  const runs = options.runs ?? 15;
  const root = mkdtempSync(join(tmpdir(), 'mcp-confirm-bench-cold-'));
  const servers = { ours: [MAIN, '--root', root], bare: [BARE] };
  const samples = { ours: [] as number[], bare: [] as number[] };
  try {
    await spawnToFirstAnswer(servers.ours); // warm the file cache for both
    await spawnToFirstAnswer(servers.bare);
    for (let r = 0; r < runs; r++) {
      const order = r % 2 === 0 ? (['ours', 'bare'] as const) : (['bare', 'ours'] as const);
      for (const name of order) samples[name].push(await spawnToFirstAnswer(servers[name]));
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  const ours = median(samples.ours);
  const bare = median(samples.bare);
  return [
    { name: 'cold start: bare SDK server with one tool, spawn to first answer', value: bare, unit: 'ms' },
    { name: 'cold start: mcp-confirm --root DIR, spawn to first answer', value: ours, unit: 'ms' },
    { name: 'cold start / bare SDK server', value: ours / bare, unit: 'ratio', target: 1.15, targetKind: 'max' },
  ];
}
