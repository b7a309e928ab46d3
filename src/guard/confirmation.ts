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
 * With `approval` (a {@link PasskeyApproval}), round 1 opens an approval (a
 * random id bound to the `jti` in the ledger store) and asks with a URL-mode
 * elicitation to its page (or, to a client without URL mode, a form
 * elicitation carrying the URL); round 2 waits for the page's decision: still
 * pending → asked again with the same URL and state, nothing spent; approved
 * (within 120 s) → spent, then the tool acts; declined → spent, nothing done.
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
  MissingRequiredClientCapabilityError,
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
import type { AuditSink } from '../audit/auditLog.js';
import type { AuditDecision, AuditEventName } from '../audit/chain.js';
import {
  ConfirmApprovalExpiredError,
  ConfirmError,
  ConfirmExpiredError,
  ConfirmLedgerUnavailableError,
  ConfirmMismatchError,
  ConfirmNoElicitationError,
  ConfirmSpentError,
  ConfirmUnknownError,
  toToolError,
} from '../errors.js';
import type { ConfirmStore } from '../store/confirmStore.js';
import type { Ledger, SpendOutcome } from '../store/ledger.js';
import { MemoryLedger } from '../store/memory.js';
import { canonicalDigest } from '../state/digest.js';
import { KeyRing } from '../state/keyRing.js';
import { DEFAULT_AUDIENCE, DEFAULT_TTL_SECONDS } from '../defaults.js';
import { MAX_TTL_SECONDS, Sealer, StateRefusedError, type ConfirmClaims } from '../state/sealer.js';
// Types only: the WebAuthn library is loaded only by those who start a PasskeyApproval.
import type { ApprovalView, PasskeyApproval } from '../approval/passkey.js';
import { REDEEM_WITHIN_MS } from '../store/approvalStore.js';
import { renderValue } from '../prompt/render.js';
import { passCapabilityErrors, raiseForRequest } from './capabilityErrors.js';

/** The sentence after the question in a URL-mode elicitation (passkey approval). */
export const URL_MODE_SENTENCE = 'Open the link to approve or deny this on the approval page with your passkey.';
/** The sentence after the approval URL in a form elicitation to a client without URL mode (passkey approval). */
export const FORM_FALLBACK_SENTENCE = 'Approve on that page with your passkey, then confirm here.';

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
  | { type: 'not-confirmed'; tool: string; action: string; /** `'page'` when the human decided on the approval page (passkey approval), not in the client. */ on?: 'page' }
  | { type: 'confirmed'; tool: string; approver?: string }
  | { type: 'approval-pending'; tool: string }
  | { type: 'internal-error'; tool: string; error: unknown };

