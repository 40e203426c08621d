// Any time range a dashboard asks for, on an endpoint whose definition declares time buckets
// (`buckets:`): `from` and `to` (epoch milliseconds, as Grafana's ${__from} gives them, or RFC 3339)
// in place of its span parameter, in buckets of the smallest size its ladder offers that gives at
// most `max_points` of them, or of the size `bucket` names. The range is aligned to its bucket, so
// every refresh of a moving range within one bucket asks the same query (one cached answer), and a
// range that ended before the settled horizon is marked so, to be kept long and never warmed.
import { z } from "zod";
import type { SqlParams, WindowBinding } from "../engines/sql-params.ts";
import { formatTimestamp, inTimestampRange, parseIsoTimestamp } from "../time.ts";
import {
  durationValue,
  InvalidParamsError,
  integerValue,
  optionalText,
  paramsOf,
  unlessAbsent,
  type ValueCheck,
} from "./params.ts";

const SECOND = 1_000_000n;
/** The last instant a TIMESTAMP holds: a span's window has no upper bound. */
const LAST_INSTANT = "9999-12-31T23:59:59.999999Z";

/** The bucket sizes a range may take, smallest first, when the definition names none. */
export const DEFAULT_LADDER = [
  "1s",
  "5s",
  "10s",
  "30s",
  "1m",
  "5m",
  "15m",
  "30m",
  "1h",
  "3h",
  "6h",
  "12h",
  "1d",
  "7d",
];
/** Buckets an answer holds at most when `max_points` is not given (and the row cap allows). */
export const DEFAULT_MAX_POINTS = 300;
/** How far back `from` may reach when the definition does not say: the longest retention of a tier. */
export const DEFAULT_MAX_RANGE = "90d";

/** The parameters a range takes, beside the endpoint's own. */
export const RANGE_PARAMS = ["from", "to", "bucket", "max_points"] as const;

/** Where a range that can no longer change is marked; part of the cache key, never bound in SQL. */
export const RANGE_SETTLED = "range_settled";

/** An endpoint's time buckets, compiled from its `buckets:`. */
export interface RangeContract {
  /** Bucket sizes in µs, smallest first. */
  ladder: readonly bigint[];
  /** How far back from now `from` may be, in µs. */
  maxRange: bigint;
  /** What `max_points` is without it: 300, or the row cap when lower. */
  maxPoints: number;
  /** The most `max_points` may be: the endpoint's row cap. */
  maxRows: number;
  /** The parameter a range stands in for (the window's), if the endpoint has one. */
  spanParam?: string | undefined;
  /** What it takes when absent without a range, if it declares a default. */
  spanDefault?: string | undefined;
}

/** Epoch milliseconds (Grafana's ${__from}), or an RFC 3339 instant: µs, as RFC 3339 text. */
const instantValue: ValueCheck = (value, ctx) => {
  const micros = /^[0-9]{1,15}$/.test(value) ? BigInt(value) * 1_000n : parseIsoTimestamp(value);
  // Epoch ms reach past the year 9999 that a TIMESTAMP (and RFC 3339's form) ends with.
  if (micros !== undefined && inTimestampRange(micros)) return formatTimestamp(micros);
  ctx.addIssue({
    code: "custom",
    message:
      "must be epoch milliseconds (1763701062123) or an RFC 3339 timestamp with a zone (2026-11-21T05:00:00Z)",
  });
  return z.NEVER;
};

const instant = (description: string, examples: string[]) =>
  optionalText(description, examples).transform(unlessAbsent(instantValue));

/** The query-string parameters of a range, for an endpoint of `contract`. */
export function rangeShape(contract: RangeContract) {
  const instead = contract.spanParam ? `, in place of ${contract.spanParam}` : "";
  return {
    from: instant(
      `the start of any time range${instead}: epoch milliseconds or RFC 3339; answered in buckets aligned to their size`,
      ["1795219200000", "2026-11-21T00:00:00Z"],
    ),
    to: instant("the end of the range (with from): epoch milliseconds or RFC 3339; default now", [
      "1795240800000",
      "2026-11-21T06:00:00Z",
    ]),
    bucket: optionalText(
      "the bucket size (with from), a whole number and s, m, h or d; default the smallest of the endpoint's ladder that gives at most max_points buckets",
      ["30s", "1m", "1h", "1d"],
    ).transform(unlessAbsent(durationValue)),
    max_points: optionalText(
      `the most buckets the range is answered in (with from), 1 to ${contract.maxRows}`,
      undefined,
      String(contract.maxPoints),
    ).transform(unlessAbsent(integerValue(1, contract.maxRows))),
  };
}

/**
 * The schema of a ranged endpoint's query string: its parameters (the span parameter made
 * optional, `missing` its own message for its absence, given when `from` is absent too) and a
 * range's. Without `from`
 * the range's parameters are not in what is bound, and the endpoint answers as it always has.
 */
