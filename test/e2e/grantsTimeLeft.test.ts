/**
 * The time left a grant's replies state (a real v2 client against `delete_file`, the confirmation
 * layer's clock set by the test): right after a grant offered "for 15 minutes" they say 15 minutes,
 * not 14; the figure is rounded up to the minute, in seconds below two minutes, and never reads
 * less than is left.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDemoServer } from '../../src/demo/deleteFile.js';
import { MemoryLedger } from '../../src/store/memory.js';
import { asked, connect, type Connected, type Reply } from '../helpers/harness.js';

const GRANT_ACCEPT = { confirm: { action: 'accept', content: { confirmed: true, scope: 'grant' } } } as const;
const START = Date.UTC(2026, 11, 4, 9, 0, 0);

let R: string;
let root: string;
let clock: number;
const open: Connected[] = [];

beforeEach(() => {
  R = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-time-left-')));
  root = join(R, 'root');
  mkdirSync(join(root, 'cache'), { recursive: true });
  for (let i = 0; i < 8; i++) writeFileSync(join(root, 'cache', `f${i}.tmp`), `cache ${i}`);
  clock = START;
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
  rmSync(R, { recursive: true, force: true });
});

async function serve(maxSeconds: number): Promise<Connected> {
  const built = await createDemoServer({
    roots: [root],
    store: new MemoryLedger(),
    now: () => clock,
    grant: { arguments: { path: 'same-directory' }, maxUses: 20, maxSeconds },
  });
  const c = await connect(built.factory);
  open.push(c);
  return c;
}

function resultText(reply: Reply): string {
  if (reply.kind !== 'result') throw new Error(`expected a result, got ${JSON.stringify(reply)}`);
  return reply.text;
}

/** Asks for `path`, lets `thinkMs` pass, accepts with the grant: the offer line and the reply. */
async function grantAfter(c: Connected, path: string, thinkMs: number): Promise<{ offer: string; reply: string }> {
  const first = asked(await c.call('delete_file', { path }));
  clock += thinkMs;
  const reply = resultText(
    await c.call('delete_file', { path }, { requestState: first.state, inputResponses: GRANT_ACCEPT }),
  );
  return { offer: first.message, reply };
}

describe('the time left of a grant, as its replies say it', () => {
  it('a grant "for 15 minutes" says 15 minutes when made and a second later (not 14); 61 s later 14 minutes, then seconds below two minutes, and 1 second at the end', async () => {
    const c = await serve(900);
    const { offer, reply } = await grantAfter(c, 'cache/f0.tmp', 5_000);
    expect(offer).toContain('for 15 minutes, at most 20 files');
    expect(reply).toContain('need no question for 15 minutes;');
    const under = async (path: string, afterMs: number): Promise<string> => {
      clock += afterMs;
      return resultText(await c.call('delete_file', { path }));
    };
    expect(await under('cache/f1.tmp', 1_000)).toMatch(/18 more calls and 15 minutes left\.$/);
    expect(await under('cache/f2.tmp', 60_000)).toMatch(/and 14 minutes left\.$/);
    // Rounded up: 120.5 s left reads 3 minutes, 118.5 s reads 119 seconds; 899 s after the approval, 1 second.
    clock = START + 5_000 + 900_000 - 120_500;
    expect(await under('cache/f3.tmp', 0)).toMatch(/and 3 minutes left\.$/);
    expect(await under('cache/f4.tmp', 2_000)).toMatch(/and 119 seconds left\.$/);
    clock = START + 5_000 + 899_000;
    expect(await under('cache/f5.tmp', 0)).toMatch(/and 1 second left\.$/);
  });

  it('a grant "for 90 seconds" says 90 seconds right after it is made (control: 1.5 s later, 89 seconds)', async () => {
    const c = await serve(90);
    const { offer, reply } = await grantAfter(c, 'cache/f0.tmp', 2_000);
    expect(offer).toContain('for 90 seconds, at most 20 files');
    expect(reply).toContain('need no question for 90 seconds;');
    clock += 1_500;
    expect(resultText(await c.call('delete_file', { path: 'cache/f1.tmp' }))).toMatch(/and 89 seconds left\.$/);
  });
});
