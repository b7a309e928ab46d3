/**
 * Another process holding a SQLite file's write lock (`BEGIN IMMEDIATE`), for the
 * tests of a locked store: `const lock = await holdWriteLock(path); …; await lock.release()`.
 * Ordered by messages, not by time: `holdWriteLock` resolves once the child printed
 * "locked", `release` once it printed "released".
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const HOLDER = fileURLToPath(new URL('./fixtures/holdWriteLock.cjs', import.meta.url));

export interface WriteLock {
  /** Process id of the holder. */
  pid: number;
  /** Rolls back and closes in the holder; resolves once the lock is gone. Idempotent. */
  release(): Promise<void>;
}

/** Spawns a process that holds `path`'s write lock until {@link WriteLock.release}. */
export async function holdWriteLock(path: string): Promise<WriteLock> {
  const child = spawn(process.execPath, [HOLDER, path], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const lines: Array<() => void> = [];
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    for (const check of lines) check();
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const printed = (line: string): Promise<void> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        if (out.split('\n').includes(line)) resolve();
      };
      lines.push(check);
      check();
      void exited.then((code) => {
        if (!out.split('\n').includes(line))
          reject(new Error(`lock holder exited with ${code} before "${line}": ${err}`));
      });
    });
  await printed('locked');
  let releasing: Promise<void> | undefined;
  return {
    pid: child.pid!,
    release: () => {
      releasing ??= (async () => {
        child.stdin.end('release\n');
        await printed('released');
        await exited;
      })();
      return releasing;
    },
  };
}
