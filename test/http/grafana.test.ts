// Grafana dashboards (GET …/<name>/grafana, GET /api/grafana) end to end on the embedded engine:
// held to Grafana's own dashboard types (@grafana/schema) at compile time and against its defaults
// at run time, and each panel's query sent as Infinity would send it, its real answer read through
// Grafana's own DataFrame (@grafana/data) with the columns the panel declares.
import { createRequire } from "node:module";
import {
  type Dashboard,
  defaultDashboard,
  defaultPanel,
  defaultVariableModel,
} from "@grafana/schema";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { sha256Hex } from "../../src/credentials/authenticate.ts";
import { KeysFile } from "../../src/credentials/keys-file.ts";
import { LiveCatalog } from "../../src/endpoints/catalog.ts";
import { BUILT_IN_ENDPOINTS, loadCatalog } from "../../src/endpoints/load-catalog.ts";
import type { Row } from "../../src/engines/engine.ts";
import { catalogDashboard, endpointDashboard } from "../../src/http/grafana-dashboard.ts";
import { codeBlocks } from "../support/doc-commands.ts";
import {
  edgeLog,
  edgeMetadata,
  functionCall,
  HOUR,
  MINUTE,
  micros,
  request,
  shift,
} from "../support/fixtures.ts";
import { API_KEY, type Service, startService } from "../support/service.ts";
import { temporaryFile } from "../support/temporary-file.ts";

// Its ES build imports moment-timezone's CommonJS by names Node does not find; its CommonJS build
// is the same library.
const { FieldType, toDataFrame } = createRequire(import.meta.url)(
  "@grafana/data",
) as typeof import("@grafana/data");

const NOW = "2026-11-21T05:17:42.123456Z";
/** The project the endpoints' examples name, which the dashboards' variables start at. */
const EXAMPLE_PROJECT = "default";
const TENANT_KEY = "grafana-tenant-key-0123456789";
const HOURLY_KEY = "grafana-hourly-key-0123456789";
/** The docs' operator endpoint, auth.failures-per-hour. */
const EXAMPLE_ENDPOINTS = new URL("../../examples/endpoints/", import.meta.url).pathname;

const TABLES = {
  function_edge_logs: [
    functionCall(shift(NOW, -3n * MINUTE), { project: EXAMPLE_PROJECT, ms: 10 }),
    functionCall(shift(NOW, -2n * MINUTE), { project: EXAMPLE_PROJECT, ms: 30, statuses: [500] }),
    functionCall(shift(NOW, -2n * MINUTE), { project: "acme", ms: 99 }),
  ],
  edge_logs: [
    edgeLog(shift(NOW, -5n * MINUTE), {
      project: EXAMPLE_PROJECT,
      metadata: [edgeMetadata(request("/rest/v1/todos", EXAMPLE_PROJECT))],
    }),
    edgeLog(shift(NOW, -2n * HOUR), {
      project: EXAMPLE_PROJECT,
      metadata: [edgeMetadata(request("/auth/v1/token", EXAMPLE_PROJECT))],
    }),
  ],
};

const KEYS_FILE = temporaryFile("keys.json", {
  keys: [
    {
      name: "tenant",
      sha256: sha256Hex(TENANT_KEY),
      scopes: [{ endpoint: "functions.invocation-stats", fixed_params: { project: "acme" } }],
    },
    {
      name: "hourly",
      sha256: sha256Hex(HOURLY_KEY),
      scopes: [
        {
          endpoint: "functions.invocation-stats",
          fixed_params: { project: "acme", interval: "1hr" },
        },
      ],
    },
  ],
});

async function service() {
  return startService({ now: NOW, tables: TABLES, cache: {}, keysFile: new KeysFile(KEYS_FILE) });
}

/** Text Grafana replaces: `${name}`. */
const macro = (expression: string) => `\${${expression}}`;
const INFINITY = { type: "yesoreyeram-infinity-datasource", uid: macro("datasource") };
const VARIABLE = { hide: 0, skipUrlSync: false, includeAll: false, multi: false } as const;
const STATS_COLUMNS = [
  "min_execution_time",
  "max_execution_time",
  "avg_execution_time",
  "p95_execution_time",
  "p99_execution_time",
  "count",
  "error_count",
];

/**
 * functions.invocation-stats's dashboard for a full-access key, held to Grafana's dashboard type as
 * written (an object literal: a key Grafana does not know is an error too).
 */