/** Options of {@link createConfirmation}. */
export interface ConfirmationOptions {
  /** The key ring. Defaults to one random key for this process ({@link KeyRing.random}). */
  keys?: KeyRing;
  /** The `aud` claim: this server's name. Defaults to `'mcp-confirm'`. */
  audience?: string;
  /** Lifetime of a question, in whole seconds, 1 to 86,400. Defaults to 300 (5 minutes). */
  ttlSeconds?: number;
  /**
   * Where outstanding confirmations (and, with `approval`, the approvals) live: a {@link ConfirmStore}
   * such as `MemoryLedger`, `SqliteLedger` or `RedisLedger`. Defaults to `approval.store` when
   * `approval` is given, else a new {@link MemoryLedger} (one process only).
   */
  store?: ConfirmStore;
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
  /**
   * The audit trail: one line per decision (asked, asked again, confirmed,
   * declined, cancelled, not confirmed, refused with its code, acted, failed),
   * each carrying the tool, the principal's salted tag (never the principal),
   * the `jti`, the argument digest and the question as shown; states refused by
   * the verify hook are only counted. Usually an {@link AuditLog}.
   *
   * Fail closed: every line is awaited before the call answers, and the
   * "confirmed" line before `act` runs; when it cannot be written the call is
   * refused with `ERR_CONFIRM_AUDIT_UNAVAILABLE` and nothing is done. The
   * "acted"/"failed" line is written after `act` (a failure to write it is
   * reported, not turned into a refusal: the action already happened).
   * Defaults to none.
   */
  audit?: AuditSink;
  /**
   * Passkey approval ({@link PasskeyApproval.start}): round 1 sends the human to an approval page
   * (URL-mode elicitation, or a form elicitation carrying the URL for clients without URL mode), and
   * round 2 acts only on an approval the page recorded after verifying an enrolled approver's passkey.
   * The confirmation keeps its `jti`s in `approval.store` unless `store` is given (usually the same
   * object: one store keeps both, so every replica sees them). Defaults to none
   * (form elicitation only: the client's yes is taken as given).
   */
  approval?: PasskeyApproval;
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
   * to refuse; throw {@link ChangedBeforeActingError} (before doing anything) to have the human
   * asked again because what they were asked about changed since {@link unchanged} ran.
   */
  act(args: A, context: ActContext<F>): CallToolResult | Promise<CallToolResult>;
  /** Tail of the sentence when nothing is done, e.g. `'nothing was deleted'`. Defaults to `'nothing was done'`. */
  nothingDone?: string;
  /**
   * With passkey approval: the raw values the approval page shows uncut below the question, each
   * with a label (rendered there like the question's values, never cut). Defaults to every
   * top-level string argument, labelled by its name.
   */
  pageValues?(args: A, fingerprint: F): Array<{ label: string; value: string }>;
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
   *   question digest → {@link ConfirmableTool.unchanged} → `jti` spent → answer → "confirmed"
   *   line → `act` (which may still ask again: {@link ChangedBeforeActingError}).
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
  /**
   * @param claims - the opened claims.
   * @param state - the sealed `requestState` as received (to ask again with the same state).
   */
  constructor(
    readonly claims: ConfirmClaims,
    readonly state: string = '',
  ) {}
}

/**
 * Thrown by {@link ConfirmableTool.act} before it has done anything, when what the human was asked
 * about no longer holds at the moment of acting (after the `jti` was spent and the "confirmed" line
 * written: e.g. the proxy finds the upstream's roots or tool list changed just before it forwards).
 * The guard then asks again (a fresh question and state, as for a failed
 * {@link ConfirmableTool.unchanged}); the spent `jti` stays spent; nothing is done. Not a refusal:
 * no `ERR_CONFIRM_*` code, no "failed" audit line (the "asked-again" line says it).
 */
