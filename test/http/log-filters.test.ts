// logs.all's filters and `since` through the HTTP API, on both engines: validation, paging that
// keeps every matching record once, scopes that pin a filter, and follow streams that deliver only
// matching records and share one feed per filter set. Expected sets are computed here from the
// fixtures' own fields.
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { SignJWT } from "jose";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { serviceApp } from "../../src/app.ts";
import { createTokenVerifier } from "../../src/credentials/tokens.ts";
import { createDuckDbEngine, type DuckDbEngine } from "../../src/engines/duckdb.ts";
import type { QueryRequest } from "../../src/engines/engine.ts";
import { configFrom } from "../support/config-from.ts";
import { replaceTables } from "../support/duckdb-tables.ts";
import {
  DAY,
  edgeLog,
  HOUR,
  MICROSECOND,
  MINUTE,
  micros,
  PROJECT,
  SECOND,
  shift,
} from "../support/fixtures.ts";
import {
  closers,
  FOLLOW,
  FOLLOW_CLOCK,
  inOrder,
  NOW,
  open,
  QUERY,
  records,
} from "../support/follow-client.ts";
import type { Row } from "../support/googlesql.ts";
import { recordingInto } from "../support/recording-engine.ts";
import { API_KEY, startBigQueryService, startService } from "../support/service.ts";

const CLOCK = { clock: () => micros(NOW) };
const SHARED = shift(NOW, -10n * MINUTE);

/** A record with one metadata element: one request and one response. */
function record(
  timestamp: string,
  id: string,
  status: number,
  method = "GET",
  path = "/rest/v1/todos",
) {
  return edgeLog(timestamp, {
    id,
    message: `${method} | ${status} | https://${PROJECT}.supabase.co${path}`,
    metadata: [
      { request: [{ method, path, url: null, host: null }], response: [{ status_code: status }] },
    ],
  });
}

// 420 records: every third a 5xx on /rest/v1/ (so 140 match status=5xx&path=/rest/v1/) plus, at one
// instant, a run of 150 5xx records on /rest/v1/, of which the matching ones span pages; the rest
// 200s, 404s and 5xx on other paths, interleaved.
const SPREAD: Row[] = Array.from({ length: 420 }, (_, i) => {
  const at = shift(SHARED, BigInt(210 - i) * SECOND);
  if (i % 3 === 0) return record(at, `m-${i}`, 500 + (i % 4), "POST");
  if (i % 3 === 1) return record(at, `s-${i}`, 503, "GET", "/storage/v1/object");
  return record(at, `o-${i}`, i % 2 ? 200 : 404, "get");
});
const TIE: Row[] = Array.from({ length: 150 }, (_, i) =>
  record(SHARED, `t-${(i * 7919) % 1000}-${i}`, 502, "PATCH", "/rest/v1/rpc/x"),
);
const OLD = [record(shift(NOW, -2n * DAY), "old", 500)];
const TABLES = { edge_logs: [...SPREAD, ...TIE, ...OLD].reverse() };

const is5xxRest = (r: Row) => /^[A-Z]+ \| 5\d\d \| .*\/rest\/v1\//.test(String(r.event_message));

type Get = (url: string) => Promise<LightMyRequestResponse>;

/** Follows next links from `url`; the records of every page, in order. */
async function pageThrough(get: Get, url: string): Promise<{ records: Row[]; links: string[] }> {
  const all: Row[] = [];
  const links: string[] = [];
  for (let next: string | undefined = url; next; ) {
    const response = await get(next);
    expect(response.statusCode, response.body).toBe(200);
    all.push(...JSON.parse(response.body).result);
    const link = response.headers.link as string | undefined;
    if (link) links.push(link);
    next = link && /^<([^>]+)>; rel="next"$/.exec(link)?.[1];
    expect(links.length).toBeLessThan(20);
  }
  return { records: all, links };
}

function expectNewestFirstOnce(rows: Row[], expected: Row[]) {
  expect(rows.map((r) => r.id).sort()).toEqual(expected.map((r) => r.id).sort());
  expect(new Set(rows.map((r) => r.id)).size).toBe(rows.length);
  const stamps = rows.map((r) => micros(r.timestamp as string));
  expect(stamps.every((t, i) => i === 0 || t <= (stamps[i - 1] as bigint))).toBe(true);
}

const opened: { app: FastifyInstance; engine: DuckDbEngine }[] = [];
afterAll(async () => {
  for (const { app, engine } of opened) {
    await app.close();
    await engine.close();
  }
});

