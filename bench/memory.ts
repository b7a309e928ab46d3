/**
 * Memory that outstanding work holds, measured in a process of its own (`node --expose-gc`): V8's
 * heap in use plus external memory (`process.memoryUsage()`: `heapUsed + external`, which counts
 * the `ArrayBuffer`s) after a forced garbage collection, after minus before; the resident set
 * (RSS) beside it, which the allocator does not give back at once, so it is only indicative.
 *
 * - 10,000 outstanding confirmations in the memory ledger (`MemoryLedger`, default bounds): the
 *   `issue` each round 1 makes (a 16-byte `jti` in base64url, the principal's 22-character tag,
 *   an expiry), over 100 principals (100 each: one principal may hold 1,000 at most).
 * - Live 2025-era HTTP sessions: what `mcp-confirm --http` holds per session (its `McpServer` with
 *   the demo's `delete_file`, the SDK's sessionful transport, the session's entry and idle timer),
 *   built by `createHttpApp` as `--http` builds it, without token auth; each session opened with
 *   `initialize` (2025-11-25, elicitation declared) and `notifications/initialized`, sent to the
 *   app's `fetch` in this process (no sockets, no standing GET stream). The app allows 1,000
 *   sessions at most (the default bound; the 1,001st is answered 503), so the sessions are
 *   measured from 20 open (warm) to the bound and the figure scaled to 10,000.
 */
import { fork } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Figure } from './mrtr.js';

const SELF = fileURLToPath(import.meta.url);
const WORKER_ENV = 'MCP_CONFIRM_BENCH_MEMORY_WORKER';
const MiB = 1024 * 1024;
const OUTSTANDING = 10_000;
const SESSIONS_SCALED_TO = 10_000;

interface Sample {
  heapPlusExternal: number;
  rss: number;
}

async function sample(): Promise<Sample> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('bench/memory.ts: run with node --expose-gc');
  for (let i = 0; i < 4; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
  const m = process.memoryUsage();
  return { heapPlusExternal: m.heapUsed + m.external, rss: m.rss };
}

/** Bytes held by 10,000 outstanding confirmations in a fresh memory ledger. */
async function ledgerWorker(): Promise<{ held: number; rss: number }> {
  const { MemoryLedger } = await import('../src/store/memory.js');
  const ledger = new MemoryLedger();
  const principals = Array.from({ length: 100 }, () => randomBytes(16).toString('base64url'));
  const now = Date.now();
  // Warm-up: the code paths compiled and a first entry per principal, then spent.
  const warm = principals.map((p) => {
    const jti = randomBytes(16).toString('base64url');
    ledger.issueSync(jti, p, now + 300_000, now);
    return jti;
  });
  for (const jti of warm) await ledger.spend(jti, now);
  const jtis = Array.from({ length: OUTSTANDING }, () => randomBytes(16).toString('base64url'));
  const before = await sample();
  for (let i = 0; i < OUTSTANDING; i++) ledger.issueSync(jtis[i]!, principals[i % 100]!, now + 300_000, now);
  jtis.length = 0; // the ledger holds its own references
  const after = await sample();
  if (ledger.size !== OUTSTANDING) throw new Error(`bench: the ledger holds ${ledger.size}, not ${OUTSTANDING}`);
  return { held: after.heapPlusExternal - before.heapPlusExternal, rss: after.rss - before.rss };
}

type AppFetch = (request: Request) => Promise<Response>;

/**
 * Opens 2025-era sessions on `fetch` until one is refused or `limit` are open: 20 first (warm), then
 * the rest between two samples. Returns bytes per session measured and how many were measured.
 */
async function measureSessions(
  fetch: AppFetch,
  limit: number,
): Promise<{ perSession: number; rssPerSession: number; measured: number; open: number }> {
  const headers = {
    host: '127.0.0.1:8080',
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
  };
  const open = async (id: number): Promise<boolean> => {
    const init = await fetch(
      new Request('http://127.0.0.1:8080/mcp', {
        method: 'POST',
        headers,
        body: JSON.stringify({
          jsonrpc: '2.0',
          id,
          method: 'initialize',
          params: {
            protocolVersion: '2025-11-25',
            capabilities: { elicitation: {} },
            clientInfo: { name: 'bench', version: '0' },
          },
        }),
      }),
    );
    await init.text();
    const session = init.headers.get('mcp-session-id');
    if (init.status !== 200 || session === null) return false;
    const ack = await fetch(
      new Request('http://127.0.0.1:8080/mcp', {
        method: 'POST',
        headers: { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' },
        body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      }),
    );
    await ack.text();
    if (ack.status !== 202) throw new Error(`bench: notifications/initialized answered ${ack.status}`);
    return true;
  };
  const WARM = 20;
  let id = 0;
  for (; id < WARM; id++) if (!(await open(id))) throw new Error('bench: a warm-up session was refused');
  const before = await sample();
  while (id < limit && (await open(id))) id++;
  const after = await sample();
  const measured = id - WARM;
  return {
    perSession: (after.heapPlusExternal - before.heapPlusExternal) / measured,
    rssPerSession: (after.rss - before.rss) / measured,
    measured,
    open: id,
  };
}

/** Bytes per live 2025-era session of `createHttpApp` serving the demo server, up to its session bound. */
async function sessionsWorker(): Promise<SessionFigures> {
  const { createHttpApp } = await import('../src/http/app.js');
  const { createDemoServer } = await import('../src/demo/index.js');
  const dir = mkdtempSync(join(tmpdir(), 'mcp-confirm-bench-memory-'));
  try {
    const { factory } = await createDemoServer({ roots: [dir] });
    const app = createHttpApp({
      factory,
      resourceUrl: new URL('http://127.0.0.1:8080/mcp'),
      allowedHostnames: ['127.0.0.1'],
      principalOf: () => 'local',
    });
    const m = await measureSessions((r) => app.fetch(r), Number.MAX_SAFE_INTEGER);
    const bound = app.legacySessions;
    await app.close();
    return { ...m, bound };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The floor: the SDK's own sessionful wiring with nothing of ours, one `McpServer` with the bare
 * MRTR tool of `bench/mrtr.ts` and one `WebStandardStreamableHTTPServerTransport` per session in a
 * `Map`, as the SDK documents it (no bound, no idle timer, no principal), as many sessions as the
 * app above allowed.
 */
async function bareSessionsWorker(limit: number): Promise<SessionFigures> {
  const { WebStandardStreamableHTTPServerTransport } = await import('@modelcontextprotocol/server');
  const { bareServer } = await import('./mrtr.js');
  const sessions = new Map<string, InstanceType<typeof WebStandardStreamableHTTPServerTransport>>();
  const fetch: AppFetch = async (request) => {
    const id = request.headers.get('mcp-session-id');
    if (id !== null) {
      const t = sessions.get(id);
      return t ? t.handleRequest(request) : new Response(null, { status: 404 });
    }
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sid) => void sessions.set(sid, transport),
    });
    await bareServer().connect(transport);
    return transport.handleRequest(request);
  };
  const m = await measureSessions(fetch, limit);
  return { ...m, bound: limit };
}

