/**
 * The conformance fixture: a small MCP server built on mcp-confirm (the
 * package's own exports, as a user would) serving the `test_*` tools that the
 * applicable server scenarios of `@modelcontextprotocol/conformance` call, over
 * the same HTTP serving code as `mcp-confirm --http` (`createHttpApp` and
 * `listenHttp` from `mcp-confirm/http`: Host/Origin checks, stateless
 * 2026-07-28, sessionful 2025-era). A test fixture: not shipped.
 *
 * - `test_input_required_result_request_state` and `test_input_required_result_tampered_state`
 *   are confirmation tools (`confirmation.register`): their `requestState` is
 *   mcp-confirm's sealed, bound, single-use state, so a tampered one is the
 *   SDK's `-32602` from our verify hook.
 * - server-stateless's diagnostic tools: `test_streaming_elicitation` is a confirmation
 *   tool too; `test_missing_capability` asks for sampling (the SDK answers -32021 to a
 *   client without it); `test_logging_tool` logs once.
 * - `test_input_required_result_elicitation` (a name, no state) and `test_elicitation`
 *   (username/email; on 2025-era sessions the SDK's legacy shim pushes it as
 *   `elicitation/create`) are plain MRTR tools next to them: they ask for data,
 *   not for a confirmation, and carry no `requestState`.
 *
 * Usage: `tsx test/conformance/fixtureServer.ts [HOST:PORT]` (default 127.0.0.1:0).
 * Prints `conformance fixture at http://HOST:PORT/mcp` on stderr once listening; SIGTERM stops it.
 */
import { McpServer, inputRequired, inputResponse, type CallToolResult } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { createConfirmation, question } from 'mcp-confirm';
import { allowedHostnames, createHttpApp, listenHttp, parseBindAddress } from 'mcp-confirm/http';

const bind = parseBindAddress(process.argv[2] ?? '127.0.0.1:0');
const confirmation = await createConfirmation({ audience: 'conformance-fixture' });
const text = (t: string): CallToolResult => ({ content: [{ type: 'text', text: t }] });
const NO_ARGUMENTS = z.strictObject({});

function factory(): McpServer {
  const server = new McpServer(
    { name: 'mcp-confirm-conformance-fixture', version: '0.0.0' },
    { ...confirmation.serverOptions },
  );

  server.registerTool(
    'test_input_required_result_elicitation',
    { description: 'Asks the user for a name (MRTR, no requestState), then greets them.', inputSchema: NO_ARGUMENTS },
    async (_args, ctx) => {
      const answer = inputResponse(ctx.mcpReq.inputResponses, 'user_name');
      if (answer.kind === 'elicit' && answer.action === 'accept' && typeof answer.content?.name === 'string') {
        return text(`Hello, ${answer.content.name}!`);
      }
      return inputRequired({
        inputRequests: {
          user_name: inputRequired.elicit({
            message: 'What is your name?',
            requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
          }),
        },
      });
    },
  );

  // Confirmation tools: request-state, tampered-state, and server-stateless's diagnostic
  // test_streaming_elicitation (its response stream carries only the input_required result).
  for (const name of [
    'test_input_required_result_request_state',
    'test_input_required_result_tampered_state',
    'test_streaming_elicitation',
  ]) {
    confirmation.register(
      server,
      name,
      {
        description:
          'A confirmed no-op: asks a human to confirm (sealed, single-use requestState), then reports state-ok.',
        inputSchema: NO_ARGUMENTS,
      },
      {
        question: () => question`Please confirm`,
        act: () => text('state-ok: requestState verified, confirmed, done.'),
        nothingDone: 'state-ok: requestState verified; nothing was done',
      },
    );
  }

  // server-stateless: a tool that needs sampling; a client that did not declare it gets the SDK's -32021.
  server.registerTool(
    'test_missing_capability',
    { description: 'Asks the client to sample a message (needs the sampling capability).', inputSchema: NO_ARGUMENTS },
    async (_args, ctx) => {
      if (inputResponse(ctx.mcpReq.inputResponses, 'sample').kind !== 'missing') return text('sampled');
      return inputRequired({
        inputRequests: {
          sample: inputRequired.createMessage({
            messages: [{ role: 'user', content: { type: 'text', text: 'Say hello' } }],
            maxTokens: 10,
          }),
        },
      });
    },
  );

  // server-stateless: a tool that logs; the SDK sends notifications/message only when the request set a log level.
  server.registerTool(
    'test_logging_tool',
    {
      description: 'Logs one message at info level (sent only when the request asked for a log level), then answers.',
      inputSchema: NO_ARGUMENTS,
    },
    async (_args, ctx) => {
      await ctx.mcpReq.log('info', 'test_logging_tool ran');
      return text('logged');
    },
  );

  server.registerTool(
    'test_elicitation',
    {
      description: 'Asks the user for a username and an email address, then reports the answer.',
      inputSchema: z.strictObject({ message: z.string() }),
    },
    async ({ message }, ctx) => {
      const answer = inputResponse(ctx.mcpReq.inputResponses, 'user_info');
      if (answer.kind === 'elicit') {
        return text(`User response: action: ${answer.action}, content: ${JSON.stringify(answer.content ?? {})}`);
      }
      return inputRequired({
        inputRequests: {
          user_info: inputRequired.elicit({
            message,
            requestedSchema: {
              type: 'object',
              properties: {
                username: { type: 'string', description: "User's response" },
                email: { type: 'string', description: "User's email address" },
              },
              required: ['username', 'email'],
            },
          }),
        },
      });
    },
  );
  return server;
}

// The app needs its resource URL (and so the port) first: listen through a forwarder, as the CLI does.
let app: ReturnType<typeof createHttpApp> | undefined;
const listening = await listenHttp(
  {
    fetch: (r: Request) => app!.fetch(r),
    close: () => app!.close(),
    resourceMetadataUrl: undefined,
    legacySessions: 0,
  },
  bind.host,
  bind.port,
  (e) => process.stderr.write(`fixture: ${e.message}\n`),
);
const url = new URL(`http://${bind.urlHost}:${listening.address.port}/mcp`);
app = createHttpApp({
  factory,
  resourceUrl: url,
  allowedHostnames: allowedHostnames(bind, url, []),
  principalOf: () => 'local',
  onerror: (e) => process.stderr.write(`fixture: ${e.message}\n`),
});
process.once('SIGTERM', () => void listening.close(1000).finally(() => process.exit(0)));
process.stderr.write(`conformance fixture at ${url.href}\n`);
