/**
 * Running a child process to its end without blocking the test's event loop (no spawnSync), bounded
 * only by the generous {@link PROCESS_DEADLINE_MS}.
 */
import { spawn } from 'node:child_process';
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
 */
export function runProcess(command: string, args: readonly string[], options: { input?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], ...(options.env ? { env: options.env } : {}) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command} ${args.join(' ')} still running after ${PROCESS_DEADLINE_MS} ms; stdout ${JSON.stringify(stdout)}; stderr ${JSON.stringify(stderr)}`));
    }, PROCESS_DEADLINE_MS);
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
