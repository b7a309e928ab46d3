/**
 * What the fixture upstreams (test/e2e/fixtures/upstream.mjs, httpUpstream.mjs) record: one JSON
 * line per destructive call in `DIR/calls.log`, so a test can tell whether the proxy forwarded.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The texts the fixture upstream writing in `dir` was called with, in order (none before the first call). */
export function upstreamCalls(dir: string): string[] {
  const file = join(dir, 'calls.log');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as string);
}
