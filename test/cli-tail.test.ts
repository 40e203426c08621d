// log-query tail against the service (test/support/log-query.ts): across a restart of the service
// without CURSOR_SECRET, across drops around late records, and before its first record.
import { createHash } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { serviceApp } from "../src/app.ts";
import { createDuckDbEngine } from "../src/engines/duckdb.ts";
import { configFrom } from "./support/config-from.ts";
import { replaceTables } from "./support/duckdb-tables.ts";
import { edgeLog, micros, SECOND, shift } from "./support/fixtures.ts";
import { freePort } from "./support/free-port.ts";
import { exports, inOrder, KEY, service, sleep, stop, tailing } from "./support/log-query.ts";

describe("log-query tail", () => {
  it("resumes after the service restarts without CURSOR_SECRET: nothing lost, nothing printed twice", async () => {
    const data = exports();
    const port = String(await freePort());
    let server = await service(data.folder, { PORT: port });
    const tail = tailing(server.baseUrl);
    await tail.connected();
    data.drop([Date.now(), Date.now(), Date.now() + 1], "first");
    await tail.waitFor(3);

    await stop(server);
    // Records arriving while the service is down are found when it is back.
    data.drop([Date.now(), Date.now() + 1], "while-down");
    server = await service(data.folder, { PORT: port });
    data.drop([Date.now() + 500, Date.now() + 500], "after");
    await tail.waitFor(7);
    await sleep(1_500);
    expect(tail.printed()).toEqual(inOrder(data.all));
  }, 90_000);
});

describe("log-query tail around late records", () => {
  it("prints B, then L and L2 that arrive late, each once, its connection dropped after each", async () => {
    const NOW = "2026-11-21T05:17:42.123456Z";
    const engine = await createDuckDbEngine({ now: () => micros(NOW) });
    const stored = [edgeLog(shift(NOW, -SECOND), { id: "before", project: "acme" })];
    await replaceTables(engine, { edge_logs: stored });
    const app = await serviceApp(
      configFrom({ auth: { apiKeys: [KEY] }, follow: { intervalMs: 40, lagMs: 60_000 } }),
      { engine, follow: { clock: () => micros(NOW) } },
    );
    onTestFinished(async () => {
      await app.close();
      await engine.close();
    });
    const metric = (name: string) => async () => {
      const metrics = (await app.inject({ url: "/metrics", headers: { "x-api-key": KEY } })).body;
      return Number(new RegExp(`^${name} (\\d+)$`, "m").exec(metrics)?.[1]);
    };
    const streamsOpen = metric("query_service_follow_streams_open");
    const tail = tailing(await app.listen({ host: "127.0.0.1", port: 0 }));
    const arriving = [40n, 10n, 20n].map((s, i) =>
      edgeLog(shift(NOW, s * SECOND), { id: ["B", "L", "L2"][i] as string, project: "acme" }),
    );
    for (const [i, row] of arriving.entries()) {
      await expect.poll(streamsOpen, { timeout: 10_000 }).toBe(1);
      stored.push(row);
      await replaceTables(engine, { edge_logs: stored });
      await tail.waitFor(i + 1);
      // Dropped: tail reconnects with the last event id it had, half a second later.
      app.server.closeAllConnections();
      await expect.poll(streamsOpen).toBe(0);
    }
    await expect.poll(streamsOpen, { timeout: 10_000 }).toBe(1);
    // Two polls later the last reconnect's catch-up is over: anything it sent again is printed.
    const polls = await metric("query_service_follow_polls_total")();
    await expect.poll(metric("query_service_follow_polls_total")).toBeGreaterThan(polls + 1);
    expect(tail.printed()).toEqual(["B", "L", "L2"]);
  }, 30_000);
});

describe("log-query tail before its first record", () => {
  // A key whose scope fixes since: a reconnect may give no start of its own that differs.
  const SCOPED_KEY = "cli-scoped-key-0123456789abcdef";
  const keysFile = join(mkdtempSync(join(tmpdir(), "cli-keys-")), "keys.json");
  writeFileSync(
    keysFile,
    JSON.stringify({
      keys: [
        {
          name: "since-pinned",
          sha256: createHash("sha256").update(SCOPED_KEY).digest("hex"),
          scopes: [{ endpoint: "logs.all", fixed_params: { since: "1h" } }],
        },
      ],
    }),
  );

  it.each([
    ["a full-access key", KEY],
    ["a key whose scope fixes since", SCOPED_KEY],
  ])(
    "finds what was logged while the service was away, though it had printed nothing yet: %s",
    async (_, key) => {
      const data = exports();
      const port = String(await freePort());
      let server = await service(data.folder, { PORT: port, API_KEYS_FILE: keysFile });
      const tail = tailing(server.baseUrl, { LOG_QUERY_KEY: key });
      await tail.connected();
      await stop(server);
      data.drop([Date.now(), Date.now() + 1], "while-down");
      server = await service(data.folder, { PORT: port, API_KEYS_FILE: keysFile });
      await tail.waitFor(2);
      expect(tail.printed()).toEqual(inOrder(data.all));
    },
    60_000,
  );
});
