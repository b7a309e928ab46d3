/**
 * The runtime of the two serving commands, `mcp-confirm --root DIR …` (`main.ts`) and
 * `mcp-confirm proxy …` (`proxy.ts`), which differ only in what they serve:
 *
 * - {@link openRuntime} opens what serving needs from the serving flags (`servingArgs.ts`): the
 *   key ring, the store, the audit trail, the passkey approval page (with `--notify`, its
 *   notifier, closed after it), and over HTTP the metrics; it
 *   hands out the confirmation options and one `close()`.
 * - {@link Runtime.runUntilStopped} and {@link Runtime.serveHttp} serve until SIGINT, SIGTERM or
 *   (stdio) the end of stdin, then end the serving (over HTTP: stop accepting and drain in-flight
 *   requests), close, and exit 0.
 * - {@link eventLogger} writes the confirmation layer's and the approval page's events to stderr.
 *
 * Cold start: this module imports nothing but types and `common.ts`. The store's driver, the
 * audit trail, HTTP serving and the WebAuthn library are imported only when their flags are given,
 * and over stdio a memory store is made only when the confirmation layer asks for its options (after
 * the first answer, `lazyServer.ts`).
 *
 * @module
 */
import type { McpServer } from '@modelcontextprotocol/server';
import type { ApprovalEvent, PasskeyApproval } from '../approval/passkey.js';
import type { AuditLog } from '../audit/auditLog.js';
import type { Listening } from '../http/listen.js';
import type { ConfirmationOptions, ConfirmEvent } from '../guard/confirmation.js';
import type { KeyRing } from '../state/keyRing.js';
import type { ConfirmStore } from '../store/confirmStore.js';
import { readKeyFile, UNKNOWN_HINT } from './common.js';
import type { ServingFlags } from './servingArgs.js';

/** One diagnostic line for stderr, without the command's prefix. */
export type Log = (line: string) => void;

/** Writes the events of the confirmation layer and of the approval page as lines. */
export interface EventLogger {
  confirm(event: ConfirmEvent): void;
  approval(event: ApprovalEvent): void;
}

/**
 * The event lines of both serving commands.
 *
 * @param acted - what a confirmed call was: `done` (`delete_file`) or `forwarded` (the proxy).
 * @param render - how untrusted names (tools, approvers) are shown. Defaults to as they are (the
 *   demo's tool name is its own); the proxy renders them like the question's values.
 */
export function eventLogger(
  log: Log,
  acted: string,
  render: (value: string) => string = (value) => value,
): EventLogger {
  return {
    confirm(event) {
      const tool = 'tool' in event ? render(event.tool) : '';
      switch (event.type) {
        case 'asked':
          return log(`asked to confirm ${tool}`);
        case 'asked-again':
          return log(`asked again for ${tool} (${event.reason})`);
        case 'refused':
          return log(`refused ${tool}: ${event.code}`);
        case 'state-refused':
          return log(`requestState refused (${event.reason})`);
        case 'not-confirmed':
          return log(`${tool} not confirmed (${event.action}${event.on === 'page' ? ' on the approval page' : ''})`);
        case 'confirmed':
          return log(
            `${tool} confirmed and ${acted}${event.approver !== undefined ? ` (approved by ${render(event.approver)})` : ''}`,
          );
        case 'approval-pending':
          return log(`${tool}: no decision on the approval page yet; asked again`);
        case 'internal-error':
          return log(
            `internal error in ${tool}: ${event.error instanceof Error ? event.error.message : String(event.error)}`,
          );
      }
    },
    approval(event) {
      switch (event.type) {
        case 'approval-approved':
          return log(
            `approval page: approved by ${render(event.approver)}${event.scope === 'grant' ? ', with similar calls' : ''}`,
          );
        case 'approval-counted':
          return log(
            `approval page: approved by ${render(event.approver)}, ${event.approvals} of ${event.required} approvals; waiting for more`,
          );
        case 'grant-revoked':
          return log(`approval page: grant ${render(event.grant)} revoked`);
        case 'approval-declined':
          return log(`approval page: denied${event.approver !== undefined ? ` by ${render(event.approver)}` : ''}`);
        case 'approval-refused':
          return log(`approval page: refused: ${event.reason}`);
      }
    },
  };
}

/** What ends a serving: a signal, or the end of stdin (stdio). */
export type StopReason = 'SIGINT' | 'SIGTERM' | 'end of input';

/** A serving in progress, as {@link Runtime.runUntilStopped} ends it. */
export interface Serving {
  /** Ends the serving (stdio: closes the transport), before the runtime closes. */
  end(reason: StopReason): Promise<void>;
  /** Whether the end of stdin stops the serving (stdio). */
  input: boolean;
}

