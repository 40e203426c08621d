// A catch-up and a settled run read their window with one query and page through its result as the
// follower takes records: on BigQuery (the official client over HTTP to the stand-in) one job,
// billed the days of its window and not the whole table, its result pages read only when the
// follower has room, and a result gone mid-read read again from after the last record delivered;
// on DuckDB one query, its streamed chunks pulled the same way.
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { cursorCodec } from "../../src/endpoints/cursor.ts";
import { type Follower, FollowHub } from "../../src/endpoints/follow.ts";
import { type StreamPosition, startingAt } from "../../src/endpoints/stream-position.ts";
import { createDuckDbEngine, type DuckDbEngine } from "../../src/engines/duckdb.ts";
import type { QueryEngine, QueryRequest, Row } from "../../src/engines/engine.ts";
import { catalog } from "../support/catalog.ts";
import { replaceTables } from "../support/duckdb-tables.ts";
import { DAY, edgeLog, HOUR, MINUTE, micros, PROJECT, SECOND, shift } from "../support/fixtures.ts";
import { inOrder } from "../support/follow-client.ts";
import type { Row as TableRow } from "../support/googlesql.ts";
import { recordingInto } from "../support/recording-engine.ts";
import { standInEngine } from "../support/service.ts";

const NOW = "2026-11-21T05:17:42.123456Z";
const LAG_MS = 60_000;
const PAGE_ROWS = 25;
const LOGS = catalog.find((endpoint) => endpoint.name === "logs.all") as (typeof catalog)[number];
/** Every parameter logs.all declares, absent but the project and its tier. */
const PARAMS = {
  ...Object.fromEntries([...LOGS.paramNames].map((name) => [name, null])),
  project: PROJECT,
  project_tier: "PRO",
};
/** Five days of a record an hour, all inside PRO's 7-day retention and settled. */
const FIVE_DAYS = Array.from({ length: 5 * 24 }, (_, i) =>
  edgeLog(shift(NOW, -BigInt(i + 1) * HOUR), { id: `hourly-${i}` }),
);
/** Three months of older history, two records a day: a table a settled run must not scan whole. */
const HISTORY = Array.from({ length: 2 * 90 }, (_, i) =>
  edgeLog(shift(NOW, -8n * DAY - BigInt(i) * 12n * HOUR), { id: `old-${i}` }),
);
const SETTLED_FROM = startingAt(micros(NOW) - 6n * DAY);
const SETTLED_UNTIL = micros(NOW) - BigInt(LAG_MS) * 1000n;

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

function hubOn(engine: QueryEngine): FollowHub {
  const hub = new FollowHub(engine, {
    // No feed polls within a test: what the engine sees is the catch-up's.
    intervalMs: 3_600_000,
    lagMs: LAG_MS,
    clock: () => micros(NOW),
    cursors: cursorCodec("a-cursor-secret-of-at-least-32-characters"),
    windowPageRows: PAGE_ROWS,
  });
  closers.push(async () => hub.close());
  return hub;
}

async function bigQuery(rows: TableRow[]) {
  const { standIn, engine } = await standInEngine({
    tables: { edge_logs: rows },
    now: NOW,
    engine: { retry: { attempts: 1, initialDelayMs: 1, maxDelayMs: 1 } },
  });
  closers.push(() => standIn.close());
  return { standIn, hub: hubOn(engine) };
}

/**
 * A follower whose stream takes `allow(n)` more records at a time: after each record it waits for
 * room, as a stream its client does not read does.
 */
function pacedFollower() {
  const delivered: Row[] = [];
  let allowance = 0;
  let wake = () => {};
  const result: { cursor?: string; bytesProcessed?: number; error?: unknown } = {};
  const follower: Follower = {
    credential: "reader",
    deliver(record) {
      delivered.push(record);
      return true;
    },
    async ready() {
      while (delivered.length > allowance) await new Promise<void>((resolve) => (wake = resolve));
    },
    fail: (error) => {
      result.error = error;
    },
    settled: (cursor, cost) => Object.assign(result, { cursor }, cost),
  };
  const allow = (count: number) => {
    allowance += count;
    wake();
  };
  return { follower, delivered, result, allow };
}

const ids = (rows: readonly { id?: unknown }[]) => rows.map((row) => row.id);