/** The service on each engine over `tables`, its clock at NOW; `queries` counts engine runs. */
const engines: [
  string,
  (tables: Record<string, Row[]>) => Promise<{ get: Get; runs: QueryRequest[] }>,
][] = [
  [
    "BigQuery",
    async (tables) => {
      const runs: QueryRequest[] = [];
      const { get } = await startBigQueryService({
        tables,
        now: NOW,
        follow: CLOCK,
        config: { rateLimitPerMinute: 10_000 },
        wrapEngine: recordingInto(runs),
      });
      return { get, runs };
    },
  ],
  [
    "DuckDB",
    async (tables) => {
      const runs: QueryRequest[] = [];
      const engine = await createDuckDbEngine({ now: () => micros(NOW) });
      await replaceTables(engine, tables);
      const app = await serviceApp(
        configFrom({ auth: { apiKeys: [API_KEY] }, rateLimitPerMinute: 10_000 }),
        { engine: recordingInto(runs)(engine), follow: CLOCK },
      );
      opened.push({ app, engine });
      return { get: (url) => app.inject({ url, headers: { "x-api-key": API_KEY } }), runs };
    },
  ],
];

const BASE = `/api/endpoints/logs.all?project=${PROJECT}&project_tier=FREE`;

describe.each(engines)("logs.all filters on %s", (_, start) => {
  let get: Get;
  let runs: QueryRequest[];
  beforeEach(async () => {
    ({ get, runs } = await start(TABLES));
  });

  it("pages through every matching record once, newest first, across a 150-record tie", async () => {
    const { records: rows, links } = await pageThrough(get, `${BASE}&status=5xx&path=/rest/v1/`);
    const expected = [...SPREAD, ...TIE].filter(is5xxRest);
    expect(expected.length).toBeGreaterThan(280);
    expectNewestFirstOnce(rows, expected);
    // Every next link carries the filters.
    expect(links.length).toBeGreaterThanOrEqual(2);
    for (const link of links) expect(link).toMatch(/[?&]status=5xx&path=%2Frest%2Fv1%2F&cursor=/);
  });

  it.each<[string, (r: Row) => boolean]>([
    ["status=404", (r) => / \| 404 \| /.test(String(r.event_message))],
    ["status=4xx,200", (r) => / \| (404|200) \| /.test(String(r.event_message))],
    ["method=post,patch", (r) => /^(POST|PATCH) /.test(String(r.event_message))],
    ["method=GET", (r) => /^(GET|get) /.test(String(r.event_message))],
    ["path=/storage/", (r) => String(r.event_message).includes("/storage/")],
    ["search=RPC/X", (r) => String(r.event_message).includes("rpc/x")],
    [
      "search_regex=%5E(POST%7CPATCH)%20%5C%7C%2050%5B23%5D",
      (r) => /^(POST|PATCH) \| 50[23]/.test(String(r.event_message)),
    ],
    ["since=8m", (r) => micros(r.timestamp as string) > micros(NOW) - 8n * MINUTE],
  ])("%s keeps exactly the records the rule keeps, over every page", async (filter, rule) => {
    const { records: rows } = await pageThrough(get, `${BASE}&${filter}`);
    const expected = [...SPREAD, ...TIE, ...OLD].filter(
      (r) => micros(r.timestamp as string) > micros(NOW) - DAY && rule(r),
    );
    expect(expected.length).toBeGreaterThan(0);
    expectNewestFirstOnce(rows, expected);
  });

  it("takes since in each unit, counting back from now", async () => {
    for (const [since, back] of [
      ["400s", 400n * SECOND],
      ["11m", 11n * MINUTE],
      ["1h", HOUR],
      ["3d", 3n * DAY],
    ] as const) {
      const { records: rows } = await pageThrough(
        get,
        `${BASE}&project_tier=PRO&since=${since}`.replace("project_tier=FREE&", ""),
      );
      const expected = [...SPREAD, ...TIE, ...OLD].filter(
        (r) => micros(r.timestamp as string) > micros(NOW) - back,
      );
      expectNewestFirstOnce(rows, expected);
    }
  });

  it("answers byte for byte as without filters when every filter is empty", async () => {
    const plain = await get(BASE);
    const empty = await get(`${BASE}&status=&method=&path=&search=&search_regex=&since=`);
    expect(empty.statusCode).toBe(200);
    expect(empty.body).toBe(plain.body);
  });

  it("finds % and _ as plain characters of the message", async () => {
    const tables = {
      edge_logs: [
        edgeLog(shift(NOW, -MINUTE), { id: "percent", message: "cache 100% full" }),
        edgeLog(shift(NOW, -MINUTE), { id: "underscore", message: "user_id missing" }),
        edgeLog(shift(NOW, -MINUTE), { id: "neither", message: "100 percent, user id" }),
      ],
    };
    ({ get } = await start(tables));
    const ids = async (query: string) =>
      JSON.parse((await get(`${BASE}&${query}`)).body).result.map((r: Row) => r.id);
    expect(await ids("search=0%25")).toEqual(["percent"]);
    expect(await ids("search=r_i")).toEqual(["underscore"]);
    expect(await ids("search=%25")).toEqual(["percent"]);
  });

  it("refuses bad filter values with 400 invalid_params naming each, before any query", async () => {
    const cases: [string, string[]][] = [
      ["status=600x", ["status"]],
      ["status=5xx,abc", ["status"]],
      ["method=GET%20POST", ["method"]],
      ["path=rest/v1/", ["path"]],
      [`status=${Array.from({ length: 21 }, (_, i) => 500 + i).join(",")}`, ["status"]],
      [
        `method=${Array.from({ length: 21 }, (_, i) => String.fromCharCode(65 + i)).join(",")}`,
        ["method"],
      ],
      ["since=15", ["since"]],
      ["since=0m", ["since"]],
      ["since=-5m", ["since"]],
      ["since=1w", ["since"]],
      ["search_regex=(%3F%3D.)", ["search_regex"]],
      [`search_regex=${encodeURIComponent("\\pL{40}")}`, ["search_regex"]],
      ["since=15m&iso_timestamp_start=2026-11-21T00:00:00Z", ["since", "iso_timestamp_start"]],
    ];
    for (const [query, params] of cases) {
      const response = await get(`${BASE}&${query}`);
      expect(response.statusCode, query).toBe(400);
      const { error } = JSON.parse(response.body);
      expect(error.code, query).toBe("invalid_params");
      expect(error.details.map((d: { param: string }) => d.param).sort(), query).toEqual(
        [...params].sort(),
      );
    }
    expect(runs).toEqual([]);
  });
});

