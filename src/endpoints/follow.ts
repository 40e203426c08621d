// Follow streams: a paged endpoint's records as they arrive, oldest first, each once per follower.
// Followers with the same parameters share one feed, which asks the engine every interval for the
// records since its newest one minus the lag (so that a record arriving late is still found), paging
// past full pages; each follower skips what is not after its starting point or was already sent.
// A follower's catch-up over history is its own work, under its credential: one query over the whole
// window from its start to now (or to a settled run's end), whose result is read as its stream has
// room, and stopped when its stream goes. A feed's polls are charged to the least busy credential
// among its followers' (the one that opened it among equals; the next when its share is full): so
// every poll counts in some credential's share of the engine and its bound, and one key's costly
// feeds wait their turn behind other tenants' instead of sharing one line with every feed, or
// holding a feed it shares with them in its own.
import { setImmediate } from "node:timers/promises";
import { BurstWarning } from "../burst-warning.ts";
import { cacheKey } from "../cache/cache-key.ts";
import { AdmissionError } from "../engines/admission.ts";
import type { QueryEngine, Row } from "../engines/engine.ts";
import type { SqlParams } from "../engines/sql-params.ts";
import { MinHeap } from "../min-heap.ts";
import { dateToMicros, formatTimestamp, wireTimestampMicros } from "../time.ts";
import type { EndpointDefinition, EndpointSql, PagingContract } from "./catalog.ts";
import type { CursorCodec } from "./cursor.ts";
import {
  type DeliveredRecord,
  MOST_DELIVERED,
  type Point,
  recordKey,
  type StreamPosition,
  startingAt,
} from "./stream-position.ts";
import { type ReadCost, readWindow } from "./window-read.ts";

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
  /** Engine work a credential holds now (running or waiting): a shared feed's poll goes to the least busy. */
  heldBy?: (credential: string) => number;
  /** Rows read from a catch-up's result at a time (BigQuery's result page); default 5000. */
  windowPageRows?: number;
}

export interface Follower {
  /**
   * Credential name: its catch-ups and settled runs are its work, and so are the polls of a feed it
   * opened (see Feed.poll), within its share of the engine.
   */
  credential: string;
  /**
   * Writes the next record, with its event id (where a reconnect resumes), made when asked for:
   * signing one costs more than sending the record, and an NDJSON stream needs only its last.
   * False when the stream is gone.
   */
  deliver(record: Row, cursor: () => string): boolean;
  /** Resolves once the stream has room for more (its client read what it was sent) or is gone. */
  ready(): Promise<void>;
  /** Catching up failed; the stream should end with this error. */
  fail(error: unknown): void;
  /**
   * A settled run sent all it had to: the cursor the next run resumes from, and the bytes its
   * queries processed when the engine reports them (BigQuery).
   */
  settled?(cursor: string, cost: { bytesProcessed?: number }): void;
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
  micros: wireTimestampMicros(String(row.timestamp)) as bigint,
  id: typeof row.id === "string" ? row.id : "",
});

/**
 * Order of (timestamp, id), ids by UTF-8 bytes as both engines compare them; a point without an id
 * comes after every record at its time.
 */
function compare(a: Point, b: Point): number {
  if (a.micros !== b.micros) return a.micros < b.micros ? -1 : 1;
  if (a.id === b.id) return 0;
  if (a.id === undefined || b.id === undefined) return a.id === undefined ? 1 : -1;
  return Buffer.compare(Buffer.from(a.id), Buffer.from(b.id));
}

const later = (a: Point, b: Point) => (compare(a, b) >= 0 ? a : b);

/**
 * The rows with their places, oldest first, letting the event loop's other work in every
 * RECORDS_PER_TURN rows. A poll reads newest first and a catch-up oldest first: one run either way,
 * which the sort takes in one pass.
 */
async function ascending(rows: Row[]): Promise<Entry[]> {
  const entries: Entry[] = [];
  for (const row of rows) {
    entries.push({ row, position: positionOf(row) });
    if (entries.length % RECORDS_PER_TURN === 0) await setImmediate();
  }
  return entries.sort((a, b) => compare(a.position, b.position));
}

