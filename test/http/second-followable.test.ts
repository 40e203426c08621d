// A second pageable, followable endpoint, an operator's (test/fixtures/endpoints/edge.errors), whose
// window parameters are named unlike logs.all's (from, to, last; its retention by plan): pages,
// follow streams, the listing and the OpenAPI document read every name from its paging contract.
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { serviceApp } from "../../src/app.ts";
import { runEndpointCases } from "../../src/endpoints/cases/run-cases.ts";
import { BUILT_IN_ENDPOINTS, loadCatalog } from "../../src/endpoints/load-catalog.ts";
import { createDuckDbEngine } from "../../src/engines/duckdb.ts";
import { configFrom } from "../support/config-from.ts";
import { replaceTables } from "../support/duckdb-tables.ts";
import {
  edgeLog,
  edgeMetadata,
  MINUTE,
  micros,
  PROJECT,
  request,
  SECOND,
  shift,
} from "../support/fixtures.ts";
import { closers, FOLLOW, NOW, open, records } from "../support/follow-client.ts";
import type { Row } from "../support/googlesql.ts";
import { API_KEY, startBigQueryService } from "../support/service.ts";

const OPERATOR_ENDPOINTS = new URL("../fixtures/endpoints/", import.meta.url).pathname;
const NAME = "edge.errors";

/** A 5xx record `minutes` before NOW (after it when negative). */
const failed = (minutes: bigint, id: string): Row =>
  edgeLog(shift(NOW, -minutes * MINUTE), {
    id,
    metadata: [{ ...edgeMetadata(request("/rest/v1/items")), response: [{ status_code: 503 }] }],
  });

// Seven 5xx records in the last hour, two sharing an instant, among 200s that the endpoint leaves out.
const ERRORS = [
  failed(50n, "e1"),
  failed(40n, "e2"),
  failed(30n, "e3"),
  failed(30n, "e4"),
  failed(20n, "e5"),
  failed(10n, "e6"),
  failed(5n, "e7"),
];
const OKS = [edgeLog(shift(NOW, -25n * MINUTE), { id: "ok1" }), edgeLog(shift(NOW, -SECOND))];

async function service(rows: Row[], clock = { now: micros(NOW) }) {
  const engine = await createDuckDbEngine({ now: () => clock.now });
  await replaceTables(engine, { edge_logs: rows });
  const app = await serviceApp(configFrom({ auth: { apiKeys: [API_KEY] }, follow: FOLLOW }), {
    engine,
    follow: { clock: () => clock.now },
    catalog: loadCatalog([BUILT_IN_ENDPOINTS, OPERATOR_ENDPOINTS]),
  });
  closers.push(async () => {
    await app.close();
    await engine.close();
  });
  const base = await app.listen({ host: "127.0.0.1", port: 0 });
  return { engine, base };
}

const get = (url: string) => fetch(url, { headers: { "x-api-key": API_KEY } });

