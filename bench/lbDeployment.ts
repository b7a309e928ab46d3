/**
 * Two `mcp-confirm --http` replicas (the built CLI, `dist/cli/main.js`, as
 * subprocesses) sharing a key file and a Redis ledger behind a real HAProxy
 * running the configuration docs/deployment.md shows (`docs/haproxy.cfg`, unchanged; the
 * addresses are given through its environment variables). Used by
 * `test/e2e/loadBalancer.test.ts` and by the bench row "200 concurrent flows
 * through HAProxy". Loopback only: HAProxy listens on 127.0.0.2 (a loopback
 * address the replicas do not accept by default, so `--resource` must name it,
 * as a real balancer's public name must be).
 *
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (works from the sources and from `.bench-dist/`). */
export const REPO = ((): string => {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'mcp-confirm')
      return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error('cannot find the mcp-confirm repository above ' + fileURLToPath(import.meta.url));
    dir = up;
  }
})();

/** The HAProxy configuration docs/deployment.md shows. */
export const HAPROXY_CFG = join(REPO, 'docs/haproxy.cfg');
/** The built CLI. */
export const MAIN = join(REPO, 'dist/cli/main.js');
/** Where the balancer listens: a loopback address that is not one of the replicas' default allowed hosts. */
export const LB_HOST = '127.0.0.2';

/** The `haproxy` executable (PATH, then /usr/sbin); throws naming the Debian package when it is missing. */
export function haproxyPath(): string {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/local/sbin'];
  for (const d of dirs) {
    if (d && existsSync(join(d, 'haproxy'))) return join(d, 'haproxy');
  }
  throw new Error('haproxy is not installed: apt-get install haproxy (scripts/test.sh installs it)');
}

/** A port free on `host` right now (the caller binds it next). */
export function freePort(host: string): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, host, () => {
      const { port } = s.address() as { port: number };
      s.close(() => res(port));
    });
  });
}

/** A child process whose stderr is collected, with a wait for a text on it. */
export interface Proc {
  proc: ChildProcess;
  pid: number;
  stderr(): string;
  exited: Promise<number | null>;
  /** Resolves once stderr matches `pattern` (its match); rejects if the process exits first. */
  waitFor(pattern: RegExp): Promise<RegExpExecArray>;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
}

function track(proc: ChildProcess, what: string): Proc {
  let err = '';
  const waiters: Array<() => void> = [];
  proc.stderr!.setEncoding('utf8');
  proc.stderr!.on('data', (c: string) => {
    err += c;
    for (const w of waiters.splice(0)) w();
  });
  const exited = new Promise<number | null>((res) => proc.once('exit', (code) => res(code)));
  let ended = false;
  void exited.then(() => {
    ended = true;
    for (const w of waiters.splice(0)) w();
  });
  return {
    proc,
    pid: proc.pid!,
    stderr: () => err,
    exited,
    waitFor: (pattern) =>
      new Promise((res, rej) => {
        const check = (): void => {
          const m = pattern.exec(err);
          if (m) res(m);
          else if (ended) rej(new Error(`${what} exited before printing ${String(pattern)}:\n${err}`));
          else waiters.push(check);
        };
        check();
      }),
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
    },
  };
}

/** A replica: its HAProxy server name, its own URL, its process. */
export interface Replica extends Proc {
  /** `r1` or `r2`, the server names of docs/haproxy.cfg. */
  name: string;
  url: URL;
}

/** Options of {@link startDeployment}. */
export interface DeploymentOptions {
  /** The directory both replicas may delete in. */
  root: string;
  /** The shared key file. */
  keyFile: string;
  /** The shared Redis, `redis://127.0.0.1:PORT`. */
  redisUrl: string;
  /** A fresh audience per deployment (also the Redis key namespace). */
  audience: string;
  /** JWT auth flags for both replicas. */
  auth?: { issuer: string; jwksPath: string };
  /** Extra CLI arguments for every replica. */
  extraArgs?: string[];
  /** The CLI entry to run; defaults to {@link MAIN} (`dist/cli/main.js`). */
  main?: string;
}

/** The running deployment. */
export interface Deployment {
  /** The balancer's MCP endpoint, `http://127.0.0.2:PORT/mcp` (also every replica's `--resource`). */
  url: URL;
  replicas: Replica[];
  haproxy: Proc;
  stop(): Promise<void>;
}

async function startReplica(name: string, main: string, args: string[]): Promise<Replica> {
  if (!existsSync(main)) throw new Error(`${main} is missing: run npm run build first`);
  const p = track(spawn(process.execPath, [main, ...args], { stdio: ['ignore', 'ignore', 'pipe'] }), `replica ${name}`);
  const m = await p.waitFor(/ at (http:\/\/\S+\/mcp);/);
  return { ...p, name, url: new URL(m[1]!) };
}

/**
 * Starts two replicas on 127.0.0.1 (free ports) with `--resource` set to the
 * balancer's URL, then HAProxy with docs/haproxy.cfg, and waits until a
 * `GET /healthz` through the balancer answers 200.
 *
 * @throws when haproxy is missing, a replica or HAProxy exits during start-up (with its stderr).
 */
export async function startDeployment(o: DeploymentOptions): Promise<Deployment> {
  const haproxy = haproxyPath();
  const lbPort = await freePort(LB_HOST);
  const url = new URL(`http://${LB_HOST}:${lbPort}/mcp`);
  const args = [
    '--root',
    o.root,
    '--key-file',
    o.keyFile,
    '--ledger',
    o.redisUrl,
    '--audience',
    o.audience,
    '--http',
    '127.0.0.1:0',
    '--resource',
    url.href,
    ...(o.auth ? ['--auth-issuer', o.auth.issuer, '--auth-jwks', o.auth.jwksPath] : []),
    ...(o.extraArgs ?? []),
  ];
  const started: Proc[] = [];
  const stopAll = async (): Promise<void> => {
    await Promise.all(started.map((p) => p.stop()));
  };
  try {
    const replicas: Replica[] = [];
    for (const name of ['r1', 'r2']) {
      const r = await startReplica(name, o.main ?? MAIN, args);
      started.push(r);
      replicas.push(r);
    }
    const env = {
      ...process.env,
      MCP_LB_BIND: `${LB_HOST}:${lbPort}`,
      MCP_PUBLIC_HOST: url.host,
      MCP_REPLICA_1: replicas[0]!.url.host,
      MCP_REPLICA_2: replicas[1]!.url.host,
    };
    const lb = track(
      spawn(haproxy, ['-db', '-f', HAPROXY_CFG], { env, stdio: ['ignore', 'ignore', 'pipe'] }),
      'haproxy',
    );
    started.push(lb);
    await waitHealthy(url, lb);
    return { url, replicas, haproxy: lb, stop: stopAll };
  } catch (e) {
    await stopAll();
    throw e;
  }
}

/** Polls `GET /healthz` through the balancer until 200; fails if HAProxy exits. No deadline of its own (the caller's timeout applies). */
async function waitHealthy(url: URL, lb: Proc): Promise<void> {
  for (;;) {
    if (lb.proc.exitCode !== null) throw new Error(`haproxy exited with ${String(lb.proc.exitCode)}:\n${lb.stderr()}`);
    try {
      const r = await fetch(new URL('/healthz', url));
      if (r.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Resident set size of a process in KiB, from `/proc/PID/status` (`VmRSS`). */
export function rssKiB(pid: number): number {
  const m = /^VmRSS:\s+([0-9]+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(m[1]);
}
