// Alert rules through the whole service (app → BigQuery client → stand-in) and a real webhook
// receiver: a rule fires once when its condition becomes true on data the test controls, resolves
// when it becomes false, is signed as Standard Webhooks says, is retried past a failing receiver,
// and queries nothing of its own.
import { writeFileSync } from "node:fs";
import { SignJWT } from "jose";
import { pino } from "pino";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { openAlertRules } from "../../src/alerts/rules-source.ts";
import { createTokenVerifier } from "../../src/credentials/tokens.ts";
import type { QueryRequest } from "../../src/engines/engine.ts";
import { cachedBigQueryService } from "../support/cached-service.ts";
import {
  edgeLog,
  functionCall,
  MICROSECOND,
  MINUTE,
  PROJECT,
  SECOND,
  shift,
} from "../support/fixtures.ts";
import { FOLLOW, FOLLOW_CLOCK, NOW as FOLLOW_NOW } from "../support/follow-client.ts";
import type { Row } from "../support/googlesql.ts";
import { recordingInto } from "../support/recording-engine.ts";
import { startBigQueryService } from "../support/service.ts";
import { temporaryFile } from "../support/temporary-file.ts";
import { webhookReceiver } from "../support/webhook-receiver.ts";

const NOW = "2026-11-21T05:17:42.123456Z";
const SECRET = `whsec_${Buffer.from("a test secret of 24 bytes!").toString("base64")}`;
const STATS_PARAMS = { project: PROJECT, interval: "1hr" };
const STATS = `/api/endpoints/functions.invocation-stats?${new URLSearchParams(STATS_PARAMS)}`;

/** Calls in the current minute's bucket (the newest row), `errors` of them failing. */
const calls = (total: number, errors: number): Row[] =>
  Array.from({ length: total }, (_, i) =>
    functionCall(shift(NOW, -BigInt(i + 1) * SECOND), { statuses: [i < errors ? 500 : 200] }),
  );

const errorRule = (url: string, threshold = 10) => ({
  name: "function-errors",
  endpoint: "functions.invocation-stats",
  params: STATS_PARAMS,
  condition: { newest_row: `error_count >= ${threshold}` },
  webhook: { url, secret: SECRET },
});

/** The service on the stand-in with `rules` in a rules file, its log lines kept. */
async function alertingService(
  rules: unknown[],
  firstRetryMs = 1_000,
  deps: Parameters<typeof cachedBigQueryService>[3] = {},
) {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const path = temporaryFile("rules.json", { rules });
  const alertRules = openAlertRules(path);
  const started = await cachedBigQueryService(NOW, { function_edge_logs: calls(5, 1) }, logger, {
    alertRules,
    alertDelivery: { firstRetryMs },
    ...deps,
  });
  const { service, clock } = started;
  const setCalls = (rows: Row[]) => {
    service.standIn.tables = { ...service.standIn.tables, function_edge_logs: rows };
  };
  /** A second later, a fresh value for the rule's key, as a refresh would store it. */
  const refresh = async () => {
    clock.ms += 1000;
    const answer = await service.get(STATS, { "cache-control": "no-cache" });
    expect(answer.statusCode).toBe(200);
    return answer;
  };
  return { ...started, lines, path, alertRules, setCalls, refresh };
}

const metric = async (service: { get(url: string): Promise<{ body: string }> }, series: string) => {
  const line = (await service.get("/metrics")).body
    .split("\n")
    .find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
};

