/**
 * The two-round confirmation flow for any tool (MCP spec 2026-07-28,
 * basic/patterns/mrtr; client/elicitation form mode), and {@link createConfirmation},
 * which hands it out.
 *
 * The SDK accepts the `requestState` verify hook only in the `McpServer`
 * constructor, and the hook sees every state on that server: it refuses any
 * state this module did not seal, so another MRTR tool on the same server
 * cannot carry a `requestState` of its own. So this module hands out both
 * halves together: {@link Confirmation.serverOptions} for the
 * constructor and {@link Confirmation.register} for each confirmed tool.
 * Create the confirmation (its keys and store) once, outside the
 * `serveStdio` / `createMcpHandler` factory, which runs per connection or
 * per request.
 *
 * Round 1 (no state): check the client can answer ({@link clientCapabilities}),
 * let the tool inspect the resource (and refuse before asking), render the
 * question, issue a `jti` in the store, seal the state, answer
 * `input_required`. Round 2 (state opened by the hook), in this order:
 * tool and argument digests match (else `ERR_CONFIRM_MISMATCH`, the `jti` is
 * not spent); the question rendered now matches the sealed digest (else the
 * human is asked again); the `jti` is spent atomically (else
 * `ERR_CONFIRM_SPENT` / `_UNKNOWN` / `_EXPIRED` / `_LEDGER_UNAVAILABLE`); the
 * answer ({@link readAnswer}) must be `accept` with `confirmed === true`
 * (decline, cancel or anything else: nothing is done; no answer: asked
 * again); then the tool acts, re-checking its resource first.
 *
 * With `approval` (a {@link PasskeyApproval}), round 1 opens an approval and
 * asks with its page's URL, and round 2 is settled by the page's record
 * ({@link passkeyRound}). Every store call fails closed ({@link storeCalls}).
 * This module composes those parts, writes the audit lines and reports the
 * events; they decide nothing about either.
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
  inputRequired,
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
import { ConfirmError, ConfirmMismatchError, ConfirmNoElicitationError, toToolError } from '../errors.js';
import type { ConfirmStore } from '../store/confirmStore.js';
import { MemoryLedger } from '../store/memory.js';
import { canonicalDigest } from '../state/digest.js';
import { KeyRing } from '../state/keyRing.js';
import { DEFAULT_AUDIENCE, DEFAULT_TTL_SECONDS } from '../defaults.js';
import { MAX_TTL_SECONDS, Sealer, StateRefusedError, type ConfirmClaims } from '../state/sealer.js';
// Types only: the WebAuthn library is loaded only by those who start a PasskeyApproval.
import type { PasskeyApproval } from '../approval/passkey.js';
import { CONFIRM_KEY, CONFIRM_SCHEMA, readAnswer, type NotConfirmed } from './answer.js';
import { passCapabilityErrors } from './capabilityErrors.js';
import { clientCapabilities, noElicitationError } from './capabilities.js';
import { passkeyRound } from './passkeyRound.js';
import { storeCalls } from './storeCalls.js';

/** Something worth a line on stderr: what was asked, refused, confirmed. Never carries secrets. */
export type ConfirmEvent =
  | { type: 'asked'; tool: string }
  | { type: 'asked-again'; tool: string; reason: 'no-answer' | 'question-changed' | 'resource-changed' }
  | { type: 'refused'; tool: string; code: string }
  | { type: 'state-refused'; reason: string }
  | {
      type: 'not-confirmed';
      tool: string;
      action: string;
      /** `'page'` when the human decided on the approval page (passkey approval), not in the client. */ on?: 'page';
    }
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
  /**
   * The sentence appended to an `ERR_CONFIRM_UNKNOWN` refusal when `store` keeps its confirmations
   * in one process (`store.shared` is false, as for a `MemoryLedger`): why a confirmation asked by
   * another server process is unknown here, and how to share them, in your deployment's words (the
   * `mcp-confirm` command names its flags here). A shared store's refusal carries none; `''`
   * appends nothing. Defaults to "This server keeps its ledger in process memory, so a confirmation
   * asked by one server process cannot be redeemed on another: give every process the same keys and
   * a shared ledger (SqliteLedger on one host, RedisLedger across hosts)."
   */
  unknownHint?: string;
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
  process.stderr.write(
    `mcp-confirm: internal error in ${event.tool}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`,
  );
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

