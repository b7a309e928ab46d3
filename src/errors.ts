/**
 * The two error families of mcp-confirm, each with stable string codes and fixed sentences:
 * {@link ConfirmError} (`ERR_CONFIRM_*`, one subclass per code: the refusals that cross the wire)
 * and {@link ConfigError} (`ERR_CONFIG_*`: start-up and configuration refusals, never on the wire).
 *
 * A refusal crosses the wire as a `CallToolResult` with `isError: true` whose
 * text starts with the code in brackets, e.g. `[ERR_CONFIRM_SPENT] This
 * confirmation was already used; nothing was done.` (see {@link toToolError}).
 * Refusals of the `requestState` itself never reach this module: the SDK
 * answers them with JSON-RPC `-32602 "Invalid or expired requestState"`.
 *
 * Messages are fixed sentences, or name only values the caller already sent
 * (a path) or an OS reason. They never echo a `requestState`, a key, a `jti`
 * or an answer's content.
 *
 * Codes are never reused for another meaning; the catalogue is in docs/errors.md.
 * Sentences take their numbers from the constants they state.
 *
 * @module
 */
import type { CallToolResult } from '@modelcontextprotocol/server';
import { MAX_PENDING_LINK_APPROVALS, REDEEM_WITHIN_MS } from './defaults.js';

/** Every code this package can answer with: the `code` of {@link AnyConfirmError}. */
export type ConfirmErrorCode =
  | 'ERR_CONFIRM_MISMATCH'
  | 'ERR_CONFIRM_SPENT'
  | 'ERR_CONFIRM_UNKNOWN'
  | 'ERR_CONFIRM_EXPIRED'
  | 'ERR_CONFIRM_CAPACITY'
  | 'ERR_CONFIRM_LEDGER_UNAVAILABLE'
  | 'ERR_CONFIRM_BAD_ARGUMENT'
  | 'ERR_CONFIRM_OUTSIDE_ROOTS'
  | 'ERR_CONFIRM_NOT_REGULAR_FILE'
  | 'ERR_CONFIRM_SYMLINK'
  | 'ERR_CONFIRM_CHANGED'
  | 'ERR_CONFIRM_GONE'
  | 'ERR_CONFIRM_OS'
  | 'ERR_CONFIRM_NO_ELICITATION'
  | 'ERR_CONFIRM_POLICY_DENIED'
  | 'ERR_CONFIRM_UPSTREAM_DOWN'
  | 'ERR_CONFIRM_UPSTREAM_FAILED'
  | 'ERR_CONFIRM_UPSTREAM_TIMEOUT'
  | 'ERR_CONFIRM_UPSTREAM_TOOL_GONE'
  | 'ERR_CONFIRM_UPSTREAM_INPUT'
  | 'ERR_CONFIRM_AUDIT_UNAVAILABLE'
  | 'ERR_CONFIRM_APPROVAL_EXPIRED'
  | 'ERR_CONFIRM_APPROVAL_PENDING'
  | 'ERR_CONFIRM_TOO_MANY_PENDING'
  | 'ERR_CONFIRM_PLAN';

/**
 * Base class of every refusal. `code` is stable; `message` is a fixed sentence. Each code has its
 * own subclass whose `code` is that literal, so a `switch (error.code)` over an
 * {@link AnyConfirmError} narrows to the subclass.
 */