describe("an alert rule on a cached value", () => {
  it("fires once when error_count crosses its threshold, resolves when it falls back, signed, and queries nothing of its own", async () => {
    const receiver = await webhookReceiver();
    const { service, engine, setCalls, refresh, lines } = await alertingService([
      errorRule(receiver.url),
    ]);
    // A dashboard's request holds the value: the rule evaluates it and adds no query.
    await service.get(STATS);
    await expect
      .poll(() => metric(service, 'query_service_alert_evaluations_total{rule="function-errors"}'))
      .toBe(1);

    setCalls(calls(20, 12));
    await refresh();
    await receiver.until(1);
    await refresh(); // still over: no second firing
    setCalls(calls(20, 12).reverse());
    await refresh();
    await expect
      .poll(() => metric(service, 'query_service_alert_evaluations_total{rule="function-errors"}'))
      .toBe(4);
    expect(receiver.received).toHaveLength(1);

    setCalls(calls(20, 2));
    await refresh();
    await receiver.until(2);
    const [firing, resolved] = receiver.messages();
    expect(firing?.type).toBe("alert.firing");
    expect(firing?.data).toMatchObject({ rule: "function-errors", state: "firing" });
    expect(firing?.data.rows).toEqual([expect.objectContaining({ error_count: 12, count: 20 })]);
    expect(resolved?.type).toBe("alert.resolved");
    expect(resolved?.data.state).toBe("ok");
    // Signed under the rule's secret, as the official verifier checks it.
    for (const { body, headers } of receiver.received) {
      expect(() =>
        new Webhook(SECRET).verify(body, headers as Record<string, string>),
      ).not.toThrow();
    }
    expect(() =>
      new Webhook(`whsec_${Buffer.from("another secret, 24 bytes").toString("base64")}`).verify(
        receiver.received[0]?.body as string,
        receiver.received[0]?.headers as Record<string, string>,
      ),
    ).toThrow();
    // The dashboard's first request and the four refreshes it asked for: nothing of the rule's.
    expect(engine.runs).toBe(5);
    expect(await metric(service, 'query_service_alert_firings_total{rule="function-errors"}')).toBe(
      1,
    );
    expect(
      await metric(service, 'query_service_alert_deliveries_total{rule="function-errors"}'),
    ).toBe(2);
    expect(lines.filter((line) => line.msg === "alert firing")).toEqual([
      expect.objectContaining({ alert: "function-errors", rows: 1 }),
    ]);
    expect(JSON.stringify(lines)).not.toContain(SECRET);

    const listed = JSON.parse((await service.get("/api/alerts")).body).result;
    expect(listed).toEqual([
      expect.objectContaining({
        name: "function-errors",
        endpoint: "functions.invocation-stats",
        state: "ok",
        firing_since: null,
        last_evaluated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        last_delivery: expect.objectContaining({
          type: "alert.resolved",
          outcome: "delivered",
          attempts: 1,
        }),
      }),
    ]);
  });

  it("delivers through a receiver that answers 500 twice, the same message three times, and counts one firing", async () => {
    const receiver = await webhookReceiver([500, 500]);
    const { service, setCalls, refresh, lines } = await alertingService(
      [errorRule(receiver.url)],
      20,
    );
    await service.get(STATS);
    setCalls(calls(20, 12));
    await refresh();
    await receiver.until(3);
    const ids = receiver.received.map(({ headers }) => headers["webhook-id"]);
    expect(new Set(ids).size).toBe(1);
    await expect
      .poll(() => metric(service, 'query_service_alert_deliveries_total{rule="function-errors"}'))
      .toBe(1);
    expect(
      await metric(service, 'query_service_alert_delivery_failures_total{rule="function-errors"}'),
    ).toBe(2);
    expect(await metric(service, 'query_service_alert_firings_total{rule="function-errors"}')).toBe(
      1,
    );
    expect(lines.filter((line) => line.msg === "alert webhook delivery failed")).toEqual([]);
  });

  it("gives up after its attempts with one line naming the rule and the receiver's host, never the secret", async () => {
    const receiver = await webhookReceiver(Array(10).fill(503));
    const { service, setCalls, refresh, lines } = await alertingService(
      [errorRule(receiver.url)],
      10,
    );
    await service.get(STATS);
    setCalls(calls(20, 12));
    await refresh();
    await receiver.until(6);
    await expect
      .poll(() => lines.filter((line) => line.msg === "alert webhook delivery failed"))
      .toEqual([
        expect.objectContaining({
          alert: "function-errors",
          attempts: 6,
          status: 503,
          problem: "answered 503",
          receiver: new URL(receiver.url).host,
        }),
      ]);
    expect(JSON.stringify(lines)).not.toContain(SECRET);
  });
});

