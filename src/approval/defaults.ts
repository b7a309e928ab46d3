/**
 * Defaults of the passkey approval that the command line needs without loading the approval page
 * (and its WebAuthn library) at start-up.
 *
 * @module
 */

/**
 * How long round 2 waits for the page's decision by default, in seconds: 45, below the 60 s
 * request timeout both MCP SDKs' clients use by default (`DEFAULT_REQUEST_TIMEOUT_MSEC`), so a
 * client whose human has not approved yet is asked again rather than timing out.
 */
export const DEFAULT_APPROVAL_WAIT_SECONDS = 45;
