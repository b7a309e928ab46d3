/**
 * Passkey approval (MCP spec 2026-07-28, client/elicitation, URL mode): the lifecycle of the
 * approvals a confirmation waits for. {@link PasskeyApproval} starts the approval page (`page.ts`;
 * over stdio on its own loopback listener, `listener.ts`; over `--http` behind the public URL, on
 * your HTTP server through {@link PasskeyApproval.fetch}), opens one approval per `jti` in the
 * store, records the page's decisions and wakes the round 2 waiting for one
 * ({@link PasskeyApproval.waitForDecision}). Round 2 redeems an approved record (see
 * `createConfirmation`): approving requires a WebAuthn assertion with user verification (W3C Web
 * Authentication Level 3, §7.2; `webauthn.ts`) from an enrolled approver allowed for the calling
 * principal. With `notify` ({@link PasskeyApprovalOptions.notify}), each approval opened, each
 * step of a quorum (an approval counted, more still needed) and its outcome (approved, declined,
 * or expired, seen by the process that opened it) go to notification channels (`../notify/`) in
 * the background, and Deny on the page needs a passkey too.
 *
 * > [!WARNING]
 * > Trust boundary: this protects against everything that speaks MCP or HTTP
 * > to the server (the client, an agent driving it, an injected prompt,
 * > another local process without the authenticator). Code running as the
 * > same OS user can edit the approvers file; see the stronger setup in docs/passkey.md.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { checkApproversRequired, type ApproversFile } from './approvers.js';
import { listenLoopback, send, type LoopbackListener } from './listener.js';
import {
  ApprovalPage,
  type ApprovalEvent,
  type ApprovalView,
  type GrantRevokedOnPage,
  type PageDecision,
} from './page.js';
import { parsePublicUrl } from './publicUrl.js';
import type { ApprovalRecord, ApprovalVote, CountOutcome, DecideOutcome } from '../store/approvalStore.js';
import type { ApprovalDecision as NoticeDecision, ApprovalNotice } from '../notify/notice.js';
import { Notifier } from '../notify/notifier.js';
import type { NotifyChannel } from '../notify/spec.js';
import type { ConfirmStore } from '../store/confirmStore.js';
import { DEFAULT_APPROVAL_WAIT_SECONDS } from '../defaults.js';
import { ConfigError } from '../errors.js';

// The page's types, where the guard and the CLI take them from with PasskeyApproval.
export type { ApprovalEvent, ApprovalView, GrantRevokedOnPage };

/** Options of {@link PasskeyApproval.start}. */
export interface PasskeyApprovalOptions {
  /** Where approvals, challenges and counters live: the confirmation's store (MemoryLedger, SqliteLedger, RedisLedger). */
  store: ConfirmStore;
  /** The approvers, loaded once at start-up (see `loadApproversForServer`). */
  approvers: ApproversFile;
  /** The port on 127.0.0.1 and ::1 (stdio; not with `publicUrl`). Defaults to 0 (a random free port). */
  port?: number;
  /**
   * Serve the page on your own HTTP server instead of a loopback listener (`mcp-confirm --http
   * --public-url URL`): the origin browsers use, `scheme://host[:port]`. The WebAuthn origin is its
   * origin, the RP ID its host name (a DNS name, never an IP address); approval URLs are
   * `ORIGIN/approve/ID`. No listener is started: route {@link PasskeyApproval.servesPath} paths to
   * {@link PasskeyApproval.fetch}. Defaults to none (a loopback listener, origin `http://localhost:PORT`).
   */
  publicUrl?: string | URL;
  /**
   * How long round 2 waits for the page's decision, in whole seconds, 0 to 3,600. Defaults to
   * {@link DEFAULT_APPROVAL_WAIT_SECONDS} (45). 0 answers at once. Keep it below the clients' request
   * timeout (the MCP SDKs' default is 60 s), or a client gives up before it is asked again.
   */
  waitSeconds?: number;
  /** The clock, Unix milliseconds, for every stored time (challenges, decisions, expiry). Defaults to `Date.now`. */
  now?: () => number;
  /** How often a waiting round 2 re-reads a shared store, in milliseconds. Defaults to 250. */
  pollIntervalMs?: number;
  /** Diagnostics (stderr). Defaults to none. */
  onEvent?: (event: ApprovalEvent) => void;
  /**
   * A quorum: how many distinct enrolled approvers (distinct names and credentials) allowed for the
   * calling principal must approve a call on the page before it acts, a whole number from 1 to
   * `MAX_APPROVALS_REQUIRED` (16); one Deny still ends it. A number applies to every call, and
   * {@link PasskeyApproval.start} checks it against the approvers
   * (`checkApproversRequired`); a function is asked per tool name when each approval opens (the
   * proxy's per-tool quorum), and its caller checks its largest value against the approvers
   * before starting. Defaults to 1 (one approver, as without this option).
   */
  approversRequired?: number | ((tool: string) => number);
  /**
   * Notifications (`src/notify/`, docs/notifications.md): each approval opened is sent to the
   * channels as `approval.requested`, each approval of a quorum counted that does not complete it
   * as `approval.counted` (`1 of 2 approvals`), and its outcome as `approval.decided` (`approved`,
   * `declined`, or `expired`). Given channels (from `parseNotifySpec`), the approval makes a {@link Notifier}
   * (reporting on stderr) and closes it with itself; given a `Notifier`, you close it. Or
   * {@link ApprovalNotifyOptions}, to include the question too. Delivery never blocks or fails a
   * call. With at least one channel, Deny on the page also needs an enrolled approver's passkey
   * (a link sent to a channel must not let whoever reads it veto). Defaults to none.
   */
  notify?: Notifier | readonly NotifyChannel[] | ApprovalNotifyOptions;
}

