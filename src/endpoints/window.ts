// The time window a BigQuery query reads, as parameters: concrete instants the engine binds, so that
// the SQL compares the partitioning column (`timestamp`) with `CAST(@window_start AS TIMESTAMP)`
// alone, the form BigQuery prunes partitions by (a parameter is a constant expression; a CASE,
// IFNULL or OR around the column is not documented to prune). The window is computed from one
// reading of "now" per query, and the SQL reads no clock of its own, so every instant a query
// compares with comes from that one reading: the rules stay exact whoever's clock it is.
import { formatTimestamp, parseIsoTimestamp } from "../time.ts";
import { retentionDays } from "./retention.ts";
import type { SqlParams } from "./sql-params.ts";

const SECOND = 1_000_000n;
const MINUTE = 60n * SECOND;
const HOUR = 60n * MINUTE;
const DAY = 24n * HOUR;
/** The last instant a TIMESTAMP holds: no upper bound. */
const LAST_INSTANT = 253_402_300_799_999_999n;

/** functions.invocation-stats: each interval's window length and bucket unit. */
const STATS_WINDOWS: Readonly<Record<string, { span: bigint; unit: bigint }>> = {
  "5min": { span: 5n * MINUTE, unit: SECOND },
  "15min": { span: 15n * MINUTE, unit: MINUTE },
  "1hr": { span: HOUR, unit: MINUTE },
  "7day": { span: 7n * DAY, unit: DAY },
  "1day": { span: DAY, unit: HOUR },
};

/** usage.api-counts: each interval's window length (no upper bound, docs/api.md). */
const USAGE_SPANS: Readonly<Record<string, bigint>> = {
  minutely: 60n * MINUTE,
  hourly: HOUR,
  daily: 7n * DAY,
};

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

/**
 * `params` with the window `endpoint`'s BigQuery SQL reads, at `now` (epoch µs):
 * - logs.all (its page, the rest of a walk, a catch-up's or settled run's window): `window_start`
 *   (exclusive), the latest of the tier's retention edge (now − 1, 7 or 90 days),
 *   iso_timestamp_start and a resumed stream's after_timestamp (inclusive, so 1 µs before it);
 *   `window_end` (inclusive), the earliest of iso_timestamp_end and cursor_timestamp, or the last
 *   instant a TIMESTAMP holds;
 * - functions.invocation-stats: `window_start`, its first bucket (now − window, truncated to the
 *   bucket unit), and `last_bucket`, now truncated;
 * - usage.api-counts: `window_start`, now − window (null for an unknown interval).
 * Other queries (ad-hoc, ping) are given their parameters unchanged.
 */
export function withTimeWindow(endpoint: string, params: SqlParams, now: bigint): SqlParams {
  if (endpoint === "logs.all") {
    const after = instant(params.after_timestamp);
    const start = latest(
      now - BigInt(retentionDays(params.project_tier)) * DAY,
      instant(params.iso_timestamp_start),
      after === undefined ? undefined : after - 1n,
    );
    const end =
      earliest(instant(params.iso_timestamp_end), instant(params.cursor_timestamp)) ?? LAST_INSTANT;
    return { ...params, window_start: formatTimestamp(start), window_end: formatTimestamp(end) };
  }
  if (endpoint === "functions.invocation-stats") {
    const { span, unit } = STATS_WINDOWS[params.interval ?? ""] ?? (STATS_WINDOWS["1day"] as never);
    return {
      ...params,
      window_start: formatTimestamp(truncate(now - span, unit)),
      last_bucket: formatTimestamp(truncate(now, unit)),
    };
  }
  if (endpoint === "usage.api-counts") {
    // An interval it does not know (which validation refuses) gives no window: nothing matches.
    const span = USAGE_SPANS[params.interval ?? ""];
    return { ...params, window_start: span === undefined ? null : formatTimestamp(now - span) };
  }
  return params;
}
