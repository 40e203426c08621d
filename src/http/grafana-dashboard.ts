// A Grafana dashboard of endpoints, for the Infinity datasource (yesoreyeram-infinity-datasource):
// what a dashboard builder would otherwise write by hand from the catalog — each endpoint's URL, the
// time range mapped onto its parameters, its columns typed, a variable per parameter to fill in.
// Made from an endpoint's entry and what a credential's scope fixes; it holds no credential (the
// datasource does, docs/grafana.md). Grafana's own dashboard types (@grafana/schema) hold its shape
// in test/http/grafana.test.ts.
import type { EndpointDefinition } from "../endpoints/catalog.ts";
import type { ColumnSchema } from "../endpoints/columns.ts";
import { RANGE_PARAMS } from "../endpoints/time-range.ts";
import { TIME_FORMAT_PARAM, type TimeFormat } from "./formats/time-format.ts";

const INFINITY = "yesoreyeram-infinity-datasource";
/** What Grafana replaces in a query: `${name}` (a variable), `${__from:date:iso}`. */
const macro = (expression: string) => `\${${expression}}`;
/** The dashboard's datasource variable: whichever Infinity datasource the viewer picks. */
const DATASOURCE = { type: INFINITY, uid: macro("datasource") };
/** Grafana's dashboard schema version these dashboards are written in (Grafana 12 and 13). */
const SCHEMA_VERSION = 42;
/** Grafana's own refresh choices; a dashboard offers those no faster than its endpoints' warming. */
const REFRESH_CHOICES: readonly [string, number][] = [
  ["5s", 5],
  ["10s", 10],
  ["30s", 30],
  ["1m", 60],
  ["5m", 300],
  ["15m", 900],
  ["30m", 1800],
  ["1h", 3600],
  ["2h", 7200],
  ["1d", 86400],
];
/** The parameters of an endpoint's time range (time-range.ts). */
const [FROM, TO, BUCKET, MAX_POINTS] = RANGE_PARAMS;
const PANEL_HEIGHT = 9;

/** An Infinity column: how its backend parser types a field of the rows. */
export interface InfinityColumn {
  selector: string;
  text: string;
  type: "timestamp_epoch" | "number" | "boolean" | "string";
}

/**
 * An Infinity query of a JSON URL, read by its backend parser (the one alerting uses). A type, not
 * an interface: Grafana takes a query as a record of any keys.
 */
export type InfinityTarget = {
  refId: string;
  datasource: { type: string; uid: string };
  type: "json";
  source: "url";
  parser: "backend";
  format: "timeseries" | "table";
  url: string;
  url_options: { method: "GET"; params: { key: string; value: string }[] };
  root_selector: "result";
  columns: InfinityColumn[];
  filters: [];
};

export interface GrafanaPanel {
  id: number;
  type: "timeseries" | "table";
  title: string;
  description: string;
  gridPos: { h: number; w: number; x: number; y: number };
  datasource: { type: string; uid: string };
  targets: InfinityTarget[];
  fieldConfig: { defaults: Record<string, never>; overrides: [] };
  options: Record<string, never>;
}

export interface GrafanaVariable {
  type: "datasource" | "custom" | "textbox";
  name: string;
  label: string;
  description?: string;
  query: string;
  current?: { text: string; value: string };
  options?: { text: string; value: string; selected: boolean }[];
  hide: 0;
  skipUrlSync: false;
  includeAll: false;
  multi: false;
}

export interface GrafanaDashboard {
  uid: string;
  title: string;
  description: string;
  tags: string[];
  editable: true;
  timezone: "utc";
  schemaVersion: number;
  time: { from: string; to: string };
  /** "" for none: an endpoint without a cache runs its query on each refresh. */
  refresh: string;
  timepicker: { refresh_intervals: string[] };
  templating: { list: GrafanaVariable[] };
  annotations: { list: [] };
  panels: GrafanaPanel[];
  links: [];
}

