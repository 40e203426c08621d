// DuckDB's p95/p99 over buckets of every size from 1 to 300, against the rank rule both engines
// follow: element i of 100 is the sorted value at rank floor(i·(n−1)/100). The differential test's
// buckets are small; the DuckDB SQL reaches that rank through quantile_disc for second and minute
// buckets, and through per-hour value bins for hour and day buckets: both ways are checked here.
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDuckDbEngine, type DuckDbEngine } from "../../src/engines/duckdb.ts";
import { endpointRequest } from "../support/catalog.ts";
import { replaceTables } from "../support/duckdb-tables.ts";
import {
  functionCall,
  HOUR,
  MICROSECOND,
  micros,
  PROJECT,
  SECOND,
  shift,
  truncate,
} from "../support/fixtures.ts";

const NOW = "2026-11-21T05:17:42.123456Z";
const SIZES = Array.from({ length: 300 }, (_, i) => i + 1);

let engine: DuckDbEngine;
beforeAll(async () => {
  engine = await createDuckDbEngine({ now: () => micros(NOW) });
});
afterAll(() => engine.close());

/** Deterministic, unsorted, with ties: the values of a bucket of size n. */
const valuesOf = (n: number) =>
  Array.from({ length: n }, (_, k) => ((k * 7919 + n * 104729) % 997) / 8);
const rank = (i: number, sorted: number[]) => sorted[Math.floor((i * (sorted.length - 1)) / 100)];

/** Each bucket's timestamp, count, p95 and p99 as the DuckDB SQL gives them for `interval`. */
async function ranksOf(interval: string) {
  const { rows } = await engine.run(
    endpointRequest("functions.invocation-stats", "duckdb", {
      project: PROJECT,
      interval,
      function_id: null,
    }),
  );
  return rows.map((r) => ({
    timestamp: r.timestamp,
    count: r.count,
    p95: r.p95_execution_time,
    p99: r.p99_execution_time,
  }));
}

it("gives p95 and p99 at rank floor(i·(n−1)/100) for every bucket size from 1 to 300", async () => {
  // 5min has one-second buckets; the n-th second before now's gets n invocations.
  const lastBucket = micros(truncate(NOW, SECOND));
  const bucketOf = (n: number) => shift(NOW, lastBucket - micros(NOW) - BigInt(n) * SECOND);
  await replaceTables(engine, {
    function_edge_logs: SIZES.flatMap((n) =>
      valuesOf(n).map((ms, k) => functionCall(shift(bucketOf(n), BigInt(k) * MICROSECOND), { ms })),
    ),
  });

  const expected = SIZES.map((n) => {
    const sorted = valuesOf(n).sort((a, b) => a - b);
    return { timestamp: bucketOf(n), count: n, p95: rank(95, sorted), p99: rank(99, sorted) };
  }).reverse();
  expect(await ranksOf("5min")).toEqual(expected);
});

/** Values spread over many bins of both signs, with zeros and ties: a bucket of size n. */
const spreadValuesOf = (n: number) =>
  valuesOf(n).map((v, k) => (k % 5 === 0 ? 0 : (v - 40) * (k % 3 === 0 ? 1000 : 1)));

it("gives the same ranks for hour buckets, read from the per-hour value bins", async () => {
  // 1day has one-hour buckets; the n-th hour before now's gets sizes[n] invocations.
  const sizes = [1, 2, 3, 4, 5, 7, 10, 19, 20, 21, 50, 99, 100, 101, 150, 199, 200, 201, 250, 300];
  const lastBucket = micros(truncate(NOW, HOUR));
  const bucketOf = (n: number) => shift(NOW, lastBucket - micros(NOW) - BigInt(n) * HOUR);
  await replaceTables(engine, {
    function_edge_logs: sizes.flatMap((size, n) =>
      spreadValuesOf(size).map((ms, k) =>
        functionCall(shift(bucketOf(n + 1), BigInt(k) * SECOND), { ms }),
      ),
    ),
  });

  const expected = sizes
    .map((size, n) => {
      const sorted = spreadValuesOf(size).sort((a, b) => a - b);
      return {
        timestamp: bucketOf(n + 1),
        count: size,
        p95: rank(95, sorted),
        p99: rank(99, sorted),
      };
    })
    .reverse();
  expect(await ranksOf("1day")).toEqual(expected);
});
