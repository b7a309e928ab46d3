/**
 * Grants: how many questions an agent deleting 20 files in one directory causes, without and with a
 * `same-directory` grant (the real `delete_file` on real files, a real v2 Client over the in-memory
 * transport), and what one deletion under a grant costs against the same deletion by a bare SDK
 * tool with no confirmation (`unlink` of the path; same files, same client).
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { createDemoServer } from '../src/demo/deleteFile.js';
import { MemoryLedger } from '../src/store/memory.js';
import { connectTo, type Figure } from './mrtr.js';

const GRANT_ACCEPT = { confirm: { action: 'accept', content: { confirmed: true, scope: 'grant' } } };

interface Reply {
  resultType?: string;
  requestState?: string;
  isError?: boolean;
}

const call = (client: Client, params: Record<string, unknown>): Promise<Reply> =>
  client.request({ method: 'tools/call', params } as never, { allowInputRequired: true } as never) as Promise<Reply>;

/** Deletes `files` one by one, answering every question (with `scope: grant` when `grant`): the questions asked. */
async function questionsFor(client: Client, files: string[], grant: boolean): Promise<number> {
  let questions = 0;
  for (const path of files) {
    let reply = await call(client, { name: 'delete_file', arguments: { path } });
    if (reply.resultType === 'input_required') {
      questions += 1;
      reply = await call(client, {
        name: 'delete_file',
        arguments: { path },
        requestState: reply.requestState,
        inputResponses: grant ? GRANT_ACCEPT : { confirm: { action: 'accept', content: { confirmed: true } } },
      });
    }
    if (reply.isError || reply.resultType === 'input_required') throw new Error(`${path} was not deleted`);
  }
  return questions;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

export async function benchGrants(options: { calls?: number; runs?: number } = {}): Promise<Figure[]> {
  const calls = options.calls ?? 300;
  const runs = options.runs ?? 7;
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'mcp-confirm-bench-grants-')));
  const root = join(dir, 'root');
  const cache = join(root, 'cache');
  mkdirSync(cache, { recursive: true });
  const make = (names: string[]): string[] => {
    for (const n of names) writeFileSync(join(cache, n), 'x');
    return names.map((n) => `cache/${n}`);
  };
  try {
    // Questions for 20 deletions in one directory.
    const plain = await createDemoServer({ roots: [root], store: new MemoryLedger() });
    const plainClient = await connectTo(plain.factory);
    const without = await questionsFor(plainClient, make(Array.from({ length: 20 }, (_, i) => `a${i}`)), false);
    const granted = await createDemoServer({
      roots: [root],
      store: new MemoryLedger(),
      grant: { arguments: { path: 'same-directory' }, maxUses: 1_000_000, maxSeconds: 86_400 },
    });
    const grantClient = await connectTo(granted.factory);
    const withGrant = await questionsFor(grantClient, make(Array.from({ length: 20 }, (_, i) => `b${i}`)), true);

    // One deletion under a grant (one call, no question) against a bare SDK tool that unlinks the path.
    const bare = new McpServer({ name: 'bare', version: '0' });
    bare.registerTool('delete_file', { inputSchema: z.strictObject({ path: z.string() }) }, async ({ path }) => {
      await unlink(join(root, path));
      return { content: [{ type: 'text', text: `deleted ${path}` }] };
    });
    const bareClient = await connectTo(() => bare);
    const samples = { bare: [] as number[], grant: [] as number[] };
    const ratios: number[] = [];
    let n = 0;
    const oneRun = async (client: Client): Promise<number> => {
      const files = make(Array.from({ length: calls }, () => `c${n++}`));
      const t0 = process.hrtime.bigint();
      for (const path of files) {
        const reply = await call(client, { name: 'delete_file', arguments: { path } });
        if (reply.isError || reply.resultType === 'input_required') throw new Error(`${path} was not deleted`);
      }
      return Number(process.hrtime.bigint() - t0) / 1000 / calls;
    };
    await oneRun(bareClient);
    await oneRun(grantClient); // warm-up
    for (let r = 0; r < runs; r++) {
      const first = r % 2 === 0;
      const a = first ? await oneRun(bareClient) : 0;
      const g = await oneRun(grantClient);
      const b = first ? a : await oneRun(bareClient);
      samples.bare.push(b);
      samples.grant.push(g);
      ratios.push(g / b);
    }
    await Promise.all([plainClient.close(), grantClient.close(), bareClient.close()]);
    return [
      { name: 'questions for 20 deletions in one directory, no grant', value: without, unit: 'questions' },
      {
        name: 'questions for 20 deletions in one directory under a grant',
        value: withGrant,
        unit: 'questions',
        target: 1,
        targetKind: 'max',
      },
      { name: 'deletion by a bare SDK tool (unlink, no confirmation)', value: median(samples.bare), unit: 'µs/call' },
      { name: 'deletion under a grant (mcp-confirm, re-checked)', value: median(samples.grant), unit: 'µs/call' },
      {
        name: 'deletion under a grant / bare SDK deletion',
        value: median(ratios),
        unit: 'ratio',
        target: 1.5,
        targetKind: 'max',
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