// A catch-up's result is read this many rows at a time: a few MB held, a page read per chunk.
const WINDOW_PAGE_ROWS = 5000;
// Records a stream is written before other work waiting on the event loop (a request, another
// stream) gets its turn: a burst of 100 000 goes out between them, not in one block.
const RECORDS_PER_TURN = 200;
// Failed polls after this long without one start a new burst, which gets its own log line.
const POLL_FAILURE_GAP_MS = 10_000;

/** The parameters that bound a followed endpoint's window (its paging contract's). */
function windowOf(endpoint: EndpointDefinition): PagingContract["window"] {
  if (!endpoint.paging) throw new Error(`${endpoint.name} is not paged, so cannot be followed`);
  return endpoint.paging.window;
}

export class FollowHub {
  private readonly feeds = new Map<string, Feed>();
  private readonly clock: () => bigint;
  private readonly counts = { open: 0, polls: 0, recordsSent: 0 };
  private readonly engine: QueryEngine;
  private readonly schedule: PollSchedule;
  private readonly pollFailures = new BurstWarning(POLL_FAILURE_GAP_MS);
  readonly options: FollowOptions;
  /** FollowOptions.lagMs in µs. */
  readonly lag: bigint;

  /**
   * A followed endpoint's SQL in the engine's dialect: its query, and its window query (every record
   * the query would return after a point, oldest first, without a LIMIT).
   */
  constructor(engine: QueryEngine, options: FollowOptions) {
    this.engine = engine;
    this.options = options;
    this.lag = BigInt(options.lagMs) * 1000n;
    this.clock = options.clock ?? (() => dateToMicros(new Date()));
    this.schedule = new PollSchedule(options.intervalMs);
  }

  /**
   * Streams the endpoint's records for these validated parameters to `follower`: first every record
   * after `from` (when given) that it does not name as delivered, up to now, then live from its
   * feed. With `settledUntil`, a settled run instead: every such record up to that instant, then
   * `follower.settled`, never live. Returns the function that stops it, and with it any query of
   * its catch-up.
   */
  follow(
    endpoint: EndpointDefinition,
    params: SqlParams,
    from: StreamPosition | undefined,
    follower: Follower,
    settledUntil?: bigint,
  ): () => void {
    const live = { ...params, [windowOf(endpoint).start]: null };
    const start = from ?? startingAt(this.clock());
    const stopped = new AbortController();
    const subscription = new Subscription(follower, start, this, stopped.signal);
    const key = cacheKey(endpoint, live);
    const streamed = follower.unstreamed !== true;
    if (streamed) this.counts.open++;
    // Once the follower has gone or its stream ended, what its catch-up did no longer matters.
    const join = (caughtUp = false) => {
      if (subscription.over.aborted) return;
      let feed = this.feeds.get(key);
      if (!feed) {
        feed = new Feed(endpoint, live, this);
        this.feeds.set(key, feed);
        this.schedule.add(feed);
      }
      feed.subscribers.add(subscription);
      if (caughtUp) feed.sweepNext(subscription);
    };
    const failed = (error: unknown) => {
      if (!subscription.over.aborted) follower.fail(error);
    };
    if (settledUntil !== undefined) {
      const cost: ReadCost = { bytesProcessed: 0 };
      const settle = () => {
        if (subscription.over.aborted) return;
        follower.settled?.(subscription.checkpoint(settledUntil), {
          ...(this.engine.dialect === "bigquery" && { bytesProcessed: cost.bytesProcessed }),
        });
      };
      this.catchUp(endpoint, live, subscription, start.horizon, subscription.over, {
        until: settledUntil,
        cost,
      }).then(settle, failed);
    } else if (from) {
      this.catchUp(endpoint, live, subscription, from.horizon, subscription.over).then(
        () => join(true),
        failed,
      );
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
      /** Keeps a live view current (a feed's poll, an alert rule's read): the gate keeps room for it. */
      background?: boolean;
      morePages?: (page: Row[]) => boolean;
    } = {},
  ): Promise<Row[]> {
    const { morePages = () => true, ...attribution } = options;
    const rows: Row[] = [];
    let cursor: Position | undefined;
    for (;;) {
      const window = windowOf(endpoint);
      const page = await this.query(endpoint, attribution, {
        ...params,
        [window.start]: formatTimestamp(after),
        [window.end]: until === undefined ? null : formatTimestamp(until),
        cursor_timestamp: cursor ? formatTimestamp(cursor.micros) : null,
        cursor_id: cursor?.id ?? null,
      });
      rows.push(...page);
      const last = page.at(-1);
      const full = page.length >= (endpoint.paging?.pageSize ?? Number.POSITIVE_INFINITY);
      if (!last || !full || !morePages(page)) return rows;
      cursor = positionOf(last);
    }
  }

