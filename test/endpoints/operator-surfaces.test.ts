// An operator's endpoint (ENDPOINTS_DIR) taken by the surfaces that name no endpoint: a keys-file key
// scoped to it alone (its listing and OpenAPI document), a token scoped to it, its per-key rate
// limit, an alert rule on it, and `log-query endpoints`, against the service as `npm start` runs
// it and the CLI as a user runs it.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SignJWT } from "jose";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { start } from "../support/service-process.ts";
import { temporaryFile } from "../support/temporary-file.ts";
import { webhookReceiver } from "../support/webhook-receiver.ts";

const NAME = "auth.failures-per-hour";
const EXAMPLE = new URL(`../../examples/endpoints/${NAME}/`, import.meta.url).pathname;
const CLI = new URL("../../bin/log-query.js", import.meta.url).pathname;
const FULL_KEY = "operator-surfaces-full-0123456789";
const SCOPED_KEY = "operator-surfaces-scoped-0123456789";
const LIMITED_KEY = "operator-surfaces-limited-0123456789";
const LIMIT = 2;
const JWT_SECRET = "operator-surfaces-hs256-secret-0123456789";

const sha256 = (key: string) => createHash("sha256").update(key).digest("hex");

/** An ENDPOINTS_DIR holding the docs' example endpoint, and a keys file with keys scoped to it. */
function operatorSetup(): { endpointsDir: string; keysFile: string } {
  const root = mkdtempSync(join(tmpdir(), "operator-surfaces-"));
  const endpointsDir = join(root, "endpoints");
  cpSync(EXAMPLE, join(endpointsDir, NAME), { recursive: true });
  const scope = { endpoint: NAME, fixed_params: { project: "default" } };
  const keysFile = join(root, "keys.json");
  writeFileSync(
    keysFile,
    JSON.stringify({
      keys: [
        { name: "auth-watch", sha256: sha256(SCOPED_KEY), scopes: [scope] },
        {
          name: "auth-limited",
          sha256: sha256(LIMITED_KEY),
          rate_limit_per_minute: LIMIT,
          scopes: [scope],
        },
      ],
    }),
  );
  return { endpointsDir, keysFile };
}

async function service(env: Record<string, string> = {}): Promise<string> {
  const { endpointsDir, keysFile } = operatorSetup();
  const { baseUrl } = await start({
    API_KEYS: FULL_KEY,
    API_KEYS_FILE: keysFile,
    ENDPOINTS_DIR: endpointsDir,
    JWT_SECRET,
    ...env,
  });
  return baseUrl;
}

const get = (baseUrl: string, path: string, key: string) =>
  fetch(`${baseUrl}${path}`, { headers: { "X-API-KEY": key } });

function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH, LOG_QUERY_KEY: FULL_KEY },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk;
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk;
  });
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