/** An endpoint the credential may call, and the parameters its scope fixes (left out). */
export interface Charted {
  endpoint: EndpointDefinition;
  fixed: Readonly<Record<string, unknown>>;
}

/** The dashboard of one endpoint. */
export function endpointDashboard(charted: Charted): GrafanaDashboard {
  const { endpoint } = charted;
  return dashboard(
    `lq-${endpoint.id}`,
    `log-query: ${endpoint.name}`,
    endpoint.description,
    [charted],
    (param) => param,
  );
}

/**
 * One dashboard of every endpoint given, a panel each; their parameters' variables are named by
 * endpoint (`functions_invocation_stats__project`), since two endpoints' `project` may mean
 * different things (a project ref, a URL pattern).
 */
export function catalogDashboard(charted: readonly Charted[]): GrafanaDashboard {
  return dashboard(
    "lq-catalog",
    "log-query: every endpoint",
    "A panel per endpoint this credential may call.",
    charted,
    (param, endpoint) => `${endpoint.name.replace(/\W/g, "_")}__${param}`,
  );
}

function dashboard(
  uid: string,
  title: string,
  description: string,
  charted: readonly Charted[],
  variableName: (param: string, endpoint: EndpointDefinition) => string,
): GrafanaDashboard {
  const panels = charted.map((one, i) => panelOf(one, i, variableName));
  const variables = charted.flatMap((one) => variablesOf(one, variableName));
  const refreshSeconds = slowestWarming(charted.map(({ endpoint }) => endpoint));
  return {
    uid,
    title,
    description,
    tags: ["log-query"],
    editable: true,
    timezone: "utc",
    schemaVersion: SCHEMA_VERSION,
    time: { from: "now-6h", to: "now" },
    refresh: refreshSeconds === undefined ? "" : duration(refreshSeconds),
    timepicker: {
      refresh_intervals:
        refreshSeconds === undefined
          ? []
          : REFRESH_CHOICES.filter(([, seconds]) => seconds >= refreshSeconds).map(
              ([text]) => text,
            ),
    },
    templating: {
      list: [
        {
          type: "datasource",
          name: "datasource",
          label: "Infinity datasource",
          query: INFINITY,
          ...SIMPLE_VARIABLE,
        },
        ...variables,
      ],
    },
    annotations: { list: [] },
    panels,
    links: [],
  };
}

const SIMPLE_VARIABLE = {
  hide: 0,
  skipUrlSync: false,
  includeAll: false,
  multi: false,
} as const;

/**
 * The seconds between refreshes no faster than any cached endpoint's warming (a refresh sooner
 * would only read the same value again); none when no endpoint is cached.
 */
function slowestWarming(endpoints: readonly EndpointDefinition[]): number | undefined {
  const warmings = endpoints.flatMap(({ cache }) => (cache ? [cache.warmingSeconds] : []));
  return warmings.length === 0 ? undefined : Math.max(...warmings);
}

/** Seconds as Grafana writes a duration: `5m`, `1h`, `90s`. */
function duration(seconds: number): string {
  if (seconds % 3600 === 0) return `${seconds / 3600}h`;
  if (seconds % 60 === 0) return `${seconds / 60}m`;
  return `${seconds}s`;
}

/**
 * The endpoint's time range, unless the scope fixes the parameter a range stands in for: that
 * scope takes no range (the two would name different times), only its fixed span.
 */
function rangeOf({ endpoint: { range }, fixed }: Charted) {
  return range && !(range.spanParam !== undefined && range.spanParam in fixed) ? range : undefined;
}

/** How the dashboard's time range reaches an endpoint: the parameters it takes for it. */
function rangeParamsOf(charted: Charted): Record<string, string> {
  const { paging } = charted.endpoint;
  if (rangeOf(charted)) {
    // `${__from}`/`${__to}`: the range's ends in epoch milliseconds, which the endpoint takes.
    return { [FROM]: macro("__from"), [TO]: macro("__to") };
  }
  if (paging) {
    return {
      [paging.window.start]: macro("__from:date:iso"),
      [paging.window.end]: macro("__to:date:iso"),
    };
  }
  return {};
}