  /** The endpoint's SQL in the engine's dialect. */
  private sqlOf(endpoint: EndpointDefinition): EndpointSql {
    const sql = endpoint.sql[this.engine.dialect];
    if (!sql) throw new Error(`${endpoint.name} has no SQL for ${this.engine.dialect}`);
    return sql;
  }

  private async query(
    endpoint: EndpointDefinition,
    attribution: { credential?: string; signal?: AbortSignal; background?: boolean },
    params: SqlParams,
  ): Promise<Row[]> {
    const { rows } = await this.engine.run({
      endpoint: endpoint.name,
      sql: this.sqlOf(endpoint).query,
      window: endpoint.window,
      params,
      maxRows: endpoint.maxRows,
      trigger: "follow",
      ...(attribution.credential !== undefined && { credential: attribution.credential }),
      ...(attribution.signal && { signal: attribution.signal }),
      ...(attribution.background && { background: true }),
    });
    return rows;
  }

  /**
   * Delivers every record after `from` up to now (or up to a settled run's `until`, inclusive) with
   * one query over that window, its result read as the stream has room. Once a window up to now is
   * read, the follower joins the feed, whose polls read back a lag (as a catch-up that ended with an
   * empty window): unless reading took longer than that, when one more window goes from where this
   * one ended to now.
   */
  private async catchUp(
    endpoint: EndpointDefinition,
    params: SqlParams,
    subscription: Subscription,
    from: Point,
    signal: AbortSignal,
    settled?: { until: bigint; cost: ReadCost },
  ): Promise<void> {
    // The start is exclusive in the SQL; one µs earlier keeps the records at `from` after its id.
    let start = from.id === undefined ? from.micros : from.micros - 1n;
    let after: Point | undefined = from.id === undefined ? undefined : from;
    const cost = settled?.cost ?? { bytesProcessed: 0 };
    for (;;) {
      const end = settled?.until ?? this.clock();
      if (start >= end) return;
      const window = windowOf(endpoint);
      const windowParams = (point: Point | undefined): SqlParams => ({
        ...params,
        // Read on from a point, the window starts just before it: a later page's query skips what
        // came before, where the engine can (DuckDB's row groups, BigQuery's partitions).
        [window.start]: formatTimestamp(point ? point.micros - 1n : start),
        [window.end]: formatTimestamp(end),
        after_timestamp: point ? formatTimestamp(point.micros) : null,
        after_id: point?.id ?? null,
      });
      const rows = readWindow(
        this.engine,
        {
          endpoint: endpoint.name,
          sql: this.sqlOf(endpoint).window as string,
          window: endpoint.window,
          params: windowParams(after),
          maxRows: this.options.windowPageRows ?? WINDOW_PAGE_ROWS,
          trigger: settled ? "export" : "follow",
          credential: subscription.credential,
          signal,
        },
        (row) => windowParams(positionOf(row)),
        cost,
      );
      let found = false;
      for await (const chunk of rows) {
        found = true;
        await subscription.offerPaced(chunk);
        if (signal.aborted) return;
      }
      if (settled || !found || this.clock() - end < this.lag) return;
      start = end;
      after = undefined;
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
  /** Followers that caught up and wait for the sweep their join asked for (sweepNext). */
  private readonly awaitingSweep = new Set<Subscription>();
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
    this.seen = new Seen(hub.now());
  }

  /**
   * The next poll reads the whole lag window: `caughtUp` joins it, and what the feed saw after its
   * catch-up read that far is news to it, behind however many newer records. It takes nothing
   * before that sweep: a poll already under way stops at its newest page, and would hand it those
   * records before the older ones the sweep then finds.
   */
  sweepNext(caughtUp: Subscription): void {
    this.sweptAt = Number.NEGATIVE_INFINITY;
    this.awaitingSweep.add(caughtUp);
  }

  /**
   * Reads the lag window newest first, stopping at a page of records already seen: one query for a
   * quiet interval, one more per 100 new records. Once per lag (and after a follower caught up) it
   * reads the whole window, which finds a late record however many newer ones arrived with it. Charged to the oldest follower's
   * credential: followers of other credentials that share the feed ride on it, and pay in turn
   * only when its share of the engine is full, so no follower's feed stops for another's load.
   */
  async poll(): Promise<void> {
    if (this.polling || this.subscribers.size === 0) return;
    this.polling = true;
    this.hub.countPoll();
    const sweep = Date.now() - this.sweptAt >= this.hub.options.lagMs;
    const sweptFor = sweep ? [...this.awaitingSweep] : [];
    if (sweep) {
      this.sweptAt = Date.now();
      this.awaitingSweep.clear();
    }
    const unseen = (row: Row) => !this.seen.has(positionOf(row));
    const payers = new Set([...this.subscribers].map((subscription) => subscription.credential));
    try {
      const rows = await this.readAs(payers, sweep ? undefined : (page) => page.some(unseen));
      // Placed once for every follower, a turn's worth at a time: a burst holds up no request.
      const entries = await ascending(rows);
      for (const [index, { position }] of entries.entries()) {
        this.seen.add(position);
        if ((index + 1) % RECORDS_PER_TURN === 0) await setImmediate();
      }
      this.seen.prune({ micros: this.seen.newest - this.hub.lag });
      for (const subscription of this.subscribers) {
        if (!this.awaitingSweep.has(subscription)) subscription.offer(entries);
      }
    } catch (error) {
      this.hub.pollFailed(this.endpoint, error);
      // Those the failed sweep was for still wait for one: the next poll is it.
      for (const subscription of sweptFor) this.sweepNext(subscription);
    } finally {
      this.polling = false;
    }
  }

  /**
   * The lag window's records, charged to the least busy of `payers` (the oldest among equals) whose
   * share takes the query: a poll never waits in the line of a key that floods its own share.
   */
  private async readAs(
    payers: Iterable<string>,
    morePages: ((page: Row[]) => boolean) | undefined,
  ): Promise<Row[]> {
    const heldBy = this.hub.options.heldBy ?? (() => 0);
    let refusal: unknown;
    for (const credential of [...payers].sort((a, b) => heldBy(a) - heldBy(b))) {
      try {
        return await this.hub.records(
          this.endpoint,
          this.params,
          this.seen.newest - this.hub.lag,
          undefined,
          { credential, background: true, ...(morePages && { morePages }) },
        );
      } catch (error) {
        if (!(error instanceof AdmissionError && error.code === "rate_limited")) throw error;
        refusal = error;
      }
    }
    throw refusal;
  }
}

/** A record read, and its place in record order. */
interface Entry {
  row: Row;
  position: Position;
}

/** One follower: what it has been sent, so that overlapping reads deliver each record once. */
class Subscription {
  private readonly sent: Seen;
  /** Every record at or before it was sent, or can no longer arrive: none is sent after all. */
  private horizon: Point;
  /** Whether a record was written to the follower. */
  private sentAny = false;
  /** What the feed's polls read that is still to be written, a poll's records at a time. */
  private readonly waiting: (readonly Entry[])[] = [];
  private writing = false;
  private readonly follower: Follower;
  private readonly hub: FollowHub;
  /** Aborted when the follower took nothing: its stream has ended, and goes once its client does. */
  private readonly ended = new AbortController();
  /**
   * Aborted when the follower goes (`stopped`) or its stream has ended: nothing more is read or
   * written for it, its catch-up's query included.
   */
  readonly over: AbortSignal;

