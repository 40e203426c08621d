// An alert rule on three replicas sharing a real redis-server: each change of its condition is
// delivered once, whichever replicas evaluate it, and a replica that restarts finds the rule
// firing where it was, so it does not fire it again.
import { describe, expect, it } from "vitest";
import { openAlertRules } from "../../src/alerts/rules-source.ts";
import { functionCall, PROJECT, SECOND, shift } from "../support/fixtures.ts";
import type { Row } from "../support/googlesql.ts";
import { redisServer } from "../support/redis-server.ts";
import { API_KEY } from "../support/service.ts";
import { replicasOnStandIn } from "../support/standin-replicas.ts";
import { temporaryFile } from "../support/temporary-file.ts";
import { webhookReceiver } from "../support/webhook-receiver.ts";

const NOW = "2026-11-21T05:17:42.123456Z";
const SECRET = `whsec_${Buffer.from("a test secret of 24 bytes!").toString("base64")}`;
const STATS = `/api/endpoints/functions.invocation-stats?project=${PROJECT}&interval=1hr`;
const errors = (count: number): Row[] =>
  Array.from({ length: count }, (_, i) =>
    functionCall(shift(NOW, -BigInt(i + 1) * SECOND), { statuses: [500] }),
  );

const redis = redisServer();

describe("an alert rule across replicas", () => {
  it("is delivered once per change, and a restarted replica does not fire it again", async () => {
    const receiver = await webhookReceiver();
    const path = temporaryFile("rules.json", {
      rules: [
        {
          name: "function-errors",
          endpoint: "functions.invocation-stats",
          params: { project: PROJECT, interval: "1hr" },
          condition: { newest_row: "error_count >= 10" },
          webhook: { url: receiver.url, secret: SECRET },
        },
      ],
    });
    const clock = { ms: 1_000_000 };
    const { bases, apps, setTable, startOne } = await replicasOnStandIn({
      redisUrl: redis.url,
      now: NOW,
      clock,
      tables: { function_edge_logs: errors(1) },
      // Each replica reads the file, as each would from its own mount.
      deps: { alertRules: openAlertRules(path) },
    });
    const refresh = async (base: string | undefined) => {
      clock.ms += 1000;
      const answer = await fetch(`${base}${STATS}`, {
        headers: { "x-api-key": API_KEY, "cache-control": "no-cache" },
      });
      expect(answer.status).toBe(200);
      await answer.arrayBuffer();
    };
    const states = async (base: string | undefined) => {
      const answer = await fetch(`${base}/api/alerts`, { headers: { "x-api-key": API_KEY } });
      return ((await answer.json()) as { result: { state: string }[] }).result.map((a) => a.state);
    };
    await expect.poll(() => states(bases[2])).toEqual(["ok"]);

    setTable("function_edge_logs", errors(12));
    await refresh(bases[0]);
    await receiver.until(1);
    // Every replica took the new value within a second and saw the rule firing, told once.
    await expect
      .poll(async () => Promise.all(bases.map(states)))
      .toEqual([["firing"], ["firing"], ["firing"]]);
    expect(receiver.messages().map((m) => m.type)).toEqual(["alert.firing"]);

    await apps[1]?.close();
    const restarted = await startOne();
    await expect.poll(() => states(bases[restarted])).toEqual(["firing"]);
    await refresh(bases[restarted]);

    setTable("function_edge_logs", errors(2));
    await refresh(bases[2]);
    await receiver.until(2);
    await expect
      .poll(async () => Promise.all([0, 2, restarted].map((i) => states(bases[i]))))
      .toEqual([["ok"], ["ok"], ["ok"]]);
    expect(receiver.messages().map((m) => m.type)).toEqual(["alert.firing", "alert.resolved"]);
  });
});
