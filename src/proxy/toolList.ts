/**
 * The proxy's view of the upstream's tool list: never older than the upstream's last
 * `notifications/tools/list_changed`, and never read more than once at a time.
 *
 * Every `notifications/tools/list_changed` starts a new generation ({@link ToolListView.changed}).
 * A listing remembers the generation it started in; when it ends in another one (a notice
 * arrived while it was being read, between its pages or before its answer), its result is thrown
 * away, never cached and never used, and the list is read again from the first page. The
 * notice and the answer travel on one ordered stream for a stdio upstream, and the SDK handles a
 * notice before the code awaiting a later answer runs, so "arrived while it was being read" is
 * decided by the order of the messages, not by time.
 *
 * Listings are shared: at most one is in flight, and at most one more is pending (to start when
 * the one in flight ends) for the callers that need a newer one. A storm of notices therefore
 * costs at most one more listing each time the one in flight ends, however many notices and
 * callers there are. A caller whose listings keep ending in a later generation gives up after
 * {@link MAX_STALE_LISTINGS} of them (`ERR_CONFIRM_UPSTREAM_FAILED`), so nothing is decided
 * from a list the upstream had already declared changed.
 *
 * What may be served from a cached list (a read that is not `fresh`, the decision for a tool the
 * policy does not name): with an upstream that declares `tools.listChanged`, the last list read
 * until its next notice; with {@link ToolListViewOptions.maxAgeMs} (the operator's
 * `--list-max-age`), a list whose listing started less than that long ago (and still no later
 * than a notice, if one ever comes); otherwise nothing. A `fresh` read (round 1 and round 2 of a
 * confirmed call, a client's `tools/list`) never takes a cached list, whatever the age.
 *
 * @module
 */
import type { Tool } from '@modelcontextprotocol/client';
import { ConfirmUpstreamFailedError } from '../errors.js';

/** Most listings in a row one caller waits for that each ended after a notice; then it is refused. */
export const MAX_STALE_LISTINGS = 10;

/** Where the list is read (the upstream, every page). */
export interface ToolListSource {
  listTools(signal?: AbortSignal): Promise<Tool[]>;
}

/** One listing: its number (1, 2, …), the generation it started in, and its result by name. */
interface Listing {
  readonly index: number;
  readonly generation: number;
  /** When it started (the clock's milliseconds; 0 when no age applies). */
  readonly at: number;
  readonly result: Promise<Map<string, Tool>>;
  /** Settles (never rejects) once the listing ended and is no longer the one in flight. */
  readonly ended: Promise<void>;
}

/** Options of {@link ToolListView}. */
export interface ToolListViewOptions {
  /**
   * Whether the upstream declares `tools.listChanged` (so its notices keep a cached list
   * current). Without it (and without {@link maxAgeMs}) nothing is cached: every caller gets a
   * listing started after it asked.
   */
  cache: boolean;
  /**
   * How long a list may serve reads that are not `fresh`, in milliseconds from the moment its
   * listing started, for an upstream that does not declare `tools.listChanged` (`--list-max-age`).
   * A notice, if one comes, still ends it at once. Defaults to 0 (no list is kept).
   */
  maxAgeMs?: number;
  /** The clock, in milliseconds (tests inject one). Defaults to `Date.now`. */
  now?: () => number;
}

/** The proxy's view of the upstream's tool list (see the module documentation). */
export class ToolListView {
  private generation = 0;
  private started = 0;
  private cached: { generation: number; index: number; at: number; tools: Map<string, Tool> } | undefined;
  private inFlight: Listing | undefined;
  private pending: Promise<Listing> | undefined;
  private readonly maxAgeMs: number;
  private readonly now: () => number;

  constructor(
    private readonly source: ToolListSource,
    private readonly options: ToolListViewOptions,
  ) {
    this.maxAgeMs = options.maxAgeMs ?? 0;
    this.now = options.now ?? Date.now;
  }

  /** Whether any list is kept for reads that are not `fresh` (notices keep it current, or a maximum age bounds it). */
  get caches(): boolean {
    return this.options.cache || this.maxAgeMs > 0;
  }

  /** The cached list, if a read that is not `fresh` may take it now: of the current generation and, without notices, younger than the maximum age. */
  private usable(): Map<string, Tool> | undefined {
    const cached = this.cached;
    if (cached === undefined || cached.generation !== this.generation) return undefined;
    if (!this.options.cache && !this.young(cached.at)) return undefined;
    return cached.tools;
  }

  /** Whether a listing started at `at` is younger than the maximum age now. */
  private young(at: number): boolean {
    const age = this.now() - at;
    // A clock that went back: the age is unknown, so the list is not used.
    return age >= 0 && age < this.maxAgeMs;
  }

