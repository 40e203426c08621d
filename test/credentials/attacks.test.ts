// Attacks on a scoped credential that the service refuses, kept here so they stay refused: query
// strings that try to widen a fixed param, paths and methods that try to miss the scope check,
// forged or mixed credentials, and leaks through logs or status codes. The tenant is `default`;
// the other tenant is `staging`.
import { createHmac } from "node:crypto";
import { writeFileSync } from "node:fs";
import { Agent, get as httpGet } from "node:http";
import { SignJWT } from "jose";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/credentials/authenticate.ts";
import { KeysFile } from "../../src/credentials/keys-file.ts";
import { createTokenVerifier } from "../../src/credentials/tokens.ts";
import type { QueryEngine, QueryRequest } from "../../src/engines/engine.ts";
import { type ServiceOptions, startService } from "../support/service.ts";
import { temporaryFile } from "../support/temporary-file.ts";

const NOW = "2026-11-21T05:17:42.123456Z";
const STATS = "functions.invocation-stats";
const STATS_ID = "301c3c3d-c4b3-4d6e-b0a1-e6310fabb99c";
const LOGS_ID = "c4e48f7a-e763-48a3-9217-93a065d845d8";
const USAGE = "usage.api-counts";
const OWN_USAGE = "^https://default\\.";

const ACME_KEY = "acme-key-0123456789abcdef";
const EXPIRED_KEY = "expired-key-0123456789abcdef";
const FULL_KEY = "full-key-0123456789abcdef";
const SECRET = "an-hs256-secret-of-at-least-32-bytes!";

const KEYS_PATH = temporaryFile("keys.json", {
  keys: [
    {
      name: "acme",
      sha256: sha256Hex(ACME_KEY),
      scopes: [
        { endpoint: STATS, fixed_params: { project: "default" } },
        { endpoint: USAGE, fixed_params: { project: OWN_USAGE } },
      ],
    },
    {
      name: "expired",
      sha256: sha256Hex(EXPIRED_KEY),
      scopes: [{ endpoint: STATS, fixed_params: { project: "default" } }],
      expires_at: "2020-01-01T00:00:00Z",
    },
  ],
});

const keyEntry = (name: string, key: string) => ({
  name,
  sha256: sha256Hex(key),
  scopes: [{ endpoint: STATS, fixed_params: { project: "default" } }],
});

/** A service whose engine only records what reaches it, so nothing out of scope goes unseen. */
async function attackedService(options: Partial<ServiceOptions> = {}) {
  const calls: QueryRequest[] = [];
  const recording = (engine: QueryEngine): QueryEngine => ({
    ...engine,
    run: async (query) => {
      calls.push(query);
      return { rows: [], truncated: false };
    },
  });
  const service = await startService({
    now: NOW,
    keysFile: new KeysFile(KEYS_PATH),
    tokens: createTokenVerifier({ secret: SECRET, maxLifetimeSeconds: 600 }),
    wrapEngine: recording,
    ...options,
    config: {
      rateLimitPerMinute: 100_000,
      ...options.config,
      auth: { apiKeys: [FULL_KEY], failuresPerMinute: 1000, ...options.config?.auth },
    },
  });
  const asAcme = (url: string, method: "GET" | "HEAD" | "POST" = "GET") =>
    service.app.inject({ method, url, headers: { "x-api-key": ACME_KEY } });
  return { ...service, calls, asAcme };
}

const errorOf = (response: { body: string }) =>
  (JSON.parse(response.body) as { error: { code: string; message: string } }).error;

const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
const inFiveMinutes = () => Math.floor(Date.now() / 1000) + 300;
const EVERYTHING = [{ endpoint: "*", fixed_params: {} }];

/** A token with any header, HMAC-signed (SHA-`bits`) with `secret`, or unsigned when secret is absent. */
function handMadeToken(header: object, secret?: string, bits = 256): string {
  const signed = `${b64(header)}.${b64({ sub: "mallory", exp: inFiveMinutes(), scopes: EVERYTHING })}`;
  if (secret === undefined) return `${signed}.`;
  return `${signed}.${createHmac(`sha${bits}`, secret).update(signed).digest("base64url")}`;
}

