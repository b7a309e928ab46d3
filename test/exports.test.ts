/**
 * The package as a user imports it: the `exports` map of package.json, resolved
 * by Node itself (package self-reference) against the built dist/.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

const DIST = resolve(import.meta.dirname, '../dist');

beforeAll(() => {
  if (!existsSync(join(DIST, 'index.js'))) throw new Error('dist/ is missing: run npm run build first');
});

/** Every module reachable from `entry` through relative imports, and every bare import seen. */
function importGraph(entry: string): { files: Set<string>; bare: Set<string> } {
  const files = new Set<string>();
  const bare = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(
      /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g,
    )) {
      const spec = m[1] ?? m[2]!;
      if (spec.startsWith('.')) visit(resolve(dirname(file), spec));
      else bare.add(spec);
    }
  };
  visit(entry);
  return { files, bare };
}

describe('package exports', () => {
  it('resolves mcp-confirm, mcp-confirm/stores/sqlite, mcp-confirm/stores/redis and mcp-confirm/stores/postgres to the built modules', async () => {
    const root = await import('mcp-confirm');
    expect(typeof root.createConfirmation).toBe('function');
    expect(typeof root.MemoryLedger).toBe('function');
    const { SqliteLedger } = await import('mcp-confirm/stores/sqlite');
    const { RedisLedger } = await import('mcp-confirm/stores/redis');
    expect(typeof SqliteLedger).toBe('function');
    expect(typeof RedisLedger).toBe('function');
    const { PostgresStore, POSTGRES_SCHEMA_VERSION } = await import('mcp-confirm/stores/postgres');
    expect(typeof PostgresStore.open).toBe('function');
    expect(POSTGRES_SCHEMA_VERSION).toBe(1);
  });

  it('the root entry exports exactly its curated list: no demo server and no internals (sealer, digest, audit key derivation constants, URL-mode sentence)', async () => {
    const root = await import('mcp-confirm');
    expect(Object.keys(root).sort()).toEqual(
      [
        // the confirmation layer
        'createConfirmation',
        'defaultPrincipal',
        'CONFIRM_KEY',
        'CONFIRM_SCHEMA',
        'OpenedState',
        'ChangedBeforeActingError',
        'FORM_FALLBACK_SENTENCE',
        'MAX_PLAN_CALLS_FORM',
        'MAX_PLAN_ARGUMENT_BYTES',
        'GRANT_OFFER_SCHEMA',
        'GRANT_SCOPE',
        // grants and plans
        'checkGrantPolicy',
        'argumentsAccepted',
        'pinArguments',
        'grantPolicyDigest',
        'ARGUMENT_MATCHERS',
        'DEFAULT_GRANT_MAX_USES',
        'DEFAULT_GRANT_MAX_SECONDS',
        'MAX_GRANT_SECONDS',
        'PLAN_TOOL',
        'PLAN_TOOL_CONFIG',
        'PlanInput',
        // the question
        'question',
        'questionWith',
        'renderValue',
        'renderPath',
        // keys and the sealed state
        'KeyRing',
        'StateRefusedError',
        'STATE_TYP',
        'MAX_STATE_LENGTH',
        // stores
        'isConfirmStore',
        'wrapStore',
        'isAuditHeadStore',
        'MemoryLedger',
        'checkNewGrant',
        'checkNewPlan',
        'DEFAULT_MAX_GRANTS',
        'DEFAULT_MAX_GRANTS_PER_PRINCIPAL',
        'MAX_GRANT_TEXT_LENGTH',
        'MAX_GRANT_USES',
        'MAX_PLAN_SLOTS',
        'checkNewLinkApproval',
        // approval by link
        'APPROVAL_META_KEY',
        'MAX_PENDING_LINK_APPROVALS',
        // the audit trail
        'AuditLog',
        'AuditKeys',
        'verifyAuditTrail',
        'AUDIT_GENESIS',
        // files
        'Roots',
        'inspectFile',
        'deleteVerified',
        'findQuarantineLeftovers',
        // start-up and configuration refusals
        'ConfigError',
        // refusals on the wire
        'ConfirmError',
        'ConfirmMismatchError',
        'ConfirmSpentError',
        'ConfirmUnknownError',
        'ConfirmExpiredError',
        'ConfirmCapacityError',
        'ConfirmLedgerUnavailableError',
        'ConfirmBadArgumentError',
        'ConfirmOutsideRootsError',
        'ConfirmNotRegularFileError',
        'ConfirmSymlinkError',
        'ConfirmChangedError',
        'ConfirmGoneError',
        'ConfirmOsError',
        'ConfirmNoElicitationError',
        'ConfirmPolicyDeniedError',
        'ConfirmUpstreamDownError',
        'ConfirmUpstreamFailedError',
        'ConfirmUpstreamTimeoutError',
        'ConfirmUpstreamToolGoneError',
        'ConfirmUpstreamInputError',
        'ConfirmAuditUnavailableError',
        'ConfirmApprovalExpiredError',
        'ConfirmApprovalPendingError',
        'ConfirmTooManyPendingError',
        'ConfirmPlanError',
        'toToolError',
        // a tool's own refusals
        'refuse',
        'ToolRefusalError',
        'MAX_REFUSAL_SENTENCE_LENGTH',
      ].sort(),
    );
  });

  it('resolves mcp-confirm/demo to the demo server and exactly its list, which the root import does not load', async () => {
    const demo = await import('mcp-confirm/demo');
    expect(Object.keys(demo).sort()).toEqual(
      ['createDemoServer', 'registerDeleteFile', 'deleteFileQuestion', 'SERVER_INFO', 'DeleteFileInput'].sort(),
    );
    expect(typeof demo.createDemoServer).toBe('function');
    // The version the server announces is the package's.
    const { version } = JSON.parse(readFileSync(join(DIST, '..', 'package.json'), 'utf8')) as { version: string };
    expect(demo.SERVER_INFO).toEqual({ name: 'mcp-confirm', version });
    const { files } = importGraph(join(DIST, 'index.js'));
    expect([...files].filter((f) => f.includes(join('dist', 'demo')))).toEqual([]);
    // Control: the walker reaches the demo's modules from the subpath's entry.
    expect(
      [...importGraph(join(DIST, 'demo', 'index.js')).files].some((f) =>
        f.endsWith(join('dist', 'demo', 'deleteFile.js')),
      ),
    ).toBe(true);
  });

  it('resolves mcp-confirm/http to the HTTP serving module, which the root import does not load', async () => {
    const http = await import('mcp-confirm/http');
    expect(typeof http.createHttpApp).toBe('function');
    expect(typeof http.createJwtVerifier).toBe('function');
    const { files } = importGraph(join(DIST, 'index.js'));
    expect([...files].some((f) => f.includes(`${join('dist', 'http')}`))).toBe(false);
  });

  it('loads no native driver from the root import: neither better-sqlite3 nor redis is reachable statically', () => {
    const { bare } = importGraph(join(DIST, 'index.js'));
    expect([...bare].filter((b) => /better-sqlite3|^redis|@redis\//.test(b))).toEqual([]);
    expect(bare.has('canonicalize')).toBe(true); // control: the walker does see bare imports
  });

  it("imports jose only from the HTTP serving modules: states are sealed and opened over node:crypto (jose verifies bearer tokens and is the tests' oracle)", () => {
    const { bare, files } = importGraph(join(DIST, 'index.js'));
    for (const entry of ['store/sqlite.js', 'store/redis.js', 'state/sealer.js', 'guard/confirmation.js'])
      for (const f of importGraph(join(DIST, entry)).bare) bare.add(f);
    expect([...bare].filter((b) => b === 'jose' || b.startsWith('jose/'))).toEqual([]);
    expect(bare.has('node:crypto')).toBe(true); // control
    expect([...files].some((f) => f.endsWith('state/sealer.js'))).toBe(true);
    // control: the walker does find jose where it is used, behind --http
    expect(importGraph(join(DIST, 'http', 'jwtAuth.js')).bare.has('jose')).toBe(true);
  });

  it('resolves mcp-confirm/approval, and the root import does not reach the WebAuthn library', async () => {
    const approval = await import('mcp-confirm/approval');
    const { PasskeyApproval, loadApproversForServer } = approval;
    expect(typeof PasskeyApproval.start).toBe('function');
    expect(typeof loadApproversForServer).toBe('function');
    // Its refusals are the root's ConfigError (the classes it replaced are gone).
    expect(approval.ConfigError).toBe((await import('mcp-confirm')).ConfigError);
    expect(Object.keys(approval).filter((k) => /^(ApproversFile|Enroll|Listen|PublicUrl)Error$/.test(k))).toEqual([]);
    const { bare } = importGraph(join(DIST, 'index.js'));
    expect([...bare].filter((b) => b.startsWith('@simplewebauthn/'))).toEqual([]);
    // Control: the walker sees it from the subpath's entry.
    expect(importGraph(join(DIST, 'approval/index.js')).bare.has('@simplewebauthn/server')).toBe(true);
  });

  it("the default approval wait (DEFAULT_APPROVAL_WAIT_SECONDS) is below both MCP SDK clients' default request timeout, so a pending approval is asked again before a client gives up", async () => {
    const { DEFAULT_APPROVAL_WAIT_SECONDS } = await import('mcp-confirm/approval');
    const v2 = (await import('@modelcontextprotocol/client')).DEFAULT_REQUEST_TIMEOUT_MSEC;
    const v1 = (await import('@modelcontextprotocol/sdk/shared/protocol.js')).DEFAULT_REQUEST_TIMEOUT_MSEC;
    expect(DEFAULT_APPROVAL_WAIT_SECONDS).toBe(45);
    // With room for the rounds' own time on a busy server.
    expect(DEFAULT_APPROVAL_WAIT_SECONDS * 1000).toBeLessThanOrEqual(Math.min(v1, v2) - 10_000);
  });
});
