/**
 * The two-round confirmation flow for any tool (MCP spec 2026-07-28,
 * basic/patterns/mrtr; client/elicitation form mode).
 *
 * The SDK accepts the `requestState` verify hook only in the `McpServer`
 * constructor, and the hook sees every state on that server: it refuses any
 * state this module did not seal, so another MRTR tool on the same server
 * cannot carry a `requestState` of its own. So this module hands out both
 * halves together: {@link Confirmation.serverOptions} for the
 * constructor and {@link Confirmation.register} for each confirmed tool.
 * Create the confirmation (its keys and ledger) once, outside the
 * `serveStdio` / `createMcpHandler` factory, which runs per connection or
 * per request.
 *
 * Round 1 (no state): check the client can answer a form elicitation, let
 * the tool inspect the resource (and refuse before asking), render the
 * question, issue a `jti` in the ledger, seal the state, answer
 * `input_required`. Round 2 (state opened by the hook), in this order:
 * tool and argument digests match (else `ERR_CONFIRM_MISMATCH`, the `jti` is
 * not spent); the question rendered now matches the sealed digest (else the
 * human is asked again); the `jti` is spent atomically (else
 * `ERR_CONFIRM_SPENT` / `_UNKNOWN` / `_EXPIRED` / `_LEDGER_UNAVAILABLE`); the
 * answer must be `accept` with `confirmed === true` (decline, cancel or
 * anything else: nothing is done; no answer: asked again); then the tool
 * acts, re-checking its resource first.
 *
 * > [!WARNING]
 * > A form elicitation proves only that the *client* said yes (spec,
 * > client/elicitation, "Security Considerations"). A compromised or
 * > auto-accepting client can approve anything it is asked. This layer makes
 * > the approval exact, fresh and single-use; it cannot make it human.
 *
 * @module
 */
import {
  CLIENT_CAPABILITIES_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  inputRequired,
  inputResponse,
  type CallToolResult,
  type InputRequiredResult,
  type McpServer,
  type RegisteredTool,
  type ServerContext,
  type ToolAnnotations,
} from '@modelcontextprotocol/server';
import type { z } from 'zod';
import {
  ConfirmError,
  ConfirmExpiredError,
  ConfirmLedgerUnavailableError,
  ConfirmMismatchError,
  ConfirmNoElicitationError,
  ConfirmSpentError,
  ConfirmUnknownError,
  toToolError,
} from '../errors.js';
import type { Ledger, SpendOutcome } from '../ledger/ledger.js';
import { MemoryLedger } from '../ledger/memoryLedger.js';
import { canonicalDigest } from '../state/digest.js';
import { KeyRing } from '../state/keyRing.js';
import { MAX_TTL_SECONDS, Sealer, StateRefusedError, type ConfirmClaims } from '../state/sealer.js';

/** The key under which the confirmation is asked in `inputRequests` (and answered in `inputResponses`). */
export const CONFIRM_KEY = 'confirm';

/**
 * The form every confirmation asks: one required boolean `confirmed`
 * (a flat object of primitives, as form mode requires: spec 2026-07-28, client/elicitation).
 */
export const CONFIRM_SCHEMA: {
  type: 'object';
  properties: { confirmed: { type: 'boolean'; title: string; description: string } };
  required: string[];
} = {
  type: 'object',
  properties: {
    confirmed: {
      type: 'boolean',
      title: 'Confirm',
      description: 'Set to true to confirm exactly the action described above.',
    },
  },
  required: ['confirmed'],
};

/** Something worth a line on stderr: what was asked, refused, confirmed. Never carries secrets. */
export type ConfirmEvent =
  | { type: 'asked'; tool: string }
  | { type: 'asked-again'; tool: string; reason: 'no-answer' | 'question-changed' | 'resource-changed' }
  | { type: 'refused'; tool: string; code: string }
  | { type: 'state-refused'; reason: string }
  | { type: 'not-confirmed'; tool: string; action: string }
  | { type: 'confirmed'; tool: string }
  | { type: 'internal-error'; tool: string; error: unknown };