/** The parameters the dashboard's own variables fill in: the range's bucket and point count. */
const bucketParamsOf = (charted: Charted) => (rangeOf(charted) ? [BUCKET, MAX_POINTS] : []);

/** Whether the endpoint is a time series: one time column and numbers in every other. */
function isTimeSeries({ columns, timeColumns }: EndpointDefinition): boolean {
  return (
    timeColumns.length === 1 &&
    Object.entries(columns.properties).every(
      ([name, column]) => timeColumns.includes(name) || isNumeric(column),
    )
  );
}

const isNumeric = (column: ColumnSchema) =>
  [column.type].flat().every((type) => type === "integer" || type === "number" || type === "null");

function columnType(name: string, column: ColumnSchema, endpoint: EndpointDefinition) {
  if (endpoint.timeColumns.includes(name)) return "timestamp_epoch";
  if (isNumeric(column)) return "number";
  if ([column.type].flat().includes("boolean")) return "boolean";
  return "string";
}

/** The parameters a variable fills in: required ones the scope does not fix and no range gives. */
function variableParamsOf(charted: Charted): string[] {
  const { endpoint, fixed } = charted;
  const required = endpoint.paramsJsonSchema.required ?? [];
  const ranged = rangeParamsOf(charted);
  return [
    ...required.filter((param) => !(param in fixed) && !(param in ranged)),
    ...bucketParamsOf(charted).filter((param) => !(param in fixed)),
  ];
}

function variablesOf(
  charted: Charted,
  variableName: (param: string, endpoint: EndpointDefinition) => string,
): GrafanaVariable[] {
  const { endpoint } = charted;
  return variableParamsOf(charted).map((param) => {
    const property = endpoint.paramsJsonSchema.properties[param];
    const name = variableName(param, endpoint);
    const label = name === param ? param : `${endpoint.name} ${param}`;
    const description = property?.description;
    const values = property?.enum;
    // An empty bucket is an absent one: the endpoint picks it from its ladder.
    const initial = endpoint.example[param] ?? property?.default ?? "";
    const current = { text: initial, value: initial };
    const common = {
      name,
      label,
      ...(description && { description }),
      current,
      ...SIMPLE_VARIABLE,
    };
    if (!values) return { type: "textbox", query: initial, ...common };
    return {
      type: "custom",
      query: values.join(","),
      options: values.map((value) => ({ text: value, value, selected: value === initial })),
      ...common,
    };
  });
}

function panelOf(
  charted: Charted,
  index: number,
  variableName: (param: string, endpoint: EndpointDefinition) => string,
): GrafanaPanel {
  const { endpoint } = charted;
  const params = [
    ...Object.entries(rangeParamsOf(charted)).filter(([param]) => !(param in charted.fixed)),
    ...variableParamsOf(charted).map((param) => [param, macro(variableName(param, endpoint))]),
    // Instants as epoch milliseconds, which Infinity types as time without a format string.
    [TIME_FORMAT_PARAM, "epoch_ms" satisfies TimeFormat],
  ].map(([key, value]) => ({ key: key as string, value: value as string }));
  const format = isTimeSeries(endpoint) ? "timeseries" : "table";
  return {
    id: index + 1,
    type: format,
    title: endpoint.name,
    description: endpoint.description,
    gridPos: { h: PANEL_HEIGHT, w: 24, x: 0, y: index * PANEL_HEIGHT },
    datasource: DATASOURCE,
    targets: [
      {
        refId: "A",
        datasource: DATASOURCE,
        type: "json",
        source: "url",
        parser: "backend",
        format,
        url: `/api/endpoints/${endpoint.name}`,
        url_options: { method: "GET", params },
        root_selector: "result",
        columns: Object.entries(endpoint.columns.properties).map(([name, column]) => ({
          selector: name,
          text: name,
          type: columnType(name, column, endpoint),
        })),
        filters: [],
      },
    ],
    fieldConfig: { defaults: {}, overrides: [] },
    options: {},
  };
}