describe("a settled run on BigQuery", () => {
  it("over five days is one job, each record once and in order, billed one scan of its window", async () => {
    const table = [...FIVE_DAYS, ...HISTORY];
    const { standIn, hub } = await bigQuery(table);
    const reader = pacedFollower();
    reader.allow(Number.POSITIVE_INFINITY);
    hub.follow(LOGS, PARAMS, SETTLED_FROM, reader.follower, SETTLED_UNTIL);
    await expect.poll(() => reader.result.cursor).toBeDefined();

    expect(ids(reader.delivered)).toEqual(ids(inOrder(FIVE_DAYS)));
    expect(standIn.queryCalls).toHaveLength(1);
    expect(standIn.queryCalls[0]?.body.labels).toMatchObject({ trigger: "export" });
    expect(standIn.pageReads).toHaveLength(Math.ceil(FIVE_DAYS.length / PAGE_ROWS) - 1);
    // One scan of the window costs the rows of the UTC days it touches (the stand-in's byte model
    // of a day-partitioned table); the whole table would cost the history's too.
    const bytes = (rows: TableRow[]) =>
      rows.reduce((sum, row) => sum + Buffer.byteLength(JSON.stringify(row)), 0);
    const dayOf = (instant: bigint) => instant / DAY;
    const windowDays = table.filter((row) => {
      const day = dayOf(micros(String(row.timestamp)));
      return day >= dayOf(SETTLED_FROM.newest) && day <= dayOf(SETTLED_UNTIL);
    });
    const scan = bytes(windowDays);
    expect(bytes(table)).toBeGreaterThan(1.2 * scan);
    expect(reader.result.bytesProcessed).toBeGreaterThanOrEqual(scan);
    expect(reader.result.bytesProcessed).toBeLessThanOrEqual(1.2 * scan);
  });

  it("reads the next result page only when the follower has taken the last one's records", async () => {
    const { standIn, hub } = await bigQuery(FIVE_DAYS);
    const reader = pacedFollower();
    hub.follow(LOGS, PARAMS, SETTLED_FROM, reader.follower, SETTLED_UNTIL);
    await expect.poll(() => reader.delivered.length).toBe(1);
    // Time for a reader that reads ahead to give itself away.
    await sleep(100);
    expect(standIn.pageReads).toHaveLength(0);
    // The first page and 5 of the second's records taken: one page read; then the second's rest
    // and 5 of the third's: two.
    reader.allow(PAGE_ROWS + 5);
    await expect.poll(() => reader.delivered.length).toBe(PAGE_ROWS + 6);
    expect(standIn.pageReads).toHaveLength(1);
    reader.allow(PAGE_ROWS);
    await expect.poll(() => reader.delivered.length).toBe(2 * PAGE_ROWS + 6);
    expect(standIn.pageReads).toHaveLength(2);
    reader.allow(Number.POSITIVE_INFINITY);
    await expect.poll(() => reader.result.cursor).toBeDefined();
    expect(ids(reader.delivered)).toEqual(ids(inOrder(FIVE_DAYS)));
  });

  it("whose job's result is gone mid-read queries again from after the last record delivered", async () => {
    const { standIn, hub } = await bigQuery(FIVE_DAYS);
    const reader = pacedFollower();
    hub.follow(LOGS, PARAMS, SETTLED_FROM, reader.follower, SETTLED_UNTIL);
    reader.allow(PAGE_ROWS + 10);
    await expect.poll(() => reader.delivered.length).toBe(PAGE_ROWS + 11);
    standIn.expireJobs();
    reader.allow(Number.POSITIVE_INFINITY);
    await expect.poll(() => reader.result.cursor).toBeDefined();

    expect(ids(reader.delivered)).toEqual(ids(inOrder(FIVE_DAYS)));
    expect(standIn.queryCalls).toHaveLength(2);
    const lastOfSecondPage = inOrder(FIVE_DAYS)[2 * PAGE_ROWS - 1] as Row;
    const again = Object.fromEntries(
      (standIn.queryCalls[1]?.body.queryParameters ?? []).map((p) => [
        p.name,
        p.parameterValue.value,
      ]),
    );
    expect(again).toMatchObject({ after_id: lastOfSecondPage.id });
  });
  it("whose job's result is gone before a record was read queries its window again", async () => {
    const { standIn, engine } = await standInEngine({
      tables: { edge_logs: FIVE_DAYS },
      now: NOW,
      engine: { retry: { attempts: 1, initialDelayMs: 1, maxDelayMs: 1 } },
    });
    closers.push(() => standIn.close());
    let runs = 0;
    // A first answer with no rows but a rest, its job dropped before the rest is read.
    const emptyFirst: QueryEngine = {
      ...engine,
      run: async (request) => {
        const result = await engine.run(request);
        if (runs++ > 0) return result;
        standIn.expireJobs();
        return { ...result, rows: [] };
      },
    };
    const reader = pacedFollower();
    reader.allow(Number.POSITIVE_INFINITY);
    hubOn(emptyFirst).follow(
      LOGS,
      PARAMS,
      SETTLED_FROM,
      reader.follower,
      micros(NOW) - BigInt(LAG_MS) * 1000n,
    );
    await expect.poll(() => reader.result.cursor).toBeDefined();

    expect(ids(reader.delivered)).toEqual(ids(inOrder(FIVE_DAYS)));
    expect(standIn.queryCalls).toHaveLength(2);
    expect(standIn.queryCalls[1]?.body.queryParameters).toEqual(
      standIn.queryCalls[0]?.body.queryParameters,
    );
  });
});