export class ChangedBeforeActingError extends Error {
  constructor() {
    super('what the human was asked about changed before the tool acted');
    this.name = 'ChangedBeforeActingError';
  }
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

/** What a 2026-07-28 client without elicitation is missing (`data.requiredCapabilities` of the `-32021`). */
export const REQUIRED_ELICITATION = { elicitation: { form: {} } } as const;


/**
 * The refusal of a 2026-07-28 request whose client cannot answer the question: the spec's JSON-RPC
 * `-32021` (MCP 2026-07-28, basic/patterns/mrtr: a server MUST NOT ask for input the client did not
 * declare) with `data.requiredCapabilities` ({@link REQUIRED_ELICITATION}), whose message is this
 * project's sentence with its code, the text a 2025-era client gets as an `isError` result
 * (`[ERR_CONFIRM_NO_ELICITATION] … nothing was done.`), not the SDK's generic "Cannot request input".
 */
function noElicitationError(ctx: ServerContext): MissingRequiredClientCapabilityError {
  const refusal = new ConfirmNoElicitationError();
  const error = new MissingRequiredClientCapabilityError({ requiredCapabilities: REQUIRED_ELICITATION }, `[${refusal.code}] ${refusal.message}`);
  raiseForRequest(ctx.mcpReq.signal, error);
  return error;
}

/** What the audit line of a call can say so far; filled in as the flow learns it. */
interface Trail {
  principal: string | null;
  jti: string | null;
  args: string | null;
  question: string | null;
}

/** The argument digest for an audit line, or null when the arguments have none (that refusal is the line). */
function digestOrNull(args: unknown): string | null {
  try {
    return canonicalDigest(args);
  } catch {
    return null;
  }
}

/** How many question digests a confirmation keeps (oldest dropped first). */
const QUESTION_DIGESTS_KEPT = 256;
/** Longest message, in UTF-16 code units, whose question digest is kept. */
const QUESTION_DIGEST_MAX_MESSAGE = 2048;

/** Errors whose audit line was already written (by the "failed" line after `act`). */
const RECORDED = new WeakSet<object>();

/** Whether the client declared URL-mode elicitation (`elicitation.url`). */
function canElicitUrl(server: McpServer, ctx: ServerContext): boolean {
  const fromEnvelope = (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES_META_KEY] as
    | { elicitation?: { url?: unknown } }
    | undefined;
  const caps = isModernRequest(ctx) ? fromEnvelope : server.server.getClientCapabilities();
  const url = caps?.elicitation?.url;
  return url !== undefined && url !== null && typeof url === 'object';
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
  const audience = options.audience ?? DEFAULT_AUDIENCE;
  const ttlSeconds = options.ttlSeconds ?? DEFAULT_TTL_SECONDS;
  // Validate cheap options before the async key import.
  if (!Number.isSafeInteger(ttlSeconds) || ttlSeconds <= 0 || ttlSeconds > MAX_TTL_SECONDS) {
    throw new RangeError(`ttlSeconds must be a whole number of seconds from 1 to ${MAX_TTL_SECONDS}, got ${String(ttlSeconds)}`);
  }
  const keys = options.keys ?? (await KeyRing.random());
  const sealer = new Sealer({ keys, audience, ttlSeconds });
  const ledger: ConfirmStore = options.store ?? options.approval?.store ?? new MemoryLedger();
  const principalOf = options.principal ?? defaultPrincipal;
  const now = options.now ?? Date.now;
  const onEvent = options.onEvent ?? reportInternalErrors;
  const audit = options.audit;
  const approval = options.approval;
  const emit = (event: ConfirmEvent): void => {
    try {
      onEvent(event);
    } catch {
      // A diagnostics sink must never change the outcome.
    }
  };

  const principalTagOf = (ctx: ServerContext): string | null => {
    try {
      return KeyRing.principalTag(keys.sealing, principalOf(ctx));
    } catch {
      return null;
    }
  };

  /**
   * The digest sealed for a question: SHA-256 of the RFC 8785 form of `{message, requestedSchema}`, or with
   * passkey approval (the elicitation carries a per-ask URL) of `{message, approval: 'passkey'}`. A pure
   * function of the message here, so the last {@link QUESTION_DIGESTS_KEPT} digests of messages up to
   * {@link QUESTION_DIGEST_MAX_MESSAGE} code units are kept: round 2 renders the message round 1 sealed.
   */
  const questionDigests = new Map<string, string>();
  const questionDigest = (message: string): string => {
    const known = questionDigests.get(message);
    if (known !== undefined) return known;
    const digest = approval
      ? canonicalDigest({ message, approval: 'passkey' }, 'question')
      : canonicalDigest({ message, requestedSchema: CONFIRM_SCHEMA }, 'question');
    if (typeof message === 'string' && message.length <= QUESTION_DIGEST_MAX_MESSAGE) {
      if (questionDigests.size >= QUESTION_DIGESTS_KEPT) questionDigests.delete(questionDigests.keys().next().value!);
      questionDigests.set(message, digest);
    }
    return digest;
  };

  // Opened synchronously (node:crypto, no thread-pool hop); the hook keeps its Promise type.
  const verify = async (state: string, ctx: ServerContext): Promise<OpenedState> => {
    try {
      return new OpenedState(sealer.openSync(state, { principal: principalOf(ctx), nowMs: now() }), state);
    } catch (e) {
      emit({ type: 'state-refused', reason: e instanceof StateRefusedError ? e.reason : 'error' });
      // No tool or arguments are known here: counted, and written as one line per interval.
      audit?.countStateRefused();
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
      return { message, requestedSchema: CONFIRM_SCHEMA, digest: questionDigest(message) };
    };

    /** The elicitation that sends the human to the approval page: URL mode when the client has it, else a form carrying the URL. */
    const approvalRequest = (question: string, url: string, id: string, ctx: ServerContext) => {
      if (canElicitUrl(server, ctx)) {
        const request = inputRequired.elicitUrl({ message: `${question}\n\n${URL_MODE_SENTENCE}`, url });
        // 2025-era connections: our approval id as the elicitationId, so notifications/elicitation/complete can name it.
        if (!isModernRequest(ctx)) (request as { params: Record<string, unknown> }).params.elicitationId = id;
        return request;
      }
      return inputRequired.elicit({
        message: `${question}\n\nApproval page: ${renderValue(url)}\n${FORM_FALLBACK_SENTENCE}`,
        requestedSchema: CONFIRM_SCHEMA,
      });
    };

    /** The page's view of one call: every value uncut. */
    const pageView = (args: A, fingerprint: F, question: string, ctx: ServerContext): ApprovalView => {
      const raw =
        tool.pageValues?.(args, fingerprint) ??
        Object.entries(args as Record<string, unknown>)
          .filter((e): e is [string, string] => typeof e[1] === 'string')
          .map(([label, value]) => ({ label, value }));
      return {
        audience,
        principal: principalOf(ctx),
        tool: name,
        question,
        values: raw.map((v) => ({ label: v.label, text: renderValue(v.value, { maxGraphemes: Number.MAX_SAFE_INTEGER, segments: '/' }) })),
      };
    };

    /** Tells a 2025-era URL-mode client that the page was decided (spec 2025-11-25, notifications/elicitation/complete). */
    const notifyOnDecision = (id: string, ctx: ServerContext, expiresAtMs: number): void => {
      if (approval === undefined || isModernRequest(ctx) || !canElicitUrl(server, ctx)) return;
      let notify: () => Promise<void>;
      try {
        notify = server.server.createElicitationCompletionNotifier(id);
      } catch {
        return;
      }
      approval.onDecided(id, () => void notify().catch(() => {}), Math.max(0, expiresAtMs - now()));
    };

    /** Writes one audit line (awaited: the call does not answer or act before). */
    const record = async (event: AuditEventName, trail: Trail, extra: Partial<Pick<AuditDecision, 'outcome' | 'code' | 'approver'>> = {}): Promise<void> => {
      if (!audit) return;
      await audit.record({ event, tool: name, ...trail, outcome: extra.outcome ?? null, code: extra.code ?? null, count: null, approver: extra.approver ?? null });
    };
    const record_ = record;
    /**
     * Runs `act` and writes its "failed" or "acted" line (after the action: it records what happened;
     * a failure to write it is reported, not turned into a refusal).
     */
    const actRecorded = async (args: A, claims: ConfirmClaims, ctx: ServerContext, trail: Trail): Promise<CallToolResult> => {
      let result: CallToolResult;
      try {
        result = await tool.act(args, { fingerprint: claims.fingerprint as F, ctx });
      } catch (e) {
        // Nothing was done: the caller asks again (see ChangedBeforeActingError).
        if (e instanceof ChangedBeforeActingError) throw e;
        await recordAfter('failed', trail, e instanceof ConfirmError ? { code: e.code } : { outcome: 'internal-error' });
        if (typeof e === 'object' && e !== null) RECORDED.add(e);
        throw e;
      }
      await recordAfter('acted', trail);
      return result;
    };
    /** Writes a line whose failure must not change the answer (the action already happened, or it is a refusal anyway). */
    const recordAfter = async (event: AuditEventName, trail: Trail, extra: Partial<Pick<AuditDecision, 'outcome' | 'code'>> = {}): Promise<void> => {
      try {
        await record(event, trail, extra);
      } catch {
        // Reported by the audit log itself (its onError).
      }
    };

    /**
     * `act` after the "confirmed" line; when the tool finds, before doing anything, that what was asked
     * about changed ({@link ChangedBeforeActingError}), the human is asked again instead.
     */
    const actOrAskAgain = async (args: A, claims: ConfirmClaims, ctx: ServerContext, trail: Trail): Promise<CallToolResult | InputRequiredResult> => {
      try {
        return await actRecorded(args, claims, ctx, trail);
      } catch (e) {
        if (!(e instanceof ChangedBeforeActingError)) throw e;
        emit({ type: 'asked-again', tool: name, reason: 'resource-changed' });
        return ask(args, ctx, trail, 'resource-changed');
      }
    };

    const ask = async (args: A, ctx: ServerContext, trail: Trail, again?: 'no-answer' | 'question-changed' | 'resource-changed'): Promise<InputRequiredResult> => {
      // The client must be able to answer before a jti is issued, so a refused ask leaks no ledger slot.
      // (A 2026-07-28 request gets it as the spec's -32021: see noElicitationError.)
      if (!canElicitForm(server, ctx) && !(approval && canElicitUrl(server, ctx))) throw new ConfirmNoElicitationError();
      const fingerprint = tool.fingerprint ? await tool.fingerprint(args, ctx) : (null as F);
      const argsDigest = canonicalDigest(args);
      trail.args = argsDigest;
      const { message, requestedSchema, digest } = renderAsk(args, fingerprint);
      trail.question = message;
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
      trail.jti = claims.jti;
      trail.principal = claims.sub;
      // Fail closed: the question goes out only once its line is written.
      await record(again ? 'asked-again' : 'asked', trail, { outcome: again ?? null });
      if (approval) {
        let opened: { id: string; url: string };
        try {
          opened = await approval.open(
            { jti: claims.jti, principal: principalOf(ctx), view: pageView(args, fingerprint, message, ctx), expiresAtMs: claims.exp * 1000 },
            nowMs,
          );
        } catch (e) {
          // Free the ledger slot of a question that can never be approved.
          await ledger.spend(claims.jti, nowMs).catch(() => {});
          if (e instanceof ConfirmError) throw e;
          throw new ConfirmLedgerUnavailableError({ cause: e });
        }
        notifyOnDecision(opened.id, ctx, claims.exp * 1000);
        emit({ type: 'asked', tool: name });
        return inputRequired({ inputRequests: { [CONFIRM_KEY]: approvalRequest(message, opened.url, opened.id, ctx) }, requestState: state });
      }
      emit({ type: 'asked', tool: name });
      return inputRequired({
        inputRequests: { [CONFIRM_KEY]: inputRequired.elicit({ message, requestedSchema }) },
        requestState: state,
      });
    };

    /**
     * Round 2 with passkey approval, after the digests matched. The client's accept means only that the
     * human opened the page (URL mode) or says they approved there (form fallback): the page's record decides.
     */
    const redeemApproval = async (
      args: A,
      ctx: ServerContext,
      opened: OpenedState,
      answer: ReturnType<typeof inputResponse>,
      pa: PasskeyApproval,
      trail: Trail,
    ): Promise<CallToolResult | InputRequiredResult> => {
      const claims = opened.claims;
      const content = answer.kind === 'elicit' ? answer.content : undefined;
      const accepted =
        answer.kind === 'elicit' &&
        answer.action === 'accept' &&
        (content === undefined || (isPlainObject(content) && Object.hasOwn(content, 'confirmed') && content.confirmed === true));
      if (!accepted) {
        // Decline, cancel or anything else: spend, nothing done; the page shows it as denied.
        await spend(claims.jti, now());
        const record = await pa.store.approvalByJti(claims.jti, now()).catch(() => undefined);
        if (record?.status === 'pending') await pa.store.decideApproval(record.id, { status: 'declined', approver: '', credentialId: '' }, now()).catch(() => {});
        const action = answer.kind === 'elicit' ? (['accept', 'decline', 'cancel'].includes(answer.action) ? answer.action : 'other') : 'other';
        emit({ type: 'not-confirmed', tool: name, action });
        await record_(action === 'decline' ? 'declined' : action === 'cancel' ? 'cancelled' : 'not-confirmed', trail, { outcome: action });
        const why =
          action === 'decline' ? 'You declined' : action === 'cancel' ? 'You cancelled' : action === 'accept' ? 'You did not confirm' : 'No valid confirmation was given';
        return { content: [{ type: 'text', text: `${why}; ${nothingDone}.` }] };
      }
      // 1. Wait for the page's decision (up to --approval-wait); reading it changes nothing.
      let record;
      try {
        record = await pa.waitForDecision(claims.jti, ctx.mcpReq.signal);
      } catch (e) {
        if (e instanceof ConfirmError) throw e;
        throw new ConfirmLedgerUnavailableError({ cause: e });
      }
      // 2. Still pending: ask again with the same URL and the same state; nothing is spent.
      if (record?.status === 'pending' && opened.state !== '') {
        emit({ type: 'approval-pending', tool: name });
        const question = tool.question(args, claims.fingerprint as F);
        return inputRequired({ inputRequests: { [CONFIRM_KEY]: approvalRequest(question, pa.urlFor(record.id), record.id, ctx) }, requestState: opened.state });
      }
      // 3. Decided (or gone): the jti is spent atomically now, whatever the decision.
      const nowMs = now();
      await spend(claims.jti, nowMs);
      if (record === undefined || record.status === 'pending') throw new ConfirmApprovalExpiredError();
      if (record.status === 'declined') {
        emit({ type: 'not-confirmed', tool: name, action: 'decline', on: 'page' });
        await record_('declined', trail, { outcome: 'decline' });
        return { content: [{ type: 'text', text: `You declined; ${nothingDone}.` }] };
      }
      // 4. An approval is redeemable for 120 s after it was given (and, by the state's TTL, never after expiry).
      if (nowMs >= record.decidedAtMs + REDEEM_WITHIN_MS || nowMs >= record.expiresAtMs) throw new ConfirmApprovalExpiredError();
      // 5. Fail closed: the "confirmed" line, with the approver, is written before anything is done.
      await record_('confirmed', trail, { outcome: 'accept', approver: record.approver });
      // 6. Act: the tool re-checks its resource against the sealed fingerprint first.
      const result = await actOrAskAgain(args, claims, ctx, trail);
      if (!('inputRequests' in result)) emit({ type: 'confirmed', tool: name, approver: record.approver });
      return result;
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

    const flow = async (args: A, ctx: ServerContext, trail: Trail): Promise<CallToolResult | InputRequiredResult> => {
      const opened = ctx.mcpReq.requestState<unknown>();
      // No verified state: this is round 1, whatever inputResponses came along. Ask.
      if (!(opened instanceof OpenedState)) return ask(args, ctx, trail);
      const claims = opened.claims;
      trail.jti = claims.jti;
      trail.principal = claims.sub;
      // 1. The state serves only the exact call it was minted for; a mismatch leaves the jti unspent.
      if (claims.tool !== name) throw new ConfirmMismatchError();
      trail.args = canonicalDigest(args);
      if (claims.args !== trail.args) throw new ConfirmMismatchError();
      // 2. The question rendered now must be the one the human saw; if the wording or rules changed, ask again.
      const shown = renderAsk(args, claims.fingerprint as F);
      if (shown.digest !== claims.question) {
        emit({ type: 'asked-again', tool: name, reason: 'question-changed' });
        return ask(args, ctx, trail, 'question-changed');
      }
      // 2b. The resource the human was asked about must still be the same one; if not, ask again.
      if (tool.unchanged && !(await tool.unchanged(args, claims.fingerprint as F, ctx))) {
        emit({ type: 'asked-again', tool: name, reason: 'resource-changed' });
        return ask(args, ctx, trail, 'resource-changed');
      }
      trail.question = shown.message;
      // Only an own entry counts: a "__proto__" key in the client's JSON can become an inherited one.
      const responses = ctx.mcpReq.inputResponses;
      const answer = responses !== undefined && Object.hasOwn(responses, CONFIRM_KEY) ? inputResponse(responses, CONFIRM_KEY) : ({ kind: 'missing' } as const);
      // With passkey approval an answer is settled by the page's record (see redeemApproval).
      if (approval && answer.kind !== 'missing') return redeemApproval(args, ctx, opened, answer, approval, trail);
      // 3. Spend the jti atomically before reading the answer: accept, decline and cancel all use it up.
      await spend(claims.jti, now());
      // 4. Only an explicit accept with confirmed === true (a boolean) goes on; no answer asks again.
      if (answer.kind === 'missing') {
        emit({ type: 'asked-again', tool: name, reason: 'no-answer' });
        return ask(args, ctx, trail, 'no-answer');
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
        await record(action === 'decline' ? 'declined' : action === 'cancel' ? 'cancelled' : 'not-confirmed', trail, { outcome: action });
        const why =
          action === 'decline' ? 'You declined' : action === 'cancel' ? 'You cancelled' : action === 'accept' ? 'You did not confirm' : 'No valid confirmation was given';
        return { content: [{ type: 'text', text: `${why}; ${nothingDone}.` }] };
      }
      // 5. Fail closed: the "confirmed" line is written before anything is done; if it cannot be, nothing is.
      await record('confirmed', trail, { outcome: 'accept' });
      // 6. Act: the tool re-checks its resource against the sealed fingerprint first.
      const result = await actOrAskAgain(args, claims, ctx, trail);
      if (!('inputRequests' in result)) emit({ type: 'confirmed', tool: name });
      return result;
    };

    const handler = async (args: A, ctx: ServerContext): Promise<CallToolResult | InputRequiredResult> => {
      const trail: Trail = { principal: null, jti: null, args: null, question: null };
      try {
        return await flow(args, ctx, trail);
      } catch (e) {
        if (e instanceof ConfirmError) emit({ type: 'refused', tool: name, code: e.code });
        else if (guardOptions.rethrow?.(e)) throw e;
        else emit({ type: 'internal-error', tool: name, error: e });
        if (audit && !(typeof e === 'object' && e !== null && RECORDED.has(e))) {
          // Before the state's own tag is known (round 1 refused before sealing), the tag under the sealing key.
          if (trail.principal === null) trail.principal = principalTagOf(ctx);
          if (trail.args === null) trail.args = digestOrNull(args);
          await recordAfter('refused', trail, e instanceof ConfirmError ? { code: e.code } : { outcome: 'internal-error' });
        }
        // 2026-07-28: the spec's -32021 (a JSON-RPC error, whatever rethrow says), with this refusal's sentence.
        if (e instanceof ConfirmNoElicitationError && isModernRequest(ctx)) throw noElicitationError(ctx);
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
    const registered = server.registerTool(
      name,
      { title: config.title, description: config.description, inputSchema: config.inputSchema, annotations: config.annotations },
      handler as never,
    );
    passCapabilityErrors(server);
    return registered;
  }

  return { serverOptions: { requestState: { verify } }, register, guard, sealer, ledger, audience, ttlSeconds };
}