interface SessionFigures {
  perSession: number;
  rssPerSession: number;
  measured: number;
  open: number;
  bound: number;
}

type WorkerKind = 'ledger' | 'sessions' | 'bare-sessions';

function runWorker<T>(kind: WorkerKind, arg = ''): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = fork(SELF, [arg], {
      execArgv: ['--expose-gc'],
      env: { ...process.env, [WORKER_ENV]: kind },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let result: T | undefined;
    child.once('message', (m) => (result = m as T));
    child.once('error', reject);
    child.once('exit', (code) =>
      result !== undefined ? resolve(result) : reject(new Error(`bench: memory worker ${kind} exited ${code}`)),
    );
  });
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

/**
 * The memory rows: each worker runs `runs` times (a fresh process each, the kinds alternating),
 * medians reported.
 *
 * @param options.runs - processes per figure. Defaults to 3.
 */
export async function benchMemory(options: { runs?: number } = {}): Promise<Figure[]> {
  const runs = options.runs ?? 3;
  const ledger: Array<{ held: number; rss: number }> = [];
  const ours: SessionFigures[] = [];
  const bare: SessionFigures[] = [];
  for (let r = 0; r < runs; r++) {
    ledger.push(await runWorker('ledger'));
    const o = await runWorker<SessionFigures>('sessions');
    ours.push(o);
    bare.push(await runWorker<SessionFigures>('bare-sessions', String(o.open)));
  }
  const s = ours[0]!;
  const how = `measured from 20 to ${s.open.toLocaleString('en-US')} open (the session bound: ${s.bound.toLocaleString('en-US')}) and scaled to ${SESSIONS_SCALED_TO.toLocaleString('en-US')}`;
  const per10k = (xs: SessionFigures[], k: 'perSession' | 'rssPerSession'): number =>
    (median(xs.map((x) => x[k])) * SESSIONS_SCALED_TO) / MiB;
  return [
    {
      name: 'memory: MiB per 10,000 outstanding confirmations',
      value: median(ledger.map((l) => l.held)) / MiB,
      unit: 'MiB (heap + external, after GC)',
      target: 2,
      targetKind: 'max',
    },
    {
      name: 'memory: RSS growth for the same 10,000 outstanding confirmations',
      value: median(ledger.map((l) => l.rss)) / MiB,
      unit: 'MiB (RSS)',
    },
    {
      name: `memory: MiB per 10,000 live 2025-era HTTP sessions, mcp-confirm --http's app with delete_file, no token auth (${how})`,
      value: per10k(ours, 'perSession'),
      unit: 'MiB (heap + external, after GC)',
    },
    {
      name: 'memory: RSS growth for the same sessions, scaled alike',
      value: per10k(ours, 'rssPerSession'),
      unit: 'MiB (RSS)',
    },
    {
      name: 'memory: the same for the bare SDK sessionful wiring (McpServer with one tool + WebStandardStreamableHTTPServerTransport per session; the floor of the row above)',
      value: per10k(bare, 'perSession'),
      unit: 'MiB (heap + external, after GC)',
    },
    {
      name: 'memory per session, mcp-confirm --http / bare SDK sessionful wiring',
      value: median(ours.map((o, i) => o.perSession / bare[i]!.perSession)),
      unit: 'ratio',
    },
  ];
}

const kind = process.env[WORKER_ENV];
if (kind === 'ledger' || kind === 'sessions' || kind === 'bare-sessions') {
  const result =
    kind === 'ledger'
      ? await ledgerWorker()
      : kind === 'sessions'
        ? await sessionsWorker()
        : await bareSessionsWorker(Number(process.argv[2]));
  process.send!(result, () => process.exit(0));
}