const token = (sub: string, scopes: object[], secret = SECRET) =>
  new SignJWT({ scopes })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(sub)
    .setIssuedAt()
    .setExpirationTime("5m")
    .sign(new TextEncoder().encode(secret));

const stats = (query: string) => `/api/endpoints/${STATS}?interval=1day&${query}`;

describe("query strings that try to leave a fixed project", () => {
  const forbidden: [string, string][] = [
    ["the other tenant", stats("project=staging")],
    ["project twice, own first", stats("project=default&project=staging")],
    ["project twice, other first", stats("project=staging&project=default")],
    ["project twice, both own", stats("project=default&project=default")],
    ["a percent-encoded name", stats("pro%6Aect=staging")],
    ["an encoded name beside the plain one", stats("pro%6Aect=default&project=staging")],
    ["an empty value", stats("project=")],
    ["a bare name", stats("project")],
    ["a `;` inside the value", stats("project=default;project=staging")],
    ["an encoded `&` inside the value", stats("project=default%26project%3Dstaging")],
    ["a leading space", stats("project=+default")],
    ["a trailing space", stats("project=default+")],
    ["a NUL", stats("project=default%00")],
    ["a zero-width space", stats("project=default%E2%80%8B")],
    ["a Cyrillic look-alike", stats("project=def%D0%B0ult")],
    ["another case", stats("project=Default")],
    [
      "the UUID in capitals",
      `/api/endpoints/${STATS_ID.toUpperCase()}?interval=1day&project=staging`,
    ],
    ["/query/<UUID>", `/api/endpoints/query/${STATS_ID}?interval=1day&project=staging`],
    ["/query/<name>", `/api/endpoints/query/${STATS}?interval=1day&project=staging`],
    [
      "a percent-encoded endpoint name",
      "/api/endpoints/functions%2Einvocation-stats?interval=1day&project=staging",
    ],
  ];
  it.each(forbidden)("refuses %s with 403 before the engine", async (_what, url) => {
    const { asAcme, calls } = await attackedService();
    const response = await asAcme(url);
    expect(response.statusCode).toBe(403);
    expect(errorOf(response).code).toBe("forbidden");
    expect(errorOf(response).message).not.toContain("staging");
    expect(calls).toHaveLength(0);
  });

  const unknown: [string, string][] = [
    ["Project=", stats("Project=staging")],
    ["PROJECT=", stats("PROJECT=staging")],
    ["project[]=", stats("project[]=staging")],
    ["project%5B%5D=", stats("project%5B%5D=staging")],
    ["project[0]=", stats("project[0]=staging")],
    ["__proto__=", stats("__proto__=staging")],
    ["__proto__[project]=", stats("__proto__[project]=staging")],
    ["constructor[prototype][project]=", stats("constructor[prototype][project]=staging")],
    ["constructor=", stats("constructor=staging")],
  ];
  it.each(unknown)("refuses %s as an unknown parameter (400)", async (_what, url) => {
    const { asAcme, calls } = await attackedService();
    const response = await asAcme(url);
    expect(response.statusCode).toBe(400);
    expect(errorOf(response).code).toBe("invalid_params");
    expect(calls).toHaveLength(0);
  });

  it.each([
    ["a bad escape", stats("project=%ZZ")],
    ["a bad escape in a name", stats("%ZZ=staging")],
    ["an overlong UTF-8 NUL", stats("project=%C0%80")],
  ])("refuses %s as a badly encoded URL (400)", async (_what, url) => {
    const { asAcme, calls } = await attackedService();
    const response = await asAcme(url);
    expect(response.statusCode).toBe(400);
    expect(errorOf(response).code).toBe("bad_request");
    expect(calls).toHaveLength(0);
  });

  it("runs `interval=1day;project=staging` on its own project: `;` separates nothing", async () => {
    const { asAcme, calls } = await attackedService();
    expect((await asAcme(`/api/endpoints/${STATS}?interval=1day;project=staging`)).statusCode).toBe(
      200,
    );
    expect(calls.map((call) => call.params)).toEqual([
      { project: "default", function_id: null, interval: "1day" },
    ]);
  });

  it("runs the endpoint by its UUID in capitals on its own project", async () => {
    const { asAcme, calls } = await attackedService();
    const response = await asAcme(`/api/endpoints/${STATS_ID.toUpperCase()}?interval=1day`);
    expect(response.statusCode).toBe(200);
    expect(calls.map((call) => call.params.project)).toEqual(["default"]);
  });
});

