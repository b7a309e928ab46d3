/**
 * The AI SDK's MCP client (`@ai-sdk/mcp`, `createMCPClient`) against the CLI over stdio and `--http`.
 * Its elicitation handler is wired as its docs say: declare `capabilities: { elicitation: {} }` and
 * register `onElicitationRequest(ElicitationRequestSchema, handler)`. It speaks 2026-07-28 MRTR and
 * answers only form elicitations (an embedded URL-mode request throws "Only form elicitation is
 * supported"), although it sends whatever elicitation capability it is given, `url` included.
 */
import { createMCPClient, ElicitationRequestSchema, type MCPClient } from '@ai-sdk/mcp';
import { Experimental_StdioMCPTransport } from '@ai-sdk/mcp/mcp-stdio';
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

type Answer = typeof YES | typeof NO;

async function connect(
  kind: 'stdio' | 'http',
  s: Scratch,
  capabilities: Record<string, unknown> | undefined,
  extra: string[] = [],
): Promise<{ client: MCPClient; seen: () => Seen[] }> {
  let seen: () => Seen[];
  let transport;
  if (kind === 'stdio') {
    const srv = stdioServer(s, extra);
    seen = srv.seen;
    transport = new Experimental_StdioMCPTransport({ command: srv.command, args: srv.args });
  } else {
    const srv = await httpServer(s, extra);
    seen = srv.seen;
    transport = { type: 'http' as const, url: srv.url.href };
  }
  const client = await createMCPClient({ transport, ...(capabilities ? { capabilities } : {}) });
  onCleanUp(() => client.close());
  return { client, seen };
}

describe.each(['stdio', 'http'] as const)('the AI SDK client over %s', (kind) => {
  it('with form elicitation declared as its docs show: the person is asked once; yes deletes the file, no keeps it', async () => {
    const s = scratch();
    s.file('yes.txt');
    s.file('no.txt');
    const { client, seen } = await connect(kind, s, { elicitation: {} });
    const asked: string[] = [];
    let answer: Answer = YES;
    client.onElicitationRequest(ElicitationRequestSchema, async (req) => {
      asked.push(String(req.params.message));
      return answer;
    });

    const yes = await client.callTool({ name: 'delete_file', arguments: { path: 'yes.txt' } });
    expect(yes.isError).not.toBe(true);
    expect(textOf(yes)).toMatch(/^Deleted `.*yes\.txt` \(6 bytes\)\.$/);
    expect(s.exists('yes.txt')).toBe(false);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('yes.txt');

    answer = NO;
    const no = await client.callTool({ name: 'delete_file', arguments: { path: 'no.txt' } });
    expect(no.isError).not.toBe(true);
    expect(textOf(no)).toMatch(/nothing was deleted/i);
    expect(s.exists('no.txt')).toBe(true);
    expect(asked).toHaveLength(2);

    const facts = factsOf(seen());
    expect(facts.discovered).toBe(true);
    expect(facts.elicitation).toEqual(['form']);
    // Over HTTP it waits for server/discover and speaks 2026-07-28. Over stdio it gives the server 1 s
    // to answer the probe and otherwise falls back to initialize (2025-11-25): which one depends on
    // how fast the server process started, so both are accepted here; the outcome is the same.
    if (kind === 'http') expect(facts.era).toBe('2026-07-28');
    else expect(['2026-07-28', '2025-11-25']).toContain(facts.era);
  });

  it('without the elicitation capability (its default): refused with ERR_CONFIRM_NO_ELICITATION, nothing deleted', async () => {
    const s = scratch();
    s.file('keep.txt');
    const { client, seen } = await connect(kind, s, undefined);
    const text = await refusalText(() => client.callTool({ name: 'delete_file', arguments: { path: 'keep.txt' } }));
    expect(text).toContain('[ERR_CONFIRM_NO_ELICITATION]');
    expect(s.exists('keep.txt')).toBe(true);
    expect(factsOf(seen()).elicitation).toEqual([]);
  });
});

describe('the AI SDK client with passkey approval over --http (where it always speaks 2026-07-28)', () => {
  const passkeyArgs = (s: Scratch): string[] => [
    '--approval',
    'passkey',
    '--approvers',
    approversFile(s),
    '--public-url',
    'http://localhost:9',
  ];

  it('fault: declaring URL elicitation is sent as given, but the URL-mode question throws "Only form elicitation is supported"; nothing deleted', async () => {
    const s = scratch();
    s.file('keep.txt');
    const { client, seen } = await connect('http', s, { elicitation: { form: {}, url: {} } }, passkeyArgs(s));
    const asked: string[] = [];
    client.onElicitationRequest(ElicitationRequestSchema, async (req) => {
      asked.push(String(req.params.message));
      return NO;
    });
    const text = await refusalText(() => client.callTool({ name: 'delete_file', arguments: { path: 'keep.txt' } }));
    expect(text).toContain('Only form elicitation is supported');
    expect(asked).toEqual([]);
    expect(factsOf(seen())).toEqual({ era: '2026-07-28', elicitation: ['form', 'url'], discovered: true });
    // The server did ask in URL mode: the approval page's link was in the embedded request.
    const asking = seen().find((m) => m.from === 'server' && m.msg.result?.resultType === 'input_required');
    expect(asking?.msg.result.inputRequests.confirm.params.mode).toBe('url');
    expect(s.exists('keep.txt')).toBe(true);
  });

  it('control: declaring form only, the same server asks a form question whose message carries the approval page; no keeps the file', async () => {
    const s = scratch();
    s.file('keep.txt');
    const { client } = await connect('http', s, { elicitation: {} }, passkeyArgs(s));
    const asked: string[] = [];
    client.onElicitationRequest(ElicitationRequestSchema, async (req) => {
      asked.push(String(req.params.message));
      return NO;
    });
    const no = await client.callTool({ name: 'delete_file', arguments: { path: 'keep.txt' } });
    expect(textOf(no)).toMatch(/nothing was deleted/i);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatch(/http:\/\/localhost:9\/approve\//);
    expect(s.exists('keep.txt')).toBe(true);
  });
});
