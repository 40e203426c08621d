// GET /openapi.json and GET /docs on the real service (embedded DuckDB, demo data): the document is
// valid OpenAPI 3.1, describes every endpoint, parameter, row, error and header as the service
// answers them, and lists for a scoped credential only what it may call; the docs page loads
// everything from the service itself and needs neither a credential nor its rate budget.
import { readFileSync } from "node:fs";
import { compileErrors, dereference, validate } from "@readme/openapi-parser";
import { describe, expect, it } from "vitest";
import { serviceApp } from "../../src/app.ts";
import { sha256Hex } from "../../src/credentials/authenticate.ts";
import { KeysFile } from "../../src/credentials/keys-file.ts";
import type { EndpointDefinition } from "../../src/endpoints/catalog.ts";
import { BUILT_IN_ENDPOINTS, loadCatalog } from "../../src/endpoints/load-catalog.ts";
import { InvalidParamsError, parseParams } from "../../src/endpoints/params.ts";
import { ERROR_CODES } from "../../src/http/errors.ts";
import { type OpenApiDocument, withEntryPaths } from "../../src/http/openapi/document.ts";
import { describeEntries } from "../../src/http/openapi/entry-document.ts";
import { catalog } from "../support/catalog.ts";
import { configFrom } from "../support/config-from.ts";
import { demoApp } from "../support/demo-app.ts";
import { jsonSchemaValidator, schemaErrors } from "../support/json-schema.ts";
import { temporaryFile } from "../support/temporary-file.ts";

const FULL_KEY = "openapi-full-key-0123456789";
const STATS_KEY = "openapi-stats-key-0123456789";
const PINNED_END_KEY = "openapi-pinned-end-key-0123456789";
const STATS = "functions.invocation-stats";
const LOGS = "logs.all";
/** The docs' example of an operator's endpoint (examples/endpoints/): its `period` has a default. */
const OPERATOR = "auth.failures-per-hour";

const KEYS_PATH = temporaryFile("keys.json", {
  keys: [
    {
      name: "stats-only",
      sha256: sha256Hex(STATS_KEY),
      scopes: [{ endpoint: STATS, fixed_params: { project: "default" } }],
    },
    {
      name: "logs-to-2026",
      sha256: sha256Hex(PINNED_END_KEY),
      scopes: [{ endpoint: LOGS, fixed_params: { iso_timestamp_end: "2026-01-01T00:00:00Z" } }],
    },
  ],
});

const demo = demoApp(
  { auth: { apiKeys: [FULL_KEY] }, cache: { maxEntries: 100, maxBytes: 1e7 } },
  { keysFile: new KeysFile(KEYS_PATH), cache: {} },
);

const get = (url: string, headers: Record<string, string> = {}) =>
  demo.app.inject({ url, headers });

async function documentFor(headers: Record<string, string> = {}): Promise<OpenApiDocument> {
  const response = await get("/openapi.json", headers);
  expect(response.statusCode).toBe(200);
  return response.json();
}

// The document with every $ref replaced by what it names, as a client reads it.
interface Schema {
  [keyword: string]: unknown;
}
interface Parameter {
  name: string;
  in: string;
  required: boolean;
  description?: string;
  example?: string;
  schema: Schema & { enum?: string[]; format?: string; const?: string };
}
interface Response {
  description: string;
  headers?: Record<string, unknown>;
  content?: Record<string, { schema: Schema }>;
}
interface Operation {
  operationId: string;
  tags: string[];
  security?: unknown[];
  parameters: Parameter[];
  responses: Record<string, Response>;
}
interface Resolved {
  paths: Record<string, { get: Operation }>;
}

async function resolved(document: OpenApiDocument): Promise<Resolved> {
  return (await dereference(structuredClone(document) as never)) as unknown as Resolved;
}

async function expectValid(document: OpenApiDocument) {
  const result = await validate(structuredClone(document) as never);
  expect(result.valid, compileErrors(result)).toBe(true);
}

const pathsOf = (endpoint: EndpointDefinition) => [
  `/api/endpoints/${endpoint.name}`,
  `/api/endpoints/query/${endpoint.id}`,
  `/api/endpoints/query/${endpoint.name}`,
];

/** The name paths with a format suffix, which names the format whatever Accept says. */
const suffixPathsOf = (endpoint: EndpointDefinition) =>
  [`/api/endpoints/${endpoint.name}`, `/api/endpoints/query/${endpoint.name}`].flatMap((path) =>
    ["json", "ndjson", "csv"].map((suffix) => `${path}.${suffix}`),
  );

