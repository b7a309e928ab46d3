/**
 * Delivering approval notices to their channels: {@link Notifier}.
 *
 * `notify(notice)` never throws and never waits: it copies the notice into each channel's queue
 * and returns; one worker per channel sends that channel's events in order, in the background.
 * Per channel:
 * - a bounded queue (`maxQueue`, default 1,000 events): past it, the oldest waiting event is
 *   dropped and counted (`dropped`);
 * - each attempt is one `POST` under its own deadline (`attemptTimeoutMs`, default 5 s, an
 *   `AbortSignal.timeout` given to `fetch`), redirects not followed (a channel URL is a secret:
 *   its body goes to that origin or nowhere);
 * - a network error, a timeout, HTTP 408, 429 or 5xx is retried (`retries`, default 3) after
 *   `backoffMs` × 2^(n−1) (default 1 s, 2 s, 4 s); any other answer outside 2xx is not. Every
 *   attempt of one event carries the same body and, for `standard`, the same `webhook-id` (its
 *   `webhook-timestamp` and signature are the attempt's), so a receiver can de-duplicate: delivery
 *   is at least once;
 * - an event given up is counted (`failed`) and reported through `log`, at most one line per
 *   channel per `logIntervalMs` (default 60 s), the lines held back counted in the next one. A
 *   line names the channel by kind and origin only (never its path, query or secret) and the
 *   reason (`HTTP 500`, `no answer within 5000 ms`, `network error ECONNREFUSED`).
 *
 * `close()` stops taking notices and waits for the queues to drain, up to a deadline; then it
 * aborts what is left (counted `dropped`). The counters (`counters()`, per channel kind) are
 * for `/metrics`.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { ntfyRequest, slackRequest, standardBody, standardRequest, type NotifyRequest } from './formats.js';
import { APPROVAL_NOTICE_TYPES, type ApprovalNotice } from './notice.js';
import { NOTIFY_KINDS, NotifyChannel, type NotifyKind } from './spec.js';

/** Default bound of each channel's queue, in events: 1,000. */
export const DEFAULT_NOTIFY_MAX_QUEUE = 1_000;
/** Default deadline of one delivery attempt, in milliseconds: 5,000. */
export const DEFAULT_NOTIFY_ATTEMPT_TIMEOUT_MS = 5_000;
/** Default retries of one event after its first attempt: 3. */
export const DEFAULT_NOTIFY_RETRIES = 3;
/** Default wait before the first retry, in milliseconds (doubled before each next one): 1,000. */
export const DEFAULT_NOTIFY_BACKOFF_MS = 1_000;
/** Default shortest time between two log lines of one channel, in milliseconds: 60,000. */
export const DEFAULT_NOTIFY_LOG_INTERVAL_MS = 60_000;
/** Default time `close()` lets the queues drain, in milliseconds: 5,000. */
export const DEFAULT_NOTIFY_CLOSE_MS = 5_000;

/** Options of {@link Notifier}. */
export interface NotifierOptions {
  /** Where notices go (from `parseNotifySpec`); each gets every notice. */
  channels: readonly NotifyChannel[];
  /**
   * Receives each report line (no line ending): failures and drops, rate-limited per channel.
   * What it throws is ignored. Defaults to a line on stderr.
   */
  log?: (line: string) => void;
  /** Most events waiting in one channel's queue (an event being sent not counted). Default 1,000. */
  maxQueue?: number;
  /** Deadline of one attempt, in milliseconds. Default 5,000. */
  attemptTimeoutMs?: number;
  /** Retries of one event after its first attempt, 0 or more. Default 3. */
  retries?: number;
  /** Wait before the first retry, in milliseconds, doubled before each next one. Default 1,000. */
  backoffMs?: number;
  /** Shortest time between two log lines of one channel, in milliseconds. Default 60,000. */
  logIntervalMs?: number;
  /** Clock in milliseconds since the epoch: events' times, `webhook-timestamp`, the log's rate. Defaults to `Date.now`. */
  now?: () => number;
  /**
   * Waits `ms` milliseconds before a retry, rejecting when `signal` aborts (on `close()`'s
   * deadline). Defaults to `node:timers/promises` `setTimeout`.
   */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** The `fetch` to send with. Defaults to the global `fetch`. */
  fetch?: typeof fetch;
}

