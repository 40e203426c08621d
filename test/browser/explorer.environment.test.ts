// The explorer page at / in a real headless Chromium, against the service on the embedded engine
// and its demo data: what a person sees, and what the page sends.
//
// Time: the page's refresh interval is shortened with its own `?refresh=1` option. The cache reads
// the wall clock plus `cacheClock.offsetMs`; moving the offset past the TTL expires the cached
// answer, so that rows appended to the demo tables show on the next refresh.
//
// Streams: the stats panels watch and logs.all's Live toggle follows. What they receive comes from a
// service over LOCAL_DATA exports the test writes (`exportsService`), so that the test decides when
// a value changes or a record arrives.
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { SignJWT } from "jose";
import type { Browser, Page, Request } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type AppDeps, serviceApp } from "../../src/app.ts";
import { createTokenVerifier } from "../../src/credentials/tokens.ts";
import { BUILT_IN_ENDPOINTS, loadCatalog } from "../../src/endpoints/load-catalog.ts";
import { loadData } from "../../src/engines/duckdb/data.ts";
import { generateLogs } from "../../src/engines/duckdb/demo-data.ts";
import { appendRecords } from "../../src/engines/duckdb/derived.ts";
import { watchExports } from "../../src/engines/duckdb/export-watch.ts";
import { createDuckDbEngine } from "../../src/engines/duckdb.ts";
import { EngineError, type QueryRequest } from "../../src/engines/engine.ts";
import { dateToMicros } from "../../src/time.ts";
import { launchChromium } from "../support/browser.ts";
import { type ConfigOverrides, configFrom } from "../support/config-from.ts";
import { demoApp } from "../support/demo-app.ts";
import { edgeLog, edgeMetadata, functionCall, request } from "../support/fixtures.ts";
import type { Row } from "../support/googlesql.ts";

const KEY = "browser-test-key-0123456789";
const ARTIFACTS = new URL("../../test-artifacts/", import.meta.url).pathname;
const STATS = '[data-endpoint="functions.invocation-stats"]';
const LOGS = '[data-endpoint="logs.all"]';
const USAGE = '[data-endpoint="usage.api-counts"]';
const TTL_MS = 900_000;
const STATS_QUERY = "project=default&interval=1hr";
const CACHE = { maxEntries: 100, maxBytes: 16 * 1024 * 1024 };

const cacheClock = { offsetMs: 0 };
const demo = demoApp(
  {
    auth: { apiKeys: [KEY] },
    cache: CACHE,
    // The tests load the page (a dozen files) a dozen times a minute from one address.
    anonymousRateLimitPerMinute: 1_000,
  },
  { cache: { now: () => Date.now() + cacheClock.offsetMs } },
);

let base: string;
let browser: Browser;
beforeAll(async () => {
  base = await demo.app.listen({ host: "127.0.0.1", port: 0 });
  browser = await launchChromium();
  await mkdir(ARTIFACTS, { recursive: true });
});
const others: FastifyInstance[] = [];
// What those services read, closed after them.
const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  await browser?.close();
  await Promise.all(others.map((app) => app.close()));
  for (const close of closers) await close();
});

/** Another service over the same demo tables, listening on a port of its own; its origin. */
async function otherService(config: ConfigOverrides, deps: Partial<AppDeps> = {}): Promise<string> {
  const app = await serviceApp(
    configFrom({ ...config, auth: { apiKeys: [KEY], ...config.auth } }),
    {
      engine: demo.engine,
      ...deps,
    },
  );
  others.push(app);
  return app.listen({ host: "127.0.0.1", port: 0 });
}

/**
 * Another service whose engine fails the queries `fails` picks with a 502 `engine_error`: a fault
 * the demo engine cannot produce on demand, injected around it.
 */
function serviceFailing(fails: (request: QueryRequest) => boolean): Promise<string> {
  return otherService(
    {},
    {
      engine: {
        dialect: demo.engine.dialect,
        ping: () => demo.engine.ping(),
        close: async () => {},
        run: async (request) => {
          if (fails(request)) {
            throw new EngineError("engine_error", "The query failed in the engine.");
          }
          return demo.engine.run(request);
        },
      },
    },
  );
}

/**
 * Another service over LOCAL_DATA exports in a folder of its own: a function invocation and a
 * request of project `default` ten minutes ago (`firstAt`). `drop(table, rows)` writes one more export and
 * loads it as the export watch does (two looks, the file unchanged between them); follow streams
 * poll every 200 ms.
 */
async function exportsService() {
  const folder = await mkdtemp(join(tmpdir(), "explorer-exports-"));
  let files = 0;
  const write = (table: string, rows: Row[]) =>
    writeFile(
      join(folder, `${table}-${files++}.ndjson`),
      rows.map((row) => `${JSON.stringify(row)}\n`).join(""),
    );
  const tenMinutesAgo = new Date(Date.now() - 600_000).toISOString();
  await write("function_edge_logs", [functionCall(tenMinutesAgo, { project: "default" })]);
  await write("edge_logs", [edgeRecord("first-record", tenMinutesAgo)]);
  const engine = await createDuckDbEngine({ dataFolders: [folder] });
  await loadData(engine, { localData: folder });
  const log = { info: vi.fn(), warn: vi.fn(), error: vi.fn() };
  // Its own timer never fires here: drop() looks.
  const exports = watchExports(engine, { source: folder, pollMs: 3_600_000, log });
  closers.push(async () => {
    await exports.stop();
    await engine.close();
    await rm(folder, { recursive: true, force: true });
  });
  const origin = await otherService(
    { cache: CACHE, follow: { intervalMs: 200 } },
    { engine, cache: {} },
  );
  const drop = async (table: string, rows: Row[]) => {
    await write(table, rows);
    await exports.poll();
    await exports.poll();
    expect(log.error).not.toHaveBeenCalled();
  };
  return { origin, drop, firstAt: tenMinutesAgo };
}

/** A request to project `default`'s REST API: an edge_logs record. */
function edgeRecord(id: string, timestamp: string): Row {
  return edgeLog(timestamp, {
    id,
    project: "default",
    message: `GET | 200 | ${id}`,
    metadata: [edgeMetadata(request("/rest/v1/todos", "default"))],
  });
}

/** Stores one more edge_logs record in the demo tables: `select`, a SELECT of its columns. */
async function storeEdgeRecord(select: string) {
  const connection = await demo.engine.connect();
  try {
    await connection.run(`CREATE OR REPLACE TEMP TABLE new_record AS ${select}`);
    await connection.run("BEGIN TRANSACTION");
    await appendRecords(connection, "edge_logs", "new_record");
    await connection.run("COMMIT");
    await connection.run("DROP TABLE new_record");
  } finally {
    connection.closeSync();
  }
}

interface Envelope {
  result: Record<string, unknown>[];
  error: { code: string; message: string; details?: { param: string; message: string }[] };
}

/** What the service answers the test itself for `path`, with `key`. */
async function api(path: string, key = KEY): Promise<{ status: number; body: Envelope }> {
  const response = await fetch(`${base}${path}`, { headers: { "x-api-key": key } });
  return { status: response.status, body: (await response.json()) as Envelope };
}

/**
 * The endpoint's answer `url` asked for: a request the page made, its GET or its watch (whose
 * values are the GET's answers).
 */
const answered = (url: string) => {
  const answer = new URL(url);
  answer.pathname = answer.pathname.replace(/\/watch$/, "");
  return answer;
};

/** The rows the service answers the test for the query of `url`, a request the page made. */
async function rowsAt(url: string): Promise<Record<string, unknown>[]> {
  const response = await fetch(answered(url), { headers: { "x-api-key": KEY } });
  expect(response.status).toBe(200);
  return ((await response.json()) as Envelope).result;
}

/**
 * examples/endpoints/auth.failures-per-hour in a folder of its own, made to answer any time range
 * (`buckets`, in place of its `period`, which loses its default): its DuckDB SQL counts per bucket
 * of the range's size (an hour without one) up to the range's end. The folder, for ENDPOINTS_DIR.
 */
async function rangedOperatorEndpoint(): Promise<string> {
  const examples = new URL("../../examples/endpoints/", import.meta.url).pathname;
  const folder = await mkdtemp(join(tmpdir(), "explorer-range-"));
  closers.push(() => rm(folder, { recursive: true, force: true }));
  const endpoint = join(folder, "auth.failures-per-hour");
  await cp(join(examples, "auth.failures-per-hour"), endpoint, { recursive: true });
  // The embedded engine's SQL only: the service serves it there.
  await rm(join(endpoint, "bigquery.sql"));
  const definition = join(endpoint, "endpoint.yaml");
  await writeFile(
    definition,
    `${(await readFile(definition, "utf8"))
      .replace("    default: day\n", "")
      .replace("  project: default\n", "  project: default\n  period: day\n")}\nbuckets: {}\n`,
  );
  const sql = join(endpoint, "duckdb.sql");
  await writeFile(
    sql,
    (await readFile(sql, "utf8"))
      .replace(
        "date_trunc('hour', t.timestamp) AS hour",
        "to_timestamp(floor(epoch(t.timestamp) / b.seconds) * b.seconds) AS hour",
      )
      .replace(
        "FROM edge_logs AS t",
        "FROM edge_logs AS t, (SELECT coalesce(CAST($bucket_seconds AS BIGINT), 3600) AS seconds) AS b",
      )
      .replace(
        "AND t.timestamp >= CAST($window_start AS TIMESTAMPTZ)",
        "AND t.timestamp >= CAST($window_start AS TIMESTAMPTZ)\n  AND t.timestamp <= CAST($window_end AS TIMESTAMPTZ)",
      ),
  );
  return folder;
}

