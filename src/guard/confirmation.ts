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
 * ({@link passkeyRound}); a client that cannot elicit is then sent to the page by
 * link and its call retried, over stdio or for an authenticated HTTP caller ({@link linkRound}).
 * Every store call fails closed ({@link storeCalls}).
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
import {
  ConfirmError,
  ConfirmLedgerUnavailableError,
  ConfirmMismatchError,
  ConfirmNoElicitationError,
  refusalCode,
  toToolError,
} from '../errors.js';
import type { ConfirmStore } from '../store/confirmStore.js';
import { MemoryLedger } from '../store/memory.js';
import { canonicalDigest } from '../state/digest.js';
import { KeyRing } from '../state/keyRing.js';
import { DEFAULT_AUDIENCE, DEFAULT_TTL_SECONDS } from '../defaults.js';
import { MAX_TTL_SECONDS, Sealer, StateRefusedError, type ConfirmClaims } from '../state/sealer.js';
// Types only: the WebAuthn library is loaded only by those who start a PasskeyApproval.
import type { PasskeyApproval } from '../approval/passkey.js';
import type { ApprovalRecord } from '../store/approvalStore.js';
import type { NewPlan } from '../store/grantStore.js';
import { checkGrantPolicy, argumentsAccepted, grantPolicyDigest, type GrantPolicy } from '../grant/matchers.js';
import { MAX_PLAN_SLOTS } from '../store/grantStore.js';
import { CONFIRM_KEY, CONFIRM_SCHEMA, GRANT_OFFER_SCHEMA, readAnswer, type NotConfirmed } from './answer.js';
import {
  countOf,
  grantedNote,
  grantOffer,
  grantRecord,
  grantUseSpentNote,
  planSlotSpentNote,
  scopeOf,
  timeLeftText,
  underGrantNote,
  underPlanNote,
  withNote,
  newRecordId,
  type GrantOffer,
  type GrantTerms,
} from './grants.js';
import { planTool, type PlanEntry, type PlanHooks } from './plans.js';
import { PLAN_TOOL, PLAN_TOOL_CONFIG, type PlanArgs } from './planSpec.js';
import { passCapabilityErrors } from './capabilityErrors.js';
import { approvableByLink, clientCapabilities, noElicitationError } from './capabilities.js';
import { linkKeyOf, linkRound } from './linkRound.js';
import { passkeyRound } from './passkeyRound.js';
import { failClosed, storeCalls } from './storeCalls.js';

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
  /** A confirmed call also created a grant (`'granted'`), or a call acted under a grant or plan slot without a question. */
  | { type: 'granted' | 'acted-under-grant' | 'grant-exhausted' | 'plan-approved' | 'acted-under-plan'; tool: string }
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
   * not a {@link ConfirmError} or a tool's `refuse`) to stderr, since the client is told only
   * "Internal error in the confirmation layer".
   */
  onEvent?: (event: ConfirmEvent) => void;
  /**
   * The audit trail: one line per decision (asked, asked again, confirmed,
   * declined, cancelled, not confirmed, refused with its code, acted, failed),
   * each carrying the tool, the principal's salted tag (never the principal),
   * the `jti`, the argument digest and the question as shown; states refused by
   * the verify hook are only counted. Usually an {@link mcp-confirm!AuditLog}.
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
   * object: one store keeps both, so every replica sees them). With a grant offered, the page asks
   * "Approve this call" or "Approve and allow similar calls", and only its choice creates the grant
   * (a `scope` in the client's answer is ignored); with `audit`, a grant revoked on the page gets its
   * `grant-revoked` line here ({@link PasskeyApproval.onGrantRevoked}). A client that declares no
   * elicitation is answered with a link to the page (`ERR_CONFIRM_APPROVAL_PENDING`, the link in
   * `_meta[APPROVAL_META_KEY]`) and its exact retry acts once approved there, over stdio or for an
   * authenticated HTTP caller (`ctx.http.authInfo`); see docs/link-approval.md. Defaults to none
   * (form elicitation only: the client's yes is taken as given; a client without elicitation is
   * refused, `ERR_CONFIRM_NO_ELICITATION`).
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
  /**
   * Plans ("these exact calls, once each"): `true` registers the tool `confirm_plan` on every server
   * a tool is registered on with {@link Confirmation.register}. Its input is
   * `{calls: [{tool, arguments}]}`, each a tool registered with `register` on that server; one
   * question lists them all, and an approved plan lets each listed call be made once, exactly as
   * listed, until the TTL, without a question (still re-checked against what the human saw). At most
   * {@link MAX_PLAN_CALLS_FORM} calls and {@link MAX_PLAN_ARGUMENT_BYTES} bytes of arguments when
   * the human answers in a form, {@link MAX_PLAN_SLOTS} with passkey approval. Defaults to `false`.
   */
  plans?: boolean;
}

/** Most calls in one plan answered in a form (a host may cut a long question): 10. */
export const MAX_PLAN_CALLS_FORM = 10;
/** Most bytes of arguments (UTF-8 of their JSON) in one plan answered in a form: 65,536 (64 KiB). */
export const MAX_PLAN_ARGUMENT_BYTES = 65_536;

/** What {@link ConfirmableTool.act} receives besides the arguments. */
export interface ActContext<F> {
  /** The fingerprint captured in round 1, as sealed in the state (authentic). */
  fingerprint: F;
  /** The SDK's request context. */
  ctx: ServerContext;
}