/** What happened to one channel kind's events since the notifier started. */
export interface NotifyCounts {
  /** Events a channel accepted (a 2xx answer). */
  sent: number;
  /** Events given up: retries spent, or an answer that is not retried (a 4xx other than 408 and 429, a redirect). */
  failed: number;
  /** Events never sent: pushed out of a full queue, given after `close()`, or cut off by its deadline. */
  dropped: number;
  /** Attempts after the first, over all events. */
  retried: number;
}

/** One event waiting for, or in, delivery to one channel. */
interface Job {
  readonly notice: ApprovalNotice;
  /** The Standard Webhooks `webhook-id`: `msg_` and 128 random bits, the same on every attempt. */
  readonly id: string;
  /** When the event was queued, in milliseconds since the epoch (a `standard` body's `timestamp`). */
  readonly eventMs: number;
  /** The body, made on the first attempt and sent unchanged on every retry. */
  body?: string;
}

/** One channel's queue, worker, counters and log rate. */
interface Lane {
  readonly channel: NotifyChannel;
  readonly queue: Job[];
  readonly counts: NotifyCounts;
  /** The running worker, until its queue is empty. */
  worker: Promise<void> | undefined;
  /** The event being sent. */
  active: Job | undefined;
  loggedAtMs: number | undefined;
  suppressed: number;
}

type AttemptOutcome = { ok: true } | { ok: false; retry: boolean; reason: string };

function positive(name: string, value: number | undefined, fallback: number, zeroAllowed = false): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < (zeroAllowed ? 0 : 1))
    throw new RangeError(`${name} must be a whole number ${zeroAllowed ? '0 or more' : '1 or more'}, got ${value}`);
  return value;
}

