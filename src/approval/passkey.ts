/**
 * Passkey approval (MCP spec 2026-07-28, client/elicitation, URL mode): the lifecycle of the
 * approvals a confirmation waits for. {@link PasskeyApproval} starts the approval page (`page.ts`;
 * over stdio on its own loopback listener, `listener.ts`; over `--http` behind the public URL, on
 * your HTTP server through {@link PasskeyApproval.fetch}), opens one approval per `jti` in the
 * store, records the page's decisions and wakes the round 2 waiting for one
 * ({@link PasskeyApproval.waitForDecision}). Round 2 redeems an approved record (see
 * `createConfirmation`): approving requires a WebAuthn assertion with user verification (W3C Web
 * Authentication Level 3, §7.2; `webauthn.ts`) from an enrolled approver allowed for the calling
 * principal.
 *
 * > [!WARNING]
 * > Trust boundary: this protects against everything that speaks MCP or HTTP
 * > to the server (the client, an agent driving it, an injected prompt,
 * > another local process without the authenticator). Code running as the
 * > same OS user can edit the approvers file; see the README's stronger setup.
 *
 * @module
 */
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ApproversFile } from './approvers.js';
import { listenLoopback, send, type LoopbackListener } from './listener.js';
import {
  ApprovalPage,
  type ApprovalEvent,
  type ApprovalView,
  type GrantRevokedOnPage,
  type PageDecision,
} from './page.js';
import { parsePublicUrl } from './publicUrl.js';
import type { ApprovalRecord, DecideOutcome } from '../store/approvalStore.js';
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
  #listener: LoopbackListener | undefined;

  private constructor(options: PasskeyApprovalOptions, listener: LoopbackListener | undefined, origin: string) {
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
    this.#page = new ApprovalPage({
      store: this.store,
      approvers: options.approvers,
      origin,
      rpId: this.rpId,
      // Behind a public URL (no listener of ours): Host compared by host name rather than exactly.
      behindPublicUrl: listener === undefined,
      now: this.#now,
      decide: (id, decision) => this.#record(id, decision),
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
   * @throws {ConfigError} `ERR_CONFIG_RP_ID` when the approvers were enrolled for another RP ID (the
   *   message names them); `ERR_CONFIG_PUBLIC_URL` when `publicUrl` is not an http(s) origin with a
   *   DNS host name; `ERR_CONFIG_LISTEN` naming the address when either loopback address is taken.
   * @example
   * const approval = await PasskeyApproval.start({ store, approvers: await loadApproversForServer(path, roots) });
   * const confirmation = await createConfirmation({ approval }); // its jtis in approval.store too
   */
  static async start(options: PasskeyApprovalOptions): Promise<PasskeyApproval> {
    const wait = options.waitSeconds ?? DEFAULT_APPROVAL_WAIT_SECONDS;
    if (!Number.isSafeInteger(wait) || wait < 0 || wait > 3_600)
      throw new RangeError('waitSeconds must be a whole number of seconds from 0 to 3600');
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
      return new PasskeyApproval(options, undefined, publicUrl.origin);
    }
    let self: PasskeyApproval | undefined;
    const listener = await listenLoopback(options.port ?? 0, (req, res) => {
      if (self === undefined) {
        send(res, 503, 'text/plain; charset=utf-8', 'starting', req.method);
        return;
      }
      void self.handle(req, res);
    });
    self = new PasskeyApproval(options, listener, listener.origin);
    return self;
  }

  /** The page URL of an approval id. */
  urlFor(id: string): string {
    return `${this.origin}/approve/${id}`;
  }

  /**
   * Opens a pending approval for a `jti` (one per `jti`, with a fresh random id).
   *
   * @throws {RangeError} when the `jti` already has one.
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
      },
      nowMs,
    );
    return { id, url: this.urlFor(id) };
  }

  /**
   * Opens a pending approval with a link (a client that cannot elicit: see `linkStore.ts`), unless
   * the link key already has a live link or the principal has `maxPending` pending link approvals.
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
      },
      maxPending,
      nowMs,
    );
    return outcome === 'opened' ? { outcome, id, url: this.urlFor(id) } : { outcome };
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

  /** Stops the listener. Idempotent. */
  async close(): Promise<void> {
    const l = this.#listener;
    this.#listener = undefined;
    await l?.close();
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

  /** Records the page's decision on the approval `id` (once), then wakes whoever waits for it in this process. */
  async #record(id: string, decision: PageDecision): Promise<DecideOutcome> {
    const outcome = await this.store.decideApproval(id, decision, this.#now());
    if (outcome === 'decided') this.#decided.emit(id);
    return outcome;
  }
}
