// The embedded engine a test case's answer comes from: an in-memory DuckDB holding exactly the
// case's fixture rows, loaded as LOCAL_DATA exports are (so the tables derived at load are what
// the queries read, as in production), its clock the case's pinned instant.
import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadData } from "../../engines/duckdb/data.ts";
import { createDuckDbEngine, type DuckDbEngine } from "../../engines/duckdb.ts";
import { sourceTables } from "../../schema.ts";

/** Fixture files every endpoint's cases may name: the built-in endpoints/fixtures/. */
export const SHARED_FIXTURES = fileURLToPath(
  new URL("../../../endpoints/fixtures/", import.meta.url),
);

/**
 * Where a case's fixture file is: relative to the endpoint's folder, else to the shared fixtures;
 * undefined when neither holds it.
 */
export function fixturePath(endpointFolder: string, file: string): string | undefined {
  return [join(endpointFolder, file), join(SHARED_FIXTURES, file)].find((path) => existsSync(path));
}

/**
 * An engine serving `fixtures` (source table → file) at `clock`'s instant; tables left out are
 * empty. A bad fixture file fails here, named with its line as LOCAL_DATA names it.
 */
export async function caseEngine(
  fixtures: Readonly<Record<string, string>>,
  clock: () => bigint,
): Promise<DuckDbEngine> {
  // The loader takes a folder of exports named by table: each file goes there under its table's name.
  const staging = mkdtempSync(join(tmpdir(), "endpoint-case-"));
  const staged = new Map<string, string>();
  for (const table of sourceTables()) {
    const file = fixtures[table.name];
    const target = join(staging, `${table.name}-${file ? basename(file) : "empty.ndjson"}`);
    if (file) {
      copyFileSync(file, target);
      staged.set(target, file);
    } else writeFileSync(target, "");
  }
  const engine = await createDuckDbEngine({ now: clock, dataFolders: [staging] });
  try {
    await loadData(engine, { localData: staging });
    return engine;
  } catch (error) {
    await engine.close();
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(
      [...staged].reduce((text, [target, file]) => text.replaceAll(target, file), message),
    );
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}
