// The reference harness itself: its own server here, so that killing it disturbs no other file.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GoogleSql, GoogleSqlServer } from "./support/googlesql.ts";

let server: GoogleSqlServer;
let engine: GoogleSql;
beforeAll(async () => {
  server = await GoogleSqlServer.start();
  engine = new GoogleSql(server.port);
});
afterAll(async () => {
  engine.close();
  await server.stop();
});

const NOW = "2026-11-21T05:17:42.123456Z";
const one = async (sql: string, params = {}) =>
  (await engine.query(sql, { now: NOW, params })).rows[0] as Record<string, unknown>;

describe("GoogleSQL harness", () => {
  it("pins CURRENT_TIMESTAMP, with and without parentheses, to the microsecond", async () => {
    expect(await one("SELECT CURRENT_TIMESTAMP() AS a, CURRENT_TIMESTAMP AS b")).toEqual({
      a: NOW,
      b: NOW,
    });
  });

  it("works in UTC, not the server's default America/Los_Angeles", async () => {
    const sql =
      "SELECT TIMESTAMP '2026-11-21 10:00:00' AS t, EXTRACT(HOUR FROM TIMESTAMP '2026-11-21T10:00:00Z') AS h";
    expect(await one(sql)).toEqual({ t: "2026-11-21T10:00:00.000000Z", h: 10 });
  });

  it("supplies APPROX_QUANTILES exactly, matching BigQuery's documented examples", async () => {
    expect(
      await one("SELECT APPROX_QUANTILES(x, 4) AS q FROM UNNEST(GENERATE_ARRAY(1, 100)) AS x"),
    ).toEqual({
      q: [1, 25, 50, 75, 100],
    });
    expect(
      await one(
        "SELECT APPROX_QUANTILES(x, 2) AS q FROM UNNEST([1, 1, 1, 4, 5, 6, 7, 8, 9, 10]) AS x",
      ),
    ).toEqual({
      q: [1, 5, 10],
    });
    expect(
      await one("SELECT APPROX_QUANTILES(x, 2) AS q FROM UNNEST([CAST(NULL AS FLOAT64)]) AS x"),
    ).toEqual({ q: null });
  });

  it("binds named STRING parameters, an absent one as NULL", async () => {
    expect(
      await one("SELECT @given AS given, @absent IS NULL AS absent", { given: "' OR 1=1 --" }),
    ).toEqual({
      given: "' OR 1=1 --",
      absent: true,
    });
  });

  it("starts the server again when it dies, and carries on", async () => {
    server.crash();
    expect(await one("SELECT 1 AS x")).toEqual({ x: 1 });
  });
});
