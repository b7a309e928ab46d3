/**
 * `mcp-confirm/approval`: passkey approval (MCP spec 2026-07-28, client/elicitation URL mode; W3C Web
 * Authentication Level 3). A subpath export, so the root import never loads the WebAuthn library.
 *
 * @module
 */
export { PasskeyApproval, REDEEM_WITHIN_MS, CHALLENGE_TTL_MS, DEFAULT_APPROVAL_WAIT_SECONDS, type PasskeyApprovalOptions, type ApprovalView, type ApprovalEvent } from './passkey.js';
export {
  loadApproversForServer,
  readApprovers,
  writeApprovers,
  approversFor,
  jwtPrincipalFor,
  describePrincipal,
  type Approver,
  type ApproversFile,
} from './approvers.js';
export { enrollApprover, type EnrollOptions } from './enroll.js';
export { parsePublicUrl } from './publicUrl.js';
export { ConfigError, type ConfigErrorCode } from '../errors.js';
export { isApprovalStore, type ApprovalStore, type ApprovalRecord, type ApprovalStatus, type DecideOutcome, type NewApproval } from '../store/approvalStore.js';
