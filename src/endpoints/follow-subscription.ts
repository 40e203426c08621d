// One follower of a follow stream, and what it has been sent: the records its catch-up and its
// feed's polls read overlap, and arrive out of time order within the lag, so each goes out once,
// paced by the stream, with the event id a reconnect resumes from.
import { setImmediate } from "node:timers/promises";
import type { Row } from "../engines/engine.ts";
import type { CursorCodec } from "./cursor.ts";
import {
  ascending,
  compare,
  type Entry,
  later,
  type Position,
  RECORDS_PER_TURN,
} from "./record-order.ts";
import { keyOf, Seen, type Sighting } from "./seen-records.ts";
import { MOST_DELIVERED, type Point, type StreamPosition } from "./stream-position.ts";

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

/** What a subscription needs of the hub it belongs to. */
export interface SubscriptionHost {
  /** How much older than the newest record a late record may be, in µs. */
  readonly lag: bigint;
  readonly options: { cursors: CursorCodec };
  now(): bigint;
  countSent(): void;
}

/** One follower: what it has been sent, so that overlapping reads deliver each record once. */
export class Subscription {
  private readonly sent: Seen;
  /** Every record at or before it was sent, or can no longer arrive: none is sent after all. */
  private horizon: Point;
  /** Whether a record was written to the follower. */
  private sentAny = false;
  /** What the feed's polls read that is still to be written, a poll's records at a time. */
  private readonly waiting: (readonly Entry[])[] = [];
  private writing = false;
  private readonly follower: Follower;
  private readonly hub: SubscriptionHost;
  /** Aborted when the follower took nothing: its stream has ended, and goes once its client does. */
  private readonly ended = new AbortController();
  /**
   * Aborted when the follower goes (`stopped`) or its stream has ended: nothing more is read or
   * written for it, its catch-up's query included.
   */
  readonly over: AbortSignal;

  constructor(
    follower: Follower,
    from: StreamPosition,
    hub: SubscriptionHost,
    stopped: AbortSignal,
  ) {
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
