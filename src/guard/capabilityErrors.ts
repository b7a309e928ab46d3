/**
 * Passing a `-32021` (MCP 2026-07-28: a request for input the client did not declare) out through
 * `McpServer.registerTool`'s `tools/call` handler, which would otherwise turn it into an `isError`
 * result. The guard records the error for its request ({@link raiseForRequest}); the wrapped
 * handler ({@link passCapabilityErrors}) throws it as the JSON-RPC error it is, when, and only
 * when, it escaped the tool.
 *
 * Imports nothing at run time, so the stdio server can install it before the confirmation layer
 * loads (see `src/cli/lazyServer.ts`).
 *
 * @module
 */
import type { McpServer, ServerContext } from '@modelcontextprotocol/server';

/**
 * The `-32021` errors raised for requests still on their way out through `McpServer.registerTool`'s
 * handler, keyed by the request's abort signal (the one object every copy of its context shares).
 */
const CAPABILITY_ERRORS = new WeakMap<AbortSignal, Error>();

/** Records `error` as the `-32021` of the request whose abort signal is `signal`. */
export function raiseForRequest(signal: AbortSignal, error: Error): void {
  CAPABILITY_ERRORS.set(signal, error);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Whether `result` is exactly the result `McpServer`'s `tools/call` handler makes of a thrown
 * `error` (SDK 2.4.0, `createToolError(error.message)`: one text item, `isError: true`, nothing else).
 */
function isErrorResultOf(result: unknown, error: Error): boolean {
  if (!isPlainObject(result) || result.isError !== true) return false;
  if (Object.keys(result).some((k) => k !== 'content' && k !== 'isError')) return false;
  const content = result.content;
  if (!Array.isArray(content) || content.length !== 1) return false;
  const item: unknown = content[0];
  return isPlainObject(item) && Object.keys(item).length === 2 && item.type === 'text' && item.text === error.message;
}

/** The servers whose `tools/call` handler already passes the `-32021` on. */
const PASSING = new WeakSet<McpServer>();

/**
 * `McpServer.registerTool`'s `tools/call` handler turns every error its tool throws into an
 * `isError` result (only `-32042` passes, and the 2026-07-28 era turns that into `-32603`), so the
 * `-32021` a registered confirmation tool raises would reach the client as a result. This wraps
 * the server's `tools/call` handler once: a request whose tool raised one (`noElicitationError` in `capabilities.ts`)
 * and let it escape (the result is McpServer's error result for it, {@link isErrorResultOf}) answers
 * it as the JSON-RPC error it is; whatever a tool answered itself (it caught the refusal of a
 * `Confirmation.guard` handler it called, say) passes as it is. The SDK has no public hook for it, so this reads the
 * protocol's private `_requestHandlers` map (SDK 2.4.0); when an SDK upgrade removes or renames it,
 * nothing is wrapped and such a client gets the same sentence as an `isError` result, and
 * `test/e2e/deleteFile.test.ts` ("… -32021 …") fails loudly.
 */
export function passCapabilityErrors(server: McpServer): void {
  if (PASSING.has(server)) return;
  const handlers = (server.server as unknown as { _requestHandlers?: unknown })._requestHandlers;
  if (!(handlers instanceof Map)) return;
  const inner = handlers.get('tools/call') as ((request: unknown, ctx: ServerContext) => Promise<unknown>) | undefined;
  if (typeof inner !== 'function') return;
  PASSING.add(server);
  handlers.set('tools/call', async (request: unknown, ctx: ServerContext) => {
    try {
      const result = await inner(request, ctx);
      const raised = CAPABILITY_ERRORS.get(ctx.mcpReq.signal);
      // Only a refusal that escaped the tool: McpServer's own error result for that very error. A tool
      // that called a guard handler, caught the refusal and answered something itself keeps its answer.
      if (raised && isErrorResultOf(result, raised)) throw raised;
      return result;
    } finally {
      CAPABILITY_ERRORS.delete(ctx.mcpReq.signal);
    }
  });
}
