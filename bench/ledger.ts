/**
 * Ledger throughput: issue+spend pairs per second through the {@link Ledger}
 * interface (each call awaited), and each ledger against a bare baseline measured
 * side by side in the same run, interleaved (median of the per-round ratios).
 *
 * - memory: one process, jtis made beforehand (token generation is not measured),
 *   a fresh ledger per run, against a bare `Map`; once more holding `maxTotal`
 *   tombstones (the steady state of a busy server).
 * - sqlite, 1 process: a fresh WAL file per run, pairs one after another, against
 *   the bare INSERT + DELETE … RETURNING through the same non-blocking retry.
 * - sqlite, 4 processes: 4 forked processes (this file, run by tsx) on one file,
 *   warmed up, then started together; the aggregate over the wall time of the
 *   slowest (median of 3 runs).
 * - redis: 64 concurrent issue→spend loops in one process on one connection
 *   (node-redis pipelines them), against a bare `SET NX PX` + `GETDEL` pair the same
 *   way; only when `redisUrl` is given.
 *
 * @module
 */
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { MemoryLedger } from '../src/store/memory.js';
import type { Ledger } from '../src/store/ledger.js';

/** One row of the bench table. */
export interface BenchFigure {
  name: string;
  value: number;
  unit: string;
  /** The figure the row should reach (same unit); absent when there is none. */
  target?: number;
}

const SELF = fileURLToPath(import.meta.url);
const REPO = fileURLToPath(new URL('../', import.meta.url));
const WORKER_ENV = 'MCP_CONFIRM_BENCH_LEDGER_WORKER';
const UNIT = 'pairs/s';
const TTL_MS = 60_000;

const wallMs = (): number => performance.timeOrigin + performance.now();

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/**
 * `pairs` issue+spend pairs one after another; returns pairs/s. Each pair reads the clock as a
 * server does (`nowMs` now, expiry `nowMs` + TTL), so expiries rise as they do in service.
 */
async function sequentialPairs(ledger: Ledger, jtis: readonly string[]): Promise<number> {
  const started = performance.now();
  for (const jti of jtis) {
    const now = Date.now();
    await ledger.issue(jti, 'bench', now + TTL_MS, now);
    if ((await ledger.spend(jti, now)) !== 'spent') throw new Error('bench spend did not spend');
  }
  return jtis.length / ((performance.now() - started) / 1000);
}

/** One measured run of one side: resolves with pairs/s. */
type Run = (run: number) => Promise<number>;

/** Medians of a ledger and its baseline measured side by side, and the median of their per-run ratios. */
interface SideBySide {
  ledger: number;
  bare: number;
  ratio: number;
}

/**
 * Runs a ledger and its bare baseline interleaved: one warm-up run of each, then `runs`
 * rounds of one run each, alternating which goes first, so both see the same machine
 * (load, CPU frequency, page cache). The ratio is the median of the per-round ratios
 * `ledger / bare`, which a load spike spanning one round moves less than a ratio of medians.
 */
async function sideBySide(ledger: Run, bare: Run, runs: number): Promise<SideBySide> {
  await bare(-1);
  await ledger(-1);
  const l: number[] = [];
  const b: number[] = [];
  const ratios: number[] = [];
  for (let run = 0; run < runs; run++) {
    let lr: number;
    let br: number;
    if (run % 2 === 0) {
      br = await bare(run);
      lr = await ledger(run);
    } else {
      lr = await ledger(run);
      br = await bare(run);
    }
    l.push(lr);
    b.push(br);
    ratios.push(lr / br);
  }
  return { ledger: median(l), bare: median(b), ratio: median(ratios) };
}

/** A fresh MemoryLedger, `pairs` pairs (fewer tombstones than its `maxTotal`). */
async function memoryFreshRun(pairs: number): Promise<number> {
  return sequentialPairs(
    new MemoryLedger(),
    Array.from({ length: pairs }, () => randomUUID()),
  );
}

/**
 * A bare `Map`: set, get, delete per pair, each step awaited as a caller of the
 * {@link Ledger} interface awaits (the same number of awaits per pair).
 */
