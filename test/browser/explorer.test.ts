// The explorer page at / in a real headless Chromium, against the service on the embedded engine
// and its demo data: what a person sees, and what the page sends.
//
// Time: the page's refresh interval is shortened with its own `?refresh=1` option. The cache reads
// the wall clock plus `cacheClock.offsetMs`; moving the offset past the TTL expires the cached
// answer, so that rows appended to the demo tables show on the next refresh.
import { mkdir } from "node:fs/promises";
import type { FastifyInstance } from "fastify";
import { SignJWT } from "jose";
import type { Browser, Page, Request } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AppDeps, buildApp } from "../../src/app.ts";
import { createTokenVerifier } from "../../src/credentials/tokens.ts";
import { generateLogs } from "../../src/engines/duckdb/demo-data.ts";
import { appendRecords } from "../../src/engines/duckdb/derived.ts";
import { EngineError, type QueryRequest } from "../../src/engines/engine.ts";
import { dateToMicros } from "../../src/time.ts";
import { launchChromium } from "../support/browser.ts";
import { demoApp } from "../support/demo-app.ts";

const KEY = "browser-test-key-0123456789";
const ARTIFACTS = new URL("../../test-artifacts/", import.meta.url).pathname;
const STATS = '[data-endpoint="functions.invocation-stats"]';
const LOGS = '[data-endpoint="logs.all"]';
const USAGE = '[data-endpoint="usage.api-counts"]';
const TTL_MS = 900_000;

const cacheClock = { offsetMs: 0 };
const demo = demoApp({
  apiKeys: [KEY],
  cache: {
    maxEntries: 100,
    maxBytes: 16 * 1024 * 1024,
    now: () => Date.now() + cacheClock.offsetMs,
  },
});

let base: string;
let browser: Browser;
beforeAll(async () => {
  base = await demo.app.listen({ host: "127.0.0.1", port: 0 });
  browser = await launchChromium();
  await mkdir(ARTIFACTS, { recursive: true });
});
const others: FastifyInstance[] = [];
afterAll(async () => {
  await browser?.close();
  await Promise.all(others.map((app) => app.close()));
});

/** Another service over the same demo tables, listening on a port of its own; its origin. */
async function otherService(deps: Partial<AppDeps>): Promise<string> {
  const app = await buildApp({ apiKeys: [KEY], engine: demo.engine, ...deps });
  others.push(app);
  return app.listen({ host: "127.0.0.1", port: 0 });
}

/**
 * Another service whose engine fails the queries `fails` picks with a 502 `engine_error`: a fault
 * the demo engine cannot produce on demand, injected around it.
 */
function serviceFailing(fails: (request: QueryRequest) => boolean): Promise<string> {
  return otherService({
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
  });
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

interface Opened {
  page: Page;
  requests: Request[];
  consoleErrors: string[];
}

/**
 * The page in a fresh browser context (empty sessionStorage), `width` px wide, with its requests,
 * errors and charts recorded.
 */
async function openExplorer(query = "", origin = base, width = 1280): Promise<Opened> {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  await context.addInitScript(recordPlots);
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
    expect(requests.some((request) => new URL(request.url()).pathname.startsWith("/api"))).toBe(
      false,
    );

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
    await expect(page.locator(`${STATS} [data-field="x-cache"]`).textContent()).resolves.toMatch(
      /^X-Cache: (MISS|HIT)$/,
    );
    await expect(page.locator(`${STATS} [data-field="age"]`).textContent()).resolves.toMatch(
      /^Age: \d+ s$/,
    );
    await expect(page.locator(`${STATS} [data-field="request-id"]`).textContent()).resolves.toMatch(
      /^request id [\w.-]+$/,
    );

    // The key travels as a header from sessionStorage, never in a URL.
    const calls = requests.filter((request) => new URL(request.url()).pathname.startsWith("/api"));
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
    for (const request of requests.filter((r) => !new URL(r.url()).pathname.startsWith("/api"))) {
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

  it("refreshes with If-None-Match: a 304 keeps the chart, a changed value redraws it", async () => {
    const { page, requests, consoleErrors } = await openExplorer("?refresh=1");
    await enterKey(page);
    await page.waitForSelector(`${STATS}[data-draws="1"]`);
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
    expect(consoleErrors).toEqual([]);
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
    const apiCalls = () => requests.filter((r) => new URL(r.url()).pathname.startsWith("/api"));
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
    const scoped = await otherService({
      apiKeys: [],
      tokens: createTokenVerifier({ secret, maxLifetimeSeconds: 600 }),
    });
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
    const connection = await demo.engine.connect();
    try {
      // One record of edge_logs' shape whose metadata holds 40 requests: far taller than a row.
      await connection.run(`
        CREATE OR REPLACE TEMP TABLE big_record AS
        SELECT '${id}' AS id, now() AS timestamp, 'GET | 200 | https://default.supabase.co/rest/v1/todos' AS event_message,
          'default' AS project,
          [{'request': list_transform(range(40), i -> {'method': 'GET', 'path': '/rest/v1/todos/' || i,
              'url': 'https://default.supabase.co/rest/v1/todos/' || i, 'host': 'default.supabase.co'}),
            'response': [{'status_code': 200}]}] AS metadata`);
      await connection.run("BEGIN TRANSACTION");
      await appendRecords(connection, "edge_logs", "big_record");
      await connection.run("COMMIT");
      await connection.run("DROP TABLE big_record");
    } finally {
      connection.closeSync();
    }
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

  it("never overlaps the time axis's labels, at any interval, wide or narrow", async () => {
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
          for (const labels of await xAxisLabels(page, panel)) {
            const seen = `${value} at ${width} px: ${labels.map((label) => label.text).join(" | ")}`;
            expect(labels.length, seen).toBeGreaterThanOrEqual(2);
            for (const [i, label] of labels.slice(1).entries()) {
              expect(label.left, seen).toBeGreaterThanOrEqual(labels[i]?.right ?? 0);
            }
          }
        }
      }
      await page.screenshot({ path: `${ARTIFACTS}explorer-${width}.png`, fullPage: true });
      expect(consoleErrors).toEqual([]);
      await page.context().close();
    }
  });
});
