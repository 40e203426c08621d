// Follow streams: a paged endpoint's records as they arrive, oldest first, each once per follower.
// The hub is where a stream starts and ends: a follower's catch-up over history is its own work,
// under its credential (follow-reads.ts), then it joins the feed of its parameters (follow-feed.ts),
// shared by every follower of them and polled on one schedule (poll-schedule.ts); what each
// follower was sent is its subscription's (follow-subscription.ts). The hub also counts what the
// metrics show and says when polls fail.
import { BurstWarning } from "../burst-warning.ts";
import { cacheKey } from "../cache/cache-key.ts";
import type { QueryEngine, Row } from "../engines/engine.ts";
import type { SqlParams } from "../engines/sql-params.ts";
import { dateToMicros } from "../time.ts";
import type { EndpointDefinition } from "./catalog.ts";
import type { CursorCodec } from "./cursor.ts";
import { Feed } from "./follow-feed.ts";
import { FollowReads, windowOf } from "./follow-reads.ts";
import { type Follower, Subscription } from "./follow-subscription.ts";
import { PollSchedule } from "./poll-schedule.ts";
import { type StreamPosition, startingAt } from "./stream-position.ts";
import type { ReadCost } from "./window-read.ts";

export type { Follower } from "./follow-subscription.ts";

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

// Failed polls after this long without one start a new burst, which gets its own log line.
const POLL_FAILURE_GAP_MS = 10_000;

export class FollowHub {
  private readonly feeds = new Map<string, Feed>();
  private readonly clock: () => bigint;
  private readonly counts = { open: 0, polls: 0, recordsSent: 0 };
  private readonly engine: QueryEngine;
  private readonly reads: FollowReads;
  private readonly schedule: PollSchedule<Feed>;
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
    this.reads = new FollowReads(engine, {
      lag: this.lag,
      clock: this.clock,
      ...(options.windowPageRows !== undefined && { windowPageRows: options.windowPageRows }),
    });
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
      this.reads
        .catchUp(endpoint, live, subscription, start.horizon, subscription.over, {
          until: settledUntil,
          cost,
        })
        .then(settle, failed);
    } else if (from) {
      this.reads
        .catchUp(endpoint, live, subscription, from.horizon, subscription.over)
        .then(() => join(true), failed);
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
  records(...read: Parameters<FollowReads["records"]>): Promise<Row[]> {
    return this.reads.records(...read);
  }
}
