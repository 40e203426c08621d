import { DuckDBInstance } from "@duckdb/node-api";
import { describe, expect, it } from "vitest";
import { inTransaction } from "../../src/engines/duckdb/transaction.ts";

async function table() {
  const connection = await (await DuckDBInstance.create(":memory:")).connect();
  await connection.run("CREATE TABLE t (n INTEGER)");
  const count = async () =>
    Number((await connection.runAndReadAll("SELECT count(*) FROM t")).getRows()[0]?.[0]);
  return { connection, count };
}

describe("inTransaction", () => {
  it("commits what the work did", async () => {
    const { connection, count } = await table();
    await inTransaction(connection, () => connection.run("INSERT INTO t VALUES (1)"));
    expect(await count()).toBe(1);
  });

  it("rolls back what the work did when it throws, and rethrows its error", async () => {
    const { connection, count } = await table();
    const failing = inTransaction(connection, async () => {
      await connection.run("INSERT INTO t VALUES (1)");
      throw new Error("the work failed");
    });
    await expect(failing).rejects.toThrow("the work failed");
    expect(await count()).toBe(0);
  });

  it("rethrows a failed COMMIT's error, not the error of the rollback that follows it", async () => {
    const { connection, count } = await table();
    // A COMMIT that fails ends the transaction (as DuckDB's does on a conflict): the fault injected.
    const committing = new Proxy(connection, {
      get(target, name) {
        if (name !== "run") return Reflect.get(target, name);
        return async (sql: string) => {
          if (sql !== "COMMIT") return target.run(sql);
          await target.run("ROLLBACK");
          throw new Error("the commit failed");
        };
      },
    });
    const failing = inTransaction(committing, () => committing.run("INSERT INTO t VALUES (1)"));
    await expect(failing).rejects.toThrow("the commit failed");
    expect(await count()).toBe(0);
  });
});
