/**
 * Real temporary trees for the `src/fs` tests: symlinks, FIFOs and sockets are
 * made for real, and a failure to make one fails the test (never skips it).
 */
import { execFileSync } from 'node:child_process';
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { isQuarantineName } from '../../src/fs/quarantine.js';

/** A fresh tree: `R/allowed` (the root), `R/outside/victim.txt`, with R canonical. */
export interface Sandbox {
  /** Canonical real path of the fresh temporary directory. */
  R: string;
  /** `R/allowed`, the root given to `Roots.open`. */
  allowed: string;
  /** `R/outside`, never a root. */
  outside: string;
  /** `R/outside/victim.txt`, content {@link VICTIM_CONTENT}. */
  victim: string;
  /** Removes the whole tree. */
  cleanup(): void;
}

export const VICTIM_CONTENT = 'victim: must survive\n';

/** Creates a {@link Sandbox}. */
export function makeSandbox(prefix = 'mcp-confirm-fs-'): Sandbox {
  const R = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  const allowed = join(R, 'allowed');
  const outside = join(R, 'outside');
  mkdirSync(allowed);
  mkdirSync(outside);
  const victim = join(outside, 'victim.txt');
  writeFileSync(victim, VICTIM_CONTENT);
  return { R, allowed, outside, victim, cleanup: () => rmSync(R, { recursive: true, force: true }) };
}

/** Writes `content` at `path`, creating parent directories. */
export function put(path: string, content: string): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, content);
}

/** Makes a real symlink and checks it is one (throws, failing the test, if not). */
export function symlink(target: string, path: string): void {
  symlinkSync(target, path);
  expect(lstatSync(path).isSymbolicLink()).toBe(true);
}

/** Makes a real FIFO with mkfifo(1) and checks it is one. */
export function mkfifo(path: string): void {
  execFileSync('mkfifo', [path]);
  expect(lstatSync(path).isFIFO()).toBe(true);
}

/** Makes a real listening unix socket at `path`; close the returned server when done. */
export async function mksocket(path: string): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => resolve());
  });
  expect(lstatSync(path).isSocket()).toBe(true);
  return server;
}

/** Awaits `promise` and checks it rejected with a `ConfirmError` of `code`. Returns the error. */
export async function rejectsWith(
  promise: Promise<unknown>,
  code: string,
): Promise<Error & { code: string; osCode?: string }> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  expect(caught, `expected a rejection with ${code}`).toBeInstanceOf(Error);
  expect((caught as { code?: unknown }).code).toBe(code);
  return caught as Error & { code: string; osCode?: string };
}

/** Quarantine-named entries directly inside `dir`. */
export function quarantinedIn(dir: string): string[] {
  return readdirSync(dir).filter(isQuarantineName);
}

/** `dev:ino` of `path` (lstat), to prove an entry is the very same one. */
export function identity(path: string): string {
  const st = lstatSync(path, { bigint: true });
  return `${st.dev}:${st.ino}`;
}

/** A Node system error with `code`, as the real calls throw them. */
export function osError(code: string, syscall: string, path: string): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(`${code}: injected, ${syscall} '${path}'`);
  error.code = code;
  error.syscall = syscall;
  error.path = path;
  return error;
}
