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
 *   guard's two rounds ({@link Confirmation.guard}), the state binding the upstream's identity
 *   (announced name and version; command, arguments and working directory, or URL, or the
 *   operator's `--upstream-id`), the roots relayed to it, the tool name, a digest of the tool's
 *   definition as listed at round 1, and the arguments.
 *   Before any of it (policy, listing, question), arguments whose RFC 8785 canonical JSON is
 *   longer than {@link ProxyOptions.maxArgumentBytes} are refused with `ERR_CONFIRM_BAD_ARGUMENT`:
 *   rendering a question costs time linear in their size, and nothing is forwarded.
 *   A confirmed call's arguments are checked against the tool's `inputSchema` (as listed now) before
 *   each round ({@link ArgumentChecker}: the SDK's ajv validator on a copy, no defaults or coercion,
 *   `pattern` and `patternProperties` skipped): a mismatch is refused with `ERR_CONFIRM_BAD_ARGUMENT`
 *   naming the first problem, nothing asked or forwarded.
 *   At round 2 the tool is listed again: gone → `ERR_CONFIRM_UPSTREAM_TOOL_GONE`, a different
 *   definition, identity or roots → asked again, the fresh question saying what changed; then
 *   the confirmed arguments are forwarded once and the upstream's result (or JSON-RPC error)
 *   returned as is. No list read across a `notifications/tools/list_changed` (one that arrived
 *   while it was being read) is used or cached ({@link ToolListView}).
 * - grants: a confirmed tool with an entry in the policy's `grants` is guarded with that entry: its
 *   question offers the grant, and a later call the grant covers is forwarded at once (one use
 *   taken). The guard's arguments are `{arguments: …}`, so the entry's matchers apply to the call's
 *   own arguments through the tool's `grantPin` / `grantAccepts` ({@link proxyGrantHooks}); the path
 *   matchers are lexical and pin no directory (the upstream's disk is not the proxy's to look at).
 *   A grant or plan slot is bound ({@link proxyBinding}) to the upstream's identity digest and the
 *   tool's definition digest: either changed, the call is asked.
 * - plans (`plans`): `tools/list` also lists the proxy's own `confirm_plan` (an upstream tool of
 *   that name is left out) and its calls are answered by {@link Confirmation.planGuard} over the
 *   upstream tools the policy confirms as listed now, never forwarded.
 *
 * The rest is relayed as it is, and offered only when the upstream offers it (its capabilities
 * at the handshake): `resources/list`, `resources/templates/list`, `resources/read`,
 * `prompts/list`, `prompts/get`, `completion/complete`, `logging/setLevel`; the upstream's
 * `list_changed` notifications for tools, resources and prompts; its `notifications/message`
 * (to a 2025-era client unsolicited, to a 2026-era client on the newest request in flight that
 * the proxy relays, filtered by that request's log level); progress and cancellation of every
 * relayed request; its `roots/list` requests to a 2025-era client that declared roots (the
 * 2026-07-28 revision has no server-to-client request, so a 2026-era client's roots cannot be
 * asked: the upstream gets a JSON-RPC error and keeps its own configuration).
 *
 * Served to several clients at once (`shared`, over HTTP), the upstream is one connection for all
 * of them, so what cannot be told apart per client is not relayed: its `roots/list` requests get a
 * JSON-RPC error ({@link ROOTS_SHARED}), its `notifications/message` go to no client, and
 * `logging/setLevel` is not offered (one principal must neither read another's upstream log
 * messages nor change the level for everyone).
 *
 * @module
 */
import {
  McpServer,
  ProtocolError,
  ProtocolErrorCode,
  type CallToolResult,
  type InputRequiredResult,
  type ListRootsResult,
  type ServerCapabilities,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { Tool } from '@modelcontextprotocol/client';
import canonicalize from 'canonicalize';
import { z } from 'zod';
import { DEFAULT_MAX_ARGUMENT_BYTES, MAX_LIST_MAX_AGE_SECONDS, PACKAGE_VERSION } from '../defaults.js';
import {
  ConfirmBadArgumentError,
  ConfirmError,
  ConfirmPolicyDeniedError,
  ConfirmUpstreamToolGoneError,
  toToolError,
} from '../errors.js';
import {
  ChangedBeforeActingError,
  OpenedState,
  type Confirmation,
  type ConfirmableTool,
} from '../guard/confirmation.js';
import { defaultOfferLine } from '../guard/grants.js';
import { PLAN_TOOL, PLAN_TOOL_CONFIG, PlanInput } from '../guard/planSpec.js';
import type { PlanEntry } from '../guard/plans.js';
import {
  argumentsAccepted,
  grantPolicyDigest,
  pinArguments,
  type GrantPolicy,
  type PinnedArguments,
} from '../grant/matchers.js';
import { canonicalDigest } from '../state/digest.js';
import { ArgumentChecker } from './argumentSchema.js';
import { decide, EMPTY_POLICY, namedDecision, type Policy } from './policy.js';
import { proxyPageValues, proxyQuestion, type QuestionChanges } from './question.js';
import { ToolListView } from './toolList.js';
import { definitionDigest, Upstream, type UpstreamRequestOptions } from './upstream.js';

/** The requests relayed to the upstream as they are, by the capability that offers them. */
const RELAYED: ReadonlyArray<
  readonly [method: string, capability: 'resources' | 'prompts' | 'completions' | 'logging']
> = [
  ['resources/list', 'resources'],
  ['resources/templates/list', 'resources'],
  ['resources/read', 'resources'],
  ['prompts/list', 'prompts'],
  ['prompts/get', 'prompts'],
  ['completion/complete', 'completions'],
  ['logging/setLevel', 'logging'],
];

/** Why the upstream's `roots/list` gets an error instead of the client's roots. */
export const ROOTS_NOT_DECLARED = 'mcp-confirm proxy: the client declared no roots';
export const ROOTS_SHARED =
  "mcp-confirm proxy: the proxy serves several clients over HTTP, so no one client's roots are relayed";
export const ROOTS_MODERN_CLIENT =
  'mcp-confirm proxy: the client speaks MCP 2026-07-28, which has no server-to-client requests, so its roots cannot be asked';

/**
 * What the proxy offers its client: what the upstream offers, restricted to what the proxy relays
 * (no resource subscriptions, no tasks, no experimental or extension capabilities).
 */
export function offeredCapabilities(upstream: ServerCapabilities | undefined, shared = false): ServerCapabilities {
  const offered: ServerCapabilities = {};
  if (upstream?.tools) offered.tools = { listChanged: upstream.tools.listChanged === true };
  if (upstream?.resources) offered.resources = { listChanged: upstream.resources.listChanged === true };
  if (upstream?.prompts) offered.prompts = { listChanged: upstream.prompts.listChanged === true };
  if (upstream?.completions) offered.completions = {};
  if (upstream?.logging && !shared) offered.logging = {};
  return offered;
}

/** The client's request params without its own `_meta` (the envelope and progress token are the proxy's to set toward the upstream). */
function withoutMeta(params: unknown): Record<string, unknown> | undefined {
  if (params === undefined || params === null || typeof params !== 'object') return undefined;
  const { _meta: _ignored, ...rest } = params as Record<string, unknown>;
  return rest;
}

/** Default bound on a call's arguments (their canonical JSON, UTF-8): 1 MiB (defined in `src/defaults.ts`, shared with the CLI). */
export { DEFAULT_MAX_ARGUMENT_BYTES };

/**
 * Checks a call's arguments against the size bound.
 *
 * @param args - the call's arguments as sent (undefined: none, always within the bound).
 * @param maxBytes - the most bytes (UTF-8) their RFC 8785 canonical JSON may have.
 * @throws {ConfirmBadArgumentError} `ERR_CONFIRM_BAD_ARGUMENT` naming their size and the bound.
 */
export function checkArgumentSize(args: Record<string, unknown> | undefined, maxBytes: number): void {
  if (args === undefined) return;
  const text = canonicalize(args);
  // No canonical form: left to the guard, which refuses it before asking.
  if (typeof text !== 'string') return;
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxBytes) {
    throw new ConfirmBadArgumentError(
      `the arguments are ${bytes} bytes as canonical JSON (RFC 8785), more than the proxy's bound of ${maxBytes} bytes (--max-argument-bytes)`,
    );
  }
}

/** The name and version the proxy announces to its client. */
export const PROXY_INFO = { name: 'mcp-confirm-proxy', version: PACKAGE_VERSION } as const;

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
  /**
   * Whether several clients share the upstream (serving over HTTP): then no roots, log messages
   * or log level are relayed (see the module documentation). Defaults to false (stdio: one client).
   */
  shared?: boolean;
  /**
   * The most bytes (UTF-8) of a call's arguments as RFC 8785 canonical JSON; a larger call is
   * refused (`ERR_CONFIRM_BAD_ARGUMENT`) before the policy, the listing or the question, and
   * nothing is forwarded. Defaults to {@link DEFAULT_MAX_ARGUMENT_BYTES} (1 MiB).
   */
  maxArgumentBytes?: number;
  /**
   * Plans: list the proxy's own tool `confirm_plan` and answer its calls
   * ({@link Confirmation.planGuard}) over the upstream tools the policy confirms. An upstream tool
   * of that name is then neither listed nor called (the caller refuses one at start-up). The
   * confirmation must have been created with `plans: true`, so that a later call looks for its
   * slot. Defaults to false.
   */
  plans?: boolean;
  /**
   * For an upstream that does not declare `tools.listChanged`: how long, in seconds, the decision
   * for a tool the policy does not name may be taken from a tool list read earlier instead of one
   * read for the call (`--list-max-age`). The age counts from when that listing was sent; a
   * `notifications/tools/list_changed`, if the upstream ever sends one, still ends it at once. A
   * confirmed call's round 1 and round 2 list afresh whatever the age, so its definition is still
   * sealed and compared as read then; a client's `tools/list` is read afresh too. An upstream
   * that declares `tools.listChanged` keeps its list cached until its next notice, whatever this is.
   * A whole number from 0 to {@link MAX_LIST_MAX_AGE_SECONDS} (3,600). Defaults to 0: the list is
   * read before every such decision.
   *
   * > [!WARNING]
   * > Within the age, a tool the upstream flipped from read-only to destructive (or a new tool
   * > whose annotations would be asked) is decided from the older list: the call passes unasked.
   */
  listMaxAgeSeconds?: number;
  /** The clock for {@link listMaxAgeSeconds}, in milliseconds. Defaults to `Date.now`. */
  now?: () => number;
}