describe("an operator's endpoint on every surface", () => {
  it("a key scoped to it alone calls it with its fixed param (a second call a cache hit), is refused elsewhere and lists only it", async () => {
    const baseUrl = await service();
    const answer = await get(baseUrl, `/api/endpoints/${NAME}?period=week`, SCOPED_KEY);
    expect(answer.status).toBe(200);
    expect(answer.headers.get("cache-status")).toMatch(/^query-service; fwd=miss; stored/);
    // The same question again, by the same key, is answered from the cache.
    const again = await get(baseUrl, `/api/endpoints/${NAME}?period=week`, SCOPED_KEY);
    expect(again.headers.get("cache-status")).toMatch(/^query-service; hit; ttl=\d+/);
    expect(await again.json()).toEqual(await answer.json());
    expect((await get(baseUrl, "/api/endpoints/logs.all?project=default", SCOPED_KEY)).status).toBe(
      403,
    );
    const listing = (await (await get(baseUrl, "/api/endpoints", SCOPED_KEY)).json()) as {
      result: { name: string; fixed_params?: Record<string, string>; paths: string[] }[];
    };
    expect(listing.result.map((entry) => entry.name)).toEqual([NAME]);
    expect(listing.result[0]?.fixed_params).toEqual({ project: "default" });
    // The OpenAPI document it sees describes this endpoint's paths alone.
    const document = (await (await get(baseUrl, "/openapi.json", SCOPED_KEY)).json()) as {
      paths: Record<string, unknown>;
    };
    const endpointPaths = Object.keys(document.paths).filter((path) =>
      path.startsWith("/api/endpoints/"),
    );
    expect(endpointPaths.length).toBeGreaterThan(0);
    const own = listing.result[0]?.paths ?? [];
    for (const path of endpointPaths) {
      expect(own.some((listed) => path.startsWith(listed))).toBe(true);
    }
  });

  it("fires an alert rule on it to a webhook receiver, signed, and lists the rule by the endpoint's name", async () => {
    const secret = `whsec_${Buffer.from("an operator's secret, 24 b").toString("base64")}`;
    const receiver = await webhookReceiver();
    const rule = {
      name: "auth-failures",
      endpoint: NAME,
      params: { project: "default", period: "week" },
      // The demo data answers some sign-ins with 401 every week.
      condition: { any_row: "failures >= 1" },
      webhook: { url: receiver.url, secret },
    };
    const baseUrl = await service({
      ALERT_RULES_FILE: temporaryFile("operator-rules.json", { rules: [rule] }),
    });
    await receiver.until(1);
    const [delivery] = receiver.received;
    const message = new Webhook(secret).verify(
      delivery?.body as string,
      delivery?.headers as Record<string, string>,
    );
    expect(message).toMatchObject({
      type: "alert.firing",
      data: { rule: "auth-failures", endpoint: NAME, params: rule.params },
    });
    const listed = await get(baseUrl, `/api/alerts?endpoint=${NAME}`, FULL_KEY);
    expect(listed.status).toBe(200);
    const { result } = (await listed.json()) as { result: { name: string; state: string }[] };
    expect(result).toEqual([expect.objectContaining({ name: "auth-failures", state: "firing" })]);
  });

  it("a token scoped to it with a fixed param calls it with that value and nothing else", async () => {
    const baseUrl = await service();
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({
      sub: "operator-surfaces",
      iat: now,
      exp: now + 600,
      scopes: [{ endpoint: NAME, fixed_params: { project: "default" } }],
    })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .sign(new TextEncoder().encode(JWT_SECRET));
    const bearer = (path: string) =>
      fetch(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${token}` } });
    expect((await bearer(`/api/endpoints/${NAME}?period=week`)).status).toBe(200);
    expect((await bearer(`/api/endpoints/${NAME}?period=week&project=other`)).status).toBe(403);
    expect((await bearer("/api/endpoints/logs.all?project=default")).status).toBe(403);
    const listing = (await (await bearer("/api/endpoints")).json()) as {
      result: { name: string; fixed_params?: Record<string, string> }[];
    };
    expect(listing.result.map((entry) => [entry.name, entry.fixed_params])).toEqual([
      [NAME, { project: "default" }],
    ]);
  });

  it("counts a key's requests to it against the key's rate limit", async () => {
    const baseUrl = await service();
    const path = `/api/endpoints/${NAME}?period=day`;
    for (let i = 0; i < LIMIT; i++)
      expect((await get(baseUrl, path, LIMITED_KEY)).status).toBe(200);
    const refused = await get(baseUrl, path, LIMITED_KEY);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("log-query endpoints lists it with its params", async () => {
    const baseUrl = await service();
    const listed = await cli(["endpoints", "--url", baseUrl]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`^${NAME.replaceAll(".", "\\.")}: `, "m"));
    const section = listed.stdout.slice(listed.stdout.indexOf(`${NAME}:`));
    expect(section).toMatch(/^ {2}project \(required\)/m);
    expect(section).toMatch(/^ {2}period/m);
  });
});
