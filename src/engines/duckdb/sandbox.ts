// What SQL run on the embedded engine can reach besides its own tables: only the folders it loads
// data from and its own temp folder (spill, probes), read and written through DuckDB's own file
// functions; no extension is installed or loaded, and no setting can be changed afterwards. An
// endpoint's SQL is checked to be one SELECT before it is served, but a SELECT can still call
// read_text or glob: this is what holds then. Applied once, when the engine opens, before any
// endpoint SQL runs.
import { mkdtemp } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { DuckDBConnection } from "@duckdb/node-api";
import { sqlString } from "./tables.ts";

/**
 * Locks the engine `connection` belongs to down to `folders`. The statements run in this order:
 * allowed_directories cannot be set once external access is off, nor anything once locked.
 * (As options of DuckDBInstance.create they fail: "Failed to set config".)
 */
export async function confine(
  connection: DuckDBConnection,
  folders: readonly string[],
): Promise<void> {
  const allowed = folders.map((folder) => sqlString(resolve(folder))).join(", ");
  await connection.run(`SET allowed_directories = [${allowed}]`);
  await connection.run("SET enable_external_access = false");
  await connection.run("SET autoinstall_known_extensions = false");
  await connection.run("SET autoload_known_extensions = false");
  await connection.run("SET lock_configuration = true");
}

/**
 * A new folder (named `prefix` and a few random characters) in the engine's own temp folder, where
 * its SQL may read and write files of its own (a probe, a test's fixtures). Remove it after use.
 */
export async function scratchFolder(connection: DuckDBConnection, prefix: string): Promise<string> {
  const temp = await connection.runAndReadAll("SELECT current_setting('temp_directory')");
  return mkdtemp(join(String(temp.getRows()[0]?.[0]), prefix));
}