const followPathsOf = (endpoint: EndpointDefinition) =>
  endpoint.paging?.follow ? pathsOf(endpoint).map((path) => `${path}/follow`) : [];

const watchPathsOf = (endpoint: EndpointDefinition) =>
  endpoint.cache ? pathsOf(endpoint).map((path) => `${path}/watch`) : [];

/** Every endpoint's Grafana dashboard, at each of its path forms. */
const grafanaPathsOf = (endpoint: EndpointDefinition) =>
  pathsOf(endpoint).map((path) => `${path}/grafana`);

/** The paths beside the endpoints', for a caller who may read /metrics. */
const SERVICE_PATHS = [
  "/api/endpoints",
  "/api/grafana",
  "/api/alerts",
  "/health",
  "/ready",
  "/metrics",
  "/openapi.json",
];

const END_REASONS = [
  "shutting_down",
  "token_expired",
  "revoked",
  "too_slow",
  "error",
  "settled",
  "endpoint_removed",
  "endpoint_changed",
];

const exampleUrl = (endpoint: EndpointDefinition) =>
  `/api/endpoints/${endpoint.name}?${new URLSearchParams(endpoint.example)}`;

/**
 * Holds the row a document declares to the endpoint's columns: every column as declared, a time
 * column as declared among the forms it may take (what `time_format` writes is held by answers
 * validated against it, not by a copy of the schema's code).
 */
function expectDeclaredRow(row: Schema | undefined, { columns, timeColumns }: EndpointDefinition) {
  const { properties, ...rest } = columns;
  expect(row).toMatchObject(rest);
  const declared = (row as { properties: Record<string, Schema> }).properties;
  expect(Object.keys(declared)).toEqual(Object.keys(properties));
  for (const [name, own] of Object.entries(properties)) {
    if (timeColumns.includes(name)) expect(declared[name]?.anyOf, name).toContainEqual(own);
    else expect(declared[name], name).toEqual(own);
  }
}

/** Whether validation refuses `query`, naming `param`. */
function refuses(endpoint: EndpointDefinition, query: Record<string, string>, param: string) {
  try {
    parseParams(endpoint.params, query);
    return false;
  } catch (error) {
    if (!(error instanceof InvalidParamsError)) throw error;
    return error.details.some((detail) => detail.param === param);
  }
}

const ajv = jsonSchemaValidator();

