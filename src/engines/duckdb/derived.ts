// Tables derived from the BigQuery-shaped source tables, shaped for the queries: one flat row per
// invocation or request, in timestamp order, and what they give per hour: sums, and the sorted
// execution times per value bin (queries/duckdb/derived).
// Every change to a source table goes through here, so the derived tables always hold exactly
// what their source rows give.
import { readFileSync } from "node:fs";
import { type DuckDBConnection, DuckDBTimestampTZValue } from "@duckdb/node-api";
import { quoteIdent } from "./tables.ts";
import { inTransaction } from "./transaction.ts";

const DERIVED_DIR = new URL("../../../queries/duckdb/derived/", import.meta.url);
const derivedSql = (name: string) => readFileSync(new URL(`${name}.sql`, DERIVED_DIR), "utf8");

interface Derivation {
  /** The source table. */
  source: string;
  /** One row per element, from a batch of source records (the relation `batch`). */
  rows: string;
  /** Tables of `rows` per hour, each recomputed for the hours [$from, $to). */
  hours: string[];
}

const DERIVATIONS: Derivation[] = [
  { source: "edge_logs", rows: "edge_requests", hours: ["edge_request_hours"] },
  {
    source: "function_edge_logs",
    rows: "function_invocations",
    hours: ["function_invocation_hours", "function_invocation_values"],
  },
];

export const HOUR = 3_600_000_000n;

/**
 * Records appended at once (one demo batch, one slice of an export file): what a batch's sort and
 * derivation hold stays far below any sensible memory limit.
 */
export const BATCH_ROWS = 1_000_000;

/**
 * Creates the derived tables that do not exist yet, and fills them from the source tables when
 * they were missing (a database file written before they existed).
 */
export async function createDerivedTables(connection: DuckDBConnection): Promise<void> {
  const reader = await connection.runAndReadAll(
    "SELECT table_name FROM duckdb_tables() WHERE NOT temporary",
  );
  const existing = new Set(reader.getRows().map(([name]) => name));
  const missing = DERIVATIONS.some((d) => [d.rows, ...d.hours].some((t) => !existing.has(t)));
  if (!missing) return;
  // One transaction: tables that exist are filled.
  await inTransaction(connection, async () => {
    await connection.run(derivedSql("tables"));
    for (const derivation of DERIVATIONS) {
      for (const table of [derivation.rows, ...derivation.hours])
        await connection.run(`DELETE FROM ${quoteIdent(table)}`);
      await derive(connection, derivation, derivation.source);
    }
  });
}

/**
 * Appends the records of table `relation` (with the source table's columns, in timestamp order)
 * to `table` and to what is derived from it. Run it inside the caller's transaction.
 */
export async function appendRecords(
  connection: DuckDBConnection,
  table: string,
  relation: string,
): Promise<number> {
  const derivation = DERIVATIONS.find((d) => d.source === table);
  if (!derivation) throw new Error(`no derived tables for ${table}`);
  const counted = await connection.runAndReadAll(`SELECT count(*) FROM ${quoteIdent(relation)}`);
  const rows = Number(counted.getRows()[0]?.[0] ?? 0);
  // Nothing inserted when there is nothing: see insertRows.
  if (rows === 0) return 0;
  await connection.run(`INSERT INTO ${quoteIdent(table)} FROM ${quoteIdent(relation)}`);
  await derive(connection, derivation, relation);
  return rows;
}

/** Derives the rows and the hours they touch of `relation`'s records. */
async function derive(connection: DuckDBConnection, derivation: Derivation, relation: string) {
  await insertRows(
    connection,
    derivation.rows,
    `WITH batch AS (FROM ${quoteIdent(relation)}) ${derivedSql(derivation.rows)}`,
  );
  const reader = await connection.runAndReadAll(
    `SELECT epoch_us(min(timestamp)), epoch_us(max(timestamp)) FROM ${quoteIdent(relation)}`,
  );
  const [first, last] = reader.getRows()[0] ?? [];
  if (typeof first !== "bigint" || typeof last !== "bigint") return;
  await refreshHours(connection, derivation, floorHour(first), floorHour(last) + HOUR);
}

/** Recomputes the hour sums of [from, to) (whole hours, epoch µs) from the derived rows. */
async function refreshHours(
  connection: DuckDBConnection,
  derivation: Derivation,
  from: bigint,
  to: bigint,
) {
  const range = { from: new DuckDBTimestampTZValue(from), to: new DuckDBTimestampTZValue(to) };
  for (const table of derivation.hours) {
    await connection.run(
      `DELETE FROM ${quoteIdent(table)} WHERE hour >= $from AND hour < $to`,
      range,
    );
    await insertRows(connection, table, derivedSql(table), range);
  }
}

const SCRATCH = "derived_rows";

/**
 * Appends the rows of `select` (ordered) to `table`, through a scratch table so as to insert
 * nothing when there is nothing: DuckDB 1.5.5 silently drops the rows of an insert filling a row
 * group when an insert of no rows into the same table preceded it in the transaction, and a large
 * export file's slices are all appended in one transaction.
 */
async function insertRows(
  connection: DuckDBConnection,
  table: string,
  select: string,
  params?: Record<string, DuckDBTimestampTZValue>,
) {
  await connection.run(`CREATE OR REPLACE TEMP TABLE ${SCRATCH} AS ${select}`, params);
  const reader = await connection.runAndReadAll(`SELECT count(*) FROM ${SCRATCH}`);
  if (Number(reader.getRows()[0]?.[0]) > 0)
    await connection.run(`INSERT INTO ${quoteIdent(table)} FROM ${SCRATCH}`);
  await connection.run(`DROP TABLE ${SCRATCH}`);
}

/** Drops every record older than `cutoff` (epoch µs) from the source tables and what they give. */
export async function dropRecordsBefore(
  connection: DuckDBConnection,
  cutoff: bigint,
): Promise<void> {
  const before = { cutoff: new DuckDBTimestampTZValue(cutoff) };
  for (const derivation of DERIVATIONS) {
    for (const table of [derivation.source, derivation.rows]) {
      await connection.run(`DELETE FROM ${quoteIdent(table)} WHERE timestamp < $cutoff`, before);
    }
    for (const table of derivation.hours)
      await connection.run(`DELETE FROM ${quoteIdent(table)} WHERE hour < $cutoff`, before);
    // The hour the cutoff falls in keeps its later records.
    await refreshHours(connection, derivation, floorHour(cutoff), floorHour(cutoff) + HOUR);
  }
}

/** Empties the source tables and what they give. */
export async function clearRecords(connection: DuckDBConnection): Promise<void> {
  for (const { source, rows, hours } of DERIVATIONS) {
    for (const table of [source, rows, ...hours])
      await connection.run(`DELETE FROM ${quoteIdent(table)}`);
  }
}

function floorHour(micros: bigint): bigint {
  return micros - (((micros % HOUR) + HOUR) % HOUR);
}
