// The methods as HTTP clients use them, through Node's fetch over a real socket: HEAD answers as
// the GET does without a body on every route family (load-balancer probes send it), and any other
// method on a routed path is 405 with Allow, in the error envelope. Real service: embedded DuckDB
// over demo data.
import { beforeAll, describe, expect, it } from "vitest";
import { catalog } from "../support/catalog.ts";
import { demoApp } from "../support/demo-app.ts";

const KEY = "methods-key-0123456789";
const STATS = "functions.invocation-stats";
const LOGS = "logs.all";

const demo = demoApp(
  { auth: { apiKeys: [KEY] }, cache: { maxEntries: 100, maxBytes: 1e7 } },
  { cache: {} },
);

let base: string;
beforeAll(async () => {
  base = await demo.app.listen({ host: "127.0.0.1", port: 0 });
});

const query = (name: string) =>
  new URLSearchParams(catalog.find((endpoint) => endpoint.name === name)?.example).toString();

const call = (method: string, path: string, headers: Record<string, string> = {}) =>
  fetch(`${base}${path}`, { method, headers: { "x-api-key": KEY, ...headers } });

/** One path of each route family; the streams' are answered to HEAD without a stream. */
const FAMILIES = [
  "/health",
  "/ready",
  "/api/endpoints",
  "/openapi.json",
  `/api/endpoints/${STATS}?${query(STATS)}`,
  `/api/endpoints/query/${STATS}.csv?${query(STATS)}`,
  `/api/endpoints/${LOGS}?${query(LOGS)}`,
  `/api/endpoints/${LOGS}/follow?${query(LOGS)}`,
  `/api/endpoints/query/${STATS}/watch?${query(STATS)}`,
  "/api/alerts",
  "/metrics",
  "/",
  "/explorer/main.js",
  "/docs",
];

// What differs between two answers of the same resource: the clock's (Date, Age, the seconds left
// in Cache-Status, the durations in Server-Timing), the request's id and budget, and the connection
// (fetch closes it after a HEAD, so the server says so).
const PER_ANSWER = [
  "date",
  "age",
  "cache-status",
  "server-timing",
  "x-request-id",
  "ratelimit-remaining",
  "ratelimit-reset",
  "connection",
  "keep-alive",
];
// And across every route family: the framing (a GET's stream has no Content-Length, a HEAD's empty
// one says 0) and whether the cache held the answer yet (a first GET may compute it).
const PER_ANSWER_HEAD = [...PER_ANSWER, "content-length", "transfer-encoding", "x-cache"];

const comparable = (headers: Headers, varying: string[]) =>
  Object.fromEntries([...headers].filter(([name]) => !varying.includes(name)));

describe("HEAD", () => {
  it("answers every GET route as its GET does, without a body", async () => {
    for (const path of FAMILIES) {
      const controller = new AbortController();
      const get = await fetch(`${base}${path}`, {
        headers: { "x-api-key": KEY },
        signal: controller.signal,
      });
      controller.abort();
      const head = await call("HEAD", path);
      expect(head.status, path).toBe(get.status);
      expect(head.status, path).toBe(200);
      expect(await head.text(), path).toBe("");
      expect(comparable(head.headers, PER_ANSWER_HEAD), path).toEqual(
        comparable(get.headers, PER_ANSWER_HEAD),
      );
    }
  });

  it("gives a cached endpoint's ETag, and 304 for it, as the GET does", async () => {
    const path = `/api/endpoints/${STATS}?${query(STATS)}`;
    await (await call("GET", path)).arrayBuffer();
    const get = await call("GET", path);
    const head = await call("HEAD", path);
    expect(head.headers.get("etag")).toBe(get.headers.get("etag"));
    expect(head.headers.get("content-length")).toBe(String((await get.arrayBuffer()).byteLength));
    expect(comparable(head.headers, PER_ANSWER)).toEqual(comparable(get.headers, PER_ANSWER));
    for (const answer of [get, head]) {
      expect(answer.headers.get("cache-status")).toMatch(/^query-service; hit; ttl=\d+$/);
    }
    const revalidated = await call("HEAD", path, {
      "if-none-match": String(get.headers.get("etag")),
    });
    expect(revalidated.status).toBe(304);
  });

  it("answers with the GET's refusal: 401 without a credential, 400 naming a bad parameter", async () => {
    const path = `/api/endpoints/${LOGS}?${query(LOGS)}`;
    const anonymous = await fetch(`${base}${path}`, { method: "HEAD" });
    expect(anonymous.status).toBe(401);
    const typo = await call("HEAD", `/api/endpoints/${LOGS}/follow?projct=default`);
    expect(typo.status).toBe(400);
    expect(typo.headers.get("content-type")).toBe("application/json; charset=utf-8");
  });

  it("leaves no stream open after HEADs of the follow and watch paths (scopes.test.ts: nor runs a catch-up)", async () => {
    const open = async () => {
      const metrics = await (await call("GET", "/metrics")).text();
      return ["follow", "watch"].map((kind) =>
        Number(metrics.match(new RegExp(`^query_service_${kind}_streams_open (\\d+)$`, "m"))?.[1]),
      );
    };
    // The GETs of the first test closed theirs.
    await expect.poll(open).toEqual([0, 0]);
    for (let i = 0; i < 5; i++) {
      expect((await call("HEAD", `/api/endpoints/${LOGS}/follow?${query(LOGS)}`)).status).toBe(200);
      expect((await call("HEAD", `/api/endpoints/${STATS}/watch?${query(STATS)}`)).status).toBe(
        200,
      );
    }
    expect(await open()).toEqual([0, 0]);
  });
});

describe("other methods", () => {
  it("are 405 with Allow: GET, HEAD on every route family, in the envelope", async () => {
    for (const path of FAMILIES) {
      for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
        const response = await call(method, path);
        expect(response.status, `${method} ${path}`).toBe(405);
        expect(response.headers.get("allow"), `${method} ${path}`).toBe("GET, HEAD");
        expect(response.headers.get("x-request-id")).toEqual(expect.any(String));
        expect(await response.json(), `${method} ${path}`).toEqual({
          error: { code: "method_not_allowed", message: expect.stringContaining(method) },
        });
      }
    }
  });

  it("include those fetch may not send: TRACE is 405 too", async () => {
    for (const method of ["TRACE"] as const) {
      const response = await demo.app.inject({ method, url: "/health" });
      expect(response.statusCode, method).toBe(405);
      expect(response.headers.allow, method).toBe("GET, HEAD");
    }
  });

  it("leave a path no route serves 404 not_found, in the envelope", async () => {
    for (const method of ["GET", "HEAD", "POST"]) {
      const response = await call(method, "/no/such/path");
      expect(response.status, method).toBe(404);
      if (method !== "HEAD") {
        expect(await response.json()).toMatchObject({ error: { code: "not_found" } });
      }
    }
  });
});
