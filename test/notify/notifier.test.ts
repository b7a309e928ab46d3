/**
 * Delivery (src/notify/notifier.ts) against local receivers: one that hangs (the attempt's
 * deadline, then a retry; `notify` returns before anything is sent), one that answers 500 then 200
 * (retried with the same webhook-id, delivered once), one that is down (counted failed, logged
 * once by origin only); the queue's bound, the log's rate, `close()`'s deadline, and `notify`
 * never throwing. Time is injected (`now`, `sleep`); no assertion measures a duration.
 */
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { Notifier, type NotifierOptions } from '../../src/notify/notifier.js';
import type { ApprovalNotice } from '../../src/notify/notice.js';
import { parseNotifySpec, type NotifyChannel } from '../../src/notify/spec.js';
import {
  SECRET_PATH,
  SECRET_QUERY,
  downOrigin,
  recordingSleep,
  requested,
  startReceiver,
  type Receiver,
} from './receiver.js';

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;

function channel(kind: 'standard' | 'slack' | 'ntfy', url: string): NotifyChannel {
  return parseNotifySpec(`${kind}:${url}`, { readSecretFile: () => SECRET, defaultSecretFile: 'hook.secret' });
}

const receivers: Receiver[] = [];
afterEach(async () => {
  for (const rx of receivers.splice(0)) await rx.close();
});
async function receiver(answer?: Parameters<typeof startReceiver>[0]): Promise<Receiver> {
  const rx = await startReceiver(answer);
  receivers.push(rx);
  return rx;
}

/** A notifier whose waits are immediate and recorded, and whose log lines are kept. */
function notifier(channels: NotifyChannel[], options: Partial<NotifierOptions> = {}) {
  const lines: string[] = [];
  const { waits, sleep } = recordingSleep();
  // A long attempt deadline unless a test sets one: it only guards against a hang, so a loaded
  // machine's slow answer is never taken for a timeout.
  const n = new Notifier({ channels, log: (l) => lines.push(l), sleep, attemptTimeoutMs: 60_000, ...options });
  return { n, lines, waits };
}

/** No line may show a channel URL's path or query, or the secret. */
function showsOriginOnly(lines: string[]): void {
  for (const line of lines) {
    expect(line).not.toContain(SECRET_PATH);
    expect(line).not.toContain(SECRET_QUERY);
    expect(line).not.toContain('SECRET');
    expect(line).not.toContain(SECRET.slice(6));
  }
}

describe('Notifier: a receiver that hangs', () => {
  it('gives up the attempt at its deadline and retries; notify returns before anything is sent', async () => {
    const rx = await receiver((_r, i) => (i === 0 ? 'hang' : 200));
    // 1 s: short enough for the hanging first attempt, and a margin for the answered one on a loaded machine
    const { n, lines, waits } = notifier([channel('standard', rx.url)], { attemptTimeoutMs: 1000 });
    const returned = n.notify(requested());
    // notify came back synchronously, before any request went out
    expect(returned).toBeUndefined();
    expect(rx.received).toHaveLength(0);
    await n.idle();
    expect(rx.received.length).toBeGreaterThanOrEqual(2);
    for (const r of rx.received) {
      expect(r.headers['webhook-id']).toBe(rx.received[0]!.headers['webhook-id']);
      expect(r.body).toBe(rx.received[0]!.body);
    }
    expect(n.counters().standard).toEqual({ sent: 1, failed: 0, dropped: 0, retried: rx.received.length - 1 });
    expect(waits).toEqual([1000, 2000, 4000].slice(0, rx.received.length - 1));
    expect(lines).toEqual([]);
    await n.close();
  });

  it('reports a channel that never answers as failed, with the deadline as the reason (control of the one above)', async () => {
    const rx = await receiver(() => 'hang');
    // 1 s, as above: a shorter deadline can pass on a loaded machine before the receiver has read the
    // request, so the notifier's own counts (two attempts, one retry) are what this asserts.
    const { n, lines } = notifier([channel('slack', rx.url)], { attemptTimeoutMs: 1000, retries: 1 });
    n.notify(requested());
    await n.idle();
    expect(rx.received.length).toBeLessThanOrEqual(2);
    expect(n.counters().slack).toEqual({ sent: 0, failed: 1, dropped: 0, retried: 1 });
    expect(lines).toEqual([
      `notify slack ${rx.origin}: gave up on an event after 2 attempt(s): no answer within 1000 ms`,
    ]);
    await n.close();
  });
});