export class ConfirmError extends Error {
  readonly code: ConfirmErrorCode;
  constructor(code: ConfirmErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** The requestState was minted for another tool or other arguments. The `jti` is not spent. */
export class ConfirmMismatchError extends ConfirmError {
  declare readonly code: 'ERR_CONFIRM_MISMATCH';
  constructor() {
    super(
      'ERR_CONFIRM_MISMATCH',
      'This confirmation was given for a different tool call (another tool or other arguments); nothing was done. A confirmation only ever serves the exact call it was asked for.',
    );
  }
}

/** The `jti` was already redeemed (accepted, declined or cancelled). */
export class ConfirmSpentError extends ConfirmError {
  declare readonly code: 'ERR_CONFIRM_SPENT';
  constructor() {
    super(
      'ERR_CONFIRM_SPENT',
      'This confirmation was already used; nothing was done. Call the tool again to be asked again.',
    );
  }
}

/** The `jti` is not outstanding in this ledger: used, swept after expiry, or issued by another process. */
export class ConfirmUnknownError extends ConfirmError {
  declare readonly code: 'ERR_CONFIRM_UNKNOWN';
  constructor(hint = '') {
    super(
      'ERR_CONFIRM_UNKNOWN',
      'This confirmation is not outstanding here (already used, expired and swept, or issued by another server process); nothing was done.' +
        (hint ? ` ${hint}` : ''),
    );
  }
}

/** The ledger found the confirmation past its expiry (TTL). */
export class ConfirmExpiredError extends ConfirmError {
  declare readonly code: 'ERR_CONFIRM_EXPIRED';
  constructor() {
    super(
      'ERR_CONFIRM_EXPIRED',
      'This confirmation has expired; nothing was done. Call the tool again to be asked again.',
    );
  }
}

/** Too many confirmations outstanding (per principal or in total); round 1 is refused rather than grow. */
export class ConfirmCapacityError extends ConfirmError {
  declare readonly code: 'ERR_CONFIRM_CAPACITY';
  constructor(scope: 'principal' | 'total') {
    super(
      'ERR_CONFIRM_CAPACITY',
      scope === 'principal'
        ? 'Too many confirmations are outstanding for this principal; nothing was asked. Answer or let the pending ones expire, then try again.'
        : 'Too many confirmations are outstanding on this server; nothing was asked. Try again later.',
    );
  }
}

/** The ledger could not be reached or did not answer cleanly; fails closed. */
export class ConfirmLedgerUnavailableError extends ConfirmError {
  declare readonly code: 'ERR_CONFIRM_LEDGER_UNAVAILABLE';
  constructor(options?: { cause?: unknown }) {
    super(
      'ERR_CONFIRM_LEDGER_UNAVAILABLE',
      'The confirmation ledger is unavailable; nothing was done. Try again later.',
      options,
    );
  }
}

/** An argument was refused before asking (empty, NUL, not well-formed UTF-16, not canonicalisable). */
export class ConfirmBadArgumentError extends ConfirmError {
  declare readonly code: 'ERR_CONFIRM_BAD_ARGUMENT';
  constructor(detail: string) {
    super('ERR_CONFIRM_BAD_ARGUMENT', `Bad argument: ${detail}; nothing was asked and nothing was done.`);
  }
}

/** The path resolves outside every root fixed at start-up. */
export class ConfirmOutsideRootsError extends ConfirmError {
  declare readonly code: 'ERR_CONFIRM_OUTSIDE_ROOTS';
  constructor(detail = 'the path is outside the allowed roots') {
    super('ERR_CONFIRM_OUTSIDE_ROOTS', `Refused: ${detail}; nothing was done.`);
  }
}

/** The path names a directory, FIFO, socket, device or anything but a regular file. */
export class ConfirmNotRegularFileError extends ConfirmError {
  declare readonly code: 'ERR_CONFIRM_NOT_REGULAR_FILE';
  constructor(kind: string) {
    super('ERR_CONFIRM_NOT_REGULAR_FILE', `Refused: the path names a ${kind}, not a regular file; nothing was done.`);
  }
}

/** The path, or a directory on the way to it, is a symbolic link. */
export class ConfirmSymlinkError extends ConfirmError {
  declare readonly code: 'ERR_CONFIRM_SYMLINK';
  constructor(detail = 'the path is a symbolic link') {
    super('ERR_CONFIRM_SYMLINK', `Refused: ${detail}; nothing was done.`);
  }
}

/** The resource is no longer the one the human saw. */
export class ConfirmChangedError extends ConfirmError {
  declare readonly code: 'ERR_CONFIRM_CHANGED';
  constructor(detail = '') {
    super(
      'ERR_CONFIRM_CHANGED',
      'The file changed after you confirmed it; nothing was deleted; ask again.' + (detail ? ` ${detail}` : ''),
    );
  }
}

/** The resource no longer exists (or did not exist when asked). */
export class ConfirmGoneError extends ConfirmError {
  declare readonly code: 'ERR_CONFIRM_GONE';
  constructor(when: 'before' | 'after' = 'after') {
    super(
      'ERR_CONFIRM_GONE',
      when === 'before'
        ? 'Refused: the file does not exist; nothing was asked.'
        : 'The file no longer exists; nothing was deleted.',
    );
  }
}

/** The operating system refused the action; `osCode` is e.g. `EACCES`. */
export class ConfirmOsError extends ConfirmError {
  declare readonly code: 'ERR_CONFIRM_OS';
  readonly osCode: string;
  constructor(osCode: string, what: string, options?: { cause?: unknown }) {
    super(
      'ERR_CONFIRM_OS',
      `The operating system refused to ${what}: ${osCode}${describeOsCode(osCode)}; nothing was deleted.`,
      options,
    );
    this.osCode = osCode;
  }
}

/**
 * The client cannot answer a form elicitation (a 2025-era client without the capability; a
 * 2026-07-28 one gets the same text as the message of the spec's `-32021`).
 */
export class ConfirmNoElicitationError extends ConfirmError {
  declare readonly code: 'ERR_CONFIRM_NO_ELICITATION';
  /**
   * @param hint - `'passkey'` (form approval, where passkey approval would send a link instead)
   *   appends the sentence saying that with passkey approval this server would
   *   answer with a link instead; none (the default) keeps the sentence alone.
   */
  constructor(hint?: 'passkey') {
    super(
      'ERR_CONFIRM_NO_ELICITATION',
      'This tool needs a human confirmation, but the client did not declare the elicitation capability, so it cannot ask; nothing was done.' +
        (hint === 'passkey' ? ` ${PASSKEY_WOULD_LINK}` : ''),
    );
  }
}

/**
 * `ERR_CONFIRM_APPROVAL_PENDING`: with passkey approval, a client that cannot elicit is sent to
 * the approval page by link (the text carries the page's URL and the tool); nothing was done. The
 * guard answers it as an `isError` result with the link also in `_meta` (`APPROVAL_META_KEY`).
 */
export class ConfirmApprovalPendingError extends ConfirmError {
  declare readonly code: 'ERR_CONFIRM_APPROVAL_PENDING';
  /**
   * @param url - the approval page's URL (`ORIGIN/approve/ID`).
   * @param tool - the tool's name as shown (rendered by the caller, e.g. a code span).
   */
  constructor(
    readonly url: string,
    tool: string,
  ) {
    super(
      'ERR_CONFIRM_APPROVAL_PENDING',
      `This call needs a person's approval. Open ${url} and approve it with your passkey, then call ${tool} again with exactly the same arguments. Nothing was done.`,
    );
  }
}

/** The sentence a refusal of a client without elicitation gains under form approval. */
export const PASSKEY_WOULD_LINK =
  'With passkey approval, this server would instead answer with a link where a person approves the call with their passkey.';

/**
 * `ERR_CONFIRM_TOO_MANY_PENDING`: a client that cannot elicit asked for another approval by link
 * while its principal already has {@link MAX_PENDING_LINK_APPROVALS} (5) pending ones; nothing
 * was asked or done. Approve, deny or let the pending ones expire first.
 */
export class ConfirmTooManyPendingError extends ConfirmError {
  declare readonly code: 'ERR_CONFIRM_TOO_MANY_PENDING';
  constructor() {
    super(
      'ERR_CONFIRM_TOO_MANY_PENDING',
      `There are already ${MAX_PENDING_LINK_APPROVALS} approvals waiting for a person for this caller, so no new one was opened; nothing was done. Approve or deny the waiting ones, or let them expire, then call again.`,
    );
  }
}

/** Proxy: the policy denies this tool (it is not listed either). */
export class ConfirmPolicyDeniedError extends ConfirmError {
  declare readonly code: 'ERR_CONFIRM_POLICY_DENIED';
  constructor() {
    super('ERR_CONFIRM_POLICY_DENIED', "The proxy's policy denies this tool; nothing was forwarded.");
  }
}

/**
 * Proxy: the upstream server is not running (it exited, crashed or never
 * started). The proxy never restarts it: every call answers this until the
 * client disconnects. `detail` is the proxy's own description (exit code or signal).
 */
export class ConfirmUpstreamDownError extends ConfirmError {
  declare readonly code: 'ERR_CONFIRM_UPSTREAM_DOWN';
  constructor(detail: string) {
    super(
      'ERR_CONFIRM_UPSTREAM_DOWN',
      `The upstream server is down (${detail}); nothing was forwarded. The proxy does not restart it: restart the proxy.`,
    );
  }
}

/**
 * Proxy: the upstream failed while a request was in flight (it exited or crashed, its connection
 * failed, or an HTTP upstream answered with an error status). For a forwarded `tools/call`,
 * whether the upstream acted is unknown and the call is never retried; for any other request
 * (`request`, e.g. `tools/list`) the message says only that it failed. `detail` is the proxy's own
 * description (see `describeFailure` in src/proxy/upstream.ts: never an HTTP response body).
 */
export class ConfirmUpstreamFailedError extends ConfirmError {
  declare readonly code: 'ERR_CONFIRM_UPSTREAM_FAILED';
  constructor(detail: string, options?: { cause?: unknown; request?: string }) {
    const request = options?.request ?? 'tools/call';
    super(
      'ERR_CONFIRM_UPSTREAM_FAILED',
      request === 'tools/call'
        ? `The upstream server failed during the call (${detail}); whether it acted is unknown, and the call was not retried.`
        : `The upstream server failed to answer ${request} (${detail}).`,
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
  }
}

/**
 * Proxy: the upstream did not answer within the deadline (`deadlineSeconds`); the request was
 * cancelled and not retried. For a forwarded `tools/call` the message adds that whether the
 * upstream acted is unknown; for any other request (`request`, e.g. `tools/list`) it does not.
 */
export class ConfirmUpstreamTimeoutError extends ConfirmError {
  declare readonly code: 'ERR_CONFIRM_UPSTREAM_TIMEOUT';
  constructor(deadlineSeconds: number, options?: { request?: string }) {
    const request = options?.request ?? 'tools/call';
    super(
      'ERR_CONFIRM_UPSTREAM_TIMEOUT',
      request === 'tools/call'
        ? `The upstream server did not answer within ${deadlineSeconds} s; the call was cancelled and not retried; whether it acted is unknown.`
        : `The upstream server did not answer ${request} within ${deadlineSeconds} s; it was cancelled and not retried.`,
    );
  }
}

/** Proxy: the tool is not in the upstream's current list (it was removed after the question was asked, or never existed). */
export class ConfirmUpstreamToolGoneError extends ConfirmError {
  declare readonly code: 'ERR_CONFIRM_UPSTREAM_TOOL_GONE';
  constructor() {
    super(
      'ERR_CONFIRM_UPSTREAM_TOOL_GONE',
      'The upstream server does not list this tool (any more); nothing was forwarded.',
    );
  }
}

/**
 * Proxy: the upstream asked for input itself (an `input_required` result,
 * or an elicitation or sampling request). The proxy refuses it: no prompt of
 * the upstream may pose as the proxy's question.
 */
export class ConfirmUpstreamInputError extends ConfirmError {
  declare readonly code: 'ERR_CONFIRM_UPSTREAM_INPUT';
  constructor() {
    super(
      'ERR_CONFIRM_UPSTREAM_INPUT',
      'The upstream server asked for input of its own (input_required); the proxy refuses to relay it, so no upstream prompt can pose as the confirmation. The call did not complete.',
    );
  }
}

/**
 * `ERR_CONFIRM_APPROVAL_EXPIRED`: with passkey approval, the approval was given more than
 * {@link REDEEM_WITHIN_MS} (120 s) before the retry that would redeem it, or the approval page's
 * record is gone (expired with the TTL, or kept by another store). The confirmation is spent;
 * nothing was done.
 */
export class ConfirmApprovalExpiredError extends ConfirmError {
  declare readonly code: 'ERR_CONFIRM_APPROVAL_EXPIRED';
  constructor() {
    super(
      'ERR_CONFIRM_APPROVAL_EXPIRED',
      `The passkey approval has expired (it must be redeemed within ${REDEEM_WITHIN_MS / 1000} seconds of being given, and before the confirmation expires); nothing was done. Call the tool again to be asked again.`,
    );
  }
}

/**
 * A plan (`confirm_plan`) cannot be asked or stored: a call names a tool this server does not
 * confirm, repeats another call, has arguments its tool refuses, or its tool's round-1 checks
 * refused it (the message names the call by number and tool, and carries that refusal); too many
 * calls or too many bytes of arguments for the way the human answers; or the store holds as many
 * live plans for this principal as it may. Nothing was approved or done.
 */
export class ConfirmPlanError extends ConfirmError {
  declare readonly code: 'ERR_CONFIRM_PLAN';
  /**
   * @param reason - the sentence saying what is wrong (it may carry a rendered tool name and another
   *   refusal's code and sentence, never an argument value).
   */
  constructor(reason: string) {
    super('ERR_CONFIRM_PLAN', `${reason} Nothing was approved or done.`);
  }
}

/**
 * The audit trail (`--audit`, `AuditLog`) could not record a decision line,
 * so the decision is refused rather than left unrecorded (fail closed): a
 * confirmed action whose "confirmed" line cannot be written is not done.
 */
export class ConfirmAuditUnavailableError extends ConfirmError {
  declare readonly code: 'ERR_CONFIRM_AUDIT_UNAVAILABLE';
  constructor(options?: { cause?: unknown }) {
    super(
      'ERR_CONFIRM_AUDIT_UNAVAILABLE',
      'The audit trail could not be written, so nothing was done (a decision is never left unrecorded). Try again later.',
      options,
    );
  }
}

/**
 * Every refusal this package throws, one subclass per code: narrow a caught {@link ConfirmError}
 * with `switch ((error as AnyConfirmError).code)`.
 *
 * @example
 * ```ts
 * import { ConfirmError, type AnyConfirmError } from 'mcp-confirm';
 *
 * function explain(error: unknown): void {
 *   if (error instanceof ConfirmError) {
 *     const refusal = error as AnyConfirmError;
 *     if (refusal.code === 'ERR_CONFIRM_OS') console.error(refusal.osCode); // narrowed to ConfirmOsError
 *   }
 * }
 * ```
 */
export type AnyConfirmError =
  | ConfirmMismatchError
  | ConfirmSpentError
  | ConfirmUnknownError
  | ConfirmExpiredError
  | ConfirmCapacityError
  | ConfirmLedgerUnavailableError
  | ConfirmBadArgumentError
  | ConfirmOutsideRootsError
  | ConfirmNotRegularFileError
  | ConfirmSymlinkError
  | ConfirmChangedError
  | ConfirmGoneError
  | ConfirmOsError
  | ConfirmNoElicitationError
  | ConfirmPolicyDeniedError
  | ConfirmUpstreamDownError
  | ConfirmUpstreamFailedError
  | ConfirmUpstreamTimeoutError
  | ConfirmUpstreamToolGoneError
  | ConfirmUpstreamInputError
  | ConfirmAuditUnavailableError
  | ConfirmApprovalExpiredError
  | ConfirmApprovalPendingError
  | ConfirmTooManyPendingError
  | ConfirmPlanError;

// Every code has its subclass, and every subclass a code of the list: checked at compile time.
const EVERY_CODE_HAS_ITS_CLASS: [ConfirmErrorCode] extends [AnyConfirmError['code']]
  ? [AnyConfirmError['code']] extends [ConfirmErrorCode]
    ? true
    : never
  : never = true;
void EVERY_CODE_HAS_ITS_CLASS;

/**
 * Every code of a start-up or configuration refusal ({@link ConfigError}). Stable: never reused for
 * another meaning. The catalogue with meanings is docs/errors.md.
 */
export type ConfigErrorCode =
  | 'ERR_CONFIG_ROOT'
  | 'ERR_CONFIG_APPROVERS_FILE'
  | 'ERR_CONFIG_APPROVERS_MISSING'
  | 'ERR_CONFIG_APPROVER_NAME'
  | 'ERR_CONFIG_APPROVER_EXISTS'
  | 'ERR_CONFIG_APPROVERS_REQUIRED'
  | 'ERR_CONFIG_RP_ID'
  | 'ERR_CONFIG_ENROLL_TIMEOUT'
  | 'ERR_CONFIG_LISTEN'
  | 'ERR_CONFIG_PUBLIC_URL'
  | 'ERR_CONFIG_BIND_ADDRESS'
  | 'ERR_CONFIG_ALLOWED_HOSTS'
  | 'ERR_CONFIG_JWKS'
  | 'ERR_CONFIG_POLICY'
  | 'ERR_CONFIG_GRANT'
  | 'ERR_CONFIG_NOTIFY'
  | 'ERR_CONFIG_STORE_DRIVER'
  | 'ERR_CONFIG_STORE_SCHEMA';

/**
 * A start-up or configuration refusal: a root that cannot be served, an approvers file that cannot
 * be used, a port that cannot be bound, a public URL, bind address, JWK set, proxy policy or
 * notification channel that is not usable, an enrolment that saved nothing, a store whose driver
 * package is not installed. It never crosses the wire (that is
 * {@link ConfirmError}); the command line prints it and exits with code 2 (an enrolment, 1).
 *
 * `code` is stable; `message` is a fixed sentence naming what is wrong, which never names a
 * command-line flag or command: the command line adds its own wording (see `subject`).
 * Malformed option values of the library's functions (a number out of range, a wrong type) are
 * `TypeError` or `RangeError` instead.
 *
 * @example
 * ```ts
 * import { ConfigError, Roots } from 'mcp-confirm';
 *
 * try {
 *   await Roots.open(['/srv/scratch']);
 * } catch (e) {
 *   if (e instanceof ConfigError && e.code === 'ERR_CONFIG_ROOT') console.error(e.message, e.value);
 * }
 * ```
 */
export class ConfigError extends Error {
  readonly code: ConfigErrorCode;
  /**
   * The words the message begins with when it is about one setting a command line gives by a flag
   * (`the public URL`, `the bind address`, `jwks`, `allowed hosts`): the command line puts its flag
   * in their place. Undefined otherwise.
   */
  readonly subject: string | undefined;
  /** The value refused, exactly as given (a root, a file's path), when the message names one. */
  readonly value: string | undefined;
  constructor(code: ConfigErrorCode, message: string, options?: { subject?: string; value?: string; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.name = 'ConfigError';
    this.subject = options?.subject;
    this.value = options?.value;
  }
}

const OS_REASONS: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  EBUSY: 'resource busy',
  ENOENT: 'no such file or directory',
  ENOTDIR: 'not a directory',
  EISDIR: 'is a directory',
  EEXIST: 'file exists',
  EXDEV: 'cross-device link',
  ELOOP: 'too many symbolic links',
  ENAMETOOLONG: 'name too long',
  EIO: 'input/output error',
};

function describeOsCode(code: string): string {
  const reason = OS_REASONS[code];
  return reason ? ` (${reason})` : '';
}

/**
 * A code a tool's own refusal carries ({@link refuse}): `ERR_` then capital letters, digits and
 * underscores, e.g. `'ERR_TRANSFER_FUNDS'`. Codes starting `ERR_CONFIRM` are reserved for this
 * package's own ({@link ConfirmErrorCode}) and are refused, so no tool's refusal can pass for one of them.
 */
export type ToolRefusalCode = `ERR_${string}`;

/** What a tool's refusal code must match: `^ERR_[A-Z0-9_]+$`. */
const TOOL_REFUSAL_CODE = /^ERR_[A-Z0-9_]+$/;
/** The prefix reserved for this package's own codes (with or without the underscore after it). */
const RESERVED_PREFIX = 'ERR_CONFIRM';
/**
 * Characters a refusal sentence must not hold: controls (C0, DEL, C1: a newline or `\r` would start
 * a forged second line, an ANSI escape rewrites a terminal), format characters (bidi controls,
 * zero-width characters), line and paragraph separators, and default-ignorable code points
 * (Unicode general categories Cc, Cf, Zl, Zp; UAX #44 Default_Ignorable_Code_Point).
 */
const SENTENCE_FORBIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/u;
/** {@link SENTENCE_FORBIDDEN}, every occurrence (for escaping a message that is not a tool's sentence). */
const SENTENCE_FORBIDDEN_ALL = new RegExp(SENTENCE_FORBIDDEN.source, 'gu');
/**
 * Brackets in a sentence (after NFKC, so fullwidth `［` is `[`): square brackets and every other
 * opening or closing punctuation (general categories Ps, Pe) but the ASCII parentheses, so no
 * sentence can hold something that reads as a bracketed `[CODE]`.
 */
const SENTENCE_BRACKET = /[^\P{Ps}(]|[^\P{Pe})]/u;
/** A name of the package's codes in a sentence (after NFKC): `ERR`, joined or not, then `CONFIRM`. */
const SENTENCE_RESERVED_NAME = /ERR[\p{Pc}\p{Pd}\s]*C[O0]NF[I1]RM/iu;
/** Blank-looking code points that are not white space (Braille blank, Hangul fillers, …). */
const BLANK_LOOKING = /[\u2800\uFFFC\u115F\u1160\u3164\uFFA0\u{1D159}\u{13441}\u{13442}\u{16FE4}]/u;
/** Three white-space characters in a row: a gap that can push text onto a line of its own. */
const WHITE_RUN = /\p{White_Space}{3}/u;
/** Most characters in a tool's refusal sentence. */
export const MAX_REFUSAL_SENTENCE_LENGTH = 500;

/** Whether a refusal code, read as a person would (`0` as `O`, `1` as `I`, runs of `_` as one), starts `ERR_CONFIRM`. */
function looksReserved(code: string): boolean {
  return code.replace(/0/g, 'O').replace(/1/g, 'I').replace(/_+/g, '_').startsWith(RESERVED_PREFIX);
}

/**
 * Why `sentence` cannot be a tool's refusal sentence, or `undefined` when it can (the rules are
 * {@link ToolRefusalError}'s constructor's).
 */
function sentenceProblem(sentence: string): string | undefined {
  if (sentence.trim() === '' || !sentence.isWellFormed())
    return 'a tool refusal sentence must be a non-empty, well-formed string';
  if (sentence.length > MAX_REFUSAL_SENTENCE_LENGTH)
    return `a tool refusal sentence must be at most ${MAX_REFUSAL_SENTENCE_LENGTH} characters`;
  if (SENTENCE_FORBIDDEN.test(sentence) || BLANK_LOOKING.test(sentence) || WHITE_RUN.test(sentence))
    return 'a tool refusal sentence must be one line of plain text: no control, format (bidi, zero-width), line- or paragraph-separator, default-ignorable or blank-looking character, and no more than two white-space characters in a row';
  if (!/[\p{L}\p{N}]/u.test(sentence)) return 'a tool refusal sentence must hold a letter or a digit';
  const read = sentence.normalize('NFKC');
  if (SENTENCE_BRACKET.test(read))
    return 'a tool refusal sentence must not contain brackets other than ( ) (no [ ] { } or other opening or closing punctuation, Unicode Ps/Pe): the client reads "[CODE] sentence", and the code goes in the code';
  if (SENTENCE_RESERVED_NAME.test(read))
    return "a tool refusal sentence must not name an ERR_CONFIRM code (ERR then CONFIRM, in any case, joined by nothing, _, - or spaces): those codes are mcp-confirm's own";
  return undefined;
}

/**
 * A refusal's text made one line: every character {@link SENTENCE_FORBIDDEN} names is shown as its
 * escape (`⟨U+000A⟩`), and a lone surrogate as U+FFFD. For messages that may carry what a tool was
 * given (a {@link ConfirmError} a tool threw itself); a tool's own sentence is checked instead.
 */
function oneLine(text: string): string {
  const whole = text.isWellFormed() ? text : text.toWellFormed();
  return whole.replace(
    SENTENCE_FORBIDDEN_ALL,
    (ch) => `⟨U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}⟩`,
  );
}

/**
 * A confirmed tool's own refusal, with the tool's own stable code and sentence (thrown by
 * {@link refuse}). The confirmation layer answers it exactly as it answers its own refusals: an
 * `isError` result whose text is `[CODE] sentence`, a `refused` event and audit line (`failed`
 * when thrown by `act`) with the code. It is not a {@link ConfirmError}: its `code` is never an
 * `ERR_CONFIRM_*` one.
 */
export class ToolRefusalError<C extends ToolRefusalCode = ToolRefusalCode> extends Error {
  readonly code: C;
  /**
   * @param code - the tool's code, matching `^ERR_[A-Z0-9_]+$` and not starting `ERR_CONFIRM`, nor
   *   reading as it with `0` for `O`, `1` for `I` or doubled underscores (`ERR_C0NFIRM_X`, `ERR__CONFIRM_X`).
   * @param sentence - what the client is told (say what was not done): one line of plain text, so
   *   that `[CODE] sentence` cannot show a second refusal. Non-empty, well-formed UTF-16, at most
   *   {@link MAX_REFUSAL_SENTENCE_LENGTH} (500) characters, holding a letter or digit; no control,
   *   format (bidi, zero-width), line- or paragraph-separator or default-ignorable character
   *   (Unicode general categories Cc, Cf, Zl, Zp; UAX #44), no blank-looking one (U+2800 Braille
   *   blank, Hangul fillers), no three white-space characters in a row; and, read after NFKC
   *   (UAX #15: fullwidth and mathematical letters as ASCII), no bracket but `(` `)` (general
   *   categories Ps, Pe) and no `ERR` then `CONFIRM` joined by nothing, `_`, `-` or spaces, any case.
   * @throws {TypeError} when `code` or `sentence` breaks a rule above (the message names the rule,
   *   never the sentence).
   */
  constructor(code: C, sentence: string) {
    if (typeof code !== 'string' || !TOOL_REFUSAL_CODE.test(code)) {
      throw new TypeError(
        'a tool refusal code must match ^ERR_[A-Z0-9_]+$ (ERR_ then capital letters, digits and underscores)',
      );
    }
    if (looksReserved(code)) {
      throw new TypeError(
        'a tool refusal code must not start with ERR_CONFIRM (nor read as it, with 0 for O, 1 for I or doubled underscores): those codes are reserved for mcp-confirm itself',
      );
    }
    const problem =
      typeof sentence === 'string' ? sentenceProblem(sentence) : 'a tool refusal sentence must be a string';
    if (problem !== undefined) throw new TypeError(problem);
    super(sentence);
    this.code = code;
    this.name = 'ToolRefusalError';
  }
}

/**
 * Refuses the current tool call with the tool's own code and sentence: throws a
 * {@link ToolRefusalError}. Call it from a confirmed tool's `fingerprint` or `open` (round 1: nothing
 * is asked), `unchanged`, or `act` before it has done anything (round 2: nothing is done); the
 * client gets an `isError` result `[CODE] sentence`, like the package's own `ERR_CONFIRM_*` refusals.
 * A literal `ERR_CONFIRM_*` code is also a compile-time error.
 *
 * @param code - the tool's stable code, matching `^ERR_[A-Z0-9_]+$`, never starting `ERR_CONFIRM`.
 * @param sentence - a fixed sentence for the client, one line of plain text (the rules are on
 *   {@link ToolRefusalError}'s constructor); it must not echo secrets.
 * @returns never: it always throws.
 * @throws {ToolRefusalError} the refusal, always.
 * @throws {TypeError} instead, when `code` or `sentence` is not acceptable (see {@link ToolRefusalError}).
 * @example
 * ```ts
 * import { refuse } from 'mcp-confirm';
 *
 * const balances = new Map<string, number>([['alice', 5_000]]);
 * // Called from a confirmed tool's `fingerprint` (round 1) or `act` (round 2, before acting).
 * export function checkFunds(from: string, amountCents: number): void {
 *   if ((balances.get(from) ?? 0) < amountCents)
 *     refuse('ERR_TRANSFER_FUNDS', 'Insufficient funds; nothing was transferred.');
 * }
 * ```
 */
export function refuse<C extends ToolRefusalCode>(
  code: C extends `${typeof RESERVED_PREFIX}${string}` ? never : C,
  sentence: string,
): never {
  throw new ToolRefusalError(code, sentence);
}

/** The stable code of a refusal (the package's or a tool's own), or undefined for anything else thrown. */
export function refusalCode(error: unknown): string | undefined {
  return error instanceof ConfirmError || error instanceof ToolRefusalError ? error.code : undefined;
}

/**
 * Maps a thrown value to what crosses the wire: a {@link ConfirmError} or a tool's
 * {@link ToolRefusalError} becomes an `isError` result whose text is `[CODE] message`, on one
 * line (a control, format, separator or default-ignorable character in a `ConfirmError`'s message,
 * which may carry what a tool was given, is shown as its escape, e.g. `⟨U+000A⟩`; a
 * `ToolRefusalError` that no longer keeps its rules is the generic text); anything else becomes
 * generic text that echoes nothing.
 *
 * @param error - anything a handler threw.
 * @returns a `CallToolResult` with `isError: true`.
 */
export function toToolError(error: unknown): CallToolResult {
  // A tool's refusal changed after it was made (or made without its constructor) is held to the rules again.
  if (
    error instanceof ToolRefusalError &&
    (typeof error.code !== 'string' ||
      !TOOL_REFUSAL_CODE.test(error.code) ||
      looksReserved(error.code) ||
      typeof error.message !== 'string' ||
      sentenceProblem(error.message) !== undefined)
  ) {
    return internalErrorResult();
  }
  if (error instanceof ConfirmError || error instanceof ToolRefusalError) {
    return {
      content: [{ type: 'text', text: `[${oneLine(String(error.code))}] ${oneLine(error.message)}` }],
      isError: true,
    };
  }
  return internalErrorResult();
}

function internalErrorResult(): CallToolResult {
  return {
    content: [{ type: 'text', text: 'Internal error in the confirmation layer; nothing was done.' }],
    isError: true,
  };
}
