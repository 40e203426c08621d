// Follow streams: a paged endpoint's records as they arrive, oldest first, each once per follower.
// Followers with the same parameters share one feed, which asks the engine every interval for the
// records since its newest one minus the lag (so that a record arriving late is still found), paging
// past full pages; each follower skips what is not after its starting point or was already sent.
// A follower's catch-up over history is its own work: one query at a time, under its credential,
// waiting while its stream is full, and stopped when its stream goes.
import { BurstWarning } from "../burst-warning.ts";
import { cacheKey } from "../cache/cache-key.ts";
import type { QueryEngine, Row } from "../engines/engine.ts";
import { dateToMicros, formatTimestamp, parseIsoTimestamp } from "../time.ts";
import type { EndpointDefinition } from "./catalog.ts";
import type { CursorCodec } from "./cursor.ts";
import type { SqlParams } from "./params.ts";

export interface FollowOptions {
  intervalMs: number;
  /** How much older than the newest record a late record may be and still be delivered. */
  lagMs: number;
  /** Epoch µs now; default: the system clock. */
  clock?: () => bigint;
  /** Where failed polls are reported (a line per burst); the feed tries again at its next interval. */
  log?: { warn(fields: object, message: string): void };
  /** Makes each record's event id. */
  cursors: CursorCodec;
}

/** Where a follower starts: after this record, or after every record at `micros` when `id` is absent. */
export interface StartingPoint {
  micros: bigint;
  id?: string;
}

export interface Follower {
  /** Credential name: catch-up queries are its work; a feed's polls are nobody's. */
  credential: string;
  /** Writes the next record, with its cursor (where a reconnect resumes); false when the stream is gone. */
  deliver(record: Row, cursor: string): boolean;
  /** Resolves once the stream has room for more (its client read what it was sent) or is gone. */
  ready(): Promise<void>;
  /** Catching up failed; the stream should end with this error. */
  fail(error: unknown): void;
  /** A settled run sent all it had to: the cursor the next run resumes from. */
  settled?(cursor: string): void;
  /** Its feed polled: what it found was delivered (an alert rule is evaluated then). */
  polled?(): void;
  /** Not a stream (an alert rule): left out of the open streams and records sent it counts. */
  unstreamed?: boolean;
}

interface Position {
  micros: bigint;
  id: string;
}

const positionOf = (row: Row): Position => ({
  micros: parseIsoTimestamp(String(row.timestamp)) as bigint,
  id: typeof row.id === "string" ? row.id : "",
});

/** Order of (timestamp, id), ids by UTF-8 bytes as both engines compare them. */
function compare(a: Position, b: StartingPoint): number {
  if (a.micros !== b.micros) return a.micros < b.micros ? -1 : 1;
  return b.id === undefined ? -1 : Buffer.compare(Buffer.from(a.id), Buffer.from(b.id));
}

const ascending = (rows: Row[]) =>
  rows
    .map((row) => ({ row, position: positionOf(row) }))
    .sort((a, b) => compare(a.position, b.position));

// A catch-up reads history in windows, wider while they are sparse: few queries over quiet hours,
// bounded memory over busy minutes. A stretch without records costs one seek, however long.
const FIRST_WINDOW_US = 60_000_000n;
const WIDEST_WINDOW_US = 86_400_000_000n;
// Failed polls after this long without one start a new burst, which gets its own log line.
const POLL_FAILURE_GAP_MS = 10_000;

export class FollowHub {
  private readonly feeds = new Map<string, Feed>();
  private readonly clock: () => bigint;
  private readonly counts = { open: 0, polls: 0, recordsSent: 0 };
  private readonly engine: QueryEngine;
  private readonly queries: ReadonlyMap<string, string>;
  private readonly seeks: ReadonlyMap<string, string>;
  private readonly schedule: PollSchedule;
  private readonly pollFailures = new BurstWarning(POLL_FAILURE_GAP_MS);
  readonly options: FollowOptions;

  /**
   * `queries` are the endpoints' SQL; `seeks` their seek SQL (queries/<dialect>/seek/): the oldest
   * record the endpoint's query would return after a point, where a catch-up starts reading.
   */
  constructor(
    engine: QueryEngine,
    sql: { queries: ReadonlyMap<string, string>; seeks: ReadonlyMap<string, string> },
    options: FollowOptions,
  ) {
    this.engine = engine;
    this.queries = sql.queries;
    this.seeks = sql.seeks;
    this.options = options;
    this.clock = options.clock ?? (() => dateToMicros(new Date()));
    this.schedule = new PollSchedule(options.intervalMs);
  }