/** Options of {@link createConfirmation}. */
export interface ConfirmationOptions {
  /** The key ring. Defaults to one random key for this process ({@link KeyRing.random}). */
  keys?: KeyRing;
  /** The `aud` claim: this server's name. Defaults to `'mcp-confirm'`. */
  audience?: string;
  /** Lifetime of a question, in whole seconds, 1 to 86,400. Defaults to 300 (5 minutes). */
  ttlSeconds?: number;
  /** Where outstanding confirmations live. Defaults to a new {@link MemoryLedger} (one process only). */
  ledger?: Ledger;
  /**
   * Who is asking, from the request context. Defaults to {@link defaultPrincipal}:
   * over stdio the constant `'local'`; over HTTP the OAuth client id and `extra.sub`.
   */
  principal?: (ctx: ServerContext) => string;
  /** The clock, Unix milliseconds. Defaults to `Date.now`. */
  now?: () => number;
  /**
   * Diagnostics (write them to stderr, never stdout). Defaults to writing only
   * internal errors (anything your `fingerprint`, `question` or `act` threw that is
   * not a {@link ConfirmError}) to stderr, since the client is told only
   * "Internal error in the confirmation layer".
   */
  onEvent?: (event: ConfirmEvent) => void;
}

/** What {@link ConfirmableTool.act} receives besides the arguments. */
export interface ActContext<F> {
  /** The fingerprint captured in round 1, as sealed in the state (authentic). */
  fingerprint: F;
  /** The SDK's request context. */
  ctx: ServerContext;
}

/** How a tool plugs into the flow. `A` is its parsed arguments, `F` its fingerprint (JSON). */
export interface ConfirmableTool<A, F = null> {
  /**
   * Round 1, before asking: check the arguments and the resource, and capture
   * the resource's identity. Throw a {@link ConfirmError} to refuse before
   * asking. The value is sealed in the state (it must survive `JSON`
   * round-trip) and given back to {@link question} and {@link act}.
   * Defaults to `null`.
   */
  fingerprint?(args: A, ctx: ServerContext): F | Promise<F>;
  /**
   * The question the human reads. Must be a pure function of its inputs: in
   * round 2 it is rendered again from the same arguments and the sealed
   * fingerprint, and a different text means the human is asked again. Build
   * it with the `question` template so untrusted values are rendered safely.
   */
  question(args: A, fingerprint: F): string;
  /**
   * Round 2, after the digests matched and before the `jti` is spent or the
   * answer read: whether the resource captured in round 1 is still the one
   * the human was asked about. `false` asks the human again (a fresh
   * question and state; the old `jti` stays unspent and expires). Throw a
   * {@link ConfirmError} to refuse. Defaults to always `true` (tools that
   * re-check in {@link act} instead, like `delete_file`). The proxy uses it to
   * compare the upstream's identity and the tool's definition digest sealed in
   * round 1 with the current ones. It runs on every round-2 attempt, also for a
   * state that will then be found spent, so it must have no side effects.
   */
  unchanged?(args: A, fingerprint: F, ctx: ServerContext): boolean | Promise<boolean>;
  /**
   * Round 2, after an accepted, unspent, matching confirmation: re-check the
   * resource against the fingerprint, then act. Throw a {@link ConfirmError}
   * to refuse.
   */
  act(args: A, context: ActContext<F>): CallToolResult | Promise<CallToolResult>;
  /** Tail of the sentence when nothing is done, e.g. `'nothing was deleted'`. Defaults to `'nothing was done'`. */
  nothingDone?: string;
}

/** The tool's registration, as for `McpServer.registerTool`, with a required zod object schema. */
export interface ConfirmableToolConfig<S extends z.ZodObject> {
  title?: string;
  description?: string;
  /** Parsed arguments are what the digest covers: use a strict object without transforms or defaults. */
  inputSchema: S;
  annotations?: ToolAnnotations;
}