describe("a catch-up on BigQuery", () => {
  it("after a six-hour outage is one job, each record once and in order", async () => {
    // A record every five minutes for seven hours; the stream last delivered the one 6 h back.
    const rows = Array.from({ length: 7 * 12 }, (_, i) =>
      edgeLog(shift(NOW, -BigInt(i) * 5n * MINUTE - 1n), { id: `every-5min-${i}` }),
    );
    const lastDelivered = inOrder(rows).find(
      (row) => micros(String(row.timestamp)) > micros(NOW) - 6n * HOUR,
    ) as Row;
    const from: StreamPosition = {
      horizon: { micros: micros(String(lastDelivered.timestamp)), id: String(lastDelivered.id) },
      newest: micros(String(lastDelivered.timestamp)),
      delivered: [],
    };
    const missed = inOrder(rows).filter(
      (row) => micros(String(row.timestamp)) > from.horizon.micros,
    );
    const { standIn, hub } = await bigQuery(rows);
    const reader = pacedFollower();
    reader.allow(Number.POSITIVE_INFINITY);
    hub.follow(LOGS, PARAMS, from, reader.follower);
    await expect.poll(() => reader.delivered.length).toBe(missed.length);

    expect(ids(reader.delivered)).toEqual(ids(missed));
    const catchUpJobs = standIn.queryCalls.filter((call) => call.body.labels?.credential);
    expect(catchUpJobs.length).toBeLessThanOrEqual(2);
    expect(catchUpJobs[0]?.body.labels).toMatchObject({ trigger: "follow" });
  });
});

describe("a settled run on DuckDB", () => {
  it("is one query whose streamed chunks are pulled as the follower takes records", async () => {
    const duck = await createDuckDbEngine({ now: () => micros(NOW) });
    closers.push(() => duck.close());
    // Three of DuckDB's 2048-row chunks, a record a minute.
    const rows = Array.from({ length: 5000 }, (_, i) =>
      edgeLog(shift(NOW, -BigInt(i + 2) * MINUTE), { id: `minutely-${i}` }),
    );
    await replaceTables(duck, { edge_logs: rows });
    const runs: QueryRequest[] = [];
    let pulled = 0;
    const engine = recordingInto(runs)({
      ...duck,
      run: async (request) => {
        const result = await duck.run(request);
        const more = result.more;
        if (!more) return result;
        return {
          ...result,
          more: {
            next: () => {
              pulled++;
              return more.next();
            },
            return: () => more.return(),
            [Symbol.asyncIterator]() {
              return this;
            },
          },
        };
      },
    });
    const hub = hubOn(engine);
    const reader = pacedFollower();
    hub.follow(LOGS, PARAMS, SETTLED_FROM, reader.follower, SETTLED_UNTIL);
    reader.allow(100);
    await expect.poll(() => reader.delivered.length).toBe(101);
    expect(pulled).toBe(0);
    reader.allow(3000);
    await expect.poll(() => reader.delivered.length).toBe(3101);
    expect(pulled).toBe(1);
    reader.allow(Number.POSITIVE_INFINITY);
    await expect.poll(() => reader.result.cursor).toBeDefined();

    expect(ids(reader.delivered)).toEqual(ids(inOrder(rows)));
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ trigger: "export", streamResult: true });
  });
});