interface Opened {
  page: Page;
  requests: Request[];
  consoleErrors: string[];
}

/**
 * The page in a fresh browser context (empty sessionStorage), `width` px wide, in the browser's
 * time zone `timezoneId` (the machine's when absent), with its requests, errors and charts recorded.
 */
async function openExplorer(
  query = "",
  origin = base,
  width = 1280,
  timezoneId?: string,
): Promise<Opened> {
  const context = await browser.newContext({
    viewport: { width, height: 900 },
    ...(timezoneId && { timezoneId }),
  });
  await context.addInitScript(recordPlots);
  await context.addInitScript(recordCanvasText);
  const page = await context.newPage();
  const requests: Request[] = [];
  const consoleErrors: string[] = [];
  page.on("request", (request) => requests.push(request));
  page.on("console", (message) => {
    if (message.type() === "error") consoleErrors.push(message.text());
  });
  page.on("pageerror", (error) => consoleErrors.push(String(error)));
  await page.goto(`${origin}/${query}`);
  return { page, requests, consoleErrors };
}

/** Each chart of `panel`: its series' labels and its x values (epoch seconds), as uPlot holds them. */
function plotted(page: Page, panel: string): Promise<{ series: string[]; x: number[] }[]> {
  return page.evaluate((selector) => {
    interface Plot {
      root: { parentElement: unknown };
      series: { label: string }[];
      data: number[][];
    }
    const page = globalThis as unknown as {
      plots: Plot[];
      document: { querySelectorAll(selector: string): Iterable<unknown> };
    };
    return [...page.document.querySelectorAll(`${selector} .chart`)].map((chart) => {
      const plot = page.plots.find((candidate) => candidate.root.parentElement === chart);
      if (!plot) throw new Error(`no chart recorded for ${selector}`);
      return { series: plot.series.slice(1).map((each) => each.label), x: plot.data[0] ?? [] };
    });
  }, panel);
}

/** A request for data, with the key: under /api, or the document (the rows' columns). */
const callsApi = (request: Request) => {
  const { pathname } = new URL(request.url());
  return pathname.startsWith("/api") || pathname === "/openapi.json";
};

async function enterKey(page: Page, key = KEY) {
  await page.fill("#api-key", key);
  await page.click("text=Use key");
}

const attribute = (page: Page, selector: string, name: string) =>
  page.locator(selector).first().getAttribute(name);

/** Selects `value` in the panel's `param` select and runs it; resolves once it is drawn again. */
async function runWith(page: Page, panel: string, param: string, value: string) {
  const draws = Number(await attribute(page, panel, "data-draws"));
  await page.selectOption(`${panel} select[name="${param}"]`, value);
  await page.click(`${panel} button[type="submit"]`);
  await page.waitForSelector(`${panel}[data-draws="${draws + 1}"]`);
}

/** The page's window, for what tests read in it: types of the DOM are not in this program's. */
interface InPage {
  getComputedStyle(element: unknown): Record<string, string>;
}

/** A label as drawn on the x axis: its text and its box's left and right edge, in CSS px. */
interface AxisLabel {
  text: string;
  left: number;
  right: number;
}

/**
 * Before the page's scripts run: keeps every uPlot chart the page makes in `window.plots`. uPlot
 * draws its axes on a canvas, so the labels are read from the chart, not from the DOM.
 */
function recordPlots() {
  const page = globalThis as unknown as Record<string, unknown>;
  const plots: unknown[] = [];
  let recorded: unknown;
  page.plots = plots;
  // uPlot's build assigns the global `uPlot`; the page reads it from there.
  Object.defineProperty(page, "uPlot", {
    configurable: true,
    get: () => recorded,
    set: (uPlot: new (...args: unknown[]) => object) => {
      recorded = new Proxy(uPlot, {
        construct(target, args) {
          const plot = new target(...args);
          plots.push(plot);
          return plot;
        },
      });
    },
  });
}

/** A text drawn on a canvas: its box, in the canvas's pixels, as measured when it was drawn. */
interface DrawnText {
  text: string;
  left: number;
  right: number;
  top: number;
  bottom: number;
}

/**
 * Before the page's scripts run: keeps on each canvas (as `drawnText`) the box of every text drawn
 * on it since it was last cleared whole, with the alignment, baseline, font and rotation it was
 * drawn with. uPlot draws all of a chart's axis labels so, and clears its canvas before each draw.
 */
function recordCanvasText() {
  interface Point {
    x: number;
    y: number;
  }
  interface Context {
    canvas: { width: number; height: number; drawnText?: DrawnText[] };
    measureText(text: string): {
      actualBoundingBoxLeft: number;
      actualBoundingBoxRight: number;
      actualBoundingBoxAscent: number;
      actualBoundingBoxDescent: number;
    };
    getTransform(): { transformPoint(point: Point): Point };
  }
  type Draw = (this: Context, ...args: number[]) => void;
  type FillText = (this: Context, text: string, x: number, y: number) => void;
  const prototype = (
    globalThis as unknown as {
      CanvasRenderingContext2D: { prototype: { fillText: FillText; clearRect: Draw } };
    }
  ).CanvasRenderingContext2D.prototype;
  const { fillText, clearRect } = prototype;
  prototype.clearRect = function (this: Context, x, y, width, height) {
    if (x === 0 && y === 0 && width === this.canvas.width && height === this.canvas.height) {
      this.canvas.drawnText = [];
    }
    clearRect.call(this, x, y, width, height);
  } as Draw;
  prototype.fillText = function (this: Context, text: string, x: number, y: number) {
    const box = this.measureText(text);
    const transform = this.getTransform();
    const corners = [
      [x - box.actualBoundingBoxLeft, y - box.actualBoundingBoxAscent],
      [x + box.actualBoundingBoxRight, y - box.actualBoundingBoxAscent],
      [x - box.actualBoundingBoxLeft, y + box.actualBoundingBoxDescent],
      [x + box.actualBoundingBoxRight, y + box.actualBoundingBoxDescent],
    ].map(([cornerX = 0, cornerY = 0]) => transform.transformPoint({ x: cornerX, y: cornerY }));
    const xs = corners.map((corner) => corner.x);
    const ys = corners.map((corner) => corner.y);
    this.canvas.drawnText ??= [];
    this.canvas.drawnText.push({
      text,
      left: Math.min(...xs),
      right: Math.max(...xs),
      top: Math.min(...ys),
      bottom: Math.max(...ys),
    });
    fillText.call(this, text, x, y);
  };
}

/** Each chart's canvas in `panel`: its size in pixels, and the texts drawn on it (its labels). */
function drawnTexts(
  page: Page,
  panel: string,
): Promise<{ width: number; height: number; texts: DrawnText[] }[]> {
  return page.locator(`${panel} .chart canvas`).evaluateAll((canvases) =>
    canvases.map((canvas) => {
      const { width, height, drawnText } = canvas as unknown as {
        width: number;
        height: number;
        drawnText?: DrawnText[];
      };
      return { width, height, texts: drawnText ?? [] };
    }),
  );
}

/** The x-axis labels of each chart in `panel`, with the box each takes in the axis's font. */
function xAxisLabels(page: Page, panel: string): Promise<AxisLabel[][]> {
  return page.evaluate((selector) => {
    interface Plot {
      root: { parentElement: unknown };
      axes: { font: [string]; _splits: number[]; _values: (string | null)[] }[];
      valToPos(value: number, scale: string): number;
    }
    interface Context {
      font: string;
      measureText(text: string): { width: number };
    }
    const page = globalThis as unknown as {
      plots: Plot[];
      devicePixelRatio: number;
      document: {
        querySelectorAll(selector: string): Iterable<unknown>;
        createElement(tag: "canvas"): { getContext(kind: "2d"): Context };
      };
    };
    const context = page.document.createElement("canvas").getContext("2d");
    return [...page.document.querySelectorAll(`${selector} .chart`)].map((chart) => {
      const plot = page.plots.find((candidate) => candidate.root.parentElement === chart);
      const axis = plot?.axes[0];
      if (!plot || !axis) throw new Error(`no chart recorded for ${selector}`);
      // The axis's font is scaled by the device pixel ratio, as the canvas is.
      context.font = axis.font[0];
      return axis._splits.flatMap((split, i) => {
        const text = axis._values[i];
        if (text == null) return [];
        const lines = String(text).split("\n");
        const width =
          Math.max(...lines.map((line) => context.measureText(line).width)) / page.devicePixelRatio;
        const at = plot.valToPos(split, "x");
        return [{ text: String(text), left: at - width / 2, right: at + width / 2 }];
      });
    });
  }, panel);
}