describe("GET /openapi.json", () => {
  it("is valid OpenAPI 3.1, the same without a credential, with a full-access one and at /docs/json", async () => {
    const everything = await documentFor();
    expect(everything.openapi).toBe("3.1.0");
    await expectValid(everything);
    expect(await documentFor({ "x-api-key": FULL_KEY })).toEqual(everything);
    expect((await get("/docs/json")).json()).toEqual(everything);
  });

  it("describes every endpoint at its three paths and their format suffixes, each parameter as validation takes it", async () => {
    const { paths } = await resolved(await documentFor());
    expect(Object.keys(paths).sort()).toEqual(
      [
        ...catalog.flatMap(pathsOf),
        ...catalog.flatMap(suffixPathsOf),
        ...catalog.flatMap(followPathsOf),
        ...catalog.flatMap(watchPathsOf),
        ...catalog.flatMap(grafanaPathsOf),
        ...SERVICE_PATHS,
      ].sort(),
    );
    for (const endpoint of catalog) {
      for (const path of [...pathsOf(endpoint), ...suffixPathsOf(endpoint)]) {
        const operation = paths[path]?.get as Operation;
        expect(operation.tags).toEqual([endpoint.name]);
        // Swagger UI's "try it" cannot find an operation whose id has a dot in it.
        expect(operation.operationId).toMatch(/^\w+$/);
        const query = operation.parameters.filter((p) => p.in === "query");
        // The endpoint's own, then the presentation every path of its rows takes.
        expect(query.map((p) => p.name)).toEqual([...endpoint.paramNames, "time_format"]);
        for (const parameter of query.filter((p) => p.name !== "time_format")) {
          const { name, schema } = parameter;
          const { [name]: _omitted, ...without } = endpoint.example;
          // A span parameter a time range stands in for is refused missing, but not required.
          const standsIn = endpoint.range?.spanParam === name;
          expect(parameter.required, `${endpoint.name} ${name}`).toBe(
            !standsIn && refuses(endpoint, without, name),
          );
          if (standsIn) expect(refuses(endpoint, without, name)).toBe(true);
          expect(schema.type).toBe("string");
          expect(parameter.description).toMatch(/\w/);
          // The endpoint's example first, the value Swagger UI's "try it" fills in.
          const offered =
            "examples" in parameter
              ? Object.values(parameter.examples as Record<string, { value: string }>).map(
                  ({ value }) => value,
                )
              : [parameter.example];
          if (name in endpoint.example) expect(offered[0]).toBe(endpoint.example[name]);
          else expect(parameter.example).toBeUndefined();
          for (const value of schema.enum ?? []) {
            expect(refuses(endpoint, { ...endpoint.example, [name]: value }, name)).toBe(false);
          }
          if (schema.enum) {
            expect(refuses(endpoint, { ...endpoint.example, [name]: "not-listed" }, name)).toBe(
              true,
            );
          }
        }
      }
    }
    const param = (path: string, name: string) =>
      paths[path]?.get.parameters.find((p) => p.name === name)?.schema;
    expect(param("/api/endpoints/usage.api-counts", "interval")?.enum).toEqual([
      "minutely",
      "hourly",
      "daily",
    ]);
    expect(param("/api/endpoints/usage.api-counts", "project")?.format).toBe("regex");
    expect(param("/api/endpoints/logs.all", "iso_timestamp_start")?.format).toBe("date-time");
    expect(param("/api/endpoints/logs.all", "iso_timestamp_end")?.format).toBe("date-time");
  });

  it("declares each endpoint's rows once, and real answers on demo data conform", async () => {
    const document = await documentFor();
    const { paths } = await resolved(document);
    for (const endpoint of catalog) {
      const [byName, ...others] = pathsOf(endpoint).map((path) => paths[path]?.get as Operation);
      for (const other of others) expect(other.responses["200"]).toEqual(byName?.responses["200"]);
      expectDeclaredRow(document.components.schemas[`${endpoint.name}.row`], endpoint);
      const ok = byName?.responses["200"] as Response;

      const response = await get(exampleUrl(endpoint), { "x-api-key": FULL_KEY });
      expect(response.statusCode).toBe(200);
      const body = response.json();
      expect(body.result.length).toBeGreaterThan(0);
      const json = ok.content?.["application/json"]?.schema as Schema;
      expect(schemaErrors(ajv, json, body), endpoint.name).toEqual([]);
      // Each time format writes rows the same schema admits.
      for (const timeFormat of ["epoch_ms", "rfc3339"]) {
        const presented = await get(`${exampleUrl(endpoint)}&time_format=${timeFormat}`, {
          "x-api-key": FULL_KEY,
        });
        expect(presented.statusCode).toBe(200);
        expect(schemaErrors(ajv, json, presented.json()), `${endpoint.name} ${timeFormat}`).toEqual(
          [],
        );
      }
      // Every header the 200 declares is sent, but those marking a result cut at the cap or a
      // full page (the example's answer is neither), and BigQuery's bytes (this is DuckDB).
      for (const header of Object.keys(ok.headers ?? {})) {
        if (!["X-Result-Truncated", "Link", "X-Bytes-Processed"].includes(header))
          expect(response.headers).toHaveProperty(header.toLowerCase());
      }

      const ndjson = await get(exampleUrl(endpoint), {
        "x-api-key": FULL_KEY,
        accept: "application/x-ndjson",
      });
      expect(ndjson.headers["content-type"]).toMatch(/^application\/x-ndjson/);
      const row = (json.properties as { result: { items: Schema } }).result.items;
      const lines = ndjson.body.trimEnd().split("\n");
      expect(lines).toHaveLength(body.result.length);
      for (const line of lines) expect(schemaErrors(ajv, row, JSON.parse(line))).toEqual([]);
      // JSON is the one typed body: where Accept picks the format, a generated client's `data`
      // is `{result}`. The text formats Accept picks are declared beside it as text, as at their
      // suffix paths, which describe them.
      expect(Object.keys(ok.content ?? {})).toEqual([
        "application/json",
        "application/x-ndjson",
        "text/csv",
      ]);
      for (const mediaType of ["application/x-ndjson", "text/csv"]) {
        expect(ok.content?.[mediaType]?.schema).toMatchObject({ type: "string" });
      }
      for (const [suffix, mediaType] of [
        ["ndjson", "application/x-ndjson"],
        ["csv", "text/csv"],
      ]) {
        const text = paths[`/api/endpoints/${endpoint.name}.${suffix}`]?.get.responses["200"];
        expect(text?.content).toEqual({ [mediaType as string]: { schema: { type: "string" } } });
      }
      // As formats.test.ts finds the service answering no rows.
      const csv = paths[`/api/endpoints/${endpoint.name}.csv`]?.get.responses["200"];
      expect(csv?.description).toContain("no rows, the header record alone");
    }
  });

  it("answers each error in the envelope its status declares", async () => {
    const { paths } = await resolved(await documentFor());
    const cases: [status: number, code: string, url: string, headers: Record<string, string>][] = [
      [400, "invalid_params", "/api/endpoints/logs.all?projct=default", { "x-api-key": FULL_KEY }],
      [400, "bad_request", "/api/endpoints/logs.all?project=%ZZ", { "x-api-key": FULL_KEY }],
      [401, "unauthorized", "/api/endpoints/logs.all?project=default&project_tier=PRO", {}],
      [
        403,
        "forbidden",
        "/api/endpoints/logs.all?project=default&project_tier=PRO",
        { "x-api-key": STATS_KEY },
      ],
      [
        406,
        "not_acceptable",
        "/api/endpoints/logs.all?project=default&project_tier=PRO",
        { "x-api-key": FULL_KEY, accept: "image/png" },
      ],
    ];
    for (const [status, code, url, headers] of cases) {
      const response = await get(url, headers);
      expect(response.statusCode).toBe(status);
      expect(response.json().error.code).toBe(code);
      const declared = paths["/api/endpoints/logs.all"]?.get.responses[String(status)];
      const schema = declared?.content?.["application/json"]?.schema as Schema;
      expect(schemaErrors(ajv, schema, response.json()), code).toEqual([]);
      expect(response.headers).toHaveProperty("x-request-id");
    }
  });

  it("has the envelope of every code the service sends, as docs/api.md tables them, at its status", async () => {
    const document = await documentFor();
    const { components } = document;
    const { paths } = await resolved(document);
    const page = readFileSync(new URL("../../docs/api.md", import.meta.url), "utf8");
    const table = [...page.matchAll(/^\| (\d{3}) \| `(\w+)` \|/gm)].map(([, status, code]) => ({
      status: status as string,
      code: code as string,
    }));
    const sent = Object.entries(ERROR_CODES).map(([code, [status]]) => ({
      status: String(status),
      code,
    }));
    const byCode = (a: { code: string }, b: { code: string }) => a.code.localeCompare(b.code);
    expect(table.sort(byCode)).toEqual(sent.sort(byCode));
    // Every code, 404 and 405 included (an endpoint's path may be 404 after a reload; every path
    // is 405 to a method other than GET and HEAD).
    for (const { status, code } of table) {
      expect(components.schemas).toHaveProperty([`error.${code}`]);
      // Only /ready answers not_ready: the other paths' 503 never does.
      const response =
        code === "not_ready" ? paths["/ready"]?.get.responses["503"] : components.responses[status];
      expect(response?.description).toContain(`\`${code}\``);
    }
  });

  it("names both ways to send a credential, and every response header", async () => {
    const { security, components } = await documentFor();
    expect(security).toEqual([{ apiKey: [] }, { bearer: [] }]);
    expect(components.securitySchemes).toMatchObject({
      apiKey: { type: "apiKey", in: "header", name: "X-API-KEY" },
      bearer: { type: "http", scheme: "bearer" },
    });
    expect(Object.keys(components.headers)).toEqual(
      expect.arrayContaining([
        "X-Cache",
        "Age",
        "ETag",
        "X-Result-Truncated",
        "Link",
        "X-Request-Id",
        "RateLimit-Limit",
        "RateLimit-Remaining",
        "RateLimit-Reset",
        "Retry-After",
      ]),
    );
  });

  it("for a scoped credential lists only what it may call, with the values its scope fixes", async () => {
    const document = await documentFor({ "x-api-key": STATS_KEY });
    await expectValid(document);
    const stats = catalog.find((endpoint) => endpoint.name === STATS) as EndpointDefinition;
    // Not /metrics, which needs full access.
    expect(Object.keys(document.paths).sort()).toEqual(
      [
        ...pathsOf(stats),
        ...suffixPathsOf(stats),
        ...watchPathsOf(stats),
        ...grafanaPathsOf(stats),
        ...["/api/endpoints", "/api/grafana", "/api/alerts", "/health", "/ready", "/openapi.json"],
      ].sort(),
    );
    expect(document.tags.map((tag) => tag.name)).toEqual(["catalog", STATS, "service"]);
    expect(
      Object.keys(document.components.schemas).filter((name) => name.endsWith(".row")),
    ).toEqual([`${STATS}.row`]);
    const { paths } = await resolved(document);
    for (const path of pathsOf(stats)) {
      const parameters = paths[path]?.get.parameters ?? [];
      expect(parameters.find((p) => p.name === "project")).toMatchObject({
        required: false,
        schema: { const: "default" },
      });
      // Required unless a time range stands in for it.
      expect(parameters.find((p) => p.name === "interval")?.required).toBe(false);
    }
    const again = await get("/openapi.json", { "x-api-key": STATS_KEY });
    expect(again.json()).toEqual(document);
  });

  it("lists no follow stream for a credential whose scope fixes an end, which a stream refuses", async () => {
    expect(Object.keys((await documentFor()).paths)).toContain(`/api/endpoints/${LOGS}/follow`);
    const document = await documentFor({ "x-api-key": PINNED_END_KEY });
    await expectValid(document);
    const logs = catalog.find((endpoint) => endpoint.name === LOGS) as EndpointDefinition;
    expect(
      Object.keys(document.paths)
        .filter((path) => path.startsWith("/api/endpoints/"))
        .sort(),
    ).toEqual([...pathsOf(logs), ...suffixPathsOf(logs), ...grafanaPathsOf(logs)].sort());
    expect(document.components.schemas).not.toHaveProperty(["follow.end"]);
    const refused = await get(`/api/endpoints/${LOGS}/follow?project=default&project_tier=FREE`, {
      "x-api-key": PINNED_END_KEY,
    });
    expect(refused.statusCode).toBe(403);
  });

  it("refuses a credential that is sent but invalid", async () => {
    const response = await get("/openapi.json", { "x-api-key": "not-a-key-0123456789" });
    expect(response.statusCode).toBe(401);
    expect(response.json().error.code).toBe("unauthorized");
  });
});

