// Cost per tenant: every engine query is charged to its endpoint, trigger and credential, in one
// normalised, bounded form on the BigQuery job label and in /metrics.
import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { createTokenVerifier } from "../../src/credentials/tokens.ts";
import { CredentialLabels, labelValue } from "../../src/telemetry/attribution.ts";
import { edgeLog, PROJECT, SECOND, shift } from "../support/fixtures.ts";
import { startBigQueryService } from "../support/service.ts";

const NOW = "2026-11-21T05:17:42.123456Z";
const SECRET = "a-test-secret-of-at-least-32-bytes!!";

const token = (sub: string) =>
  new SignJWT({ sub, scopes: [{ endpoint: "*" }] })
    .setProtectedHeader({ alg: "HS256" })
    .setExpirationTime("10m")
    .sign(new TextEncoder().encode(SECRET));

describe("credential labels", () => {
  it("follow BigQuery's label rules", () => {
    expect(labelValue("Team.Alpha@EU")).toBe("team_alpha_eu");
    expect(labelValue("x".repeat(80))).toHaveLength(63);
  });

  it("charge every key of API_KEYS as api_keys", () => {
    const labels = new CredentialLabels(10);
    expect([labels.of("api-key-1"), labels.of("api-key-2")]).toEqual(["api_keys", "api_keys"]);
  });

  it("keep the first max credentials apart and charge the rest to other", () => {
    const labels = new CredentialLabels(2);
    expect([labels.of("A"), labels.of("b"), labels.of("c"), labels.of("A")]).toEqual([
      "a",
      "b",
      "other",
      "a",
    ]);
  });
});

describe("engine usage per credential", () => {
  it("labels the BigQuery query and counts its bytes and seconds under the same credential", async () => {
    const { get, standIn } = await startBigQueryService({
      now: NOW,
      tables: { edge_logs: [edgeLog(shift(NOW, -SECOND))] },
      tokens: createTokenVerifier({ secret: SECRET, maxLifetimeSeconds: 3600 }),
    });
    const response = await get(`/api/endpoints/logs.all?project=${PROJECT}&project_tier=FREE`, {
      authorization: `Bearer ${await token("Team.Alpha")}`,
    });
    expect(response.statusCode).toBe(200);
    expect(standIn.queryCalls[0]?.body.labels).toEqual({
      endpoint: "logs_all",
      trigger: "request",
      credential: "team_alpha",
    });
    const metrics = (await get("/metrics")).body;
    const series = '{endpoint="logs.all",trigger="request",credential="team_alpha"}';
    const bytes = new RegExp(`^query_service_engine_bytes_processed_total${series} (\\d+)$`, "m");
    expect(Number(bytes.exec(metrics)?.[1])).toBeGreaterThan(0);
    const seconds = new RegExp(`^query_service_engine_seconds_total${series} ([\\d.e-]+)$`, "m");
    expect(Number(seconds.exec(metrics)?.[1])).toBeGreaterThan(0);
  });
});