describe("since, paged", () => {
  it("keeps the first page's window on every later page, though the clock moves on", async () => {
    let now = micros(NOW);
    const engine = await createDuckDbEngine({ now: () => now });
    await replaceTables(engine, TABLES);
    const app = await serviceApp(configFrom({ auth: { apiKeys: [API_KEY] } }), {
      engine,
      follow: { clock: () => now },
    });
    opened.push({ app, engine });
    const get: Get = async (url) => {
      const response = await app.inject({ url, headers: { "x-api-key": API_KEY } });
      // A page a minute: by the last page, now − 12m has passed a hundred of the window's records.
      now += MINUTE;
      return response;
    };
    const { records: rows } = await pageThrough(get, `${BASE}&since=12m`);
    const expected = [...SPREAD, ...TIE].filter(
      (r) => micros(r.timestamp as string) > micros(NOW) - 12n * MINUTE,
    );
    expect(expected.length).toBeGreaterThan(300);
    expectNewestFirstOnce(rows, expected);
  });
});

const SECRET = "a-test-secret-of-at-least-32-bytes!!";

/** A service over TABLES that takes tokens, and a token whose scope fixes `fixed`. */
async function serviceWithToken(name: string, fixed: Record<string, string>) {
  const token = await new SignJWT({
    sub: name,
    scopes: [{ endpoint: "logs.all", fixed_params: fixed }],
  })
    .setProtectedHeader({ alg: "HS256" })
    .setExpirationTime("10m")
    .sign(new TextEncoder().encode(SECRET));
  const { get } = await startService({
    tables: TABLES,
    now: NOW,
    follow: CLOCK,
    tokens: createTokenVerifier({ secret: SECRET, maxLifetimeSeconds: 3600 }),
  });
  return { get, token };
}

describe("a scope that pins a filter", () => {
  it("shows a support token only 5xx records, and refuses another status", async () => {
    const { get, token } = await serviceWithToken("support", { project: PROJECT, status: "5xx" });
    const bearer = { authorization: `Bearer ${token}` };
    const { records: rows } = await pageThrough(
      (url) => get(url, bearer),
      `/api/endpoints/logs.all?project_tier=FREE&path=/rest/v1/`,
    );
    expectNewestFirstOnce(rows, [...SPREAD, ...TIE].filter(is5xxRest));
    const other = await get(`${BASE}&status=404`, bearer);
    expect(other.statusCode).toBe(403);
    expect(other.body).toContain("status");
  });
});