/** Why a `fetch` failed, in words that hold no URL: the error's (or its cause's) code. */
function networkReason(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause;
  const code = cause?.code ?? (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^[A-Z][A-Z0-9_]*$/.test(code) ? `network error ${code}` : 'network error';
}

/**
 * Sends approval notices to their channels in the background (see the module documentation for
 * the delivery rules).
 *
 * @example
 * ```ts
 * import { Notifier, parseNotifySpec } from 'mcp-confirm/approval';
 *
 * const notifier = new Notifier({ channels: [parseNotifySpec('ntfy:https://ntfy.example.com/approvals')] });
 * notifier.notify({
 *   type: 'approval.requested',
 *   approvalId: 'x7Qm',
 *   url: 'https://files.example.com/approve/x7Qm',
 *   tool: 'delete_file',
 *   audience: 'mcp-confirm',
 *   expiresAtMs: Date.now() + 300_000,
 *   principalTag: 'k1.3q2+ZbN0',
 * });
 * // … on shutdown
 * await notifier.close();
 * ```
 */
export class Notifier {
  readonly #lanes: Lane[];
  readonly #log: (line: string) => void;
  readonly #maxQueue: number;
  readonly #attemptTimeoutMs: number;
  readonly #retries: number;
  readonly #backoffMs: number;
  readonly #logIntervalMs: number;
  readonly #now: () => number;
  readonly #sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  readonly #fetch: typeof fetch;
  /** Aborted when `close()`'s deadline passes: in-flight attempts and backoff waits end. */
  readonly #abort = new AbortController();
  #closing: Promise<void> | undefined;

  /**
   * @throws TypeError when `channels` is not an array of `NotifyChannel`s (a `standard` one with its key).
   * @throws RangeError when a number option is not a whole number in range (`retries` may be 0, the others at least 1).
   */
  constructor(options: NotifierOptions) {
    const channels = options?.channels;
    if (!Array.isArray(channels) || !channels.every((c) => c instanceof NotifyChannel))
      throw new TypeError('channels must be an array of NotifyChannel (from parseNotifySpec)');
    for (const c of channels)
      if (c.kind === 'standard' && c.key === undefined) throw new TypeError(`${c.label} has no signing key`);
    this.#maxQueue = positive('maxQueue', options.maxQueue, DEFAULT_NOTIFY_MAX_QUEUE);
    this.#attemptTimeoutMs = positive('attemptTimeoutMs', options.attemptTimeoutMs, DEFAULT_NOTIFY_ATTEMPT_TIMEOUT_MS);
    this.#retries = positive('retries', options.retries, DEFAULT_NOTIFY_RETRIES, true);
    this.#backoffMs = positive('backoffMs', options.backoffMs, DEFAULT_NOTIFY_BACKOFF_MS);
    this.#logIntervalMs = positive('logIntervalMs', options.logIntervalMs, DEFAULT_NOTIFY_LOG_INTERVAL_MS);
    this.#log = options.log ?? ((line) => void process.stderr.write(`${line}\n`));
    this.#now = options.now ?? Date.now;
    this.#sleep = options.sleep ?? ((ms, signal) => delay(ms, undefined, { signal }));
    this.#fetch = options.fetch ?? fetch;
    this.#lanes = channels.map((channel) => ({
      channel,
      queue: [],
      counts: { sent: 0, failed: 0, dropped: 0, retried: 0 },
      worker: undefined,
      active: undefined,
      loggedAtMs: undefined,
      suppressed: 0,
    }));
  }

  /** The channels, by kind and origin (`slack https://hooks.slack.com`). */
  get channels(): string[] {
    return this.#lanes.map((l) => l.channel.label);
  }

  /**
   * Queues `notice` for every channel and returns at once: never throws, never waits, sends
   * nothing before it returns. After `close()` the notice is dropped (counted). A notice whose
   * `url` is not an `http(s)` URL, whose `type` or `decision` is not one of the known words, or
   * whose quorum count is not a whole number from 0 to 16, is not sent (counted `failed`, reported).
   */
  notify(notice: ApprovalNotice): void {
    try {
      if (this.#closing !== undefined) {
        for (const lane of this.#lanes) lane.counts.dropped += 1;
        return;
      }
      let copy: ApprovalNotice | undefined;
      try {
        copy = copyNotice(notice);
      } catch {
        copy = undefined; // a caller's object that throws when read is not sent
      }
      const eventMs = this.#now();
      for (const lane of this.#lanes) {
        if (copy === undefined) {
          lane.counts.failed += 1;
          this.#report(
            lane,
            'a notice without an http(s) url, or with an unknown type, decision or count, was not sent',
          );
          continue;
        }
        lane.queue.push({ notice: copy, id: `msg_${randomBytes(16).toString('base64url')}`, eventMs });
        if (lane.queue.length > this.#maxQueue) {
          lane.queue.shift();
          lane.counts.dropped += 1;
          this.#report(lane, `queue full (${this.#maxQueue} events): the oldest waiting event was dropped`);
        }
        if (lane.worker === undefined) lane.worker = this.#startWorker(lane);
      }
    } catch {
      // Never fails the call that asked for the approval.
    }
  }

  /**
   * Resolves once every channel's queue is empty and nothing is in flight (at once when so
   * already); never rejects. Notices given meanwhile are waited for too.
   */
  async idle(): Promise<void> {
    for (;;) {
      const workers = this.#lanes.map((l) => l.worker).filter((w) => w !== undefined);
      if (workers.length === 0) return;
      await Promise.all(workers);
    }
  }

  /** The counts per channel kind (channels of one kind added up), a snapshot. */
  counters(): Record<NotifyKind, NotifyCounts> {
    const out = Object.fromEntries(
      NOTIFY_KINDS.map((k) => [k, { sent: 0, failed: 0, dropped: 0, retried: 0 }]),
    ) as Record<NotifyKind, NotifyCounts>;
    for (const { channel, counts } of this.#lanes) {
      const sum = out[channel.kind];
      sum.sent += counts.sent;
      sum.failed += counts.failed;
      sum.dropped += counts.dropped;
      sum.retried += counts.retried;
    }
    return out;
  }

  /**
   * Stops taking notices and lets the queues drain for up to `deadlineMs` (default 5,000); then
   * aborts the attempts and waits in flight and drops what is left (counted, and one line per
   * channel that lost events). A channel's log lines held back by the rate are reported in one
   * last line. Resolves when every worker has ended; never rejects. Calling it again returns the
   * same promise.
   *
   * @throws RangeError when `deadlineMs` is not a whole number of 0 or more.
   */
  close(deadlineMs: number = DEFAULT_NOTIFY_CLOSE_MS): Promise<void> {
    this.#closing ??= this.#close(positive('deadlineMs', deadlineMs, DEFAULT_NOTIFY_CLOSE_MS, true));
    return this.#closing;
  }

  async #close(deadlineMs: number): Promise<void> {
    const drained = this.idle().then(() => true as const);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), deadlineMs);
    });
    const inTime = await Promise.race([drained, late]);
    clearTimeout(timer);
    if (!inTime) {
      const before = this.#lanes.map((l) => l.counts.dropped);
      this.#abort.abort();
      await drained;
      this.#lanes.forEach((lane, i) => {
        const lost = lane.counts.dropped - before[i]!;
        if (lost > 0) this.#say(lane, `${lost} event(s) not delivered before the close deadline`);
      });
    }
    for (const lane of this.#lanes) {
      if (lane.suppressed > 0)
        this.#say(lane, `${lane.suppressed} more report(s) since the previous line were not logged`);
      lane.suppressed = 0;
    }
  }

  /** Starts a lane's worker after the current task (so `notify` sends nothing itself); resolves when its queue is empty. */
  #startWorker(lane: Lane): Promise<void> {
    return new Promise<void>((resolve) => {
      queueMicrotask(() => {
        this.#drain(lane)
          .catch(() => {})
          .finally(() => {
            lane.worker = undefined;
            resolve();
          });
      });
    });
  }

  async #drain(lane: Lane): Promise<void> {
    for (let job = lane.queue.shift(); job !== undefined; job = lane.queue.shift()) {
      if (this.#abort.signal.aborted) {
        lane.counts.dropped += 1 + lane.queue.length;
        lane.queue.length = 0;
        return;
      }
      lane.active = job;
      try {
        await this.#deliver(lane, job);
      } finally {
        lane.active = undefined;
      }
    }
  }

  /** Every attempt of one event, until it is sent, given up, or cut off by `close()`. */
  async #deliver(lane: Lane, job: Job): Promise<void> {
    const signal = this.#abort.signal;
    let reason = '';
    let attempts = 0;
    for (let n = 0; n <= this.#retries; n += 1) {
      if (n > 0) {
        lane.counts.retried += 1;
        try {
          await this.#sleep(this.#backoffMs * 2 ** (n - 1), signal);
        } catch {
          // aborted below
        }
      }
      if (signal.aborted) {
        lane.counts.dropped += 1;
        return;
      }
      attempts += 1;
      const outcome = await this.#attempt(lane.channel, job);
      if (outcome.ok) {
        lane.counts.sent += 1;
        return;
      }
      if (signal.aborted) {
        lane.counts.dropped += 1;
        return;
      }
      reason = outcome.reason;
      if (!outcome.retry) break;
    }
    lane.counts.failed += 1;
    this.#report(lane, `gave up on an event after ${attempts} attempt(s): ${reason}`);
  }

  /** One `POST` under its deadline: sent, or why not and whether to retry. */
  async #attempt(channel: NotifyChannel, job: Job): Promise<AttemptOutcome> {
    const timeout = AbortSignal.timeout(this.#attemptTimeoutMs);
    const both = new AbortController();
    const stop = (): void => both.abort();
    timeout.addEventListener('abort', stop, { once: true });
    this.#abort.signal.addEventListener('abort', stop, { once: true });
    try {
      const request = this.#request(channel, job);
      const response = await this.#fetch(channel.url, {
        method: 'POST',
        headers: request.headers,
        body: request.body,
        redirect: 'manual',
        signal: both.signal,
      });
      await response.body?.cancel().catch(() => {});
      if (response.status >= 200 && response.status < 300) return { ok: true };
      const retry = response.status >= 500 || response.status === 408 || response.status === 429;
      const redirect = response.status >= 300 && response.status < 400 ? ' (redirects are not followed)' : '';
      return { ok: false, retry, reason: `HTTP ${response.status}${redirect}` };
    } catch (e) {
      if (timeout.aborted) return { ok: false, retry: true, reason: `no answer within ${this.#attemptTimeoutMs} ms` };
      return { ok: false, retry: true, reason: networkReason(e) };
    } finally {
      timeout.removeEventListener('abort', stop);
      this.#abort.signal.removeEventListener('abort', stop);
    }
  }

  /** The request of one attempt: the event's body (made once), and for `standard` this attempt's signature. */
  #request(channel: NotifyChannel, job: Job): NotifyRequest {
    switch (channel.kind) {
      case 'standard':
        job.body ??= standardBody(job.notice, job.eventMs);
        return standardRequest(channel.key!, job.id, job.body, this.#now());
      case 'slack':
        return slackRequest(job.notice);
      case 'ntfy':
        return ntfyRequest(job.notice);
    }
  }

  /** A report line for a channel, at most one per `logIntervalMs`, the ones held back counted in the next. */
  #report(lane: Lane, problem: string): void {
    const nowMs = this.#now();
    if (lane.loggedAtMs !== undefined && nowMs - lane.loggedAtMs < this.#logIntervalMs) {
      lane.suppressed += 1;
      return;
    }
    const held = lane.suppressed;
    lane.loggedAtMs = nowMs;
    lane.suppressed = 0;
    this.#say(lane, held > 0 ? `${problem}; ${held} more report(s) since the previous line were not logged` : problem);
  }

  #say(lane: Lane, text: string): void {
    try {
      this.#log(`notify ${lane.channel.label}: ${text}`);
    } catch {
      // A failing log never fails delivery.
    }
  }
}

