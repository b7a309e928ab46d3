/**
 * The MCP Inspector's CLI mode (`mcp-inspector --cli …`, `@modelcontextprotocol/inspector`) against
 * the CLI over stdio and `--http`, one process per call as a user runs it. It speaks 2025-11-25 and
 * declares no elicitation, so with form approval it is refused with `ERR_CONFIRM_NO_ELICITATION`
 * (printed as the tool result, exit code non-zero) and nothing is deleted. With passkey approval it
 * gets the link flow (test/linkFlow.test.ts).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { cleanUp, factsOf, httpServer, inspectorCall, scratch, stdioServer, type Seen } from './helpers.js';

afterAll(cleanUp);

describe.each(['stdio', 'http'] as const)('the Inspector CLI over %s', (kind) => {
  it('cannot elicit: the call is refused with ERR_CONFIRM_NO_ELICITATION and the file is kept', async () => {
    const s = scratch();
    s.file('keep.txt');
    let seen: () => Seen[];
    let target: string[];
    if (kind === 'stdio') {
      const srv = stdioServer(s);
      seen = srv.seen;
      target = [srv.command, ...srv.args];
    } else {
      const srv = await httpServer(s);
      seen = srv.seen;
      target = [srv.url.href, '--transport', 'http'];
    }
    const out = await inspectorCall(s, target, 'keep.txt');
    expect(out.code).not.toBe(0);
    const printed = JSON.parse(out.stdout.slice(0, out.stdout.lastIndexOf('}') + 1));
    expect(printed.isError).toBe(true);
    expect(printed.content[0].text).toContain('[ERR_CONFIRM_NO_ELICITATION]');
    expect(s.exists('keep.txt')).toBe(true);
    expect(factsOf(seen())).toEqual({ era: '2025-11-25', elicitation: [], discovered: false });
  });
});
