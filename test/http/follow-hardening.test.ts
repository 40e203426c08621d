// Follow streams attacked as a hostile tenant would: starts far in the past, streams dropped
// mid-catch-up, clients that never read, keys revoked mid-stream, scopes that pin a range, more
// streams than connections, and feeds whose polls all fail. Real HTTP over the embedded engine.
import { writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { type AppDeps, serviceApp } from "../../src/app.ts";
import { sha256Hex } from "../../src/credentials/authenticate.ts";
import { KeysFile } from "../../src/credentials/keys-file.ts";
import { cursorCodec } from "../../src/endpoints/cursor.ts";
import { createDuckDbEngine } from "../../src/engines/duckdb.ts";
import type { QueryEngine, QueryRequest, StreamedRows } from "../../src/engines/engine.ts";
import { formatTimestamp } from "../../src/time.ts";
import { type ConfigOverrides, configFrom } from "../support/config-from.ts";
import { replaceTables } from "../support/duckdb-tables.ts";
import {
  DAY,
  edgeLog,
  HOUR,
  MICROSECOND,
  micros,
  PROJECT,
  SECOND,
  shift,
} from "../support/fixtures.ts";
import {
  closers,
  FOLLOW,
  FOLLOW_CLOCK,
  NOW,
  open,
  QUERY,
  records,
  stalledClient,
} from "../support/follow-client.ts";
import type { Row } from "../support/googlesql.ts";
import { API_KEY } from "../support/service.ts";
import { temporaryFile } from "../support/temporary-file.ts";

const YEAR_ONE = "0001-01-01T00:00:00Z";
const CURSOR_SECRET = "a-cursor-secret-of-at-least-32-characters";
/** A well-formed event id of this service's (its secret is the test's) at any position. */
const eventIdAt = (iso: string, id: string) =>
  cursorCodec(CURSOR_SECRET).encode({ timestamp: formatTimestamp(micros(iso)), id });
const RECENT = edgeLog(shift(NOW, -10n * SECOND), { id: "recent" });

interface Options {
  rows?: Row[];
  config?: ConfigOverrides;
  deps?: Partial<AppDeps>;
  /**
   * Each catch-up query, and each chunk pulled from its streamed result, waits this long first, so
   * that a test can act while one runs.
   */
  catchUpDelayMs?: number;
  /** Feed polls (the queries without an end: a catch-up's window has one) fail. */
  failPolls?: boolean;
}

/** A feed's poll reads up to now: the one query of a stream with no iso_timestamp_end. */
const isPoll = (query: QueryRequest) => query.params.iso_timestamp_end === null;

/** A service on DuckDB with `rows` as edge_logs, recording every query that reaches the engine. */
async function followService(options: Options = {}) {
  const duck = await createDuckDbEngine({ now: () => micros(NOW) });
  await replaceTables(duck, { edge_logs: options.rows ?? [] });
  const calls: QueryRequest[] = [];
  const catchUp = { inFlight: 0, mostInFlight: 0, chunksPulled: 0, released: 0 };
  const delay = async () => {
    if (options.catchUpDelayMs) await sleep(options.catchUpDelayMs);
  };
  /** A catch-up's streamed result, its pulls counted and slowed. */
  const watched = (more: StreamedRows): StreamedRows => ({
    async next() {
      await delay();
      catchUp.chunksPulled++;
      return more.next();
    },
    return() {
      catchUp.released++;
      return more.return();
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  });
  const engine: QueryEngine = {
    dialect: duck.dialect,
    ping: () => duck.ping(),
    close: async () => {},
    async run(query) {
      calls.push(query);
      if (isPoll(query)) {
        if (options.failPolls) throw new Error("the engine is away");
        return duck.run(query);
      }
      catchUp.inFlight++;
      catchUp.mostInFlight = Math.max(catchUp.mostInFlight, catchUp.inFlight);
      try {
        await delay();
        const result = await duck.run(query);
        return result.more ? { ...result, more: watched(result.more) } : result;
      } finally {
        catchUp.inFlight--;
      }
    },
  };
  const app = await serviceApp(
    configFrom({
      auth: { apiKeys: [API_KEY] },
      follow: FOLLOW,
      cursorSecret: CURSOR_SECRET,
      ...options.config,
    }),
    { engine, follow: FOLLOW_CLOCK, ...options.deps },
  );
  closers.push(async () => {
    await app.close();
    await duck.close();
  });
  const base = await app.listen({ host: "127.0.0.1", port: 0 });
  const metric = async (name: string) => {
    const text = (await app.inject({ url: "/metrics", headers: { "x-api-key": API_KEY } })).body;
    return Number(
      new RegExp(`^${name.replace(/[{}]/g, "\\$&")} (\\S+)$`, "m").exec(text)?.[1] ?? 0,
    );
  };
  return {
    app,
    base,
    calls,
    catchUp,
    metric,
    catchUpCalls: () => calls.filter((call) => !isPoll(call)),
    add: (rows: Row[]) => replaceTables(duck, { edge_logs: [...(options.rows ?? []), ...rows] }),
  };
}

const followUrl = (base: string, query = QUERY) => `${base}/api/endpoints/logs.all/follow?${query}`;

/** The body of an HTTP/1.1 answer read off the wire, its chunked framing taken away. */
function unchunked(answer: string): string {
  let rest = answer.slice(answer.indexOf("\r\n\r\n") + 4);
  let body = "";
  for (;;) {
    const eol = rest.indexOf("\r\n");
    const size = Number.parseInt(rest.slice(0, eol), 16);
    if (!(size > 0)) return body;
    body += rest.slice(eol + 2, eol + 2 + size);
    rest = rest.slice(eol + 2 + size + 2);
  }
}

/** Records of about `bytes` each, one a microsecond after NOW: found by the feed's next poll. */
const bulky = (count: number, bytes: number) =>
  Array.from({ length: count }, (_, i) =>
    edgeLog(shift(NOW, BigInt(i + 1) * MICROSECOND), {
      id: `bulk-${i}`,
      message: "x".repeat(bytes),
    }),
  );

describe("a follow stream's catch-up", () => {
  it("costs one query from year 1 over empty history, and reads only what is inside the retention", async () => {
    const empty = await followService();
    const stream = await open(followUrl(empty.base, `${QUERY}&iso_timestamp_start=${YEAR_ONE}`));
    // The feed polls once the catch-up is done.
    await expect.poll(() => empty.calls.length - empty.catchUpCalls().length).toBeGreaterThan(0);
    expect(empty.catchUpCalls()).toHaveLength(1);
    stream.close();

    const outside = edgeLog(shift(NOW, -3n * DAY), { id: "outside-free-retention" });
    const some = await followService({ rows: [outside, RECENT] });
    const madeUp = eventIdAt(YEAR_ONE, "made-up");
    const resumed = await open(followUrl(some.base), { "last-event-id": madeUp });
    await resumed.until(() => records(resumed).length === 1);
    await expect.poll(() => some.calls.length - some.catchUpCalls().length).toBeGreaterThan(0);
    expect(records(resumed).map((row) => row.id)).toEqual(["recent"]);
    // One query: the window from the made-up position to now.
    expect(some.catchUpCalls()).toHaveLength(1);
  });

  it("reads 80 days of sparse history with one query, its result streamed", async () => {
    const rows = Array.from({ length: 80 * 12 }, (_, i) =>
      edgeLog(shift(NOW, -BigInt(i + 1) * 2n * HOUR), { id: `every-2h-${i}` }),
    );
    const { base, catchUp, catchUpCalls } = await followService({ rows });
    const stream = await open(
      followUrl(base, `project=${PROJECT}&project_tier=PAYG&iso_timestamp_start=${YEAR_ONE}`),
    );
    await stream.until(() => records(stream).length === rows.length);
    expect(catchUpCalls()).toHaveLength(1);
    expect(catchUp.mostInFlight).toBe(1);
    expect(new Set(records(stream).map((row) => row.id)).size).toBe(rows.length);
  });

  it("stops reading its result at once when its stream closes, and lets the result go", async () => {
    // About ten of DuckDB's 2048-row chunks, one every 10 s for two days and a half.
    const rows = Array.from({ length: 20_000 }, (_, i) =>
      edgeLog(shift(NOW, -BigInt(i + 1) * 10n * SECOND), { id: `every-10s-${i}` }),
    );
    const { base, catchUp, metric } = await followService({ rows, catchUpDelayMs: 20 });
    const stream = await open(
      followUrl(base, `project=${PROJECT}&project_tier=PAYG&iso_timestamp_start=${YEAR_ONE}`),
    );
    await expect.poll(() => catchUp.chunksPulled).toBeGreaterThanOrEqual(2);
    stream.close();
    await expect.poll(() => metric("query_service_follow_streams_open")).toBe(0);
    await expect.poll(() => catchUp.released).toBeGreaterThan(0);
    const atClose = catchUp.chunksPulled;
    await sleep(300);
    expect(catchUp.chunksPulled).toBe(atClose);
    expect(atClose).toBeLessThan(8);
  });
});

describe("a follow stream whose client does not read", () => {
  // A heartbeat every 50 ms finds a client out soon after it stops reading.
  const limits = { maxUnsentBytes: 64 * 1024, heartbeatMs: 50 };

  it("is written what its connection's buffers take of a burst, not the rest, then ended with event: end too_slow; only what was written is counted", async () => {
    const { base, add, metric } = await followService({
      deps: { streams: { ...limits, endGraceMs: 10_000 } },
    });
    const client = stalledClient(base, `/api/endpoints/logs.all/follow?${QUERY}`);
    await expect.poll(() => metric("query_service_follow_streams_open")).toBe(1);
    // One poll's records, 24 MB: more than the bound and than socket buffers hold. They go out
    // as the stream has room; a client that takes nothing for a heartbeat is too slow.
    const burst = bulky(6000, 4096);
    await add(burst);
    await expect.poll(() => metric('query_service_stream_ends_total{reason="too_slow"}')).toBe(1);
    const written = await metric("query_service_follow_records_sent_total");
    expect(written).toBeGreaterThan(0);
    expect(written).toBeLessThan(burst.length / 2);
    await add(bulky(4000, 4096));
    await expect.poll(() => metric("query_service_follow_polls_total")).toBeGreaterThan(4);
    expect(await metric("query_service_follow_records_sent_total")).toBe(written);

    // A slow client that reads at last finds the reason at the end, after what was written.
    const text = unchunked(await client.readToEnd());
    expect(text).toMatch(/event: end\ndata: {"reason":"too_slow","cursor":"[\w-]+"}\n\n$/);
    // The records' ids, and the open event's.
    expect(text.split("\nid: ").length - 1).toBe(written + 1);
    await expect.poll(() => metric("query_service_follow_streams_open")).toBe(0);
  });

  it("catching up over days of history as NDJSON (no heartbeat), is ended too_slow once it takes nothing for a heartbeat interval, and its result let go", async () => {
    // 20 MB of history, one record every 30 s: more than the connection's buffers take.
    const rows = Array.from({ length: 20_000 }, (_, i) =>
      edgeLog(shift(NOW, -BigInt(i + 1) * 30n * SECOND), {
        id: `history-${i}`,
        message: "x".repeat(1024),
      }),
    );
    const { base, catchUp, metric } = await followService({
      rows,
      deps: { streams: { ...limits, endGraceMs: 100 } },
    });
    stalledClient(
      base,
      `/api/endpoints/logs.all/follow?project=${PROJECT}&project_tier=PAYG&iso_timestamp_start=${YEAR_ONE}`,
      API_KEY,
      "application/x-ndjson",
    );
    await expect.poll(() => metric('query_service_stream_ends_total{reason="too_slow"}')).toBe(1);
    await expect.poll(() => metric("query_service_follow_streams_open")).toBe(0);
    await expect.poll(() => catchUp.released).toBeGreaterThan(0);
    expect(await metric("query_service_follow_records_sent_total")).toBeLessThan(rows.length / 2);
    // Its end stopped the reading too: of the window's ten chunks, those read before it.
    expect(catchUp.chunksPulled).toBeLessThan(5);
  });

  it("loses its connection when it still has not read a grace period after its end", async () => {
    const { base, add, metric } = await followService({
      deps: { streams: { ...limits, endGraceMs: 100 } },
    });
    const client = stalledClient(base, `/api/endpoints/logs.all/follow?${QUERY}`);
    await expect.poll(() => metric("query_service_follow_streams_open")).toBe(1);
    await add(bulky(3000, 4096));
    await expect.poll(() => metric('query_service_stream_ends_total{reason="too_slow"}')).toBe(1);
    // Released by the service: what it held unsent went with the connection.
    await expect.poll(() => metric("query_service_follow_streams_open")).toBe(0);
    expect(await client.readToEnd()).not.toContain("event: end");
  });

  it("does not hold up shutdown", async () => {
    const { app, base, add, metric } = await followService({
      config: { shutdownGraceMs: 60_000 },
      deps: { streams: { maxUnsentBytes: 1024 ** 3 } },
    });
    const client = stalledClient(base, `/api/endpoints/logs.all/follow?${QUERY}`);
    await expect.poll(() => metric("query_service_follow_streams_open")).toBe(1);
    await add(bulky(3000, 4096));
    // Written until its connection's buffers are full, the rest waiting for room: then the count
    // stands still.
    let written = -1;
    await expect
      .poll(
        async () => {
          const now = await metric("query_service_follow_records_sent_total");
          const still = now > 0 && now === written;
          written = now;
          return still;
        },
        { interval: 200 },
      )
      .toBe(true);
    await app.close();
    expect(await client.readToEnd()).not.toContain("event: end");
  }, 15_000);
});

describe("a follow stream's credential", () => {
  const KEY = "revocable-key-0123456789abcdef";
  const entry = (fields: Record<string, unknown> = {}) => ({
    name: "ops-script",
    sha256: sha256Hex(KEY),
    scopes: [{ endpoint: "logs.all" }],
    ...fields,
  });

  async function keyedStream(first: Record<string, unknown>) {
    const path = temporaryFile("keys.json", { keys: [first] });
    const keysFile = new KeysFile(path);
    const { base } = await followService({
      rows: [RECENT],
      config: { auth: { apiKeys: [] } },
      deps: { keysFile },
    });
    const stream = await open(followUrl(base), { "x-api-key": KEY });
    const rewrite = (keys: unknown[]) => {
      writeFileSync(path, JSON.stringify({ keys }));
      keysFile.reload({ info: () => {}, warn: () => {}, error: () => {} });
    };
    return { stream, rewrite };
  }

  it.each<[string, Record<string, unknown>[]]>([
    ["leaves the keys file", []],
    [
      "has its scopes changed",
      [entry({ scopes: [{ endpoint: "logs.all", fixed_params: { project_tier: "FREE" } }] })],
    ],
    ["is renamed", [entry({ name: "someone-else" })]],
  ])("ends it with reason revoked when the key %s", async (_, keys) => {
    const { stream, rewrite } = await keyedStream(entry());
    rewrite([entry({ rate_limit_per_minute: 5 })]);
    await sleep(100);
    expect(stream.events.some((event) => event.event === "end")).toBe(false);
    rewrite(keys);
    await stream.ended;
    expect(stream.events.at(-1)).toEqual({
      event: "end",
      data: expect.stringMatching(/^{"reason":"revoked","cursor":"[\w-]+"}$/),
    });
  });

  it("ends it with reason revoked when the key's expires_at passes", async () => {
    const expiresAt = new Date(Date.now() + 1500).toISOString();
    const { stream } = await keyedStream(entry({ expires_at: expiresAt }));
    await stream.ended;
    expect(stream.events.at(-1)).toEqual({
      event: "end",
      data: expect.stringMatching(/^{"reason":"revoked","cursor":"[\w-]+"}$/),
    });
  });
});

describe("a scope on the follow route", () => {
  const keys = {
    "until-key-0123456789abcdef": {
      endpoint: "logs.all",
      fixed_params: { iso_timestamp_end: NOW },
    },
    "since-key-0123456789abcdef": {
      endpoint: "logs.all",
      fixed_params: { iso_timestamp_start: shift(NOW, -5n * SECOND) },
    },
  };
  const scopedService = () =>
    followService({
      rows: [RECENT, edgeLog(shift(NOW, -2n * SECOND), { id: "after-the-pinned-start" })],
      config: { auth: { apiKeys: [] } },
      deps: {
        keysFile: new KeysFile(
          temporaryFile("keys.json", {
            keys: Object.entries(keys).map(([key, scope], i) => ({
              name: `scoped-${i}`,
              sha256: sha256Hex(key),
              scopes: [scope],
            })),
          }),
        ),
      },
    });

  it("pinning iso_timestamp_end cannot open a stream: 403 naming it", async () => {
    const { base } = await scopedService();
    const response = await fetch(followUrl(base), {
      headers: { "x-api-key": "until-key-0123456789abcdef" },
    });
    expect(response.status).toBe(403);
    const { error } = (await response.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe("forbidden");
    expect(error.message).toContain("iso_timestamp_end");
  });

  it("pinning iso_timestamp_start bounds a Last-Event-ID before it", async () => {
    const { base } = await scopedService();
    const madeUp = eventIdAt(YEAR_ONE, "");
    const stream = await open(followUrl(base), {
      "x-api-key": "since-key-0123456789abcdef",
      "last-event-id": madeUp,
    });
    await stream.until(() => records(stream).length === 1);
    await sleep(200);
    expect(records(stream).map((row) => row.id)).toEqual(["after-the-pinned-start"]);
  });
});

describe("capacity for streams", () => {
  it("past the process's cap answers 503 overloaded, and /health still answers", async () => {
    const { app, base } = await followService({ config: { streams: { maxOpen: 2 } } });
    await open(followUrl(base));
    await open(followUrl(base));
    const third = await fetch(followUrl(base), { headers: { "x-api-key": API_KEY } });
    expect(third.status).toBe(503);
    expect(third.headers.get("retry-after")).toBe("5");
    expect(((await third.json()) as { error: { code: string } }).error.code).toBe("overloaded");
    expect((await app.inject({ url: "/health" })).statusCode).toBe(200);
  });

  it("past an address's cap answers 429, whichever of its keys asks", async () => {
    const keys = ["first-key-0123456789abcdef", "second-key-0123456789abcdef"];
    const { base } = await followService({
      config: { auth: { apiKeys: keys }, streams: { maxPerAddress: 2 } },
    });
    await open(followUrl(base), { "x-api-key": keys[0] as string });
    await open(followUrl(base), { "x-api-key": keys[0] as string });
    const third = await fetch(followUrl(base), { headers: { "x-api-key": keys[1] as string } });
    expect(third.status).toBe(429);
    const { error } = (await third.json()) as { error: { code: string; message: string } };
    expect(error).toMatchObject({ code: "rate_limited" });
    expect(error.message).toContain("address");
  });
});

describe("feeds", () => {
  it("whose polls all fail write one line for the burst, not one per feed and poll", async () => {
    const lines: string[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => lines.push(line) });
    const { base, metric } = await followService({ failPolls: true, deps: { logger } });
    for (const project of ["a", "b", "c", "d"]) {
      await open(followUrl(base, `project=${project}&project_tier=FREE`));
    }
    await expect.poll(() => metric("query_service_follow_polls_total")).toBeGreaterThan(12);
    const warnings = lines.filter((line) => line.includes("follow poll failed"));
    expect(warnings).toHaveLength(1);
  });
});
