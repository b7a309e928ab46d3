/**
 * mcp-confirm: trustworthy human confirmation in front of destructive MCP tool calls
 * (MCP spec 2026-07-28, multi round-trip requests). The public API, one explicit list.
 *
 * @module
 */
export {
  createConfirmation,
  defaultPrincipal,
  CONFIRM_KEY,
  CONFIRM_SCHEMA,
  OpenedState,
  ChangedBeforeActingError,
  type Confirmation,
  type ConfirmationOptions,
  type ConfirmableTool,
  type ConfirmableToolConfig,
  type ActContext,
  type ConfirmEvent,
  URL_MODE_SENTENCE,
  FORM_FALLBACK_SENTENCE,
} from './guard/confirmation.js';
export { AuditLog, type AuditLogOptions, type AuditSink } from './audit/auditLog.js';
export { AuditKeys, AUDIT_HKDF_INFO, AUDIT_HKDF_SALT, type AuditKey } from './audit/auditKeys.js';
export {
  verifyAuditTrail,
  AUDIT_GENESIS,
  type AuditDecision,
  type AuditEventName,
  type AuditLine,
  type AuditOpening,
  type AuditClosing,
  type AuditTrailInfo,
  type AuditVerdict,
  type VerifyAuditOptions,
} from './audit/chain.js';
export { isAuditHeadStore, type AuditHead, type AuditHeadStore } from './store/auditHeads.js';
export { KeyRing, type KeySpec, type RingKey } from './state/keyRing.js';
export { Sealer, StateRefusedError, STATE_TYP, MAX_STATE_LENGTH, type ConfirmClaims } from './state/sealer.js';
export { canonicalDigest } from './state/digest.js';
export type { Ledger, SpendOutcome } from './store/ledger.js';
export { isConfirmStore, wrapStore, type ConfirmStore, type ConfirmStoreMethod } from './store/confirmStore.js';
export { MemoryLedger, type MemoryLedgerOptions } from './store/memory.js';
export { question, questionWith, renderValue, renderPath, type RenderOptions } from './prompt/render.js';
export { Roots, RootError, type PinnedRoot } from './fs/roots.js';
export { inspectFile, deleteVerified, findQuarantineLeftovers, type FileFingerprint } from './fs/target.js';
export {
  ConfirmError,
  ConfirmMismatchError,
  ConfirmSpentError,
  ConfirmUnknownError,
  ConfirmExpiredError,
  ConfirmCapacityError,
  ConfirmLedgerUnavailableError,
  ConfirmBadArgumentError,
  ConfirmOutsideRootsError,
  ConfirmNotRegularFileError,
  ConfirmSymlinkError,
  ConfirmChangedError,
  ConfirmGoneError,
  ConfirmOsError,
  ConfirmNoElicitationError,
  ConfirmPolicyDeniedError,
  ConfirmUpstreamDownError,
  ConfirmUpstreamFailedError,
  ConfirmUpstreamTimeoutError,
  ConfirmUpstreamToolGoneError,
  ConfirmUpstreamInputError,
  ConfirmAuditUnavailableError,
  ConfirmApprovalExpiredError,
  toToolError,
  type ConfirmErrorCode,
} from './errors.js';
