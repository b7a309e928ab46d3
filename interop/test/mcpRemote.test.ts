/**
 * `mcp-remote` (the stdio-to-remote bridge desktop hosts use for HTTP servers) between a local stdio
 * client and the CLI over `--http`. The local client is the v1 SDK `Client` (2025-11-25), as a desktop
 * host is. Two modes of the bridge: the default `--protocol legacy` passes `initialize` and the
 * server's `elicitation/create` pushes straight through; `--protocol auto` probes `server/discover`,
 * speaks 2026-07-28 to the server itself and re-asks each embedded form elicitation of the local client
 * as a 2025-era `elicitation/create`. What it cannot relay is a URL-mode elicitation (its README says so):
 * with passkey approval and a local client that declares URL mode, the call fails there and nothing is
 * deleted, while the legacy mode relays the same URL elicitation.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  approversFile,
  cleanUp,
  factsOf,
  httpServer,
  INTEROP,
  NO,
  onCleanUp,
  refusalText,
  scratch,
  stdioServer,
  TAP,
  textOf,
  YES,
  type Scratch,
} from './helpers.js';

afterAll(cleanUp);

const MCP_REMOTE = join(INTEROP, 'node_modules/mcp-remote/dist/proxy.js');

interface Asked {
  mode: string | undefined;
  message: string;
  url?: string;
}

/** The local client over stdio to `mcp-remote URL …bridgeArgs` (behind the recording relay), the server over --http. */
async function connect(
  s: Scratch,
  bridgeArgs: string[],
  elicitation: Record<string, unknown> | undefined,
  answer: (q: Asked) => typeof YES | typeof NO,
  serverArgs: string[] = [],
) {
  const server = await httpServer(s, serverArgs);
  // The relay records what the local client and mcp-remote say to each other.
  const local = stdioServer(s);
  const log = local.args[1]!;
  const client = new Client(
    { name: 'desktop-like', version: '1.0.0' },
    { capabilities: elicitation ? { elicitation } : {} },
  );
  const asked: Asked[] = [];
  if (elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      const p = req.params as Record<string, any>;
      const q: Asked = { mode: p.mode, message: String(p.message), url: p.url };
      asked.push(q);
      return answer(q);
    });
  }
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [TAP, log, process.execPath, MCP_REMOTE, server.url.href, ...bridgeArgs],
      env: { PATH: process.env.PATH ?? '', HOME: s.dir, MCP_REMOTE_CONFIG_DIR: s.path('mcp-auth') },
      stderr: 'ignore',
    }),
  );
  onCleanUp(() => client.close());
  return {
    call: (path: string) => client.callTool({ name: 'delete_file', arguments: { path } }),
    asked,
    local: local.seen,
    upstream: server.seen,
  };
}

describe.each([
  ['--protocol legacy (its default)', [] as string[], '2025-11-25'],
  ['--protocol auto', ['--protocol', 'auto'], '2026-07-28'],
])('mcp-remote %s', (_name, bridgeArgs, upstreamEra) => {
  it('relays the form elicitation to the local client: yes deletes the file, no keeps it', async () => {
    const s = scratch();
    s.file('yes.txt');
    s.file('no.txt');
    let answer: typeof YES | typeof NO = YES;
    const { call, asked, local, upstream } = await connect(s, bridgeArgs, { form: {} }, () => answer);

    const yes = await call('yes.txt');
    expect(yes.isError).not.toBe(true);
    expect(textOf(yes)).toMatch(/^Deleted `.*yes\.txt` \(6 bytes\)\.$/);
    expect(s.exists('yes.txt')).toBe(false);
    expect(asked).toHaveLength(1);
    expect(asked[0]!.mode ?? 'form').toBe('form');

    answer = NO;
    const no = await call('no.txt');
    expect(textOf(no)).toMatch(/nothing was deleted/i);
    expect(s.exists('no.txt')).toBe(true);
    expect(asked).toHaveLength(2);

    expect(factsOf(local()).era).toBe('2025-11-25');
    expect(factsOf(upstream())).toMatchObject({ era: upstreamEra, elicitation: ['form'] });
  });

  it('a local client without elicitation is refused with ERR_CONFIRM_NO_ELICITATION; the file is kept', async () => {
    const s = scratch();
    s.file('keep.txt');
    const { call } = await connect(s, bridgeArgs, undefined, () => NO);
    const text = await refusalText(() => call('keep.txt'));
    expect(text).toContain('[ERR_CONFIRM_NO_ELICITATION]');
    expect(s.exists('keep.txt')).toBe(true);
  });
});

describe('mcp-remote with passkey approval (a local client declaring form and URL elicitation)', () => {
  const passkeyArgs = (s: Scratch) => [
    '--approval',
    'passkey',
    '--approvers',
    approversFile(s),
    '--public-url',
    'http://localhost:9',
  ];

  it('--protocol legacy relays the URL-mode elicitation with the approval link; declining keeps the file', async () => {
    const s = scratch();
    s.file('keep.txt');
    const { call, asked } = await connect(s, [], { form: {}, url: {} }, () => NO, passkeyArgs(s));
    const no = await call('keep.txt');
    expect(textOf(no)).toMatch(/nothing was deleted|declined/i);
    expect(asked).toHaveLength(1);
    expect(asked[0]!.mode).toBe('url');
    expect(asked[0]!.url).toMatch(/^http:\/\/localhost:9\/approve\/[A-Za-z0-9_-]+$/);
    expect(s.exists('keep.txt')).toBe(true);
  });

  it('fault: --protocol auto cannot relay the URL-mode elicitation: the call fails, the person is never asked, nothing deleted', async () => {
    const s = scratch();
    s.file('keep.txt');
    const { call, asked, upstream } = await connect(
      s,
      ['--protocol', 'auto'],
      { form: {}, url: {} },
      () => NO,
      passkeyArgs(s),
    );
    const text = await refusalText(() => call('keep.txt'));
    expect(text).not.toContain('Deleted');
    expect(asked).toEqual([]);
    expect(s.exists('keep.txt')).toBe(true);
    expect(factsOf(upstream())).toMatchObject({ era: '2026-07-28', elicitation: ['form', 'url'] });
  });
});
