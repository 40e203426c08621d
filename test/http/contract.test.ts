// The served /openapi.json as tools nobody here wrote read it: Spectral's `spectral:oas` ruleset
// finds no error in it, and an OpenAPI response validator (test/support/contract.ts) finds every
// answer of a sample of each route, status and format described by it. Real service: embedded
// DuckDB over demo data.
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/credentials/authenticate.ts";
import { KeysFile } from "../../src/credentials/keys-file.ts";
import type { OpenApiDocument } from "../../src/http/openapi/document.ts";
import { catalog } from "../support/catalog.ts";
import { type Answer, contractOf } from "../support/contract.ts";
import { demoApp } from "../support/demo-app.ts";
import { temporaryFile } from "../support/temporary-file.ts";

const FULL_KEY = "contract-full-key-0123456789";
const STATS_KEY = "contract-stats-key-0123456789";
const LOGS_KEY = "contract-logs-key-0123456789";
const STATS = "functions.invocation-stats";
const LOGS = "logs.all";
const AUTH_FAILURES_PER_MINUTE = 3;

const demo = demoApp(
  {
    auth: { apiKeys: [FULL_KEY], failuresPerMinute: AUTH_FAILURES_PER_MINUTE },
    cache: { maxEntries: 100, maxBytes: 1e7 },
  },
  {
    keysFile: new KeysFile(
      temporaryFile("keys.json", {
        keys: [
          { name: "stats-only", sha256: sha256Hex(STATS_KEY), scopes: [{ endpoint: STATS }] },
          { name: "logs-only", sha256: sha256Hex(LOGS_KEY), scopes: [{ endpoint: LOGS }] },
        ],
      }),
    ),
    cache: {},
  },
);

let document: OpenApiDocument;
let check: Awaited<ReturnType<typeof contractOf>>;
let base: string;
beforeAll(async () => {
  document = (await demo.app.inject({ url: "/openapi.json" })).json();
  check = await contractOf(document);
  base = await demo.app.listen({ host: "127.0.0.1", port: 0 });
});

const get = (url: string, headers: Record<string, string> = {}) =>
  demo.app.inject({ url, headers: { "x-api-key": FULL_KEY, ...headers } });

/** GETs `url` and holds the answer to the document; the answer, for the test to look at too. */
async function held(url: string, headers: Record<string, string> = {}): Promise<Answer> {
  const answer = await get(url, headers);
  expect(check(url, answer), `${url} ${JSON.stringify(headers)}`).toEqual([]);
  return answer;
}

const query = (name: string) =>
  new URLSearchParams(catalog.find((endpoint) => endpoint.name === name)?.example).toString();

