/**
 * `npm run bench`: this machine's figures as a markdown table (medians of several
 * runs), each against its target where it has one. A figure below its target is
 * reported as such. Runs compiled (tsconfig.bench.json), as the published package runs.
 *
 * Cold start spawns the built CLI (dist/cli/main.js): run `npm run build` first.
 *
 * `npm run bench -- --only seal,mrtr` runs only the named groups (ledger, seal, mrtr, garbage, http, memory, prompt, cold, lb, proxy, grants);
 * `ledger-redis` runs only the Redis part of `ledger` (same rows). `http` spawns `mcp-confirm --http`
 * from `.bench-dist/` and SDK servers (bench/fixtures/httpServer.ts) on loopback, without token auth;
 * `memory` measures in processes of its own, started with `--expose-gc`.
 *
 * Redis: uses REDIS_URL when set; otherwise starts a throwaway redis-server with
 * scripts/start-redis.sh when one is installed, and stops it at the end.
 */
import { execFileSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { benchColdStart } from './coldStart.js';
import { benchLedger } from './ledger.js';
import { benchLoadBalancer } from './loadBalancer.js';
import { haproxyPath } from './lbDeployment.js';
import { benchGarbage, benchMrtr, benchSeal } from './mrtr.js';
import { benchPrompt } from './prompt.js';
import { benchProxy } from './proxy.js';
import { benchGrants } from './grants.js';
import { benchHttp } from './http.js';
import { benchMemory } from './memory.js';

interface Row {
  name: string;
  value: number | string;
  unit: string;
  target?: number;
  targetKind?: 'min' | 'max';
}

const REPO = fileURLToPath(new URL('../../', import.meta.url));

function startRedis(): { url: string; stop: () => void } | undefined {
  if (process.env.REDIS_URL) return { url: process.env.REDIS_URL, stop: () => {} };
  try {
    const [port, pid] = execFileSync('bash', ['scripts/start-redis.sh'], { cwd: REPO, encoding: 'utf8' })
      .trim()
      .split(/\s+/);
    return { url: `redis://127.0.0.1:${port}`, stop: () => process.kill(Number(pid)) };
  } catch {
    return undefined;
  }
}

function format(value: number | string): string {
  if (typeof value === 'string') return value;
  if (value >= 1000) return Math.round(value).toLocaleString('en-US');
  if (value >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

function verdict(row: Row): string {
  if (row.target === undefined) return '';
  const v = Number(row.value);
  const met = row.targetKind === 'max' ? v <= row.target : v >= row.target;
  const target = `${row.targetKind === 'max' ? '≤' : '≥'} ${format(row.target)}`;
  return `${target} ${met ? '(met)' : '(**below target**)'}`;
}

/** 200 concurrent flows through HAProxy and two --http replicas (needs haproxy and Redis). */
async function loadBalancerRows(): Promise<Row[]> {
  const name = 'HAProxy + 2 replicas, 200 concurrent flows';
  try {
    haproxyPath();
  } catch {
    return [{ name, value: 'not measured (no haproxy)', unit: '' }];
  }
  if (!redis) return [{ name, value: 'not measured (no redis-server)', unit: '' }];
  return benchLoadBalancer({ redisUrl: redis.url });
}

/** Groups to run: all, or those named after `--only` (comma-separated: ledger, seal, mrtr, garbage, http, memory, prompt, cold, lb, proxy, grants). */
const GROUPS = [
  'ledger',
  'ledger-redis',
  'seal',
  'mrtr',
  'garbage',
  'http',
  'memory',
  'prompt',
  'cold',
  'lb',
  'proxy',
  'grants',
] as const;
const { values: cli } = parseArgs({ options: { only: { type: 'string' } } });
const only = cli.only === undefined ? new Set<string>(GROUPS) : new Set(cli.only.split(','));
for (const g of only) {
  if (!(GROUPS as readonly string[]).includes(g)) {
    process.stderr.write(`bench: --only: unknown group ${JSON.stringify(g)} (one of ${GROUPS.join(', ')})\n`);
    process.exit(2);
  }
}

const redis = only.has('ledger') || only.has('ledger-redis') || only.has('lb') ? startRedis() : undefined;
const rows: Row[] = [];
try {
  if (only.has('ledger') || only.has('ledger-redis')) {
    const parts = only.has('ledger') ? undefined : (['redis'] as const);
    rows.push(...(await benchLedger({ ...(redis ? { redisUrl: redis.url } : {}), ...(parts ? { only: parts } : {}) })));
    if (!redis) rows.push({ name: 'ledger: redis', value: 'not measured (no redis-server)', unit: '' });
  }
  if (only.has('seal')) rows.push(...(await benchSeal()));
  if (only.has('mrtr')) rows.push(...(await benchMrtr()));
  if (only.has('garbage')) rows.push(...(await benchGarbage()));
  if (only.has('http')) rows.push(...(await benchHttp()));
  if (only.has('memory')) rows.push(...(await benchMemory()));
  if (only.has('prompt')) rows.push(...(await benchPrompt()));
  if (only.has('cold')) rows.push(...(await benchColdStart()));
  if (only.has('lb')) rows.push(...(await loadBalancerRows()));
  if (only.has('proxy')) rows.push(...(await benchProxy()));
  if (only.has('grants')) rows.push(...(await benchGrants()));
} finally {
  redis?.stop();
}

const lines = [
  `Measured ${new Date().toISOString().slice(0, 10)} on Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, load average ${loadavg()[0]!.toFixed(2)}.`,
  '',
  '| figure | value | unit | target |',
  '|---|---:|---|---|',
  ...rows.map((r) => `| ${r.name} | ${format(r.value)} | ${r.unit} | ${verdict(r)} |`),
];
process.stdout.write(`${lines.join('\n')}\n`);