/** The long form of {@link PasskeyApprovalOptions.notify}. */
export interface ApprovalNotifyOptions {
  /** The channels (a `Notifier` is made and closed with the approval), or your `Notifier` (you close it). */
  to: Notifier | readonly NotifyChannel[];
  /**
   * Send the question as the guard rendered it (`ApprovalNotice.question`). A channel is often a
   * third party, and the question names what is about to be changed. Defaults to `false`.
   */
  includeQuestion?: boolean;
}

/** A new random id: 24 bytes (192 bits), base64url. */
export function randomId(): string {
  return randomBytes(24).toString('base64url');
}

/**
 * The approvals of one server process: their page, and their records in the store. Start one with {@link PasskeyApproval.start},
 * then give it to `createConfirmation({ approval })`.
 */
export class PasskeyApproval {
  /** `http://localhost:PORT` over stdio: the page origin and the expected WebAuthn origin. */
  readonly origin: string;
  /** The WebAuthn RP ID (`localhost` over stdio). */
  readonly rpId: string;
  readonly port: number;
  /** How long round 2 waits for a decision, in milliseconds. */
  readonly waitMs: number;
  readonly store: ConfirmStore;
  readonly #now: () => number;
  readonly #poll: number;
  readonly #emit: (event: ApprovalEvent) => void;
  readonly #decided = new EventEmitter();
  readonly #revokedListeners = new Set<(event: GrantRevokedOnPage) => Promise<void> | void>();
  readonly #page: ApprovalPage;
  readonly #required: (tool: string) => number;
  #listener: LoopbackListener | undefined;
  /** The notifier of `notify` (undefined without channels), whether this approval made it (and closes it), and the question's inclusion. */
  readonly #notifier: Notifier | undefined;
  readonly #ownsNotifier: boolean;
  readonly #includeQuestion: boolean;
  /** How each confirmation (by audience) tags a principal, for the notices ({@link PasskeyApproval.tagPrincipals}). */
  readonly #taggers = new Map<string, (principal: string) => string>();
  /** The expiry checks of the approvals this process opened, by id (cleared when decided here or closed). */
  readonly #expiryTimers = new Map<string, NodeJS.Timeout>();