describe("the document of the routes, made each endpoint's own paths", () => {
  it("follows the catalog it is given: an endpoint added is described at its paths, with its parameters and row", async () => {
    const logs = catalog.find((endpoint) => endpoint.name === LOGS) as EndpointDefinition;
    const added: EndpointDefinition = {
      ...logs,
      name: "auth.failures",
      id: "0b0e7c56-4a43-4b8e-9f55-3f1f1b0c2a71",
      description: "Auth failures per hour.",
    };
    await demo.app.ready();
    const generated = demo.app.swagger() as unknown as OpenApiDocument;
    const document = withEntryPaths(generated, await describeEntries([...catalog, added]));
    const paths = Object.keys(document.paths).filter(
      (path) => path.includes(added.name) || path.includes(added.id),
    );
    expect(paths.sort()).toEqual(
      [
        ...pathsOf(added),
        ...suffixPathsOf(added),
        ...followPathsOf(added),
        ...grafanaPathsOf(added),
      ].sort(),
    );
    expect(document.paths[`/api/endpoints/query/${added.id}`]?.get.operationId).toBe(
      "auth_failures_by_id",
    );
    const operation = document.paths[`/api/endpoints/${added.name}`]?.get;
    expect(operation?.tags).toEqual([added.name]);
    expect(operation?.parameters?.filter((p) => p.in === "query").map((p) => p.name)).toEqual([
      ...logs.paramNames,
      "time_format",
    ]);
    expectDeclaredRow(document.components.schemas[`${added.name}.row`], added);
    expect(JSON.stringify(operation?.responses)).toContain(
      `#/components/schemas/${added.name}.row`,
    );
    // The generic routes themselves are not paths of the document.
    expect(Object.keys(document.paths).filter((path) => path.includes("{"))).toEqual([]);
  });
});