describe("the explorer page", () => {
  it("loads with no key, no console error and no other host; the key draws one point per row", async () => {
    const { page, requests, consoleErrors } = await openExplorer();
    await expect(page.title()).resolves.toBe("Log & usage query explorer");
    const served = await fetch(`${base}/`);
    expect(served.status).toBe(200);
    expect(served.headers.get("content-security-policy")).toMatch(
      /^default-src 'none'; script-src 'self'; style-src 'self';.* connect-src 'self';/,
    );
    expect(requests.some(callsApi)).toBe(false);

    await enterKey(page);
    await page.waitForSelector(`${STATS} .chart[data-points]`);
    await page.waitForSelector(`${USAGE} .chart[data-points]`);
    await page.waitForSelector(`${LOGS} table`);

    const rows = (
      await api("/api/endpoints/functions.invocation-stats?project=default&interval=1hr")
    ).body.result;
    expect(rows.length).toBeGreaterThan(0);
    for (const chart of await page.locator(`${STATS} .chart`).all()) {
      expect(await chart.getAttribute("data-points")).toBe(String(rows.length));
    }
    // Watched: each value comes with its freshness, as the comment lines of its event give it.
    await expect(page.locator(`${STATS} [data-field="mode"]`).textContent()).resolves.toBe(
      "watching (live)",
    );
    await expect(
      page.locator(`${STATS} [data-field="cache-status"]`).textContent(),
    ).resolves.toMatch(/^Cache-Status: query-service; /);
    await expect(page.locator(`${STATS} [data-field="age"]`).textContent()).resolves.toMatch(
      /^Age: \d+ s$/,
    );
    await expect(page.locator(`${LOGS} [data-field="mode"]`).textContent()).resolves.toBe(
      "polling every 10 s",
    );
    await expect(page.locator(`${STATS} [data-field="request-id"]`).textContent()).resolves.toMatch(
      /^request id [\w.-]+$/,
    );

    // The key travels as a header from sessionStorage, never in a URL.
    const calls = requests.filter(callsApi);
    expect(calls.length).toBeGreaterThanOrEqual(4);
    for (const call of calls) {
      expect(call.url()).not.toContain(KEY);
      expect(call.headers()["x-api-key"]).toBe(KEY);
    }
    await expect(page.evaluate(() => Object.values(sessionStorage))).resolves.toEqual([KEY]);

    for (const request of requests) expect(new URL(request.url()).origin).toBe(base);
    expect(consoleErrors).toEqual([]);

    // What the page itself weighs: every non-API response, headers and body as transferred.
    let weight = 0;
    for (const request of requests.filter((r) => !callsApi(r))) {
      const sizes = await request.sizes();
      weight += sizes.responseHeadersSize + sizes.responseBodySize;
    }
    console.log(`explorer page weight: ${weight} bytes`);
    expect(weight).toBeGreaterThan(20_000);
    expect(weight).toBeLessThan(300_000);

    await page.screenshot({ path: `${ARTIFACTS}explorer.png`, fullPage: true });

    // The stacked chart's legend gives each area's own count, not the running sum drawn.
    const usage = await api(`/api/endpoints/usage.api-counts?project=default&interval=hourly`);
    const newest = usage.body.result.at(-1) ?? {};
    const plot = page.locator(`${USAGE} .u-over`);
    const box = await plot.boundingBox();
    await plot.hover({ position: { x: (box?.width ?? 1) - 1, y: (box?.height ?? 0) / 2 } });
    const legend = await page.locator(`${USAGE} .u-legend .u-value`).allTextContents();
    expect(legend.slice(1)).toEqual(
      ["rest", "storage", "auth", "realtime"].map((area) =>
        String(newest[`total_${area}_requests`]),
      ),
    );
    await page.context().close();
  });

  it("where a watch cannot open, polls and says why: a 304 keeps the chart, a changed value redraws it", async () => {
    const { page, requests, consoleErrors } = await openExplorer("?refresh=1");
    const overloaded = { code: "overloaded", message: "No stream for now." };
    await page.route("**/watch?*", (route) =>
      route.fulfill({
        status: 503,
        contentType: "application/json",
        body: JSON.stringify({ error: overloaded }),
      }),
    );
    await enterKey(page);
    await page.waitForSelector(`${STATS}[data-draws="1"]`);
    await expect(page.locator(`${STATS} [data-field="mode"]`).textContent()).resolves.toBe(
      `polling every 1 s: 503 ${overloaded.code}: ${overloaded.message}`,
    );
    const canvas = await page.$(`${STATS} canvas`);

    await page.waitForSelector(`${STATS} [data-field="status"]:text-is("HTTP 304")`);
    expect(await attribute(page, STATS, "data-draws")).toBe("1");
    expect(await canvas?.evaluate((element) => element.isConnected)).toBe(true);
    // The ETag the page read from the answer is the one it sends back.
    const served = await fetch(
      `${base}/api/endpoints/functions.invocation-stats?project=default&interval=1hr`,
      { headers: { "x-api-key": KEY } },
    );
    const conditional = requests.filter(
      (request) =>
        request.url().includes("/api/endpoints/functions.invocation-stats") &&
        request.headers()["if-none-match"],
    );
    expect(conditional.length).toBeGreaterThan(0);
    for (const request of conditional) {
      expect(request.headers()["if-none-match"]).toBe(served.headers.get("etag"));
    }

    // New invocations in the last half minute, and the cached answer past its TTL.
    const connection = await demo.engine.connect();
    try {
      await generateLogs(connection, {
        now: dateToMicros(new Date()),
        days: 30 / 86_400,
        edgeLogs: 0,
        functionEdgeLogs: 500,
      });
    } finally {
      connection.closeSync();
    }
    cacheClock.offsetMs += TTL_MS + 1_000;

    await page.waitForSelector(`${STATS}[data-draws="2"]`);
    await expect(page.locator(`${STATS} [data-field="x-cache"]`).textContent()).resolves.toBe(
      "X-Cache: MISS",
    );
    const rows = (
      await api("/api/endpoints/functions.invocation-stats?project=default&interval=1hr")
    ).body.result;
    expect(await attribute(page, `${STATS} .chart`, "data-points")).toBe(String(rows.length));
    // The browser reports the refused watches, and nothing else.
    for (const error of consoleErrors) expect(error).toMatch(/status of 503/);
    await page.context().close();
  });

  it("shows data and says it polls when the service refuses a watch or a live tail", async () => {
    // No stream for any credential: each is refused with a 429.
    const origin = await otherService(
      { cache: CACHE, follow: { maxPerCredential: 0 } },
      { cache: {} },
    );
    const refused = await fetch(
      `${origin}/api/endpoints/functions.invocation-stats/watch?${STATS_QUERY}`,
      { headers: { "x-api-key": KEY, accept: "text/event-stream" } },
    );
    expect(refused.status).toBe(429);
    const { error } = (await refused.json()) as Envelope;
    const polling = `polling every 1 s: 429 ${error.code}: ${error.message}`;

    const { page } = await openExplorer("?refresh=1", origin);
    await enterKey(page);
    for (const panel of [STATS, USAGE]) {
      await page.waitForSelector(`${panel}[data-mode="polling"] .chart[data-points]`);
      await expect(page.locator(`${panel} [data-field="mode"]`).textContent()).resolves.toBe(
        polling,
      );
    }
    // The value that service holds, which the page was given.
    const held = await fetch(`${origin}/api/endpoints/functions.invocation-stats?${STATS_QUERY}`, {
      headers: { "x-api-key": KEY },
    });
    const rows = ((await held.json()) as Envelope).result;
    expect(await attribute(page, `${STATS} .chart`, "data-points")).toBe(String(rows.length));
    // And it does poll: the next answer is a 304.
    await page.waitForSelector(`${STATS} [data-field="status"]:text-is("HTTP 304")`);

    await page.waitForSelector(`${LOGS} table`);
    await page.check(`${LOGS} .live-toggle`);
    await page.waitForSelector(
      `${LOGS}[data-mode="polling"] [data-field="mode"]:text-is("${polling}")`,
    );
    await expect(page.locator(`${LOGS} tbody tr`).count()).resolves.toBeGreaterThan(0);
    await expect(page.locator(`${LOGS} .stale-label`).isHidden()).resolves.toBe(true);
    await page.context().close();
  });

  it("redraws a watched chart within a second of the service storing a new value, with no request of its own", async () => {
    const service = await exportsService();
    const { page, requests, consoleErrors } = await openExplorer("?refresh=1", service.origin);
    await enterKey(page);
    await page.waitForSelector(`${STATS}[data-mode="watching"][data-draws="1"]`);
    const drawnCounts = () =>
      page.evaluate((selector) => {
        const page = globalThis as unknown as {
          plots: { root: { parentElement: unknown }; data: number[][] }[];
          document: { querySelector(selector: string): unknown };
        };
        const chart = page.document.querySelector(`${selector} .chart[data-title^="count "]`);
        return page.plots.find((plot) => plot.root.parentElement === chart)?.data[1];
      }, STATS);
    expect(await drawnCounts()).toEqual([1]);
    const asked = requests.length;

    // Five more invocations, and the service asked (by the test, not the page) to recompute.
    const fiveMinutesAgo = new Date(Date.now() - 300_000).toISOString();
    await service.drop(
      "function_edge_logs",
      Array.from({ length: 5 }, () => functionCall(fiveMinutesAgo, { project: "default" })),
    );
    const refreshed = await fetch(
      `${service.origin}/api/endpoints/functions.invocation-stats?${STATS_QUERY}`,
      { headers: { "x-api-key": KEY, "cache-control": "no-cache" } },
    );
    expect(refreshed.headers.get("x-cache")).toBe("REFRESH");
    const rows = ((await refreshed.json()) as Envelope).result;

    await page.waitForSelector(`${STATS}[data-draws="2"]`, { timeout: 1_000 });
    const counts = rows.map((row) => row.count as number);
    expect(await drawnCounts()).toEqual(counts);
    expect(counts.reduce((sum, count) => sum + count)).toBe(6);
    expect(requests.slice(asked).map((r) => r.url())).toEqual([]);
    await expect(page.locator(`${STATS} [data-field="mode"]`).textContent()).resolves.toBe(
      "watching (live)",
    );
    expect(consoleErrors).toEqual([]);
    await page.context().close();
  });

  it("reopens a watch that ended after the interval, from the value drawn, waiting out a 503", async () => {
    const { page, requests } = await openExplorer("?refresh=1");
    const rows = (await api(`/api/endpoints/functions.invocation-stats?${STATS_QUERY}`)).body
      .result;
    // The first stream sends a value, then ends as a service shutting down would; the next is
    // refused as a restarting service would; the third is the service's own.
    let opened = 0;
    await page.route("**/functions.invocation-stats/watch?*", (route) => {
      opened++;
      if (opened > 2) return route.continue();
      if (opened === 2) {
        return route.fulfill({
          status: 503,
          contentType: "application/json",
          body: JSON.stringify({ error: { code: "shutting_down", message: "Restarting." } }),
        });
      }
      return route.fulfill({
        status: 200,
        contentType: "text/event-stream; charset=utf-8",
        body: [
          ": cache-status: query-service; hit; ttl=900",
          ": age: 0",
          "event: result",
          'id: "drawn"',
          `data: ${JSON.stringify({ result: rows })}`,
          "",
          ": keep-alive",
          "",
          "event: end",
          'data: {"reason":"shutting_down"}',
          "",
          "",
        ].join("\n"),
      });
    });
    await enterKey(page);
    // One look at the whole state: a second later the page has reopened, and says so.
    await page.waitForSelector(
      `${STATS}[data-mode="reopening"][data-draws="1"]` +
        `:has([data-field="mode"]:text-is("reconnecting in 1 s: the stream ended (shutting_down)"))` +
        `:has([data-field="cache-status"]:text-is("Cache-Status: query-service; hit; ttl=900"))`,
    );
    await page.waitForSelector(
      `${STATS}[data-mode="reopening"]` +
        `:has([data-field="mode"]:text-is("reconnecting in 1 s: 503 shutting_down: Restarting."))`,
    );
    // The service's value has another ETag than "drawn": it is sent, and drawn.
    await page.waitForSelector(`${STATS}[data-mode="watching"][data-draws="2"]`);
    const watches = requests.filter((r) => r.url().includes("/functions.invocation-stats/watch"));
    expect(watches.map((r) => r.headers()["last-event-id"])).toEqual([
      undefined,
      '"drawn"',
      '"drawn"',
    ]);
    await page.context().close();
  });

  it("closes its streams while paused, and reopens them from what is drawn", async () => {
    const { page, requests } = await openExplorer();
    const aborted: string[] = [];
    page.on("requestfailed", (request) => aborted.push(new URL(request.url()).pathname));
    await enterKey(page);
    await page.waitForSelector(`${STATS}[data-mode="watching"][data-draws="1"]`);
    await page.waitForSelector(`${USAGE}[data-mode="watching"][data-draws="1"]`);
    const served = await fetch(`${base}/api/endpoints/functions.invocation-stats?${STATS_QUERY}`, {
      headers: { "x-api-key": KEY },
    });

    await page.uncheck("#auto-refresh");
    for (const panel of [STATS, USAGE, LOGS]) {
      await page.waitForSelector(`${panel}[data-mode="paused"]`);
    }
    await expect
      .poll(() => aborted.toSorted())
      .toEqual([
        "/api/endpoints/functions.invocation-stats/watch",
        "/api/endpoints/usage.api-counts/watch",
      ]);

    const asked = requests.length;
    await page.check("#auto-refresh");
    await page.waitForSelector(`${STATS}[data-mode="watching"]`);
    await page.waitForSelector(`${USAGE}[data-mode="watching"]`);
    const reopened = requests
      .slice(asked)
      .find((r) => r.url().includes("/functions.invocation-stats/watch"));
    // What the service then sends for that ETag (nothing, until it changes) is test/http/watch.test.ts's.
    expect(reopened?.headers()["last-event-id"]).toBe(served.headers.get("etag"));
    await page.context().close();
  });

  it("adds the records a live tail receives to the logs.all table, newest first, and polls no more", async () => {
    const service = await exportsService();
    const { page, requests } = await openExplorer("?refresh=1", service.origin);
    await enterKey(page);
    await page.waitForSelector(`${LOGS} tr:has(td:text-is("first-record"))`);
    // An end, which a follow refuses, is left out of it.
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 19);
    await page.fill(`${LOGS} [name="iso_timestamp_end"]`, tomorrow);
    // A record stored while the stream opens, after the table's answer and before the follow's.
    let between = "";
    await page.route("**/api/endpoints/logs.all/follow?*", async (route) => {
      between = new Date().toISOString();
      await service.drop("edge_logs", [edgeRecord("between", between)]);
      await route.continue();
    });
    const asked = requests.length;
    await page.check(`${LOGS} .live-toggle`);
    await page.waitForSelector(`${LOGS}[data-mode="following"]`);
    await expect(page.locator(`${LOGS} [data-field="mode"]`).textContent()).resolves.toBe(
      "live: following new records",
    );

    const now = Date.now();
    await service.drop("edge_logs", [
      edgeRecord("live-1", new Date(now).toISOString()),
      edgeRecord("live-2", new Date(now + 1).toISOString()),
    ]);
    await page.waitForSelector(`${LOGS} tr:has(td:text-is("live-2"))`);
    const column = await page.locator(`${LOGS} thead th`).allTextContents();
    const ids = () =>
      page.locator(`${LOGS} tbody tr td:nth-child(${column.indexOf("id") + 1})`).allTextContents();
    await expect(ids()).resolves.toEqual(["live-2", "live-1", "between", "first-record"]);
    // The follow started just before the newest row drawn: that one came again, and was not added.
    await expect(page.locator(`${LOGS} [data-field="note"]`).textContent()).resolves.toBe(
      "4 rows, 3 arrived live",
    );
    // Two refresh intervals later, still nothing asked but the table once and the stream.
    await page.waitForTimeout(2_000);
    const logsUrls = () =>
      requests
        .slice(asked)
        .map((r) => new URL(r.url()))
        .filter((url) => url.pathname.startsWith("/api/endpoints/logs.all"));
    // From the table's answer on: a poll already due when Live was checked may come before it.
    const first = logsUrls().findIndex((url) => url.pathname.endsWith("/follow")) - 1;
    const logsCalls = () => logsUrls().slice(first);
    const [table, follow, ...more] = logsCalls();
    expect(more).toEqual([]);
    expect(table?.pathname).toBe("/api/endpoints/logs.all");
    expect(table?.searchParams.get("iso_timestamp_end")).toBe(`${tomorrow}Z`);
    expect(follow?.pathname).toBe("/api/endpoints/logs.all/follow");
    const newest = new Date(Date.parse(service.firstAt) - 1).toISOString();
    expect(Object.fromEntries(follow?.searchParams ?? [])).toEqual({
      project: "default",
      project_tier: "FREE",
      iso_timestamp_start: newest,
    });
    expect(between > newest).toBe(true);
    const followed = requests.find((r) => r.url().includes("/follow"));
    expect(followed?.headers()).toMatchObject({ "x-api-key": KEY, accept: "text/event-stream" });

    // Off, the table is asked at once and then again a refresh interval later: polled, not followed.
    await page.uncheck(`${LOGS} .live-toggle`);
    await page.waitForSelector(`${LOGS}[data-mode="polling"]`);
    await expect.poll(() => logsCalls().length).toBeGreaterThan(3);
    const polled = new Set(
      logsCalls()
        .slice(2)
        .map((url) => url.pathname),
    );
    expect(polled).toEqual(new Set(["/api/endpoints/logs.all"]));
    await expect(ids()).resolves.toEqual(["live-2", "live-1", "between", "first-record"]);
    await page.context().close();
  });

  it("shows a 400's message beside the timestamp it names", async () => {
    const { page } = await openExplorer();
    await enterKey(page);
    await page.waitForSelector(`${LOGS} table`);
    // A datetime input takes years past 9999, which the service refuses.
    await page.fill(`${LOGS} [name="iso_timestamp_start"]`, "10000-01-01T00:00");
    await page.click(`${LOGS} button[type="submit"]`);

    const expected = await api(
      "/api/endpoints/logs.all?project=default&project_tier=FREE&iso_timestamp_start=10000-01-01T00:00:00Z",
    );
    expect(expected.status).toBe(400);
    const [detail] = expected.body.error.details ?? [];
    expect(detail?.param).toBe("iso_timestamp_start");
    await page.waitForSelector(`${LOGS} .field.invalid[data-param="iso_timestamp_start"]`);
    const fieldError = page.locator(`${LOGS} [data-error-for="iso_timestamp_start"]`);
    expect(await fieldError.textContent()).toBe(detail?.message);
    expect(await page.locator(`${LOGS} .error`).textContent()).toContain(
      expected.body.error.message,
    );
    await page.screenshot({ path: `${ARTIFACTS}explorer-bad-timestamp.png`, fullPage: true });
    await page.context().close();
  });

  it("marks what is drawn as not current after a 400 or a 502, until an answer comes", async () => {
    // The engine fails the daily statistics only, so that a chart is drawn first.
    const failing = await serviceFailing(
      (request) =>
        request.endpoint === "functions.invocation-stats" && request.params.interval === "1day",
    );
    const { page } = await openExplorer("", failing);
    await enterKey(page);
    await page.waitForSelector(`${STATS} .chart[data-points]`);
    await page.waitForSelector(`${LOGS} table`);
    const notCurrent = async (panel: string) => ({
      label: (await page.locator(`${panel} .stale-label`).isVisible())
        ? await page.locator(`${panel} .stale-label`).textContent()
        : null,
      opacity: await page
        .locator(`${panel} .view`)
        .evaluate((view) =>
          Number((globalThis as unknown as InPage).getComputedStyle(view).opacity),
        ),
    });
    await expect(notCurrent(STATS)).resolves.toEqual({ label: null, opacity: 1 });

    await page.selectOption(`${STATS} select[name="interval"]`, "1day");
    await page.click(`${STATS} button[type="submit"]`);
    await page.waitForSelector(`${STATS} .error:not([hidden])`);
    const failed = await notCurrent(STATS);
    expect(failed.label).toBe("not current: 502 engine_error: The query failed in the engine.");
    expect(failed.opacity).toBeLessThan(1);
    await expect(page.locator(`${STATS} .chart`).count()).resolves.toBe(2);

    await runWith(page, STATS, "interval", "1hr");
    await expect(notCurrent(STATS)).resolves.toEqual({ label: null, opacity: 1 });

    await page.fill(`${LOGS} [name="iso_timestamp_start"]`, "10000-01-01T00:00");
    await page.click(`${LOGS} button[type="submit"]`);
    await page.waitForSelector(`${LOGS} .error:not([hidden])`);
    const refused = await api(
      "/api/endpoints/logs.all?project=default&project_tier=FREE&iso_timestamp_start=10000-01-01T00:00:00Z",
    );
    const invalid = await notCurrent(LOGS);
    expect(invalid.label).toBe(`not current: 400 invalid_params: ${refused.body.error.message}`);
    expect(invalid.opacity).toBeLessThan(1);
    await page.screenshot({ path: `${ARTIFACTS}explorer-not-current.png`, fullPage: true });
    await page.context().close();
  });

  it("shows the 401 message for a wrong key", async () => {
    const wrong = "not-the-key-0123456789";
    const { page } = await openExplorer();
    await enterKey(page, wrong);
    const expected = await api("/api/endpoints", wrong);
    expect(expected.status).toBe(401);
    await page.waitForSelector("#key-message:not([hidden])");
    expect(await page.locator("#key-message").textContent()).toBe(
      `401 unauthorized: ${expected.body.error.message}`,
    );
    await page.context().close();
  });

  it("keeps the key in use when Use key is pressed with the field empty, and says so", async () => {
    const { page, requests } = await openExplorer();
    await enterKey(page, "");
    await page.waitForSelector("#key-note:not([hidden])");
    expect(await page.locator("#key-note").textContent()).toBe("No key entered.");
    const apiCalls = () => requests.filter(callsApi);
    expect(apiCalls()).toEqual([]);

    await enterKey(page);
    await page.waitForSelector(`${LOGS} table`);
    await expect(page.locator("#key-note").isHidden()).resolves.toBe(true);
    const calls = apiCalls().length;
    await enterKey(page, "   ");
    await page.waitForSelector("#key-note:not([hidden])");
    expect(await page.locator("#key-note").textContent()).toBe(
      "The field was empty: still using the key in use.",
    );
    await expect(page.evaluate(() => Object.values(sessionStorage))).resolves.toEqual([KEY]);
    await expect(page.locator("#key-message").isHidden()).resolves.toBe(true);
    await expect(page.locator(`${LOGS} table`).isVisible()).resolves.toBe(true);
    // Nothing was asked again, and never with an empty key.
    expect(apiCalls()).toHaveLength(calls);
    for (const call of apiCalls()) expect(call.headers()["x-api-key"]).toBe(KEY);
    await page.context().close();
  });

  it("with no key, says where one comes from", async () => {
    const { page } = await openExplorer();
    const help = page.locator("#no-key");
    await expect(help.isVisible()).resolves.toBe(true);
    const text = (await help.textContent())?.replace(/\s+/g, " ");
    expect(text).toContain("npm start prints a generated key at startup");
    expect(text).toContain("npm run key");
    expect(text).toContain("API_KEYS_FILE");

    await enterKey(page);
    await page.waitForSelector(`${LOGS} table`);
    await expect(help.isVisible()).resolves.toBe(false);
    await page.click("text=Forget key");
    await expect(help.isVisible()).resolves.toBe(true);
    await page.context().close();
  });

  it("shows a 429's and a 502's message as the envelope gives it, with Retry-After", async () => {
    // Two requests a minute: the catalog and one endpoint's answer.
    const limited = await otherService({ rateLimitPerMinute: 2 });
    const { page } = await openExplorer("", limited);
    await enterKey(page);
    // The three endpoints are asked at once, in any order: two of them are refused.
    const refused = page.locator(".endpoint .error:not([hidden])");
    await expect.poll(() => refused.count()).toBe(2);
    for (const text of await refused.allTextContents()) {
      expect(text).toMatch(
        /^429 rate_limited: More than 2 requests a minute with this credential; retry in .+\. Retry after \d+ s\.$/,
      );
    }
    await page.context().close();

    const failing = await serviceFailing(
      (request) => request.endpoint === "functions.invocation-stats",
    );
    const broken = await openExplorer("", failing);
    await enterKey(broken.page);
    await broken.page.waitForSelector(`${STATS} .error:not([hidden])`);
    expect(await broken.page.locator(`${STATS} .error`).textContent()).toBe(
      "502 engine_error: The query failed in the engine.",
    );
    await expect(
      broken.page.locator(`${STATS} [data-field="request-id"]`).textContent(),
    ).resolves.toMatch(/^request id [\w.-]+$/);
    await broken.page.waitForSelector(`${LOGS} table`);
    await broken.page.context().close();
  });

  it("offers what a scoped token may call, its fixed values greyed out and left to the service", async () => {
    const secret = "explorer-test-secret-0123456789abcdef";
    const scoped = await otherService(
      { auth: { apiKeys: [] } },
      { tokens: createTokenVerifier({ secret, maxLifetimeSeconds: 600 }) },
    );
    const token = await new SignJWT({
      scopes: [{ endpoint: "functions.invocation-stats", fixed_params: { project: "staging" } }],
    })
      .setProtectedHeader({ alg: "HS256" })
      .setSubject("staging-dashboard")
      .setIssuedAt()
      .setExpirationTime("5m")
      .sign(new TextEncoder().encode(secret));
    const { page, requests } = await openExplorer("", scoped);
    await enterKey(page, token);
    await page.waitForSelector(`${STATS} .chart[data-points]`);

    await expect(page.locator(".endpoint").count()).resolves.toBe(1);
    const project = page.locator(`${STATS} [name="project"]`);
    await expect(project.isDisabled()).resolves.toBe(true);
    await expect(project.inputValue()).resolves.toBe("staging");
    await expect(
      page.locator(`${STATS} select[name="interval"] option`).allTextContents(),
    ).resolves.toEqual(["5min", "15min", "1hr", "1day", "7day"]);
    const call = requests.find((r) => r.url().includes("/api/endpoints/functions"));
    expect(new URL(call?.url() ?? "").search).toBe("?interval=1hr");

    const response = await fetch(
      `${scoped}/api/endpoints/functions.invocation-stats?interval=1hr`,
      {
        headers: { "x-api-key": token },
      },
    );
    const rows = ((await response.json()) as Envelope).result;
    expect(await attribute(page, `${STATS} .chart`, "data-points")).toBe(String(rows.length));
    await page.context().close();
  });

  it("shows an operator's endpoint (ENDPOINTS_DIR) as a panel of its own, its form from its definition, its hourly series as a chart", async () => {
    const examples = new URL("../../examples/endpoints/", import.meta.url).pathname;
    const operators = await otherService(
      {},
      {
        catalog: loadCatalog([BUILT_IN_ENDPOINTS, examples]),
      },
    );
    const { page, requests } = await openExplorer("", operators);
    await enterKey(page, KEY);
    const panel = '[data-endpoint="auth.failures-per-hour"]';
    await page.waitForSelector(`${panel}:not([data-draws="0"])`);
    await expect(page.locator(`${panel} [name="project"]`).inputValue()).resolves.toBe("default");
    // An optional parameter left empty means its default, which the empty choice or field shows.
    await expect(
      page.locator(`${panel} select[name="period"] option`).allTextContents(),
    ).resolves.toEqual(["default (day)", "day", "week"]);
    await expect(
      page.locator(`${STATS} input[name="max_points"]`).getAttribute("placeholder"),
    ).resolves.toBe("300");
    // One time column and a count: a chart of it, one point per row of what the page asked.
    const asked = requests.find((r) => r.url().includes("/api/endpoints/auth.failures-per-hour"));
    const rows = await rowsAt(asked?.url() ?? "");
    expect(rows.length).toBeGreaterThan(0);
    await expect(page.locator(`${panel} .table`).count()).resolves.toBe(0);
    await expect(page.locator(`${panel} .chart`).count()).resolves.toBe(1);
    expect(await attribute(page, `${panel} .chart`, "data-points")).toBe(String(rows.length));
    await expect(plotted(page, panel)).resolves.toEqual([
      {
        series: ["failures"],
        x: rows.map((row) => Date.parse(String(row.hour)) / 1000),
      },
    ]);
    await page.context().close();
  });

  it("draws a range picked on an operator's endpoint that takes one, sent as from/to in place of its span, a last-hours one moving with now", async () => {
    // Watched: its cache is on, a cache of its own.
    const operators = await otherService(
      { cache: CACHE },
      { cache: {}, catalog: loadCatalog([BUILT_IN_ENDPOINTS, await rangedOperatorEndpoint()]) },
    );
    const { page, requests, consoleErrors } = await openExplorer("?refresh=1", operators);
    await enterKey(page, KEY);
    const panel = '[data-endpoint="auth.failures-per-hour"]';
    await page.waitForSelector(`${panel}:not([data-draws="0"])`);
    const asked = (since: number) =>
      requests
        .slice(since)
        .map((request) => answered(request.url()))
        .filter((url) => url.pathname === "/api/endpoints/auth.failures-per-hour");
    /** Picks `range` and runs the form; the query it sent, once its answer is drawn. */
    const pick = async (range: string, fill?: () => Promise<void>) => {
      await page.selectOption(`${panel} select.range-picker`, range);
      await fill?.();
      // Counted from the click: a range moving with now is polled until the form is sent again,
      // and a poll may ask (and draw) the range picked before between the pick and the click.
      const since = requests.length;
      await page.click(`${panel} button[type="submit"]`);
      await expect.poll(() => asked(since).length).toBeGreaterThan(0);
      const [url] = asked(since) as [URL];
      // The points drawn are the rows of the answer to that query.
      const rows = await rowsAt(url.href);
      await expect
        .poll(() => attribute(page, `${panel} .chart`, "data-points"))
        .toBe(String(rows.length));
      return url.searchParams;
    };

    const SIX_HOURS = 6 * 3_600_000;
    const before = Date.now();
    const last = await pick(String(SIX_HOURS));
    expect([...last.keys()].sort()).toEqual(["from", "project", "to"]);
    const to = Number(last.get("to"));
    expect(to).toBeGreaterThanOrEqual(before);
    expect(to - Number(last.get("from"))).toBe(SIX_HOURS);
    // A range that moves with now is polled (a watch keeps one query), each time ending then.
    await expect(page.locator(`${panel} [data-field="mode"]`).textContent()).resolves.toBe(
      "polling every 1 s: the range moves with now",
    );
    await expect
      .poll(() => asked(0).some((url) => Number(url.searchParams.get("to")) > to), {
        timeout: 10_000,
      })
      .toBe(true);
    for (const url of asked(0).filter((each) => each.searchParams.has("from"))) {
      const { searchParams: moved } = url;
      expect(Number(moved.get("to")) - Number(moved.get("from"))).toBe(SIX_HOURS);
    }

    const custom = ["2026-11-28T06:00", "2026-11-28T18:30:15"].map((day) =>
      // The same wall times as yesterday's, read as UTC: within the endpoint's 90 days.
      new Date(Date.now() - 86_400_000).toISOString().slice(0, 10).concat(day.slice(10)),
    );
    const fixed = await pick("custom", async () => {
      await page.fill(`${panel} [data-param="from"] input`, custom[0] ?? "");
      await page.fill(`${panel} [data-param="to"] input`, custom[1] ?? "");
    });
    expect(Object.fromEntries(fixed)).toEqual({
      project: "default",
      from: String(Date.parse(`${custom[0]}:00Z`)),
      to: String(Date.parse(`${custom[1]}Z`)),
    });

    // A range the service refuses: its 400 beside the bound it names, what is drawn kept.
    await page.fill(`${panel} [data-param="from"] input`, custom[1] ?? "");
    await page.fill(`${panel} [data-param="to"] input`, custom[0] ?? "");
    await page.click(`${panel} button[type="submit"]`);
    await expect
      .poll(() => page.locator(`${panel} [data-error-for="from"]`).textContent())
      .toMatch(/^must be before to/);
    await expect(page.locator(`${panel} .chart`).count()).resolves.toBe(1);

    // No range: the span parameter again, as the endpoint answers without one.
    const none = await pick("");
    expect(Object.fromEntries(none)).toEqual({ project: "default", period: "day" });
    // The browser reports the refused range, and nothing else.
    expect(consoleErrors.length).toBeGreaterThan(0);
    for (const error of consoleErrors) expect(error).toMatch(/status of 400/);
    await page.context().close();
  });

  it("shows the bidi controls of an operator's descriptions and allowed values as markers", async () => {
    // The example endpoint, its text given right-to-left overrides and an isolate.
    const examples = new URL("../../examples/endpoints/", import.meta.url).pathname;
    const folder = await mkdtemp(join(tmpdir(), "explorer-bidi-"));
    closers.push(() => rm(folder, { recursive: true, force: true }));
    const endpoint = join(folder, "auth.failures-per-hour");
    await cp(join(examples, "auth.failures-per-hour"), endpoint, { recursive: true });
    const definition = join(endpoint, "endpoint.yaml");
    await writeFile(
      definition,
      (await readFile(definition, "utf8"))
        .replace("Failed sign-ins", "Failed \u202esni-ngis")
        .replace("description: project ref", 'description: "project \u2066ref"')
        .replace("values: [day, week]", 'values: [day, "\u202eweek"]')
        .replace("default: day", 'default: "\u202eweek"')
        .replace("    week: {", '    "\u202eweek": {'),
    );
    const operators = await otherService(
      {},
      { catalog: loadCatalog([BUILT_IN_ENDPOINTS, folder]) },
    );
    const { page } = await openExplorer("", operators);
    await enterKey(page, KEY);
    const panel = page.locator('[data-endpoint="auth.failures-per-hour"]');
    await panel.waitFor();
    const description = panel.locator(".description");
    await expect(description.locator(".bidi-control").textContent()).resolves.toBe("⟨U+202E⟩");
    await expect(description.textContent()).resolves.toMatch(/^Failed ⟨U\+202E⟩sni-ngis /);
    // An optional select's first option is its default, which the empty choice leaves to the service.
    await expect(panel.locator('select[name="period"] option').allTextContents()).resolves.toEqual([
      "default (⟨U+202E⟩week)",
      "day",
      "⟨U+202E⟩week",
    ]);
    // The value sent is the value defined.
    await expect(
      panel.locator('select[name="period"] option').nth(2).getAttribute("value"),
    ).resolves.toBe("\u202eweek");
    await expect(panel.locator('[data-param="project"]').getAttribute("title")).resolves.toBe(
      "project ⟨U+2066⟩ref",
    );
    expect(await panel.locator("h2, .description, form").allTextContents()).not.toContainEqual(
      expect.stringMatching(/\p{Bidi_Control}/u),
    );
    await page.context().close();
  });

  it("follows an operator's endpoint with Live on by the window parameters its contract names", async () => {
    const fixtures = new URL("../fixtures/endpoints/", import.meta.url).pathname;
    const operators = await otherService(
      { follow: { intervalMs: 200 } },
      { catalog: loadCatalog([BUILT_IN_ENDPOINTS, fixtures]) },
    );
    const { page, requests } = await openExplorer("", operators);
    await enterKey(page, KEY);
    const panel = '[data-endpoint="edge.errors"]';
    await page.waitForSelector(`${panel}:not([data-draws="0"])`);
    // Its window's end, which a follow refuses, is left out of it.
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 19);
    await page.fill(`${panel} [name="to"]`, tomorrow);
    await page.check(`${panel} .live-toggle`);
    await page.waitForSelector(`${panel}[data-mode="following"]`);
    const id = "operator-live-5xx";
    await storeEdgeRecord(`
      SELECT '${id}' AS id, now() AS timestamp, 'GET | 503 | https://default.supabase.co/rest/v1/todos' AS event_message,
        'default' AS project,
        [{'request': [{'method': 'GET', 'path': '/rest/v1/todos', 'url': 'https://default.supabase.co/rest/v1/todos',
            'host': 'default.supabase.co'}],
          'response': [{'status_code': 503}]}] AS metadata`);
    await page.waitForSelector(`${panel} tr:has(td:text-is("${id}"))`);
    const follow = requests
      .map((r) => new URL(r.url()))
      .find((url) => url.pathname === "/api/endpoints/edge.errors/follow");
    const params = [...(follow?.searchParams.keys() ?? [])];
    // Started from the newest row drawn (demo data has 5xx records), by its own start parameter.
    expect(params.sort()).toEqual(["from", "plan", "project"]);
    await page.context().close();
  });

  it("charts the built-in series by their columns, a DATETIME read as UTC in any browser's zone", async () => {
    const { page, consoleErrors } = await openExplorer("", base, 1280, "America/New_York");
    await enterKey(page);
    await page.waitForSelector(`${STATS} .chart[data-points]`);
    await page.waitForSelector(`${USAGE} .chart[data-points]`);
    // Grouped by the last word of the columns' names: the execution-time statistics, the counts.
    const stats = (await api(`/api/endpoints/functions.invocation-stats?${STATS_QUERY}`)).body;
    await expect(plotted(page, STATS)).resolves.toEqual(
      [
        ["min", "max", "avg", "p95", "p99"].map((stat) => `${stat}_execution_time`),
        ["count", "error_count"],
      ].map((series) => ({
        series,
        x: stats.result.map((row) => Date.parse(String(row.timestamp)) / 1000),
      })),
    );
    // usage.api-counts' bucket is a DATETIME, UTC without a zone: New York's wall time would put
    // every point five hours later.
    const usage = (await api("/api/endpoints/usage.api-counts?project=default&interval=hourly"))
      .body;
    await expect(plotted(page, USAGE)).resolves.toEqual([
      {
        series: ["rest", "storage", "auth", "realtime"].map((area) => `total_${area}_requests`),
        x: usage.result.map((row) => Date.parse(`${row.timestamp}Z`) / 1000),
      },
    ]);
    expect(consoleErrors).toEqual([]);
    await page.context().close();
  });

  it("charts the listing's one time column and numbers, and gives a table for a row of anything else", async () => {
    const { page } = await openExplorer();
    const TIME = { type: "string", format: "date-time" };
    // Each row's columns, and its time columns as the listing names them.
    const rows = {
      // A time that may also come as epoch milliseconds, and a nullable count.
      series: [
        { at: { anyOf: [TIME, { type: "integer" }] }, hits: { type: ["integer", "null"] } },
        ["at"],
      ],
      twoTimes: [{ at: TIME, until: TIME, hits: { type: "integer" } }, ["at", "until"]],
      text: [{ at: TIME, hits: { type: "integer" }, path: { type: "string" } }, ["at"]],
      noTime: [{ hits: { type: "integer" } }, []],
    };
    // The page's own module, imported in the page (a string: vitest would rewrite an import()).
    const plans = await page.evaluate(`
      import("/explorer/time-series.js").then(({ timeSeriesOf }) => Object.fromEntries(
        Object.entries(${JSON.stringify(rows)}).map(([name, [properties, times]]) =>
          [name, timeSeriesOf({ properties }, times)])))`);
    expect(plans).toEqual({
      series: {
        time: "at",
        charts: [{ title: "hits", unit: "hits", columns: ["hits"], statistics: false }],
      },
      twoTimes: null,
      text: null,
      noTime: null,
    });
    await page.context().close();
  });

  it("names no endpoint in its source: what it draws comes from the listing and the document", async () => {
    const folder = new URL("../../src/http/explorer/page/", import.meta.url).pathname;
    const sources = await Promise.all(
      (await readdir(folder)).map(async (name) => ({
        name,
        text: await readFile(join(folder, name), "utf8"),
      })),
    );
    const names = loadCatalog([BUILT_IN_ENDPOINTS]).entries.map((endpoint) => endpoint.name);
    expect(names.length).toBeGreaterThan(0);
    for (const { name, text } of sources) {
      for (const endpoint of names)
        expect(text, `${name} names ${endpoint}`).not.toContain(endpoint);
    }
  });

  it("lists logs.all newest first, and a record's metadata expands", async () => {
    const { page } = await openExplorer();
    await enterKey(page);
    await page.waitForSelector(`${LOGS} table`);
    const expected = (await api("/api/endpoints/logs.all?project=default&project_tier=FREE")).body
      .result;
    const column = await page.locator(`${LOGS} thead th`).allTextContents();
    const at = column.indexOf("timestamp");
    const timestamps = await page
      .locator(`${LOGS} tbody tr td:nth-child(${at + 1})`)
      .allTextContents();
    expect(timestamps.length).toBe(expected.length);
    expect(timestamps).toEqual(timestamps.toSorted().reverse());

    const metadata = page.locator(`${LOGS} tbody tr`).first().locator("details");
    await expect(metadata.locator("pre").isVisible()).resolves.toBe(false);
    await metadata.locator("summary").click();
    await expect(metadata.locator("pre").isVisible()).resolves.toBe(true);
    expect(JSON.parse((await metadata.locator("pre").textContent()) ?? "")).toEqual([
      expect.objectContaining({ request: expect.any(Array), response: expect.any(Array) }),
    ]);
    await page.locator(LOGS).screenshot({ path: `${ARTIFACTS}explorer-metadata.png` });
    await page.context().close();
  });

  it("filters logs.all from its form: typed values and suggested ones, the table then only 5xx", async () => {
    // A service of its own: the demo app's per-key rate limit is the other tests' budget.
    const { page } = await openExplorer("", await otherService({}));
    await enterKey(page);
    await page.waitForSelector(`${LOGS} table`);
    for (const param of ["status", "method", "path", "search", "search_regex", "since"]) {
      await expect(page.locator(`${LOGS} input[name="${param}"]`).count()).resolves.toBe(1);
    }
    const suggested = await page
      .locator(`${LOGS} datalist[id="logs.all.status.suggestions"] option`)
      .evaluateAll((options) => options.map((option) => (option as { value: string }).value));
    expect(suggested).toContain("5xx");
    const draws = Number(await attribute(page, LOGS, "data-draws"));
    await page.fill(`${LOGS} input[name="status"]`, "5xx");
    await page.fill(`${LOGS} input[name="project_tier"]`, "PRO");
    await page.click(`${LOGS} button[type="submit"]`);
    await page.waitForSelector(`${LOGS}[data-draws="${draws + 1}"]`);
    const expected = (
      await api("/api/endpoints/logs.all?project=default&project_tier=PRO&status=5xx")
    ).body.result;
    expect(expected.length).toBeGreaterThan(0);
    const column = await page.locator(`${LOGS} thead th`).allTextContents();
    const messages = await page
      .locator(`${LOGS} tbody tr td:nth-child(${column.indexOf("event_message") + 1})`)
      .allTextContents();
    expect(messages).toEqual(expected.map((record) => record.event_message));
    expect(messages.every((message) => / \| 5\d\d \| /.test(message))).toBe(true);
    await page.context().close();
  });

  it("scrolls a big metadata record inside its cell", async () => {
    const id = "big-metadata-record";
    // One record of edge_logs' shape whose metadata holds 40 requests: far taller than a row.
    await storeEdgeRecord(`
      SELECT '${id}' AS id, now() AS timestamp, 'GET | 200 | https://default.supabase.co/rest/v1/todos' AS event_message,
        'default' AS project,
        [{'request': list_transform(range(40), i -> {'method': 'GET', 'path': '/rest/v1/todos/' || i,
            'url': 'https://default.supabase.co/rest/v1/todos/' || i, 'host': 'default.supabase.co'}),
          'response': [{'status_code': 200}]}] AS metadata`);
    const { page } = await openExplorer();
    await enterKey(page);
    const cell = page.locator(`${LOGS} tr:has(td:text-is("${id}")) details`);
    await cell.locator("summary").click();
    const pre = cell.locator("pre");
    await expect(pre.isVisible()).resolves.toBe(true);
    const box = await pre.evaluate((element) => {
      const style = (globalThis as unknown as InPage).getComputedStyle(element);
      return {
        overflowX: style.overflowX,
        overflowY: style.overflowY,
        maxHeight: style.maxHeight,
        scrollHeight: element.scrollHeight,
        clientHeight: element.clientHeight,
        scrollWidth: element.scrollWidth,
        clientWidth: element.clientWidth,
      };
    });
    expect(box).toMatchObject({ overflowX: "auto", overflowY: "auto" });
    expect(box.maxHeight).not.toBe("none");
    expect(box.scrollHeight).toBeGreaterThan(box.clientHeight);
    expect(box.scrollWidth).toBeGreaterThan(box.clientWidth);
    await page.locator(LOGS).screenshot({ path: `${ARTIFACTS}explorer-big-metadata.png` });
    await page.context().close();
  });

  it("shows a log record's bidi controls where they stand, and its text in the order stored", async () => {
    const id = "bidi-record";
    // A right-to-left override would make the file's name read "exe.png".
    const path = "/files/\u202egnp.exe";
    await storeEdgeRecord(`
      SELECT '${id}' AS id, now() AS timestamp, 'GET | 200 | ${path}' AS event_message,
        'default' AS project,
        [{'request': [{'method': 'GET', 'path': '${path}', 'url': 'https://default.supabase.co${path}',
            'host': 'default.supabase.co'}],
          'response': [{'status_code': 200}]}] AS metadata`);
    const stored = (
      await api("/api/endpoints/logs.all?project=default&project_tier=FREE")
    ).body.result.find((record) => record.id === id);
    expect(stored?.event_message).toBe(`GET | 200 | ${path}`);

    const { page } = await openExplorer();
    await enterKey(page);
    const row = page.locator(`${LOGS} tr:has(td:text-is("${id}"))`);
    await row.waitFor();
    const column = await page.locator(`${LOGS} thead th`).allTextContents();
    const message = row.locator(`td:nth-child(${column.indexOf("event_message") + 1})`);
    const marker = message.locator(".bidi-control");
    await expect(marker.isVisible()).resolves.toBe(true);
    await expect(marker.textContent()).resolves.toBe("⟨U+202E⟩");
    await expect(marker.getAttribute("title")).resolves.toBe("U+202E RIGHT-TO-LEFT OVERRIDE");
    const shown = (await message.textContent()) ?? "";
    expect(shown.replace("⟨U+202E⟩", "\u202e")).toBe(stored?.event_message);

    // Where each character is drawn: left to right in the order stored, the marker's included.
    const lefts = await message.evaluate((cell) => {
      const { document } = globalThis as unknown as {
        document: {
          createTreeWalker(root: unknown, show: number): { nextNode(): unknown };
          createRange(): {
            setStart(node: unknown, offset: number): void;
            setEnd(node: unknown, offset: number): void;
            getBoundingClientRect(): { left: number; width: number };
          };
        };
      };
      const texts = document.createTreeWalker(cell, 4 /* NodeFilter.SHOW_TEXT */);
      const boxes: { char: string; left: number }[] = [];
      for (let node = texts.nextNode(); node; node = texts.nextNode()) {
        const text = (node as { data: string }).data;
        for (let i = 0; i < text.length; i++) {
          const range = document.createRange();
          range.setStart(node, i);
          range.setEnd(node, i + 1);
          const box = range.getBoundingClientRect();
          if (text[i] !== " " && box.width > 0) boxes.push({ char: text[i] ?? "", left: box.left });
        }
      }
      return boxes;
    });
    expect(lefts.map((box) => box.char).join("")).toBe(shown.replaceAll(" ", ""));
    for (const [i, box] of lefts.slice(1).entries()) {
      expect(box.left, `"${box.char}" after "${lefts[i]?.char}"`).toBeGreaterThan(
        lefts[i]?.left ?? 0,
      );
    }

    // The metadata too, summary and expanded: nothing in the row obeys a control.
    await row.locator("summary").click();
    const metadata = (await row.locator("pre").textContent()) ?? "";
    expect(JSON.parse(metadata.replaceAll("⟨U+202E⟩", "\u202e"))).toEqual(stored?.metadata);
    expect(await row.textContent()).not.toMatch(/\p{Bidi_Control}/u);
    await page.locator(LOGS).screenshot({ path: `${ARTIFACTS}explorer-bidi.png` });
    await page.context().close();
  });

  it("never overlaps the time axis's labels nor cuts any label at an edge, at any interval, wide or narrow", async () => {
    const intervals: [panel: string, values: string[]][] = [
      [STATS, ["5min", "15min", "1hr", "1day", "7day"]],
      [USAGE, ["minutely", "hourly", "daily"]],
    ];
    // The page as tests open it, and its charts about 800 and 400 px wide.
    for (const width of [1280, 880, 480]) {
      const { page, consoleErrors } = await openExplorer("", base, width);
      await enterKey(page);
      await page.waitForSelector(`${STATS} .chart[data-points]`);
      await page.waitForSelector(`${USAGE} .chart[data-points]`);
      for (const [panel, values] of intervals) {
        for (const value of values) {
          await runWith(page, panel, "interval", value);
          // Read again until it settles: one full run read fewer than 2 labels once, and no run
          // alone did. A chart that keeps fewer than 2 still fails here, naming interval and width.
          const fewest = async () =>
            Math.min(...(await xAxisLabels(page, panel)).map((labels) => labels.length));
          await expect
            .poll(fewest, { message: `${value} at ${width} px` })
            .toBeGreaterThanOrEqual(2);
          for (const labels of await xAxisLabels(page, panel)) {
            const seen = `${value} at ${width} px: ${labels.map((label) => label.text).join(" | ")}`;
            for (const [i, label] of labels.slice(1).entries()) {
              expect(label.left, seen).toBeGreaterThanOrEqual(labels[i]?.right ?? 0);
            }
          }
          // Every label, of either axis, whole on its canvas: none cut at an edge.
          for (const canvas of await drawnTexts(page, panel)) {
            expect(canvas.texts.length).toBeGreaterThan(0);
            for (const { text, ...box } of canvas.texts) {
              const seen = `"${text}" (${value} at ${width} px)`;
              expect(box.left, seen).toBeGreaterThanOrEqual(0);
              expect(box.top, seen).toBeGreaterThanOrEqual(0);
              expect(box.right, seen).toBeLessThanOrEqual(canvas.width);
              expect(box.bottom, seen).toBeLessThanOrEqual(canvas.height);
            }
          }
        }
      }
      await page.screenshot({ path: `${ARTIFACTS}explorer-${width}.png`, fullPage: true });
      expect(consoleErrors).toEqual([]);
      await page.context().close();
    }
  });

  it("labels at least two ticks of the time axis on a narrow chart, whatever span its points cover", async () => {
    const { page, consoleErrors } = await openExplorer("", base, 480);
    await enterKey(page);
    await page.waitForSelector(`${STATS} .chart[data-points]`);
    const chart = `${STATS} .chart`;
    // Spans from a minute to two days, starting off any round time: on a chart this narrow some of
    // them fall just under two of the steps uPlot picks, where a round step alone gives one tick.
    const spans = Array.from({ length: 240 }, (_, i) => Math.round(60 * 1.022 ** i));
    for (const span of spans) {
      await page.evaluate(
        ({ selector, span }) => {
          const { plots, document } = globalThis as unknown as {
            plots: {
              root: { parentElement: unknown };
              data: number[][];
              setData(d: number[][]): void;
            }[];
            document: { querySelector(selector: string): unknown };
          };
          const plot = plots.find(
            (each) => each.root.parentElement === document.querySelector(selector),
          );
          const start = 1_790_000_017;
          // Two points, the span apart, every series at 1 on both.
          plot?.setData(plot.data.map((_, i) => (i === 0 ? [start, start + span] : [1, 1])));
        },
        { selector: chart, span },
      );
      const labels = async () => (await xAxisLabels(page, STATS))[0] ?? [];
      await expect
        .poll(async () => (await labels()).length, { message: `a span of ${span} s` })
        .toBeGreaterThanOrEqual(2);
      const shown = await labels();
      for (const [i, label] of shown.slice(1).entries()) {
        expect(label.left, `a span of ${span} s`).toBeGreaterThanOrEqual(shown[i]?.right ?? 0);
      }
    }
    expect(consoleErrors).toEqual([]);
    await page.context().close();
  });
});

