/**
 * Defaults and bounds shared by the library and the command line, in one place so the two never
 * drift (the CLI's `--help` text and its parsing read the same constants the library's options
 * default to, and the refusals' sentences state the bounds they enforce).
 *
 * Imports nothing, so the CLI can read it before anything else loads (cold start).
 *
 * @module
 */

/**
 * The package's version, as the servers announce it (`serverInfo.version`) and the proxy's upstream
 * client names itself: `'0.2.0'`. test/exports.test.ts keeps it equal to package.json's `version`.
 */
export const PACKAGE_VERSION = '0.2.0';

/** The `aud` claim a state is sealed for when none is given: `'mcp-confirm'`. */
export const DEFAULT_AUDIENCE = 'mcp-confirm';

/** How long a question stays answerable when no TTL is given, in seconds: 300 (5 minutes). */
export const DEFAULT_TTL_SECONDS = 300;

/** The longest TTL a question may have, in seconds: 86,400 (one day). */
export const MAX_TTL_SECONDS = 86_400;

/** How long `approvers enroll` waits for a registration when no timeout is given, in seconds: 300. */
export const DEFAULT_ENROLL_TIMEOUT_SECONDS = 300;

/**
 * How long round 2 waits for the page's decision by default, in seconds: 45, below the 60 s
 * request timeout both MCP SDKs' clients use by default (`DEFAULT_REQUEST_TIMEOUT_MSEC`), so a
 * client whose human has not approved yet is asked again rather than timing out.
 */
export const DEFAULT_APPROVAL_WAIT_SECONDS = 45;

/** The most bytes a proxied call's arguments may have as canonical JSON (RFC 8785) when no bound is given: 1,048,576 (1 MiB). */
export const DEFAULT_MAX_ARGUMENT_BYTES = 1_048_576;

/** How long the proxy waits for one upstream request when no deadline is given, in seconds: 120 (two minutes). */
export const DEFAULT_UPSTREAM_TIMEOUT_SECONDS = 120;

/**
 * How long a passkey approval stays redeemable after it is given, in milliseconds: 120,000 (two
 * minutes), and never past the confirmation's TTL (`ERR_CONFIRM_APPROVAL_EXPIRED` states it).
 */
export const REDEEM_WITHIN_MS = 120_000;

/** Default most uses of one grant, the approving call included: 20. */
export const DEFAULT_GRANT_MAX_USES = 20;

/** Fewest uses a grant policy may give: 2 (the approving call is a grant's first use, so 1 would allow nothing more). */
export const MIN_GRANT_USES = 2;

/** Default longest life of one grant, in seconds: 900 (15 minutes). */
export const DEFAULT_GRANT_MAX_SECONDS = 900;

/** Most calls in one plan (slots of one stored plan): 50 (the passkey page's limit; form answers are held to fewer by the guard). */
export const MAX_PLAN_SLOTS = 50;

/**
 * Most pending approvals by link (clients that cannot elicit, with passkey approval) of one
 * principal at once: 5. One more is refused with `ERR_CONFIRM_TOO_MANY_PENDING`, so an agent
 * cannot bury the human in links.
 */
export const MAX_PENDING_LINK_APPROVALS = 5;

/** The most approvers an approval can require (a quorum, `--approvers-required`): 16. */
export const MAX_APPROVALS_REQUIRED = 16;

/**
 * The longest `--list-max-age` (the proxy's `listMaxAgeSeconds`), in seconds: 3,600 (one hour).
 * Within that age a tool an upstream flipped from read-only to destructive passes unasked, so the
 * bound is kept short.
 */
export const MAX_LIST_MAX_AGE_SECONDS = 3_600;