  /** The upstream sent `notifications/tools/list_changed`: every list read before now is out of date. */
  changed(): void {
    this.generation++;
    this.cached = undefined;
  }

  /**
   * The upstream's tools by name.
   *
   * @param options.fresh - read a list whose listing started after this call (round 1 and 2 of a
   *   confirmed tool, a client's `tools/list`); otherwise a cached list of the current generation
   *   will do (the decision for a tool the policy does not name). Without {@link ToolListViewOptions.cache}
   *   or {@link ToolListViewOptions.maxAgeMs} every read is fresh.
   * @param options.signal - the caller's cancellation: it stops waiting, the shared listing goes on.
   * @throws {ConfirmUpstreamFailedError} `ERR_CONFIRM_UPSTREAM_FAILED` after {@link MAX_STALE_LISTINGS}
   *   listings that each ended after a notice; else what the source throws.
   */
  async tools(options: { fresh?: boolean; signal?: AbortSignal } = {}): Promise<Map<string, Tool>> {
    return (await this.read(options)).tools;
  }

  /**
   * The generation now: it changes with every `notifications/tools/list_changed`, so a list read
   * in generation G is still the upstream's current one (as far as the proxy can know) while this is G.
   */
  get current(): number {
    return this.generation;
  }

  /**
   * As {@link tools}, with the generation the list is current in ({@link current} when it is returned).
   *
   * @throws as {@link tools}.
   */
  async read(
    options: { fresh?: boolean; signal?: AbortSignal } = {},
  ): Promise<{ tools: Map<string, Tool>; generation: number }> {
    const fresh = options.fresh === true || !this.caches;
    // A listing qualifies only if it started after this call asked (fresh) and in the current generation.
    // Without notices, a list past its age is read afresh: a listing started after this call asked, or
    // one still in flight that started within the age.
    const after = fresh || !this.options.cache ? this.started : -1;
    const young = fresh || this.options.cache ? undefined : (l: Listing) => this.young(l.at);
    for (let stale = 0; ; stale++) {
      if (!fresh) {
        const tools = this.usable();
        if (tools !== undefined) return { tools, generation: this.generation };
      }
      if (stale >= MAX_STALE_LISTINGS) {
        throw new ConfirmUpstreamFailedError(
          `its tool list changed during each of ${MAX_STALE_LISTINGS} readings in a row`,
          { request: 'tools/list' },
        );
      }
      const listing = await whileWaiting(this.listingAfter(after, young), options.signal);
      const tools = await whileWaiting(listing.result, options.signal);
      // No notice since the listing started: it is the current list.
      if (listing.generation === this.generation) return { tools, generation: listing.generation };
    }
  }

  /** The listing in flight if it qualifies, else the pending one (started once the one in flight ends), else a new one. */
  private listingAfter(after: number, young?: (l: Listing) => boolean): Listing | Promise<Listing> {
    const current = this.inFlight;
    if (current === undefined) return this.start();
    if (current.generation === this.generation && (current.index > after || young?.(current) === true)) return current;
    this.pending ??= current.ended.then(() => {
      this.pending = undefined;
      // Another caller may have started one between the end and now: it started late enough too.
      return this.inFlight ?? this.start();
    });
    return this.pending;
  }

  private start(): Listing {
    const generation = this.generation;
    const index = ++this.started;
    // Its age counts from before the upstream was asked: the list is at least as recent as this.
    const at = this.caches && !this.options.cache ? this.now() : 0;
    // Not the caller's signal: the listing is shared, and one caller's cancellation must not fail the others.
    const result = this.source.listTools().then((list) => new Map(list.map((t) => [t.name, t] as const)));
    const ended = result.then(
      () => {},
      () => {},
    );
    const listing: Listing = {
      index,
      generation,
      at,
      result,
      ended: ended.then(() => {
        if (this.inFlight === listing) this.inFlight = undefined;
      }),
    };
    this.inFlight = listing;
    void result.then(
      (tools) => {
        // Cached only when no notice arrived while it was read (and only if notices keep it current or
        // an age bounds it); the latest started wins.
        if (this.caches && generation === this.generation && (this.cached === undefined || this.cached.index < index)) {
          this.cached = { generation, index, at, tools };
        }
      },
      () => {},
    );
    return listing;
  }
}

/** `promise`, or the signal's reason once it aborts (the caller stops waiting; the work goes on). */
async function whileWaiting<T>(promise: T | Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  signal.throwIfAborted();
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_resolve, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([promise, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort!);
  }
}
