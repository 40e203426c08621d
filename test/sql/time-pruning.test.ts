// Every BigQuery query prunes by time: each scan of a day-partitioned table (edge_logs,
// function_edge_logs) compares `timestamp` itself with a bound parameter in its WHERE's top-level
// AND, and the service binds that parameter a concrete instant whatever the caller gives. The form
// is read from the analyzer's resolved tree (support/time-bounds.ts), so no reformatting of the SQL
// passes or fails it; every BigQuery file under endpoints/ is checked, new ones included.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { findEndpoint } from "../support/catalog.ts";
import { bigQueryFiles, ENDPOINTS_DIR, windowed } from "../support/queries.ts";
import { referenceEngine } from "../support/reference-engine.ts";
import { partitionedScans } from "../support/time-bounds.ts";

const engine = referenceEngine();
const NOW = "2026-11-21T05:17:42.123456Z";

const files = bigQueryFiles();

const scansOf = async (sql: string) => partitionedScans(await engine.resolve(sql));

describe.each(files)("endpoints/%s", (file) => {
  it("bounds each partitioned scan below, and above wherever it bounds it, in prunable form", async () => {
    const scans = await scansOf(readFileSync(`${ENDPOINTS_DIR}${file}`, "utf8"));
    expect(scans.length).toBeGreaterThan(0);
    for (const scan of scans) {
      const sides = new Set(scan.bounds.map((bound) => bound.side));
      expect(sides, `${scan.table} has no prunable lower bound`).toContain("lower");
      for (const side of scan.unprunable) {
        expect(sides, `${scan.table} is bounded ${side} only in unprunable form`).toContain(side);
      }
    }
  });

  it("is given a concrete instant for every bound, whatever the caller leaves out", async () => {
    const scans = await scansOf(readFileSync(`${ENDPOINTS_DIR}${file}`, "utf8"));
    const name = file.slice(0, file.indexOf("/"));
    const endpoint = findEndpoint(name);
    if (!endpoint) throw new Error(`no endpoint ${name}`);
    // The fewest parameters a caller can give: the required ones, as in the catalog's example.
    const bound = windowed(name, { ...endpoint.example }, NOW);
    for (const { param } of scans.flatMap((scan) => scan.bounds)) {
      expect(bound[param], param).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    }
  });
});

it("takes no bound wrapped in IFNULL, OR or CASE, nor one compared with a computed value", async () => {
  const scan = async (condition: string) =>
    (await scansOf(`SELECT t.id FROM edge_logs AS t WHERE t.project = @p AND ${condition}`))[0];
  const start = "CAST(@start AS TIMESTAMP)";
  expect(await scan(`t.timestamp > ${start}`)).toEqual({
    table: "edge_logs",
    bounds: [{ side: "lower", param: "start" }],
    unprunable: [],
  });
  // The same bound, laid out otherwise and reversed: the tree is the same.
  expect((await scan(`(\n  ${start}\n)   <   t . timestamp`))?.bounds).toEqual([
    { side: "lower", param: "start" },
  ]);
  for (const unprunable of [
    `IFNULL(t.timestamp > ${start}, TRUE)`,
    `(t.timestamp > ${start} OR @start IS NULL)`,
    `CASE WHEN @start IS NULL THEN TRUE ELSE t.timestamp > ${start} END`,
    `t.timestamp > GREATEST(${start}, TIMESTAMP_SUB(CURRENT_TIMESTAMP(), INTERVAL 1 DAY))`,
    `t.timestamp > IFNULL(${start}, TIMESTAMP '0001-01-01 00:00:00+00')`,
  ]) {
    expect(await scan(unprunable), unprunable).toEqual({
      table: "edge_logs",
      bounds: [],
      unprunable: ["lower"],
    });
  }
});