  /**
   * Streams the endpoint's records for these validated parameters to `follower`: first every record
   * after `from` (when given) up to now, then live from its feed. With `settledUntil`, a settled
   * run instead: every record after `from` up to that instant, then `follower.settled`, never live.
   * Returns the function that stops it, and with it any query of its catch-up.
   */
  follow(
    endpoint: EndpointDefinition,
    params: SqlParams,
    from: StartingPoint | undefined,
    follower: Follower,
    settledUntil?: bigint,
  ): () => void {
    const live = { ...params, iso_timestamp_start: null };
    const start = from ?? { micros: this.clock() };
    const subscription = new Subscription(follower, start, this);
    const key = cacheKey(endpoint.id, live);
    const stopped = new AbortController();
    const streamed = follower.unstreamed !== true;
    if (streamed) this.counts.open++;
    const join = () => {
      if (stopped.signal.aborted) return;
      let feed = this.feeds.get(key);
      if (!feed) {
        feed = new Feed(endpoint, live, this);
        this.feeds.set(key, feed);
        this.schedule.add(feed);
      }
      feed.subscribers.add(subscription);
    };
    const failed = (error: unknown) => {
      if (!stopped.signal.aborted) follower.fail(error);
    };
    if (settledUntil !== undefined) {
      const settle = () => {
        if (!stopped.signal.aborted) follower.settled?.(subscription.checkpoint(settledUntil));
      };
      this.catchUp(endpoint, live, subscription, start, stopped.signal, settledUntil).then(
        settle,
        failed,
      );
    } else if (from) {
      this.catchUp(endpoint, live, subscription, from, stopped.signal).then(join, failed);
    } else join();
    return () => {
      if (stopped.signal.aborted) return;
      stopped.abort();
      if (streamed) this.counts.open--;
      const feed = this.feeds.get(key);
      if (!feed?.subscribers.delete(subscription) || feed.subscribers.size > 0) return;
      this.schedule.delete(feed);
      this.feeds.delete(key);
    };
  }

  stats() {
    return { feeds: this.feeds.size, ...this.counts };
  }

  close(): void {
    this.schedule.clear();
    this.feeds.clear();
  }

  now(): bigint {
    return this.clock();
  }

  countSent(): void {
    this.counts.recordsSent++;
  }

  countPoll(): void {
    this.counts.polls++;
  }

  /** One line for the first failed poll of a burst; the rest of the burst only counted in the next. */
  pollFailed(endpoint: EndpointDefinition, error: unknown): void {
    const unsaid = this.pollFailures.occur();
    if (unsaid === undefined) return;
    this.options.log?.warn(
      { endpoint: endpoint.name, err: error, failedSinceLastLine: unsaid },
      "follow poll failed; feeds try again at their next interval (further failures in this burst are only counted)",
    );
  }

  /** Every record in (after, until], newest first, through as many pages as it takes. */
  async records(
    endpoint: EndpointDefinition,
    params: SqlParams,
    after: bigint,
    until: bigint | undefined,
    options: {
      credential?: string;
      signal?: AbortSignal;
      morePages?: (page: Row[]) => boolean;
    } = {},
  ): Promise<Row[]> {
    const { morePages = () => true, ...attribution } = options;
    const rows: Row[] = [];
    let cursor: Position | undefined;
    for (;;) {
      const page = await this.query(this.queries, endpoint, attribution, {
        ...params,
        iso_timestamp_start: formatTimestamp(after),
        iso_timestamp_end: until === undefined ? null : formatTimestamp(until),
        cursor_timestamp: cursor ? formatTimestamp(cursor.micros) : null,
        cursor_id: cursor?.id ?? null,
      });
      rows.push(...page);
      const last = page.at(-1);
      const full = page.length >= (endpoint.pageSize ?? Number.POSITIVE_INFINITY);
      if (!last || !full || !morePages(page)) return rows;
      cursor = positionOf(last);
    }
  }

