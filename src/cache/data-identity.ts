// Replicas share cached values only when they compute them from the same data. On the embedded
// engine that data is the LOCAL_DATA exports as each replica loaded them at its start: their names,
// sizes and modification times name a namespace in Redis, so replicas started before and after the
// exports changed (a rolling update) never serve each other's values.
import { createHash } from "node:crypto";
import { statSync } from "node:fs";
import { basename } from "node:path";
import { exportFiles } from "../engines/duckdb/local-data.ts";
import { sourceTables } from "../schema.ts";

/** A short, stable name of the exports in `folder`: the same files give the same name. */
export function exportsIdentity(folder: string): string {
  const hash = createHash("sha256");
  for (const [table, files] of exportFiles(folder, sourceTables())) {
    for (const file of files) {
      const { size, mtimeMs } = statSync(file);
      hash.update(`${table.name} ${basename(file)} ${size} ${mtimeMs}\n`);
    }
  }
  return hash.digest("base64url").slice(0, 12);
}
