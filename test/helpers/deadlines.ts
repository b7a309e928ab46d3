/**
 * The one source of the deadlines of process-heavy tests (spawning servers, the demo, redis-server,
 * race children). They are not measures of speed: they are generous bounds that only turn a hang
 * into a failure. A loaded 2-core machine starts a Node process in seconds, not milliseconds, so
 * every bound derives from {@link PROCESS_DEADLINE_MS}, far above any start-up seen under load.
 * Ordering is proven by order (wait for an event), never by a short deadline.
 */

/** How long one child process (a CLI run, a server's start-up, a race child's reply) may take. */
export const PROCESS_DEADLINE_MS = 120_000;

/** vitest's per-test and per-hook timeout: a test may start several processes one after another. */
export const TEST_TIMEOUT_MS = 3 * PROCESS_DEADLINE_MS;
