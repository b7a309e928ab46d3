/**
 * LangChain's MCP adapters (`@langchain/mcp-adapters` `MultiServerMCPClient`) against the CLI over
 * stdio and `--http`. They run on the v1 SDK client, speak 2025-11-25 and declare no elicitation
 * capability (there is no handler to wire), so with form approval every destructive call is refused
 * with `ERR_CONFIRM_NO_ELICITATION` and nothing is deleted; the adapter turns the error result into a
 * `ToolException` naming it. With passkey approval such a client gets the link flow
 * (test/linkFlow.test.ts).
 */
import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanUp, factsOf, httpServer, onCleanUp, refusalText, scratch, stdioServer, type Seen } from './helpers.js';

afterAll(cleanUp);

describe.each(['stdio', 'http'] as const)('the LangChain MCP adapters over %s', (kind) => {
  it('cannot elicit: the call is refused with ERR_CONFIRM_NO_ELICITATION and the file is kept', async () => {
    const s = scratch();
    s.file('keep.txt');
    let seen: () => Seen[];
    let server: Record<string, unknown>;
    if (kind === 'stdio') {
      const srv = stdioServer(s);
      seen = srv.seen;
      server = { transport: 'stdio', command: srv.command, args: srv.args };
    } else {
      const srv = await httpServer(s);
      seen = srv.seen;
      server = { transport: 'http', url: srv.url.href };
    }
    const client = new MultiServerMCPClient({ mcpServers: { files: server as any } });
    onCleanUp(() => client.close());
    const tools = await client.getTools();
    const tool = tools.find((t) => t.name.endsWith('delete_file'));
    expect(tool).toBeDefined();

    const text = await refusalText(() => tool!.invoke({ path: 'keep.txt' }));
    expect(text).toContain('[ERR_CONFIRM_NO_ELICITATION]');
    expect(text).toMatch(/nothing was done/);
    expect(s.exists('keep.txt')).toBe(true);
    expect(factsOf(seen())).toEqual({ era: '2025-11-25', elicitation: [], discovered: false });
  });
});
