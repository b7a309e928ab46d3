/**
 * Operations endpoints of the HTTP server: `GET /healthz` and `GET /metrics`
 * (Prometheus text exposition format, with `prom-client`).
 *
 * Metrics (all in one registry per server, prefixed `mcp_confirm_`):
 * - `mcp_confirm_decisions_total{event, code}`: one per confirmation decision
 *   (`event` = the {@link ConfirmEvent} type: asked, asked-again, refused,
 *   state-refused, not-confirmed, confirmed, approval-pending, internal-error,
 *   and with grants and plans granted, acted-under-grant, grant-exhausted,
 *   plan-approved, acted-under-plan; `code` = the refusal code, the
 *   state-refusal reason, the answer's action, the re-ask reason, or "" where
 *   none applies);
 * - `mcp_confirm_ledger_seconds{op, result}`: ledger latency histogram
 *   (`op` = issue or spend; `result` = ok or error);
 * - `mcp_confirm_http_legacy_sessions`: open 2025-era sessions;
 * - with notifications (`--notify`), `mcp_confirm_notify_events_total{channel, outcome}`: the
 *   notifier's events per channel kind (`standard`, `slack`, `ntfy`) by `outcome` = `sent`
 *   (accepted by the channel), `failed` (given up after its retries, or refused) or `dropped`
 *   (never sent: a full queue, or cut off on close), and `mcp_confirm_notify_retries_total{channel}`
 *   (attempts after the first), read from `Notifier.counters()` at each scrape;
 * - the process metrics `prom-client` collects by default (`process_*`, `nodejs_*`).
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ConfirmEvent } from '../guard/confirmation.js';
import { wrapStore, type ConfirmStore } from '../store/confirmStore.js';
import type { Ledger } from '../store/ledger.js';
import type { NotifyCounts } from '../notify/notifier.js';
import type { NotifyKind } from '../notify/spec.js';

/** The metrics of one server and the hooks that feed them. */
export class ServerMetrics {
  readonly registry = new Registry();
  readonly #decisions = new Counter({
    name: 'mcp_confirm_decisions_total',
    help: 'Confirmation decisions by event and code.',
    labelNames: ['event', 'code'] as const,
    registers: [this.registry],
  });
  readonly #ledger = new Histogram({
    name: 'mcp_confirm_ledger_seconds',
    help: 'Ledger operation latency in seconds.',
    labelNames: ['op', 'result'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  /** Reads the number of open 2025-era sessions (set once the app exists). */
  legacySessions: () => number = () => 0;

  /** Reads the notifier's counts (`Notifier.counters()`), set with `--notify`; `undefined` without notifications. */
  notifyCounts: () => Record<NotifyKind, NotifyCounts> | undefined = () => undefined;

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    // The notifier's own counters are monotonic: each scrape adds what they gained since the last.
    const counts = (): Record<NotifyKind, NotifyCounts> | undefined => this.notifyCounts();
    const seen = new Map<string, number>();
    const gained = (key: string, value: number): number => {
      const before = seen.get(key) ?? 0;
      seen.set(key, Math.max(before, value));
      return Math.max(0, value - before);
    };
    new Counter({
      name: 'mcp_confirm_notify_events_total',
      help: 'Notification events per channel kind, by outcome: sent, failed (given up) or dropped (never sent).',
      labelNames: ['channel', 'outcome'] as const,
      registers: [this.registry],
      collect() {
        const now = counts();
        if (now === undefined) return;
        for (const [channel, c] of Object.entries(now))
          for (const outcome of ['sent', 'failed', 'dropped'] as const)
            this.inc({ channel, outcome }, gained(`${channel}/${outcome}`, c[outcome]));
      },
    });
    new Counter({
      name: 'mcp_confirm_notify_retries_total',
      help: 'Notification delivery attempts after the first, per channel kind.',
      labelNames: ['channel'] as const,
      registers: [this.registry],
      collect() {
        const now = counts();
        if (now === undefined) return;
        for (const [channel, c] of Object.entries(now)) this.inc({ channel }, gained(`${channel}/retried`, c.retried));
      },
    });
    const sessions = (): number => this.legacySessions();
    new Gauge({
      name: 'mcp_confirm_http_legacy_sessions',
      help: 'Open 2025-era sessions.',
      registers: [this.registry],
      collect() {
        this.set(sessions());
      },
    });
  }

  /** Counts one decision event (for `ConfirmationOptions.onEvent`). */
  observe(event: ConfirmEvent): void {
    const code =
      event.type === 'refused'
        ? event.code
        : event.type === 'state-refused'
          ? event.reason
          : event.type === 'not-confirmed'
            ? event.action
            : event.type === 'asked-again'
              ? event.reason
              : '';
    this.#decisions.inc({ event: event.type, code });
  }

  /**
   * Wraps a store so that every `issue` and `spend` is timed; behaviour is unchanged. Its other
   * methods (passkey approvals, audit trail heads, grants and plans) are forwarded untimed, so the
   * wrapper can be both the confirmation's store and `approval.store`.
   */
  instrument(store: ConfirmStore): ConfirmStore {
    return wrapStore(store, async (method, run) => {
      if (method !== 'issue' && method !== 'spend') return run();
      const end = this.#ledger.startTimer({ op: method });
      try {
        const value = await run();
        end({ result: 'ok' });
        return value;
      } catch (e) {
        end({ result: 'error' });
        throw e;
      }
    });
  }
}

/**
 * `GET /healthz`: 200 `ok` when the ledger answers a probe (a spend of a random
 * `jti` never issued, which changes nothing and must answer `unknown`), 503
 * when it throws or answers anything else.
 */
export async function healthResponse(ledger: Ledger, now: () => number = Date.now): Promise<Response> {
  try {
    const outcome = await ledger.spend(`healthz-${randomUUID()}`, now());
    if (outcome === 'unknown')
      return new Response('ok\n', {
        status: 200,
        headers: { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' },
      });
  } catch {
    // Fall through: the ledger did not answer.
  }
  return new Response('ledger unavailable\n', {
    status: 503,
    headers: { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' },
  });
}

/** `GET /metrics`: the registry in the Prometheus text format. */
export async function metricsResponse(metrics: ServerMetrics): Promise<Response> {
  return new Response(await metrics.registry.metrics(), {
    status: 200,
    headers: { 'Content-Type': metrics.registry.contentType, 'Cache-Control': 'no-store' },
  });
}
