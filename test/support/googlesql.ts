// GoogleSQL's reference engine (the ZetaSQL local service shipped in @fivetrandevelopers/zetasql)
// as an executor for our BigQuery SQL: a supervised server process plus a gRPC client that builds
// the catalog from queries/schema/*.json, pins CURRENT_TIMESTAMP and binds STRING parameters.
import { type ChildProcess, spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { referencedParams } from "../../src/engines/sql-text.ts";
import { type SchemaField, sourceTables } from "../../src/schema.ts";
import { formatDatetime, formatTimestamp, parseIsoTimestamp } from "../../src/time.ts";
import { freePort } from "./free-port.ts";

const packageDir = dirname(
  createRequire(import.meta.url).resolve("@fivetrandevelopers/zetasql/package.json"),
);
const SERVER_BINARY = join(packageDir, "lib/zetasql/remote_server.so");
const PROTO_DIR = join(packageDir, "lib/zetasql/protos");

// ---------------------------------------------------------------------------------------------
// The server process

/** Runs `remote_server` on a loopback port and starts it again on the same port if it dies. */
export class GoogleSqlServer {
  private child: ChildProcess | undefined;
  private stopping = false;
  readonly port: number;

  private constructor(port: number) {
    this.port = port;
  }

  static async start(): Promise<GoogleSqlServer> {
    const server = new GoogleSqlServer(await freePort());
    await server.spawn();
    return server;
  }

  private spawn(): Promise<void> {
    const child = spawn(SERVER_BINARY, ["localhost", String(this.port)], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.child = child;
    child.on("exit", () => {
      // A restart that fails shows as the next calls failing at their deadline.
      if (!this.stopping && this.child === child) this.spawn().catch(() => undefined);
    });
    // Connecting before "listening" puts grpc-js into a ~1 s reconnect backoff.
    return new Promise((resolve, reject) => {
      let output = "";
      const onData = (chunk: Buffer) => {
        output += chunk;
        if (output.includes("listening")) resolve();
      };
      child.stdout?.on("data", onData);
      child.stderr?.on("data", onData);
      child.once("error", reject);
      child.once("exit", (code) => reject(new Error(`remote_server exited (${code}): ${output}`)));
    });
  }

  /** Kills the current process (the supervisor restarts it); for tests of the restart. */
  crash(): void {
    this.child?.kill("SIGKILL");
  }

  async stop(): Promise<void> {
    this.stopping = true;
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    await new Promise((resolve) => {
      child.once("exit", resolve);
      child.kill("SIGTERM");
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Types: BigQuery schema JSON → ZetaSQL TypeProto

type TypeProto = {
  type_kind: string;
  array_type?: { element_type: TypeProto };
  struct_type?: { field: { field_name: string; field_type: TypeProto }[] };
};

const SCALAR_KINDS: Record<string, string> = {
  STRING: "TYPE_STRING",
  TIMESTAMP: "TYPE_TIMESTAMP",
  DATETIME: "TYPE_DATETIME",
  INTEGER: "TYPE_INT64",
  INT64: "TYPE_INT64",
  FLOAT: "TYPE_DOUBLE",
  FLOAT64: "TYPE_DOUBLE",
  BOOLEAN: "TYPE_BOOL",
  BOOL: "TYPE_BOOL",
};

function fieldType(field: SchemaField): TypeProto {
  const element: TypeProto =
    field.type === "RECORD" || field.type === "STRUCT"
      ? {
          type_kind: "TYPE_STRUCT",
          struct_type: {
            field: (field.fields ?? []).map((f) => ({
              field_name: f.name,
              field_type: fieldType(f),
            })),
          },
        }
      : { type_kind: scalarKind(field.type) };
  return field.mode === "REPEATED"
    ? { type_kind: "TYPE_ARRAY", array_type: { element_type: element } }
    : element;
}

function scalarKind(type: string): string {
  const kind = SCALAR_KINDS[type];
  if (!kind) throw new Error(`unsupported schema type ${type}`);
  return kind;
}

// ---------------------------------------------------------------------------------------------
// Values: plain JS ⇄ ZetaSQL ValueProto

type ValueProto = Record<string, unknown>;

/** Encodes a JS value; TIMESTAMP accepts an ISO 8601 string with zone or epoch micros (bigint). */
function toValue(value: unknown, type: TypeProto): ValueProto {
  if (value === null || value === undefined) return {};
  switch (type.type_kind) {
    case "TYPE_STRING":
      return { string_value: String(value) };
    case "TYPE_INT64":
      return { int64_value: String(value) };
    case "TYPE_DOUBLE":
      return { double_value: Number(value) };
    case "TYPE_BOOL":
      return { bool_value: Boolean(value) };
    case "TYPE_TIMESTAMP": {
      const micros = typeof value === "bigint" ? value : parseIsoTimestamp(String(value));
      if (micros === undefined) throw new Error(`not an ISO 8601 timestamp with zone: ${value}`);
      const seconds = micros / 1_000_000n - (micros % 1_000_000n < 0n ? 1n : 0n);
      return {
        timestamp_value: {
          seconds: String(seconds),
          nanos: Number(micros - seconds * 1_000_000n) * 1000,
        },
      };
    }
    case "TYPE_ARRAY": {
      const element = type.array_type?.element_type as TypeProto;
      return { array_value: { element: (value as unknown[]).map((v) => toValue(v, element)) } };
    }
    case "TYPE_STRUCT": {
      const record = value as Record<string, unknown>;
      const fields = type.struct_type?.field ?? [];
      return {
        struct_value: { field: fields.map((f) => toValue(record[f.field_name], f.field_type)) },
      };
    }
    default:
      throw new Error(`cannot encode ${type.type_kind}`);
  }
}

/** Decodes to the service's wire format: TIMESTAMP/DATETIME as strings, INT64 as number. */
function fromValue(value: ValueProto | undefined, type: TypeProto): unknown {
  if (!value || Object.keys(value).length === 0) return null;
  switch (type.type_kind) {
    case "TYPE_STRING":
      return value.string_value;
    case "TYPE_INT64":
      return Number(value.int64_value);
    case "TYPE_DOUBLE":
      return Number(value.double_value);
    case "TYPE_BOOL":
      return value.bool_value;
    case "TYPE_TIMESTAMP": {
      const { seconds = "0", nanos = 0 } = value.timestamp_value as {
        seconds?: string;
        nanos?: number;
      };
      return formatTimestamp(BigInt(seconds) * 1_000_000n + BigInt(Math.floor(nanos / 1000)));
    }
    case "TYPE_DATETIME": {
      const { bit_field_datetime_seconds: bits = "0", nanos = 0 } = value.datetime_value as {
        bit_field_datetime_seconds?: string;
        nanos?: number;
      };
      return formatDatetime(datetimeMicros(BigInt(bits), nanos));
    }
    case "TYPE_ARRAY": {
      const elements = (value.array_value as { element?: ValueProto[] }).element ?? [];
      return elements.map((e) => fromValue(e, type.array_type?.element_type as TypeProto));
    }
    case "TYPE_STRUCT": {
      const cells = (value.struct_value as { field?: ValueProto[] }).field ?? [];
      const fields = type.struct_type?.field ?? [];
      return Object.fromEntries(
        fields.map((f, i) => [f.field_name, fromValue(cells[i], f.field_type)]),
      );
    }
    default:
      throw new Error(`cannot decode ${type.type_kind}`);
  }
}

/** DATETIME is bit-packed, low bits first: second 6, minute 6, hour 5, day 5, month 4, year 14. */
function datetimeMicros(bits: bigint, nanos: number): bigint {
  const take = (shift: bigint, width: bigint) => Number((bits >> shift) & ((1n << width) - 1n));
  const utc = Date.UTC(
    take(26n, 14n),
    take(22n, 4n) - 1,
    take(17n, 5n),
    take(12n, 5n),
    take(6n, 6n),
    take(0n, 6n),
  );
  return BigInt(utc) * 1000n + BigInt(Math.floor(nanos / 1000));
}

// ---------------------------------------------------------------------------------------------
// The client

export type Row = Record<string, unknown>;
/** A node of the analyzer's resolved tree, as decoded from its protos. */
export type ResolvedNode = Record<string, unknown>;
export type Params = Record<string, string | null | undefined>;

export interface Column {
  name: string;
  type: TypeProto;
}

export interface QueryOptions {
  /** Rows per table; tables left out are empty. */
  tables?: Record<string, Row[]>;
  /** Named STRING parameters; a referenced parameter that is absent binds as NULL. */
  params?: Params;
  /** CURRENT_TIMESTAMP() for this query (ISO 8601 with zone). */
  now: string;
}

export interface QueryResult {
  columns: Column[];
  rows: Row[];
}

/** A SQL error from the engine, with its 1-based position when it gave one. */
/** Whether the text of `sql` before line `line`, column `column` (1-based) ends with a semicolon. */
function endsStatement(sql: string, line = 1, column = 1): boolean {
  const lines = sql.split("\n");
  const before = [...lines.slice(0, line - 1), (lines[line - 1] ?? "").slice(0, column - 1)];
  // Comments between the semicolon and the next statement are skipped too.
  const text = before.join("\n").replace(/--[^\n]*|#[^\n]*|\/\*[\s\S]*?\*\//g, "");
  return text.trimEnd().endsWith(";");
}

export class GoogleSqlError extends Error {
  readonly line: number | undefined;
  readonly column: number | undefined;
  /** The gRPC status code. */
  readonly code: number | undefined;

  constructor(message: string, line?: number, column?: number, code?: number) {
    super(message);
    this.name = "GoogleSqlError";
    this.line = line;
    this.column = column;
    this.code = code;
  }
}

// The reference evaluator lacks APPROX_QUANTILES. This shim is exact: element i of n is the value
// of rank floor(i·(len−1)/n) in sorted order, which matches BigQuery's documented examples; BigQuery
// itself is approximate, so on large inputs its answer may be another nearby value. ARRAY_AGG gives
// NULL (not []) when every input is NULL, and BigQuery's APPROX_QUANTILES is NULL then too.
const EXACT_QUANTILES_SQL =
  "IF(IFNULL(ARRAY_LENGTH(a), 0) = 0, NULL, ARRAY(" +
  "SELECT s[OFFSET(DIV(i * (ARRAY_LENGTH(s) - 1), n))] " +
  "FROM (SELECT ARRAY(SELECT v FROM UNNEST(a) AS v ORDER BY v) AS s), UNNEST(GENERATE_ARRAY(0, n)) AS i " +
  "ORDER BY i))";

const DOUBLE: TypeProto = { type_kind: "TYPE_DOUBLE" };
const INT64: TypeProto = { type_kind: "TYPE_INT64" };
const DOUBLE_ARRAY: TypeProto = { type_kind: "TYPE_ARRAY", array_type: { element_type: DOUBLE } };

function fixed(type: TypeProto, options?: Record<string, unknown>) {
  return { kind: "ARG_TYPE_FIXED", type, num_occurrences: 1, ...(options && { options }) };
}

function sqlFunction(
  name: string,
  mode: "SCALAR" | "AGGREGATE",
  args: { name: string; type: TypeProto; notAggregate?: boolean }[],
  returns: TypeProto,
  body: string,
) {
  return {
    name_path: [name],
    group: "Templated_SQL_Function",
    mode,
    signature: [
      {
        argument: args.map((a) =>
          fixed(a.type, a.notAggregate ? { is_not_aggregate: true } : undefined),
        ),
        return_type: fixed(returns),
      },
    ],
    parse_resume_location: { input: body, byte_position: 0 },
    templated_sql_function_argument_name: args.map((a) => a.name),
  };
}

function shimFunctions(now: string) {
  return [
    sqlFunction(
      "current_timestamp",
      "SCALAR",
      [],
      { type_kind: "TYPE_TIMESTAMP" },
      `TIMESTAMP '${now}'`,
    ),
    sqlFunction(
      "__exact_quantiles",
      "SCALAR",
      [
        { name: "a", type: DOUBLE_ARRAY },
        { name: "n", type: INT64 },
      ],
      DOUBLE_ARRAY,
      EXACT_QUANTILES_SQL,
    ),
    sqlFunction(
      "approx_quantiles",
      "AGGREGATE",
      [
        { name: "x", type: DOUBLE },
        { name: "n", type: INT64, notAggregate: true },
      ],
      DOUBLE_ARRAY,
      "__exact_quantiles(ARRAY_AGG(x IGNORE NULLS), n)",
    ),
  ];
}

/** The analyzer's resolved statement nodes, by the name BigQuery's dry run gives their kind. */
const STATEMENT_TYPES: Readonly<Record<string, string>> = {
  resolved_query_stmt_node: "SELECT",
  resolved_insert_stmt_node: "INSERT",
  resolved_update_stmt_node: "UPDATE",
  resolved_delete_stmt_node: "DELETE",
  resolved_merge_stmt_node: "MERGE",
  resolved_truncate_stmt_node: "TRUNCATE_TABLE",
  resolved_drop_stmt_node: "DROP_TABLE",
  resolved_create_statement_node: "CREATE_TABLE",
};

// biome-ignore lint/suspicious/noExplicitAny: the service is typed by its .proto at run time.
type Service = any;

export class GoogleSql {
  private readonly service: Service;
  // From queries/schema, so that schema and tests cannot drift.
  private readonly schemas = Object.fromEntries(sourceTables().map((t) => [t.name, t.fields]));
  private languageOptions: Promise<Record<string, unknown>> | undefined;

  constructor(port: number) {
    const definition = protoLoader.loadSync("local_service.proto", {
      includeDirs: [PROTO_DIR],
      keepCase: true,
      longs: String,
      enums: String,
      oneofs: true,
    });
    const root = grpc.loadPackageDefinition(definition) as Service;
    this.service = new root.zetasql.local_service.ZetaSqlLocalService(
      `localhost:${port}`,
      grpc.credentials.createInsecure(),
    );
  }

  close(): void {
    this.service.close();
  }

  /** Runs one query over the given rows and decodes the result. */
  async query(sql: string, options: QueryOptions): Promise<QueryResult> {
    const tables = options.tables ?? {};
    const unknown = Object.keys(tables).filter((name) => !this.schemas[name]);
    if (unknown.length > 0) throw new Error(`no schema for table(s) ${unknown.join(", ")}`);
    const names = referencedParams(sql);
    const response = await this.call("EvaluateQuery", {
      sql,
      options: await this.analyzerOptions(names, options.now),
      simple_catalog: await this.catalog(options.now),
      table_content: this.tableContent(tables),
      params: names.map((name) => ({ name, value: toValue(options.params?.[name], STRING) })),
    });
    const columns: Column[] = response.prepared.columns;
    const rows: { cell?: ValueProto[] }[] = response.content?.table_data?.row ?? [];
    return {
      columns,
      rows: rows.map(({ cell = [] }) =>
        Object.fromEntries(columns.map((c, i) => [c.name, fromValue(cell[i], c.type)])),
      ),
    };
  }

  /** Validates a query against the catalog (BigQuery's APPROX_QUANTILES included) and returns its output columns. */
  async analyze(sql: string): Promise<Column[]> {
    const scan = (await this.resolve(sql)).resolved_query_stmt_node as
      | { output_column_list?: { name: string; column: { type: TypeProto } }[] }
      | undefined;
    return (scan?.output_column_list ?? []).map(
      (c: { name: string; column: { type: TypeProto } }) => ({ name: c.name, type: c.column.type }),
    );
  }

  /**
   * The analyzer's resolved tree of a query (AnyResolvedStatementProto, as proto-loader decodes it):
   * its structure, whatever the text's layout. Throws GoogleSqlError when the query is invalid.
   */
  async resolve(sql: string): Promise<ResolvedNode> {
    const now = "1970-01-01T00:00:00Z";
    const response = await this.call("Analyze", {
      sql_statement: sql,
      options: await this.analyzerOptions(referencedParams(sql), now),
      simple_catalog: await this.catalog(now),
    });
    return response.resolved_statement ?? {};
  }

  /**
   * The kind of statement `sql` is, as BigQuery's dry run names it (JobStatistics2.statementType):
   * SELECT for a query, DELETE, DROP_TABLE and so on for the rest, SCRIPT for more than one
   * statement. Throws GoogleSqlError when the text is not valid GoogleSQL.
   */
  async statementType(sql: string): Promise<string> {
    const now = "1970-01-01T00:00:00Z";
    const options = await this.analyzerOptions(referencedParams(sql), now);
    try {
      const response = await this.call("Analyze", {
        sql_statement: sql,
        options: {
          ...options,
          language_options: { ...options.language_options, supported_statement_kinds: [] },
        },
        simple_catalog: await this.catalog(now),
      });
      const node = Object.keys(response.resolved_statement ?? {}).find((key) => key !== "node");
      return STATEMENT_TYPES[node ?? ""] ?? "OTHER";
    } catch (error) {
      // The analyzer takes one statement; BigQuery runs several as a script. Where the first one
      // ends at a semicolon the text goes on with another; anywhere else it is a syntax error.
      if (
        error instanceof GoogleSqlError &&
        /Expected end of input but got/.test(error.message) &&
        endsStatement(sql, error.line, error.column)
      ) {
        return "SCRIPT";
      }
      const unsupported = /^Statement not supported: (\w+?)(?:Statement|Stmt)\b/.exec(
        (error as Error).message,
      );
      if (unsupported?.[1]) return unsupported[1].replace(/(?<=.)([A-Z])/g, "_$1").toUpperCase();
      throw error;
    }
  }

  private tableContent(tables: Record<string, Row[]>) {
    return Object.fromEntries(
      Object.entries(this.schemas).map(([name, fields]) => {
        const types = fields.map(fieldType);
        const rows = (tables[name] ?? []).map((row) => ({
          cell: fields.map((field, i) => toValue(row[field.name], types[i] as TypeProto)),
        }));
        return [name, { table_data: { row: rows } }];
      }),
    );
  }

  private async catalog(now: string) {
    const language = await this.language();
    return {
      name: "catalog",
      table: Object.entries(this.schemas).map(([name, fields]) => ({
        name,
        column: fields.map((field) => ({ name: field.name, type: fieldType(field) })),
      })),
      builtin_function_options: {
        language_options: language,
        exclude_function_ids: ["FN_CURRENT_TIMESTAMP", "FN_APPROX_QUANTILES"],
      },
      custom_function: shimFunctions(now),
    };
  }

  private async analyzerOptions(paramNames: string[], _now: string) {
    return {
      language_options: await this.language(),
      query_parameters: paramNames.map((name) => ({ name, type: STRING })),
      error_message_mode: "ERROR_MESSAGE_ONE_LINE",
      default_timezone: "UTC",
      enabled_rewrites: await this.rewrites(),
    };
  }

  private language(): Promise<Record<string, unknown>> {
    this.languageOptions ??= this.call("GetLanguageOptions", { maximum_features: true }).then(
      (max: { enabled_language_features: string[] }) => ({
        name_resolution_mode: "NAME_RESOLUTION_DEFAULT",
        product_mode: "PRODUCT_EXTERNAL",
        error_on_deprecated_syntax: false,
        enabled_language_features: max.enabled_language_features.filter(
          (f) => f !== "FEATURE_TIMESTAMP_NANOS",
        ),
        supported_statement_kinds: ["RESOLVED_QUERY_STMT"],
      }),
    );
    return this.languageOptions;
  }

  private rewritesCache: Promise<string[]> | undefined;

  // enabled_rewrites replaces the default set, so the defaults go in with the SQL-function inliners.
  private rewrites(): Promise<string[]> {
    this.rewritesCache ??= this.call("GetAnalyzerOptions", {}).then(
      (defaults: { enabled_rewrites?: string[] }) => [
        ...new Set([
          ...(defaults.enabled_rewrites ?? []),
          "REWRITE_INLINE_SQL_FUNCTIONS",
          "REWRITE_INLINE_SQL_UDAS",
        ]),
      ],
    );
    return this.rewritesCache;
  }

  /** One RPC; a call that meets a dead server is made once more, after the supervisor's restart. */
  private async call(method: string, request: unknown): Promise<Service> {
    try {
      return await this.callOnce(method, request);
    } catch (error) {
      if ((error as GoogleSqlError).code !== grpc.status.UNAVAILABLE) throw error;
      return this.callOnce(method, request);
    }
  }

  private callOnce(method: string, request: unknown): Promise<Service> {
    // Waiting for a ready channel carries the call over the server's restart.
    const metadata = new grpc.Metadata({ waitForReady: true });
    const options = { deadline: Date.now() + CALL_DEADLINE_MS };
    return new Promise((resolve, reject) => {
      this.service[method](
        request,
        metadata,
        options,
        (error: grpc.ServiceError | null, response: unknown) => {
          if (!error) return resolve(response);
          const at = /\[at (\d+):(\d+)\]/.exec(error.details);
          reject(
            new GoogleSqlError(
              error.details || error.message,
              Number(at?.[1]) || undefined,
              Number(at?.[2]) || undefined,
              error.code,
            ),
          );
        },
      );
    });
  }
}

const STRING: TypeProto = { type_kind: "TYPE_STRING" };
const CALL_DEADLINE_MS = 60_000;
