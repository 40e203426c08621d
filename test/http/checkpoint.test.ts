// The settled follow stream (`until=settled`, resumed `after` a cursor) on both engines: each run
// sends every record after its checkpoint up to now − lag, oldest first, and ends with the cursor
// the next run resumes from; runs chained while records keep arriving, late ones within the lag
// included, give every record once, in order. Expected sets come from the fixtures.
import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { type AppDeps, serviceApp } from "../../src/app.ts";
import { createTokenVerifier } from "../../src/credentials/tokens.ts";
import { createDuckDbEngine } from "../../src/engines/duckdb.ts";
import type { QueryEngine, QueryRequest } from "../../src/engines/engine.ts";
import { formatTimestamp } from "../../src/time.ts";
import { configFrom } from "../support/config-from.ts";
import { replaceTables } from "../support/duckdb-tables.ts";
import {
  DAY,
  edgeLog,
  MICROSECOND,
  MINUTE,
  micros,
  PROJECT,
  SECOND,
  shift,
} from "../support/fixtures.ts";
import { closers, inOrder } from "../support/follow-client.ts";
import type { Row } from "../support/googlesql.ts";
import { recordingInto } from "../support/recording-engine.ts";
import { API_KEY, startBigQueryService, startService } from "../support/service.ts";

const START = "2026-11-21T05:00:00.000000Z";
const LAG_MS = 60_000;
const QUERY = `project=${PROJECT}`;

interface Run {
  status: number;
  records: Row[];
  end?: { reason: string; cursor: string };
  body: string;
}

/** A service on `engine` whose clock the test moves; every engine query counted. */
async function serviceOn(engine: QueryEngine, clock: { now: bigint }, deps: Partial<AppDeps> = {}) {
  const runs: QueryRequest[] = [];
  const app = await serviceApp(
    configFrom({ auth: { apiKeys: [API_KEY] }, follow: { intervalMs: 40, lagMs: LAG_MS } }),
    { engine: recordingInto(runs)(engine), follow: { clock: () => clock.now }, ...deps },
  );
  closers.push(() => app.close());
  /** One settled run, read to its end, as NDJSON or Server-Sent Events; FREE unless `query` says. */
  const settle = async (
    query: string,
    ndjson = true,
    credential: Record<string, string> = { "x-api-key": API_KEY },
  ): Promise<Run> => {
    const tier = query.includes("project_tier=") ? "" : "&project_tier=FREE";
    const response = await app.inject({
      url: `/api/endpoints/logs.all/follow?${QUERY}${tier}&until=settled${query}`,
      headers: {
        ...credential,
        accept: ndjson ? "application/x-ndjson" : "text/event-stream",
      },
    });
    if (response.statusCode !== 200)
      return { status: response.statusCode, records: [], body: response.body };
    if (!ndjson) {
      const frames = response.body
        .split("\n\n")
        .filter((frame) => frame.startsWith("id:") || frame.startsWith("event:"));
      const data = (frame: string) => JSON.parse(frame.slice(frame.indexOf("data: ") + 6));
      const end = frames.find((frame) => frame.startsWith("event: end"));
      return {
        status: 200,
        // An id alone says where the stream starts: records are the ids with data.
        records: frames
          .filter((frame) => frame.startsWith("id:") && frame.includes("\ndata: "))
          .map(data),
        ...(end && { end: data(end) }),
        body: response.body,
      };
    }
    const lines = response.body
      .trimEnd()
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line));
    const last = lines.at(-1);
    return {
      status: 200,
      records: last?.end ? lines.slice(0, -1) : lines,
      ...(last?.end && { end: last.end }),
      body: response.body,
    };
  };
  return { app, runs, settle };
}