describe('Notifier: a receiver that answers 500, then 200', () => {
  it('retries with the same webhook-id and body, each attempt signed, and delivers once', async () => {
    const rx = await receiver((_r, i) => (i === 0 ? 500 : 200));
    const { n, lines, waits } = notifier([channel('standard', rx.url)], { backoffMs: 250 });
    n.notify(requested());
    await n.idle();
    expect(rx.received).toHaveLength(2);
    const [first, second] = rx.received;
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    expect(second!.body).toBe(first!.body);
    const oracle = new Webhook(SECRET);
    for (const r of rx.received) expect(oracle.verify(r.body, r.headers)).toEqual(JSON.parse(r.body));
    expect(n.counters().standard).toEqual({ sent: 1, failed: 0, dropped: 0, retried: 1 });
    expect(waits).toEqual([250]);
    expect(lines).toEqual([]);
    await n.close();
  });

  it('backs off exponentially over its retries, then gives up (control: 200 at once sends without a retry)', async () => {
    const failing = await receiver(() => 503);
    const ok = await receiver(() => 200);
    const { n, lines, waits } = notifier([channel('ntfy', failing.url), channel('slack', ok.url)], { backoffMs: 100 });
    n.notify(requested());
    await n.idle();
    expect(failing.received).toHaveLength(4);
    expect(waits).toEqual([100, 200, 400]);
    expect(ok.received).toHaveLength(1);
    const counts = n.counters();
    expect(counts.ntfy).toEqual({ sent: 0, failed: 1, dropped: 0, retried: 3 });
    expect(counts.slack).toEqual({ sent: 1, failed: 0, dropped: 0, retried: 0 });
    expect(lines).toEqual([`notify ntfy ${failing.origin}: gave up on an event after 4 attempt(s): HTTP 503`]);
    await n.close();
  });

  it('does not retry an answer that retrying cannot change (404), nor follow a redirect', async () => {
    const gone = await receiver(() => 404);
    const moved = await receiver(() => 307);
    const { n, lines } = notifier([channel('slack', gone.url), channel('ntfy', moved.url)]);
    n.notify(requested());
    await n.idle();
    expect(gone.received).toHaveLength(1);
    expect(moved.received).toHaveLength(1);
    expect(n.counters().slack).toEqual({ sent: 0, failed: 1, dropped: 0, retried: 0 });
    expect(lines).toContain(`notify slack ${gone.origin}: gave up on an event after 1 attempt(s): HTTP 404`);
    expect(lines).toContain(
      `notify ntfy ${moved.origin}: gave up on an event after 1 attempt(s): HTTP 307 (redirects are not followed)`,
    );
    await n.close();
  });
});

describe('Notifier: a receiver that is down', () => {
  it('counts each event failed and logs once per interval, by origin only, never the path, query or secret', async () => {
    const origin = await downOrigin();
    const url = `${origin}${SECRET_PATH}${SECRET_QUERY}`;
    const { n, lines } = notifier([channel('standard', url)], { retries: 2, now: () => 1_000_000 });
    n.notify(requested());
    n.notify(requested({ approvalId: 'apr_2' }));
    n.notify(requested({ approvalId: 'apr_3' }));
    await n.idle();
    expect(n.counters().standard).toEqual({ sent: 0, failed: 3, dropped: 0, retried: 6 });
    expect(lines).toEqual([
      `notify standard ${origin}: gave up on an event after 3 attempt(s): network error ECONNREFUSED`,
    ]);
    await n.close();
    // the two held back are counted in one last line on close
    expect(lines).toEqual([
      `notify standard ${origin}: gave up on an event after 3 attempt(s): network error ECONNREFUSED`,
      `notify standard ${origin}: 2 more report(s) since the previous line were not logged`,
    ]);
    showsOriginOnly(lines);
  });

  it('logs again once the interval has passed, with the count of lines held back (control of the rate)', async () => {
    const origin = await downOrigin();
    let nowMs = 0;
    const { n, lines } = notifier([channel('slack', `${origin}${SECRET_PATH}`)], { retries: 0, now: () => nowMs });
    n.notify(requested());
    await n.idle();
    nowMs = 30_000;
    n.notify(requested());
    await n.idle();
    nowMs = 60_000;
    n.notify(requested());
    await n.idle();
    expect(lines).toEqual([
      `notify slack ${origin}: gave up on an event after 1 attempt(s): network error ECONNREFUSED`,
      `notify slack ${origin}: gave up on an event after 1 attempt(s): network error ECONNREFUSED; 1 more report(s) since the previous line were not logged`,
    ]);
    await n.close();
    expect(lines).toHaveLength(2);
    showsOriginOnly(lines);
  });
});