  private constructor(
    options: PasskeyApprovalOptions,
    listener: LoopbackListener | undefined,
    origin: string,
    notify: NotifySetup,
  ) {
    this.store = options.store;
    this.#now = options.now ?? Date.now;
    this.#poll = options.pollIntervalMs ?? 250;
    this.waitMs = (options.waitSeconds ?? DEFAULT_APPROVAL_WAIT_SECONDS) * 1000;
    this.#listener = listener;
    this.origin = origin;
    const url = new URL(origin);
    this.port = listener?.port ?? Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    this.rpId = url.hostname;
    const onEvent = options.onEvent ?? (() => {});
    this.#emit = (e) => {
      try {
        onEvent(e);
      } catch {
        // diagnostics never change the outcome
      }
    };
    this.#decided.setMaxListeners(0);
    this.#notifier = notify.notifier;
    this.#ownsNotifier = notify.owned;
    this.#includeQuestion = notify.includeQuestion;
    const required = options.approversRequired ?? 1;
    this.#required = typeof required === 'number' ? () => required : required;
    this.#page = new ApprovalPage({
      store: this.store,
      approvers: options.approvers,
      origin,
      rpId: this.rpId,
      // Behind a public URL (no listener of ours): Host compared by host name rather than exactly.
      behindPublicUrl: listener === undefined,
      now: this.#now,
      decide: (id, decision) => this.#record(id, decision),
      denyNeedsPasskey: this.#notifier !== undefined,
      count: (id, vote) => this.#count(id, vote),
      emit: this.#emit,
      revoked: async (event) => {
        for (const listener of [...this.#revokedListeners]) {
          try {
            await listener(event);
          } catch {
            // A listener (e.g. an audit line that cannot be written) never undoes or hides the revocation.
          }
        }
      },
    });
  }

  /**
   * Starts the page: over stdio on `127.0.0.1:PORT` and `[::1]:PORT` (origin `http://localhost:PORT`,
   * RP ID `localhost`); with `publicUrl`, without a listener, for your HTTP server to route to
   * {@link PasskeyApproval.fetch} (origin and RP ID from the public URL).
   *
   * @throws {RangeError} when `waitSeconds` is not a whole number from 0 to 3,600, or `port` is given
   *   with `publicUrl`.
   * @throws {TypeError} when `notify` is not a `Notifier`, an array of `NotifyChannel`s (from
   *   `parseNotifySpec`) or `{ to, includeQuestion }` of one of those.
   * @throws {ConfigError} `ERR_CONFIG_RP_ID` when the approvers were enrolled for another RP ID (the
   *   message names them); `ERR_CONFIG_PUBLIC_URL` when `publicUrl` is not an http(s) origin with a
   *   DNS host name; `ERR_CONFIG_LISTEN` naming the address when either loopback address is taken;
   *   `ERR_CONFIG_APPROVERS_REQUIRED` when a numeric `approversRequired` exceeds the approvers
   *   enrolled for a principal.
   * @throws {RangeError} when a numeric `approversRequired` is not a whole number from 1 to 16.
   * @example
   * ```ts
   * import { createConfirmation, MemoryLedger, Roots } from 'mcp-confirm';
   * import { loadApproversForServer, PasskeyApproval } from 'mcp-confirm/approval';
   *
   * const roots = await Roots.open(['/srv/scratch']);
   * const approvers = await loadApproversForServer(
   *   '/etc/mcp-confirm/approvers.json',
   *   roots.list.map((root) => root.realPath),
   * );
   * const approval = await PasskeyApproval.start({ store: new MemoryLedger(), approvers });
   * const confirmation = await createConfirmation({ approval }); // its jtis in approval.store too
   * ```
   */
  static async start(options: PasskeyApprovalOptions): Promise<PasskeyApproval> {
    const wait = options.waitSeconds ?? DEFAULT_APPROVAL_WAIT_SECONDS;
    if (!Number.isSafeInteger(wait) || wait < 0 || wait > 3_600)
      throw new RangeError('waitSeconds must be a whole number of seconds from 0 to 3600');
    if (typeof options.approversRequired === 'number')
      checkApproversRequired(options.approvers, options.approversRequired);
    const notify = notifySetup(options.notify);
    const publicUrl = options.publicUrl === undefined ? undefined : parsePublicUrl(String(options.publicUrl));
    const rpId = publicUrl?.hostname ?? 'localhost';
    if (options.approvers.rpId !== rpId) {
      const names = options.approvers.approvers.map((a) => JSON.stringify(a.name)).join(', ');
      throw new ConfigError(
        'ERR_CONFIG_RP_ID',
        `the approvers file's approvers (${names}) were enrolled for RP ID ${JSON.stringify(options.approvers.rpId)}, but this page's RP ID is ${JSON.stringify(rpId)}` +
          (publicUrl ? ` (from the public URL ${publicUrl.origin})` : ' (over stdio)'),
      );
    }
    if (publicUrl !== undefined) {
      if (options.port !== undefined)
        throw new RangeError(
          'port is for the loopback listener; with publicUrl the page is served by your HTTP server',
        );
      return new PasskeyApproval(options, undefined, publicUrl.origin, notify);
    }
    let self: PasskeyApproval | undefined;
    const listener = await listenLoopback(options.port ?? 0, (req, res) => {
      if (self === undefined) {
        send(res, 503, 'text/plain; charset=utf-8', 'starting', req.method);
        return;
      }
      void self.handle(req, res);
    });
    self = new PasskeyApproval(options, listener, listener.origin, notify);
    return self;
  }

  /** The page URL of an approval id. */
  urlFor(id: string): string {
    return `${this.origin}/approve/${id}`;
  }

  /**
   * Opens a pending approval for a `jti` (one per `jti`, with a fresh random id). With `notify`,
   * queues `approval.requested` (never waiting for it) and watches for its expiry.
   * Opens a pending approval for a `jti` (one per `jti`, with a fresh random id), needing the
   * approvals of `approversRequired` distinct approvers for its tool (`view.tool`).
   *
   * @throws {RangeError} when the `jti` already has one, or the quorum for its tool is not a whole
   *   number from 1 to 16.
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the store fails.
   */
  async open(
    input: { jti: string; principal: string; view: ApprovalView; expiresAtMs: number },
    nowMs: number,
  ): Promise<{ id: string; url: string }> {
    const id = randomId();
    await this.store.openApproval(
      {
        id,
        jti: input.jti,
        principal: input.principal,
        view: JSON.stringify(input.view),
        expiresAtMs: input.expiresAtMs,
        ...this.#quorum(input.view.tool),
      },
      nowMs,
    );
    const url = this.urlFor(id);
    this.#requested(id, input);
    return { id, url };
  }

  /** With `notify`: queues `approval.requested` for a new approval (never waiting for it) and watches for its expiry. */
  #requested(id: string, input: { principal: string; view: ApprovalView; expiresAtMs: number }): void {
    if (this.#notifier === undefined) return;
    this.#notice('approval.requested', {
      id,
      principal: input.principal,
      view: input.view,
      expiresAtMs: input.expiresAtMs,
    });
    this.#watchExpiry(id, input.expiresAtMs);
  }

  /**
   * Records the approval `id` declined, once (as the page's Deny does, without its checks): for a
   * client that declined or cancelled, so the page shows it denied. Wakes whoever waits for it
   * and, with `notify`, sends `approval.decided` (`declined`).
   *
   * @returns the store's outcome; only `'decided'` recorded it.
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the store fails.
   */
  decline(id: string): Promise<DecideOutcome> {
    return this.#record(id, { status: 'declined', approver: '', credentialId: '' });
  }

  /**
   * Says how the confirmation of `audience` tags a principal (`createConfirmation` gives
   * `KeyRing.principalTag` under its sealing key: the tag its audit trail writes), so that a
   * notice about an approval of that audience carries the tag, never the principal. Without one
   * for its audience, an approval's notices are not sent. A second call for one audience replaces
   * the first.
   *
   * @returns a function that forgets it.
   */
  tagPrincipals(audience: string, tag: (principal: string) => string): () => void {
    this.#taggers.set(audience, tag);
    return () => {
      if (this.#taggers.get(audience) === tag) this.#taggers.delete(audience);
    };
  }

  /** The notifier of `notify` (its `counters()` for `/metrics`), or `undefined` without channels. */
  get notifier(): Notifier | undefined {
    return this.#notifier;
  }

  /**
   * Opens a pending approval with a link (a client that cannot elicit: see `linkStore.ts`), unless
   * the link key already has a live link or the principal has `maxPending` pending link approvals;
   * as {@link open}, it needs the quorum of its tool, and with `notify` queues `approval.requested`.
   *
   * @param input - as {@link open}, plus `linkKey` (what a retried call must match) and `kept`
   *   (kept server-side with it: the round-1 identity).
   * @param maxPending - the most pending link approvals of one principal.
   * @returns `{outcome: 'opened', id, url}`, or `{outcome: 'exists' | 'too-many'}` (nothing opened).
   * @throws {ConfirmLedgerUnavailableError} `ERR_CONFIRM_LEDGER_UNAVAILABLE` when the store fails.
   */
  async openLink(
    input: { jti: string; principal: string; view: ApprovalView; expiresAtMs: number; linkKey: string; kept: string },
    maxPending: number,
    nowMs: number,
  ): Promise<{ outcome: 'opened'; id: string; url: string } | { outcome: 'exists' | 'too-many' }> {
    const id = randomId();
    const outcome = await this.store.openLinkApproval(
      {
        id,
        jti: input.jti,
        principal: input.principal,
        view: JSON.stringify(input.view),
        expiresAtMs: input.expiresAtMs,
        linkKey: input.linkKey,
        kept: input.kept,
        ...this.#quorum(input.view.tool),
      },
      maxPending,
      nowMs,
    );
    if (outcome !== 'opened') return { outcome };
    this.#requested(id, input);
    return { outcome, id, url: this.urlFor(id) };
  }

  /**
   * Waits up to {@link waitMs} for the page's decision on a `jti`'s approval (re-reading the store every
   * `pollIntervalMs`, woken at once by a decision made by this process).
   *
   * @returns the record (pending when no decision came in time), or `undefined` when there is none or it expired.
   */
  async waitForDecision(jti: string, signal?: AbortSignal): Promise<ApprovalRecord | undefined> {
    let record = await this.store.approvalByJti(jti, this.#now());
    if (record === undefined || record.status !== 'pending' || this.waitMs === 0) return record;
    const id = record.id;
    const deadline = performance.now() + this.waitMs;
    while (record !== undefined && record.status === 'pending') {
      const left = deadline - performance.now();
      if (left <= 0 || signal?.aborted) break;
      await new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          this.#decided.off(id, done);
          signal?.removeEventListener('abort', done);
          resolve();
        };
        const timer = setTimeout(done, Math.min(this.#poll, left));
        this.#decided.on(id, done);
        signal?.addEventListener('abort', done);
      });
      record = await this.store.approvalByJti(jti, this.#now());
    }
    return record;
  }

  /**
   * Calls `listener` once when this process records a decision for the approval `id`, or never
   * (forgotten after `withinMs`).
   *
   * @returns a function that unsubscribes.
   */
  onDecided(id: string, listener: () => void, withinMs: number): () => void {
    const forget = (): void => {
      clearTimeout(timer);
      this.#decided.off(id, fire);
    };
    const fire = (): void => {
      forget();
      listener();
    };
    const timer = setTimeout(forget, withinMs);
    timer.unref();
    this.#decided.on(id, fire);
    return forget;
  }

  /**
   * Calls `listener` (awaited, before the page answers) each time this process's page revokes a
   * grant (its Revoke button, shown for an approved call that created one). `createConfirmation`
   * subscribes here to write the `grant-revoked` audit line. A listener's failure changes nothing:
   * the grant stays revoked.
   *
   * @param listener - receives a {@link GrantRevokedOnPage}: the grant id, the approval's `jti` and
   *   principal, the audience and tool the page showed, and `approver: null` (Revoke asks for no passkey).
   * @returns a function that unsubscribes.
   */
  onGrantRevoked(listener: (event: GrantRevokedOnPage) => Promise<void> | void): () => void {
    this.#revokedListeners.add(listener);
    return () => {
      this.#revokedListeners.delete(listener);
    };
  }

  /**
   * Stops the listener and the expiry checks; closes the notifier this approval made from channels
   * (letting its queues drain for up to 5 s; a `Notifier` you gave is yours to close). Idempotent.
   */
  async close(): Promise<void> {
    const l = this.#listener;
    this.#listener = undefined;
    for (const timer of this.#expiryTimers.values()) clearTimeout(timer);
    this.#expiryTimers.clear();
    await l?.close();
    if (this.#ownsNotifier) await this.#notifier?.close();
  }

  /**
   * Whether a request path belongs to the page (`/approve`, `/approve/…`, `/assets/page.js`,
   * `/assets/page.css`): what an HTTP server routes to {@link PasskeyApproval.fetch}.
   */
  servesPath(pathname: string): boolean {
    return this.#page.servesPath(pathname);
  }

  /**
   * Answers one request of the page as a web-standard `fetch` handler (for `--http`: the
   * application's Host/Origin checks run before it). No bearer token is asked for: a browser
   * opening the link has none, and the passkey assertion is the proof; the id lets one see the
   * question and deny, never approve.
   */
  fetch(request: Request): Promise<Response> {
    return this.#page.fetch(request);
  }

  /** Answers one request of the page (`node:http`, the stdio loopback listener). */
  handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    return this.#page.handle(req, res);
  }

  /** The quorum of a tool's approvals, as a new approval's `approvalsRequired` (none for 1). */
  #quorum(tool: string): { approvalsRequired?: number } {
    const n = this.#required(tool);
    return n === 1 ? {} : { approvalsRequired: n };
  }

  /**
   * Counts one approver's approval of a quorum; when it completes it, wakes whoever waits for it
   * in this process. With `notify`: `approval.counted` for an approval counted that does not
   * complete the quorum, `approval.decided` (`approved`, every approver named) for the one that does.
   */
  async #count(id: string, vote: ApprovalVote): Promise<CountOutcome> {
    const outcome = await this.store.countApproval(id, vote, this.#now());
    if (outcome === 'approved') {
      this.#decided.emit(id);
      if (this.#notifier !== undefined) await this.#noticeDecided(id, 'approved');
    } else if (outcome === 'counted' && this.#notifier !== undefined) await this.#noticeCounted(id, vote);
    return outcome;
  }

  /**
   * Sends `approval.counted` for `vote`, just counted here: the approvers up to and including this
   * one (so a later approval counted meanwhile does not change what this step says), of how many
   * are needed. Read back from the store; none when the record is gone or this approver is not in it.
   */
  async #noticeCounted(id: string, vote: ApprovalVote): Promise<void> {
    try {
      const record = await this.store.approvalById(id, this.#now());
      const approvals = record?.approvals ?? [];
      const at = approvals.findIndex((a) => a.approver === vote.approver && a.credentialId === vote.credentialId);
      const required = record?.approvalsRequired ?? 1;
      if (record === undefined || at < 0 || at + 1 >= required) return;
      const approvers = approvals.slice(0, at + 1).map((a) => a.approver);
      this.#notice('approval.counted', record, undefined, approvers, {
        approvals: at + 1,
        approvalsRequired: required,
      });
    } catch {
      // A notice never changes or fails a decision.
    }
  }

  /** Records the page's decision on the approval `id` (once), then wakes whoever waits for it in this process. */
  async #record(id: string, decision: PageDecision): Promise<DecideOutcome> {
    const outcome = await this.store.decideApproval(id, decision, this.#now());
    if (outcome === 'decided') {
      this.#decided.emit(id);
      if (this.#notifier !== undefined) await this.#noticeDecided(id, decision.status);
    }
    return outcome;
  }

  /** Sends `approval.decided` for the approval `id` just decided here, read back from the store. */
  async #noticeDecided(id: string, status: 'approved' | 'declined'): Promise<void> {
    const timer = this.#expiryTimers.get(id);
    if (timer !== undefined) clearTimeout(timer);
    this.#expiryTimers.delete(id);
    try {
      const record = await this.store.approvalById(id, this.#now());
      if (record === undefined || record.status !== status) return;
      // A quorum's approvers one by one, in the order they approved (its `approver` joins them).
      const approvers =
        (record.approvalsRequired ?? 1) > 1 && record.approvals !== undefined
          ? record.approvals.map((a) => a.approver)
          : [record.approver];
      this.#notice('approval.decided', record, status, status === 'approved' ? approvers : undefined);
    } catch {
      // A notice never changes or fails a decision.
    }
  }

  /**
   * At the expiry of an approval this process opened: `approval.decided` (`expired`) when it is
   * still pending (read as of just before its expiry, when no decision can come any more). A
   * process that ends first sends none.
   */
  #watchExpiry(id: string, expiresAtMs: number): void {
    const timer = setTimeout(
      () => {
        this.#expiryTimers.delete(id);
        void this.store
          .approvalById(id, expiresAtMs - 1)
          .then((record) => {
            if (record?.status === 'pending') this.#notice('approval.decided', record, 'expired');
          })
          .catch(() => {});
      },
      Math.max(0, expiresAtMs - this.#now()),
    );
    timer.unref();
    this.#expiryTimers.set(id, timer);
  }

  /**
   * Queues one notice (never throws, never waits): from what the page shows (`view`, an
   * {@link ApprovalView} or its stored JSON text), the principal's tag by the confirmation of its
   * audience, the question only with `includeQuestion`. Never the principal, a value, a state or a token.
   */
  #notice(
    type: ApprovalNotice['type'],
    approval: { id: string; principal: string; view: ApprovalView | string; expiresAtMs: number },
    decision?: NoticeDecision,
    approvers?: string[],
    quorum?: { approvals: number; approvalsRequired: number },
  ): void {
    const notifier = this.#notifier;
    if (notifier === undefined) return;
    try {
      const view = typeof approval.view === 'string' ? (JSON.parse(approval.view) as ApprovalView) : approval.view;
      const tag = this.#taggers.get(view.audience);
      if (tag === undefined) return;
      notifier.notify({
        type,
        approvalId: approval.id,
        url: this.urlFor(approval.id),
        tool: view.tool,
        audience: view.audience,
        expiresAtMs: approval.expiresAtMs,
        principalTag: tag(approval.principal),
        ...(this.#includeQuestion ? { question: view.question } : {}),
        ...(decision === undefined ? {} : { decision }),
        ...(approvers === undefined ? {} : { approvers }),
        ...(quorum ?? {}),
      });
    } catch {
      // A notice never changes or fails a call or a decision.
    }
  }
}

/** What {@link PasskeyApprovalOptions.notify} amounts to. */
interface NotifySetup {
  /** The notifier, when it has at least one channel. */
  notifier: Notifier | undefined;
  /** Made here from channels (so closed with the approval). */
  owned: boolean;
  includeQuestion: boolean;
}

/**
 * Reads {@link PasskeyApprovalOptions.notify}: channels become a new {@link Notifier} (reporting on stderr).
 *
 * @throws {TypeError} unless it is absent, a `Notifier`, an array of `NotifyChannel`s, or `{ to, includeQuestion }` of one of those.
 */
function notifySetup(notify: PasskeyApprovalOptions['notify']): NotifySetup {
  if (notify === undefined) return { notifier: undefined, owned: false, includeQuestion: false };
  const long = !(notify instanceof Notifier) && !Array.isArray(notify);
  const to: unknown = long ? (notify as Partial<ApprovalNotifyOptions> | null)?.to : notify;
  if (!(to instanceof Notifier) && !Array.isArray(to))
    throw new TypeError(
      'notify must be a Notifier, an array of NotifyChannel (from parseNotifySpec), or { to, includeQuestion }',
    );
  const owned = Array.isArray(to);
  // The Notifier checks the channels (a TypeError for anything not from parseNotifySpec).
  const notifier = owned ? new Notifier({ channels: to as readonly NotifyChannel[] }) : (to as Notifier);
  return {
    notifier: notifier.channels.length > 0 ? notifier : undefined,
    owned,
    includeQuestion: long && (notify as ApprovalNotifyOptions).includeQuestion === true,
  };
}