  /**
   * The time of the oldest record in (after, until] that comes after `from` (a record's position,
   * when it has an id), or undefined when there is none.
   */
  private async oldest(
    endpoint: EndpointDefinition,
    params: SqlParams,
    after: bigint,
    until: bigint,
    from: StartingPoint,
    attribution: { credential: string; signal: AbortSignal },
  ): Promise<bigint | undefined> {
    const [first] = await this.query(this.seeks, endpoint, attribution, {
      ...params,
      iso_timestamp_start: formatTimestamp(after),
      iso_timestamp_end: formatTimestamp(until),
      after_timestamp: from.id === undefined ? null : formatTimestamp(from.micros),
      after_id: from.id ?? null,
    });
    return first && positionOf(first).micros;
  }

  private async query(
    sql: ReadonlyMap<string, string>,
    endpoint: EndpointDefinition,
    attribution: { credential?: string; signal?: AbortSignal },
    params: SqlParams,
  ): Promise<Row[]> {
    const { rows } = await this.engine.run({
      endpoint: endpoint.name,
      sql: sql.get(endpoint.name) as string,
      params,
      maxRows: endpoint.maxRows,
      trigger: "follow",
      ...(attribution.credential !== undefined && { credential: attribution.credential }),
      ...(attribution.signal && { signal: attribution.signal }),
    });
    return rows;
  }

  /**
   * Delivers every record after `from` up to now (or up to `until`, inclusive), window by window,
   * one query at a time. A window found empty is followed by one seek to the next record, so empty
   * history (a start years back, or beyond the tier's retention, which the SQL applies) costs one
   * query, not one per window.
   */
  private async catchUp(
    endpoint: EndpointDefinition,
    params: SqlParams,
    subscription: Subscription,
    from: StartingPoint,
    signal: AbortSignal,
    until?: bigint,
  ): Promise<void> {
    const attribution = { credential: subscription.credential, signal };
    // The start is exclusive in the SQL; one µs earlier keeps the records at `from` after its id.
    let after = from.micros - 1n;
    let width = FIRST_WINDOW_US;
    let seek = true;
    while (!signal.aborted) {
      const end = until ?? this.clock();
      if (after >= end) return;
      if (seek) {
        const next = await this.oldest(endpoint, params, after, end, from, attribution);
        if (next === undefined) return;
        if (next - 1n > after) after = next - 1n;
      }
      const windowEnd = after + width < end ? after + width : end;
      const rows = await this.records(endpoint, params, after, windowEnd, attribution);
      await subscription.offerPaced(rows, signal);
      after = windowEnd;
      seek = rows.length === 0;
      const pages = rows.length / (endpoint.pageSize ?? Number.POSITIVE_INFINITY);
      if (pages <= 1 && width < WIDEST_WINDOW_US) width *= 2n;
      else if (pages > 10 && width > 1_000_000n) width /= 2n;
    }
  }
}

/**
 * Every feed polls once per interval, at a phase of its own drawn at random, from one timer: feeds
 * made together do not all query the engine at the same instant.
 */
class PollSchedule {
  private readonly due = new Map<Feed, number>();
  private readonly intervalMs: number;
  private timer: NodeJS.Timeout | undefined;

  constructor(intervalMs: number) {
    this.intervalMs = intervalMs;
  }

  add(feed: Feed): void {
    this.due.set(feed, Date.now() + Math.random() * this.intervalMs);
    this.arm();
  }

  delete(feed: Feed): void {
    this.due.delete(feed);
    if (this.due.size === 0) this.clear();
  }

  clear(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.due.clear();
  }

  private arm(): void {
    clearTimeout(this.timer);
    let next = Number.POSITIVE_INFINITY;
    for (const at of this.due.values()) next = Math.min(next, at);
    if (next === Number.POSITIVE_INFINITY) return;
    this.timer = setTimeout(() => this.tick(), Math.max(0, next - Date.now()));
  }

  private tick(): void {
    const now = Date.now();
    for (const [feed, at] of this.due) {
      if (at > now) continue;
      // A late tick is not made up for: the next poll is an interval from now.
      this.due.set(feed, Math.max(at + this.intervalMs, now));
      void feed.poll();
    }
    this.arm();
  }
}

/** One parameter set's polling, shared by its followers. */
class Feed {
  readonly subscribers = new Set<Subscription>();
  private readonly seen: Seen;
  private sweptAt = Date.now();
  private polling = false;
  private readonly endpoint: EndpointDefinition;
  private readonly params: SqlParams;
  private readonly hub: FollowHub;