const STATS_DASHBOARD = {
  uid: "lq-301c3c3d-c4b3-4d6e-b0a1-e6310fabb99c",
  title: "log-query: functions.invocation-stats",
  description:
    "Time-bucketed statistics of serverless function invocations for one project: counts, error counts, execution times.",
  tags: ["log-query"],
  editable: true,
  timezone: "utc",
  schemaVersion: 42,
  time: { from: "now-6h", to: "now" },
  // Warmed every 300 s: no faster.
  refresh: "5m",
  timepicker: { refresh_intervals: ["5m", "15m", "30m", "1h", "2h", "1d"] },
  templating: {
    list: [
      {
        type: "datasource",
        name: "datasource",
        label: "Infinity datasource",
        query: "yesoreyeram-infinity-datasource",
        ...VARIABLE,
      },
      {
        type: "textbox",
        query: "default",
        name: "project",
        label: "project",
        description: "project ref whose invocations are counted",
        current: { text: "default", value: "default" },
        ...VARIABLE,
      },
      {
        type: "textbox",
        // Empty: the endpoint picks the bucket from its ladder.
        query: "",
        name: "bucket",
        label: "bucket",
        description: expect.stringContaining("bucket size"),
        current: { text: "", value: "" },
        ...VARIABLE,
      },
      {
        type: "textbox",
        query: "300",
        name: "max_points",
        label: "max_points",
        description: expect.stringContaining("buckets"),
        current: { text: "300", value: "300" },
        ...VARIABLE,
      },
    ],
  },
  annotations: { list: [] },
  panels: [
    {
      id: 1,
      type: "timeseries",
      title: "functions.invocation-stats",
      description:
        "Time-bucketed statistics of serverless function invocations for one project: counts, error counts, execution times.",
      gridPos: { h: 9, w: 24, x: 0, y: 0 },
      datasource: INFINITY,
      targets: [
        {
          refId: "A",
          datasource: INFINITY,
          type: "json",
          source: "url",
          parser: "backend",
          format: "timeseries",
          url: "/api/endpoints/functions.invocation-stats",
          url_options: {
            method: "GET",
            params: [
              // The dashboard's range, in epoch milliseconds, in place of the span parameter.
              { key: "from", value: macro("__from") },
              { key: "to", value: macro("__to") },
              { key: "project", value: macro("project") },
              { key: "bucket", value: macro("bucket") },
              { key: "max_points", value: macro("max_points") },
              { key: "time_format", value: "epoch_ms" },
            ],
          },
          root_selector: "result",
          columns: [
            { selector: "timestamp", text: "timestamp", type: "timestamp_epoch" },
            ...STATS_COLUMNS.map((name) => ({ selector: name, text: name, type: "number" })),
          ],
          filters: [],
        },
      ],
      fieldConfig: { defaults: {}, overrides: [] },
      options: {},
    },
  ],
  links: [],
} satisfies Dashboard;

// What the builders make, whatever the endpoints, is Grafana's dashboard type too: checked by tsc
// when the suite is type-checked, as this assignment compiles or not.
const BUILDERS: ((charted: never) => Dashboard)[] = [endpointDashboard, catalogDashboard];
void BUILDERS;

interface Column {
  selector: string;
  text: string;
  type: string;
}
interface Target {
  url: string;
  url_options: { params: { key: string; value: string }[] };
  root_selector: string;
  columns: Column[];
  format: string;
}
interface Served {
  refresh: string;
  templating: { list: { name: string; current?: { value: string } }[] };
  panels: { type: string; title: string; targets: Target[] }[];
}

/** The JSON type of a value as a runtime check can tell it: arrays apart from objects. */
const kind = (value: unknown) =>
  Array.isArray(value) ? "array" : value === null ? "null" : typeof value;

/** Each key `value` shares with Grafana's `defaults` holds a value of the same JSON type. */
function expectShapeOf(value: object, defaults: object, where: string) {
  for (const [key, fallback] of Object.entries(defaults)) {
    if (key in value) {
      expect(kind((value as Record<string, unknown>)[key]), `${where}.${key}`).toBe(kind(fallback));
    }
  }
}

/** The dashboard's range: its last six hours, as Grafana would send them for `now-6h` to `now`. */
const RANGE = {
  from: Number(micros(NOW) / 1000n) - 6 * 3_600_000,
  to: Number(micros(NOW) / 1000n),
};

/** What Grafana makes of a panel's URL: each variable its current value, the range's macros its ends. */
function urlOf(target: Target, variables: Served["templating"]["list"]): string {
  const values = new Map<string, string>([
    ["__from", String(RANGE.from)],
    ["__to", String(RANGE.to)],
    ["__from:date:iso", new Date(RANGE.from).toISOString()],
    ["__to:date:iso", new Date(RANGE.to).toISOString()],
    ...variables.map((variable): [string, string] => [
      variable.name,
      variable.current?.value ?? "",
    ]),
  ]);
  const query = new URLSearchParams(
    target.url_options.params.map(({ key, value }): [string, string] => [
      key,
      value.replace(/\$\{([^}]+)\}/g, (_, name: string) => values.get(name) ?? `unknown ${name}`),
    ]),
  );
  return `${target.url}?${query}`;
}

