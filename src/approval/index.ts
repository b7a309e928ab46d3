/**
 * `mcp-confirm/approval`: passkey approval (MCP spec 2026-07-28, client/elicitation URL mode; W3C Web
 * Authentication Level 3). A subpath export, so the root import never loads the WebAuthn library.
 *
 * @module mcp-confirm/approval
 */
export { PasskeyApproval, type PasskeyApprovalOptions, type ApprovalNotifyOptions } from './passkey.js';
export { parseNotifySpec, NotifyChannel, type NotifyKind, type NotifySpecOptions } from '../notify/spec.js';
export { Notifier, type NotifierOptions, type NotifyCounts } from '../notify/notifier.js';
export type {
  ApprovalNotice,
  ApprovalNoticeType,
  ApprovalDecision as ApprovalNoticeDecision,
} from '../notify/notice.js';
export type { ApprovalView, ApprovalEvent, GrantRevokedOnPage } from './page.js';
export { CHALLENGE_TTL_MS } from './webauthn.js';
export { DEFAULT_APPROVAL_WAIT_SECONDS } from '../defaults.js';
export { REDEEM_WITHIN_MS } from '../store/approvalStore.js';
export {
  loadApproversForServer,
  readApprovers,
  writeApprovers,
  approversFor,
  checkApproversRequired,
  type Approver,
  type ApproversFile,
} from './approvers.js';
export { jwtPrincipalFor, describePrincipal } from '../principals.js';
export { enrollApprover, type EnrollOptions } from './enroll.js';
export { parsePublicUrl } from './publicUrl.js';
export { ConfigError, type ConfigErrorCode } from '../errors.js';
export {
  isApprovalStore,
  MAX_APPROVALS_REQUIRED,
  type ApprovalStore,
  type ApprovalVote,
  type CountedApproval,
  type CountOutcome,
  type ApprovalRecord,
  type ApprovalScope,
  type ApprovalDecision,
  type ApprovalStatus,
  type DecideOutcome,
  type NewApproval,
} from '../store/approvalStore.js';