export function rangedParamsOf<T extends z.ZodRawShape>(
  shape: T,
  contract: RangeContract,
  missing?: string,
) {
  const { spanParam, spanDefault } = contract;
  return paramsOf({ ...shape, ...rangeShape(contract) })
    .superRefine((params: Record<string, unknown>, ctx) => {
      const issue = (param: string, message: string) =>
        ctx.addIssue({ code: "custom", path: [param], message });
      if (params.from == null) {
        for (const param of RANGE_PARAMS.slice(1)) {
          if (params[param] != null) issue(param, "is taken with from only: give from too");
        }
        if (spanParam !== undefined && params[spanParam] == null && missing !== undefined) {
          // As without ranges, to the byte: a request that names none is answered as it always was.
          issue(spanParam, missing);
        }
      } else if (spanParam !== undefined && params[spanParam] != null) {
        issue(
          spanParam,
          `give ${spanParam} or from, not both: each says which time the answer covers`,
        );
      }
    })
    .transform((parsed) => {
      const params = parsed as SqlParams;
      if (params.from != null) return params;
      const { from: _f, to: _t, bucket: _b, max_points: _m, ...span } = params;
      // The span parameter's default, which stands for its absence only without a range.
      if (spanParam !== undefined && spanDefault !== undefined) span[spanParam] ??= spanDefault;
      return span;
    });
}

/**
 * A range's parameters as the query binds and the cache keys them, from `params` as validated and
 * now (µs): `from` the first bucket and `to` the last, aligned to `bucket` (seconds), chosen or
 * checked; marked settled when its last bucket ended before `settledBefore`. Problems only now can
 * tell (how far back, how many buckets) are an InvalidParamsError naming the parameter.
 */
export function resolveRange(
  contract: RangeContract,
  params: SqlParams,
  now: bigint,
  settledBefore: bigint,
): SqlParams {
  if (params.from == null) return params;
  const { from, to, bucket, max_points: maxPoints, ...rest } = params;
  const refuse = (param: string, message: string): never => {
    throw new InvalidParamsError([{ param, message }]);
  };
  const start = parseIsoTimestamp(from) as bigint;
  const end = to == null ? now : (parseIsoTimestamp(to) as bigint);
  if (start >= end) refuse("from", `must be before to (${to ?? "now"})`);
  if (start < now - contract.maxRange) {
    refuse(
      "from",
      `reaches further back than this endpoint answers, ${durationText(contract.maxRange)} before now`,
    );
  }
  const most = maxPoints == null ? contract.maxPoints : Number(maxPoints);
  const points = (size: bigint) => (floor(end, size) - floor(start, size)) / size + 1n;
  let size: bigint;
  if (bucket != null) {
    size = BigInt(bucket) * SECOND;
    // A range starts at the bucket `from` falls in: a larger bucket than the ladder's would take it
    // back past max_range, to the epoch for a century's bucket.
    const largest = contract.ladder.at(-1) as bigint;
    if (size > largest) {
      refuse("bucket", `must be at most ${durationText(largest)}, the largest this endpoint takes`);
    }
    if (points(size) > most) {
      refuse(
        "bucket",
        `gives ${points(size)} buckets over this range, more than ${most} (max_points): give a larger bucket, or none`,
      );
    }
  } else {
    const fits = contract.ladder.find((candidate) => points(candidate) <= most);
    size = fits ?? refuse("max_points", tooFew(contract, most));
  }
  const last = floor(end, size);
  return {
    ...rest,
    from: formatTimestamp(floor(start, size)),
    to: formatTimestamp(last),
    bucket: String(size / SECOND),
    ...(last + size <= settledBefore && { [RANGE_SETTLED]: "true" }),
  };
}

function tooFew(contract: RangeContract, most: number): string {
  const largest = contract.ladder[contract.ladder.length - 1] as bigint;
  return `${most} buckets cannot hold this range even at ${durationText(largest)} each, the largest this endpoint takes: give a shorter range or more points`;
}

/**
 * What the engine binds for a ranged endpoint: with a range, its first and last bucket
 * (`window_start`, `last_bucket`), the last instant it covers (`window_end`) and the bucket size
 * (`bucket_seconds`); without one, the span's window as `span` binds it, no upper bound and no
 * bucket size.
 */
export function rangeWindow(span: WindowBinding): WindowBinding {
  return (params, now) => {
    if (params.bucket == null || params.to == null) {
      return {
        last_bucket: null,
        ...span(params, now),
        window_end: LAST_INSTANT,
        bucket_seconds: null,
      };
    }
    const last = parseIsoTimestamp(params.to) as bigint;
    return {
      ...params,
      window_start: params.from ?? null,
      last_bucket: params.to,
      window_end: formatTimestamp(last + BigInt(params.bucket) * SECOND - 1n),
      bucket_seconds: params.bucket,
    };
  };
}

/** The names the range's window binds, beside the span's. */
export const RANGE_BINDS = ["window_start", "last_bucket", "window_end", "bucket_seconds"];

const floor = (micros: bigint, size: bigint) => micros - (((micros % size) + size) % size);

const UNITS: [bigint, string][] = [
  [86_400n * SECOND, "d"],
  [3_600n * SECOND, "h"],
  [60n * SECOND, "m"],
  [SECOND, "s"],
];

/** 90d, 6h, 90s: the largest unit that divides it. */
export function durationText(micros: bigint): string {
  const [unit, name] = UNITS.find(([size]) => micros % size === 0n) ?? [SECOND, "s"];
  return `${micros / unit}${name}`;
}
