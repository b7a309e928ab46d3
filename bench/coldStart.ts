/**
 * Cold start: spawn to the first answer, as an MCP host sees it. Each round spawns
 * `mcp-confirm --root DIR` (the built CLI, memory ledger) and the bare SDK server with one tool
 * (bench/fixtures/bareServer.ts), in alternating order, writes one `initialize` request on stdin at
 * spawn, and times until the answer's line arrives on stdout; the next spawn waits until the process
 * before it has exited, so no sample shares the machine with the one before. The ms rows are the
 * medians of all rounds; the ratio row is the median of the per-round ratios (ours over bare, the two
 * spawned back to back), as the ledger rows do, so a change of the machine's load between rounds
 * cancels out.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
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

/**
 * Milliseconds from spawn to the first line on stdout, which must be the answer to request 1.
 * Resolves once the process has exited (it is killed at the answer).
 */
async function spawnToFirstAnswer(args: string[]): Promise<number> {
  const t0 = process.hrtime.bigint();
  const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'ignore'] });
  const exited = once(child, 'exit');
  const answered = new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString('utf8');
      if (!out.includes('\n')) return;
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      child.kill('SIGKILL');
      if (!/"id":1\b/.test(out) || !out.includes('"result"'))
        reject(new Error(`unexpected first answer: ${out.slice(0, 200)}`));
      else resolve(ms);
    });
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`exited (${code}) before answering: ${args.join(' ')}`)));
  });
  child.stdin.on('error', () => {});
  child.stdin.write(INITIALIZE);
  try {
    return await answered;
  } finally {
    child.kill('SIGKILL');
    await exited;
  }
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function benchColdStart(options: { runs?: number } = {}): Promise<Figure[]> {
  const runs = options.runs ?? 40;
  const root = mkdtempSync(join(tmpdir(), 'mcp-confirm-bench-cold-'));
  const servers = { ours: [MAIN, '--root', root], bare: [BARE] };
  const samples = { ours: [] as number[], bare: [] as number[] };
  const ratios: number[] = [];
  try {
    await spawnToFirstAnswer(servers.ours); // warm the file cache for both
    await spawnToFirstAnswer(servers.bare);
    for (let r = 0; r < runs; r++) {
      const order = r % 2 === 0 ? (['ours', 'bare'] as const) : (['bare', 'ours'] as const);
      for (const name of order) samples[name].push(await spawnToFirstAnswer(servers[name]));
      ratios.push(samples.ours[r]! / samples.bare[r]!);
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  return [
    {
      name: 'cold start: bare SDK server with one tool, spawn to first answer',
      value: median(samples.bare),
      unit: 'ms',
    },
    { name: 'cold start: mcp-confirm --root DIR, spawn to first answer', value: median(samples.ours), unit: 'ms' },
    { name: 'cold start / bare SDK server', value: median(ratios), unit: 'ratio', target: 1.15, targetKind: 'max' },
  ];
}
