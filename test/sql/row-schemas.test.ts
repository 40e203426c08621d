// The row schema each catalog entry declares is what its BigQuery SQL returns: GoogleSQL's analyzer
// gives the output columns and their SQL types, which must be the declared columns in the same
// order with the JSON types the wire format gives them (docs/api.md, "Responses"); and a
// column is declared nullable exactly where the SQL gives NULL over source rows holding NULL in
// every nullable field it reads.
import { describe, expect, it } from "vitest";
import type { EndpointDefinition } from "../../src/endpoints/catalog.ts";
import type { ColumnSchema } from "../../src/endpoints/columns.ts";
import { catalog } from "../support/catalog.ts";
import {
  edgeLog,
  functionLog,
  invocation,
  MINUTE,
  PROJECT,
  request,
  shift,
} from "../support/fixtures.ts";
import type { Column, Params, Row } from "../support/googlesql.ts";
import { jsonSchemaValidator, schemaErrors } from "../support/json-schema.ts";
import { bigQueryEndpoints, bigQuerySql, windowed } from "../support/queries.ts";
import { referenceEngine } from "../support/reference-engine.ts";

type TypeProto = Column["type"];

/** A JSON Schema's types with names in order, nullability aside. */
interface Shape {
  type: string;
  format?: string;
  items?: Shape;
  properties?: [string, Shape][];
  required?: string[];
}

/** What the wire format makes of a SQL type. */
function expectedShape(type: TypeProto): Shape {
  switch (type.type_kind) {
    case "TYPE_INT64":
      return { type: "integer" };
    case "TYPE_DOUBLE":
      return { type: "number" };
    case "TYPE_STRING":
      return { type: "string" };
    case "TYPE_DATETIME":
      return { type: "string", format: "date-time-local" };
    case "TYPE_TIMESTAMP":
      return { type: "string", format: "date-time" };
    case "TYPE_ARRAY":
      return { type: "array", items: expectedShape(type.array_type?.element_type as TypeProto) };
    case "TYPE_STRUCT": {
      const fields = type.struct_type?.field ?? [];
      return {
        type: "object",
        properties: fields.map((f) => [f.field_name, expectedShape(f.field_type)]),
        required: fields.map((f) => f.field_name),
      };
    }
    default:
      throw new Error(`the wire format has no JSON type for ${type.type_kind}`);
  }
}

function declaredShape(schema: ColumnSchema): Shape {
  return {
    type: Array.isArray(schema.type) ? (schema.type[0] as string) : (schema.type as string),
    ...(schema.format && { format: schema.format }),
    ...(schema.items && { items: declaredShape(schema.items) }),
    ...(schema.properties && {
      properties: Object.entries(schema.properties).map(([name, field]) => [
        name,
        declaredShape(field),
      ]),
    }),
    ...(schema.required && { required: [...schema.required] }),
  };
}

/** Where a schema admits null, as paths such as `metadata[].response[].status_code`. */
function nullablePaths(schema: ColumnSchema, path = ""): string[] {
  return [
    ...(Array.isArray(schema.type) ? [path] : []),
    ...(schema.items ? nullablePaths(schema.items, `${path}[]`) : []),
    ...Object.entries(schema.properties ?? {}).flatMap(([name, field]) =>
      nullablePaths(field, path ? `${path}.${name}` : name),
    ),
  ];
}

/** Where a value holds null, as the same paths. */
function nullPaths(value: unknown, path = ""): string[] {
  if (value === null) return [path];
  if (Array.isArray(value)) return value.flatMap((element) => nullPaths(element, `${path}[]`));
  if (typeof value !== "object") return [];
  return Object.entries(value as Row).flatMap(([name, field]) =>
    nullPaths(field, path ? `${path}.${name}` : name),
  );
}

const NOW = "2026-11-21T05:17:42.123456Z";
const RECENT = shift(NOW, -MINUTE);

// For each endpoint, one source record in its window holding NULL in every nullable field its
// query reads (BigQuery arrays are never NULL, so those are present, their fields NULL).
const NULL_RECORDS: Record<string, { table: string; params: Params; rows: Row[] }> = {
  "functions.invocation-stats": {
    table: "function_edge_logs",
    params: { project: PROJECT, interval: "1hr" },
    rows: [
      {
        ...functionLog(RECENT, {
          ...invocation({ functionId: null, ms: null }),
          response: [{ status_code: null }],
        }),
        id: null,
      },
    ],
  },
  "logs.all": {
    table: "edge_logs",
    params: { project: PROJECT, project_tier: "FREE" },
    rows: [
      {
        ...edgeLog(RECENT, {
          metadata: [
            {
              request: [{ method: null, path: null, url: null, host: null }],
              response: [{ status_code: null }],
            },
          ],
        }),
        id: null,
        event_message: null,
      },
    ],
  },
  "usage.api-counts": {
    table: "edge_logs",
    params: { project: PROJECT, interval: "hourly" },
    rows: [
      edgeLog(RECENT, {
        metadata: [
          {
            request: [{ ...request("/rest/v1/todos"), method: null, path: null, host: null }],
            response: [{ status_code: null }],
          },
        ],
      }),
    ],
  },
};

const engine = referenceEngine();
const ajv = jsonSchemaValidator();

it("declares a row schema for every endpoint with a bigquery.sql, and for nothing else", () => {
  expect(catalog.map((endpoint) => endpoint.name).sort()).toEqual(bigQueryEndpoints());
});

describe.each(catalog.map((endpoint): [string, EndpointDefinition] => [endpoint.name, endpoint]))(
  "%s",
  (name, endpoint) => {
    it("declares the analyzer's output columns, in order, with their JSON types", async () => {
      const columns = await engine.analyze(bigQuerySql(name));
      expect(declaredShape(endpoint.columns)).toEqual(
        expectedShape({
          type_kind: "TYPE_STRUCT",
          struct_type: { field: columns.map((c) => ({ field_name: c.name, field_type: c.type })) },
        }),
      );
    });

    it("is nullable exactly where the SQL gives NULL, and its rows conform", async () => {
      const fixture = NULL_RECORDS[name];
      if (!fixture) throw new Error(`no NULL fixture for ${name}`);
      const { rows } = await engine.query(bigQuerySql(name), {
        tables: { [fixture.table]: fixture.rows },
        params: windowed(name, fixture.params, NOW),
        now: NOW,
      });
      expect(rows.length).toBeGreaterThan(0);
      const found = new Set(rows.flatMap((row) => nullPaths(row)));
      expect([...found].sort()).toEqual(nullablePaths(endpoint.columns).sort());
      for (const row of rows) expect(schemaErrors(ajv, endpoint.columns, row)).toEqual([]);
    });
  },
);