const FIELD_TYPES: Record<string, string> = {
  timestamp_epoch: FieldType.time,
  number: FieldType.number,
  boolean: FieldType.boolean,
  string: FieldType.string,
};

/**
 * Sends `panel`'s query as Grafana would, and reads the answer as Infinity's backend parser does:
 * the root selector's rows, each declared column a field of the type it declares.
 */
async function expectTypedAnswer(
  get: Service["get"],
  dashboard: Served,
  panel: Served["panels"][number],
) {
  const [target] = panel.targets as [Target];
  const url = urlOf(target, dashboard.templating.list);
  const response = await get(url);
  expect(response.statusCode, `${url}: ${response.body}`).toBe(200);
  const rows = response.json()[target.root_selector] as Row[];
  expect(rows.length, url).toBeGreaterThan(0);
  const frame = toDataFrame({
    name: panel.title,
    fields: target.columns.map((column) => ({
      name: column.text,
      type: FIELD_TYPES[column.type] as (typeof FieldType)[keyof typeof FieldType],
      values: rows.map((row) => row[column.selector]),
    })),
  });
  const time = frame.fields.filter((field) => field.type === FieldType.time);
  expect(time, url).toHaveLength(1);
  for (const instant of time[0]?.values ?? []) {
    expect(typeof instant).toBe("number");
    expect(instant).toBeGreaterThanOrEqual(RANGE.from - 86_400_000);
    expect(instant).toBeLessThanOrEqual(RANGE.to);
  }
  const numbers = frame.fields.filter((field) => field.type === FieldType.number);
  if (panel.type === "timeseries") expect(numbers.length).toBe(frame.fields.length - 1);
  for (const field of numbers) {
    for (const value of field.values) expect(["number", "null"], field.name).toContain(kind(value));
  }
}