describe("the contract", () => {
  it("has no error by Spectral's spectral:oas ruleset, for every caller and a scoped one", async () => {
    const folder = await mkdtemp(join(tmpdir(), "spectral-"));
    try {
      const ruleset = join(folder, ".spectral.json");
      await writeFile(ruleset, JSON.stringify({ extends: ["spectral:oas"] }));
      for (const [name, headers] of [
        ["everything", {}],
        ["logs-only", { "x-api-key": LOGS_KEY }],
      ] as const) {
        const file = join(folder, `${name}.json`);
        await writeFile(file, (await demo.app.inject({ url: "/openapi.json", headers })).body);
        // Spectral exits 1 when it finds an error; its findings are on stdout either way.
        const { stdout } = await promisify(execFile)(process.execPath, [
          "node_modules/.bin/spectral",
          "lint",
          "-q",
          "-f",
          "json",
          "-r",
          ruleset,
          file,
        ]).catch((failed: { stdout: string }) => failed);
        const findings = JSON.parse(stdout) as { code: string; severity: number; path: string[] }[];
        // Severity 0 is an error. The warnings left: no `servers` (the service is reached at any
        // host, and the document is served by it) and no `info.contact`.
        const errors = findings.filter((finding) => finding.severity === 0);
        expect(errors, name).toEqual([]);
        expect(findings.map((finding) => finding.code).sort(), name).toEqual([
          "info-contact",
          "oas3-api-servers",
        ]);
      }
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it("its validator refuses answers the document does not describe", () => {
    const stats = `/api/endpoints/${STATS}`;
    const json = { "content-type": "application/json; charset=utf-8" };
    const refused: [url: string, answer: Answer][] = [
      [stats, { statusCode: 200, headers: json, body: '{"result":[{"nope":1}]}' }],
      [stats, { statusCode: 200, headers: json, body: '{"rows":[]}' }],
      [stats, { statusCode: 304, headers: json, body: "" }],
      [stats, { statusCode: 418, headers: json, body: "{}" }],
      [stats, { statusCode: 200, headers: { ...json, "x-cache": "BOGUS" }, body: '{"result":[]}' }],
      [`${stats}.ndjson`, { statusCode: 200, headers: { "content-type": "text/csv" }, body: "" }],
      [stats, { statusCode: 200, headers: { "content-type": "text/html" }, body: "" }],
      [stats, { statusCode: 504, headers: json, body: '{"error":{"code":"other","message":"m"}}' }],
      ["/api/endpoints/no.such", { statusCode: 404, headers: json, body: "{}" }],
    ];
    for (const [url, answer] of refused) {
      expect(check(url, answer), JSON.stringify(answer)).not.toEqual([]);
    }
    expect(check(stats, { statusCode: 200, headers: json, body: '{"result":[]}' })).toEqual([]);
    // The plain path declares the formats Accept picks there.
    const csv = { "content-type": "text/csv; charset=utf-8" };
    expect(check(stats, { statusCode: 200, headers: csv, body: "count\r\n" })).toEqual([]);
  });

  it("describes each endpoint's answers at every path, in every format, and its 304s", async () => {
    for (const endpoint of catalog) {
      const { name, id } = endpoint;
      const params = query(name);
      for (const path of [`/api/endpoints/${name}`, `/api/endpoints/query/${name}`]) {
        for (const accept of ["application/json", "application/x-ndjson", "text/csv"]) {
          await held(`${path}?${params}`, { accept });
        }
        for (const suffix of ["json", "ndjson", "csv"]) {
          const url = `${path}.${suffix}?${params}`;
          const answer = await held(url);
          expect(answer.statusCode, url).toBe(200);
          if (endpoint.cache) {
            const etag = String(answer.headers.etag);
            expect((await held(url, { "if-none-match": etag })).statusCode, url).toBe(304);
          }
        }
      }
      await held(`/api/endpoints/query/${id}?${params}`);
      if (endpoint.cache) {
        const url = `/api/endpoints/${name}?${params}`;
        const etag = String((await get(url)).headers.etag);
        expect((await held(url, { "if-none-match": etag })).statusCode).toBe(304);
      }
    }
  });

  it("describes the refusals: 400, 401, 403, 406, 504 not_cached and 429", async () => {
    const logs = `/api/endpoints/${LOGS}`;
    const cases: [status: number, url: string, headers: Record<string, string>][] = [
      [400, `${logs}?projct=default`, {}],
      [400, `${logs}.csv?projct=default`, {}],
      [400, `${logs}?project=%ZZ`, {}],
      [403, `${logs}?${query(LOGS)}`, { "x-api-key": STATS_KEY }],
      [406, `${logs}?${query(LOGS)}`, { accept: "image/png" }],
      [504, `${logs}?${query(LOGS)}`, { "cache-control": "only-if-cached" }],
      [
        504,
        `/api/endpoints/${STATS}.csv?project=default&interval=5min`,
        {
          "cache-control": "only-if-cached",
        },
      ],
      [400, "/api/endpoints?limit=5", {}],
      [403, "/metrics", { "x-api-key": STATS_KEY }],
    ];
    for (const [status, url, headers] of cases) {
      expect((await held(url, headers)).statusCode, url).toBe(status);
    }
    // Last: bad keys from this address, until they are refused without a look.
    const unknownKey = { "x-api-key": "not-a-key-of-this-service" };
    for (let i = 0; i < AUTH_FAILURES_PER_MINUTE; i++) {
      expect((await held(`${logs}?${query(LOGS)}`, unknownKey)).statusCode).toBe(401);
    }
    expect((await held(`${logs}?${query(LOGS)}`, unknownKey)).statusCode).toBe(429);
  });

  it("describes the catalog, the alert rules, the probes, the metrics and itself", async () => {
    for (const url of ["/api/endpoints", "/api/alerts", "/health", "/ready", "/metrics"]) {
      expect((await held(url)).statusCode, url).toBe(200);
    }
    const own = await held("/openapi.json");
    expect(own.statusCode).toBe(200);
    const etag = String(own.headers.etag);
    expect((await held("/openapi.json", { "if-none-match": etag })).statusCode).toBe(304);
  });

  it("describes every listed path's 405 to another method, with Allow", async () => {
    for (const path of Object.keys(document.paths)) {
      const answer = await demo.app.inject({
        method: "DELETE",
        url: path,
        headers: { "x-api-key": FULL_KEY },
      });
      expect(answer.statusCode, path).toBe(405);
      expect(check(path, answer), path).toEqual([]);
    }
  });

  it("describes the follow and watch streams' opening: status, media type, headers", async () => {
    const streams: [url: string, accept: string][] = [
      [`/api/endpoints/${LOGS}/follow?${query(LOGS)}`, "text/event-stream"],
      [`/api/endpoints/query/${LOGS}/follow?${query(LOGS)}`, "application/x-ndjson"],
      [`/api/endpoints/${STATS}/watch?${query(STATS)}`, "text/event-stream"],
    ];
    for (const [url, accept] of streams) {
      const controller = new AbortController();
      const response = await fetch(`${base}${url}`, {
        headers: { "x-api-key": FULL_KEY, accept },
        signal: controller.signal,
      });
      const answer = { statusCode: response.status, headers: Object.fromEntries(response.headers) };
      expect(answer.statusCode, url).toBe(200);
      expect(check(url, answer), url).toEqual([]);
      controller.abort();
    }
  });
});
