/**
 * The serving flags `mcp-confirm` (serving `delete_file`) and `mcp-confirm proxy` share: one
 * option table and one parser, so both commands take the same flags with the same rules and
 * messages, and the runtime (`runtime.ts`) opens what they name the same way.
 *
 * @module
 */
import { DEFAULT_TTL_SECONDS } from '../defaults.js';
import { APPROVAL_OPTIONS, parseApprovalFlags, type ApprovalFlags } from './approvalArgs.js';
import { AUDIT_OPTIONS, parseAuditFlag } from './auditArgs.js';
import { checkAudience, toUsageError, wholeSeconds, type FlagValues } from './common.js';
import { HTTP_OPTIONS, parseHttpSpec, type HttpSpec } from './httpArgs.js';

/** The ledger a command serves with when `--ledger` is not given. */
export const DEFAULT_LEDGER = 'memory';

/**
 * The `parseArgs` option table of the serving flags: `--audience`, `--ttl`, `--key-file`,
 * `--ledger`, the HTTP flags, `--audit` and the approval flags.
 */
export const SERVING_OPTIONS = {
  audience: { type: 'string' },
  ttl: { type: 'string' },
  'key-file': { type: 'string' },
  ledger: { type: 'string' },
  ...HTTP_OPTIONS,
  ...AUDIT_OPTIONS,
  ...APPROVAL_OPTIONS,
} as const;

/** What the serving flags ask for: everything the runtime opens (`openRuntime`). */
export interface ServingFlags {
  audience: string;
  ttlSeconds: number;
  /** `--key-file PATH` (undefined: one random key per process). */
  keyFile: string | undefined;
  /** `--ledger SPEC`: `memory`, `sqlite:PATH` or `redis://…`. */
  ledger: string;
  /** Serve Streamable HTTP instead of stdio (undefined: stdio). */
  http: HttpSpec | undefined;
  /** `--audit PATH`: the audit trail's path prefix (undefined: no trail). */
  audit: string | undefined;
  /** `--approval` and its flags (`--approvers`, `--approval-port`, `--approval-wait`, `--public-url`, `--notify`…). */
  approval: ApprovalFlags;
}

type ServingValues = FlagValues<typeof SERVING_OPTIONS>;

/**
 * Validates the serving flags, in this order: `--ttl`, `--audience`, `--http` and its auth flags,
 * `--audit` (with `--key-file`), then the approval flags (which depend on `--http`).
 *
 * @throws {UsageError} (exit 2) naming the first bad flag.
 */
export function parseServingFlags(values: ServingValues): ServingFlags {
  const ttlSeconds = values.ttl === undefined ? DEFAULT_TTL_SECONDS : wholeSeconds('--ttl', values.ttl);
  const audience = checkAudience(values.audience);
  let http: HttpSpec | undefined;
  let audit: string | undefined;
  try {
    http = parseHttpSpec(values);
    audit = parseAuditFlag(values);
  } catch (e) {
    throw toUsageError(e);
  }
  return {
    audience,
    ttlSeconds,
    keyFile: values['key-file'],
    ledger: values.ledger ?? DEFAULT_LEDGER,
    http,
    audit,
    approval: parseApprovalFlags(values, http),
  };
}