export { MAX_LIST_MAX_AGE_SECONDS };

/** What round 1 seals about the upstream and the tool (the guard's fingerprint). */
export interface ProxyFingerprint {
  /** The upstream's `serverInfo` name and version (shown in the question). */
  server: string;
  version: string;
  /**
   * SHA-256 (RFC 8785) of the upstream's identity (`identityDigestOf`): its announced name and
   * version, and its command, arguments and working directory (real path), or its URL, or the
   * operator's `--upstream-id` instead of either.
   */
  upstream: string;
  /** The digest of the roots relayed to the upstream when asked ({@link Upstream.rootsDigest}). */
  roots: string;
  /** SHA-256 (RFC 8785) of the tool's definition as listed when asked ({@link definitionDigest}). */
  definition: string;
  /**
   * On a question asked again because the state's upstream or tool no longer matched: which
   * changed (the question then says so). Absent on a first question.
   */
  changed?: QuestionChanges;
}

/** Which of the upstream and the tool changed since the state `previous` was asked, compared with `now`. */
function changesSince(previous: unknown, now: ProxyFingerprint): QuestionChanges | undefined {
  if (!(previous instanceof OpenedState)) return undefined;
  const before = (previous.claims.fingerprint ?? {}) as Partial<ProxyFingerprint>;
  const tool = before.definition !== now.definition;
  const server = before.upstream !== now.upstream || before.roots !== now.roots;
  return tool || server ? { tool, upstream: server } : undefined;
}

