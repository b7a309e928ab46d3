/**
 * The proxy's added latency: `read_file` of `@modelcontextprotocol/server-filesystem` called
 * directly (the v2 Client, 2025 era, over stdio) and through `mcp-confirm proxy` (the same client
 * pinned 2026-07-28; read_file is read-only, so it passes with no question). Medians of rounds of
 * sequential calls, both measured in the same run.
 */
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { Figure } from './mrtr.js';

const CALLS = 200;
const ROUNDS = 5;
const PROXY_MAIN = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function perCallMs(client: Client, path: string): Promise<number> {
  const rounds: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = performance.now();
    for (let i = 0; i < CALLS; i++) await client.callTool({ name: 'read_file', arguments: { path } });
    rounds.push((performance.now() - t0) / CALLS);
  }
  return median(rounds);
}

export async function benchProxy(): Promise<Figure[]> {
  const fsServer = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-filesystem/dist/index.js');
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-bench-proxy-')));
  const file = join(root, 'notes.txt');
  writeFileSync(file, 'some notes\n'.repeat(20));
  const direct = new Client({ name: 'bench-direct', version: '0' });
  const proxied = new Client(
    { name: 'bench-proxied', version: '0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  try {
    await direct.connect(
      new StdioClientTransport({ command: process.execPath, args: [fsServer, root], stderr: 'ignore' }),
    );
    await proxied.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [PROXY_MAIN, 'proxy', '--', process.execPath, fsServer, root],
        stderr: 'ignore',
      }),
    );
    // Warm both paths once.
    await direct.callTool({ name: 'read_file', arguments: { path: file } });
    await proxied.callTool({ name: 'read_file', arguments: { path: file } });
    const directMs = await perCallMs(direct, file);
    const proxiedMs = await perCallMs(proxied, file);
    return [
      { name: 'proxy: read_file, upstream direct', value: directMs, unit: 'ms per call' },
      { name: 'proxy: passed-through read_file', value: proxiedMs, unit: 'ms per call' },
      { name: 'proxy: passed-through read_file / upstream direct', value: proxiedMs / directMs, unit: '× (ratio)' },
    ];
  } finally {
    await direct.close().catch(() => {});
    await proxied.close().catch(() => {});
    rmSync(root, { recursive: true, force: true });
  }
}
