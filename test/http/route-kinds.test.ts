// One table of route kinds: the paths the document lists are the catalog's entry routes, each one
// answered by its endpoint, kind and format, and a reload's catalog brings its own.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { catalogOf, LiveCatalog, notFollowed } from "../../src/endpoints/catalog.ts";
import { BUILT_IN_ENDPOINTS, loadCatalog } from "../../src/endpoints/load-catalog.ts";
import { entryRoutes } from "../../src/http/route-kinds.ts";
import { startService } from "../support/service.ts";

const NOW = "2026-11-21T05:17:42.123456Z";
const ENDPOINT_PATH = /^\/api\/endpoints\/./;
/** The docs' operator endpoint, beside the built-in ones. */
const EXAMPLE_ENDPOINTS = new URL("../../examples/endpoints/", import.meta.url).pathname;

async function service(catalog = new LiveCatalog(loadCatalog())) {
  const started = await startService({
    now: NOW,
    catalog,
    cache: { now: () => 0 },
    config: { cache: { maxEntries: 100, maxBytes: 1_000_000 } },
  });
  const documentedPaths = async () =>
    Object.keys((await started.get("/openapi.json")).json().paths).filter((path) =>
      ENDPOINT_PATH.test(path),
    );
  return { ...started, catalog, documentedPaths };
}

describe("the table of route kinds", () => {
  it("documents exactly the catalog's entry routes, and answers each with its endpoint, kind and format", async () => {
    const { app, catalog, documentedPaths } = await service();
    const routes = entryRoutes(catalog.entries);
    expect(await documentedPaths()).toEqual(routes.map(({ url }) => url));
    for (const { url, endpoint, row, format } of routes) {
      // A kind with parameters of its own (a dashboard's: none) takes none of the endpoint's.
      const query = row.kind.params ? "" : `?${new URLSearchParams(endpoint.example)}`;
      const answer = await app.inject({
        method: "HEAD",
        url: `${url}${query}`,
        headers: { "x-api-key": "test-key-0123456789abcdef" },
      });
      expect(answer.statusCode, url).toBe(200);
      const expected =
        row.name === "query"
          ? (format?.contentType ?? "application/json")
          : row.name === "grafana"
            ? "application/json"
            : "text/event-stream";
      expect(answer.headers["content-type"], url).toContain(expected.split(";")[0]);
    }
  });

  it("declares on each entry route the schema the document gives its path: its endpoint's validator as its query string, its own row", async () => {
    const { app, catalog } = await service(
      new LiveCatalog(loadCatalog([BUILT_IN_ENDPOINTS, EXAMPLE_ENDPOINTS])),
    );
    const document = (await app.inject({ url: "/openapi.json" })).json();
    const routes = entryRoutes(catalog.entries);
    expect(routes.map(({ row }) => row.name)).toEqual(
      expect.arrayContaining(["query", "follow", "watch", "grafana"]),
    );
    for (const route of routes) {
      const { url, endpoint, row, format } = route;
      const schema = row.schema(route);
      const operation = document.paths[url].get;
      expect(operation.operationId, url).toBe(schema.operationId);
      const declared = schema.querystring as { properties: Record<string, object> };
      const documented = (operation.parameters ?? []).filter(
        ({ in: where }: { in: string }) => where === "query",
      );
      expect(
        documented.map(({ name }: { name: string }) => name),
        url,
      ).toEqual(Object.keys(declared.properties));
      // A dashboard takes none of its endpoint's parameters, and answers a dashboard, not rows.
      if (row.kind.params) {
        expect(declared.properties, url).toEqual({});
        continue;
      }
      // What validates the query string: the endpoint's validator, as JSON Schema.
      const validated = z.toJSONSchema(endpoint.params, { io: "input", unrepresentable: "any" })
        .properties as Record<string, { examples?: unknown }>;
      // A follow stream's own, and the presentation every kind of an endpoint's rows takes.
      const own = [...(row.name === "follow" ? ["after", "until"] : []), "time_format"];
      const unfollowed =
        row.name === "follow" && endpoint.paging ? notFollowed(endpoint.paging) : [];
      expect(Object.keys(declared.properties).sort(), url).toEqual(
        [...Object.keys(validated).filter((name) => !unfollowed.includes(name)), ...own].sort(),
      );
      for (const [name, { examples: _examples, ...property }] of Object.entries(validated)) {
        if (unfollowed.includes(name)) continue;
        expect(declared.properties[name], `${url} ${name}`).toMatchObject(property);
      }
      // NDJSON and CSV are text, their row named in words.
      if (format?.suffix !== "ndjson" && format?.suffix !== "csv") {
        expect(JSON.stringify(operation.responses["200"]), url).toContain(
          `#/components/schemas/${endpoint.name}.row`,
        );
      }
    }
  });

  it("takes a reload's catalog: a path it adds answers and is documented, a path it removes is 404", async () => {
    const full = loadCatalog();
    const withoutLogs = catalogOf(full.entries.filter(({ name }) => name !== "logs.all"));
    const { get, catalog, documentedPaths } = await service(new LiveCatalog(withoutLogs));
    const logs = full.find("logs.all");
    const query = new URLSearchParams(logs?.example);
    expect((await get(`/api/endpoints/logs.all.csv?${query}`)).statusCode).toBe(404);
    expect(await documentedPaths()).not.toContain("/api/endpoints/logs.all/follow");

    catalog.replace(full);
    expect((await get(`/api/endpoints/logs.all.csv?${query}`)).statusCode).toBe(200);
    expect(await documentedPaths()).toContain("/api/endpoints/logs.all/follow");

    catalog.replace(withoutLogs);
    expect((await get(`/api/endpoints/logs.all/follow?${query}`)).statusCode).toBe(404);
  });
});
