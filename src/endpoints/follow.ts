// Follow streams: a paged endpoint's records as they arrive, oldest first, each once per follower.
// Followers with the same parameters share one feed, which asks the engine every interval for the
// records since its newest one minus the lag (so that a record arriving late is still found), paging
// past full pages; each follower skips what is not after its starting point or was already sent.
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
  /** Where failed polls are reported; the feed tries again at its next interval. */
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
  /** The next record, and its cursor (where a reconnect resumes). */
  deliver(record: Row, cursor: string): void;
  /** Catching up failed; the stream should end with this error. */
  fail(error: unknown): void;
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

// A catch-up reads history in windows, wider while they are sparse: few queries over quiet days,
// bounded memory over busy minutes.
const FIRST_WINDOW_US = 60_000_000n;
const WIDEST_WINDOW_US = 86_400_000_000n;

export class FollowHub {
  private readonly feeds = new Map<string, Feed>();
  private readonly clock: () => bigint;
  private readonly counts = { open: 0, polls: 0, recordsSent: 0 };
  private readonly engine: QueryEngine;
  private readonly queries: ReadonlyMap<string, string>;
  readonly options: FollowOptions;

  constructor(engine: QueryEngine, queries: ReadonlyMap<string, string>, options: FollowOptions) {
    this.engine = engine;
    this.queries = queries;
    this.options = options;
    this.clock = options.clock ?? (() => dateToMicros(new Date()));
  }

  /**
   * Streams the endpoint's records for these validated parameters to `follower`: first every record
   * after `from` (when given) up to now, then live from its feed. Returns the function that stops it.
   */
  follow(
    endpoint: EndpointDefinition,
    params: SqlParams,
    from: StartingPoint | undefined,
    follower: Follower,
  ): () => void {
    const live = { ...params, iso_timestamp_start: null };
    const subscription = new Subscription(follower, from ?? { micros: this.clock() }, this);
    const key = cacheKey(endpoint.id, live);
    let stopped = false;
    this.counts.open++;
    const join = () => {
      if (stopped) return;
      let feed = this.feeds.get(key);
      if (!feed) {
        feed = new Feed(endpoint, live, this);
        this.feeds.set(key, feed);
      }
      feed.subscribers.add(subscription);
    };
    if (from) {
      this.catchUp(endpoint, live, subscription, from).then(join, (error) => {
        if (!stopped) follower.fail(error);
      });
    } else join();
    return () => {
      if (stopped) return;
      stopped = true;
      this.counts.open--;
      const feed = this.feeds.get(key);
      if (!feed?.subscribers.delete(subscription) || feed.subscribers.size > 0) return;
      feed.stop();
      this.feeds.delete(key);
    };
  }

  stats() {
    return { feeds: this.feeds.size, ...this.counts };
  }

  close(): void {
    for (const feed of this.feeds.values()) feed.stop();
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

  /** Every record in (after, until], newest first, through as many pages as it takes. */
  async records(
    endpoint: EndpointDefinition,
    params: SqlParams,
    after: bigint,
    until: bigint | undefined,
    options: { credential?: string; morePages?: (page: Row[]) => boolean } = {},
  ): Promise<Row[]> {
    const { credential, morePages = () => true } = options;
    const rows: Row[] = [];
    let cursor: Position | undefined;
    for (;;) {
      const { rows: page } = await this.engine.run({
        endpoint: endpoint.name,
        sql: this.queries.get(endpoint.name) as string,
        params: {
          ...params,
          iso_timestamp_start: formatTimestamp(after),
          iso_timestamp_end: until === undefined ? null : formatTimestamp(until),
          cursor_timestamp: cursor ? formatTimestamp(cursor.micros) : null,
          cursor_id: cursor?.id ?? null,
        },
        maxRows: endpoint.maxRows,
        trigger: "follow",
        ...(credential !== undefined && { credential }),
      });
      rows.push(...page);
      const last = page.at(-1);
      const full = page.length >= (endpoint.pageSize ?? Number.POSITIVE_INFINITY);
      if (!last || !full || !morePages(page)) return rows;
      cursor = positionOf(last);
    }
  }

  private async catchUp(
    endpoint: EndpointDefinition,
    params: SqlParams,
    subscription: Subscription,
    from: StartingPoint,
  ): Promise<void> {
    // The start is exclusive in the SQL; one µs earlier keeps the records at `from` after its id.
    let after = from.micros - 1n;
    let width = FIRST_WINDOW_US;
    for (;;) {
      const now = this.clock();
      const until = after + width < now ? after + width : now;
      const rows = await this.records(endpoint, params, after, until, {
        credential: subscription.credential,
      });
      subscription.offer(rows);
      if (until >= now) return;
      after = until;
      const pages = rows.length / (endpoint.pageSize ?? Number.POSITIVE_INFINITY);
      if (pages <= 1 && width < WIDEST_WINDOW_US) width *= 2n;
      else if (pages > 10 && width > 1_000_000n) width /= 2n;
    }
  }
}

/** One parameter set's polling, shared by its followers. */
class Feed {
  readonly subscribers = new Set<Subscription>();
  private readonly seen: Seen;
  private sweptAt = Date.now();
  private polling = false;
  private readonly timer: NodeJS.Timeout;
  private readonly endpoint: EndpointDefinition;
  private readonly params: SqlParams;
  private readonly hub: FollowHub;

  constructor(endpoint: EndpointDefinition, params: SqlParams, hub: FollowHub) {
    this.endpoint = endpoint;
    this.params = params;
    this.hub = hub;
    this.seen = new Seen(hub.now(), hub.options.lagMs);
    this.timer = setInterval(() => this.poll(), hub.options.intervalMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /**
   * Reads the lag window newest first, stopping at a page of records already seen: one query for a
   * quiet interval, one more per 100 new records. Once per lag it reads the whole window, which
   * finds a late record however many newer ones arrived with it.
   */
  private async poll(): Promise<void> {
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
      this.hub.options.log?.warn(
        { endpoint: this.endpoint.name, err: error },
        "follow poll failed; trying again at the next interval",
      );
    } finally {
      this.polling = false;
    }
  }
}

/** One follower: what it has been sent, so that overlapping polls deliver each record once. */
class Subscription {
  private readonly sent: Seen;
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

  offer(rows: Row[]): void {
    for (const { row, position } of ascending(rows)) {
      if (compare(position, this.from) <= 0 || !this.sent.add(position)) continue;
      this.follower.deliver(row, this.hub.options.cursors.after(row));
      this.hub.countSent();
    }
    this.sent.prune();
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