describe("an operator's endpoint with a default", () => {
  it("gives the default of each parameter that declares one, in the document and the listing", async () => {
    const examples = new URL("../../examples/endpoints/", import.meta.url).pathname;
    const operator = await serviceApp(configFrom({ auth: { apiKeys: [FULL_KEY] } }), {
      engine: demo.engine,
      catalog: loadCatalog([BUILT_IN_ENDPOINTS, examples]),
    });
    try {
      const key = { "x-api-key": FULL_KEY };
      const document = (await operator.inject({ url: "/openapi.json" })).json() as OpenApiDocument;
      await expectValid(document);
      const { paths } = await resolved(document);
      const period = (path: string) =>
        paths[path]?.get.parameters.find((parameter) => parameter.name === "period");
      for (const path of [`/api/endpoints/${OPERATOR}`, `/api/endpoints/${OPERATOR}.csv`]) {
        expect(period(path)?.schema, path).toMatchObject({ enum: ["day", "week"], default: "day" });
      }
      const listing = (await operator.inject({ url: "/api/endpoints", headers: key })).json() as {
        result: { name: string; params: { name: string; default?: string }[] }[];
      };
      const params = listing.result.find((entry) => entry.name === OPERATOR)?.params;
      expect(params).toEqual([
        expect.not.objectContaining({ default: expect.anything() }),
        expect.objectContaining({ name: "period", default: "day" }),
      ]);
      // A parameter without one says none, in both.
      const project = paths[`/api/endpoints/${OPERATOR}`]?.get.parameters[0];
      expect(project?.schema).not.toHaveProperty("default");
    } finally {
      await operator.close();
    }
  });
});

