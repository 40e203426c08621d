// logs.all pages through a whole window by its Link rel=next, on both engines: every record once,
// newest first, however many share a timestamp. Expected sets are computed here from the fixtures.
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { serviceApp } from "../../src/app.ts";
import type { BigQueryEngine } from "../../src/engines/bigquery.ts";
import { createDuckDbEngine, type DuckDbEngine } from "../../src/engines/duckdb.ts";
import type { BigQueryStandIn } from "../support/bigquery-standin.ts";
import { catalog } from "../support/catalog.ts";
import { configFrom } from "../support/config-from.ts";
import { replaceTables } from "../support/duckdb-tables.ts";
import {
  DAY,
  edgeLog,
  MICROSECOND,
  MINUTE,
  micros,
  OTHER_PROJECT,
  PROJECT,
  SECOND,
  shift,
} from "../support/fixtures.ts";
import type { Row } from "../support/googlesql.ts";
import { API_KEY, engineOn, startBigQueryService, startService } from "../support/service.ts";

const NOW = "2026-11-21T05:17:42.123456Z";
const LOGS = catalog.find((endpoint) => endpoint.name === "logs.all");
const SHARED = shift(NOW, -10n * MINUTE);

/** Ids in no particular byte order, so the tie-break is not insertion order. */
const scrambled = (i: number) => `${((i * 7919) % 1000).toString(36)}-${i}`;

// Project A: 170 records a second apart and a run of 150 at one instant, starting 60 records in,
// so the run spans three pages; records a day old; and project B's records in between.
const OURS: Row[] = [
  ...Array.from({ length: 60 }, (_, i) =>
    edgeLog(shift(SHARED, BigInt(i + 1) * SECOND), { id: scrambled(i) }),
  ),
  ...Array.from({ length: 150 }, (_, i) => edgeLog(SHARED, { id: scrambled(100 + i) })),
  ...Array.from({ length: 110 }, (_, i) =>
    edgeLog(shift(SHARED, -BigInt(i + 1) * SECOND), { id: scrambled(300 + i) }),
  ),
  ...Array.from({ length: 5 }, (_, i) =>
    edgeLog(shift(NOW, -DAY - BigInt(i) * MINUTE), { id: `old-${i}` }),
  ),
];
const THEIRS: Row[] = Array.from({ length: 130 }, (_, i) =>
  edgeLog(shift(SHARED, BigInt(i - 65) * SECOND + MICROSECOND), {
    id: `b-${i}`,
    project: OTHER_PROJECT,
  }),
);
const TABLES = { edge_logs: [...OURS, ...THEIRS].reverse() };

/** The records of `project` a query should page through, computed from the fixtures. */
function expectedIds(project: string, after: string, atOrBefore = NOW): Set<unknown> {
  return new Set(
    [...OURS, ...THEIRS]
      .filter((r) => r.project === project)
      .filter((r) => micros(r.timestamp as string) > micros(after))
      .filter((r) => micros(r.timestamp as string) <= micros(atOrBefore))
      .map((r) => r.id),
  );
}

type Get = (url: string) => Promise<LightMyRequestResponse>;

interface Page {
  records: Row[];
  link?: string;
  /** X-Bytes-Processed: what the page cost on BigQuery. */
  bytes: number;
}

/** Follows next links from `url` to the last page, asking `get`, or `getFor` the page's index. */
async function pageThrough(
  get: Get,
  url: string,
  getFor: (page: number) => Get = () => get,
): Promise<Page[]> {
  const pages: Page[] = [];
  for (let next: string | undefined = url; next; ) {
    const response = await getFor(pages.length)(next);
    expect(response.statusCode, response.body).toBe(200);
    const link = response.headers.link as string | undefined;
    const bytes = Number(response.headers["x-bytes-processed"]);
    pages.push({ records: JSON.parse(response.body).result, bytes, ...(link && { link }) });
    next = link && /^<([^>]+)>; rel="next"$/.exec(link)?.[1];
    expect(pages.length).toBeLessThan(20);
  }
  return pages;
}

function expectWholeWindow(pages: Page[], expected: Set<unknown>) {
  const records = pages.flatMap((page) => page.records);
  expect(records.map((r) => r.id).sort()).toEqual([...expected].sort());
  const stamps = records.map((r) => micros(r.timestamp as string));
  expect(stamps.every((t, i) => i === 0 || t <= (stamps[i - 1] as bigint))).toBe(true);
  for (const [i, page] of pages.entries()) {
    expect(page.records.length).toBeLessThanOrEqual(100);
    // Only a full page links on, and the last page never does.
    expect(page.link !== undefined).toBe(i < pages.length - 1);
    if (page.records.length < 100) expect(page.link).toBeUndefined();
  }
}