/** What {@link ConfirmableTool.open} returns: a fresh fingerprint and the handle to act through. */
export interface OpenedResource<F> {
  /** The fingerprint, as {@link ConfirmableTool.fingerprint} would give it now. */
  fingerprint: F;
  /**
   * Re-checks the resource as opened against `context.fingerprint` (this one, or the one a plan's
   * human saw) and acts, as {@link ConfirmableTool.act} does; called at most once.
   */
  act(context: ActContext<F>): CallToolResult | Promise<CallToolResult>;
  /** Releases what was opened; called once, whether or not `act` was. */
  close(): void;
}

/** How a tool plugs into the flow. `A` is its parsed arguments, `F` its fingerprint (JSON). */
export interface ConfirmableTool<A, F = null> {
  /**
   * Round 1, before asking: check the arguments and the resource, and capture
   * the resource's identity. Throw a {@link ConfirmError}, or call `refuse(code, sentence)` for
   * the tool's own code, to refuse before asking. The value is sealed in the state (it must survive `JSON`
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
   * {@link ConfirmError} or call `refuse(code, sentence)` to refuse. Defaults to always `true` (tools that
   * re-check in {@link act} instead, like `delete_file`). The proxy uses it to
   * compare the upstream's identity and the tool's definition digest sealed in
   * round 1 with the current ones. It runs on every round-2 attempt, also for a
   * state that will then be found spent, so it must have no side effects.
   */
  unchanged?(args: A, fingerprint: F, ctx: ServerContext): boolean | Promise<boolean>;
  /**
   * Round 2, after an accepted, unspent, matching confirmation: re-check the
   * resource against the fingerprint, then act. Throw a {@link ConfirmError}, or call
   * `refuse(code, sentence)` for the tool's own code (e.g. insufficient funds), to refuse before doing anything; throw {@link ChangedBeforeActingError} (before doing anything) to have the human
   * asked again because what they were asked about changed since {@link unchanged} ran.
   */
  act(args: A, context: ActContext<F>): CallToolResult | Promise<CallToolResult>;
  /**
   * Grants and plans: round 1 and the action in one step, for a call a grant or an unused plan
   * slot may cover (it acts in that same call): the round-1 checks and a fresh fingerprint, as
   * {@link fingerprint} does, with the resource held open so that the action, if the call is
   * covered, re-checks and acts on it without finding it again (`delete_file`: one walk of the
   * directories instead of two). The flow calls `close` once decided: after acting, or before
   * asking. Throw a {@link ConfirmError} or call `refuse(code, sentence)` to refuse, as {@link fingerprint}. Defaults to
   * {@link fingerprint} then {@link act}.
   */
  open?(args: A, ctx: ServerContext): Promise<OpenedResource<F>>;
  /** Tail of the sentence when nothing is done, e.g. `'nothing was deleted'`. Defaults to `'nothing was done'`. */
  nothingDone?: string;
  /**
   * With passkey approval: the raw values the approval page shows uncut below the question, each
   * with a label (rendered there like the question's values, never cut). Defaults to every
   * top-level string argument, labelled by its name.
   */
  pageValues?(args: A, fingerprint: F): Array<{ label: string; value: string }>;
  /**
   * Grants: what a grant created from this call pins besides its arguments' matchers (JSON), e.g.
   * `delete_file`'s directory by device and inode; `undefined` means this call is offered no grant.
   * Called in both rounds with the sealed fingerprint (it must be a pure function of its inputs).
   * Defaults to `null` (the matchers alone decide).
   */
  grantPin?(args: A, fingerprint: F, policy: GrantPolicy): unknown;
  /**
   * Grants: whether a later call, with the fingerprint taken for it now, is within what a grant
   * pinned ({@link grantPin}'s value). Defaults to `true`.
   */
  grantAccepts?(pin: unknown, args: A, fingerprint: F): boolean;
  /** Grants: the offer's line in the question. Defaults to a generic line naming the matchers. */
  grantOffer?(terms: GrantTerms<A, F>): string;
  /**
   * Grants and plans: what a grant or plan slot is bound to besides the audience, the principal and
   * (over stdio) the serving process, e.g. the proxy's upstream identity and the tool's definition
   * digest: a later call whose binding differs is asked. Defaults to `''`.
   */
  binding?(args: A, fingerprint: F): string;
}