async function baselineMapRun(pairs: number): Promise<number> {
  const jtis = Array.from({ length: pairs }, () => randomUUID());
  const map = new Map<string, number>();
  const now = Date.now();
  const started = performance.now();
  for (const jti of jtis) {
    await Promise.resolve(map.set(jti, now + TTL_MS));
    const e = map.get(jti);
    map.delete(jti);
    if (await Promise.resolve(e === undefined)) throw new Error('baseline lost an entry');
  }
  return jtis.length / ((performance.now() - started) / 1000);
}

/**
 * Steady state of a busy server: the ledger already holds `maxTotal` (100,000)
 * tombstones, so every spend also drops the oldest one. 20,000 pairs per run.
 */
async function benchMemorySteady(): Promise<number> {
  const ledger = new MemoryLedger();
  const now = Date.now();
  for (let i = 0; i < ledger.maxTotal; i++) {
    const jti = randomUUID();
    ledger.issueSync(jti, 'bench', now + TTL_MS, now);
    ledger.spendSync(jti, now);
  }
  const runs: number[] = [];
  for (let run = 0; run < 4; run++) {
    const rate = await sequentialPairs(
      ledger,
      Array.from({ length: 20_000 }, () => randomUUID()),
    );
    if (run > 0) runs.push(rate);
  }
  return median(runs);
}

/** A SqliteLedger on a fresh WAL file, `pairs` pairs one after another. */
async function sqliteRun(path: string, pairs: number): Promise<number> {
  const { SqliteLedger } = await import('../src/store/sqlite.js');
  const ledger = new SqliteLedger({ path });
  try {
    return await sequentialPairs(
      ledger,
      Array.from({ length: pairs }, () => randomUUID()),
    );
  } finally {
    await ledger.close();
  }
}

/**
 * The bare statements of an issue (INSERT) and a spend (DELETE … RETURNING) on a fresh WAL
 * file, run through the same non-blocking mechanism as the SQLite ledger (`busy_timeout` 0,
 * each statement through {@link BusyRetry}) and awaited, so the ratio measures the ledger's
 * own work (bounds, tombstones), not a different way of waiting.
 */
async function baselineSqliteRun(path: string, pairs: number): Promise<number> {
  const { default: Database } = await import('better-sqlite3');
  const { BusyRetry } = await import('../src/store/busyRetry.js');
  const retry = new BusyRetry(2_000);
  const db = new Database(path, { timeout: 0 });
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec('CREATE TABLE pending (id TEXT PRIMARY KEY, expires_at INTEGER NOT NULL) WITHOUT ROWID');
    const issue = db.prepare('INSERT INTO pending (id, expires_at) VALUES (?, ?) ON CONFLICT(id) DO NOTHING');
    const spend = db.prepare('DELETE FROM pending WHERE id = ? AND expires_at > ? RETURNING expires_at');
    const jtis = Array.from({ length: pairs }, () => randomUUID());
    const now = Date.now();
    const started = performance.now();
    for (const jti of jtis) {
      await retry.run(() => issue.run(jti, now + TTL_MS));
      if ((await retry.run(() => spend.get(jti, now))) === undefined) throw new Error('baseline spend found nothing');
    }
    return jtis.length / ((performance.now() - started) / 1000);
  } finally {
    db.close();
  }
}

interface WorkerResult {
  startMs: number;
  endMs: number;
  pairs: number;
}

/** Forks `processes` copies of this file on one SQLite file; resolves with the aggregate pairs/s. */
async function sqliteProcessesOnce(path: string, processes: number, pairsEach: number): Promise<number> {
  const children = Array.from({ length: processes }, () =>
    fork(SELF, [], {
      cwd: REPO,
      execArgv: ['--import', 'tsx'],
      env: { ...process.env, [WORKER_ENV]: 'sqlite' },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  );
  const message = (c: (typeof children)[number]): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const onExit = (code: number | null): void => reject(new Error(`bench worker exited with ${code}`));
      c.once('exit', onExit);
      c.once('message', (m) => {
        c.off('exit', onExit);
        resolve(m);
      });
    });
  try {
    const ready = children.map(message);
    for (const c of children) c.send({ type: 'open', path });
    await Promise.all(ready);
    const done = children.map(message);
    const startAtMs = wallMs() + 50;
    for (const c of children) c.send({ type: 'go', startAtMs, pairs: pairsEach });
    const results = (await Promise.all(done)) as Array<WorkerResult | { error: string }>;
    let end = 0;
    let total = 0;
    for (const r of results) {
      if ('error' in r) throw new Error(`bench worker failed: ${r.error}`);
      end = Math.max(end, r.endMs);
      total += r.pairs;
    }
    return total / ((end - startAtMs) / 1000);
  } finally {
    for (const c of children) if (c.connected) c.send({ type: 'exit' });
    await Promise.all(
      children.map((c) =>
        c.exitCode !== null ? undefined : new Promise<void>((resolve) => c.once('exit', () => resolve())),
      ),
    );
  }
}

