/**
 * Refusals of mcp-confirm: one class per kind, each with a stable string code.
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
 * Codes are never reused for another meaning; the catalogue is in the README, "Refusals".
 *
 * @module
 */
import type { CallToolResult } from '@modelcontextprotocol/server';

/** Every code this package can answer with. */
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
  | 'ERR_CONFIRM_APPROVAL_EXPIRED';

/** Base class of every refusal. `code` is stable; `message` is a fixed sentence. */
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
  constructor() {
    super(
      'ERR_CONFIRM_MISMATCH',
      'This confirmation was given for a different tool call (another tool or other arguments); nothing was done. A confirmation only ever serves the exact call it was asked for.',
    );
  }
}

/** The `jti` was already redeemed (accepted, declined or cancelled). */
export class ConfirmSpentError extends ConfirmError {
  constructor() {
    super('ERR_CONFIRM_SPENT', 'This confirmation was already used; nothing was done. Call the tool again to be asked again.');
  }
}

/** The `jti` is not outstanding in this ledger: used, swept after expiry, or issued by another process. */
export class ConfirmUnknownError extends ConfirmError {
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
  constructor() {
    super('ERR_CONFIRM_EXPIRED', 'This confirmation has expired; nothing was done. Call the tool again to be asked again.');
  }
}

/** Too many confirmations outstanding (per principal or in total); round 1 is refused rather than grow. */
export class ConfirmCapacityError extends ConfirmError {
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
  constructor(options?: { cause?: unknown }) {
    super('ERR_CONFIRM_LEDGER_UNAVAILABLE', 'The confirmation ledger is unavailable; nothing was done. Try again later.', options);
  }
}

/** An argument was refused before asking (empty, NUL, not well-formed UTF-16, not canonicalisable). */
export class ConfirmBadArgumentError extends ConfirmError {
  constructor(detail: string) {
    super('ERR_CONFIRM_BAD_ARGUMENT', `Bad argument: ${detail}; nothing was asked and nothing was done.`);
  }
}

/** The path resolves outside every root fixed at start-up. */
export class ConfirmOutsideRootsError extends ConfirmError {
  constructor(detail = 'the path is outside the allowed roots') {
    super('ERR_CONFIRM_OUTSIDE_ROOTS', `Refused: ${detail}; nothing was done.`);
  }
}

/** The path names a directory, FIFO, socket, device or anything but a regular file. */
export class ConfirmNotRegularFileError extends ConfirmError {
  constructor(kind: string) {
    super('ERR_CONFIRM_NOT_REGULAR_FILE', `Refused: the path names a ${kind}, not a regular file; nothing was done.`);
  }
}

/** The path, or a directory on the way to it, is a symbolic link. */
export class ConfirmSymlinkError extends ConfirmError {
  constructor(detail = 'the path is a symbolic link') {
    super('ERR_CONFIRM_SYMLINK', `Refused: ${detail}; nothing was done.`);
  }
}

/** The resource is no longer the one the human saw. */
export class ConfirmChangedError extends ConfirmError {
  constructor(detail = '') {
    super(
      'ERR_CONFIRM_CHANGED',
      'The file changed after you confirmed it; nothing was deleted; ask again.' + (detail ? ` ${detail}` : ''),
    );
  }
}

/** The resource no longer exists (or did not exist when asked). */
export class ConfirmGoneError extends ConfirmError {
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
  readonly osCode: string;
  constructor(osCode: string, what: string, options?: { cause?: unknown }) {
    super('ERR_CONFIRM_OS', `The operating system refused to ${what}: ${osCode}${describeOsCode(osCode)}; nothing was deleted.`, options);
    this.osCode = osCode;
  }
}

/** The client cannot answer a form elicitation (a 2025-era client without the capability). */
export class ConfirmNoElicitationError extends ConfirmError {
  constructor() {
    super(
      'ERR_CONFIRM_NO_ELICITATION',
      'This tool needs a human confirmation, but the client did not declare the elicitation capability, so it cannot ask; nothing was done.',
    );
  }
}

/** Proxy: the policy denies this tool (it is not listed either). */
export class ConfirmPolicyDeniedError extends ConfirmError {
  constructor() {
    super('ERR_CONFIRM_POLICY_DENIED', 'The proxy\'s policy denies this tool; nothing was forwarded.');
  }
}

/**
 * Proxy: the upstream server is not running (it exited, crashed or never
 * started). The proxy never restarts it: every call answers this until the
 * client disconnects. `detail` is the proxy's own description (exit code or signal).
 */
export class ConfirmUpstreamDownError extends ConfirmError {
  constructor(detail: string) {
    super('ERR_CONFIRM_UPSTREAM_DOWN', `The upstream server is down (${detail}); nothing was forwarded. The proxy does not restart it: restart the proxy.`);
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
  constructor() {
    super('ERR_CONFIRM_UPSTREAM_TOOL_GONE', 'The upstream server does not list this tool (any more); nothing was forwarded.');
  }
}

/**
 * Proxy: the upstream asked for input itself (an `input_required` result,
 * or an elicitation or sampling request). The proxy refuses it: no prompt of
 * the upstream may pose as the proxy's question.
 */
export class ConfirmUpstreamInputError extends ConfirmError {
  constructor() {
    super(
      'ERR_CONFIRM_UPSTREAM_INPUT',
      'The upstream server asked for input of its own (input_required); the proxy refuses to relay it, so no upstream prompt can pose as the confirmation. The call did not complete.',
    );
  }
}

/**
 * `ERR_CONFIRM_APPROVAL_EXPIRED`: with passkey approval, the approval was given more than 120 s before
 * the retry that would redeem it, or the approval page's record is gone (expired with the TTL,
 * or kept by another store). The confirmation is spent; nothing was done.
 */
export class ConfirmApprovalExpiredError extends ConfirmError {
  constructor() {
    super(
      'ERR_CONFIRM_APPROVAL_EXPIRED',
      'The passkey approval has expired (it must be redeemed within 120 seconds of being given, and before the confirmation expires); nothing was done. Call the tool again to be asked again.',
    );
  }
}

/**
 * The audit trail (`--audit`, `AuditLog`) could not record a decision line,
 * so the decision is refused rather than left unrecorded (fail closed): a
 * confirmed action whose "confirmed" line cannot be written is not done.
 */
export class ConfirmAuditUnavailableError extends ConfirmError {
  constructor(options?: { cause?: unknown }) {
    super('ERR_CONFIRM_AUDIT_UNAVAILABLE', 'The audit trail could not be written, so nothing was done (a decision is never left unrecorded). Try again later.', options);
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
 * Maps a thrown value to what crosses the wire: a {@link ConfirmError} becomes an
 * `isError` result whose text is `[CODE] message`; anything else becomes
 * `[ERR_CONFIRM_OS]`-free generic text that echoes nothing.
 *
 * @param error - anything a handler threw.
 * @returns a `CallToolResult` with `isError: true`.
 */
export function toToolError(error: unknown): CallToolResult {
  if (error instanceof ConfirmError) {
    return { content: [{ type: 'text', text: `[${error.code}] ${error.message}` }], isError: true };
  }
  return { content: [{ type: 'text', text: 'Internal error in the confirmation layer; nothing was done.' }], isError: true };
}