/** What {@link openRuntime} needs besides the flags. */
export interface RuntimeOptions {
  /** Diagnostics (stderr), one line each. */
  log: Log;
  /** Where the events go ({@link eventLogger}). */
  events: EventLogger;
  /**
   * Real paths the approvers file must not be inside (the roots of `delete_file`), asked for just
   * before the approval page starts. Defaults to none (the proxy: where the upstream writes is its
   * business).
   */
  forbiddenDirs?: () => Promise<readonly string[]>;
  /**
   * The proxy's per-tool quorum (its policy's `quorum` over `--approvers-required`): the number of
   * approvers a tool's calls need, and the largest any tool can need (checked against the approvers
   * at start-up). Defaults to `--approvers-required` for every call.
   */
  quorum?: { forTool: (tool: string) => number; largest: number };
}

/** What serving needs, opened from the flags, with one {@link close}. */
export interface Runtime {
  /** The key ring of `--key-file` (undefined: one random key per process). */
  readonly keys: KeyRing | undefined;
  /** The audit trail of `--audit`. */
  readonly audit: AuditLog | undefined;
  /** The approval page of `--approval passkey`. */
  readonly approval: PasskeyApproval | undefined;
  /** The store's kind, for the serving line (`memory` also before a memory store is made). */
  readonly storeKind: string;
  /**
   * The options for `createConfirmation`: keys, audience, TTL, the store (over HTTP its metrics
   * wrapper), the `ERR_CONFIRM_UNKNOWN` hint naming the flags that share keys and a store
   * ({@link UNKNOWN_HINT}), the events (over HTTP also counted for `/metrics`), the principal of a
   * bearer token (HTTP), the audit trail and the approval page. Makes the memory store on the first call when
   * none was needed before.
   */
  confirmationOptions(): Promise<ConfirmationOptions>;
  /**
   * `--http`: listens and serves `factory` (with the approval page, `/healthz` and `/metrics`) until
   * stopped, as {@link runUntilStopped} does; on SIGINT or SIGTERM it stops accepting and drains
   * in-flight requests for up to `--drain-seconds` first, and says `stopped` last. Without `--http`
   * it throws a `TypeError`.
   *
   * @param served - what the serving line names: `delete_file`, or the upstream's name and version.
   * @param details - more of the serving line (the proxy's upstream and policy).
   * @param closeFirst - closes what the caller opened (the upstream), before the runtime closes.
   * @throws {UsageError} when the address cannot be bound; everything is closed then.
   */
  serveHttp(
    factory: () => McpServer,
    served: string,
    details?: string,
    closeFirst?: () => Promise<void>,
  ): Promise<void>;
  /**
   * Serves until SIGINT, SIGTERM or (`serving.input`) the end of stdin, then ends `serving`, runs
   * `closeFirst`, closes the runtime and exits 0. A second stop waits for the first.
   */
  runUntilStopped(serving: Serving, closeFirst?: () => Promise<void>): void;
  /** Closes what was opened, in the reverse order (the approval page, the audit trail, the store); never rejects. */
  close(): Promise<void>;
}

/**
 * Opens what serving needs from the serving flags, in this order: the HTTP token settings
 * (`--auth-jwks` read and checked), the key file, the store (`--ledger`), the audit trail (after
 * the store, which records its head when shared), over HTTP the metrics (the store wrapped to be
 * timed), then the approval page (on the same store object). A failure closes what was opened.
 *
 * A memory store that nothing needs before the first call (stdio without passkey approval) is made
 * only when {@link Runtime.confirmationOptions} is first called, so serving over stdio answers its
 * first request before any store module loads.
 *
 * @throws {UsageError} (exit 2) naming the flag: an unreadable JWK set or key file, a store that
 *   cannot be opened, a trail that cannot be created, an unusable approvers file or port.
 */
