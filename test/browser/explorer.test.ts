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
import { EngineError } from "../../src/engines/engine.ts";
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

/** The page in a fresh browser context (empty sessionStorage), with its requests and errors recorded. */
async function openExplorer(query = "", origin = base): Promise<Opened> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
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

    // A fault the demo engine cannot produce on demand, injected around it.
    const failing = await otherService({
      engine: {
        dialect: demo.engine.dialect,
        ping: () => demo.engine.ping(),
        close: async () => {},
        run: async (request) => {
          if (request.endpoint === "functions.invocation-stats") {
            throw new EngineError("engine_error", "The query failed in the engine.");
          }
          return demo.engine.run(request);
        },
      },
    });
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
});