/** The tool's registration, as for `McpServer.registerTool`, with a required zod object schema. */
export interface ConfirmableToolConfig<S extends z.ZodObject> {
  title?: string;
  description?: string;
  /** Parsed arguments are what the digest covers: use a strict object without transforms or defaults. */
  inputSchema: S;
  annotations?: ToolAnnotations;
  /**
   * What may be granted for this tool ({@link GrantPolicy}: a matcher per argument, `maxUses`,
   * `maxSeconds`): the question then offers "this call, or calls like it, for a while". Defaults
   * to none (no grant is ever offered; the question and form are exactly as without grants).
   */
  grant?: GrantPolicy;
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
   * @param options - see {@link GuardOptions}.
   * @returns the handler; `server` must have been built with {@link serverOptions}
   *   (the `requestState` verify hook), else no round 2 ever opens and every call is asked.
   *   Round 2 order: state opened → tool and argument digests (`ERR_CONFIRM_MISMATCH`) →
   *   question digest → {@link ConfirmableTool.unchanged} → `jti` spent → answer → "confirmed"
   *   line → `act` (which may still ask again: {@link ChangedBeforeActingError}).
   * @throws whatever `options.rethrow` selects; every other error is an `isError` result
   *   (a {@link ConfirmError} with its `ERR_CONFIRM_*` code, a tool's `refuse` with its own code,
   *   anything else the generic internal error).
   */
  guard<A, F>(
    server: McpServer,
    name: string,
    tool: ConfirmableTool<A, F>,
    options?: GuardOptions,
  ): (args: A, ctx: ServerContext) => Promise<CallToolResult | InputRequiredResult>;
  /**
   * The handler of `confirm_plan` (input {@link PlanInput}, registration {@link PLAN_TOOL_CONFIG})
   * for servers that register their tools themselves (the proxy, a server built before its
   * confirmation layer loads); {@link register} registers it itself when `plans` is on.
   *
   * @param server - the server the plan's tools are on.
   * @param entryOf - the tool a plan may list under a name, with how its arguments are parsed, or
   *   `undefined` (the plan is refused, naming the call).
   */
  planGuard(
    server: McpServer,
    entryOf: (tool: string) => PlanEntry | undefined,
  ): (args: PlanArgs, ctx: ServerContext) => Promise<CallToolResult | InputRequiredResult>;
}

/** Options of {@link Confirmation.guard}. */
export interface GuardOptions {
  /**
   * Errors thrown by the tool that must reach the SDK as they are (e.g. a JSON-RPC `ProtocolError`
   * relayed from elsewhere) instead of becoming an `isError` result.
   */
  rethrow?: (error: unknown) => boolean;
  /** What may be granted for the tool, as {@link ConfirmableToolConfig.grant}. Defaults to none. */
  grant?: GrantPolicy;
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

/** Whether a handler's answer asks (`input_required`) rather than being the tool's result. */
function isInputRequired(result: CallToolResult | InputRequiredResult): result is InputRequiredResult {
  return 'inputRequests' in result;
}

/** Errors whose audit line was already written (by the "failed" line after `act`). */
const RECORDED = new WeakSet<object>();

/**
 * Refusals thrown after a grant's use or a plan slot was taken (the action then refused), with the
 * line that says so: the handler adds it to the refusal's result.
 */
const SPENT_NOTES = new WeakMap<object, string>();

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
 * ```ts
 * import { rm } from 'node:fs/promises';
 * import { McpServer } from '@modelcontextprotocol/server';
 * import { serveStdio } from '@modelcontextprotocol/server/stdio';
 * import { z } from 'zod';
 * import { createConfirmation, question } from 'mcp-confirm';
 *
 * const confirmation = await createConfirmation({ audience: 'files' });
 * serveStdio(() => {
 *   const server = new McpServer({ name: 'files', version: '1.0.0' }, { ...confirmation.serverOptions });
 *   confirmation.register(server, 'delete_file', { inputSchema: z.strictObject({ path: z.string() }) }, {
 *     question: (args) => question`Permanently delete ${args.path}?`,
 *     act: async (args) => { await rm(args.path); return { content: [{ type: 'text', text: 'deleted' }] }; },
 *   });
 *   return server;
 * });
 * ```
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
  const plans = options.plans === true;
  // Over stdio every caller is 'local': a grant or plan given there serves only this serving process.
  // Its process id and start time let an operator tell which host app a grant belongs to (`grants
  // list`); the random id keeps two processes apart even when a process id is reused.
  const processBinding = `pid ${process.pid}, started ${new Date().toISOString()}, ${newRecordId()}`;
  /** The tools registered on each server with `register` (what a plan may list), and whether it has `confirm_plan`. */
  const planEntries = new WeakMap<McpServer, Map<string, PlanEntry>>();
  const emit = (event: ConfirmEvent): void => {
    try {
      onEvent(event);
    } catch {
      // A diagnostics sink must never change the outcome.
    }
  };
  // Notices about this audience's approvals carry the principal's tag exactly as the audit trail writes it.
  approval?.tagPrincipals(audience, (principal) => KeyRing.principalTag(keys.sealing, principal));
  // A grant revoked on the approval page: its `grant-revoked` line (written after the revocation,
  // which it never undoes), by the confirmation whose audience the page showed.
  if (approval && audit)
    approval.onGrantRevoked(async (revoked) => {
      if (revoked.audience !== audience) return;
      await audit.record({
        event: 'grant-revoked',
        tool: revoked.tool,
        principal: KeyRing.principalTag(keys.sealing, revoked.principal),
        jti: revoked.jti,
        args: null,
        question: null,
        outcome: null,
        code: null,
        count: null,
        approver: revoked.approver,
        grant: revoked.grant,
      });
    });

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

  /** A refused state: its event, and its count in the audit trail (no tool or arguments are known here: one line per interval). */
  const refuseState = (reason: string): void => {
    emit({ type: 'state-refused', reason });
    audit?.countStateRefused();
  };
  // Opened synchronously (node:crypto, no thread-pool hop); the hook keeps its Promise type. The opener
  // returns its refusal and the throw is here, in an async function (see Sealer.openOrRefusal).
  const verify = async (state: string, ctx: ServerContext): Promise<OpenedState> => {
    let opened: ReturnType<Sealer['openOrRefusal']>;
    try {
      opened = sealer.openOrRefusal(state, { principal: principalOf(ctx), nowMs: now() });
    } catch (e) {
      refuseState('error');
      throw e;
    }
    if (opened instanceof StateRefusedError) {
      refuseState(opened.reason);
      throw opened;
    }
    return new OpenedState(opened, state);
  };

