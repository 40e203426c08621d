// The two ways a follow reads a followed endpoint on the engine: the paged read of a feed's poll
// and an alert rule (its query, newest first, through as many pages as it takes), and a follower's
// catch-up (its window query, oldest first, one query over the whole window, read as its stream
// has room).
import type { QueryEngine, Row } from "../engines/engine.ts";
import type { SqlParams } from "../engines/sql-params.ts";
import { formatTimestamp } from "../time.ts";
import type { EndpointDefinition, EndpointSql, PagingContract } from "./catalog.ts";
import type { Subscription } from "./follow-subscription.ts";
import { type Position, positionOf } from "./record-order.ts";
import type { Point } from "./stream-position.ts";
import { type ReadCost, readWindow } from "./window-read.ts";

// A catch-up's result is read this many rows at a time: a few MB held, a page read per chunk.
const WINDOW_PAGE_ROWS = 5000;

/** The parameters that bound a followed endpoint's window (its paging contract's). */
export function windowOf(endpoint: EndpointDefinition): PagingContract["window"] {
  if (!endpoint.paging) throw new Error(`${endpoint.name} is not paged, so cannot be followed`);
  return endpoint.paging.window;
}

export interface FollowReadsOptions {
  /** How much older than the newest record a late record may be, in µs. */
  lag: bigint;
  /** Epoch µs now. */
  clock: () => bigint;
  /** Rows read from a catch-up's result at a time (BigQuery's result page); default 5000. */
  windowPageRows?: number;
}

export class FollowReads {
  private readonly engine: QueryEngine;
  private readonly options: FollowReadsOptions;

  constructor(engine: QueryEngine, options: FollowReadsOptions) {
    this.engine = engine;
    this.options = options;
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

  /**
   * Delivers every record after `from` up to now (or up to a settled run's `until`, inclusive) with
   * one query over that window, its result read as the stream has room. Once a window up to now is
   * read, the follower joins the feed, whose polls read back a lag (as a catch-up that ended with an
   * empty window): unless reading took longer than that, when one more window goes from where this
   * one ended to now.
   */
  async catchUp(
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
      const end = settled?.until ?? this.options.clock();
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
      if (settled || !found || this.options.clock() - end < this.options.lag) return;
      start = end;
      after = undefined;
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
}