describe("a page's own fetch", () => {
  it("polls with If-None-Match, which Chromium sends with max-age=0, and is answered as held", async () => {
    const { page } = await openExplorer();
    const url = `/api/endpoints/functions.invocation-stats?${STATS_QUERY}`;
    const sent: Record<string, string>[] = [];
    page.on("request", async (request) => {
      if (request.url().endsWith(url)) sent.push(await request.allHeaders());
    });
    const polls = await page.evaluate(
      async ([url, key]) => {
        const answer = async (etag?: string) => {
          const headers: Record<string, string> = { "X-API-KEY": key };
          if (etag) headers["If-None-Match"] = etag;
          const response = await fetch(url, { headers });
          const { status } = response;
          return {
            status,
            etag: response.headers.get("ETag"),
            cache: response.headers.get("X-Cache"),
          };
        };
        const first = await answer();
        return [first, await answer(first.etag ?? ""), await answer('"another-etag"')];
      },
      [url, KEY] as const,
    );
    expect(polls.map(({ status, cache }) => [status, cache])).toEqual([
      [200, expect.stringMatching(/^(MISS|HIT)$/)],
      [304, "HIT"],
      [200, "HIT"],
    ]);
    expect(polls[1]?.etag).toBe(polls[0]?.etag);
    // What Chromium adds to a request with a validator (where Node's fetch adds no-cache), unobeyed.
    await expect.poll(() => sent.length).toBe(3);
    for (const headers of sent.slice(1)) expect(headers["cache-control"]).toBe("max-age=0");
    await page.context().close();
  });
});