  /**
   * The digest sealed for a question with a grant offer: its message, the offer's form (with passkey
   * approval `approval: 'passkey'` instead: the page asks) and the offer's terms.
   */
  const offerQuestionDigest = (message: string, offer: GrantOffer): string =>
    approval
      ? canonicalDigest({ message, approval: 'passkey', grant: offer.digest }, 'question')
      : canonicalDigest({ message, requestedSchema: GRANT_OFFER_SCHEMA, grant: offer.digest }, 'question');

  /** What a grant or plan slot is bound to: over stdio (no HTTP request) this serving process, and the tool's own binding. */
  const bindingOf = <A, F>(
    tool: { binding?(args: A, fingerprint: F): string },
    args: A,
    fingerprint: F,
    ctx: ServerContext,
  ): string =>
    JSON.stringify([ctx.http === undefined ? processBinding : '', tool.binding ? tool.binding(args, fingerprint) : '']);

  /** The key of a plan slot: what a later call must match exactly to take it. */
  const slotKey = (principalTag: string, binding: string, tool: string, argsDigest: string): string =>
    canonicalDigest({ audience, principal: principalTag, binding, tool, args: argsDigest }, 'plan slot');

  function guard<A, F>(
    server: McpServer,
    name: string,
    tool: ConfirmableTool<A, F>,
    guardOptions: GuardOptions & { plan?: PlanHooks<A, F> } = {},
  ): (args: A, ctx: ServerContext) => Promise<CallToolResult | InputRequiredResult> {
    const nothingDone = tool.nothingDone ?? 'nothing was done';
    const policy =
      guardOptions.grant === undefined
        ? undefined
        : checkGrantPolicy(guardOptions.grant, `the grant for ${JSON.stringify(name)}`);
    const planHooks = guardOptions.plan;
    const link = approval ? linkRound({ approval, tool: name, store: calls, now, nothingDone }) : undefined;
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
          ...(guardOptions.plan ? { plan: true } : {}),
        })
      : undefined;

    /** The question and its sealed digest; with a grant policy, the offer's line below it (form and passkey approval alike). */
    const renderAsk = (args: A, fingerprint: F): { message: string; digest: string; offer?: GrantOffer } => {
      const asked = tool.question(args, fingerprint);
      const offer = grantOffer(name, policy, args, fingerprint, tool.grantPin?.bind(tool), tool.grantOffer?.bind(tool));
      if (!offer) return { message: asked, digest: questionDigest(asked) };
      const message = `${asked}\n\n${offer.line}`;
      return { message, digest: offerQuestionDigest(message, offer), offer };
    };

    /** Writes one audit line (awaited: the call does not answer or act before). */
    const record = async (
      event: AuditEventName,
      trail: Trail,
      extra: Partial<Pick<AuditDecision, 'outcome' | 'code' | 'approver' | 'approvers' | 'grant'>> = {},
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
        ...(extra.grant !== undefined ? { grant: extra.grant } : {}),
        ...(extra.approvers !== undefined ? { approvers: extra.approvers } : {}),
      });
    };
    /** Writes a line whose failure must not change the answer (the action already happened, or it is a refusal anyway). */
    const recordAfter = async (
      event: AuditEventName,
      trail: Trail,
      extra: Partial<Pick<AuditDecision, 'outcome' | 'code' | 'grant'>> = {},
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
      fingerprint: F,
      ctx: ServerContext,
      trail: Trail,
      opened?: OpenedResource<F>,
    ): Promise<CallToolResult> => {
      let result: CallToolResult;
      try {
        result = await (opened ? opened.act({ fingerprint, ctx }) : tool.act(args, { fingerprint, ctx }));
      } catch (e) {
        // Nothing was done: the caller asks again (see ChangedBeforeActingError).
        if (e instanceof ChangedBeforeActingError) throw e;
        const code = refusalCode(e);
        await recordAfter('failed', trail, code !== undefined ? { code } : { outcome: 'internal-error' });
        if (typeof e === 'object' && e !== null) RECORDED.add(e);
        throw e;
      }
      await recordAfter('acted', trail);
      return result;
    };

    /**
     * `act` after the "confirmed" (or grant or plan) line; when the tool finds, before doing anything, that what was
     * asked about changed ({@link ChangedBeforeActingError}), the human is asked again instead.
     */
    const actOrAskAgain = async (
      args: A,
      fingerprint: F,
      ctx: ServerContext,
      trail: Trail,
      opened?: OpenedResource<F>,
    ): Promise<CallToolResult | InputRequiredResult> => {
      try {
        return await actRecorded(args, fingerprint, ctx, trail, opened);
      } catch (e) {
        if (!(e instanceof ChangedBeforeActingError)) throw e;
        emit({ type: 'asked-again', tool: name, reason: 'resource-changed' });
        return ask(args, ctx, trail, 'resource-changed');
      }
    };

    /**
     * Runs the action of a call that took a grant's use or a plan slot: a refusal from it (the
     * re-check found the file changed, gone, a link, outside the roots) carries `note()`, saying the
     * use or slot is spent all the same (added to the refusal's result by the handler).
     */
    const spentAnyway = async <T>(action: Promise<T>, note: () => string): Promise<T> => {
      try {
        return await action;
      } catch (e) {
        if (typeof e === 'object' && e !== null) SPENT_NOTES.set(e, note());
        throw e;
      }
    };

    /** A grant created with the spend of a confirmation (`'full'`: none could be). */
    type Granting = { created: 'created'; id: string; offer: GrantOffer; expiresAtMs: number } | { created: 'full' };

    /** Spends the confirmation, creating the offered grant in the same atomic step. */
    const spendGranting = async (
      claims: ConfirmClaims,
      offer: GrantOffer,
      args: A,
      ctx: ServerContext,
      approver: string,
      nowMs: number,
    ): Promise<Granting> => {
      const grant = grantRecord(offer, {
        audience,
        principal: claims.sub,
        tool: name,
        binding: bindingOf(tool, args, claims.fingerprint as F, ctx),
        approver,
        nowMs,
      });
      const created = await calls.spendGranting(claims.jti, nowMs, grant);
      return created === 'created'
        ? { created, id: grant.id, offer, expiresAtMs: grant.expiresAtMs }
        : { created: 'full' };
    };

    /**
     * A confirmed call (the client's yes, or with passkey approval the page's approval by `approver`):
     * the "confirmed" line (and the "granted" line when it created a grant), then the action.
     */
    const confirmedAct = async (
      args: A,
      claims: ConfirmClaims,
      ctx: ServerContext,
      trail: Trail,
      approver?: string,
      granting?: Granting,
      approvers?: string[],
    ): Promise<CallToolResult | InputRequiredResult> => {
      // 5. Fail closed: the "confirmed" line (with the approver, or with a quorum every approver) is written
      // before anything is done; if it cannot be, nothing is.
      await record(
        'confirmed',
        trail,
        approver === undefined
          ? { outcome: 'accept' }
          : { outcome: 'accept', approver, ...(approvers !== undefined ? { approvers } : {}) },
      );
      if (granting?.created === 'created') {
        try {
          await record('granted', trail, { grant: granting.id, outcome: granting.offer.line });
        } catch (e) {
          // An unrecorded grant must not be used: revoke it, then refuse (nothing done).
          await calls.revokeGrant(granting.id, now()).catch(() => {});
          throw e;
        }
        emit({ type: 'granted', tool: name });
      }
      // 6. Act: the tool re-checks its resource against the sealed fingerprint first.
      const result = await actOrAskAgain(args, claims.fingerprint as F, ctx, trail);
      if (isInputRequired(result)) return result;
      emit(approver === undefined ? { type: 'confirmed', tool: name } : { type: 'confirmed', tool: name, approver });
      if (granting?.created === 'created') {
        const { policy: p } = granting.offer;
        return withNote(result, grantedNote(granting.id, p.maxUses - 1, timeLeftText(granting.expiresAtMs, now())));
      }
      if (granting?.created === 'full')
        return withNote(
          result,
          'No grant was created: the store already holds as many live grants as it may. This call only was approved.',
        );
      return result;
    };

    /** How an approved plan's confirmation is spent: with the plan created in the same atomic step (plans only). */
    const planningFor = (args: A, claims: ConfirmClaims, ctx: ServerContext) =>
      planHooks
        ? (nowMs: number, approver: string) => {
            const plan = planHooks.plan(args, claims.fingerprint as F, ctx, {
              audience,
              principalTag: claims.sub,
              approver,
              nowMs,
              expiresAtMs: nowMs + ttlSeconds * 1000,
              binding: (t, a, f) => bindingOf(t, a, f, ctx),
              planBinding: bindingOf(tool, args, claims.fingerprint as F, ctx),
              slotKey,
            });
            return calls.spendPlanning(claims.jti, nowMs, plan).then((outcome) => ({ id: plan.id, plan, outcome }));
          }
        : undefined;

    /**
     * How a confirmation approved on the page is spent when its question offered a grant: with the
     * grant created in the same atomic step when the page's record says `'grant'`, else alone.
     */
    const grantingOnPageFor = (args: A, claims: ConfirmClaims, ctx: ServerContext, offer: GrantOffer | undefined) =>
      approval && offer
        ? async (nowMs: number, page: ApprovalRecord): Promise<Granting | undefined> => {
            if (page.scope !== 'grant') {
              await calls.spend(claims.jti, nowMs);
              return undefined;
            }
            const granting = await spendGranting(claims, offer, args, ctx, page.approver, nowMs);
            if (granting.created === 'created') {
              // The page shows the grant with its Revoke button from now on; if that cannot be
              // recorded, the grant is revoked and the call refused (nothing done).
              try {
                await failClosed(() => approval.store.attachGrant(page.id, granting.id, granting.expiresAtMs, nowMs));
              } catch (e) {
                await calls.revokeGrant(granting.id, now()).catch(() => {});
                throw e;
              }
            }
            return granting;
          }
        : undefined;

    /**
     * A confirmation approved on the page, spent: a plan's approval, or the "confirmed" line and the action.
     * `spent` is what the spend resolved to (the plan or grant created with it).
     */
    const actApproved = (
      args: A,
      claims: ConfirmClaims,
      ctx: ServerContext,
      trail: Trail,
      approver: string,
      spent: unknown,
      approvers?: string[],
    ): Promise<CallToolResult | InputRequiredResult> =>
      planHooks
        ? approvePlan(
            args,
            claims,
            ctx,
            trail,
            planHooks,
            spent as Awaited<ReturnType<NonNullable<ReturnType<typeof planningFor>>>>,
            approver,
            approvers,
          )
        : confirmedAct(args, claims, ctx, trail, approver, spent as Granting | undefined, approvers);

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
      known?: { fingerprint: F },
    ): Promise<CallToolResult | InputRequiredResult> => {
      // The client must be able to answer before a jti is issued, so a refused ask leaks no store slot.
      // (A 2026-07-28 request gets it as the spec's -32021: see noElicitationError.) With passkey
      // approval, a client that cannot elicit is sent to the page by link instead (stdio, or an
      // authenticated HTTP caller).
      const can = clientCapabilities(server, ctx);
      if (!can.form && !(passkey && can.url)) {
        if (link && approvableByLink(ctx)) return byLink(args, ctx, trail, again, known);
        throw new ConfirmNoElicitationError(approval ? undefined : 'passkey');
      }
      const fingerprint = known
        ? known.fingerprint
        : tool.fingerprint
          ? await tool.fingerprint(args, ctx)
          : (null as F);
      const argsDigest = canonicalDigest(args);
      trail.args = argsDigest;
      const { message, digest, offer } = renderAsk(args, fingerprint);
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
        ? await passkey.open(
            { args, fingerprint, question: message, ...(offer ? { grant: offer.line } : {}), claims, principal, ctx },
            nowMs,
          )
        : inputRequired.elicit({ message, requestedSchema: offer ? GRANT_OFFER_SCHEMA : CONFIRM_SCHEMA });
      emit({ type: 'asked', tool: name });
      return inputRequired({ inputRequests: { [CONFIRM_KEY]: request }, requestState: state });
    };

    /**
     * Round 1 of a client that cannot elicit, with passkey approval (`linkRound.ts`): the call's
     * live link is found by its key (exact arguments, question, principal and binding); pending →
     * the same link; declined → nothing done; approved → spent once, re-checked, acted on what
     * round 1 kept; none → a new round 1 (sealed, issued, its "asked" line) whose state is kept
     * server-side with a new link.
     */
    const byLink = async (
      args: A,
      ctx: ServerContext,
      trail: Trail,
      again?: 'no-answer' | 'question-changed' | 'resource-changed',
      known?: { fingerprint: F },
      raced = false,
    ): Promise<CallToolResult | InputRequiredResult> => {
      const fingerprint = known
        ? known.fingerprint
        : tool.fingerprint
          ? await tool.fingerprint(args, ctx)
          : (null as F);
      const argsDigest = canonicalDigest(args);
      trail.args = argsDigest;
      const { message, digest, offer } = renderAsk(args, fingerprint);
      trail.question = message;
      const principal = principalOf(ctx);
      const tag = KeyRing.principalTag(keys.sealing, principal);
      trail.principal = tag;
      const binding = bindingOf(tool, args, fingerprint, ctx);
      const key = linkKeyOf({ audience, principal: tag, binding, tool: name, args: argsDigest, question: digest });
      const found = await link!.find(key, ctx);
      if (found.kind === 'pending') {
        emit({ type: 'approval-pending', tool: name });
        return found.result;
      }
      if (found.kind === 'declined') {
        trail.jti = found.jti;
        return notDone(found.answer, trail, 'page');
      }
      if (found.kind === 'approved') {
        const { linked } = found;
        trail.jti = linked.approval.jti;
        let claims: ConfirmClaims;
        try {
          // The round-1 identity, as sealed then: only this server's keys open it, for this principal.
          claims = sealer.openSync(linked.kept, { principal, nowMs: now() });
        } catch {
          // Sealed under a key no longer in the ring (or not this principal's): it approves nothing; ask anew.
          await link!.finish(key, linked);
          return ask(args, ctx, trail, again);
        }
        // The key already binds these; checked again against what was sealed.
        if (
          claims.jti !== linked.approval.jti ||
          claims.tool !== name ||
          claims.args !== argsDigest ||
          claims.question !== digest
        ) {
          await link!.finish(key, linked);
          throw new ConfirmMismatchError();
        }
        trail.principal = claims.sub;
        // The resource the human was asked about must still be the same one; if not, a new link.
        if (tool.unchanged && !(await tool.unchanged(args, claims.fingerprint as F, ctx))) {
          await link!.finish(key, linked);
          emit({ type: 'asked-again', tool: name, reason: 'resource-changed' });
          return ask(args, ctx, trail, 'resource-changed');
        }
        const spendApproved = planningFor(args, claims, ctx);
        const granting = grantingOnPageFor(args, claims, ctx, offer);
        const spent = await link!.spend(
          key,
          linked,
          spendApproved ? (nowMs, page) => spendApproved(nowMs, page.approver) : granting,
        );
        // With a quorum, every approver's name, in the order they approved (as a round 2 gives them).
        const approvers =
          (linked.approval.approvalsRequired ?? 1) > 1 ? linked.approval.approvals?.map((a) => a.approver) : undefined;
        return actApproved(args, claims, ctx, trail, linked.approval.approver, spent, approvers);
      }
      // None: a new round 1, its state kept server-side with the link (never sent).
      const nowMs = now();
      const sealed = sealer.sealSync({ tool: name, args: argsDigest, question: digest, fingerprint, principal, nowMs });
      await calls.issue(sealed.claims, nowMs);
      trail.jti = sealed.claims.jti;
      trail.principal = sealed.claims.sub;
      // Fail closed: the link goes out only once its line is written.
      await record(again ? 'asked-again' : 'asked', trail, { outcome: again ?? null });
      const opened = await link!.open(
        {
          key,
          kept: sealed.state,
          view: passkey!.view(args, fingerprint, message, principal, offer?.line),
          principal,
          jti: sealed.claims.jti,
          expiresAtMs: sealed.claims.exp * 1000,
        },
        nowMs,
      );
      // A concurrent call opened this key's link first: follow it (once).
      if (opened === 'exists') {
        if (raced) throw new ConfirmLedgerUnavailableError();
        return byLink(args, ctx, trail, again, { fingerprint }, true);
      }
      emit({ type: 'asked', tool: name });
      return opened;
    };

    /**
     * Round 1 with grants or plans: the round-1 checks and a fresh fingerprint, then an unused plan
     * slot matching this exact call, else a use of a live grant whose scope accepts it. Either acts
     * at once (its line written first), without a question; otherwise the fingerprint is kept for asking.
     */
    const standing = async (
      args: A,
      ctx: ServerContext,
      trail: Trail,
    ): Promise<{ done: CallToolResult | InputRequiredResult } | { fingerprint: F }> => {
      const opened = tool.open ? await tool.open(args, ctx) : undefined;
      try {
        return await covered(args, ctx, trail, opened);
      } finally {
        opened?.close();
      }
    };
    /** {@link standing} once the resource is fingerprinted (and, with `open`, held open). */
    const covered = async (
      args: A,
      ctx: ServerContext,
      trail: Trail,
      opened: OpenedResource<F> | undefined,
    ): Promise<{ done: CallToolResult | InputRequiredResult } | { fingerprint: F }> => {
      const fingerprint = opened
        ? opened.fingerprint
        : tool.fingerprint
          ? await tool.fingerprint(args, ctx)
          : (null as F);
      // The arguments' digest keys a plan slot and goes on audit lines; a grant alone needs neither.
      if (plans || audit) trail.args = canonicalDigest(args);
      const tag = KeyRing.principalTag(keys.sealing, principalOf(ctx));
      trail.principal = tag;
      const binding = bindingOf(tool, args, fingerprint, ctx);
      if (plans) {
        const slot = await calls.takePlanSlot(slotKey(tag, binding, name, trail.args!), now());
        if (slot) {
          // The human approved this exact call in the plan: it acts on what they saw then (re-checked by act).
          let seen: F;
          try {
            seen = JSON.parse(slot.identity) as F;
          } catch {
            throw new ConfirmLedgerUnavailableError();
          }
          await record('acted-under-plan', trail, { grant: slot.planId, outcome: `${slot.slotsLeft} left` });
          emit({ type: 'acted-under-plan', tool: name });
          const result = await spentAnyway(actOrAskAgain(args, seen, ctx, trail, opened), () =>
            planSlotSpentNote(slot.planId, slot.slotsLeft),
          );
          if (isInputRequired(result)) return { done: result };
          return { done: withNote(result, underPlanNote(slot.planId, slot.slotsLeft)) };
        }
      }
      if (policy) {
        const nowMs = now();
        for (const grant of await calls.findGrants(audience, tag, name, nowMs)) {
          // Only a grant given for this binding, under the policy in force now, whose scope accepts this call.
          if (grant.binding !== binding || grant.policyDigest !== policyDigestNow) continue;
          const scope = scopeOf(grant);
          if (!scope || !argumentsAccepted(scope.arguments, args)) continue;
          if (tool.grantAccepts && !tool.grantAccepts(scope.pin, args, fingerprint)) continue;
          const taken = await calls.takeGrantUse(grant.id, now());
          if (!taken.taken) continue;
          trail.question = grant.summary;
          // Fail closed: the line is written before acting; if it cannot be, nothing is done (the use is spent).
          await record('acted-under-grant', trail, { grant: grant.id, outcome: `${taken.usesLeft} left` });
          emit({ type: 'acted-under-grant', tool: name });
          if (taken.usesLeft === 0) {
            await recordAfter('grant-exhausted', trail, { grant: grant.id });
            emit({ type: 'grant-exhausted', tool: name });
          }
          const result = await spentAnyway(actOrAskAgain(args, fingerprint, ctx, trail, opened), () =>
            grantUseSpentNote(grant.id, taken.usesLeft, timeLeftText(taken.expiresAtMs, now())),
          );
          if (isInputRequired(result)) return { done: result };
          return {
            done: withNote(result, underGrantNote(grant.id, taken.usesLeft, timeLeftText(taken.expiresAtMs, now()))),
          };
        }
      }
      return { fingerprint };
    };
    const policyDigestNow = policy ? grantPolicyDigest(policy) : '';

    /** A plan's round 2, accepted: spent with the plan created in the same atomic step; nothing else is done. */
    const approvePlan = async (
      args: A,
      claims: ConfirmClaims,
      ctx: ServerContext,
      trail: Trail,
      hooks: PlanHooks<A, F>,
      created: { id: string; plan: NewPlan; outcome: 'created' | 'full' },
      approver?: string,
      approvers?: string[],
    ): Promise<CallToolResult> => {
      void args;
      void ctx;
      await record(
        'confirmed',
        trail,
        approver === undefined
          ? { outcome: 'accept' }
          : { outcome: 'accept', approver, ...(approvers !== undefined ? { approvers } : {}) },
      );
      if (created.outcome === 'full') throw hooks.full();
      await recordAfter('plan-approved', trail, {
        grant: created.id,
        outcome: countOf(created.plan.slots.length, 'call'),
      });
      emit({ type: 'plan-approved', tool: name });
      return hooks.approved(created.plan, timeLeftText(created.plan.expiresAtMs, now()));
    };

    const flow = async (args: A, ctx: ServerContext, trail: Trail): Promise<CallToolResult | InputRequiredResult> => {
      const opened = ctx.mcpReq.requestState<unknown>();
      // No verified state: this is round 1, whatever inputResponses came along. With grants or plans,
      // a call they cover acts now; otherwise ask.
      if (!(opened instanceof OpenedState)) {
        if (!policy && !plans) return ask(args, ctx, trail);
        const found = await standing(args, ctx, trail);
        return 'done' in found ? found.done : ask(args, ctx, trail, undefined, found);
      }
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
      // A plan is created with the spend of its confirmation (in one atomic step), only when approved.
      const planning = planningFor(args, claims, ctx);
      // With passkey approval an answer is settled by the page's record (it spends the jti once decided).
      // Only the page's button sets the scope: a grant is created when its record says 'grant' and
      // this question offered one; a `scope` in the client's answer is never read here.
      const grantingOnPage = grantingOnPageFor(args, claims, ctx, shown.offer);
      if (passkey && answer.kind !== 'missing') {
        const settled = await passkey.settle({
          claims,
          state: opened.state,
          question: shown.message,
          answer,
          ctx,
          ...(planning
            ? { spendApproved: (nowMs: number, page: ApprovalRecord) => planning(nowMs, page.approver) }
            : grantingOnPage
              ? { spendApproved: grantingOnPage }
              : {}),
        });
        if (settled.kind === 'pending') {
          emit({ type: 'approval-pending', tool: name });
          return inputRequired({ inputRequests: { [CONFIRM_KEY]: settled.request }, requestState: opened.state });
        }
        if (settled.kind === 'not-confirmed') return notDone(settled.answer, trail, settled.on);
        return actApproved(args, claims, ctx, trail, settled.approver, settled.spent, settled.approvers);
      }
      // 3. Spend the jti atomically before acting on the answer: accept, decline and cancel all use it up.
      // An accept that takes the offered grant (form: `scope: "grant"`), or approves a plan, creates it with the spend.
      const nowMs = now();
      if (answer.kind === 'confirmed' && planning) {
        const created = await planning(nowMs, 'client');
        return approvePlan(args, claims, ctx, trail, planHooks!, created);
      }
      if (answer.kind === 'confirmed' && answer.grant && shown.offer) {
        const granting = await spendGranting(claims, shown.offer, args, ctx, 'client', nowMs);
        return confirmedAct(args, claims, ctx, trail, undefined, granting);
      }
      await calls.spend(claims.jti, nowMs);
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
        // A refusal, the package's own or the tool's (refuse()), is answered alike: `[CODE] sentence`.
        const code = refusalCode(e);
        if (code !== undefined) emit({ type: 'refused', tool: name, code });
        else if (guardOptions.rethrow?.(e)) throw e;
        else emit({ type: 'internal-error', tool: name, error: e });
        if (audit && !(typeof e === 'object' && e !== null && RECORDED.has(e))) {
          // Before the state's own tag is known (round 1 refused before sealing), the tag under the sealing key.
          if (trail.principal === null) trail.principal = principalTagOf(ctx);
          if (trail.args === null) trail.args = digestOrNull(args);
          await recordAfter('refused', trail, code !== undefined ? { code } : { outcome: 'internal-error' });
        }
        // 2026-07-28: the spec's -32021 (a JSON-RPC error, whatever rethrow says), with this refusal's sentence.
        if (e instanceof ConfirmNoElicitationError && clientCapabilities(server, ctx).era === 'modern')
          throw noElicitationError(ctx, e);
        const spent = typeof e === 'object' && e !== null ? SPENT_NOTES.get(e) : undefined;
        return spent === undefined ? toToolError(e) : withNote(toToolError(e), spent);
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
    const handler = guard<z.infer<S>, F>(server, name, tool, config.grant === undefined ? {} : { grant: config.grant });
    let entries = planEntries.get(server);
    if (plans && !entries) {
      entries = new Map();
      planEntries.set(server, entries);
      registerPlanTool(server, entries);
    }
    entries?.set(name, {
      tool: tool as PlanEntry['tool'],
      parse: (value) => {
        const parsed = config.inputSchema.safeParse(value);
        return parsed.success ? { args: parsed.data } : undefined;
      },
    });
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

  /** Registers `confirm_plan` on a server, over the tools registered there with `register`. */
  function registerPlanTool(server: McpServer, entries: Map<string, PlanEntry>): void {
    server.registerTool(PLAN_TOOL, PLAN_TOOL_CONFIG, planGuard(server, (tool) => entries.get(tool)) as never);
  }

  function planGuard(
    server: McpServer,
    entryOf: (tool: string) => PlanEntry | undefined,
  ): (args: PlanArgs, ctx: ServerContext) => Promise<CallToolResult | InputRequiredResult> {
    const plan = planTool(
      entryOf,
      approval
        ? { maxCalls: MAX_PLAN_SLOTS, maxArgumentBytes: Number.POSITIVE_INFINITY }
        : { maxCalls: MAX_PLAN_CALLS_FORM, maxArgumentBytes: MAX_PLAN_ARGUMENT_BYTES },
      ttlSeconds,
    );
    return guard(server, PLAN_TOOL, plan.tool, { plan: plan.hooks });
  }

  return { serverOptions: { requestState: { verify } }, register, guard, planGuard };
}