  constructor(follower: Follower, from: StreamPosition, hub: FollowHub, stopped: AbortSignal) {
    this.follower = follower;
    this.hub = hub;
    this.over = AbortSignal.any([stopped, this.ended.signal]);
    this.horizon = from.horizon;
    this.sent = new Seen(from.newest, from.delivered);
  }

  get credential(): string {
    return this.follower.credential;
  }

  /**
   * Takes what a feed's poll read: what the follower has not had yet goes out oldest first, after
   * what earlier polls found, as fast as its stream takes it (then the follower hears its feed
   * polled). A poll that finds a burst never writes more at once than the stream holds.
   */
  offer(entries: readonly Entry[]): void {
    this.waiting.push(entries);
    if (!this.writing) void this.writeWaiting();
  }

  /** As offer, for a catch-up, which waits: what it reads comes in time order. */
  async offerPaced(rows: Row[]): Promise<void> {
    await this.send(await ascending(rows), true);
  }

  private async writeWaiting(): Promise<void> {
    this.writing = true;
    try {
      for (let poll = this.waiting.shift(); poll; poll = this.waiting.shift()) {
        await this.send(poll, false);
        if (this.over.aborted) return;
        this.follower.polled?.();
      }
    } finally {
      this.writing = false;
    }
  }

  /**
   * Writes the entries after the horizon not sent before, each taken as sent, waiting whenever the
   * stream is full, and letting the event loop's other work in every so many records.
   */
  private async send(entries: readonly Entry[], inOrder: boolean): Promise<void> {
    let sinceTurn = 0;
    for (const { row, position } of entries) {
      if (this.over.aborted) return;
      if (compare(position, this.horizon) <= 0 || !this.sent.add(position)) continue;
      // A stream that took nothing has ended: the rest would go nowhere, and is not read.
      if (!this.deliver(row, position, inOrder)) return this.ended.abort();
      await this.follower.ready();
      if (++sinceTurn === RECORDS_PER_TURN) {
        sinceTurn = 0;
        await setImmediate();
      }
    }
  }

