/**
 * The confirmation proxy: an MCP server in front of one upstream MCP server, asking a human
 * before each call of a tool the policy (or the tool's annotations) marks for confirmation.
 *
 * Served with `serveStdio` (both eras toward the client). It answers `tools/list` and
 * `tools/call` itself, with the SDK's low-level request handlers, so the `requestState` verify
 * hook and the 2025-era shim apply as for any tool:
 * - `tools/list`: the upstream's current list (every page), tools the policy denies left out,
 *   every other tool passed through as listed (name, title, description, schemas, annotations,
 *   icons, `_meta`: upstream metadata, never part of the question);
 * - `tools/call`: deny → `ERR_CONFIRM_POLICY_DENIED`; allow → forwarded as is; confirm → the
 *   guard's two rounds ({@link Confirmation.guard}), the state binding the upstream's identity,
 *   the tool name, a digest of the tool's definition as listed at round 1, and the arguments.
 *   At round 2 the tool is listed again: gone → `ERR_CONFIRM_UPSTREAM_TOOL_GONE`, a different
 *   definition → asked again; then the confirmed arguments are forwarded once and the upstream's
 *   result (or JSON-RPC error) returned as is.
 *
 * @module
 */
import { McpServer, ProtocolError, ProtocolErrorCode, type CallToolResult, type InputRequiredResult, type ServerContext } from '@modelcontextprotocol/server';
import type { Tool } from '@modelcontextprotocol/client';
import { ConfirmError, ConfirmPolicyDeniedError, ConfirmUpstreamToolGoneError, toToolError } from '../errors.js';
import type { Confirmation, ConfirmableTool } from '../guard/confirmation.js';
import { decide, EMPTY_POLICY, namedDecision, type Policy } from './policy.js';
import { proxyQuestion } from './question.js';
import { definitionDigest, Upstream } from './upstream.js';

/** The name and version the proxy announces to its client. */
export const PROXY_INFO = { name: 'mcp-confirm-proxy', version: '0.1.0' } as const;

/** Options of {@link createProxy}. */
export interface ProxyOptions {
  /** The confirmation layer (keys, ledger, audience, TTL), created once. */
  confirmation: Confirmation;
  /** The spawned upstream. */
  upstream: Upstream;
  /** Which tools are asked, passed or denied. Defaults to the empty policy (annotation defaults). */
  policy?: Policy;
  /** Ask for every tool the policy does not name, whatever its annotations. */
  confirmUnnamed?: boolean;
}

/** What round 1 seals about the upstream and the tool (the guard's fingerprint). */
export interface ProxyFingerprint {
  /** The upstream's `serverInfo` name and version (shown in the question). */
  server: string;
  version: string;
  /** SHA-256 (RFC 8785) of the upstream's name, version and command. */
  upstream: string;
  /** SHA-256 (RFC 8785) of the tool's input schema, annotations and description as listed at round 1. */
  definition: string;
}

/** The guard's arguments: the call's arguments as sent (undefined when the call had none). */
interface ProxyArgs {
  arguments?: Record<string, unknown>;
}

/** A refusal of a request that has no `isError` result (`tools/list`): JSON-RPC internal error with the coded text. */
function asProtocolError(e: unknown): unknown {
  if (e instanceof ConfirmError) return new ProtocolError(ProtocolErrorCode.InternalError, `[${e.code}] ${e.message}`);
  return e;
}

/**
 * Builds the proxy's per-connection server factory.
 *
 * @returns `factory` for `serveStdio`, and `servers`, the live instances (for list_changed relays).
 */
