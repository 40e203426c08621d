import { readFileSync } from "node:fs";
import type { Dialect } from "../engines/engine.ts";
import type { EndpointDefinition } from "./catalog.ts";

const QUERIES_DIR = new URL("../../queries/", import.meta.url);

/**
 * Each endpoint's SQL in one dialect (queries/<dialect>/<name>.sql), or another of its queries
 * (queries/<dialect>/<folder>/<name>.sql: `seek` where a follow stream starts, `rest` the rest of a
 * page walk), read once at startup so a missing file stops the service early.
 */
export function loadQueries(
  dialect: Dialect,
  endpoints: readonly EndpointDefinition[],
  folder?: "seek" | "rest",
): Map<string, string> {
  const path = (name: string) =>
    `${dialect}/${folder === undefined ? "" : `${folder}/`}${name}.sql`;
  return new Map(
    endpoints.map((endpoint) => [
      endpoint.name,
      readFileSync(new URL(path(endpoint.name), QUERIES_DIR), "utf8"),
    ]),
  );
}