describe("GET /openapi.json, beside the endpoints", () => {
  const followable = catalog.filter((endpoint) => endpoint.paging?.follow);

  it("describes each follow stream at both path forms: parameters, Last-Event-ID, both framings, the end reasons", async () => {
    expect(followable.map((endpoint) => endpoint.name)).toEqual([LOGS]);
    const { paths } = await resolved(await documentFor());
    for (const endpoint of followable) {
      expect(followPathsOf(endpoint)).toEqual([
        `/api/endpoints/${endpoint.name}/follow`,
        `/api/endpoints/query/${endpoint.id}/follow`,
        `/api/endpoints/query/${endpoint.name}/follow`,
      ]);
      for (const path of followPathsOf(endpoint)) {
        const operation = paths[path]?.get as Operation;
        expect(operation.tags).toEqual([endpoint.name]);
        expect(operation.operationId).toMatch(/^\w+$/);
        // The endpoint's parameters but those a stream refuses, then where it resumes and stops.
        expect(operation.parameters.filter((p) => p.in === "query").map((p) => p.name)).toEqual([
          ...[...endpoint.paramNames].filter(
            (name) => !["iso_timestamp_end", "cursor"].includes(name),
          ),
          "time_format",
          "after",
          "until",
        ]);
        expect(operation.parameters.filter((p) => p.in === "header")).toEqual([
          expect.objectContaining({ name: "Last-Event-ID", required: false }),
        ]);
        expect(Object.keys(operation.responses).sort()).toEqual(
          [
            ...["200", "400", "401", "403", "404", "405", "406", "408"],
            ...["413", "429", "431", "500", "503"],
          ].sort(),
        );
        const ok = operation.responses["200"] as Response;
        expect(Object.keys(ok.content ?? {})).toEqual([
          "text/event-stream",
          "application/x-ndjson",
        ]);
        const events = ok.content?.["text/event-stream"]?.schema as { oneOf: Schema[] };
        const end = events.oneOf.find((event) => event.required?.toString() === "event,data");
        expect(end).toMatchObject({
          properties: {
            event: { const: "end" },
            data: { properties: { reason: { enum: END_REASONS } } },
          },
        });
        for (const reason of END_REASONS) expect(end?.description).toContain(`\`${reason}\``);
      }
    }
    for (const endpoint of catalog.filter((e) => !e.paging?.follow)) {
      for (const path of pathsOf(endpoint)) expect(paths).not.toHaveProperty([`${path}/follow`]);
    }
  });

  it("describes each watch at every path form of a cached endpoint: its parameters, Last-Event-ID, its events", async () => {
    const { paths } = await resolved(await documentFor());
    const watchable = catalog.filter((endpoint) => endpoint.cache);
    expect(watchable.map((endpoint) => endpoint.name)).toEqual([STATS, "usage.api-counts"]);
    for (const endpoint of watchable) {
      for (const path of watchPathsOf(endpoint)) {
        const operation = paths[path]?.get as Operation;
        expect(operation.operationId).toMatch(/^\w+_watch$/);
        expect(operation.parameters.filter((p) => p.in === "query").map((p) => p.name)).toEqual([
          ...endpoint.paramNames,
          "time_format",
        ]);
        expect(operation.parameters.filter((p) => p.in === "header")).toEqual([
          expect.objectContaining({ name: "Last-Event-ID", required: false }),
        ]);
        const ok = operation.responses["200"] as Response;
        expect(Object.keys(ok.content ?? {})).toEqual(["text/event-stream"]);
      }
    }
    for (const endpoint of catalog.filter((e) => !e.cache)) {
      for (const path of pathsOf(endpoint)) expect(paths).not.toHaveProperty([`${path}/watch`]);
    }
  });

  it("answers a follow stream's refusals in the envelopes it declares, and streams in the types it declares", async () => {
    const { paths } = await resolved(await documentFor());
    const declared = (status: number) =>
      paths[`/api/endpoints/${LOGS}/follow`]?.get.responses[String(status)];
    const url = `/api/endpoints/${LOGS}/follow?project=default&project_tier=FREE`;
    const cases: [status: number, code: string, url: string, headers: Record<string, string>][] = [
      [400, "invalid_params", `${url}&iso_timestamp_end=2026-01-01T00:00:00Z`, {}],
      // The route's schema describes `until`; the stream's own check refuses it, naming it.
      [400, "invalid_params", `${url}&until=forever`, {}],
      [400, "bad_request", url, { "last-event-id": "not-an-event-id" }],
      [406, "not_acceptable", url, { accept: "application/json" }],
    ];
    for (const [status, code, path, headers] of cases) {
      const response = await get(path, { "x-api-key": FULL_KEY, ...headers });
      expect(response.statusCode, code).toBe(status);
      expect(response.json().error.code).toBe(code);
      const schema = declared(status)?.content?.["application/json"]?.schema as Schema;
      expect(schemaErrors(ajv, schema, response.json()), code).toEqual([]);
    }

    const base = await demo.app.listen({ host: "127.0.0.1", port: 0 });
    const ok = declared(200) as Response;
    for (const accept of ["text/event-stream", "application/x-ndjson"]) {
      const controller = new AbortController();
      const response = await fetch(`${base}${url}`, {
        headers: { "x-api-key": FULL_KEY, accept },
        signal: controller.signal,
      });
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")?.split(";")[0]).toBe(accept);
      expect(Object.keys(ok.content ?? {})).toContain(accept);
      for (const header of Object.keys(ok.headers ?? {})) {
        expect(response.headers.has(header), header).toBe(true);
      }
      controller.abort();
    }
  });

  it("describes the catalog listing, the probes and the metrics as they answer", async () => {
    const { paths } = await resolved(await documentFor());
    const operation = (path: string) => paths[path]?.get as Operation;
    const declared = (path: string, status: number) =>
      operation(path).responses[String(status)]?.content?.["application/json"]?.schema as Schema;
    const key = { "x-api-key": FULL_KEY };

    const listing = await get("/api/endpoints", key);
    expect(schemaErrors(ajv, declared("/api/endpoints", 200), listing.json())).toEqual([]);
    // Every field the listing has is declared, so none goes unexplained.
    const entry = (declared("/api/endpoints", 200).properties as Record<string, Schema>).result
      ?.items as { properties: Record<string, { items: { properties: object } }> };
    for (const listed of listing.json().result) {
      expect(Object.keys(entry.properties)).toEqual(expect.arrayContaining(Object.keys(listed)));
      for (const param of listed.params) {
        expect(Object.keys(entry.properties.params?.items.properties ?? {})).toEqual(
          expect.arrayContaining(Object.keys(param)),
        );
      }
    }
    const unknown = await get("/api/endpoints?limit=5", key);
    expect(unknown.statusCode).toBe(400);
    expect(schemaErrors(ajv, declared("/api/endpoints", 400), unknown.json())).toEqual([]);
    expect(operation("/api/endpoints").security).toBeUndefined();

    for (const path of ["/health", "/ready"]) {
      const response = await get(path);
      expect(response.statusCode).toBe(200);
      expect(schemaErrors(ajv, declared(path, 200), response.json()), path).toEqual([]);
      // No credential: the operation overrides the document's.
      expect(operation(path).security).toEqual([]);
      expect(operation(path).responses).toHaveProperty(["503"]);
    }
    expect(operation("/ready").responses["503"]?.description).toContain("`not_ready`");

    const metrics = await get("/metrics", key);
    expect(metrics.statusCode).toBe(200);
    expect(metrics.headers["content-type"]).toMatch(/^text\/plain/);
    expect(Object.keys(operation("/metrics").responses["200"]?.content ?? {})).toEqual([
      "text/plain",
    ]);
    const forbidden = await get("/metrics", { "x-api-key": STATS_KEY });
    expect(forbidden.statusCode).toBe(403);
    expect(schemaErrors(ajv, declared("/metrics", 403), forbidden.json())).toEqual([]);
  });

  it("is what /docs shows", async () => {
    const shown = (await get("/docs/json")).json() as OpenApiDocument;
    expect(Object.keys(shown.paths)).toEqual(
      expect.arrayContaining([...SERVICE_PATHS, ...catalog.flatMap(followPathsOf)]),
    );
  });
});