/** The two halves handed out together. */
export interface Confirmation {
  /** Spread into the `McpServer` constructor's options: `{ requestState: { verify } }`. */
  readonly serverOptions: { requestState: { verify: (state: string, ctx: ServerContext) => Promise<OpenedState> } };
  /**
   * Registers a tool whose every call is confirmed by a human first.
   *
   * @returns the SDK's `RegisteredTool`.
   */
  register<S extends z.ZodObject, F>(
    server: McpServer,
    name: string,
    config: ConfirmableToolConfig<S>,
    tool: ConfirmableTool<z.infer<S>, F>,
  ): RegisteredTool;
  /**
   * The generic entry point under {@link register}: the two-round handler of
   * one tool name, for servers that answer `tools/call` themselves (the
   * proxy). The handler takes the tool's arguments (any JSON value the
   * digest covers) and the request context, and answers the tool result or
   * `input_required`. Refusals are `isError` results as with `register`.
   *
   * @param server - the `McpServer` whose client capabilities decide whether it can be asked.
   * @param name - the tool name sealed in the state.
   * @param tool - the question, fingerprint, re-check and action.
   * @param options.rethrow - errors thrown by the tool that must reach the SDK
   *   as they are (e.g. a JSON-RPC `ProtocolError` relayed from elsewhere)
   *   instead of becoming an `isError` result.
   * @returns the handler; `server` must have been built with {@link serverOptions}
   *   (the `requestState` verify hook), else no round 2 ever opens and every call is asked.
   *   Round 2 order: state opened → tool and argument digests (`ERR_CONFIRM_MISMATCH`) →
   *   question digest → {@link ConfirmableTool.unchanged} → `jti` spent → answer → `act`.
   * @throws whatever `options.rethrow` selects; every other error is an `isError` result
   *   (a {@link ConfirmError} with its `ERR_CONFIRM_*` code, anything else the generic internal error).
   */
  guard<A, F>(
    server: McpServer,
    name: string,
    tool: ConfirmableTool<A, F>,
    options?: { rethrow?: (error: unknown) => boolean },
  ): (args: A, ctx: ServerContext) => Promise<CallToolResult | InputRequiredResult>;
  readonly sealer: Sealer;
  readonly ledger: Ledger;
  readonly audience: string;
  readonly ttlSeconds: number;
}

/** The value the verify hook hands to the handler: the opened claims, branded by class. */
export class OpenedState {
  constructor(readonly claims: ConfirmClaims) {}
}

/**
 * The default principal: `'local'` without HTTP auth (stdio: the user who
 * started the server), else a JSON array of the OAuth `clientId` and
 * `authInfo.extra.sub` when it is a string.
 *
 * > [!WARNING]
 * > Over stdio every caller is the same principal `'local'`: the binding
 * > separates nobody. Over HTTP without an auth layer, the same holds.
 */
export function defaultPrincipal(ctx: ServerContext): string {
  const auth = ctx.http?.authInfo;
  if (!auth) return 'local';
  const sub = (auth.extra as { sub?: unknown } | undefined)?.sub;
  return JSON.stringify(['oauth', auth.clientId, typeof sub === 'string' ? sub : null]);
}