  /**
   * Where the next run resumes: after the last record sent (a record exported later than the lag
   * but still after it is found by the next run); with none sent, after every record up to
   * `settled` (or where this one started, when later), where nothing can arrive any more. So a run
   * that finds nothing still moves its checkpoint on, and a quiet filter's never ages past the
   * retention.
   */
  checkpoint(settled: bigint): string {
    return this.place(this.sentAny ? this.horizon : later(this.horizon, { micros: settled }))();
  }

  /**
   * Moves the horizon up to what can no longer change: below the lag before the newest record
   * sent, no record arrives any more; and while catching up (`inOrder`), every record up to this
   * one was sent, where it is older than the lag. Then sends the record with its place: false
   * when the follower took nothing (its stream has ended).
   */
  private deliver(row: Row, position: Position, inOrder: boolean): boolean {
    const { lag } = this.hub;
    this.horizon = later(this.horizon, { micros: this.sent.newest - lag });
    if (inOrder) {
      const settled = { micros: this.hub.now() - lag };
      this.horizon = later(this.horizon, compare(position, settled) < 0 ? position : settled);
    }
    // Counted only when written: a stream that has gone takes nothing.
    if (!this.follower.deliver(row, this.place(this.horizon))) return false;
    if (this.follower.unstreamed !== true) this.hub.countSent();
    this.sentAny = true;
    return true;
  }