const engines: [string, (tables: Record<string, Row[]>) => Promise<Get>][] = [
  [
    "BigQuery",
    async (tables) => {
      const { get } = await startService({ tables, now: NOW });
      return get;
    },
  ],
  [
    "DuckDB",
    async (tables) => {
      const engine = await createDuckDbEngine({ now: () => micros(NOW) });
      await replaceTables(engine, tables);
      const app = await serviceApp(
        configFrom({ auth: { apiKeys: [API_KEY] }, rateLimitPerMinute: 10_000 }),
        { engine },
      );
      opened.push({ app, engine });
      return (url) => app.inject({ url, headers: { "x-api-key": API_KEY } });
    },
  ],
];
const opened: { app: FastifyInstance; engine: DuckDbEngine }[] = [];
afterAll(async () => {
  for (const { app, engine } of opened) {
    await app.close();
    await engine.close();
  }
});

describe.each(engines)("logs.all paging on %s", (_, start) => {
  let get: Get;
  // A BigQuery service lives for one test (support/service.ts closes it after each).
  beforeEach(async () => {
    get = await start(TABLES);
  });
  const base = `/api/endpoints/logs.all?project=${PROJECT}&project_tier=FREE`;

  it("yields every record of the window once, newest first, across a 150-record tie", async () => {
    const pages = await pageThrough(get, base);
    expect(pages.length).toBeGreaterThanOrEqual(4);
    expectWholeWindow(pages, expectedIds(PROJECT, shift(NOW, -DAY)));
  });

  it("pages within both time bounds", async () => {
    const after = shift(SHARED, -50n * SECOND);
    const until = shift(SHARED, 20n * SECOND);
    const pages = await pageThrough(
      get,
      `${base}&iso_timestamp_start=${after}&iso_timestamp_end=${encodeURIComponent(until)}`,
    );
    expectWholeWindow(pages, expectedIds(PROJECT, after, until));
  });

  it("links on the path the caller used, with its parameters", async () => {
    const byUuid = await get(
      `/api/endpoints/query/${LOGS?.id}?project=${PROJECT}&project_tier=FREE`,
    );
    expect(byUuid.headers.link).toMatch(
      new RegExp(
        `^</api/endpoints/query/${LOGS?.id}\\?project=${PROJECT}&project_tier=FREE&cursor=[\\w-]+>; rel="next"$`,
      ),
    );
    const suffixed = await get(
      `/api/endpoints/logs.all.ndjson?project=${PROJECT}&project_tier=FREE`,
    );
    expect(suffixed.headers.link).toMatch(/^<\/api\/endpoints\/logs\.all\.ndjson\?/);
  });

  it("exposes Link to browsers", async () => {
    const response = await get(base);
    expect(String(response.headers["access-control-expose-headers"]).split(", ")).toContain("Link");
  });

  it("refuses a cut, edited or made-up cursor with 400 invalid_params naming cursor", async () => {
    const [first] = await pageThrough(
      get,
      `${base}&iso_timestamp_end=${encodeURIComponent(shift(SHARED, -100n * SECOND))}`,
    );
    expect(first?.link).toBeUndefined();
    const link = (await get(base)).headers.link as string;
    const cursor = /cursor=([\w-]+)>/.exec(link)?.[1] as string;
    const edited = `${cursor.slice(0, 10)}${cursor[10] === "A" ? "B" : "A"}${cursor.slice(11)}`;
    for (const bad of [edited, cursor.slice(0, -3), "abc", "not a cursor", `${cursor}=`]) {
      const response = await get(`${base}&cursor=${encodeURIComponent(bad)}`);
      expect(response.statusCode, bad).toBe(400);
      expect(JSON.parse(response.body).error).toMatchObject({
        code: "invalid_params",
        details: [{ param: "cursor", message: expect.stringContaining("not a cursor") }],
      });
    }
  });

  it("a cursor from one project's page shows another project only its own records", async () => {
    const first = await get(base);
    const last = (JSON.parse(first.body).result as Row[]).at(-1) as Row;
    const cursor = /cursor=([\w-]+)>/.exec(first.headers.link as string)?.[1] as string;
    const theirs = await get(
      `/api/endpoints/logs.all?project=${OTHER_PROJECT}&project_tier=FREE&cursor=${cursor}`,
    );
    // B's records older than the last record of A's first page (B's never share its instant).
    const expected = THEIRS.filter(
      (r) => micros(r.timestamp as string) < micros(last.timestamp as string),
    );
    const records: Row[] = JSON.parse(theirs.body).result;
    expect(records.length).toBeGreaterThan(0);
    expect(records.map((r) => r.id).sort()).toEqual(expected.map((r) => r.id).sort());
  });
});