describe("a scope that pins since", () => {
  it("keeps its window on every page, whatever window start a cursor from elsewhere carries", async () => {
    const { get, token } = await serviceWithToken("recent-only", { project: PROJECT, since: "8m" });
    // A full key's page of a window from year 2000 on: its cursor carries that start.
    const wide = await get(`${BASE}&iso_timestamp_start=2000-01-01T00:00:00Z`);
    const cursor = /cursor=([\w-]+)>/.exec(wide.headers.link as string)?.[1] as string;
    const replayed = await get(
      `/api/endpoints/logs.all?project_tier=PRO&since=8m&cursor=${cursor}`,
      {
        authorization: `Bearer ${token}`,
      },
    );
    expect(replayed.statusCode).toBe(200);
    const rows: Row[] = JSON.parse(replayed.body).result;
    expect(rows.filter((r) => micros(r.timestamp as string) <= micros(NOW) - 8n * MINUTE)).toEqual(
      [],
    );
  });
});

describe("a follow stream under filters", () => {
  async function duckDbFollowService() {
    const engine = await createDuckDbEngine({ now: () => micros(NOW) });
    const runs: QueryRequest[] = [];
    await replaceTables(engine, { edge_logs: [] });
    const app = await serviceApp(configFrom({ auth: { apiKeys: [API_KEY] }, follow: FOLLOW }), {
      engine: recordingInto(runs)(engine),
      follow: FOLLOW_CLOCK,
    });
    closers.push(async () => {
      await app.close();
      await engine.close();
    });
    const base = await app.listen({ host: "127.0.0.1", port: 0 });
    return { engine, app, base, runs };
  }

  /** 60 records after NOW, a few sharing each microsecond, in scrambled order: every fourth a 5xx. */
  const burst = Array.from({ length: 60 }, (_, i) =>
    record(
      shift(NOW, BigInt(1 + Math.floor(i / 3)) * MICROSECOND),
      `f-${(i * 37) % 60}`,
      i % 4 ? 200 : 503,
    ),
  ).reverse();
  const matching = burst.filter((r) => String(r.event_message).includes("| 503 |"));

  it("delivers exactly the matching records of a burst, once, oldest first", async () => {
    const { engine, base } = await duckDbFollowService();
    const stream = await open(`${base}/api/endpoints/logs.all/follow?${QUERY}&status=5xx`);
    await replaceTables(engine, { edge_logs: burst });
    await stream.until(() => records(stream).length >= matching.length);
    // A few more polls: nothing else arrives.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const sent = records(stream);
    expect(sent.map((r) => r.id).sort()).toEqual(matching.map((r) => r.id).sort());
    expect(sent.map((r) => r.id)).toEqual(inOrder(matching).map((r) => r.id));
  });

  it("starts from since as from iso_timestamp_start", async () => {
    const { engine, base } = await duckDbFollowService();
    await replaceTables(engine, {
      edge_logs: [
        record(shift(NOW, -90n * SECOND), "too-old", 500),
        record(shift(NOW, -30n * SECOND), "recent-500", 500),
        record(shift(NOW, -20n * SECOND), "recent-200", 200),
      ],
    });
    const stream = await open(`${base}/api/endpoints/logs.all/follow?${QUERY}&since=1m&status=5xx`);
    await stream.until(() => records(stream).length === 1);
    expect(records(stream).map((r) => r.id)).toEqual(["recent-500"]);
  });

  it("shares one feed between followers of equal filters, and not with other filters", async () => {
    const { base, app, runs } = await duckDbFollowService();
    const url = `${base}/api/endpoints/logs.all/follow?${QUERY}`;
    // Three followers; the first two write the same filters differently.
    await open(`${url}&status=5xx&method=get`);
    await open(`${url}&method=GET&status=5XX`);
    await open(`${url}&status=4xx`);
    const metrics = await app.inject({ url: "/metrics", headers: { "x-api-key": API_KEY } });
    expect(metrics.body).toMatch(/^query_service_follow_feeds 2$/m);
    const before = runs.length;
    await new Promise((resolve) => setTimeout(resolve, 400));
    const polls = runs.slice(before);
    // Two parameter sets, two feeds: their polls carry one of two filter sets, never a third.
    const sets = new Set(polls.map((run) => `${run.params.status}/${run.params.method}`));
    expect(sets).toEqual(new Set(["5xx/GET", "4xx/null"]));
  });
});