/** The guard's arguments: the call's arguments as sent (undefined when the call had none). */
interface ProxyArgs {
  arguments?: Record<string, unknown>;
}

/**
 * What a grant or plan slot of the proxy is bound to besides the principal (and, over stdio, the
 * serving process): SHA-256 (RFC 8785) of the upstream's identity digest and the tool's definition
 * digest, as the fingerprint has them. A later call made when either differs is asked.
 */
export function proxyBinding(fp: Pick<ProxyFingerprint, 'upstream' | 'definition'>): string {
  return canonicalDigest({ upstream: fp.upstream, definition: fp.definition }, 'proxy binding');
}

/**
 * The guard's grant policy for an operator's grant entry. The guard's arguments are
 * `{arguments: {…}}` (the call's arguments under one key, as the digest has always covered them),
 * so its own matcher takes that key as `any`, with the entry's `maxUses` and `maxSeconds`; the
 * entry's matchers apply to the call's own arguments in the tool's `grantPin` and `grantAccepts`
 * ({@link proxyGrantHooks}).
 */
function guardGrantPolicy(entry: GrantPolicy): GrantPolicy {
  return { arguments: { arguments: 'any' }, maxUses: entry.maxUses, maxSeconds: entry.maxSeconds };
}

/** What a proxy grant pins (its scope's `pin`): the entry's digest and the call's arguments pinned under the entry. */
interface ProxyGrantPin {
  readonly policy: string;
  readonly arguments: PinnedArguments;
}