describe("usage.api-counts: a pinned regular expression cannot be widened", () => {
  it.each([
    ["an alternation", `${OWN_USAGE}|staging`],
    ["match-all", ".*"],
    ["the other tenant's host", "^https://staging\\."],
    ["the pattern unanchored", "https://default\\."],
    ["an empty pattern", ""],
  ])("refuses %s with 403", async (_what, pattern) => {
    const { asAcme, calls } = await attackedService();
    const query = new URLSearchParams({ interval: "daily", project: pattern });
    const response = await asAcme(`/api/endpoints/${USAGE}?${query}`);
    expect(response.statusCode).toBe(403);
    expect(calls).toHaveLength(0);
  });

  it("runs the pinned pattern when it is given exactly or omitted", async () => {
    const { asAcme, calls } = await attackedService();
    const exact = new URLSearchParams({ interval: "daily", project: OWN_USAGE });
    expect((await asAcme(`/api/endpoints/${USAGE}?${exact}`)).statusCode).toBe(200);
    expect((await asAcme(`/api/endpoints/${USAGE}?interval=daily`)).statusCode).toBe(200);
    expect(calls.map((call) => call.params.project)).toEqual([OWN_USAGE, OWN_USAGE]);
  });
});

describe("paths and methods that try to miss the scope check", () => {
  it.each([
    ["a trailing slash", `/api/endpoints/${STATS}/?interval=1day&project=staging`],
    ["a double slash before api", `//api/endpoints/${STATS}?interval=1day&project=staging`],
    ["a double slash before the name", `/api/endpoints//${STATS}?interval=1day&project=staging`],
    ["a trailing slash on /metrics", "/metrics/"],
  ])("answers %s with 404 not_found", async (_what, url) => {
    const { asAcme, calls } = await attackedService();
    const response = await asAcme(url);
    expect(response.statusCode).toBe(404);
    expect(errorOf(response).code).toBe("not_found");
    expect(calls).toHaveLength(0);
  });

  it("answers POST with 405, never the query", async () => {
    const { asAcme, calls } = await attackedService();
    const response = await asAcme(stats("project=staging"), "POST");
    expect(response.statusCode).toBe(405);
    expect(calls).toHaveLength(0);
  });

  it("answers HEAD as the GET: refused by the scope, never the query", async () => {
    const { asAcme, calls } = await attackedService();
    const response = await asAcme(stats("project=staging"), "HEAD");
    expect(response.statusCode).toBe(403);
    expect(calls).toHaveLength(0);
  });

  it("refuses a body on GET before anything reaches the engine", async () => {
    const { app, calls } = await attackedService();
    const response = await app.inject({
      method: "GET",
      url: `/api/endpoints/${STATS}?interval=1day`,
      headers: { "x-api-key": ACME_KEY, "content-type": "application/json" },
      payload: JSON.stringify({ project: "staging" }),
    });
    expect(response.statusCode).toBe(413);
    expect(calls).toHaveLength(0);
  });

  it("refuses an endpoint outside the scopes by name and by UUID", async () => {
    const { asAcme, calls } = await attackedService();
    for (const path of ["logs.all", LOGS_ID, `query/${LOGS_ID.toUpperCase()}`]) {
      const response = await asAcme(`/api/endpoints/${path}?project=default&project_tier=FREE`);
      expect(response.statusCode, path).toBe(403);
      expect(errorOf(response).message).toBe("This credential may not call logs.all.");
    }
    expect(calls).toHaveLength(0);
  });

  it("refuses /metrics to a credential without a * scope", async () => {
    const { asAcme } = await attackedService();
    const response = await asAcme("/metrics");
    expect(response.statusCode).toBe(403);
    expect(response.body).not.toContain("query_service_requests_total");
  });

  it("lists only the credential's endpoints, with its own fixed values", async () => {
    const { asAcme } = await attackedService();
    const listing = JSON.parse((await asAcme("/api/endpoints")).body) as {
      result: { name: string; fixed_params: Record<string, string> }[];
    };
    expect(listing.result.map((entry) => [entry.name, entry.fixed_params])).toEqual([
      [STATS, { project: "default" }],
      [USAGE, { project: OWN_USAGE }],
    ]);
  });
});