export async function openRuntime(flags: ServingFlags, options: RuntimeOptions): Promise<Runtime> {
  const { log, events } = options;
  const http = flags.http ? await import('./serveHttp.js') : undefined;
  if (http && flags.http) await http.checkHttpAuth(flags.http);
  const passkey = flags.approval.approval === 'passkey';
  // Over stdio a memory store waits for the confirmation layer (cold start); over HTTP the metrics
  // wrap it, and the approval page keeps its records in it, so then it is opened here.
  const storeLater = !http && flags.ledger === 'memory' && !passkey;
  const ledgerSpec = storeLater ? undefined : await import('./ledgerSpec.js');
  const keys = await readKeyFile(flags.keyFile);
  const opened = await ledgerSpec?.openLedger(flags.ledger, flags.audience, log);
  /** Closers of what is open, in the order opened. */
  const closers: Array<() => Promise<unknown>> = [];
  const close = async (): Promise<void> => {
    for (const closer of closers.splice(0).reverse()) await closer().catch(() => {});
  };
  /** The store the confirmation layer uses, once it is asked for. */
  let made: Promise<ConfirmStore> | undefined;
  // Over HTTP the metrics wrapper of the store opened, which forwards close().
  let store: ConfirmStore | undefined = opened;
  closers.push(async () => (store ?? (made ? await made : undefined))?.close?.());
  let audit: AuditLog | undefined;
  let approval: PasskeyApproval | undefined;
  try {
    // --audit: this process's trail file (its module loads only when asked for).
    if (flags.audit !== undefined) {
      const trail = await (await import('./auditCli.js')).openAuditTrail(flags.audit, keys!, log, opened);
      audit = trail;
      closers.push(() => trail.close());
    }
  } catch (e) {
    await close();
    throw e;
  }
  // Over HTTP: decisions counted and store calls timed for /metrics.
  const metrics = http?.createMetrics();
  if (metrics && opened) store = metrics.instrument(opened);
  try {
    if (passkey) {
      const forbiddenDirs = (await options.forbiddenDirs?.()) ?? [];
      // Loaded only here, so a form-mode server never loads the WebAuthn library.
      const { startPasskeyApproval } = await import('./approvalStart.js');
      // The same object as the store (over HTTP the timed wrapper, which forwards the approval records).
      const page = await startPasskeyApproval(flags.approval, {
        store,
        forbiddenDirs,
        onEvent: events.approval,
        warn: log,
        authIssuer: flags.http?.auth?.issuer,
        ...(options.quorum !== undefined ? { quorum: options.quorum } : {}),
      });
      approval = page;
      // --notify: the notifier the page sends through drains (up to 5 s) after the page has closed.
      const notifier = page.notifier;
      if (notifier !== undefined) {
        closers.push(() => notifier.close());
        if (metrics) metrics.notifyCounts = () => notifier.counters();
      }
      closers.push(() => page.close());
    }
  } catch (e) {
    await close();
    throw e;
  }
  const onEvent = metrics
    ? (event: ConfirmEvent): void => (events.confirm(event), metrics.observe(event))
    : events.confirm;

  const runUntilStopped = (
    serving: Serving,
    closeFirst: () => Promise<void> = async () => {},
    stopped?: () => void,
  ): (() => void) => {
    let stopping: Promise<void> | undefined;
    const stop = (reason: StopReason): void => {
      stopping ??= (async () => {
        await serving.end(reason);
        await closeFirst().catch((e: unknown) => log(`closing failed: ${(e as Error).message}`));
        await close();
        stopped?.();
        process.exit(0);
      })();
    };
    const onInt = (): void => stop('SIGINT');
    const onTerm = (): void => stop('SIGTERM');
    const onEnd = (): void => stop('end of input');
    process.once('SIGINT', onInt);
    process.once('SIGTERM', onTerm);
    if (serving.input) process.stdin.once('end', onEnd);
    return () => {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
      process.stdin.off('end', onEnd);
    };
  };

  return {
    keys,
    audit,
    approval,
    storeKind: opened?.kind ?? 'memory',
    async confirmationOptions() {
      const opened = store;
      made ??= opened
        ? Promise.resolve(opened)
        : import('../store/memory.js').then(({ MemoryLedger }) => new MemoryLedger());
      return {
        audience: flags.audience,
        ttlSeconds: flags.ttlSeconds,
        store: await made,
        unknownHint: UNKNOWN_HINT,
        onEvent,
        ...(keys ? { keys } : {}),
        ...(http ? { principal: http.principal } : {}),
        ...(audit ? { audit } : {}),
        ...(approval ? { approval } : {}),
      };
    },
    async serveHttp(factory, served, details, closeFirst = async () => {}) {
      if (!http || !flags.http || !opened || !metrics) throw new TypeError('serveHttp needs --http');
      const spec = flags.http;
      // The signal handlers are in place before the port is bound: the serving line is logged as it
      // binds, and a supervisor that reads it and signals at once must find the drain, not Node's
      // default (death by the signal). A signal before the bind ends waits for it.
      let bound: (listening: Listening | undefined) => void = () => {};
      const binding = new Promise<Listening | undefined>((resolve) => (bound = resolve));
      const removeHandlers = runUntilStopped(
        {
          input: false,
          end: async (signal) => {
            const listening = await binding;
            if (!listening) return;
            log(`${signal}: no longer accepting; draining in-flight requests (up to ${spec.drainMs / 1000}s)`);
            if (!(await listening.close(spec.drainMs))) log('drain deadline reached; remaining requests were cut off');
          },
        },
        closeFirst,
        () => log('stopped'),
      );
      try {
        bound(
          await http.serveHttp(spec, factory, {
            ledger: opened,
            metrics,
            log,
            served,
            ...(details !== undefined ? { details } : {}),
            ...(approval ? { approval } : {}),
          }),
        );
      } catch (e) {
        // Not serving (the address is taken): close everything, so the process can exit.
        bound(undefined);
        removeHandlers();
        await closeFirst().catch(() => {});
        await close();
        throw e;
      }
    },
    runUntilStopped: (serving, closeFirst) => runUntilStopped(serving, closeFirst),
    close,
  };
}