/** The service on the stand-in's edge_logs, following records, with a rule: 3 records within 5m. */
async function burstRuleService(url: string, edgeLogs: Row[], runs: QueryRequest[] = []) {
  const path = temporaryFile("rules.json", {
    rules: [
      {
        name: "edge-burst",
        endpoint: "logs.all",
        params: { project: PROJECT, project_tier: "FREE" },
        condition: { at_least: 3, within: "5m" },
        webhook: { url, secret: SECRET },
      },
    ],
  });
  const service = await startBigQueryService({
    now: FOLLOW_NOW,
    tables: { edge_logs: edgeLogs },
    config: { follow: FOLLOW },
    follow: FOLLOW_CLOCK,
    alertRules: openAlertRules(path),
    wrapEngine: recordingInto(runs),
  });
  await service.app.ready();
  return service;
}

describe("an alert rule on logs.all", () => {
  it("fires when at least N matching records arrive within its window, on the follow feed's polls", async () => {
    const receiver = await webhookReceiver();
    const service = await burstRuleService(receiver.url, []);
    let added = 0;
    const add = (count: number) => {
      const rows = Array.from({ length: count }, () => {
        added++;
        return edgeLog(shift(FOLLOW_NOW, BigInt(added) * MICROSECOND), { id: `burst-${added}` });
      });
      service.standIn.tables = {
        edge_logs: [...(service.standIn.tables.edge_logs ?? []), ...rows],
      };
    };
    add(2);
    await expect
      .poll(() => metric(service, 'query_service_alert_evaluations_total{rule="edge-burst"}'))
      .toBeGreaterThan(2);
    expect(receiver.received).toEqual([]);
    add(1);
    await receiver.until(1);
    const [firing] = receiver.messages();
    expect(firing?.type).toBe("alert.firing");
    // The records that made it true, newest first.
    expect(firing?.data.rows.map((row) => row.id)).toEqual(["burst-3", "burst-2", "burst-1"]);
    // Its queries bind the endpoint's parameters only, as a follow stream's do.
    for (const call of service.standIn.queryCalls) {
      const sent = call.body.queryParameters as { name: string }[];
      expect(sent.map((p) => p.name)).not.toContain("since");
      expect(sent.map((p) => p.name)).not.toContain("since_window_start");
    }
    // One feed polls for the rule, which is no stream.
    expect(await metric(service, "query_service_follow_feeds")).toBe(1);
    expect(await metric(service, "query_service_follow_streams_open")).toBe(0);
    expect(await metric(service, "query_service_follow_records_sent_total")).toBe(0);
  });

  it("counts the records its window already holds when it starts, as after a restart or a reload", async () => {
    const receiver = await webhookReceiver();
    const earlier = Array.from({ length: 3 }, (_, i) =>
      edgeLog(shift(FOLLOW_NOW, -BigInt(i + 1) * MINUTE), { id: `earlier-${i}` }),
    );
    await burstRuleService(receiver.url, earlier);
    await receiver.until(1);
    expect(receiver.messages()[0]?.data.rows.map((row) => row.id)).toEqual([
      "earlier-0",
      "earlier-1",
      "earlier-2",
    ]);
  });

  it("reads no more of its window when it starts than the newest records it can count", async () => {
    const receiver = await webhookReceiver();
    // A thousand in the window, ten pages of the endpoint's 100: the rule counts 3.
    const many = Array.from({ length: 1_000 }, (_, i) =>
      edgeLog(shift(FOLLOW_NOW, -BigInt(i + 1) * (SECOND / 10n)), { id: `r${i}` }),
    );
    const runs: QueryRequest[] = [];
    await burstRuleService(receiver.url, many, runs);
    await receiver.until(1);
    expect(receiver.messages()[0]?.data.rows.map((row) => row.id)).toEqual(["r0", "r1", "r2"]);
    // Reads of a range (the feed's polls have no end): one page of the window; the feed starts
    // where it ends, with nothing between to catch up on.
    const ranged = runs.filter((run) => run.params.iso_timestamp_end !== null);
    expect(ranged).toHaveLength(1);
  });
});