export function createProxy(options: ProxyOptions): { factory: () => McpServer; servers: ReadonlySet<McpServer> } {
  const { confirmation, upstream } = options;
  const policy = options.policy ?? EMPTY_POLICY;
  const confirmUnnamed = options.confirmUnnamed ?? false;
  const servers = new Set<McpServer>();

  // The list as last fetched; kept current by the upstream's list_changed notifications when it
  // declares them, else fetched again on each call that needs annotations.
  let cached: Map<string, Tool> | undefined;
  const listsChanges = upstream.client.getServerCapabilities()?.tools?.listChanged === true;
  const fetchList = async (signal?: AbortSignal): Promise<Map<string, Tool>> => {
    const tools = await upstream.listTools(signal);
    const map = new Map(tools.map((t) => [t.name, t] as const));
    if (listsChanges) cached = map;
    return map;
  };
  if (listsChanges) {
    upstream.client.setNotificationHandler('notifications/tools/list_changed', () => {
      cached = undefined;
      for (const s of servers) {
        if (s.isConnected()) void Promise.resolve(s.sendToolListChanged()).catch(() => {});
      }
    });
  }

  const confirmable = (server: McpServer, name: string, tool: Tool): ConfirmableTool<ProxyArgs, ProxyFingerprint> => ({
    fingerprint: () => ({
      server: upstream.identity.name,
      version: upstream.identity.version,
      upstream: upstream.identityDigest,
      definition: definitionDigest(tool),
    }),
    question: (args, fp) => proxyQuestion(name, args.arguments, { name: fp.server, version: fp.version }),
    unchanged: (_args, fp) => fp.upstream === upstream.identityDigest && fp.definition === definitionDigest(tool),
    act: (args, { ctx }) => forward(name, args.arguments, ctx),
    nothingDone: 'nothing was forwarded to the upstream server',
  });

  const forward = (name: string, args: Record<string, unknown> | undefined, ctx: ServerContext): Promise<CallToolResult> => {
    const token = ctx.mcpReq._meta?.progressToken;
    return upstream.callTool(name, args, {
      signal: ctx.mcpReq.signal,
      ...(token === undefined
        ? {}
        : {
            onprogress: (p) => {
              void ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, ...p } }).catch(() => {});
            },
          }),
    });
  };

  const callTool = async (server: McpServer, params: { name: string; arguments?: Record<string, unknown> }, ctx: ServerContext): Promise<CallToolResult | InputRequiredResult> => {
    const { name } = params;
    try {
      upstream.assertUp();
      // A tool the policy names needs no annotations; an unnamed one is decided from the current list.
      let decision = namedDecision(policy, name);
      if (decision === undefined) {
        const list = cached ?? (await fetchList(ctx.mcpReq.signal));
        decision = decide(policy, name, list.get(name)?.annotations, confirmUnnamed);
      }
      if (decision === 'deny') throw new ConfirmPolicyDeniedError();
      if (decision === 'allow') return await forward(name, params.arguments, ctx);
      // Confirm: the definition as listed now (round 1: sealed; round 2: compared).
      const tool = (await fetchList(ctx.mcpReq.signal)).get(name);
      if (tool === undefined) throw new ConfirmUpstreamToolGoneError();
      const handler = confirmation.guard(server, name, confirmable(server, name, tool), { rethrow: (e) => e instanceof ProtocolError });
      const args: ProxyArgs = params.arguments === undefined ? {} : { arguments: params.arguments };
      return await handler(args, ctx);
    } catch (e) {
      if (e instanceof ConfirmError) return toToolError(e);
      throw e;
    }
  };

  const factory = (): McpServer => {
    const server = new McpServer(PROXY_INFO, { ...confirmation.serverOptions, capabilities: { tools: { listChanged: true } } });
    server.server.setRequestHandler('tools/list', async (_request, ctx) => {
      try {
        const list = await fetchList(ctx.mcpReq.signal);
        return { tools: [...list.values()].filter((t) => decide(policy, t.name, t.annotations, confirmUnnamed) !== 'deny') };
      } catch (e) {
        throw asProtocolError(e);
      }
    });
    server.server.setRequestHandler('tools/call', (request, ctx) => callTool(server, request.params as { name: string; arguments?: Record<string, unknown> }, ctx));
    servers.add(server);
    const previous = server.server.onclose;
    server.server.onclose = () => {
      servers.delete(server);
      previous?.();
    };
    return server;
  };
  return { factory, servers };
}