async function benchSqliteProcesses(dir: string): Promise<number> {
  const runs: number[] = [];
  for (let run = 0; run < 3; run++) runs.push(await sqliteProcessesOnce(join(dir, `four-${run}.db`), 4, 10_000));
  return median(runs);
}

/** Redis concurrency of both sides: this many issue→spend loops on one connection (node-redis pipelines them). */
const REDIS_WORKERS = 64;

/** `REDIS_WORKERS` concurrent loops of `pairsEach` pairs; resolves with pairs/s. */
async function concurrentPairs(pairsEach: number, pair: () => Promise<void>): Promise<number> {
  const started = performance.now();
  await Promise.all(
    Array.from({ length: REDIS_WORKERS }, async () => {
      for (let i = 0; i < pairsEach; i++) await pair();
    }),
  );
  return (REDIS_WORKERS * pairsEach) / ((performance.now() - started) / 1000);
}

/**
 * Measures the ledgers.
 *
 * Each `ledger … / bare …` row is a ratio of pairs/s measured side by side in one run
 * (see {@link sideBySide}): the ledger against what the same machine does with no bounds,
 * tombstones or fail-closed checks, through the same interface shape (awaited calls).
 *
 * @param opts.redisUrl - `redis://HOST:PORT[/DB]` of a Redis to measure; without it the Redis rows are left out.
 *   The bench writes under fresh namespaces/prefixes; its keys expire within about 2 minutes.
 * @param opts.runs - interleaved rounds per side-by-side ratio (default 7).
 * The ratio rows (each ledger over its bare baseline) are measurements without a target: exact
 * per-principal and total bounds are what the stores promise, and the ledger's share of a confirmed
 * call is small next to a human's answer (docs/performance.md).
 *
 * @returns rows `{ name, value, unit, target }`.  Takes about 1–3 minutes on 2 cores.
 * @throws when a store fails (e.g. Redis unreachable: `ERR_CONFIRM_LEDGER_UNAVAILABLE`).
 */