describe("GET /api/alerts", () => {
  it("lists the rules whose endpoint and parameters the credential may call, its scope fixing nothing else", async () => {
    const secret = "a-test-secret-of-at-least-32-bytes!!";
    const token = (fixed: Record<string, string>) =>
      new SignJWT({
        sub: "tenant",
        scopes: [{ endpoint: "functions.invocation-stats", fixed_params: fixed }],
      })
        .setProtectedHeader({ alg: "HS256" })
        .setExpirationTime("1h")
        .sign(new TextEncoder().encode(secret));
    const receiver = await webhookReceiver();
    const theirs = {
      ...errorRule(receiver.url),
      name: "theirs",
      params: { ...STATS_PARAMS, project: "someone-else" },
    };
    const { service } = await alertingService([errorRule(receiver.url), theirs], 1_000, {
      tokens: createTokenVerifier({ secret, maxLifetimeSeconds: 7200 }),
    });
    const names = async (headers: Record<string, string> = {}) => {
      const answer = await service.get("/api/alerts", headers);
      expect(answer.statusCode).toBe(200);
      return (JSON.parse(answer.body).result as { name: string }[]).map((rule) => rule.name);
    };
    expect(await names()).toEqual(["function-errors", "theirs"]);
    expect(await names({ authorization: `Bearer ${await token({ project: PROJECT })}` })).toEqual([
      "function-errors",
    ]);
    // A scope narrower than the rule (one function) does not see the project's rule.
    const narrower = await token({ project: PROJECT, function_id: "fn-hello" });
    expect(await names({ authorization: `Bearer ${narrower}` })).toEqual([]);
    expect((await service.get("/api/alerts?state=firing")).statusCode).toBe(400);
    expect(
      (await service.get("/api/alerts", { "x-api-key": "not-a-key-0123456789abcdef" })).statusCode,
    ).toBe(401);
  });
});

describe("the rules file", () => {
  it("on reload, keeps the previous rules past a bad file with one line naming the rule and the problem, then takes a good one", async () => {
    const receiver = await webhookReceiver();
    const { service, path, alertRules, lines } = await alertingService([errorRule(receiver.url)]);
    await service.app.ready();
    alertRules.watch(service.app.log);
    try {
      writeFileSync(
        path,
        JSON.stringify({
          rules: [{ ...errorRule(receiver.url), condition: { newest_row: "errors >= 1" } }],
        }),
      );
      await expect
        .poll(() => lines.filter((line) => line.level === 50).map((line) => line.msg))
        .toEqual([
          `ALERT_RULES_FILE ${path}: rule 1 ("function-errors"): condition: functions.invocation-stats has no numeric column errors; it has min_execution_time, max_execution_time, avg_execution_time, p95_execution_time, p99_execution_time, count, error_count; keeping the previous rules`,
        ]);
      const listed = () =>
        service
          .get("/api/alerts")
          .then((r) => JSON.parse(r.body).result.map((a: { name: string }) => a.name));
      expect(await listed()).toEqual(["function-errors"]);
      writeFileSync(
        path,
        JSON.stringify({ rules: [{ ...errorRule(receiver.url), name: "renamed" }] }),
      );
      await expect.poll(listed).toEqual(["renamed"]);
    } finally {
      alertRules.close();
    }
  });
});