describe("a settled follow stream on DuckDB", () => {
  async function duckDb(clock: { now: bigint }, deps: Partial<AppDeps> = {}) {
    const engine = await createDuckDbEngine({ now: () => clock.now });
    closers.push(() => engine.close());
    return { engine, ...(await serviceOn(engine, clock, deps)) };
  }

  it("sends every record after the checkpoint up to now − lag, oldest first, then its cursor", async () => {
    const clock = { now: micros(START) };
    const { engine, settle } = await duckDb(clock);
    const settledRows = [
      edgeLog(shift(START, -30n * MINUTE), { id: "b" }),
      edgeLog(shift(START, -30n * MINUTE), { id: "a" }),
      edgeLog(shift(START, -2n * MINUTE), { id: "c" }),
      edgeLog(shift(START, -BigInt(LAG_MS) * 1000n), { id: "at-the-horizon" }),
    ];
    const unsettled = [edgeLog(shift(START, -30n * SECOND), { id: "within-the-lag" })];
    await replaceTables(engine, { edge_logs: [...settledRows, ...unsettled] });

    for (const ndjson of [true, false]) {
      const run = await settle("&since=1h", ndjson);
      expect(run.status).toBe(200);
      expect(run.records.map((r) => r.id)).toEqual(inOrder(settledRows).map((r) => r.id));
      expect(run.end).toEqual({ reason: "settled", cursor: expect.stringMatching(/^[\w-]+$/) });
    }
  });

  it("chained runs give every record once, in order, while records keep arriving, late ones too", async () => {
    const clock = { now: micros(START) };
    const { engine, settle } = await duckDb(clock);
    const table: Row[] = [];
    const exported: Row[] = [];
    let cursor: string | undefined;
    for (let run = 0; run < 12; run++) {
      const now = formatTimestamp(clock.now);
      // A burst of five sharing one timestamp, one more a second later, and a late record: its
      // timestamp 40 s back (within the 60 s lag), arriving after a run whose horizon it is before.
      table.push(
        ...["e", "b", "d", "a", "c"].map((id) =>
          edgeLog(shift(now, -5n * SECOND), { id: `${run}-${id}` }),
        ),
        edgeLog(shift(now, -4n * SECOND), { id: `${run}-next` }),
        edgeLog(shift(now, -40n * SECOND), { id: `${run}-late` }),
      );
      await replaceTables(engine, { edge_logs: table });
      const result = await settle(cursor ? `&after=${cursor}` : "&since=10m");
      expect(result.status, result.body).toBe(200);
      exported.push(...result.records);
      cursor = result.end?.cursor;
      clock.now += 25n * SECOND;
    }
    // Time passes with nothing new, so every record has settled; one more run takes the rest.
    clock.now += 2n * MINUTE;
    exported.push(...(await settle(`&after=${cursor}`)).records);
    expect(exported.map((r) => r.id)).toEqual(inOrder(table).map((r) => r.id));
  });

  it("with nothing new ends at once, for one query, its checkpoint moved on to what has settled", async () => {
    const clock = { now: micros(START) };
    const { engine, settle, runs } = await duckDb(clock);
    const table = [edgeLog(shift(START, -10n * MINUTE), { id: "only" })];
    await replaceTables(engine, { edge_logs: table });
    const first = await settle("&since=1h");
    expect(first.records.map((r) => r.id)).toEqual(["only"]);
    clock.now += MINUTE;
    const before = runs.length;
    const again = await settle(`&after=${first.end?.cursor}`);
    expect(again.records).toEqual([]);
    expect(again.end?.reason).toBe("settled");
    expect(runs.length - before).toBe(1);
    // A record arriving now, within the lag, is the next run's.
    table.push(edgeLog(shift(formatTimestamp(clock.now), -30n * SECOND), { id: "arrived" }));
    await replaceTables(engine, { edge_logs: table });
    clock.now += MINUTE;
    expect((await settle(`&after=${again.end?.cursor}`)).records.map((r) => r.id)).toEqual([
      "arrived",
    ]);
  });

  it("keeps a filter that matches nothing for long from ageing past the retention", async () => {
    const clock = { now: micros(START) };
    const { engine, settle } = await duckDb(clock);
    await replaceTables(engine, { edge_logs: [edgeLog(shift(START, -MINUTE), { id: "a-200" })] });
    let cursor: string | undefined;
    // A run every 5 hours for 40 hours, on the 1-day tier.
    for (let day = 0; day < 8; day++) {
      const run = await settle(cursor ? `&status=5xx&after=${cursor}` : "&status=5xx&since=1h");
      expect({ day, status: run.status, records: run.records }).toEqual({
        day,
        status: 200,
        records: [],
      });
      cursor = run.end?.cursor;
      clock.now += 5n * 60n * MINUTE;
    }
  });

  it("resumes from its checkpoint though the URL's since starts later: nothing between is skipped", async () => {
    const clock = { now: micros(START) };
    const { engine, settle } = await duckDb(clock);
    const old = edgeLog(shift(START, -30n * MINUTE), { id: "old" });
    await replaceTables(engine, { edge_logs: [old] });
    const first = await settle("&since=1h");
    clock.now += 20n * MINUTE;
    await replaceTables(engine, {
      edge_logs: [old, edgeLog(shift(START, 5n * MINUTE), { id: "before-the-since" })],
    });
    const second = await settle(`&since=5m&after=${first.end?.cursor}`);
    expect(second.records.map((r) => r.id)).toEqual(["before-the-since"]);
  });

  it("starts a run of a key whose scope fixes since where the scope does, though later than its checkpoint", async () => {
    const secret = "a-test-secret-of-at-least-32-bytes!!";
    const clock = { now: micros(START) };
    const { engine, settle } = await duckDb(clock, {
      tokens: createTokenVerifier({ secret, maxLifetimeSeconds: 7200 }),
    });
    const token = await new SignJWT({
      sub: "cron",
      scopes: [{ endpoint: "logs.all", fixed_params: { since: "5m" } }],
    })
      .setProtectedHeader({ alg: "HS256" })
      .setExpirationTime("1h")
      .sign(new TextEncoder().encode(secret));
    const key = { authorization: `Bearer ${token}` };
    const seen = edgeLog(shift(START, -2n * MINUTE), { id: "seen" });
    await replaceTables(engine, { edge_logs: [seen] });
    const first = await settle("", true, key);
    expect(first.records.map((r) => r.id)).toEqual(["seen"]);

    // Twenty minutes on, the key may see five: what came before that is not its to see.
    clock.now += 20n * MINUTE;
    await replaceTables(engine, {
      edge_logs: [
        seen,
        edgeLog(shift(START, 10n * MINUTE), { id: "before-the-scope" }),
        edgeLog(shift(START, 18n * MINUTE), { id: "within-the-scope" }),
      ],
    });
    const second = await settle(`&after=${first.end?.cursor}`, true, key);
    expect(second.status).toBe(200);
    expect(second.records.map((r) => r.id)).toEqual(["within-the-scope"]);
  });

  it("sends each record byte for byte as a page of logs.all does, whatever its text and numbers", async () => {
    const clock = { now: micros(START) };
    const { engine, app, settle } = await duckDb(clock);
    const every = Array.from({ length: 128 }, (_, code) => String.fromCharCode(code)).join("");
    const unicode = `é € 😀 \u2028\u2029\ufeff ﬀ İ "quoted" back\\slash /slash`;
    const text = `${every} ${unicode}`;
    const at = (minutes: bigint) => shift(START, -minutes * MINUTE);
    await replaceTables(engine, {
      edge_logs: [
        edgeLog(at(55n), { id: text, message: text }),
        edgeLog(at(50n), { id: unicode, message: unicode }),
        edgeLog(at(40n), {
          id: "nested",
          metadata: [
            { request: [{ method: null, path: text, url: "", host: null }], response: [] },
            { request: [], response: [{ status_code: null }, { status_code: -1 }] },
          ],
        }),
        edgeLog(at(30n), { id: "empty", metadata: [] }),
        edgeLog(at(20n), { id: "big" }),
        { ...edgeLog(at(10n)), id: null, event_message: null },
      ],
    });
    // Integers JSON.parse and a BIGINT read as a number both round, past 2^53: to the same double.
    const connection = await engine.connect();
    await connection.run(`UPDATE edge_logs SET metadata = [{'request': [], 'response': [
      {'status_code': 9007199254740993}, {'status_code': -9223372036854775808},
      {'status_code': 9223372036854775807}]}] WHERE id = 'big'`);
    connection.closeSync();

    const page = await app.inject({
      url: `/api/endpoints/logs.all?${QUERY}&project_tier=FREE&iso_timestamp_start=${at(60n)}`,
      headers: { "x-api-key": API_KEY },
    });
    // The page's rows as JSON.stringify wrote them (parsing and writing again gives the same text).
    const lines = (JSON.parse(page.body) as { result: Row[] }).result
      .reverse()
      .map((row) => JSON.stringify(row));
    expect(lines).toHaveLength(6);
    const ndjson = await settle("&since=1h");
    expect(ndjson.body.split("\n").slice(0, -2)).toEqual(lines);
    const events = await settle("&since=1h", false);
    expect(
      events.body
        .split("\n")
        .filter((line) => line.startsWith('data: {"id"'))
        .map((line) => line.slice("data: ".length)),
    ).toEqual(lines);
  });

  it("reaches its end over a real connection with 20 000 records, waiting whenever the socket is full", async () => {
    const clock = { now: micros(START) };
    const { engine, app } = await duckDb(clock);
    const many = Array.from({ length: 20_000 }, (_, i) =>
      edgeLog(shift(START, -BigInt(20_000 - i) * 100n * MICROSECOND - 2n * MINUTE), {
        id: `r${i}`,
      }),
    );
    await replaceTables(engine, { edge_logs: many });
    const base = await app.listen({ host: "127.0.0.1", port: 0 });
    const response = await fetch(
      `${base}/api/endpoints/logs.all/follow?${QUERY}&project_tier=FREE&since=1h&until=settled`,
      { headers: { "x-api-key": API_KEY, accept: "application/x-ndjson" } },
    );
    const lines = (await response.text()).trimEnd().split("\n");
    expect(lines).toHaveLength(20_001);
    expect(JSON.parse(lines.at(-1) as string).end.reason).toBe("settled");
  }, 20_000);

  it("applies the logs filters", async () => {
    const clock = { now: micros(START) };
    const { engine, settle } = await duckDb(clock);
    const failed = (at: string, id: string, status: number) =>
      edgeLog(at, { id, metadata: [{ request: [], response: [{ status_code: status }] }] });
    await replaceTables(engine, {
      edge_logs: [
        failed(shift(START, -9n * MINUTE), "ok", 200),
        failed(shift(START, -8n * MINUTE), "broken", 502),
        failed(shift(START, -7n * MINUTE), "missing", 404),
      ],
    });
    expect((await settle("&since=1h&status=5xx")).records.map((r) => r.id)).toEqual(["broken"]);
  });

  it("refuses a checkpoint older than the tier's retention, where a live follow starts at its edge", async () => {
    const clock = { now: micros(START) };
    const { engine, settle, app } = await duckDb(clock);
    await replaceTables(engine, { edge_logs: [edgeLog(shift(START, -2n * DAY), { id: "old" })] });
    const old = await settle("&project_tier=PRO&since=7d");
    expect(old.records.map((r) => r.id)).toEqual(["old"]);
    // The same cursor on the 1-day tier: records after it were dropped.
    const refused = await settle(`&project_tier=FREE&after=${old.end?.cursor}`);
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.body).error).toMatchObject({
      code: "invalid_params",
      details: [
        { param: "after", message: expect.stringContaining("older than the 1-day retention") },
      ],
    });
    const base = await app.listen({ host: "127.0.0.1", port: 0 });
    const controller = new AbortController();
    const live = await fetch(
      `${base}/api/endpoints/logs.all/follow?${QUERY}&project_tier=FREE&after=${old.end?.cursor}`,
      {
        headers: { "x-api-key": API_KEY },
        signal: controller.signal,
      },
    );
    expect(live.status).toBe(200);
    controller.abort();
  });

  it("refuses an after that is no cursor of its own, and an until other than settled", async () => {
    const { settle } = await duckDb({ now: micros(START) });
    for (const [query, param] of [
      ["&after=not-a-cursor", "after"],
      ["&after=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "after"],
    ]) {
      const run = await settle(query as string);
      expect(run.status, query).toBe(400);
      expect(JSON.parse(run.body).error.details[0].param).toBe(param);
    }
    const app = (await duckDb({ now: micros(START) })).app;
    const other = await app.inject({
      url: `/api/endpoints/logs.all/follow?${QUERY}&project_tier=FREE&until=now`,
      headers: { "x-api-key": API_KEY },
    });
    expect(other.statusCode).toBe(400);
    expect(JSON.parse(other.body).error.details[0].param).toBe("until");
  });
});

