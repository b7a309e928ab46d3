/**
 * The fs-4 flipper (test/fixtures/flipper.cjs) as a child process the race tests watch and stop:
 * it flips `DIR/data.txt` between a regular file and a symbolic link to a victim outside the root
 * until the test has seen what it needs and says stop. Nothing here stops on time: the test's own
 * bound is a count of attempts, and the test's timeout only catches a hang.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';

const FLIPPER = resolve(import.meta.dirname, '../fixtures/flipper.cjs');

/** What the flipper has done so far (from its last progress line). */
export interface FlipProgress {
  /** Changes of what the name holds (file -> symlink or symlink -> file). */
  flips: number;
  /** Fresh data files it made after a confirmed delete removed the last one. */
  recreated: number;
}

/** Its last line, once it has ended. */
export interface FlipReport extends FlipProgress {
  /** `stop file` (the test said stop), `max flips` (its bound on work), `orphaned` (its parent went). */
  stopped: string;
  status: number | null;
  stderr: string;
}

export interface Flipper {
  child: ChildProcess;
  /** Progress so far, as the flipper last reported it. */
  progress(): FlipProgress;
  /** Tells it to stop (creates the stop file) and resolves with its report once it has ended. */
  stop(): Promise<FlipReport>;
}

/**
 * Starts the flipper on `dir/data.txt` → `victim`. `stopFile` (a path outside every root, not yet
 * existing) is created by {@link Flipper.stop}. `maxFlips` only ends a run nobody stops.
 */
export function startFlipper(dir: string, victim: string, stopFile: string, maxFlips = 10_000_000): Flipper {
  const child = spawn(process.execPath, [FLIPPER, dir, victim, stopFile, String(maxFlips)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  let last: FlipProgress & { stopped?: string } = { flips: 0, recreated: 0 };
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString('utf8');
    const lines = out.split('\n');
    out = lines.pop()!;
    for (const line of lines) if (line) last = JSON.parse(line) as typeof last;
  });
  child.stderr!.on('data', (d: Buffer) => (err += d.toString('utf8')));
  const closed = new Promise<number | null>((res) => child.on('close', (status) => res(status)));
  return {
    child,
    progress: () => ({ flips: last.flips, recreated: last.recreated }),
    stop: async () => {
      writeFileSync(stopFile, '');
      const status = await closed;
      return {
        flips: last.flips,
        recreated: last.recreated,
        stopped: last.stopped ?? '(no last line)',
        status,
        stderr: err,
      };
    },
  };
}