// On BigQuery a later page reads the kept result of one query for the rest of the walk, which runs
// no query and bills no bytes; these hold it to the records the keyset pages above give.
describe("a page walk on BigQuery", () => {
  const SECRET = "cursor-secret-shared-by-the-replicas";
  const base = `/api/endpoints/logs.all?project=${PROJECT}&project_tier=FREE`;
  const window = expectedIds(PROJECT, shift(NOW, -DAY));
  const start = (deployment = "test-project.logs") =>
    startBigQueryService({
      tables: TABLES,
      now: NOW,
      config: { cursorSecret: SECRET },
      deployment,
    });
  /** Another app on `standIn` with the secret: a replica, or another deployment's service. */
  const another = async (standIn: BigQueryStandIn, deployment: string): Promise<Get> => {
    const engine = engineOn(standIn);
    const app = await serviceApp(
      configFrom({ auth: { apiKeys: [API_KEY] }, cursorSecret: SECRET }),
      {
        engine,
        deployment,
      },
    );
    replicas.push({ app, engine });
    return (url) => app.inject({ url, headers: { "x-api-key": API_KEY } });
  };
  const replicas: { app: FastifyInstance; engine: BigQueryEngine }[] = [];
  afterEach(async () => {
    for (const { app, engine } of replicas.splice(0)) {
      await app.close();
      await engine.close();
    }
  });
  const cursorOf = (page?: Page) => /cursor=([\w-]+)>/.exec(page?.link ?? "")?.[1] as string;

  it("costs the first page's query and one for the rest, the later pages reading its result", async () => {
    const { get, standIn } = await start();
    const pages = await pageThrough(get, base);
    expect(pages.length).toBeGreaterThanOrEqual(4);
    expectWholeWindow(pages, window);
    expect(standIn.queryCalls).toHaveLength(2);
    expect(standIn.pageReads).toHaveLength(pages.length - 2);
    expect(pages.map((page) => page.bytes > 0)).toEqual(pages.map((_, i) => i < 2));
  });

  it("falls back to a query from the cursor's position when the kept result is gone", async () => {
    const { get, standIn } = await start();
    const pages = await pageThrough(get, base, (page) => {
      if (page === 3) standIn.expireJobs();
      return get;
    });
    expectWholeWindow(pages, window);
    expect(standIn.queryCalls).toHaveLength(3);
    expect(pages[3]?.bytes).toBeGreaterThan(0);
  });

  it("ends a walk read on a day later where the retention edge has moved into it", async () => {
    const { get, standIn } = await start();
    // Pages 1 and 2, then the clock moves on nearly a day: FREE's day starts 50 s before SHARED.
    const later = shift(SHARED, DAY - 50n * SECOND);
    const pages = await pageThrough(get, base, (page) => {
      if (page === 2) standIn.now = later;
      return get;
    });
    expectWholeWindow(pages, expectedIds(PROJECT, shift(later, -DAY)));
    expect(standIn.queryCalls).toHaveLength(2);
  });

  it("is served across replicas that share the secret; another deployment reads by position", async () => {
    const { get, standIn } = await start();
    const replica = await another(standIn, "test-project.logs");
    const elsewhere = await another(standIn, "test-project.other_logs");
    const pages = await pageThrough(get, base, (page) => [get, get, replica][page] ?? elsewhere);
    expectWholeWindow(pages, window);
    // The replica read its page from the kept result; the other deployment ran its own query.
    expect(pages.map((page) => page.bytes > 0)).toEqual(pages.map((_, i) => i !== 2));
    expect(standIn.queryCalls).toHaveLength(3);
  });

  it("never reads a kept result for other parameters, and refuses an edited cursor", async () => {
    const { get, standIn } = await start();
    const first = await get(base);
    const second = await get(`${base}&cursor=${cursorOf({ link: first.headers.link } as Page)}`);
    const last = (JSON.parse(second.body).result as Row[]).at(-1) as Row;
    const cursor = cursorOf({ link: second.headers.link } as Page);
    const theirs = await get(
      `/api/endpoints/logs.all?project=${OTHER_PROJECT}&project_tier=FREE&cursor=${cursor}`,
    );
    const older = THEIRS.filter(
      (r) => micros(r.timestamp as string) < micros(last.timestamp as string),
    );
    expect((JSON.parse(theirs.body).result as Row[]).map((r) => r.id).sort()).toEqual(
      older
        .map((r) => r.id)
        .sort()
        .slice(0, 100),
    );
    expect(standIn.queryCalls).toHaveLength(3);
    const at = Math.floor(cursor.length / 2);
    const edited = `${cursor.slice(0, at)}${cursor[at] === "A" ? "B" : "A"}${cursor.slice(at + 1)}`;
    const refused = await get(`${base}&cursor=${edited}`);
    expect(refused.statusCode).toBe(400);
    expect(JSON.parse(refused.body).error.details).toEqual([
      { param: "cursor", message: expect.stringContaining("not a cursor") },
    ]);
  });
});