/** A count of a quorum as a notice may carry it: a whole number from 0 to 16 (`MAX_APPROVALS_REQUIRED`). */
function isCount(n: unknown): n is number {
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 && n <= 16;
}

/**
 * A copy of the notice's own fields (nothing else a caller's object holds), its `url` normalized
 * (`URL.href`: ASCII, so it fits a header); `undefined` when its `url` is not `http(s)`, its
 * `type` or `decision` is unknown, or a quorum's count is not a whole number from 0 to 16.
 */
function copyNotice(notice: ApprovalNotice): ApprovalNotice | undefined {
  if (!APPROVAL_NOTICE_TYPES.includes(notice.type)) return undefined;
  if (notice.approvals !== undefined && !isCount(notice.approvals)) return undefined;
  if (notice.approvalsRequired !== undefined && !isCount(notice.approvalsRequired)) return undefined;
  if (notice.decision !== undefined && !['approved', 'declined', 'expired'].includes(notice.decision)) return undefined;
  let url: URL;
  try {
    url = new URL(notice.url);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined;
  const copy: ApprovalNotice = {
    type: notice.type,
    approvalId: String(notice.approvalId),
    url: url.href,
    tool: String(notice.tool),
    audience: String(notice.audience),
    expiresAtMs: Number(notice.expiresAtMs),
    principalTag: String(notice.principalTag),
  };
  if (notice.question !== undefined) copy.question = String(notice.question);
  if (notice.decision !== undefined) copy.decision = notice.decision;
  if (notice.approvers !== undefined) copy.approvers = notice.approvers.map(String);
  if (notice.approvals !== undefined) copy.approvals = notice.approvals;
  if (notice.approvalsRequired !== undefined) copy.approvalsRequired = notice.approvalsRequired;
  return copy;
}
