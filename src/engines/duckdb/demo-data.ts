// Realistic generated logs, anchored to "now": the demo data set and the benchmark's data. Rows
// are made inside DuckDB (range + random), so ten million rows take seconds, not minutes, in
// batches of consecutive time slices, oldest first: stored in time order, as logs arrive, and
// never a whole table in memory at once.
import type { DuckDBConnection } from "@duckdb/node-api";
import { DuckDBTimestampTZValue } from "@duckdb/node-api";
import { appendRecords, BATCH_ROWS, createDerivedTables } from "./derived.ts";
import { inTransaction } from "./transaction.ts";

/** Project refs of the demo data: `default` (self-hosted setups use it) and a second one. */
export const DEMO_PROJECTS = ["default", "staging"] as const;
/** Function ids of the demo data (function_edge_logs), fastest first. */
export const DEMO_FUNCTIONS = [
  "hello-world",
  "stripe-webhook",
  "send-email",
  "resize-image",
  "openai-chat",
] as const;
export const DEMO_DOMAIN = "supabase.co";

export interface GenerateOptions {
  /** Epoch microseconds of the newest possible record. */
  now: bigint;
  /** Records spread uniformly over this many days (or a fraction of one) before `now`. */
  days: number;
  edgeLogs: number;
  functionEdgeLogs: number;
}

export const DEMO_SIZE = { days: 7, edgeLogs: 100_000, functionEdgeLogs: 50_000 } as const;

const list = (values: readonly (string | number)[]) =>
  `[${values.map((v) => (typeof v === "string" ? `'${v}'` : String(v))).join(", ")}]`;

// A weighted choice from uniform u in [0, 1): `weights` are [value SQL, cumulative bound] pairs.
const pick = (u: string, weights: [string, number][]) =>
  `CASE ${weights
    .slice(0, -1)
    .map(([value, bound]) => `WHEN ${u} < ${bound} THEN ${value}`)
    .join(" ")} ELSE ${weights.at(-1)?.[0]} END`;

const COMMON = `
  $newest - to_microseconds(CAST(floor(random() * $span_us) AS BIGINT)) AS timestamp,
  ${pick("random()", [
    [`'${DEMO_PROJECTS[0]}'`, 0.8],
    [`'${DEMO_PROJECTS[1]}'`, 1],
  ])} AS ref,
  random() AS u_status`;

const EDGE_LOGS_SQL = `
CREATE OR REPLACE TEMP TABLE staged_demo AS
WITH draws AS (
  SELECT ${COMMON}, random() AS u_area, random() AS u_method, CAST(floor(random() * 5) AS INTEGER) AS k
  FROM range($rows)
),
requests AS (
  SELECT timestamp, ref, ref || '.${DEMO_DOMAIN}' AS host,
    ${pick("u_area", [
      [
        `'/rest/v1/' || ${list(["todos", "profiles", "orders", "products", "messages"])}[k + 1]`,
        0.55,
      ],
      [
        `${list(["/auth/v1/token", "/auth/v1/user", "/auth/v1/signup", "/auth/v1/logout", "/auth/v1/recover"])}[k + 1]`,
        0.72,
      ],
      [`'/storage/v1/object/public/avatars/' || k || '.png'`, 0.87],
      ["'/realtime/v1/websocket'", 1],
    ])} AS path,
    ${pick("u_method", [
      ["'GET'", 0.7],
      ["'POST'", 0.85],
      ["'PATCH'", 0.95],
      ["'DELETE'", 1],
    ])} AS method,
    ${pick("u_status", [
      ["200", 0.88],
      ["201", 0.91],
      ["304", 0.93],
      ["400", 0.95],
      ["401", 0.97],
      ["404", 0.985],
      ["500", 0.995],
      ["503", 1],
    ])} AS status
  FROM draws
)
SELECT CAST(gen_random_uuid() AS VARCHAR) AS id, timestamp,
  method || ' | ' || status || ' | https://' || host || path AS event_message, ref AS project,
  [{'request': [{'method': method, 'path': path, 'url': 'https://' || host || path, 'host': host}],
    'response': [{'status_code': status}]}] AS metadata
FROM requests
ORDER BY timestamp`;

// Execution times are log-normal per function (Box–Muller), with a 1% cold-start tail.
const FUNCTION_EDGE_LOGS_SQL = `
CREATE OR REPLACE TEMP TABLE staged_demo AS
WITH draws AS (
  SELECT ${COMMON}, random() AS u1, random() AS u2, random() AS u_tail,
    CAST(floor(random() * ${DEMO_FUNCTIONS.length}) AS INTEGER) AS k
  FROM range($rows)
),
invocations AS (
  SELECT timestamp, ref, ${list(DEMO_FUNCTIONS)}[k + 1] AS function_id,
    round(exp(${list([2.5, 3.5, 4.5, 5.5, 7])}[k + 1] + 0.5 * sqrt(-2 * ln(1 - u1)) * cos(2 * pi() * u2))
      * CASE WHEN u_tail < 0.01 THEN 6 ELSE 1 END, 3) AS execution_time_ms,
    ${pick("u_status", [
      ["200", 0.9],
      ["201", 0.93],
      ["400", 0.955],
      ["401", 0.97],
      ["404", 0.98],
      ["500", 0.995],
      ["504", 1],
    ])} AS status,
    CASE WHEN k = 1 THEN 'POST' ELSE 'GET' END AS method
  FROM draws
)
SELECT CAST(gen_random_uuid() AS VARCHAR) AS id, timestamp,
  method || ' | ' || status || ' | https://' || ref || '.${DEMO_DOMAIN}/functions/v1/' || function_id AS event_message,
  [{'project_ref': ref, 'function_id': function_id, 'execution_time_ms': execution_time_ms,
    'request': [{'method': method, 'url': 'https://' || ref || '.${DEMO_DOMAIN}/functions/v1/' || function_id}],
    'response': [{'status_code': status}]}] AS metadata
FROM invocations
ORDER BY timestamp`;

const DAY_US = 86_400_000_000;

/**
 * Appends generated records to the (existing) source tables and their derived tables, one time
 * slice per transaction.
 */
export async function generateLogs(
  connection: DuckDBConnection,
  options: GenerateOptions,
): Promise<void> {
  await createDerivedTables(connection);
  const batches = Math.max(
    1,
    Math.ceil(Math.max(options.edgeLogs, options.functionEdgeLogs) / BATCH_ROWS),
  );
  const span = BigInt(Math.round(options.days * DAY_US));
  const share = (total: number, batch: number) =>
    Math.floor((total * (batch + 1)) / batches) - Math.floor((total * batch) / batches);
  for (let batch = 0; batch < batches; batch++) {
    const slice = {
      newest: new DuckDBTimestampTZValue(
        options.now - (span * BigInt(batches - 1 - batch)) / BigInt(batches),
      ),
      span_us: span / BigInt(batches),
    };
    await inTransaction(connection, async () => {
      for (const [table, sql, rows] of [
        ["edge_logs", EDGE_LOGS_SQL, share(options.edgeLogs, batch)],
        ["function_edge_logs", FUNCTION_EDGE_LOGS_SQL, share(options.functionEdgeLogs, batch)],
      ] as const) {
        await connection.run(sql, { ...slice, rows });
        await appendRecords(connection, table, "staged_demo");
      }
      await connection.run("DROP TABLE staged_demo");
    });
  }
}