  constructor(endpoint: EndpointDefinition, params: SqlParams, hub: FollowHub) {
    this.endpoint = endpoint;
    this.params = params;
    this.hub = hub;
    this.seen = new Seen(hub.now(), hub.options.lagMs);
  }

  /**
   * Reads the lag window newest first, stopping at a page of records already seen: one query for a
   * quiet interval, one more per 100 new records. Once per lag it reads the whole window, which
   * finds a late record however many newer ones arrived with it.
   */
  async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    this.hub.countPoll();
    const sweep = Date.now() - this.sweptAt >= this.hub.options.lagMs;
    if (sweep) this.sweptAt = Date.now();
    const unseen = (row: Row) => !this.seen.has(positionOf(row));
    try {
      const rows = await this.hub.records(
        this.endpoint,
        this.params,
        this.seen.newest - this.seen.lag,
        undefined,
        sweep ? {} : { morePages: (page) => page.some(unseen) },
      );
      for (const row of rows) this.seen.add(positionOf(row));
      this.seen.prune();
      for (const subscription of this.subscribers) subscription.offer(rows);
    } catch (error) {
      this.hub.pollFailed(this.endpoint, error);
    } finally {
      this.polling = false;
    }
  }
}

/** One follower: what it has been sent, so that overlapping polls deliver each record once. */
class Subscription {
  private readonly sent: Seen;
  /** The last record written to the follower. */
  private last: Row | undefined;
  private readonly follower: Follower;
  private readonly from: StartingPoint;
  private readonly hub: FollowHub;

  constructor(follower: Follower, from: StartingPoint, hub: FollowHub) {
    this.follower = follower;
    this.from = from;
    this.hub = hub;
    this.sent = new Seen(from.micros, hub.options.lagMs);
  }

  get credential(): string {
    return this.follower.credential;
  }

  /** Delivers what the follower has not had yet, oldest first, all at once (a feed's poll). */
  offer(rows: Row[]): void {
    for (const row of this.unsent(rows)) this.deliver(row);
    this.sent.prune();
    this.follower.polled?.();
  }

  /** As offer, waiting whenever the follower's stream is full (a catch-up, which can wait). */
  async offerPaced(rows: Row[], signal: AbortSignal): Promise<void> {
    for (const row of this.unsent(rows)) {
      if (signal.aborted) return;
      this.deliver(row);
      await this.follower.ready();
    }
    this.sent.prune();
  }

  /** The rows after the starting point not sent before, oldest first, each taken as sent. */
  private *unsent(rows: Row[]) {
    for (const { row, position } of ascending(rows)) {
      if (compare(position, this.from) > 0 && this.sent.add(position)) yield row;
    }
  }

  /**
   * Where the next run resumes: after the last record sent; with none sent, after every record up
   * to `settled` (or its start, when later), where nothing can arrive any more. So a run that finds
   * nothing still moves its checkpoint on, and a quiet filter's never ages past the retention.
   */
  checkpoint(settled: bigint): string {
    const { cursors } = this.hub.options;
    if (this.last) return cursors.after(this.last);
    const { micros, id } = this.from;
    if (settled > micros) return cursors.encode({ timestamp: formatTimestamp(settled) });
    return cursors.encode({ timestamp: formatTimestamp(micros), ...(id !== undefined && { id }) });
  }

  private deliver(row: Row): void {
    // Counted only when written: a stream that has gone takes nothing.
    if (this.follower.deliver(row, this.hub.options.cursors.after(row))) {
      if (this.follower.unstreamed !== true) this.hub.countSent();
      this.last = row;
    }
  }
}

/** Records seen within the lag of the newest one: the only ones a later poll can return again. */
class Seen {
  newest: bigint;
  readonly lag: bigint;
  private readonly positions = new Map<string, bigint>();

  constructor(newest: bigint, lagMs: number) {
    this.newest = newest;
    this.lag = BigInt(lagMs) * 1000n;
  }

  has(position: Position): boolean {
    return this.positions.has(`${position.micros}:${position.id}`);
  }

  /** Records a sighting; false when the record was seen before. */
  add(position: Position): boolean {
    const key = `${position.micros}:${position.id}`;
    if (this.positions.has(key)) return false;
    this.positions.set(key, position.micros);
    if (position.micros > this.newest) this.newest = position.micros;
    return true;
  }

  prune(): void {
    const horizon = this.newest - this.lag;
    for (const [key, micros] of this.positions) if (micros < horizon) this.positions.delete(key);
  }
}
