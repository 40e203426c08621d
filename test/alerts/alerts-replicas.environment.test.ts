// An alert rule on three replicas sharing a real redis-server: each change of its condition is
// delivered once, whichever replicas evaluate it, and a replica that restarts finds the rule
// firing where it was, so it does not fire it again.
import { Webhook } from "standardwebhooks";
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

const errorRule = (url: string) => ({
  name: "function-errors",
  endpoint: "functions.invocation-stats",
  params: { project: PROJECT, interval: "1hr" },
  condition: { newest_row: "error_count >= 10" },
  webhook: { url, secret: SECRET },
});

/** A second later on the replicas' clock, a fresh value at `base`, as a refresh would store it. */
async function refresh(clock: { ms: number }, base: string | undefined) {
  clock.ms += 1000;
  const answer = await fetch(`${base}${STATS}`, {
    headers: { "x-api-key": API_KEY, "cache-control": "no-cache" },
  });
  expect(answer.status).toBe(200);
  await answer.arrayBuffer();
}

/** The rules' states as `base` lists them. */
async function states(base: string | undefined) {
  const answer = await fetch(`${base}/api/alerts`, { headers: { "x-api-key": API_KEY } });
  return ((await answer.json()) as { result: { state: string }[] }).result.map((a) => a.state);
}

/**
 * Two replicas whose rule fired; its first attempt failed and the next is a minute away. Which
 * replica is delivering it, as its metrics say.
 */
async function firingWhileRetrying() {
  const receiver = await webhookReceiver([503]);
  const path = temporaryFile("rules.json", { rules: [errorRule(receiver.url)] });
  const clock = { ms: 1_000_000 };
  const replicas = await replicasOnStandIn({
    redisUrl: redis.url,
    now: NOW,
    clock,
    tables: { function_edge_logs: errors(12) },
    deps: {
      alertRules: openAlertRules(path),
      alertDelivery: { firstRetryMs: 60_000, leaseMs: 300 },
    },
    count: 2,
  });
  await receiver.until(1);
  const metrics = await Promise.all(
    replicas.apps.map((app) => app.inject({ url: "/metrics", headers: { "x-api-key": API_KEY } })),
  );
  const delivering = metrics.findIndex((answer) =>
    answer.body.includes('query_service_alert_delivery_failures_total{rule="function-errors"} 1'),
  );
  expect(delivering).not.toBe(-1);
  return { ...replicas, receiver, clock, delivering, other: 1 - delivering };
}

describe("an alert rule across replicas", () => {
  it("is delivered once per change, and a restarted replica does not fire it again", async () => {
    const receiver = await webhookReceiver();
    const path = temporaryFile("rules.json", { rules: [errorRule(receiver.url)] });
    const clock = { ms: 1_000_000 };
    const { bases, apps, setTable, startOne } = await replicasOnStandIn({
      redisUrl: redis.url,
      now: NOW,
      clock,
      tables: { function_edge_logs: errors(1) },
      // Each replica reads the file, as each would from its own mount.
      deps: { alertRules: openAlertRules(path) },
    });
    await expect.poll(() => states(bases[2])).toEqual(["ok"]);

    setTable("function_edge_logs", errors(12));
    await refresh(clock, bases[0]);
    await receiver.until(1);
    // Every replica took the new value within a second and saw the rule firing, told once.
    await expect
      .poll(async () => Promise.all(bases.map(states)))
      .toEqual([["firing"], ["firing"], ["firing"]]);
    expect(receiver.messages().map((m) => m.type)).toEqual(["alert.firing"]);

    await apps[1]?.close();
    const restarted = await startOne();
    await expect.poll(() => states(bases[restarted])).toEqual(["firing"]);
    await refresh(clock, bases[restarted]);

    setTable("function_edge_logs", errors(2));
    await refresh(clock, bases[2]);
    await receiver.until(2);
    await expect
      .poll(async () => Promise.all([0, 2, restarted].map((i) => states(bases[i]))))
      .toEqual([["ok"], ["ok"], ["ok"]]);
    expect(receiver.messages().map((m) => m.type)).toEqual(["alert.firing", "alert.resolved"]);
  });

  it("a change waiting behind its replica's delivery keeps its lease: no other replica sends it too", async () => {
    const { bases, setTable, receiver, clock, delivering, other } = await firingWhileRetrying();
    // The delivering replica resolves the rule: its message waits for the firing's retry.
    setTable("function_edge_logs", errors(1));
    await refresh(clock, bases[delivering]);
    await expect.poll(() => states(bases[other])).toEqual(["ok"]);
    // Three leases later, the other replica's evaluations find the message held, and leave it.
    await new Promise((resolve) => setTimeout(resolve, 900));
    await refresh(clock, bases[other]);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(receiver.received).toHaveLength(1);
  });

  it("a change whose replica closes while delivering it is delivered by another, under the same webhook-id", async () => {
    const { bases, apps, receiver, clock, delivering, other } = await firingWhileRetrying();
    const holder = receiver.received[0]?.headers["webhook-id"];
    // The replica delivering it closes; the other evaluates the rule's next value.
    await apps[delivering]?.close();
    await new Promise((resolve) => setTimeout(resolve, 400));
    await refresh(clock, bases[other]);
    await receiver.until(2);
    expect(receiver.received.map(({ headers }) => headers["webhook-id"])).toEqual([holder, holder]);
    const [, delivered] = receiver.received;
    expect(
      new Webhook(SECRET).verify(
        delivered?.body as string,
        delivered?.headers as Record<string, string>,
      ),
    ).toMatchObject({ type: "alert.firing" });
  });
});
