/**
 * Starts the passkey approval page for `--approval passkey`, for `mcp-confirm` (serving
 * `delete_file`) and `mcp-confirm proxy` alike: over stdio its own listener on localhost
 * (`--approval-port`), over `--http` no listener of its own (the HTTP server routes `/approve/…` and
 * `/assets/…` to it) with the origin and RP ID of `--public-url`. Loaded only with `--approval
 * passkey`, so a form-mode server never loads the WebAuthn library.
 *
 * @module
 */
import { isApprovalStore } from '../approval/store.js';
import { ApproversFileError, loadApproversForServer } from '../approval/approvers.js';
import { ListenError } from '../approval/http.js';
import { PasskeyApproval, type ApprovalEvent } from '../approval/passkey.js';
import { isLocalhostName } from '../approval/publicUrl.js';
import { UsageError } from './common.js';
import type { ApprovalFlags } from './approvalArgs.js';

/** What {@link startPasskeyApproval} needs besides the flags. */
export interface ApprovalStartOptions {
  /** The ledger (or its metrics wrapper, which forwards the approval records): it must hold approvals. */
  store: unknown;
  /** Real paths the approvers file must not be inside (the roots; none for the proxy). */
  forbiddenDirs: readonly string[];
  /** Receives the page's decisions (for stderr). */
  onEvent: (event: ApprovalEvent) => void;
  /** Diagnostics (stderr). */
  warn: (line: string) => void;
}

/**
 * Loads the approvers (once) and starts the page.
 *
 * @param flags - from {@link parseApprovalFlags} with `approval: 'passkey'`.
 * @throws {UsageError} (exit 2) when the ledger cannot hold approvals, the approvers file is
 *   missing, empty, unsafe, inside a forbidden directory or enrolled for another RP ID (naming the
 *   approvers), or the loopback port cannot be bound.
 */
export async function startPasskeyApproval(flags: ApprovalFlags, options: ApprovalStartOptions): Promise<PasskeyApproval> {
  if (flags.approval !== 'passkey' || flags.approvers === undefined) throw new TypeError('startPasskeyApproval needs --approval passkey with --approvers');
  if (!isApprovalStore(options.store)) throw new UsageError('--approval passkey: this ledger cannot hold approvals');
  try {
    const approvers = await loadApproversForServer(flags.approvers, options.forbiddenDirs);
    const common = { store: options.store, approvers, waitSeconds: flags.approvalWaitSeconds, onEvent: options.onEvent };
    if (flags.publicUrl !== undefined) {
      if (flags.publicUrl.protocol === 'http:' && !isLocalhostName(flags.publicUrl.hostname)) {
        options.warn(`warning: --public-url ${flags.publicUrl.origin}: browsers allow passkeys only in a secure context, which http:// is only for localhost names; use https (e.g. a TLS proxy in front)`);
      }
      return await PasskeyApproval.start({ ...common, publicUrl: flags.publicUrl });
    }
    return await PasskeyApproval.start({ ...common, port: flags.approvalPort });
  } catch (e) {
    if (e instanceof ApproversFileError || e instanceof ListenError || e instanceof RangeError) throw new UsageError(`--approval passkey: ${e.message}`);
    throw e;
  }
}
