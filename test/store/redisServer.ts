/**
 * A throwaway redis-server owned by one test (started with scripts/start-redis.sh),
 * for the tests that kill, stop or restart the server.
 */
import { execFileSync } from 'node:child_process';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { PROCESS_DEADLINE_MS } from '../helpers/deadlines.js';

const SCRIPT = fileURLToPath(new URL('../../scripts/start-redis.sh', import.meta.url));

export interface OwnRedis {
  port: number;
  pid: number;
  url: string;
}

/** Starts a redis-server; on `port` when given (e.g. to restart one in the same place). */
export function startRedis(port?: number): OwnRedis {
  const out = execFileSync('bash', port === undefined ? [SCRIPT] : [SCRIPT, String(port)], {
    encoding: 'utf8',
    timeout: PROCESS_DEADLINE_MS,
  }).trim();
  const [p, pid] = out.split(/\s+/).map(Number);
  if (!Number.isInteger(p) || !Number.isInteger(pid)) throw new Error(`start-redis.sh printed ${JSON.stringify(out)}`);
  return { port: p!, pid: pid!, url: `redis://127.0.0.1:${p}` };
}

/** Sends `signal` to our own redis-server, ignoring "no such process". */
export function signalRedis(server: OwnRedis, signal: NodeJS.Signals): void {
  try {
    process.kill(server.pid, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

/** Resolves once nothing accepts connections on the port (the killed server is gone). */
export async function waitPortClosed(port: number, timeoutMs = PROCESS_DEADLINE_MS): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const s = connect({ host: '127.0.0.1', port });
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (!open) return;
    if (Date.now() > until) throw new Error(`port ${port} still open after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
