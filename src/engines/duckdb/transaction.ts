import type { DuckDBConnection } from "@duckdb/node-api";

/**
 * Runs `work` in one transaction: committed when it returns, rolled back when it or the commit
 * throws, and its error rethrown. A failed COMMIT has ended the transaction already, so that
 * rollback's own error ("no transaction is active") is dropped rather than put in the first's place.
 */
export async function inTransaction<T>(
  connection: DuckDBConnection,
  work: () => Promise<T>,
): Promise<T> {
  await connection.run("BEGIN TRANSACTION");
  try {
    const result = await work();
    await connection.run("COMMIT");
    return result;
  } catch (error) {
    await connection.run("ROLLBACK").catch(() => {});
    throw error;
  }
}