/** The default of {@link ConfirmationOptions.unknownHint}. */
const DEFAULT_UNKNOWN_HINT =
  'This server keeps its ledger in process memory, so a confirmation asked by one server process cannot be redeemed on another: give every process the same keys and a shared ledger (SqliteLedger on one host, RedisLedger across hosts).';

/**
 * Creates the confirmation layer: keys, store, the verify hook and the tool wrapper.
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
    throw new RangeError(
      `ttlSeconds must be a whole number of seconds from 1 to ${MAX_TTL_SECONDS}, got ${String(ttlSeconds)}`,
    );
  }
  const keys = options.keys ?? (await KeyRing.random());
  const sealer = new Sealer({ keys, audience, ttlSeconds });
  const store: ConfirmStore = options.store ?? options.approval?.store ?? new MemoryLedger();
  const calls = storeCalls(store, options.unknownHint ?? DEFAULT_UNKNOWN_HINT);
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
    const passkey = approval
      ? passkeyRound<A, F>({
          approval,
          server,
          tool: name,
          audience,
          store: calls,
          now,
          nothingDone,
          pageValues: (args, fingerprint) => tool.pageValues?.(args, fingerprint),
        })
      : undefined;

    const renderAsk = (args: A, fingerprint: F): { message: string; digest: string } => {
      const message = tool.question(args, fingerprint);
      return { message, digest: questionDigest(message) };
    };

    /** Writes one audit line (awaited: the call does not answer or act before). */
    const record = async (
      event: AuditEventName,
      trail: Trail,
      extra: Partial<Pick<AuditDecision, 'outcome' | 'code' | 'approver'>> = {},
    ): Promise<void> => {
      if (!audit) return;
      await audit.record({
        event,
        tool: name,
        ...trail,
        outcome: extra.outcome ?? null,
        code: extra.code ?? null,
        count: null,
        approver: extra.approver ?? null,
      });
    };
    /** Writes a line whose failure must not change the answer (the action already happened, or it is a refusal anyway). */
    const recordAfter = async (
      event: AuditEventName,
      trail: Trail,
      extra: Partial<Pick<AuditDecision, 'outcome' | 'code'>> = {},
    ): Promise<void> => {
      try {
        await record(event, trail, extra);
      } catch {
        // Reported by the audit log itself (its onError).
      }
    };
    /**
     * Runs `act` and writes its "failed" or "acted" line (after the action: it records what happened;
     * a failure to write it is reported, not turned into a refusal).
     */
    const actRecorded = async (
      args: A,
      claims: ConfirmClaims,
      ctx: ServerContext,
      trail: Trail,
    ): Promise<CallToolResult> => {
      let result: CallToolResult;
      try {
        result = await tool.act(args, { fingerprint: claims.fingerprint as F, ctx });
      } catch (e) {
        // Nothing was done: the caller asks again (see ChangedBeforeActingError).
        if (e instanceof ChangedBeforeActingError) throw e;
        await recordAfter(
          'failed',
          trail,
          e instanceof ConfirmError ? { code: e.code } : { outcome: 'internal-error' },
        );
        if (typeof e === 'object' && e !== null) RECORDED.add(e);
        throw e;
      }
      await recordAfter('acted', trail);
      return result;
    };

    /**
     * `act` after the "confirmed" line; when the tool finds, before doing anything, that what was asked
     * about changed ({@link ChangedBeforeActingError}), the human is asked again instead.
     */
    const actOrAskAgain = async (
      args: A,
      claims: ConfirmClaims,
      ctx: ServerContext,
      trail: Trail,
    ): Promise<CallToolResult | InputRequiredResult> => {
      try {
        return await actRecorded(args, claims, ctx, trail);
      } catch (e) {
        if (!(e instanceof ChangedBeforeActingError)) throw e;
        emit({ type: 'asked-again', tool: name, reason: 'resource-changed' });
        return ask(args, ctx, trail, 'resource-changed');
      }
    };

    /**
     * A confirmed call (the client's yes, or with passkey approval the page's approval by `approver`):
     * the "confirmed" line, then the action.
     */
    const confirmedAct = async (
      args: A,
      claims: ConfirmClaims,
      ctx: ServerContext,
      trail: Trail,
      approver?: string,
    ): Promise<CallToolResult | InputRequiredResult> => {
      // 5. Fail closed: the "confirmed" line (with the approver) is written before anything is done; if it cannot be, nothing is.
      await record(
        'confirmed',
        trail,
        approver === undefined ? { outcome: 'accept' } : { outcome: 'accept', approver },
      );
      // 6. Act: the tool re-checks its resource against the sealed fingerprint first.
      const result = await actOrAskAgain(args, claims, ctx, trail);
      if (!('inputRequests' in result))
        emit(approver === undefined ? { type: 'confirmed', tool: name } : { type: 'confirmed', tool: name, approver });
      return result;
    };

    /** An answer that confirms nothing (`on: 'page'`: the page's decline): its event and line, and a non-error result; nothing done. */
    const notDone = async (answer: NotConfirmed, trail: Trail, on?: 'page'): Promise<CallToolResult> => {
      emit(
        on === undefined
          ? { type: 'not-confirmed', tool: name, action: answer.action }
          : { type: 'not-confirmed', tool: name, action: answer.action, on },
      );
      await record(answer.kind === 'other' ? 'not-confirmed' : answer.kind, trail, { outcome: answer.action });
      return { content: [{ type: 'text', text: answer.sentence }] };
    };

    const ask = async (
      args: A,
      ctx: ServerContext,
      trail: Trail,
      again?: 'no-answer' | 'question-changed' | 'resource-changed',
    ): Promise<InputRequiredResult> => {
      // The client must be able to answer before a jti is issued, so a refused ask leaks no store slot.
      // (A 2026-07-28 request gets it as the spec's -32021: see noElicitationError.)
      const can = clientCapabilities(server, ctx);
      if (!can.form && !(passkey && can.url)) throw new ConfirmNoElicitationError();
      const fingerprint = tool.fingerprint ? await tool.fingerprint(args, ctx) : (null as F);
      const argsDigest = canonicalDigest(args);
      trail.args = argsDigest;
      const { message, digest } = renderAsk(args, fingerprint);
      trail.question = message;
      const nowMs = now();
      const principal = principalOf(ctx);
      const { state, claims } = sealer.sealSync({
        tool: name,
        args: argsDigest,
        question: digest,
        fingerprint,
        principal,
        nowMs,
      });
      await calls.issue(claims, nowMs);
      trail.jti = claims.jti;
      trail.principal = claims.sub;
      // Fail closed: the question goes out only once its line is written.
      await record(again ? 'asked-again' : 'asked', trail, { outcome: again ?? null });
      const request = passkey
        ? await passkey.open({ args, fingerprint, question: message, claims, principal, ctx }, nowMs)
        : inputRequired.elicit({ message, requestedSchema: CONFIRM_SCHEMA });
      emit({ type: 'asked', tool: name });
      return inputRequired({ inputRequests: { [CONFIRM_KEY]: request }, requestState: state });
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
      const answer = readAnswer(ctx.mcpReq.inputResponses, {
        nothingDone,
        acceptWithoutContent: passkey !== undefined,
      });
      // With passkey approval an answer is settled by the page's record (it spends the jti once decided).
      if (passkey && answer.kind !== 'missing') {
        const settled = await passkey.settle({ claims, state: opened.state, question: shown.message, answer, ctx });
        if (settled.kind === 'pending') {
          emit({ type: 'approval-pending', tool: name });
          return inputRequired({ inputRequests: { [CONFIRM_KEY]: settled.request }, requestState: opened.state });
        }
        if (settled.kind === 'not-confirmed') return notDone(settled.answer, trail, settled.on);
        return confirmedAct(args, claims, ctx, trail, settled.approver);
      }
      // 3. Spend the jti atomically before reading the answer: accept, decline and cancel all use it up.
      await calls.spend(claims.jti, now());
      // 4. Only an explicit accept with confirmed === true (a boolean) goes on; no answer asks again.
      if (answer.kind === 'missing') {
        emit({ type: 'asked-again', tool: name, reason: 'no-answer' });
        return ask(args, ctx, trail, 'no-answer');
      }
      if (answer.kind !== 'confirmed') return notDone(answer, trail);
      return confirmedAct(args, claims, ctx, trail);
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
          await recordAfter(
            'refused',
            trail,
            e instanceof ConfirmError ? { code: e.code } : { outcome: 'internal-error' },
          );
        }
        // 2026-07-28: the spec's -32021 (a JSON-RPC error, whatever rethrow says), with this refusal's sentence.
        if (e instanceof ConfirmNoElicitationError && clientCapabilities(server, ctx).era === 'modern')
          throw noElicitationError(ctx);
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
      {
        title: config.title,
        description: config.description,
        inputSchema: config.inputSchema,
        annotations: config.annotations,
      },
      handler as never,
    );
    passCapabilityErrors(server);
    return registered;
  }

  return { serverOptions: { requestState: { verify } }, register, guard };
}
