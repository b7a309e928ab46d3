/**
 * Mastra's MCP client (`@mastra/mcp` `MCPClient`) against the CLI over stdio and `--http`. Wired as
 * its docs say: an `inputRequests` handler on the server definition (which declares form
 * elicitation; `capabilities.elicitation` widens it to URL mode), tools from `listTools()` run with
 * `execute`, and `onToolError: 'return'` so an error result is returned rather than thrown. It
 * probes with `server/discover` and speaks 2026-07-28 MRTR.
 */
import { MCPClient } from '@mastra/mcp';
import { randomUUID } from 'node:crypto';
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
  options: { extra?: string[]; capabilities?: Record<string, unknown> } = {},
): Promise<{ call: (path: string) => Promise<any>; asked: Asked[]; seen: () => Seen[] }> {
  const asked: Asked[] = [];
  let seen: () => Seen[];
  let where: Record<string, unknown>;
  if (kind === 'stdio') {
    const srv = stdioServer(s, options.extra ?? []);
    seen = srv.seen;
    where = { command: srv.command, args: srv.args, stderr: 'ignore' };
  } else {
    const srv = await httpServer(s, options.extra ?? []);
    seen = srv.seen;
    where = { url: srv.url };
  }
  const mcp = new MCPClient({
    id: `interop-${randomUUID()}`,
    servers: {
      files: {
        ...where,
        onToolError: 'return',
        ...(options.capabilities ? { capabilities: options.capabilities } : {}),
        ...(answer
          ? {
              inputRequests: async ({ params }: { params: Record<string, any> }) => {
                const q: Asked = { mode: params.mode, message: String(params.message), url: params.url };
                asked.push(q);
                return answer(q);
              },
            }
          : {}),
      } as any,
    },
  });
  onCleanUp(() => mcp.disconnect());
  const tools = await mcp.listTools();
  const tool = tools['files_delete_file'];
  if (!tool) throw new Error(`no files_delete_file among ${Object.keys(tools).join(', ')}`);
  return { call: (path) => tool.execute!({ path }, {} as any), asked, seen };
}

describe.each(['stdio', 'http'] as const)('the Mastra client over %s', (kind) => {
  it('with an inputRequests handler: the person is asked once per call; yes deletes the file, no keeps it', async () => {
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

    expect(factsOf(seen())).toEqual({ era: '2026-07-28', elicitation: ['form'], discovered: true });
  });

  it('without a handler (no elicitation declared): refused with ERR_CONFIRM_NO_ELICITATION, nothing deleted', async () => {
    const s = scratch();
    s.file('keep.txt');
    const { call, seen } = await connect(kind, s, undefined);
    const text = await refusalText(() => call('keep.txt'));
    expect(text).toContain('[ERR_CONFIRM_NO_ELICITATION]');
    expect(s.exists('keep.txt')).toBe(true);
    expect(factsOf(seen()).elicitation).toEqual([]);
  });
});

describe('the Mastra client with passkey approval over stdio', () => {
  it('with URL elicitation declared as its docs say, the handler is given the approval link in URL mode; declining keeps the file', async () => {
    const s = scratch();
    s.file('keep.txt');
    const approvers = approversFile(s);
    const { call, asked, seen } = await connect('stdio', s, () => NO, {
      extra: ['--approval', 'passkey', '--approvers', approvers],
      capabilities: { elicitation: { form: {}, url: {} } },
    });
    const no = await call('keep.txt');
    expect(textOf(no)).toMatch(/nothing was deleted|declined/i);
    expect(asked).toHaveLength(1);
    expect(asked[0]!.mode).toBe('url');
    expect(asked[0]!.url).toMatch(/^http:\/\/localhost:\d+\/approve\/[A-Za-z0-9_-]+$/);
    expect(s.exists('keep.txt')).toBe(true);
    expect(factsOf(seen()).elicitation).toEqual(['form', 'url']);
  });
});
