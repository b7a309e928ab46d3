/**
 * mcp-use's client (`MCPClient` from `mcp-use/client`, 1.34.6: the 2.x line moved its client into
 * `@mcp-use/client`, which the npm registry does not serve) against the CLI over stdio and `--http`.
 * Wired as its docs say: the `onElicitation` option (which declares form and URL elicitation), a
 * session from `createSession`, `session.callTool`. It speaks 2025-11-25 (`initialize`): the
 * server asks through the SDK's legacy `elicitation/create` push. The root import `mcp-use` loads
 * the optional peer `langchain` eagerly, so a client-only install must import `mcp-use/client`.
 */
import { MCPClient } from 'mcp-use/client';
import { afterAll, describe, expect, it } from 'vitest';
import {
  approversFile,
  cleanUp,
  factsOf,
  httpServer,
  NO,
  onCleanUp,
  refusalText,
  scratch,
  stdioServer,
  textOf,
  YES,
  type Scratch,
  type Seen,
} from './helpers.js';

// mcp-use sends anonymous telemetry unless told not to.
process.env.MCP_USE_ANONYMIZED_TELEMETRY = 'false';
afterAll(cleanUp);

interface Asked {
  mode: string | undefined;
  message: string;
  url?: string;
}

async function connect(
  kind: 'stdio' | 'http',
  s: Scratch,
  answer: ((q: Asked) => typeof YES | typeof NO) | undefined,
  extra: string[] = [],
): Promise<{ call: (path: string) => Promise<any>; asked: Asked[]; seen: () => Seen[] }> {
  const asked: Asked[] = [];
  let seen: () => Seen[];
  let server: Record<string, unknown>;
  if (kind === 'stdio') {
    const srv = stdioServer(s, extra);
    seen = srv.seen;
    server = { command: srv.command, args: srv.args };
  } else {
    const srv = await httpServer(s, extra);
    seen = srv.seen;
    server = { url: srv.url.href, transport: 'http' };
  }
  const client = new MCPClient(
    { mcpServers: { files: server } } as any,
    answer
      ? {
          onElicitation: async (params: Record<string, any>) => {
            const q: Asked = { mode: params.mode, message: String(params.message), url: params.url };
            asked.push(q);
            return answer(q);
          },
        }
      : {},
  );
  onCleanUp(() => client.closeAllSessions());
  const session = await client.createSession('files');
  return { call: (path) => session.callTool('delete_file', { path }), asked, seen };
}

describe.each(['stdio', 'http'] as const)('the mcp-use client over %s', (kind) => {
  it('with onElicitation: the person is asked once per call; yes deletes the file, no keeps it', async () => {
    const s = scratch();
    s.file('yes.txt');
    s.file('no.txt');
    let answer: typeof YES | typeof NO = YES;
    const { call, asked, seen } = await connect(kind, s, () => answer);

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

    expect(factsOf(seen())).toEqual({ era: '2025-11-25', elicitation: ['form', 'url'], discovered: false });
  });

  it('without onElicitation (no elicitation declared): refused with ERR_CONFIRM_NO_ELICITATION, nothing deleted', async () => {
    const s = scratch();
    s.file('keep.txt');
    const { call, seen } = await connect(kind, s, undefined);
    const text = await refusalText(() => call('keep.txt'));
    expect(text).toContain('[ERR_CONFIRM_NO_ELICITATION]');
    expect(s.exists('keep.txt')).toBe(true);
    expect(factsOf(seen()).elicitation).toEqual([]);
  });
});

describe('the mcp-use client with passkey approval over stdio', () => {
  it('is pushed the URL-mode elicitation with the approval link; declining keeps the file', async () => {
    const s = scratch();
    s.file('keep.txt');
    const approvers = approversFile(s);
    const { call, asked } = await connect('stdio', s, () => NO, ['--approval', 'passkey', '--approvers', approvers]);
    const no = await call('keep.txt');
    expect(textOf(no)).toMatch(/nothing was deleted|declined/i);
    expect(asked).toHaveLength(1);
    expect(asked[0]!.mode).toBe('url');
    expect(asked[0]!.url).toMatch(/^http:\/\/localhost:\d+\/approve\/[A-Za-z0-9_-]+$/);
    expect(s.exists('keep.txt')).toBe(true);
  });
});