/**
 * The grant hooks of a confirmed upstream tool under the operator's entry: the call's arguments
 * pinned by the entry's matchers (none offered when they cannot be: e.g. a `same-directory` path
 * with a `..` segment), a later call accepted only under the same entry (its digest pinned) and
 * within the pinned matchers, and the generic offer line naming the call's own arguments.
 * The path matchers are lexical: the proxy cannot look at the upstream's disk, so no directory is pinned.
 */
function proxyGrantHooks(
  entry: GrantPolicy,
): Pick<ConfirmableTool<ProxyArgs, ProxyFingerprint>, 'grantPin' | 'grantAccepts' | 'grantOffer'> {
  const digest = grantPolicyDigest(entry);
  return {
    grantPin: (args) => {
      const pinned = pinArguments(entry, args.arguments ?? {});
      return pinned === undefined ? undefined : ({ policy: digest, arguments: pinned } satisfies ProxyGrantPin);
    },
    grantAccepts: (pin, args) => {
      if (typeof pin !== 'object' || pin === null) return false;
      const { policy, arguments: pinned } = pin as Partial<ProxyGrantPin>;
      return policy === digest && pinned !== undefined && argumentsAccepted(pinned, args.arguments ?? {});
    },
    grantOffer: (terms) =>
      defaultOfferLine({ ...terms, policy: entry, pinned: (terms.pin as ProxyGrantPin).arguments }),
  };
}

/** The JSON Schema of `confirm_plan`'s input (as the SDK lists a registered tool's), made once. */
let planInputSchema: Tool['inputSchema'] | undefined;
/** `confirm_plan` as the proxy lists it. */
function planToolListing(): Tool {
  planInputSchema ??= z.toJSONSchema(PlanInput, { target: 'draft-2020-12', io: 'input' }) as Tool['inputSchema'];
  return {
    name: PLAN_TOOL,
    title: PLAN_TOOL_CONFIG.title,
    description: PLAN_TOOL_CONFIG.description,
    inputSchema: planInputSchema,
    annotations: PLAN_TOOL_CONFIG.annotations,
  };
}

/** A refusal of a request that has no `isError` result (`tools/list`, relayed requests): JSON-RPC internal error with the coded text. */
function asProtocolError(e: unknown): unknown {
  if (e instanceof ConfirmError) return new ProtocolError(ProtocolErrorCode.InternalError, `[${e.code}] ${e.message}`);
  return e;
}