// Hosts named in what the docs page loads that nothing fetches when it opens, and why each is there.
// The page's Content-Security-Policy (default-src 'self') has the browser refuse any other host too.
const NAMED_NOT_FETCHED: Record<string, string> = {
  "": "the bare schemes a linkifier looks for",
  "www.w3.org": "SVG, XHTML, XLink and MathML namespaces",
  "json-schema.org": "JSON Schema dialect identifiers",
  "spec.openapis.org": "OpenAPI dialect identifiers",
  "datatracker.ietf.org": "RFC references in the grammars of URIs and headers",
  "www.rfc-editor.org": "RFC references in the grammars of URIs and headers",
  "example.com": "sample values generated for format: uri",
  "실례.com": "sample values generated for format: iri",
  "validator.swagger.io": "the validator badge's default, turned off (validatorUrl: null)",
  "swagger.io": "a placeholder base for resolving relative references outside a browser",
  "vladimirgorej.com": "a placeholder base for checking that a server URL parses",
  // The template literal `https://base${String(Math.random())...}` matched up to its parenthesis.
  "base${String": "a random placeholder base for sanitizing a URL",
  "spdx.org": "a link made from a license identifier, which this document has none of",
  "github.com": "license and deprecation notes",
  "stackoverflow.com": "a comment in the initializer",
  "reactjs.org": "links in minified error messages",
  "fb.me": "a link in a prop-types error message",
  "redux.js.org": "links in minified error messages",
  "twitter.com": "link targets the Markdown linkifier makes for mentions and hashtags",
  "www.facebook.com": "link targets the Markdown linkifier makes for mentions and hashtags",
  "instagram.com": "link targets the Markdown linkifier makes for mentions and hashtags",
  "www.tiktok.com": "link targets the Markdown linkifier makes for mentions and hashtags",
  "soundcloud.com": "link targets the Markdown linkifier makes for mentions and hashtags",
};