describe("a settled follow stream on BigQuery", () => {
  it("over five days costs one job, its pages read without another, its end and /metrics saying its bytes", async () => {
    const NOW = "2026-11-21T05:17:42.123456Z";
    const rows = Array.from({ length: 5 * 24 }, (_, i) =>
      edgeLog(shift(NOW, -BigInt(i + 1) * 60n * MINUTE), { id: `hourly-${i}` }),
    );
    const { app, standIn } = await startBigQueryService({
      now: NOW,
      tables: { edge_logs: rows },
      config: { follow: { intervalMs: 40, lagMs: LAG_MS } },
      follow: { clock: () => micros(NOW), windowPageRows: 50 },
    });
    const headers = { "x-api-key": API_KEY };
    const lines = (
      await app.inject({
        url: `/api/endpoints/logs.all/follow?${QUERY}&project_tier=PRO&since=6d&until=settled`,
        headers: { ...headers, accept: "application/x-ndjson" },
      })
    ).body
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line));
    const end = lines.at(-1).end;
    expect(lines.slice(0, -1).map((r) => r.id)).toEqual(inOrder(rows).map((r) => r.id));
    expect(standIn.queryCalls).toHaveLength(1);
    expect(standIn.pageReads).toHaveLength(2);
    expect(end.bytes_processed).toBeGreaterThan(0);

    const metrics = (await app.inject({ url: "/metrics", headers })).body;
    const value = (series: string) =>
      Number(new RegExp(`^${series.replace(/[{}]/g, "\\$&")} (\\d+)$`, "m").exec(metrics)?.[1]);
    expect(value('query_service_engine_queries_total{endpoint="logs.all",trigger="export"}')).toBe(
      1,
    );
    expect(
      value(
        'query_service_engine_bytes_processed_total{endpoint="logs.all",trigger="export",credential="api_keys"}',
      ),
    ).toBe(end.bytes_processed);
  });

  it("sends what has settled after the checkpoint, then its cursor, from which the next run resumes", async () => {
    const NOW = "2026-11-21T05:17:42.123456Z";
    const rows = [
      edgeLog(shift(NOW, -5n * MINUTE), { id: "first" }),
      edgeLog(shift(NOW, -5n * MINUTE + MICROSECOND), { id: "second" }),
      edgeLog(shift(NOW, -10n * SECOND), { id: "unsettled" }),
    ];
    const clock = { now: micros(NOW) };
    const { app } = await startService({
      now: NOW,
      tables: { edge_logs: rows },
      config: { follow: { intervalMs: 40, lagMs: LAG_MS } },
      follow: { clock: () => clock.now },
    });
    const url = `/api/endpoints/logs.all/follow?${QUERY}&project_tier=FREE&until=settled`;
    const headers = { "x-api-key": API_KEY, accept: "application/x-ndjson" };
    /** A run's record ids, and the cursor it ended with. */
    const run = async (query: string) => {
      const lines = (await app.inject({ url: `${url}${query}`, headers })).body
        .trimEnd()
        .split("\n")
        .map((line) => JSON.parse(line));
      expect(lines.at(-1).end.reason).toBe("settled");
      return { ids: lines.slice(0, -1).map((r) => r.id), cursor: lines.at(-1).end.cursor };
    };
    const first = await run("&since=1h");
    expect(first.ids).toEqual(["first", "second"]);
    const again = await run(`&after=${first.cursor}`);
    expect(again.ids).toEqual([]);
    // Once the lag has passed, the record that had not settled has, and comes once.
    clock.now += BigInt(LAG_MS) * 1000n;
    const later = await run(`&after=${again.cursor}`);
    expect(later.ids).toEqual(["unsettled"]);
  });
});
