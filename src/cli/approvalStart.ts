/**
 * Starts the passkey approval page for `--approval passkey`, for `mcp-confirm` (serving
 * `delete_file`) and `mcp-confirm proxy` alike: over stdio its own listener on localhost
 * (`--approval-port`), over `--http` no listener of its own (the HTTP server routes `/approve/…` and
 * `/assets/…` to it) with the origin and RP ID of `--public-url`. Loaded only with `--approval
 * passkey`, so a form-mode server never loads the WebAuthn library. With `--notify`, the page's
 * approvals go to the channels through one `Notifier` reporting on the command's stderr.
 *
 * @module
 */
import { isConfirmStore, type ConfirmStore } from '../store/confirmStore.js';
import { checkApproversRequired, loadApproversForServer, type ApproversFile } from '../approval/approvers.js';
import { describePrincipal } from '../principals.js';
import { PasskeyApproval, type ApprovalEvent } from '../approval/passkey.js';
import { Notifier } from '../notify/notifier.js';
import { isLocalhostName } from '../approval/publicUrl.js';
import { asUsageError, UsageError } from './common.js';
import type { ApprovalFlags } from './approvalArgs.js';

/** What {@link startPasskeyApproval} needs besides the flags. */
export interface ApprovalStartOptions {
  /** The store (or its metrics wrapper, which forwards the approval records): it must hold approvals. */
  store: ConfirmStore | undefined;
  /** Real paths the approvers file must not be inside (the roots; none for the proxy). */
  forbiddenDirs: readonly string[];
  /** Receives the page's decisions (for stderr). */
  onEvent: (event: ApprovalEvent) => void;
  /** Diagnostics (stderr). */
  warn: (line: string) => void;
  /**
   * The issuer every principal's token comes from (`--auth-issuer`), or undefined when every
   * caller is the one principal `local` (stdio, or `--http` without tokens). Used to warn at
   * start-up when no approver could approve any call this server will see.
   */
  authIssuer?: string | undefined;
  /** A per-tool quorum (the proxy's policy); defaults to `--approvers-required` for every call. */
  quorum?: { forTool: (tool: string) => number; largest: number } | undefined;
}

/**
 * The warning for an approvers file none of whose approvers can approve this server's calls, or
 * undefined when at least one can. Without tokens every call's principal is `local`; with
 * `--auth-issuer ISS` every principal is `["jwt", ISS, sub]`, so an approver enrolled for another
 * issuer string (a trailing `/` is another string) approves nothing here.
 */
export function unusableApproversWarning(approvers: ApproversFile, authIssuer: string | undefined): string | undefined {
  const all = approvers.approvers.flatMap((a) => a.principals);
  const usable = all.some((p) => {
    if (authIssuer === undefined) return p === 'local';
    try {
      const parsed = JSON.parse(p) as unknown;
      return Array.isArray(parsed) && parsed[0] === 'jwt' && parsed[1] === authIssuer;
    } catch {
      return false;
    }
  });
  if (usable) return undefined;
  const wanted =
    authIssuer === undefined
      ? 'the principal local (no tokens)'
      : `token principals of issuer ${JSON.stringify(authIssuer)} (--auth-issuer)`;
  const have = [...new Set(all.map(describePrincipal))].slice(0, 5).join('; ') || 'none';
  return `warning: --approvers: no approver may approve calls here: this server's calls have ${wanted}, the approvers are enrolled for: ${have}. Every approval would be refused on the page; enrol with approvers enroll ${authIssuer === undefined ? 'without --principal' : `--principal ${authIssuer} SUB`}`;
}

/**
 * Loads the approvers (once) and starts the page.
 *
 * @param flags - from {@link parseApprovalFlags} with `approval: 'passkey'`.
 * @throws {UsageError} (exit 2) when the ledger cannot hold approvals, the approvers file is
 *   missing, empty, unsafe, inside a forbidden directory or enrolled for another RP ID (naming the
 *   approvers), a principal has fewer approvers than the quorum (`--approvers-required`, or the
 *   largest of the proxy policy's `quorum`), or the loopback port cannot be bound.
 */
export async function startPasskeyApproval(
  flags: ApprovalFlags,
  options: ApprovalStartOptions,
): Promise<PasskeyApproval> {
  if (flags.approval !== 'passkey' || flags.approvers === undefined)
    throw new TypeError('startPasskeyApproval needs --approval passkey with --approvers');
  if (!isConfirmStore(options.store)) throw new UsageError('--approval passkey: this ledger cannot hold approvals');
  try {
    const approvers = await loadApproversForServer(flags.approvers, options.forbiddenDirs);
    const unusable = unusableApproversWarning(approvers, options.authIssuer);
    if (unusable !== undefined) options.warn(unusable);
    // A quorum the approvers cannot meet would refuse every call: a start-up error instead.
    const quorum = options.quorum;
    if (quorum !== undefined) {
      try {
        checkApproversRequired(approvers, quorum.largest);
      } catch (e) {
        throw asUsageError(e, '--policy quorum: ');
      }
    } else if (flags.approversRequired > 1) {
      try {
        checkApproversRequired(approvers, flags.approversRequired);
      } catch (e) {
        throw asUsageError(e, '--approvers-required: ');
      }
    }
    // --notify: one notifier for the page's approvals; its reports (channels by kind and origin only) on stderr.
    const notify =
      flags.notify.length === 0
        ? {}
        : {
            notify: {
              to: new Notifier({ channels: flags.notify, log: options.warn }),
              includeQuestion: flags.notifyIncludeQuestion,
            },
          };
    const common = {
      store: options.store,
      approvers,
      waitSeconds: flags.approvalWaitSeconds,
      onEvent: options.onEvent,
      ...notify,
      approversRequired: quorum?.forTool ?? flags.approversRequired,
    };
    if (flags.publicUrl !== undefined) {
      if (flags.publicUrl.protocol === 'http:' && !isLocalhostName(flags.publicUrl.hostname)) {
        options.warn(
          `warning: --public-url ${flags.publicUrl.origin}: browsers allow passkeys only in a secure context, which http:// is only for localhost names; use https (e.g. a TLS proxy in front)`,
        );
      }
      return await PasskeyApproval.start({ ...common, publicUrl: flags.publicUrl });
    }
    return await PasskeyApproval.start({ ...common, port: flags.approvalPort });
  } catch (e) {
    if (e instanceof RangeError) throw new UsageError(`--approval passkey: ${e.message}`);
    throw asUsageError(e, '--approval passkey: ', flags.publicUrl);
  }
}
