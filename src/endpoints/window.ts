// The time window a BigQuery query reads, as parameters: concrete instants the engine binds, so that
// the SQL compares the partitioning column (`timestamp`) with `CAST(@window_start AS TIMESTAMP)`
// alone, the form BigQuery prunes partitions by (a parameter is a constant expression; a CASE,
// IFNULL or OR around the column is not documented to prune). The window is computed from one
// reading of "now" per query, and the SQL reads no clock of its own, so every instant a query
// compares with comes from that one reading: the rules stay exact whoever's clock it is.

import type { WindowBinding } from "../engines/sql-params.ts";
import { formatTimestamp, parseIsoTimestamp } from "../time.ts";
import type { PagingContract } from "./catalog.ts";
import { retentionDays } from "./retention.ts";

/** The last instant a TIMESTAMP holds: no upper bound. */
const LAST_INSTANT = 253_402_300_799_999_999n;
const DAY = 86_400_000_000n;

const truncate = (micros: bigint, unit: bigint) => micros - (((micros % unit) + unit) % unit);
const instant = (text: string | null | undefined) => (text ? parseIsoTimestamp(text) : undefined);
const given = (instants: (bigint | undefined)[]) =>
  instants.filter((micros): micros is bigint => micros !== undefined);
const latest = (...instants: (bigint | undefined)[]) =>
  given(instants).reduce((a, b) => (b > a ? b : a));
const earliest = (...instants: (bigint | undefined)[]) =>
  given(instants).reduce<bigint | undefined>(
    (a, b) => (a === undefined || b < a ? b : a),
    undefined,
  );

/** A window per value of one parameter: its length back from now, and its bucket unit (µs). */
export interface Span {
  length: bigint;
  bucket?: bigint | undefined;
}

/**
 * The window of an endpoint whose `param` picks a span: `window_start`, now − its length (truncated
 * to its bucket unit), and with buckets `last_bucket`, now truncated. A value not listed takes
 * `otherwise`'s span, or binds null (nothing matches).
 */
export function spanWindow(
  param: string,
  spans: ReadonlyMap<string, Span>,
  otherwise?: string,
): WindowBinding {
  const bucketed = [...spans.values()].some((span) => span.bucket !== undefined);
  return (params, now) => {
    const span =
      spans.get(params[param] ?? "") ??
      (otherwise === undefined ? undefined : spans.get(otherwise));
    const unit = span?.bucket ?? 1n;
    return {
      ...params,
      window_start: span === undefined ? null : formatTimestamp(truncate(now - span.length, unit)),
      ...(bucketed && {
        last_bucket: span === undefined ? null : formatTimestamp(truncate(now, unit)),
      }),
    };
  };
}

/**
 * The window of a paged endpoint (its page, the rest of a walk, a catch-up's or settled run's
 * window): `window_start` (exclusive), the latest of the retention edge (now − its days), the start
 * parameter and a resumed stream's after_timestamp (inclusive, so 1 µs before it); `window_end`
 * (inclusive), the earliest of the end parameter and cursor_timestamp, or the last instant a
 * TIMESTAMP holds.
 */
export function pagedWindow({ window, retention }: PagingContract): WindowBinding {
  return (params, now) => {
    const after = instant(params.after_timestamp);
    const start = latest(
      now - BigInt(retentionDays(retention, params[retention.param])) * DAY,
      instant(params[window.start]),
      after === undefined ? undefined : after - 1n,
    );
    const end =
      earliest(instant(params[window.end]), instant(params.cursor_timestamp)) ?? LAST_INSTANT;
    return { ...params, window_start: formatTimestamp(start), window_end: formatTimestamp(end) };
  };
}

/** An endpoint that reads no window: its parameters unchanged. */
export const NO_WINDOW: WindowBinding = (params) => params;
