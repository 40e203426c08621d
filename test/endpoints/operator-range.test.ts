// An operator's endpoint that declares `buckets:` answers any time range as the built-in bucketed
// endpoints do: the docs' example (examples/endpoints/auth.failures-per-hour) with `buckets:` added
// and docs/endpoints.md's range SQL as its bigquery.sql, held on the reference engine and served on
// DuckDB to counts worked out here; and a definition that misuses `buckets:` is refused by field.
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LiveCatalog } from "../../src/endpoints/catalog.ts";
import { CatalogError, loadCatalog } from "../../src/endpoints/load-catalog.ts";
import { codeBlocks } from "../support/doc-commands.ts";
import { edgeLog, HOUR, MINUTE, micros, PROJECT, shift } from "../support/fixtures.ts";
import type { Row } from "../support/googlesql.ts";
import { referenceEngine } from "../support/reference-engine.ts";
import { startService } from "../support/service.ts";

const NOW = "2026-11-21T05:17:42.123456Z";
const NAME = "auth.failures-per-hour";
const EXAMPLE = new URL(`../../examples/endpoints/${NAME}/`, import.meta.url).pathname;
const BUCKETS = "buckets:\n  ladder: [1m, 5m, 1h, 1d]\n  max_range: 30d\n";

/** docs/endpoints.md's SQL of a ranged endpoint, as the page gives it. */
const docsSql = () => {
  const block = codeBlocks("docs/endpoints.md").find(
    (candidate) => candidate.lang === "sql" && candidate.text.includes("@bucket_seconds"),
  );
  if (!block) throw new Error("docs/endpoints.md has no SQL with @bucket_seconds");
  return block.text;
};

// Its DuckDB twin: the same buckets.
const DUCKDB_SQL = `
SELECT
  CASE
    WHEN $bucket_seconds IS NOT NULL THEN make_timestamptz(
      epoch_us(t.timestamp) // (CAST($bucket_seconds AS BIGINT) * 1000000)
        * (CAST($bucket_seconds AS BIGINT) * 1000000))
    ELSE date_trunc('hour', t.timestamp)
  END AS hour,
  count(*) AS failures
FROM edge_logs AS t
WHERE t.project = $project
  AND t.timestamp >= CAST($window_start AS TIMESTAMPTZ)
  AND t.timestamp <= CAST($window_end AS TIMESTAMPTZ)
GROUP BY hour
ORDER BY hour
`;

/**
 * The docs' example endpoint with `buckets:` added (and `definition` changed), in a folder of its
 * own, with the docs' ranged SQL (or, `ownSql`, the example's own).
 */
function rangedExample(
  definition = (yaml: string) => `${yaml}${BUCKETS}`,
  { ownSql = false } = {},
): string {
  const dir = mkdtempSync(join(tmpdir(), "ranged-endpoint-"));
  const folder = join(dir, NAME);
  cpSync(EXAMPLE, folder, { recursive: true });
  const yaml = readFileSync(join(folder, "endpoint.yaml"), "utf8");
  writeFileSync(join(folder, "endpoint.yaml"), definition(yaml));
  if (!ownSql) {
    writeFileSync(join(folder, "bigquery.sql"), docsSql());
    writeFileSync(join(folder, "duckdb.sql"), DUCKDB_SQL);
  }
  return dir;
}

/** The problems loading the catalog of `dir` is refused with. */
function refusal(dir: string): string {
  let error: unknown;
  try {
    loadCatalog([dir]);
  } catch (caught) {
    error = caught;
  }
  expect(error).toBeInstanceOf(CatalogError);
  return String((error as Error).message);
}

// Records of the project every 10 minutes of the last 6 hours; some of another project.
const ROWS: Row[] = [
  ...Array.from({ length: 36 }, (_, i) => edgeLog(shift(NOW, -BigInt(i) * 10n * MINUTE))),
  ...Array.from({ length: 5 }, (_, i) =>
    edgeLog(shift(NOW, -BigInt(i) * HOUR), { project: "other" }),
  ),
];

/** Records of the project per bucket of `size` µs from `first` to the end of `last`, worked out here. */
function expectedCounts(first: string, last: string, size: bigint) {
  const counts = new Map<bigint, number>();
  for (const row of ROWS) {
    const at = micros(row.timestamp as string);
    if (row.project !== PROJECT || at < micros(first) || at >= micros(last) + size) continue;
    const bucket = at - (at % size);
    counts.set(bucket, (counts.get(bucket) ?? 0) + 1);
  }
  return [...counts.entries()].sort(([a], [b]) => (a < b ? -1 : 1));
}

describe("an operator's endpoint with buckets", () => {
  it("answers a time range on both engines as worked out by hand, in the docs' SQL", async () => {
    const catalog = loadCatalog([rangedExample()]);
    const endpoint = catalog.find(NAME);
    expect(endpoint?.range?.ladder).toEqual(
      [60n, 300n, 3_600n, 86_400n].map((s) => s * 1_000_000n),
    );
    const first = "2026-11-21T00:00:00.000000Z";
    const last = "2026-11-21T05:00:00.000000Z";
    const expected = expectedCounts(first, last, HOUR);
    expect(expected.length).toBe(6);

    // DuckDB, through the service: the range of the last six hours in at most 6 points is by the hour.
    const service = await startService({
      now: NOW,
      tables: { edge_logs: ROWS },
      catalog: new LiveCatalog(catalog),
      follow: { clock: () => micros(NOW) },
    });
    const answer = await service.app.inject({
      url: `/api/endpoints/${NAME}?project=${PROJECT}&from=2026-11-21T00:30:00Z&max_points=6`,
      headers: { "x-api-key": "test-key-0123456789abcdef" },
    });
    expect(answer.statusCode, answer.body).toBe(200);
    const rows = answer.json().result as { hour: string; failures: number }[];
    expect(rows.map(({ hour, failures }) => [micros(hour), failures])).toEqual(expected);

    // BigQuery's SQL, the docs' block, on the reference engine with the same bound range.
    const bound = (endpoint?.window ?? ((p) => p))(
      { project: PROJECT, period: null, from: first, to: last, bucket: "3600" },
      micros(NOW),
    );
    const reference = await referenceEngine().query(docsSql(), {
      tables: { edge_logs: ROWS },
      params: bound,
      now: NOW,
    });
    expect(reference.rows.map((row) => [micros(row.hour as string), Number(row.failures)])).toEqual(
      expected,
    );
  });

  it.each([
    [
      "its own `from`",
      (yaml: string) =>
        `${yaml.replace("params:\n", "params:\n  from:\n    type: string\n    description: x\n")}${BUCKETS}`,
      /params\.from: is a time range's own parameter/,
    ],
    [
      "a ladder out of order",
      (yaml: string) => `${yaml}buckets:\n  ladder: [1h, 1m]\n`,
      /buckets\.ladder: must go from the smallest size up/,
    ],
  ])("refuses %s, naming the field", (_, definition, problem) => {
    expect(refusal(rangedExample(definition))).toMatch(problem);
  });

  it("refuses SQL that does not bucket by the range, naming each file", () => {
    // The example's own SQL, hourly buckets to now, under `buckets:`: a range would be answered
    // by the hour, past its end.
    const message = refusal(rangedExample(undefined, { ownSql: true }));
    expect(message).toMatch(/bigquery\.sql: @bucket_seconds is not used/);
    expect(message).toMatch(/duckdb\.sql: \$bucket_seconds is not used/);
  });
});
