// One parameter set's polling, shared by every follower of it: a feed asks the engine every
// interval for the records since its newest one minus the lag (so that a record arriving late is
// still found) and offers them to its followers. Its polls are charged to the least busy
// credential among its followers' (the one that opened it among equals; the next when its share
// is full): so every poll counts in some credential's share of the engine and its bound, and one
// key's costly feeds wait their turn behind other tenants' instead of sharing one line with every
// feed, or holding a feed it shares with them in its own.
import { setImmediate } from "node:timers/promises";
import { AdmissionError } from "../engines/admission.ts";
import type { Row } from "../engines/engine.ts";
import type { SqlParams } from "../engines/sql-params.ts";
import type { EndpointDefinition } from "./catalog.ts";
import type { FollowReads } from "./follow-reads.ts";
import type { Subscription } from "./follow-subscription.ts";
import { ascending, positionOf, RECORDS_PER_TURN } from "./record-order.ts";
import { Seen } from "./seen-records.ts";

/** What a feed needs of the hub it belongs to. */
export interface FeedHost {
  /** How much older than the newest record a late record may be, in µs. */
  readonly lag: bigint;
  readonly options: { lagMs: number; heldBy?: (credential: string) => number };
  now(): bigint;
  countPoll(): void;
  pollFailed(endpoint: EndpointDefinition, error: unknown): void;
  records: FollowReads["records"];
}

export class Feed {
  readonly subscribers = new Set<Subscription>();
  /** Followers that caught up and wait for the sweep their join asked for (sweepNext). */
  private readonly awaitingSweep = new Set<Subscription>();
  private readonly seen: Seen;
  private sweptAt = Date.now();
  private polling = false;
  private readonly endpoint: EndpointDefinition;
  private readonly params: SqlParams;
  private readonly hub: FeedHost;

  constructor(endpoint: EndpointDefinition, params: SqlParams, hub: FeedHost) {
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