describe("a Grafana dashboard", () => {
  it("of functions.invocation-stats is the one Grafana's types hold, with no credential in it", async () => {
    const { get } = await service();
    for (const url of [
      "/api/endpoints/functions.invocation-stats/grafana",
      "/api/endpoints/query/301c3c3d-c4b3-4d6e-b0a1-e6310fabb99c/grafana",
      "/api/endpoints/query/functions.invocation-stats/grafana",
    ]) {
      const response = await get(url);
      expect(response.statusCode, response.body).toBe(200);
      expect(response.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(response.json()).toEqual(STATS_DASHBOARD);
      expect(response.body).not.toContain(API_KEY);
    }
  });

  it("of every endpoint and of the catalog has the shapes of Grafana's defaults", async () => {
    const { get } = await service();
    for (const url of [
      "/api/endpoints/functions.invocation-stats/grafana",
      "/api/endpoints/logs.all/grafana",
      "/api/endpoints/usage.api-counts/grafana",
      "/api/grafana",
    ]) {
      const dashboard = (await get(url)).json();
      expect(dashboard.schemaVersion, url).toBe(defaultDashboard.schemaVersion);
      expectShapeOf(dashboard, defaultDashboard, url);
      for (const panel of dashboard.panels) expectShapeOf(panel, defaultPanel, `${url} panel`);
      for (const variable of dashboard.templating.list) {
        expectShapeOf(variable, defaultVariableModel, `${url} ${variable.name}`);
      }
    }
    expect(
      (await get("/api/grafana")).json().panels.map((p: { title: string }) => p.title),
    ).toEqual(["functions.invocation-stats", "logs.all", "usage.api-counts"]);
  });

  it("asks, for each panel, what Grafana's DataFrame reads as typed: the time a time, numbers numbers", async () => {
    const { get } = await service();
    const dashboard = (await get("/api/grafana")).json() as Served;
    const kinds = dashboard.panels.map((panel) => [panel.title, panel.type]);
    expect(kinds).toEqual([
      ["functions.invocation-stats", "timeseries"],
      ["logs.all", "table"],
      ["usage.api-counts", "timeseries"],
    ]);
    for (const panel of dashboard.panels) await expectTypedAnswer(get, dashboard, panel);
  });

  it("charts an operator's hourly series too: its one time and numbers make a time series", async () => {
    const { get } = await startService({
      now: NOW,
      tables: {
        ...TABLES,
        edge_logs: [
          edgeLog(shift(NOW, -HOUR), {
            project: EXAMPLE_PROJECT,
            metadata: [
              {
                request: [request("/auth/v1/token", EXAMPLE_PROJECT)],
                response: [{ status_code: 401 }],
              },
            ],
          }),
        ],
      },
      cache: {},
      catalog: new LiveCatalog(loadCatalog([BUILT_IN_ENDPOINTS, EXAMPLE_ENDPOINTS])),
    });
    const dashboard = (await get("/api/endpoints/auth.failures-per-hour/grafana")).json() as Served;
    // Warmed every 60 s; its optional period keeps its default, its project is asked for.
    expect(dashboard.refresh).toBe("1m");
    expect(dashboard.templating.list.map((variable) => variable.name)).toEqual([
      "datasource",
      "project",
    ]);
    const [panel] = dashboard.panels as [Served["panels"][number]];
    expect(panel.type).toBe("timeseries");
    await expectTypedAnswer(get, dashboard, panel);
  });

  it("leaves out what the credential's scope fixes, and lists only what it may call", async () => {
    const { get } = await service();
    const tenant = { "x-api-key": TENANT_KEY };
    const own = (await get("/api/endpoints/functions.invocation-stats/grafana", tenant)).json();
    expect(own.templating.list.map((v: { name: string }) => v.name)).toEqual([
      "datasource",
      "bucket",
      "max_points",
    ]);
    const [target] = own.panels[0].targets as [Target];
    expect(target.url_options.params.map(({ key }) => key)).toEqual([
      "from",
      "to",
      "bucket",
      "max_points",
      "time_format",
    ]);
    // Its panel's query answers the scope's project.
    const answer = (await get(urlOf(target, own.templating.list), tenant)).json().result as Row[];
    expect(answer.map((row) => row.max_execution_time)).toEqual([99]);

    const catalog = (await get("/api/grafana", tenant)).json() as Served;
    expect(catalog.panels.map((panel) => panel.title)).toEqual(["functions.invocation-stats"]);
    const forbidden = await get("/api/endpoints/logs.all/grafana", tenant);
    expect(forbidden.statusCode).toBe(403);
  });

  it("gives a scope that fixes the span a panel of that span, with no range it would refuse", async () => {
    const { get } = await service();
    const hourly = { "x-api-key": HOURLY_KEY };
    const dashboard = (
      await get("/api/endpoints/functions.invocation-stats/grafana", hourly)
    ).json();
    expect(dashboard.templating.list.map((v: { name: string }) => v.name)).toEqual(["datasource"]);
    const [target] = dashboard.panels[0].targets as [Target];
    expect(target.url_options.params.map(({ key }) => key)).toEqual(["time_format"]);
    const answer = await get(urlOf(target, dashboard.templating.list), hourly);
    expect(answer.statusCode).toBe(200);
    expect((answer.json().result as Row[]).map((row) => row.max_execution_time)).toContain(99);
  });

  it("refreshes no faster than the endpoint's warming, and never for an uncached one", async () => {
    const { get } = await service();
    const logs = (await get("/api/endpoints/logs.all/grafana")).json();
    expect(logs.refresh).toBe("");
    expect(logs.timepicker.refresh_intervals).toEqual([]);
    // logs.all's range is its window's start and end, in the ISO form it takes.
    expect(logs.panels[0].targets[0].url_options.params.slice(0, 2)).toEqual([
      { key: "iso_timestamp_start", value: macro("__from:date:iso") },
      { key: "iso_timestamp_end", value: macro("__to:date:iso") },
    ]);
    const usage = (await get("/api/endpoints/usage.api-counts/grafana")).json();
    expect(usage.refresh).toBe("5m");
    expect(await get("/api/endpoints/nope/grafana")).toMatchObject({ statusCode: 404 });
    expect((await get("/api/endpoints/logs.all/grafana?project=x")).statusCode).toBe(400);
  });
});

describe("docs/grafana.md", () => {
  it("provisions an Infinity datasource that holds the key, sent as X-API-KEY to the service alone", () => {
    const files = codeBlocks("docs/grafana.md")
      .filter((block) => block.lang === "yaml")
      .map((block) => parseYaml(block.text));
    const [datasource] = files.flatMap((file) => file.datasources ?? []);
    expect(datasource).toMatchObject({
      type: "yesoreyeram-infinity-datasource",
      jsonData: { httpHeaderName1: "X-API-KEY", allowedHosts: [datasource.url] },
      secureJsonData: { httpHeaderValue1: "$LOG_QUERY_KEY" },
    });
    // The dashboards pick any Infinity datasource (the served one is held to STATS_DASHBOARD's
    // `${datasource}` above): none names this one.
    const used = STATS_DASHBOARD.panels.flatMap((panel) => [
      panel.datasource,
      ...(panel.targets ?? []).map((target) => target.datasource),
    ]);
    for (const named of used) expect(named?.uid).not.toBe(datasource.uid);
    const [provider] = files.flatMap((file) => file.providers ?? []);
    expect(provider).toMatchObject({ type: "file", options: { path: expect.any(String) } });
  });
});
