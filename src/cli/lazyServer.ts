/**
 * The `delete_file` server of `mcp-confirm --root DIR` over stdio, answering before its
 * confirmation layer is loaded (cold start: an MCP host spawns the server and waits for its first
 * answer).
 *
 * The first answer (`initialize` or `server/discover`) and `tools/list` need only the server's
 * name, its options and the tool's registration with its full input schema
 * (`src/demo/deleteFileSpec.ts`, which imports only zod). The confirmation layer (keys, sealer,
 * ledger, audit, the question's renderer and its Unicode tables, the file checks) is loaded once,
 * on first need: {@link LazyDeleteFileServer.preload} (the command line calls it once the first
 * answer is out), the first `tools/call`, or the first `requestState` to verify, whichever comes
 * first; the others wait for the same load. The server is built with the same options and the same
 * registration as `createDemoServer` builds (`Confirmation.serverOptions`, `Confirmation.register`),
 * so clients see no difference.
 *
 * A load that fails is never a crash: the reason goes to `log` (stderr), a `tools/call` is answered
 * with the confirmation layer's generic internal error (`isError`, nothing done), a `requestState`
 * is refused as unverifiable (`-32602`, the SDK's answer to a verify hook that fails), and the next
 * need loads again. A module that failed to load stays failed, though: Node keeps the failed import
 * in its module map (seen on Node 20: a load hook failing once made every later import of that module
 * reject the same way), so after a broken install every call is answered the same until a restart;
 * the retry helps only when building the layer failed after its modules loaded.
 *
 * @module
 */
import {
  McpServer,
  type CallToolResult,
  type InputRequiredResult,
  type ServerContext,
} from '@modelcontextprotocol/server';
import { passCapabilityErrors } from '../guard/capabilityErrors.js';
import type { ConfirmableTool, Confirmation, OpenedState } from '../guard/confirmation.js';
import type { FileFingerprint } from '../fs/target.js';
import { DELETE_FILE, DELETE_FILE_CONFIG, DeleteFileInput, SERVER_INFO } from '../demo/deleteFileSpec.js';
import type { GrantPolicy } from '../grant/matchers.js';

/** What the load yields: the confirmation layer and the tool it guards. */
export interface LoadedDeleteFile {
  confirmation: Confirmation;
  tool: ConfirmableTool<{ path: string }, FileFingerprint>;
  /** What may be granted for `delete_file` (undefined: no grants). */
  grant?: GrantPolicy;
}

/** The server factory for `serveStdio` and the way to load the confirmation layer ahead of need. */
export interface LazyDeleteFileServer {
  /** Builds one `McpServer` (per connection): `delete_file` registered, nothing loaded yet. */
  factory: () => McpServer;
  /**
   * Starts the load now, if it is not under way or done. Never rejects: a failure is logged, and the
   * next need tries again.
   */
  preload: () => void;
}

/** What a `tools/call` answers when the confirmation layer cannot be loaded (the text of the layer's own internal error). */
const NOT_LOADED: CallToolResult = {
  content: [{ type: 'text', text: 'Internal error in the confirmation layer; nothing was done.' }],
  isError: true,
};

/**
 * The lazily completed server.
 *
 * @param load - imports and builds the confirmation layer and the tool (called again after a failure).
 * @param log - one line per failed load, without the `mcp-confirm: ` prefix.
 * @param options.plans - also register `confirm_plan` (over `delete_file`), as `Confirmation.register`
 *   does with `plans`: its name and registration (`guard/planSpec.ts`, imported by the caller only
 *   when plans are on). Defaults to none.
 */
export function lazyDeleteFileServer(
  load: () => Promise<LoadedDeleteFile>,
  log: (line: string) => void,
  options: { plans?: { name: string; config: { inputSchema: unknown } & Record<string, unknown> } } = {},
): LazyDeleteFileServer {
  let loading: Promise<LoadedDeleteFile> | undefined;
  const loaded = (): Promise<LoadedDeleteFile> => {
    loading ??= load().catch((e: unknown) => {
      loading = undefined;
      log(`the confirmation layer could not be loaded: ${e instanceof Error ? e.message : String(e)}`);
      throw e;
    });
    return loading;
  };

  const factory = (): McpServer => {
    const verify = async (state: string, ctx: ServerContext): Promise<OpenedState> =>
      (await loaded()).confirmation.serverOptions.requestState.verify(state, ctx);
    const server = new McpServer(SERVER_INFO, { requestState: { verify }, capabilities: { tools: {} } });
    // Confirmation.guard of this server, made once the layer is loaded (what Confirmation.register hands the SDK).
    let guarded:
      | Promise<(args: { path: string }, ctx: ServerContext) => Promise<CallToolResult | InputRequiredResult>>
      | undefined;
    const handler = async (
      args: { path: string },
      ctx: ServerContext,
    ): Promise<CallToolResult | InputRequiredResult> => {
      guarded ??= loaded().then(
        ({ confirmation, tool, grant }) =>
          confirmation.guard(server, DELETE_FILE, tool, grant === undefined ? {} : { grant }),
        (e: unknown) => {
          guarded = undefined;
          throw e;
        },
      );
      let run;
      try {
        run = await guarded;
      } catch {
        return NOT_LOADED;
      }
      return run(args, ctx);
    };
    server.registerTool(DELETE_FILE, DELETE_FILE_CONFIG, handler as never);
    if (options.plans) {
      let planned:
        Promise<(args: never, ctx: ServerContext) => Promise<CallToolResult | InputRequiredResult>> | undefined;
      const planHandler = async (args: never, ctx: ServerContext): Promise<CallToolResult | InputRequiredResult> => {
        planned ??= loaded().then(
          ({ confirmation, tool }) =>
            confirmation.planGuard(server, (name) =>
              name === DELETE_FILE
                ? {
                    tool: tool as never,
                    parse: (value) => {
                      const parsed = DeleteFileInput.safeParse(value);
                      return parsed.success ? { args: parsed.data } : undefined;
                    },
                  }
                : undefined,
            ),
          (e: unknown) => {
            planned = undefined;
            throw e;
          },
        );
        let run;
        try {
          run = await planned;
        } catch {
          return NOT_LOADED;
        }
        return run(args, ctx);
      };
      server.registerTool(options.plans.name, options.plans.config as never, planHandler as never);
    }
    // As Confirmation.register does: a 2026-07-28 client without elicitation gets the -32021 itself.
    passCapabilityErrors(server);
    return server;
  };

  return { factory, preload: () => void loaded().catch(() => {}) };
}
