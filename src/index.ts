/**
 * mcp-confirm: trustworthy human confirmation in front of destructive MCP tool calls
 * (MCP spec 2026-07-28, multi round-trip requests). The public API of the root entry, one explicit
 * list; the stores, HTTP serving, passkey approval and the demo server are subpaths
 * (`mcp-confirm/stores/sqlite`, `/stores/redis`, `/http`, `/approval`, `/demo`).
 *
 * @module mcp-confirm
 */

// The confirmation layer: build it once, register confirmed tools on each server.
export {
  createConfirmation,
  defaultPrincipal,
  OpenedState,
  ChangedBeforeActingError,
  type Confirmation,
  type ConfirmationOptions,
  type ConfirmableTool,
  type ConfirmableToolConfig,
  type ActContext,
  type OpenedResource,
  type ConfirmEvent,
  type GuardOptions,
  MAX_PLAN_CALLS_FORM,
  MAX_PLAN_ARGUMENT_BYTES,
} from './guard/confirmation.js';
export { CONFIRM_KEY, CONFIRM_SCHEMA, GRANT_OFFER_SCHEMA, GRANT_SCOPE } from './guard/answer.js';

// Grants and plans: what an operator allows to be granted, and the plans tool.
export {
  checkGrantPolicy,
  argumentsAccepted,
  pinArguments,
  grantPolicyDigest,
  ARGUMENT_MATCHERS,
  DEFAULT_GRANT_MAX_USES,
  DEFAULT_GRANT_MAX_SECONDS,
  MAX_GRANT_SECONDS,
  type ArgumentMatcher,
  type GrantPolicy,
  type PinnedArgument,
  type PinnedArguments,
} from './grant/matchers.js';
export type { GrantTerms, GrantScope } from './guard/grants.js';
export { PLAN_TOOL, PLAN_TOOL_CONFIG, PlanInput, type PlanArgs } from './guard/planSpec.js';
export type { PlanEntry, PlannedTool } from './guard/plans.js';
export { FORM_FALLBACK_SENTENCE } from './guard/passkeyRound.js';
// Approval by link (passkey approval, clients that cannot elicit): the result's `_meta` key and the pending bound.
export { APPROVAL_META_KEY, type ApprovalLinkMeta } from './guard/linkRound.js';
export { MAX_PENDING_LINK_APPROVALS } from './defaults.js';

// The question: untrusted values rendered visibly and injectively.
export {
  question,
  questionWith,
  renderValue,
  renderPath,
  type RenderOptions,
  type QuestionTag,
} from './prompt/render.js';

// Keys and the sealed state.
export { KeyRing, type KeySpec, type RingKey } from './state/keyRing.js';
export { StateRefusedError, STATE_TYP, MAX_STATE_LENGTH, type ConfirmClaims } from './state/sealer.js';

// Stores: the interfaces and the in-process store (SQLite and Redis are subpaths).
export type { Ledger, SpendOutcome } from './store/ledger.js';
export { isConfirmStore, wrapStore, type ConfirmStore, type ConfirmStoreMethod } from './store/confirmStore.js';
export { isAuditHeadStore, type AuditHead, type AuditHeadStore } from './store/auditHeads.js';
export {
  checkNewGrant,
  checkNewPlan,
  DEFAULT_MAX_GRANTS,
  DEFAULT_MAX_GRANTS_PER_PRINCIPAL,
  MAX_GRANT_TEXT_LENGTH,
  MAX_GRANT_USES,
  MAX_PLAN_SLOTS,
  type Grant,
  type GrantQuery,
  type GrantStore,
  type NewGrant,
  type NewPlan,
  type PlanSlot,
  type SpendCreating,
  type TakeGrantOutcome,
  type TakenPlanSlot,
} from './store/grantStore.js';
export {
  checkNewLinkApproval,
  type LinkStore,
  type LinkedApproval,
  type NewLinkApproval,
  type OpenLinkOutcome,
} from './store/linkStore.js';
export { MemoryLedger, type MemoryLedgerOptions } from './store/memory.js';

// The audit trail: writing it and verifying it.
export { AuditLog, type AuditLogOptions, type AuditSink } from './audit/auditLog.js';
export { AuditKeys, type AuditKey } from './audit/auditKeys.js';
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

// Files: roots fixed at start-up, identity captured in round 1, the verified delete.
export { Roots, type PinnedRoot, type RootsOptions } from './fs/roots.js';
export {
  inspectFile,
  deleteVerified,
  type FileFingerprint,
  type RootIdentity,
  type DirIdentity,
  type FileIdentity,
  type TargetOptions,
  type Deleted,
} from './fs/target.js';
export { findQuarantineLeftovers, type LeftoverScanOptions } from './fs/quarantine.js';

// Refusals on the wire: one class per stable ERR_CONFIRM_* code, their union, and the mapping to a tool result.
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
  ConfirmApprovalPendingError,
  ConfirmTooManyPendingError,
  ConfirmPlanError,
  toToolError,
  type ConfirmErrorCode,
  type AnyConfirmError,
} from './errors.js';

// A tool's own refusals: its own code (never ERR_CONFIRM_*) and sentence, answered like the package's.
export { MAX_REFUSAL_SENTENCE_LENGTH, refuse, ToolRefusalError, type ToolRefusalCode } from './errors.js';

// Start-up and configuration refusals: one class with stable ERR_CONFIG_* codes.
export { ConfigError, type ConfigErrorCode } from './errors.js';
