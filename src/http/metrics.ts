/**
 * Operations endpoints of the HTTP server: `GET /healthz` and `GET /metrics`
 * (Prometheus text exposition format, with `prom-client`).
 *
 * Metrics (all in one registry per server, prefixed `mcp_confirm_`):
 * - `mcp_confirm_decisions_total{event, code}`: one per confirmation decision
 *   (`event` = asked, asked-again, refused, state-refused, not-confirmed,
 *   confirmed, internal-error; `code` = the refusal code, the state-refusal
 *   reason, the answer's action, or "" where none applies);
 * - `mcp_confirm_ledger_seconds{op, result}`: ledger latency histogram
 *   (`op` = issue or spend; `result` = ok or error);
 * - `mcp_confirm_http_legacy_sessions`: open 2025-era sessions;
 * - the process metrics `prom-client` collects by default (`process_*`, `nodejs_*`).
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ConfirmEvent } from '../guard/confirmation.js';
import type { Ledger } from '../store/ledger.js';
import { AUDIT_HEAD_STORE_METHODS } from '../store/auditHeads.js';

/**
 * The methods of `ApprovalStore` (src/approval/store.ts) and of `AuditHeadStore` (src/ledger/auditHeads.ts),
 * forwarded by {@link ServerMetrics.instrument}.
 */
const FORWARDED_STORE_METHODS = ['openApproval', 'approvalById', 'approvalByJti', 'decideApproval', 'putChallenge', 'takeChallenge', 'advanceCounter', ...AUDIT_HEAD_STORE_METHODS] as const;

/** The metrics of one server and the hooks that feed them. */
export class ServerMetrics {
  readonly registry = new Registry();
  readonly #decisions = new Counter({ name: 'mcp_confirm_decisions_total', help: 'Confirmation decisions by event and code.', labelNames: ['event', 'code'] as const, registers: [this.registry] });
  readonly #ledger = new Histogram({
    name: 'mcp_confirm_ledger_seconds',
    help: 'Ledger operation latency in seconds.',
    labelNames: ['op', 'result'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  /** Reads the number of open 2025-era sessions (set once the app exists). */
  legacySessions: () => number = () => 0;

  constructor() {
    collectDefaultMetrics({ register: this.registry });
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
      event.type === 'refused' ? event.code : event.type === 'state-refused' ? event.reason : event.type === 'not-confirmed' ? event.action : event.type === 'asked-again' ? event.reason : '';
    this.#decisions.inc({ event: event.type, code });
  }

  /**
   * Wraps a ledger so that every `issue` and `spend` is timed; behaviour is unchanged. A ledger that
   * also keeps passkey approvals (an `ApprovalStore`: memory, SQLite, Redis) keeps them through the
   * wrapper (forwarded, untimed), so the wrapper can be both `ledger` and `approval.store`; so are audit
   * trail heads (`AuditHeadStore`).
   */
  instrument(ledger: Ledger): Ledger {
    const timed = async <T>(op: 'issue' | 'spend', run: () => Promise<T>): Promise<T> => {
      const end = this.#ledger.startTimer({ op });
      try {
        const value = await run();
        end({ result: 'ok' });
        return value;
      } catch (e) {
        end({ result: 'error' });
        throw e;
      }
    };
    const wrapped: Ledger = {
      kind: ledger.kind,
      shared: ledger.shared,
      issue: (...args) => timed('issue', () => ledger.issue(...args)),
      spend: (...args) => timed('spend', () => ledger.spend(...args)),
    };
    if (ledger.close) wrapped.close = () => ledger.close!();
    for (const method of FORWARDED_STORE_METHODS) {
      const f = (ledger as unknown as Record<string, unknown>)[method];
      if (typeof f === 'function') (wrapped as unknown as Record<string, unknown>)[method] = f.bind(ledger);
    }
    return wrapped;
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
    if (outcome === 'unknown') return new Response('ok\n', { status: 200, headers: { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' } });
  } catch {
    // Fall through: the ledger did not answer.
  }
  return new Response('ledger unavailable\n', { status: 503, headers: { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' } });
}

/** `GET /metrics`: the registry in the Prometheus text format. */
export async function metricsResponse(metrics: ServerMetrics): Promise<Response> {
  return new Response(await metrics.registry.metrics(), { status: 200, headers: { 'Content-Type': metrics.registry.contentType, 'Cache-Control': 'no-store' } });
}