/**
 * Builds the proxy's per-connection server factory.
 *
 * @throws {RangeError} when {@link ProxyOptions.listMaxAgeSeconds} is not a whole number from 0 to
 *   {@link MAX_LIST_MAX_AGE_SECONDS}.
 * @returns `factory` for `serveStdio` (it reads the connection's era from the factory context),
 *   and `capabilities`, what the proxy offers (see {@link offeredCapabilities}).
 */
export function createProxy(options: ProxyOptions): {
  factory: (context?: { era?: 'legacy' | 'modern' }) => McpServer;
  capabilities: ServerCapabilities;
} {
  const { confirmation, upstream } = options;
  const policy = options.policy ?? EMPTY_POLICY;
  const confirmUnnamed = options.confirmUnnamed ?? false;
  const shared = options.shared ?? false;
  const maxArgumentBytes = options.maxArgumentBytes ?? DEFAULT_MAX_ARGUMENT_BYTES;
  const plans = options.plans ?? false;
  const listMaxAgeSeconds = options.listMaxAgeSeconds ?? 0;
  if (!Number.isInteger(listMaxAgeSeconds) || listMaxAgeSeconds < 0 || listMaxAgeSeconds > MAX_LIST_MAX_AGE_SECONDS)
    throw new RangeError(`listMaxAgeSeconds must be a whole number of seconds from 0 to ${MAX_LIST_MAX_AGE_SECONDS}`);
  /** The guard's grant policy per tool with a grant entry. */
  const guardGrants = new Map(
    [...(policy.grants ?? new Map<string, GrantPolicy>())].map(([t, e]) => [t, guardGrantPolicy(e)]),
  );
  const capabilities = offeredCapabilities(upstream.client.getServerCapabilities(), shared);
  const argumentChecker = new ArgumentChecker();
  /** Each live connection: its era and the relayed requests in flight (newest last), for log relays. */
  const servers = new Map<McpServer, { era: 'legacy' | 'modern'; inFlight: ServerContext[] }>();

  // The list: cached while the upstream's list_changed notifications keep it current (when it
  // declares them), or for the operator's maximum age; never kept across a notice that arrived while
  // it was read, read once at a time (see ToolListView). fetchList reads one started after the call asked.
  const toolList = new ToolListView(upstream, {
    cache: capabilities.tools?.listChanged === true,
    maxAgeMs: listMaxAgeSeconds * 1000,
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  const fetchList = (signal?: AbortSignal): Promise<Map<string, Tool>> => toolList.tools({ fresh: true, signal });
  upstream.onListChanged((kind) => {
    if (kind === 'tools') toolList.changed();
    if (capabilities[kind]?.listChanged !== true) return;
    for (const s of servers.keys()) {
      if (!s.isConnected()) continue;
      const sent =
        kind === 'tools'
          ? s.sendToolListChanged()
          : kind === 'resources'
            ? s.sendResourceListChanged()
            : s.sendPromptListChanged();
      void Promise.resolve(sent).catch(() => {});
    }
  });
  // The upstream's log messages: unsolicited to a 2025-era client (the SDK applies its setLevel),
  // on the newest relayed request in flight to a 2026-era client (the request's own log level applies).
  upstream.onLog((params) => {
    if (shared) return;
    for (const [s, conn] of servers) {
      if (!s.isConnected()) continue;
      if (conn.era === 'legacy') {
        void s.server.sendLoggingMessage(params).catch(() => {});
      } else {
        const ctx = conn.inFlight.at(-1);
        if (ctx) void ctx.mcpReq.log(params.level, params.data, params.logger).catch(() => {});
      }
    }
  });

  /**
   * The guard's view of one confirmed tool, as listed in generation `listedIn` of the tool list.
   * What the state binds (the upstream's identity, the relayed roots, the tool's definition) is
   * compared at round 2 before anything is spent ({@link ConfirmableTool.unchanged}) and once more
   * right before the call is written to the upstream, with no await in between ({@link Upstream.callTool}):
   * a roots answer or a tools/list_changed notice that arrived while the jti was being spent or the
   * "confirmed" line written makes the guard ask again ({@link ChangedBeforeActingError}), nothing forwarded.
   */
  const confirmable = (
    server: McpServer,
    name: string,
    listed: Tool,
    listedIn: number,
  ): ConfirmableTool<ProxyArgs, ProxyFingerprint> => {
    const entry = policy.grants?.get(name);
    let tool = listed;
    let generation = listedIn;
    /** Whether everything the fingerprint binds is still what the upstream has now, as far as the proxy knows. */
    const bound = (fp: ProxyFingerprint): boolean =>
      fp.upstream === upstream.identityDigest &&
      fp.roots === upstream.rootsDigest &&
      fp.definition === definitionDigest(tool) &&
      // A list_changed notice since the listing: the definition may have changed (the notice does not say which tool).
      toolList.current === generation;
    return {
      fingerprint: async (_args, ctx) => {
        // Asked (again) after a notice since the listing: the question is about the tool as listed now.
        if (toolList.current !== generation) {
          const now = await toolList.read({ fresh: true, signal: ctx.mcpReq.signal });
          const current = now.tools.get(name);
          if (current === undefined) throw new ConfirmUpstreamToolGoneError();
          tool = current;
          generation = now.generation;
        }
        const fp: ProxyFingerprint = {
          server: upstream.identity.name,
          version: upstream.identity.version,
          upstream: upstream.identityDigest,
          roots: upstream.rootsDigest,
          definition: definitionDigest(tool),
        };
        // Asked again from round 2 (a state came along): say what changed since that question.
        const changed = changesSince(ctx.mcpReq.requestState<unknown>(), fp);
        return changed ? { ...fp, changed } : fp;
      },
      question: (args, fp) => proxyQuestion(name, args.arguments, { name: fp.server, version: fp.version }, fp.changed),
      unchanged: (_args, fp) => bound(fp),
      act: (args, { ctx, fingerprint }) =>
        forward(server, name, args.arguments, ctx, () => {
          if (!bound(fingerprint)) throw new ChangedBeforeActingError();
        }),
      nothingDone: 'nothing was forwarded to the upstream server',
      pageValues: (args) => proxyPageValues(args.arguments),
      // A grant or plan slot serves only this upstream and this definition of the tool.
      binding: (_args, fp) => proxyBinding(fp),
      ...(entry === undefined ? {} : proxyGrantHooks(entry)),
    };
  };

  /**
   * A call of the proxy's `confirm_plan` (with `plans`): the plan's input checked against its
   * schema, then {@link Confirmation.planGuard} over the tools listed now that the policy confirms,
   * each the confirmable a call of it gets, its arguments checked against its schema first (round 1).
   * A planned call's arguments are the guard's `{arguments: …}` with the object listed (`{}` when
   * the plan gives none), so the later call must send exactly that object.
   */
  const planCall = async (
    server: McpServer,
    input: Record<string, unknown> | undefined,
    ctx: ServerContext,
  ): Promise<CallToolResult | InputRequiredResult> => {
    const parsed = PlanInput.safeParse(input ?? {});
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue && issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
      throw new ConfirmBadArgumentError(
        `the plan does not match ${PLAN_TOOL}'s input schema (${where}${issue?.message ?? 'invalid'})`,
      );
    }
    const listing = await toolList.read({ fresh: true, signal: ctx.mcpReq.signal });
    const entryOf = (tool: string): PlanEntry | undefined => {
      if (tool === PLAN_TOOL) return undefined;
      const listed = listing.tools.get(tool);
      if (listed === undefined || decide(policy, tool, listed.annotations, confirmUnnamed) !== 'confirm')
        return undefined;
      const base = confirmable(server, tool, listed, listing.generation);
      const checked: ConfirmableTool<ProxyArgs, ProxyFingerprint> = {
        ...base,
        // Never plan a call the upstream's own schema refuses (as a call of it is never asked).
        // A plan asked again carries the plan's state, not this call's: nothing to say changed.
        fingerprint: async (args, c) => {
          await argumentChecker.check(listed, args.arguments);
          const { changed: _notThisCall, ...fp } = await base.fingerprint!(args, c);
          return fp;
        },
      };
      return {
        tool: checked as PlanEntry['tool'],
        parse: (value) =>
          typeof value === 'object' && value !== null && !Array.isArray(value)
            ? { args: { arguments: value as Record<string, unknown> } satisfies ProxyArgs }
            : undefined,
      };
    };
    return confirmation.planGuard(server, entryOf)(parsed.data, ctx);
  };

  /** The client's cancellation, and its progress token for the upstream's progress, of one relayed request. */
  const relayOptions = (ctx: ServerContext): UpstreamRequestOptions => {
    const token = ctx.mcpReq._meta?.progressToken;
    return {
      signal: ctx.mcpReq.signal,
      ...(token === undefined
        ? {}
        : {
            onprogress: (p) => {
              void ctx.mcpReq
                .notify({ method: 'notifications/progress', params: { progressToken: token, ...p } })
                .catch(() => {});
            },
          }),
    };
  };

  /** Runs one relayed request with its context registered as in flight (for log relays). */
  const inFlight = async <T>(server: McpServer, ctx: ServerContext, run: () => Promise<T>): Promise<T> => {
    const list = servers.get(server)?.inFlight;
    list?.push(ctx);
    try {
      return await run();
    } finally {
      if (list) list.splice(list.indexOf(ctx), 1);
    }
  };

  /** Forwards one call; `stillBound` (a confirmed call's last check) runs right before it is written, no await between. */
  const forward = (
    server: McpServer,
    name: string,
    args: Record<string, unknown> | undefined,
    ctx: ServerContext,
    stillBound?: () => void,
  ): Promise<CallToolResult> =>
    inFlight(server, ctx, () => upstream.callTool(name, args, relayOptions(ctx), stillBound));

  const callTool = async (
    server: McpServer,
    params: { name: string; arguments?: Record<string, unknown> },
    ctx: ServerContext,
  ): Promise<CallToolResult | InputRequiredResult> => {
    const { name } = params;
    try {
      // Before anything is rendered (the question's cost is linear in the arguments' size).
      checkArgumentSize(params.arguments, maxArgumentBytes);
      upstream.assertUp();
      // The proxy's own plans tool (an upstream tool of that name is never called with plans on).
      if (plans && name === PLAN_TOOL) return await planCall(server, params.arguments, ctx);
      // A tool the policy names needs no annotations; an unnamed one is decided from the current list.
      let decision = namedDecision(policy, name);
      // Without a cache the decision's listing started after the call asked: a confirmed call uses it too.
      let fresh: { tools: Map<string, Tool>; generation: number } | undefined;
      if (decision === undefined) {
        const read = await toolList.read({ signal: ctx.mcpReq.signal });
        if (!toolList.caches) fresh = read;
        decision = decide(policy, name, read.tools.get(name)?.annotations, confirmUnnamed);
      }
      if (decision === 'deny') throw new ConfirmPolicyDeniedError();
      if (decision === 'allow') return await forward(server, name, params.arguments, ctx);
      // Confirm: the definition as listed now (round 1: sealed; round 2: compared), never from a cache.
      const listing =
        fresh !== undefined && fresh.generation === toolList.current
          ? fresh
          : await toolList.read({ fresh: true, signal: ctx.mcpReq.signal });
      const tool = listing.tools.get(name);
      if (tool === undefined) throw new ConfirmUpstreamToolGoneError();
      // Never ask about a call the upstream's own schema refuses (pattern keywords skipped: see argumentSchema.ts).
      await argumentChecker.check(tool, params.arguments);
      const grant = guardGrants.get(name);
      const handler = confirmation.guard(server, name, confirmable(server, name, tool, listing.generation), {
        rethrow: (e) => e instanceof ProtocolError,
        ...(grant === undefined ? {} : { grant }),
      });
      const args: ProxyArgs = params.arguments === undefined ? {} : { arguments: params.arguments };
      const result = await handler(args, ctx);
      // The proxy's own answers (declined, not confirmed) carry no structured content. For a tool
      // that declares an outputSchema, a client refuses a non-error result without it (spec
      // 2025-06-18+, server/tools "Output Schema"), so they are marked isError: the call produced no output.
      if (
        tool.outputSchema !== undefined &&
        !('inputRequests' in result) &&
        result.structuredContent === undefined &&
        result.isError !== true
      ) {
        return { ...result, isError: true };
      }
      return result;
    } catch (e) {
      if (e instanceof ConfirmError) return toToolError(e);
      throw e;
    }
  };

  // Shared by several clients (HTTP): no one client's roots are the upstream's.
  if (shared) {
    upstream.setRootsSource(async () => {
      throw new ProtocolError(ProtocolErrorCode.MethodNotFound, ROOTS_SHARED);
    });
  }
  // The upstream's roots/list: answered by the first connection (stdio serves one), once known.
  let rootsConnection: { server: McpServer; era: 'legacy' | 'modern' } | undefined;
  const clientRoots = async (): Promise<ListRootsResult> => {
    const conn = rootsConnection;
    if (conn?.era === 'modern') throw new ProtocolError(ProtocolErrorCode.MethodNotFound, ROOTS_MODERN_CLIENT);
    if (conn === undefined || !conn.server.isConnected())
      throw new ProtocolError(ProtocolErrorCode.InternalError, 'mcp-confirm proxy: no client is connected');
    if (!conn.server.server.getClientCapabilities()?.roots)
      throw new ProtocolError(ProtocolErrorCode.MethodNotFound, ROOTS_NOT_DECLARED);
    return conn.server.server.listRoots();
  };

  const factory = (context?: { era?: 'legacy' | 'modern' }): McpServer => {
    const era = context?.era === 'modern' ? 'modern' : 'legacy';
    const server = new McpServer(PROXY_INFO, { ...confirmation.serverOptions, capabilities });
    if (capabilities.tools) {
      server.server.setRequestHandler('tools/list', async (_request, ctx) => {
        try {
          const list = await fetchList(ctx.mcpReq.signal);
          const tools = [...list.values()].filter(
            (t) => decide(policy, t.name, t.annotations, confirmUnnamed) !== 'deny' && !(plans && t.name === PLAN_TOOL),
          );
          // With plans, the proxy's own confirm_plan (an upstream tool of that name is not listed).
          return { tools: plans ? [...tools, planToolListing()] : tools };
        } catch (e) {
          throw asProtocolError(e);
        }
      });
      server.server.setRequestHandler('tools/call', (request, ctx) =>
        callTool(server, request.params as { name: string; arguments?: Record<string, unknown> }, ctx),
      );
    }
    for (const [method, capability] of RELAYED) {
      if (!capabilities[capability]) continue;
      server.server.setRequestHandler(
        method as 'resources/list',
        (async (request: { params?: unknown }, ctx: ServerContext) => {
          try {
            return await inFlight(server, ctx, () =>
              upstream.relay(method, withoutMeta(request.params), relayOptions(ctx)),
            );
          } catch (e) {
            throw asProtocolError(e);
          }
        }) as never,
      );
    }
    // A 2025-era client's changed roots: the upstream asks for them again.
    server.server.setNotificationHandler('notifications/roots/list_changed', () => {
      void upstream.rootsChanged().catch(() => {});
    });
    servers.set(server, { era, inFlight: [] });
    if (rootsConnection === undefined && !shared) {
      rootsConnection = { server, era };
      if (era === 'modern') upstream.setRootsSource(clientRoots);
      else {
        // The client's capabilities are known once it has initialized.
        const previousInit = server.server.oninitialized;
        server.server.oninitialized = () => {
          upstream.setRootsSource(clientRoots);
          previousInit?.();
        };
      }
    }
    const previous = server.server.onclose;
    server.server.onclose = () => {
      servers.delete(server);
      previous?.();
    };
    return server;
  };
  return { factory, capabilities };
}