export async function benchLedger(
  opts: { redisUrl?: string; runs?: number; only?: ReadonlyArray<'memory' | 'sqlite' | 'redis'> } = {},
): Promise<BenchFigure[]> {
  const runs = opts.runs ?? 7;
  const only = new Set(opts.only ?? ['memory', 'sqlite', 'redis']);
  const figures: BenchFigure[] = [];
  if (only.has('memory')) {
    const pairs = 50_000;
    const m = await sideBySide(
      () => memoryFreshRun(pairs),
      () => baselineMapRun(pairs),
      runs,
    );
    figures.push({ name: 'ledger: memory, issue+spend (fresh)', value: m.ledger, unit: UNIT, target: 1_000_000 });
    figures.push({ name: 'baseline: bare Map set+get+delete, awaited like the ledger', value: m.bare, unit: UNIT });
    figures.push({ name: 'ledger memory / bare Map', value: m.ratio, unit: 'ratio' });
    figures.push({
      name: 'ledger: memory, issue+spend (100,000 tombstones held)',
      value: await benchMemorySteady(),
      unit: UNIT,
      target: 1_000_000,
    });
  }
  if (only.has('sqlite')) {
    const dir = mkdtempSync(join(tmpdir(), 'mcp-confirm-bench-'));
    try {
      const pairs = 10_000;
      const s = await sideBySide(
        (run) => sqliteRun(join(dir, `ledger-${run + 1}.db`), pairs),
        (run) => baselineSqliteRun(join(dir, `bare-${run + 1}.db`), pairs),
        runs,
      );
      figures.push({ name: 'ledger: sqlite, 1 process, issue+spend', value: s.ledger, unit: UNIT, target: 20_000 });
      figures.push({
        name: 'baseline: bare SQLite INSERT + DELETE…RETURNING, 1 process (no bounds, no tombstones)',
        value: s.bare,
        unit: UNIT,
      });
      figures.push({ name: 'ledger sqlite / bare statements', value: s.ratio, unit: 'ratio' });
      figures.push({
        name: 'ledger: sqlite, 4 processes on one file (aggregate), issue+spend',
        value: await benchSqliteProcesses(dir),
        unit: UNIT,
        target: 20_000,
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  if (opts.redisUrl && only.has('redis')) {
    const { RedisLedger } = await import('../src/store/redis.js');
    const { createClient } = await import('redis');
    const ledger = await RedisLedger.open({ url: opts.redisUrl, namespace: `bench-${randomUUID()}` });
    const client = createClient({ url: opts.redisUrl, commandOptions: { timeout: 0 } });
    client.on('error', () => {});
    await client.connect();
    const prefix = `bench-bare-${randomUUID()}:`;
    const pairsEach = 300;
    try {
      const r = await sideBySide(
        () =>
          concurrentPairs(pairsEach, async () => {
            const jti = randomUUID();
            const now = Date.now();
            await ledger.issue(jti, 'bench', now + TTL_MS, now);
            if ((await ledger.spend(jti, now)) !== 'spent') throw new Error('bench spend did not spend');
          }),
        () =>
          concurrentPairs(pairsEach, async () => {
            const key = prefix + randomUUID();
            await client.set(key, 'o', { condition: 'NX', expiration: { type: 'PX', value: TTL_MS } });
            if ((await client.getDel(key)) === null) throw new Error('baseline GETDEL found nothing');
          }),
        runs,
      );
      figures.push({
        name: 'ledger: redis, 64 concurrent in 1 process, issue+spend',
        value: r.ledger,
        unit: UNIT,
        target: 100_000,
      });
      figures.push({
        name: 'baseline: bare Redis SET NX PX + GETDEL, 64 concurrent (no bounds, no tombstones)',
        value: r.bare,
        unit: UNIT,
      });
      figures.push({ name: 'ledger redis / bare SET NX PX + GETDEL', value: r.ratio, unit: 'ratio' });
    } finally {
      await ledger.close();
      await client.quit().catch(() => {});
    }
  }
  return figures;
}

/** Child side of the 4-process SQLite bench (this file forked with WORKER_ENV set). */
async function sqliteWorker(): Promise<void> {
  const { SqliteLedger } = await import('../src/store/sqlite.js');
  let ledger: InstanceType<typeof SqliteLedger> | undefined;
  process.on('message', (raw) => {
    const m = raw as
      { type: 'open'; path: string } | { type: 'go'; startAtMs: number; pairs: number } | { type: 'exit' };
    if (m.type === 'open') {
      try {
        // A long deadline: under a heavily loaded machine a worker can wait for the write lock longer than the
        // default 2 s, and a refused call would end the whole bench; this row measures throughput, not deadlines.
        const l = new SqliteLedger({ path: m.path, timeoutMs: 30_000 });
        ledger = l;
        // Warm up the JIT and the statements before the measured run.
        void sequentialPairs(
          l,
          Array.from({ length: 500 }, () => randomUUID()),
        ).then(
          () => process.send?.({ type: 'ready' }),
          (error: unknown) => process.send?.({ error: String(error) }),
        );
      } catch (error) {
        process.send?.({ error: String(error) });
      }
    } else if (m.type === 'go') {
      const l = ledger;
      const jtis = Array.from({ length: m.pairs }, () => randomUUID());
      void (async () => {
        if (l === undefined) throw new Error('go before open');
        while (wallMs() < m.startAtMs) {
          // spin: every process starts at the same instant
        }
        const startMs = wallMs();
        await sequentialPairs(l, jtis);
        process.send?.({ startMs, endMs: wallMs(), pairs: m.pairs } satisfies WorkerResult);
      })().catch((error: unknown) => process.send?.({ error: String(error) }));
    } else {
      void Promise.resolve(ledger?.close()).finally(() => process.exit(0));
    }
  });
  process.on('disconnect', () => process.exit(0));
}

if (process.env[WORKER_ENV] === 'sqlite' && process.send !== undefined) void sqliteWorker();