describe("GET /docs", () => {
  /** The page and what it loads when it opens: its scripts and stylesheets, and the document. */
  async function pageAndAssets() {
    const page = await get("/docs");
    const base = new URL("http://localhost/docs");
    const urls = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map(
      ([, url]) => new URL(url as string, base).pathname,
    );
    const assets = await Promise.all(urls.map(async (url) => ({ url, response: await get(url) })));
    return { page, assets };
  }

  it("serves the page and everything it loads, with no credential", async () => {
    const { page, assets } = await pageAndAssets();
    expect(page.statusCode).toBe(200);
    expect(page.headers["content-type"]).toMatch(/^text\/html/);
    // The plugin's files under a path naming their version; the initializer, made from our options, not.
    const versionless = assets.map(({ url }) => url.replace(/\/[0-9a-f]{16}\//, "/<version>/"));
    expect(versionless).toEqual(
      expect.arrayContaining([
        "/docs/static/<version>/swagger-ui.css",
        "/docs/static/<version>/swagger-ui-bundle.js",
        "/docs/static/<version>/swagger-ui-standalone-preset.js",
        "/docs/static/swagger-initializer.js",
      ]),
    );
    for (const { url, response } of assets) expect(response.statusCode, url).toBe(200);
    const initializer = assets.find(({ url }) => url.endsWith("/swagger-initializer.js"));
    // Resolved against the page's URL with a slash added: /docs/json.
    expect(initializer?.response.body).toContain("url: resolveUrl('./json')");
    expect((await get("/docs/json")).json()).toEqual(await documentFor());
  });

  it("loads nothing from another host", async () => {
    const { page, assets } = await pageAndAssets();
    for (const response of [page, ...assets.map((asset) => asset.response)]) {
      expect(response.headers["content-security-policy"]).toMatch(/^default-src 'self';/);
    }
    const texts = [page, ...assets.map((asset) => asset.response)]
      .filter((response) =>
        /^(text\/|application\/javascript)/.test(response.headers["content-type"] as string),
      )
      .map((response) => response.body);
    expect(texts).toHaveLength(6);
    const hosts = new Set(
      texts.flatMap((text) =>
        [...text.matchAll(/https?:\/\/([^/\s"'`()<>\\]*)/g)].map(([, host]) => host as string),
      ),
    );
    expect([...hosts].sort()).toEqual(Object.keys(NAMED_NOT_FETCHED).sort());
    const initializer = assets.find(({ url }) => url.endsWith("/swagger-initializer.js"));
    expect(initializer?.response.body).toContain("validatorUrl: null,");
  });

  it("like /openapi.json, counts against no credential's rate limit", async () => {
    const limited = await serviceApp(
      configFrom({ auth: { apiKeys: [FULL_KEY] }, rateLimitPerMinute: 1 }),
      { engine: demo.engine },
    );
    try {
      const key = { "x-api-key": FULL_KEY };
      for (let i = 0; i < 3; i++) {
        expect((await limited.inject({ url: "/docs" })).statusCode).toBe(200);
        expect((await limited.inject({ url: "/docs/static/swagger-ui.css" })).statusCode).toBe(200);
        expect((await limited.inject({ url: "/openapi.json", headers: key })).statusCode).toBe(200);
      }
      // The limit holds elsewhere.
      expect((await limited.inject({ url: "/api/endpoints", headers: key })).statusCode).toBe(200);
      expect((await limited.inject({ url: "/api/endpoints", headers: key })).statusCode).toBe(429);
    } finally {
      await limited.close();
    }
  });
});