describe("a settled run on DuckDB whose follower stops pulling", () => {
  it("closes its streamed result, and reads on from after the last record when pulled again", async () => {
    const duck = await createDuckDbEngine({ now: () => micros(NOW), streamIdleMs: 20 });
    closers.push(() => duck.close());
    const rows = Array.from({ length: 5000 }, (_, i) =>
      edgeLog(shift(NOW, -BigInt(i + 2) * MINUTE), { id: `minutely-${i}` }),
    );
    await replaceTables(duck, { edge_logs: rows });
    const runs: QueryRequest[] = [];
    const hub = hubOn(recordingInto(runs)(duck));
    const reader = pacedFollower();
    hub.follow(LOGS, PARAMS, SETTLED_FROM, reader.follower, micros(NOW) - BigInt(LAG_MS) * 1000n);
    // Into the second of DuckDB's 2048-row chunks, then the reader stalls.
    reader.allow(2100);
    await expect.poll(() => reader.delivered.length).toBe(2101);
    await expect.poll(() => duck.openStreams()).toBe(0);
    reader.allow(Number.POSITIVE_INFINITY);
    await expect.poll(() => reader.result.cursor).toBeDefined();

    expect(ids(reader.delivered)).toEqual(ids(inOrder(rows)));
    // A machine slow enough to close it early too makes more queries, never other records.
    const lastOfSecondChunk = reader.delivered[2 * 2048 - 1];
    expect(runs.map((run) => run.params.after_id)).toContain(lastOfSecondChunk?.id);
    expect(duck.openStreams()).toBe(0);
  });
});

/** Bytes DuckDB holds for sorts now (the sorted windows of the results open). */
async function sortedBytes(duck: DuckDbEngine): Promise<number> {
  const connection = await duck.connect();
  try {
    const reader = await connection.runAndReadAll(
      "SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory() WHERE tag = 'ORDER_BY'",
    );
    return Number(reader.getRows()[0]?.[0]);
  } finally {
    connection.closeSync();
  }
}

describe("catch-ups on DuckDB whose followers do not read", () => {
  it("hold what a streamed page of their window sorts, not the whole window; read, every record comes once, in order", async () => {
    // Four days and a half, a record every 20 s: four of a catch-up's 5 000-record pages.
    const rows = Array.from({ length: 20_000 }, (_, i) =>
      edgeLog(shift(NOW, -BigInt(i + 1) * 20n * SECOND), { id: `every-20s-${i}` }),
    );
    // Open while the test looks: the followers' results are not closed for being left unread.
    const duck = await createDuckDbEngine({ now: () => micros(NOW), streamIdleMs: 60_000 });
    closers.push(() => duck.close());
    await replaceTables(duck, { edge_logs: rows });
    const hub = hubOn(duck);
    const readers = Array.from({ length: 4 }, () => pacedFollower());
    for (const reader of readers) {
      hub.follow(LOGS, PARAMS, startingAt(micros(NOW) - 6n * DAY), reader.follower);
    }
    await expect.poll(() => readers.every((reader) => reader.delivered.length === 1)).toBe(true);
    const held = await sortedBytes(duck);

    // What one result of the whole window holds sorted (as a settled run reads), for comparison.
    const whole = await createDuckDbEngine({
      now: () => micros(NOW),
      streamIdleMs: 60_000,
      streamedRows: Number.POSITIVE_INFINITY,
    });
    closers.push(() => whole.close());
    await replaceTables(whole, { edge_logs: rows });
    const alone = pacedFollower();
    hubOn(whole).follow(LOGS, PARAMS, startingAt(micros(NOW) - 6n * DAY), alone.follower);
    await expect.poll(() => alone.delivered.length).toBe(1);
    const wholeWindow = await sortedBytes(whole);
    expect(held).toBeLessThan(wholeWindow / 2);

    for (const reader of readers) reader.allow(Number.POSITIVE_INFINITY);
    await expect
      .poll(() => readers.every((reader) => reader.delivered.length === rows.length))
      .toBe(true);
    for (const reader of readers) expect(ids(reader.delivered)).toEqual(ids(inOrder(rows)));
  });
});