describe('Notifier: bounds and never failing the call', () => {
  it('keeps at most maxQueue events waiting, dropping the oldest and counting them', async () => {
    const rx = await receiver(() => 200);
    const { n, lines } = notifier([channel('ntfy', rx.url)], { maxQueue: 2, now: () => 0 });
    for (let i = 1; i <= 5; i += 1) n.notify(requested({ approvalId: `apr_${i}`, question: `q${i}` }));
    await n.idle();
    expect(rx.received.map((r) => r.body)).toEqual(['q4', 'q5']);
    expect(n.counters().ntfy).toEqual({ sent: 2, failed: 0, dropped: 3, retried: 0 });
    expect(lines).toEqual([`notify ntfy ${rx.origin}: queue full (2 events): the oldest waiting event was dropped`]);
    await n.close();
  });

  it('sends every event when the queue is within its bound (control)', async () => {
    const rx = await receiver(() => 200);
    const { n, lines } = notifier([channel('ntfy', rx.url)], { maxQueue: 5 });
    for (let i = 1; i <= 5; i += 1) n.notify(requested({ question: `q${i}` }));
    await n.idle();
    expect(rx.received.map((r) => r.body)).toEqual(['q1', 'q2', 'q3', 'q4', 'q5']);
    expect(n.counters().ntfy).toEqual({ sent: 5, failed: 0, dropped: 0, retried: 0 });
    expect(lines).toEqual([]);
    await n.close();
  });

  it('never throws from notify: a notice that is not usable is counted failed, a throwing log is ignored', async () => {
    const rx = await receiver(() => 200);
    const n = new Notifier({
      channels: [channel('slack', rx.url)],
      attemptTimeoutMs: 60_000,
      log: () => {
        throw new Error('log down');
      },
    });
    const hostile = {
      get type(): never {
        throw new Error('boom');
      },
    } as unknown as ApprovalNotice;
    expect(() => n.notify(hostile)).not.toThrow();
    expect(() => n.notify(requested({ url: 'javascript:alert(1)' }))).not.toThrow();
    expect(() => n.notify(requested({ decision: 'maybe' as never }))).not.toThrow();
    expect(() => n.notify(requested({ type: 'approval.counted', approvals: 1.5, approvalsRequired: 2 }))).not.toThrow();
    expect(() =>
      n.notify(requested({ type: 'approval.counted', approvals: 1, approvalsRequired: '2' as never })),
    ).not.toThrow();
    n.notify(requested());
    // control: a quorum's step with whole counts is sent
    n.notify(requested({ type: 'approval.counted', approvals: 1, approvalsRequired: 2, approvers: ['Ada'] }));
    await n.idle();
    expect(rx.received).toHaveLength(2);
    expect(n.counters().slack).toEqual({ sent: 2, failed: 5, dropped: 0, retried: 0 });
    await n.close();
  });

  it('drops what close() cannot deliver by its deadline, and notices given after close', async () => {
    const rx = await receiver(() => 'hang');
    const { n, lines } = notifier([channel('standard', rx.url)], { attemptTimeoutMs: 600_000, now: () => 0 });
    n.notify(requested());
    n.notify(requested({ approvalId: 'apr_2' }));
    while (rx.received.length === 0) await new Promise((r) => setTimeout(r, 5));
    await n.close(50);
    expect(n.counters().standard).toEqual({ sent: 0, failed: 0, dropped: 2, retried: 0 });
    expect(lines).toEqual([`notify standard ${rx.origin}: 2 event(s) not delivered before the close deadline`]);
    n.notify(requested());
    expect(n.counters().standard.dropped).toBe(3);
    expect(rx.received).toHaveLength(1);
  });

  it('lets close() wait for the queue to drain within its deadline (control: nothing dropped)', async () => {
    const rx = await receiver((_r, i) => (i === 0 ? 500 : 200));
    const { n, lines } = notifier([channel('slack', rx.url)]);
    n.notify(requested());
    n.notify(requested({ approvalId: 'apr_2' }));
    await n.close(600_000);
    expect(n.counters().slack).toEqual({ sent: 2, failed: 0, dropped: 0, retried: 1 });
    expect(lines).toEqual([]);
  });

  it('refuses options out of range and channels that are not NotifyChannels', () => {
    const c = channel('slack', 'https://hooks.slack.com/x');
    expect(() => new Notifier({ channels: [c], maxQueue: 0 })).toThrow(RangeError);
    expect(() => new Notifier({ channels: [c], retries: -1 })).toThrow(RangeError);
    expect(() => new Notifier({ channels: [c], attemptTimeoutMs: 1.5 })).toThrow(RangeError);
    expect(() => new Notifier({ channels: [{ kind: 'slack' } as never] })).toThrow(TypeError);
    // control: retries 0 and the defaults are fine
    expect(new Notifier({ channels: [c], retries: 0 }).channels).toEqual(['slack https://hooks.slack.com']);
  });
});