/** The default diagnostics sink: internal errors to stderr, nothing else. */
function reportInternalErrors(event: ConfirmEvent): void {
  if (event.type !== 'internal-error') return;
  const e = event.error;
  process.stderr.write(`mcp-confirm: internal error in ${event.tool}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
}

function isModernRequest(ctx: ServerContext): boolean {
  return (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[PROTOCOL_VERSION_META_KEY] !== undefined;
}

/** Whether the client declared form elicitation (an empty `elicitation: {}` implies form, as the SDK reads it). */
function canElicitForm(server: McpServer, ctx: ServerContext): boolean {
  const fromEnvelope = (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES_META_KEY] as
    | { elicitation?: { form?: unknown; url?: unknown } }
    | undefined;
  const caps = isModernRequest(ctx) ? fromEnvelope : server.server.getClientCapabilities();
  const elicitation = caps?.elicitation;
  if (elicitation === undefined || elicitation === null || typeof elicitation !== 'object') return false;
  return elicitation.form !== undefined || elicitation.url === undefined;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Creates the confirmation layer: keys, ledger, the verify hook and the tool wrapper.
 *
 * @param options - see {@link ConfirmationOptions}.
 * @returns the {@link Confirmation}.
 * @throws {RangeError} when `ttlSeconds` is not a whole number from 1 to 86,400 (0, negative, `Infinity`, `NaN`, fractional, over a day).
 * @throws {TypeError} when `audience` is empty.
 * @example
 * const confirmation = await createConfirmation({ audience: 'files' });
 * serveStdio(() => {
 *   const server = new McpServer({ name: 'files', version: '1.0.0' }, { ...confirmation.serverOptions });
 *   confirmation.register(server, 'delete_file', { inputSchema: z.strictObject({ path: z.string() }) }, {
 *     question: (args) => question`Permanently delete ${args.path}?`,
 *     act: async (args) => { await rm(args.path); return { content: [{ type: 'text', text: 'deleted' }] }; },
 *   });
 *   return server;
 * });
 */
export async function createConfirmation(options: ConfirmationOptions = {}): Promise<Confirmation> {
  const audience = options.audience ?? 'mcp-confirm';
  const ttlSeconds = options.ttlSeconds ?? 300;
  // Validate cheap options before the async key import.
  if (!Number.isSafeInteger(ttlSeconds) || ttlSeconds <= 0 || ttlSeconds > MAX_TTL_SECONDS) {
    throw new RangeError(`ttlSeconds must be a whole number of seconds from 1 to ${MAX_TTL_SECONDS}, got ${String(ttlSeconds)}`);
  }
  const keys = options.keys ?? (await KeyRing.random());
  const sealer = new Sealer({ keys, audience, ttlSeconds });
  const ledger = options.ledger ?? new MemoryLedger();
  const principalOf = options.principal ?? defaultPrincipal;
  const now = options.now ?? Date.now;
  const onEvent = options.onEvent ?? reportInternalErrors;
  const emit = (event: ConfirmEvent): void => {
    try {
      onEvent(event);
    } catch {
      // A diagnostics sink must never change the outcome.
    }
  };

  // Opened synchronously (node:crypto, no thread-pool hop); the hook keeps its Promise type.
  const verify = async (state: string, ctx: ServerContext): Promise<OpenedState> => {
    try {
      return new OpenedState(sealer.openSync(state, { principal: principalOf(ctx), nowMs: now() }));
    } catch (e) {
      emit({ type: 'state-refused', reason: e instanceof StateRefusedError ? e.reason : 'error' });
      throw e;
    }
  };

  function guard<A, F>(
    server: McpServer,
    name: string,
    tool: ConfirmableTool<A, F>,
    guardOptions: { rethrow?: (error: unknown) => boolean } = {},
  ): (args: A, ctx: ServerContext) => Promise<CallToolResult | InputRequiredResult> {
    const nothingDone = tool.nothingDone ?? 'nothing was done';

    const renderAsk = (args: A, fingerprint: F) => {
      const message = tool.question(args, fingerprint);
      return { message, requestedSchema: CONFIRM_SCHEMA, digest: canonicalDigest({ message, requestedSchema: CONFIRM_SCHEMA }, 'question') };
    };

    const ask = async (args: A, ctx: ServerContext): Promise<InputRequiredResult> => {
      // The client must be able to answer before a jti is issued, so a refused ask leaks no ledger slot.
      if (!canElicitForm(server, ctx)) {
        // 2026-07-28: a stateless ask lets the SDK answer the spec's -32021 with requiredCapabilities.
        if (isModernRequest(ctx)) {
          return inputRequired({
            inputRequests: { [CONFIRM_KEY]: inputRequired.elicit({ message: 'This tool needs a human confirmation.', requestedSchema: CONFIRM_SCHEMA }) },
          });
        }
        throw new ConfirmNoElicitationError();
      }
      const fingerprint = tool.fingerprint ? await tool.fingerprint(args, ctx) : (null as F);
      const argsDigest = canonicalDigest(args);
      const { message, requestedSchema, digest } = renderAsk(args, fingerprint);
      const nowMs = now();
      const { state, claims } = sealer.sealSync({
        tool: name,
        args: argsDigest,
        question: digest,
        fingerprint,
        principal: principalOf(ctx),
        nowMs,
      });
      await issue(claims, nowMs);
      emit({ type: 'asked', tool: name });
      return inputRequired({
        inputRequests: { [CONFIRM_KEY]: inputRequired.elicit({ message, requestedSchema }) },
        requestState: state,
      });
    };

    const issue = async (claims: ConfirmClaims, nowMs: number): Promise<void> => {
      try {
        await ledger.issue(claims.jti, claims.sub, claims.exp * 1000, nowMs);
      } catch (e) {
        if (e instanceof ConfirmError) throw e;
        throw new ConfirmLedgerUnavailableError({ cause: e });
      }
    };

    const spend = async (jti: string, nowMs: number): Promise<void> => {
      let outcome: SpendOutcome;
      try {
        outcome = await ledger.spend(jti, nowMs);
      } catch (e) {
        if (e instanceof ConfirmError) throw e;
        throw new ConfirmLedgerUnavailableError({ cause: e });
      }
      switch (outcome) {
        case 'spent':
          return;
        case 'already-spent':
          throw new ConfirmSpentError();
        case 'expired':
          throw new ConfirmExpiredError();
        case 'unknown':
          throw new ConfirmUnknownError(
            ledger.shared
              ? ''
              : 'This server keeps its ledger in process memory, so a confirmation asked by one server process cannot be redeemed on another: give every process the same keys and a shared ledger (SqliteLedger on one host, RedisLedger across hosts; with the mcp-confirm command: --key-file PATH and --ledger sqlite:PATH or --ledger redis://HOST:PORT).',
          );
        default:
          // Anything but a clean, known answer fails closed.
          throw new ConfirmLedgerUnavailableError();
      }
    };

    const flow = async (args: A, ctx: ServerContext): Promise<CallToolResult | InputRequiredResult> => {
      const opened = ctx.mcpReq.requestState<unknown>();
      // No verified state: this is round 1, whatever inputResponses came along. Ask.
      if (!(opened instanceof OpenedState)) return ask(args, ctx);
      const claims = opened.claims;
      // 1. The state serves only the exact call it was minted for; a mismatch leaves the jti unspent.
      if (claims.tool !== name || claims.args !== canonicalDigest(args)) throw new ConfirmMismatchError();
      // 2. The question rendered now must be the one the human saw; if the wording or rules changed, ask again.
      if (renderAsk(args, claims.fingerprint as F).digest !== claims.question) {
        emit({ type: 'asked-again', tool: name, reason: 'question-changed' });
        return ask(args, ctx);
      }
      // 2b. The resource the human was asked about must still be the same one; if not, ask again.
      if (tool.unchanged && !(await tool.unchanged(args, claims.fingerprint as F, ctx))) {
        emit({ type: 'asked-again', tool: name, reason: 'resource-changed' });
        return ask(args, ctx);
      }
      // 3. Spend the jti atomically before reading the answer: accept, decline and cancel all use it up.
      await spend(claims.jti, now());
      // 4. Only an explicit accept with confirmed === true (a boolean) goes on; no answer asks again.
      // Only an own entry counts: a "__proto__" key in the client's JSON can become an inherited one.
      const responses = ctx.mcpReq.inputResponses;
      const answer = responses !== undefined && Object.hasOwn(responses, CONFIRM_KEY) ? inputResponse(responses, CONFIRM_KEY) : ({ kind: 'missing' } as const);
      if (answer.kind === 'missing') {
        emit({ type: 'asked-again', tool: name, reason: 'no-answer' });
        return ask(args, ctx);
      }
      const confirmed =
        answer.kind === 'elicit' &&
        answer.action === 'accept' &&
        isPlainObject(answer.content) &&
        Object.hasOwn(answer.content, 'confirmed') &&
        answer.content.confirmed === true;
      if (!confirmed) {
        const action = answer.kind === 'elicit' ? (['accept', 'decline', 'cancel'].includes(answer.action) ? answer.action : 'other') : 'other';
        emit({ type: 'not-confirmed', tool: name, action });
        const why =
          action === 'decline' ? 'You declined' : action === 'cancel' ? 'You cancelled' : action === 'accept' ? 'You did not confirm' : 'No valid confirmation was given';
        return { content: [{ type: 'text', text: `${why}; ${nothingDone}.` }] };
      }
      // 5. Act: the tool re-checks its resource against the sealed fingerprint first.
      const result = await tool.act(args, { fingerprint: claims.fingerprint as F, ctx });
      emit({ type: 'confirmed', tool: name });
      return result;
    };

    const handler = async (args: A, ctx: ServerContext): Promise<CallToolResult | InputRequiredResult> => {
      try {
        return await flow(args, ctx);
      } catch (e) {
        if (e instanceof ConfirmError) emit({ type: 'refused', tool: name, code: e.code });
        else if (guardOptions.rethrow?.(e)) throw e;
        else emit({ type: 'internal-error', tool: name, error: e });
        return toToolError(e);
      }
    };
    return handler;
  }

  function register<S extends z.ZodObject, F>(
    server: McpServer,
    name: string,
    config: ConfirmableToolConfig<S>,
    tool: ConfirmableTool<z.infer<S>, F>,
  ): RegisteredTool {
    const handler = guard<z.infer<S>, F>(server, name, tool);
    return server.registerTool(
      name,
      { title: config.title, description: config.description, inputSchema: config.inputSchema, annotations: config.annotations },
      handler as never,
    );
  }

  return { serverOptions: { requestState: { verify } }, register, guard, sealer, ledger, audience, ttlSeconds };
}
