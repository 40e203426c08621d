// Picks and opens the configured engine; for the embedded one, loads the data it serves.
import type { FastifyBaseLogger } from "fastify";
import type { Config } from "../config.ts";
import type { QueryEngine } from "./engine.ts";

export async function openEngine(
  settings: Config["engine"],
  log: FastifyBaseLogger,
): Promise<QueryEngine> {
  if (settings.kind === "bigquery") {
    const { createBigQueryEngine } = await import("./bigquery.ts");
    log.info(
      {
        engine: "bigquery",
        project: settings.projectId,
        dataset: settings.dataset,
        location: settings.location,
      },
      "query engine: BigQuery",
    );
    return createBigQueryEngine(settings);
  }
  throw new Error("duckdb: pending");
}