  /**
   * This stream's place, at `horizon`, as the function that makes its event id. It names at most
   * MOST_DELIVERED records as delivered, the newest; past them its horizon moves up to the newest
   * left out, so that a resume repeats nothing (a record arriving later than that many newer ones
   * reaches the open stream, not one resumed from this id). Taken for every record sent, so it
   * costs what forgetting the records at or before `horizon` costs and a copy of the few newest.
   */
  private place(horizon: Point): () => string {
    this.sent.prune(horizon);
    const newest = this.sent.newestFew();
    const past = newest.length > MOST_DELIVERED;
    const bound = past ? (newest[0] as Sighting).point : horizon;
    const after = past ? newest.slice(1) : newest;
    const newestMicros = this.sent.newest;
    return () =>
      this.hub.options.cursors.encodeStream({
        horizon: bound,
        newest: newestMicros,
        delivered: after.map((sighting) => ({
          key: keyOf(sighting),
          micros: sighting.point.micros,
        })),
      });
  }
}

/** A record seen after a horizon: its place, and its key in a stream position once one was made. */
interface Sighting {
  point: Point;
  key?: string;
}

/** The key of a record a stream position names: hashed when first asked for. */
function keyOf(sighting: Sighting): string {
  sighting.key ??= recordKey(sighting.point as Required<Point>);
  return sighting.key;
}

const bySighting = (a: Sighting, b: Sighting) => compare(a.point, b.point);

/**
 * Records seen after a horizon: the only ones a later read can return again. A record read is
 * known by its time and id, the text its key hashes; the key is made only for the few a stream
 * position names, since hashing every record a catch-up sends (a SHA-256 each) was a tenth of a
 * settled run's time. Each record costs O(log n) in the records held: seeing it, forgetting it once
 * a horizon passes it (the oldest go first), and keeping the newest few a stream position names.
 */
class Seen {
  /** The time of the newest record seen (at first, where seeing started). */
  newest: bigint;
  /** Records read, by `micros:id`. */
  private readonly read = new Map<string, Sighting>();
  /**
   * Records a resumed position named, by key: only their key and time are known, each taken to be
   * the last at its time.
   */
  private readonly named = new Map<string, Sighting>();
  /** Every sighting held, the oldest first out: what a prune forgets. */
  private readonly byAge = new MinHeap(bySighting);
  /** The MOST_DELIVERED + 1 newest sightings held (all of them, when fewer), the oldest first out. */
  private readonly newestOnes = new MinHeap(bySighting);

  constructor(newest: bigint, before: readonly DeliveredRecord[] = []) {
    this.newest = newest;
    for (const { key, micros } of before) {
      if (this.named.has(key)) continue;
      const sighting = { point: { micros }, key };
      this.named.set(key, sighting);
      this.hold(sighting);
    }
  }

  has(position: Position): boolean {
    return (
      this.read.has(identity(position)) ||
      (this.named.size > 0 && this.named.has(recordKey(position)))
    );
  }

  /** Records a sighting; false when the record was seen before. */
  add(position: Position): boolean {
    if (this.has(position)) return false;
    const sighting = { point: position };
    this.read.set(identity(position), sighting);
    this.hold(sighting);
    if (position.micros > this.newest) this.newest = position.micros;
    return true;
  }

  /** Forgets what is at or before `horizon`, which no read returns again. */
  prune(horizon: Point): void {
    const passed = (sighting: Sighting | undefined): sighting is Sighting =>
      sighting !== undefined && compare(sighting.point, horizon) <= 0;
    for (let oldest = this.byAge.peek(); passed(oldest); oldest = this.byAge.peek()) {
      this.byAge.pop();
      if (oldest.point.id === undefined) this.named.delete(oldest.key as string);
      else this.read.delete(identity(oldest.point as Position));
    }
    // What the heap of every sighting let go of, this one does too: its oldest.
    while (passed(this.newestOnes.peek())) this.newestOnes.pop();
  }

  /**
   * The MOST_DELIVERED + 1 newest records held, or all of them when fewer: the oldest of them first,
   * the rest in no order.
   */
  newestFew(): Sighting[] {
    return this.newestOnes.toArray();
  }

  private hold(sighting: Sighting): void {
    this.byAge.push(sighting);
    this.newestOnes.push(sighting);
    if (this.newestOnes.size > MOST_DELIVERED + 1) this.newestOnes.pop();
  }
}

/** What recordKey hashes: equal for the same record, and only for it. */
const identity = (position: Position) => `${position.micros}:${position.id}`;