describe("an operator's followable endpoint with its own window parameter names, on DuckDB", () => {
  it("pages through its window by next cursors, each record once, newest first", async () => {
    const clock = { now: micros(NOW) };
    const { base } = await service([...ERRORS, ...OKS], clock);
    const seen: string[] = [];
    let url: string | null = `/api/endpoints/${NAME}?project=${PROJECT}&plan=FREE&last=45m`;
    while (url) {
      const response = await get(`${base}${url}`);
      expect(response.status).toBe(200);
      const { result } = (await response.json()) as { result: Row[] };
      seen.push(...result.map((row) => String(row.id)));
      url = response.headers.get("link")?.match(/<[^>]*(\/api\/[^>]+)>; rel="next"/)?.[1] ?? null;
      // Time moves on between pages: the window `last` gave the first page holds for every later one.
      clock.now += 20n * MINUTE;
    }
    expect(seen).toEqual(["e7", "e6", "e5", "e4", "e3", "e2"]);
  });

  it("follows: the window after `from`, then a record appended while it is open, each once", async () => {
    const { engine, base } = await service([...ERRORS, ...OKS]);
    const from = shift(NOW, -35n * MINUTE);
    const stream = await open(
      `${base}/api/endpoints/${NAME}/follow?project=${PROJECT}&plan=FREE&from=${from}`,
    );
    await stream.until(() => records(stream).length >= 5);
    const late = failed(-1n, "e8");
    await replaceTables(engine, { edge_logs: [...ERRORS, ...OKS, late] });
    await stream.until(() => records(stream).length >= 6);
    expect(records(stream).map((row) => row.id)).toEqual(["e3", "e4", "e5", "e6", "e7", "e8"]);
  });

  it("refuses its own window end on a follow, naming it", async () => {
    const { base } = await service(ERRORS);
    const response = await get(
      `${base}/api/endpoints/${NAME}/follow?project=${PROJECT}&plan=FREE&to=${NOW}`,
    );
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      error: { code: "invalid_params", details: [{ param: "to" }] },
    });
  });

  it("has a follow path in the OpenAPI document with its own parameters, none of logs.all's", async () => {
    const { base } = await service([]);
    const document = (await (await get(`${base}/openapi.json`)).json()) as {
      paths: Record<string, { get: { description: string; parameters: { name: string }[] } }>;
    };
    const follow = document.paths[`/api/endpoints/${NAME}/follow`]?.get;
    expect(follow?.description).not.toMatch(/iso_timestamp|project_tier/);
    const names = follow?.parameters.map((parameter) => parameter.name) ?? [];
    expect(names).toEqual(expect.arrayContaining(["project", "plan", "from", "last", "after"]));
    // Its window's end and the page cursor do not go with a follow stream.
    expect(names).not.toContain("to");
    expect(names).not.toContain("cursor");
  });

  it("lists its paging contract, which the explorer reads", async () => {
    const { base } = await service([]);
    const { result } = (await (await get(`${base}/api/endpoints`)).json()) as {
      result: { name: string; paging?: unknown }[];
    };
    expect(result.find((entry) => entry.name === NAME)?.paging).toEqual({
      page_size: 3,
      order: ["timestamp DESC", "id DESC"],
      window: { start: "from", end: "to", since: "last" },
      follow: true,
    });
  });
});

describe("an operator's followable endpoint on the BigQuery stand-in", () => {
  it("pages through its window by next cursors, each record once, newest first", async () => {
    const { get } = await startBigQueryService({
      tables: { edge_logs: [...ERRORS, ...OKS] },
      now: NOW,
      catalog: loadCatalog([BUILT_IN_ENDPOINTS, OPERATOR_ENDPOINTS]),
    });
    const seen: string[] = [];
    let url: string | null =
      `/api/endpoints/${NAME}?project=${PROJECT}&plan=FREE&from=${shift(NOW, -45n * MINUTE)}`;
    while (url) {
      const response = await get(url);
      expect(response.statusCode).toBe(200);
      seen.push(...(response.json() as { result: Row[] }).result.map((row) => String(row.id)));
      url =
        String(response.headers.link ?? "").match(/<[^>]*(\/api\/[^>]+)>; rel="next"/)?.[1] ?? null;
    }
    expect(seen).toEqual(["e7", "e6", "e5", "e4", "e3", "e2"]);
  });
});

describe("the operator's followable endpoint's own cases (cases.yaml)", () => {
  it("pass on the embedded engine: 5xx only, from exclusive, last from the pinned now", async () => {
    const outcomes = await runEndpointCases(join(OPERATOR_ENDPOINTS, NAME), serviceApp);
    expect(outcomes.map(({ name, problems }) => [name, problems])).toEqual([
      ["only 5xx records, within the last day", []],
      ["from is exclusive", []],
      ["last counts back from the pinned now", []],
      ["last and from do not go together", []],
    ]);
  });
});

describe("a followable endpoint's parameters", () => {
  it("may not be named as a follow stream's own (after, until): startup says which", () => {
    const dir = mkdtempSync(join(tmpdir(), "endpoints-dir-"));
    cpSync(join(OPERATOR_ENDPOINTS, NAME), join(dir, NAME), { recursive: true });
    const definition = join(dir, NAME, "endpoint.yaml");
    writeFileSync(
      definition,
      readFileSync(definition, "utf8")
        .replace(/^ {2}to:$/m, "  until:")
        .replace("end: to", "end: until"),
    );
    expect(() => loadCatalog([dir])).toThrow(
      expect.objectContaining({
        problems: [
          expect.stringMatching(
            /edge\.errors\/endpoint\.yaml: params\.until: is a follow stream's own parameter; a followable endpoint cannot declare it$/,
          ),
        ],
      }),
    );
  });
});