describe("credentials that are forged, stale, misplaced or mixed", () => {
  const url = stats("project=staging");

  it("uses X-API-KEY when both headers are sent: a scoped key cannot borrow a full one", async () => {
    const { app, calls } = await attackedService();
    const response = await app.inject({
      url,
      headers: { "x-api-key": ACME_KEY, authorization: `Bearer ${FULL_KEY}` },
    });
    expect(response.statusCode).toBe(403);
    expect(calls).toHaveLength(0);
  });

  it("does not fall back to Authorization when X-API-KEY is wrong", async () => {
    const { app } = await attackedService();
    const response = await app.inject({
      url,
      headers: { "x-api-key": "not-a-key-0123456789", authorization: `Bearer ${FULL_KEY}` },
    });
    expect(response.statusCode).toBe(401);
  });

  it.each([
    ["alg none", handMadeToken({ alg: "none", typ: "JWT" })],
    ["alg NONE with a signature", `${handMadeToken({ alg: "NONE" })}c2ln`],
    [
      "HS256 with a wrong secret",
      handMadeToken({ alg: "HS256" }, "a-wrong-secret-of-at-least-32-bytes"),
    ],
    ["HS512 with the right secret", handMadeToken({ alg: "HS512" }, SECRET, 512)],
  ])("refuses a token with %s (401)", async (_what, forged) => {
    const { app, calls } = await attackedService();
    const response = await app.inject({ url, headers: { authorization: `Bearer ${forged}` } });
    expect(response.statusCode).toBe(401);
    expect(errorOf(response).code).toBe("unauthorized");
    expect(errorOf(response).message).not.toContain(forged);
    expect(calls).toHaveLength(0);
  });

  it("refuses a token signed with a wrong secret made with jose", async () => {
    const { app } = await attackedService();
    const forged = await token("acme", EVERYTHING, "a-wrong-secret-of-at-least-32-bytes");
    const response = await app.inject({ url, headers: { authorization: `Bearer ${forged}` } });
    expect(response.statusCode).toBe(401);
    expect(errorOf(response).message).toBe("Invalid access token: signature verification failed.");
  });

  it("refuses a keys-file key after its expires_at", async () => {
    const { app } = await attackedService();
    const response = await app.inject({
      url: stats("project=default"),
      headers: { "x-api-key": EXPIRED_KEY },
    });
    expect(response.statusCode).toBe(401);
    expect(errorOf(response).message).toBe("This API key expired at 2020-01-01T00:00:00.000Z.");
  });

  it("refuses a removed key on the connection that kept presenting it, from the reload on", async () => {
    const path = temporaryFile("keys.json", { keys: [keyEntry("acme", ACME_KEY)] });
    const keysFile = new KeysFile(path);
    const { app } = await attackedService({ keysFile });
    const base = await app.listen({ host: "127.0.0.1", port: 0 });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const sockets = new Set<unknown>();
    const statusOf = (key: string) =>
      new Promise<number>((resolve, reject) => {
        const request = httpGet(
          `${base}${stats("project=default")}`,
          { agent, headers: { "x-api-key": key } },
          (response) => {
            sockets.add(response.socket);
            response.resume().on("end", () => resolve(response.statusCode ?? 0));
          },
        );
        request.on("error", reject);
      });
    try {
      expect([await statusOf(ACME_KEY), await statusOf(ACME_KEY)]).toEqual([200, 200]);
      writeFileSync(path, JSON.stringify({ keys: [keyEntry("globex", `${ACME_KEY}-2`)] }));
      keysFile.reload(pino({ level: "silent" }));
      expect(await statusOf(ACME_KEY)).toBe(401);
      expect(await statusOf(`${ACME_KEY}-2`)).toBe(200);
      // All four on one kept-alive connection.
      expect(sockets.size).toBe(1);
    } finally {
      agent.destroy();
    }
  });

  it.each([
    ["no credential", {}],
    ["a key in the query string instead of a header", null],
    ["a Basic scheme", { authorization: `Basic ${ACME_KEY}` }],
    ["two Bearer values", { authorization: `Bearer ${ACME_KEY} ${FULL_KEY}` }],
    ["a 12 KB key", { "x-api-key": "k".repeat(12_000) }],
    [
      "a 12 KB JWT-shaped value",
      { authorization: `Bearer ${"a".repeat(6000)}.${"b".repeat(5000)}.c` },
    ],
  ])("refuses %s (401)", async (_what, headers) => {
    const { app } = await attackedService();
    const response = await app.inject({
      url: headers === null ? `${stats("project=default")}&api_key=${FULL_KEY}` : url,
      headers: headers ?? {},
    });
    expect(response.statusCode).toBe(401);
    expect(errorOf(response).code).toBe("unauthorized");
  });

  it("answers 401 alike for a real and an unknown endpoint: no existence oracle before the key", async () => {
    const { app } = await attackedService();
    const real = await app.inject({ url: "/api/endpoints/logs.all" });
    const unknown = await app.inject({ url: "/api/endpoints/no-such-endpoint" });
    expect([real.statusCode, unknown.statusCode]).toEqual([401, 401]);
    expect(errorOf(real)).toEqual(errorOf(unknown));
    expect((await app.inject({ url: "/metrics" })).statusCode).toBe(401);
  });

  it("locks an address out of guessing after too many failures; a valid key still passes", async () => {
    const { app } = await attackedService({ config: { auth: { failuresPerMinute: 3 } } });
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const response = await app.inject({ url, headers: { "x-api-key": `guess-${attempt}` } });
      expect(response.statusCode).toBe(401);
    }
    const locked = await app.inject({ url, headers: { "x-api-key": "guess-3" } });
    expect(locked.statusCode).toBe(429);
    expect(locked.headers["retry-after"]).toBeDefined();
    // Authenticated, then refused by its scope: the throttle does not stand between a key and its checks.
    const valid = await app.inject({ url, headers: { "x-api-key": ACME_KEY } });
    expect(valid.statusCode).toBe(403);
  });

  it("keeps keys and tokens out of every log line", async () => {
    const lines: string[] = [];
    const logger = pino({ level: "debug" }, { write: (line: string) => lines.push(line) });
    const { app } = await attackedService({ logger });
    const good = await token("dashboard", EVERYTHING);
    const forged = handMadeToken({ alg: "none" });
    for (const headers of [
      { "x-api-key": ACME_KEY },
      { authorization: `Bearer ${FULL_KEY}` },
      { authorization: `Bearer ${good}` },
      { authorization: `Bearer ${forged}` },
      { "x-api-key": EXPIRED_KEY },
    ]) {
      await app.inject({ url, headers });
    }
    await app.inject({ url: `${stats("project=default")}&api_key=${FULL_KEY}` });
    const output = lines.join("");
    expect(lines.length).toBeGreaterThan(0);
    for (const secret of [ACME_KEY, FULL_KEY, EXPIRED_KEY, good, forged, SECRET]) {
      expect(output).not.toContain(secret);
    }
    expect(output).not.toContain(sha256Hex(ACME_KEY));
  });
});
