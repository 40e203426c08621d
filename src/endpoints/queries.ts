import { readFileSync } from "node:fs";
import type { Dialect } from "../engines/engine.ts";
import type { EndpointDefinition } from "./catalog.ts";

const QUERIES_DIR = new URL("../../queries/", import.meta.url);

/** Each endpoint's SQL in one dialect, read once at startup so a missing file stops the service early. */
export function loadQueries(
  dialect: Dialect,
  endpoints: readonly EndpointDefinition[],
): Map<string, string> {
  return new Map(
    endpoints.map((endpoint) => [
      endpoint.name,
      readFileSync(new URL(`${dialect}/${endpoint.name}.sql`, QUERIES_DIR), "utf8"),
    ]),
  );
}
