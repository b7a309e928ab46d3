/**
 * Running a child process to its end without blocking the test's event loop (no spawnSync), bounded
 * only by the generous {@link PROCESS_DEADLINE_MS}.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { PROCESS_DEADLINE_MS } from './deadlines.js';

export interface Finished {
  /** The exit code, or null when the process ended by a signal. */
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `command args` with `input` on its stdin (then closed) and resolves when it has exited and its
 * output is read. Rejects when it cannot be started, or when it is still running after
 * {@link PROCESS_DEADLINE_MS} (it is then killed), naming the command and what it printed.
 *
 * @param options.deadlineMs - replaces {@link PROCESS_DEADLINE_MS} for a command that may take longer
 *   when it does its work, not when it hangs (an `npm install` fetching packages on a loaded machine).
 */
export function runProcess(
  command: string,
  args: readonly string[],
  options: { input?: string; env?: NodeJS.ProcessEnv; cwd?: string; deadlineMs?: number } = {},
): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(options.env ? { env: options.env } : {}),
      ...(options.cwd ? { cwd: options.cwd } : {}),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    const deadlineMs = options.deadlineMs ?? PROCESS_DEADLINE_MS;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `${command} ${args.join(' ')} still running after ${deadlineMs} ms; stdout ${JSON.stringify(stdout)}; stderr ${JSON.stringify(stderr)}`,
        ),
      );
    }, deadlineMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stdout, stderr });
    });
    child.stdin.on('error', () => {}); // a child that exits without reading its input
    child.stdin.end(options.input ?? '');
  });
}

/**
 * The SDK's own stdio client transport, probing `server/discover` in place. The base class probes
 * on a disposable sibling process (same command, stderr discarded) and then starts the real one,
 * so every connection starts the server twice; a subclass probes on the connection itself, so the
 * one process started is the one the test talks to and whose stderr it reads. Both are the SDK's
 * paths and our server answers the probe either way. Tests of the default path that hosts take
 * (test/e2e/cli.test.ts, the proxy tests) keep the base class; the process-heavy suites use this
 * one to start half the processes.
 */
export class InPlaceStdioTransport extends StdioClientTransport {}

/**
 * Resolves once `check` holds, checking again every 20 ms: for what arrives on its own pipe
 * (a child's stderr, after or before the answer on stdout). Proves order, not time: the test's
 * own timeout is the only deadline.
 */
export async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((r) => setTimeout(r, 20));
}

/**
 * Resolves once `stderr()` (what a child has written to its stderr so far) contains `text`. A
 * child's log line arrives on its own pipe, independently of its answer on stdout or over HTTP: a
 * line the child wrote before answering may still be unread when the answer is, and a line
 * written at exit may be unread when the `exit` event fires. So a test waits for the line it
 * expects instead of reading stderr right after an answer. By order, not time: rejects only after
 * the generous {@link PROCESS_DEADLINE_MS} (a hang), naming the text and what stderr holds.
 */
export async function stderrSays(stderr: () => string, text: string): Promise<void> {
  const until = Date.now() + PROCESS_DEADLINE_MS;
  while (!stderr().includes(text)) {
    if (Date.now() > until)
      throw new Error(
        `stderr never said ${JSON.stringify(text)} in ${PROCESS_DEADLINE_MS} ms: ${JSON.stringify(stderr())}`,
      );
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * The live processes whose command line contains `text` (e.g. a test's own temporary directory,
 * passed to every process it starts), read from Linux's /proc: zombies (ended, not yet reaped, as
 * under a container's PID 1 that reaps nothing) are not live. Throws where there is no /proc.
 */
export function liveProcessesMentioning(text: string): number[] {
  const live: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(name)) continue;
    let cmdline: string;
    let stat: string;
    try {
      cmdline = readFileSync(`/proc/${name}/cmdline`, 'utf8');
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // ended while we looked
    }
    if (!cmdline.split('\0').some((arg) => arg.includes(text))) continue;
    // The state follows the command name in parentheses (which may itself hold ") ").
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (state === 'Z' || state === 'X') continue;
    live.push(Number(name));
  }
  return live;
}
