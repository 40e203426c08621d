import { afterAll, inject } from "vitest";
import { GoogleSql } from "./googlesql.ts";

/** A client of the run's shared GoogleSQL server, closed after the calling test file. */
export function referenceEngine(): GoogleSql {
  const engine = new GoogleSql(inject("googleSqlPort"));
  afterAll(() => engine.close());
  return engine;
}
