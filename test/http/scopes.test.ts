// Tenant isolation end to end: named keys from an API_KEYS_FILE, pinned to their own project, through
// the whole service. The engine and the cache must only ever see a tenant's own values.
import fc from "fast-check";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { openAlertRules } from "../../src/alerts/rules-source.ts";
import { sha256Hex } from "../../src/credentials/authenticate.ts";
import type { Scope } from "../../src/credentials/credential.ts";
import { KeysFile } from "../../src/credentials/keys-file.ts";
import type { EndpointDefinition } from "../../src/endpoints/catalog.ts";
import type { QueryEngine, QueryRequest } from "../../src/engines/engine.ts";
import { catalog, findEndpoint } from "../support/catalog.ts";
import {
  edgeLog,
  edgeMetadata,
  functionCall,
  HOUR,
  MINUTE,
  request,
  SECOND,
  shift,
} from "../support/fixtures.ts";
import { type ServiceOptions, startService } from "../support/service.ts";
import { temporaryFile } from "../support/temporary-file.ts";

const NOW = "2026-11-21T05:17:42.123456Z";
const STATS = "functions.invocation-stats";
const LOGS = "logs.all";
const USAGE = "usage.api-counts";
const STATS_ID = "301c3c3d-c4b3-4d6e-b0a1-e6310fabb99c";
const LOGS_ID = "c4e48f7a-e763-48a3-9217-93a065d845d8";

type Tenant = "acme" | "globex";
type Who = Tenant | "admin";
const OTHER: Record<Tenant, Tenant> = { acme: "globex", globex: "acme" };

/** What a tenant's usage scope pins: the regex of its own request URLs. */
const usagePattern = (project: string) => `^https://${project}\\.`;

/** Scopes pinning `project` to the tenant's own, for each endpoint given (by name or UUID). */
const pinned = (project: Tenant, endpoints: string[]): Scope[] =>
  endpoints.map((endpoint) => ({
    endpoint,
    fixed_params: { project: endpoint === USAGE ? usagePattern(project) : project },
  }));

// globex lacks usage.api-counts, so that one tenant has an endpoint outside its scopes; its stats
// scope names the UUID in capitals, as a keys file written by hand may.
const KEYS: Record<Who, { key: string; scopes: Scope[] }> = {
  acme: { key: "acme-key-0123456789abcdef", scopes: pinned("acme", [STATS, LOGS, USAGE]) },
  globex: {
    key: "globex-key-0123456789abcdef",
    scopes: pinned("globex", [STATS_ID.toUpperCase(), LOGS]),
  },
  admin: { key: "admin-key-0123456789abcdef", scopes: [{ endpoint: "*", fixed_params: {} }] },
};

const KEYS_PATH = temporaryFile("keys.json", {
  keys: Object.entries(KEYS).map(([name, { key, scopes }]) => ({
    name,
    sha256: sha256Hex(key),
    scopes,
  })),
});

/** The fixed params `who` runs `endpoint` with: its first scope naming it, as the rule says. */
function fixedFor(who: Who, endpoint: EndpointDefinition): Record<string, string> | undefined {
  return KEYS[who].scopes.find(
    (scope) => scope.endpoint === "*" || findEndpoint(scope.endpoint) === endpoint,
  )?.fixed_params;
}

// Each tenant's own records: acme two invocations (one failing) and an edge request, globex one of
// each, so a row count or id says whose rows came back.
const tenantLog = (project: Tenant, ago: bigint) =>
  edgeLog(shift(NOW, -ago), {
    project,
    metadata: [edgeMetadata(request("/rest/v1/todos", project))],
  });
const OWN = {
  acme: { invocations: 2, maxMs: 30, log: tenantLog("acme", 5n * SECOND) },
  globex: { invocations: 1, maxMs: 99, log: tenantLog("globex", 20n * MINUTE) },
};
const TABLES = {
  function_edge_logs: [
    functionCall(shift(NOW, -3n * MINUTE), { project: "acme", ms: 10 }),
    functionCall(shift(NOW, -3n * MINUTE), { project: "acme", ms: 30, statuses: [500] }),
    functionCall(shift(NOW, -3n * MINUTE), { project: "globex", ms: 99 }),
  ],
  edge_logs: [OWN.acme.log, OWN.globex.log],
};

/** A service on the tenants' rows and keys, recording every query that reaches the engine. */
async function tenantService(options: Partial<ServiceOptions> = {}) {
  const calls: QueryRequest[] = [];
  const recording = (engine: QueryEngine): QueryEngine => ({
    ...engine,
    run: (query) => {
      calls.push(query);
      return engine.run(query);
    },
  });
  const service = await startService({
    now: NOW,
    tables: TABLES,
    keysFile: new KeysFile(KEYS_PATH),
    wrapEngine: recording,
    ...options,
    config: { rateLimitPerMinute: 100_000, ...options.config },
  });
  const as = (who: Who, url: string) => service.get(url, { "x-api-key": KEYS[who].key });
  return { ...service, calls, as };
}

const cachedService = () =>
  tenantService({
    config: { cache: { maxEntries: 100, maxBytes: 1_000_000 } },
    cache: { now: () => 0 },
  });

/** `path` is a name, or `query/<name or UUID>`; a parameter repeats when given twice as a pair. */
const url = (path: string, params: Record<string, string> | [string, string][] = {}) =>
  `/api/endpoints/${path}?${new URLSearchParams(params)}`;

const body = (response: { body: string }) =>
  JSON.parse(response.body) as {
    result: Record<string, unknown>[];
    error: { code: string; message: string };
  };

/** An endpoint's path in each form the service answers: by name, by UUID in either case, under query/. */
const pathOf = (endpoint: EndpointDefinition, form: string) =>
  ({
    name: endpoint.name,
    uuid: `query/${endpoint.id}`,
    UUID: `query/${endpoint.id.toUpperCase()}`,
    "query/name": `query/${endpoint.name}`,
  })[form] as string;

describe("random requests by random credentials", () => {
  const projects = [
    ...(["acme", "globex"] as const).flatMap((p) => [[p], [usagePattern(p)]]),
    ["acme", "acme"],
    ["acme", "globex"],
    [],
  ];
  const requests = fc.record({
    who: fc.constantFrom<Who>("acme", "globex", "admin"),
    endpoint: fc.constantFrom(...catalog),
    path: fc.constantFrom("name", "uuid", "UUID", "query/name"),
    project: fc.constantFrom(...projects),
    // A HEAD is the GET without its body: the same scope check before the same query.
    method: fc.constantFrom("GET", "HEAD"),
  });

  it("never 5xx, a 403 never reaches the engine, and the engine sees only the scope's fixed values", async () => {
    const { as, app, calls } = await tenantService();
    const statuses: number[] = [];

    await fc.assert(
      fc.asyncProperty(requests, async ({ who, endpoint, path, project, method }) => {
        const { project: _, ...rest } = endpoint.example;
        const params = [
          ...Object.entries(rest),
          ...project.map((v) => ["project", v] as [string, string]),
        ];
        const before = calls.length;
        const target = url(pathOf(endpoint, path), params);
        const response =
          method === "GET"
            ? await as(who, target)
            : await app.inject({ method, url: target, headers: { "x-api-key": KEYS[who].key } });
        statuses.push(response.statusCode);

        expect(response.statusCode, response.body).toBeLessThan(500);
        const reached = calls.slice(before);
        if (response.statusCode === 403) {
          if (method === "GET") expect(body(response).error.code).toBe("forbidden");
          expect(reached).toEqual([]);
          return;
        }
        // No cache here: every answer with rows ran exactly one query.
        expect(reached).toHaveLength(response.statusCode === 200 ? 1 : 0);
        const fixed = fixedFor(who, endpoint);
        expect(fixed, `${who} may call ${endpoint.name}`).toBeDefined();
        for (const call of reached) {
          for (const [param, value] of Object.entries(fixed ?? {})) {
            expect(call.params[param], param).toBe(value);
          }
          if (who !== "admin") expect(JSON.stringify(call.params)).not.toContain(OTHER[who]);
        }
        if (method === "HEAD") {
          expect(response.body).toBe("");
        } else if (who !== "admin" && endpoint.name === LOGS && response.statusCode === 200) {
          expect(body(response).result.map((row) => row.id)).toEqual([OWN[who].log.id]);
        }
      }),
      { numRuns: 60 },
    );
    // Both outcomes were exercised, so neither branch above held vacuously.
    expect(statuses).toContain(200);
    expect(statuses).toContain(403);
  });
});

/**
 * Random stream requests (`/follow` or `/watch`) by random credentials: never a 5xx, a refusal never
 * reaches the engine, and every query a stream needed ran with the scope's fixed values only.
 * `paramsOf` makes a request's parameters; `opened` waits for what a 200 runs, then stops it.
 */
async function expectScopedStreams(
  suffix: "follow" | "watch",
  service: Awaited<ReturnType<typeof tenantService>>,
  paramsOf: (endpoint: EndpointDefinition, project: string[]) => [string, string][],
  opened: (before: number, stop: AbortController) => Promise<void>,
) {
  const hasStream = (endpoint: EndpointDefinition) =>
    suffix === "follow" ? endpoint.paging?.follow === true : endpoint.cache !== undefined;
  const streamed = catalog.find(hasStream) as EndpointDefinition;
  const unstreamed = catalog.find((endpoint) => !hasStream(endpoint)) as EndpointDefinition;
  const requests = fc.record({
    who: fc.constantFrom<Who>("acme", "globex", "admin"),
    endpoint: fc.constantFrom(...catalog),
    path: fc.constantFrom("name", "uuid", "UUID", "query/name"),
    project: fc.constantFrom<string[]>(["acme"], ["globex"], ["acme", "globex"], []),
    // A HEAD checks what the GET does and opens nothing.
    method: fc.constantFrom("GET", "HEAD"),
  });
  const { calls } = service;
  const base = await service.app.listen({ host: "127.0.0.1", port: 0 });
  const statuses: number[] = [];
  await fc.assert(
    fc.asyncProperty(requests, async ({ who, endpoint, path, project, method }) => {
      const before = calls.length;
      const stop = new AbortController();
      const target = url(`${pathOf(endpoint, path)}/${suffix}`, paramsOf(endpoint, project));
      const response = await fetch(`${base}${target}`, {
        method,
        headers: { "x-api-key": KEYS[who].key },
        signal: stop.signal,
      });
      statuses.push(response.status);
      expect(response.status).toBeLessThan(500);
      if (response.status !== 200) {
        if (method === "GET") {
          const { error } = (await response.json()) as { error: { code: string } };
          if (response.status === 403) expect(error.code).toBe("forbidden");
        }
        expect(calls.slice(before)).toEqual([]);
        return;
      }
      if (method === "GET") await opened(before, stop);
      // A follow's HEAD runs no catch-up; a watch's runs (or finds) its first value.
      else if (suffix === "follow") expect(calls.slice(before)).toEqual([]);
      const fixed = fixedFor(who, endpoint);
      expect(fixed, `${who} may open ${endpoint.name}/${suffix}`).toBeDefined();
      for (const call of calls.slice(before)) {
        for (const [param, value] of Object.entries(fixed ?? {})) {
          expect(call.params[param], param).toBe(value);
        }
        if (who !== "admin") expect(JSON.stringify(call.params)).not.toContain(OTHER[who]);
      }
    }),
    {
      numRuns: 40,
      // Each outcome at least once, whatever the random draws: a tenant's stream of its own project
      // (200), of the other's (403), of an endpoint without this kind of stream (404).
      examples: [
        [{ who: "acme", endpoint: streamed, path: "name", project: ["acme"], method: "GET" }],
        [{ who: "acme", endpoint: streamed, path: "name", project: ["globex"], method: "GET" }],
        [{ who: "acme", endpoint: unstreamed, path: "name", project: ["acme"], method: "GET" }],
      ],
    },
  );
  // Each outcome was exercised, so no branch above held vacuously.
  expect(statuses).toContain(200);
  expect(statuses).toContain(403);
  expect(statuses).toContain(404);
}

describe("random stream requests by random credentials", () => {
  it("follow: never 5xx, a 403 never reaches the engine, and the engine sees only the scope's fixed values", async () => {
    const service = await tenantService({
      // Only the catch-up queries: no feed polls while a stream is open.
      config: {
        follow: { intervalMs: 600_000, maxPerCredential: 1_000 },
        streams: { maxPerAddress: 1_000 },
      },
    });
    await expectScopedStreams(
      "follow",
      service,
      (_endpoint, project) => [
        ["project_tier", "FREE"],
        ["iso_timestamp_start", shift(NOW, -HOUR)],
        ...project.map((v) => ["project", v] as [string, string]),
      ],
      // The stream's catch-up reaches the engine.
      async (before, stop) => {
        try {
          await expect
            .poll(() => service.calls.length, { timeout: 10_000 })
            .toBeGreaterThan(before);
        } finally {
          stop.abort();
        }
      },
    );
  });

  it("watch: never 5xx, a 403 never reaches the engine, and the engine sees only the scope's fixed values", async () => {
    const service = await tenantService({
      config: {
        cache: { maxEntries: 100, maxBytes: 1_000_000 },
        follow: { maxPerCredential: 1_000 },
        streams: { maxPerAddress: 1_000 },
      },
      cache: { now: () => 0 },
    });
    await expectScopedStreams(
      "watch",
      service,
      (endpoint, project) => {
        const { project: _, ...rest } = endpoint.example;
        const own = (v: string) => (endpoint.name === USAGE ? usagePattern(v) : v);
        return [
          ...Object.entries(rest),
          ...project.map((v) => ["project", own(v)] as [string, string]),
        ];
      },
      // The first answer was run (or found cached) before the stream opened.
      async (_before, stop) => stop.abort(),
    );
  });
});

describe("a tenant's key", () => {
  it.each(["acme", "globex"] as const)(
    "of %s, omitting project, gets its own rows",
    async (who) => {
      const { as } = await tenantService();
      const stats = body(await as(who, url(STATS, { interval: "1hr" }))).result;
      expect(stats).toMatchObject([
        { count: OWN[who].invocations, max_execution_time: OWN[who].maxMs },
      ]);
      const logs = body(await as(who, url(LOGS, { project_tier: "FREE" }))).result;
      expect(logs.map((row) => row.id)).toEqual([OWN[who].log.id]);
    },
  );

  it("of acme counts only acme's requests in usage.api-counts", async () => {
    const { as, calls } = await tenantService();
    const usage = body(await as("acme", url(USAGE, { interval: "hourly" }))).result;
    expect(usage).toMatchObject([{ total_rest_requests: 1 }]);
    expect(calls[0]?.params.project).toBe(usagePattern("acme"));
  });

  it("may give its own project explicitly, but another's is 403 naming project", async () => {
    const { as, calls } = await tenantService();
    const own = await as("acme", url(STATS, { project: "acme", interval: "1hr" }));
    expect(own.statusCode).toBe(200);

    for (const [path, endpoint] of [
      [STATS, STATS],
      [`query/${LOGS_ID}`, LOGS],
    ] as const) {
      const example = (findEndpoint(endpoint) as EndpointDefinition).example;
      const other = await as("acme", url(path, { ...example, project: "globex" }));
      expect(other.statusCode).toBe(403);
      expect(body(other).error.code).toBe("forbidden");
      expect(body(other).error.message).toMatch(/\bproject\b/);
    }
    expect(calls).toHaveLength(1);
  });

  it("calling an endpoint outside its scopes is 403 naming the endpoint", async () => {
    const { as, calls } = await tenantService();
    const response = await as("globex", url(USAGE, { interval: "hourly" }));
    expect(response.statusCode).toBe(403);
    expect(body(response).error).toMatchObject({
      code: "forbidden",
      message: expect.stringContaining(USAGE),
    });
    expect(calls).toEqual([]);
  });
});

describe("the result cache across credentials", () => {
  it.each([
    [STATS, { interval: "1hr" }],
    [USAGE, { interval: "hourly" }],
  ])(
    "shares one %s entry between acme omitting project and admin giving acme's",
    async (endpoint, params) => {
      const { as, calls } = await cachedService();
      const pinnedProject = fixedFor("acme", findEndpoint(endpoint) as EndpointDefinition)?.project;
      const miss = await as("acme", url(endpoint, params));
      const hit = await as("admin", url(endpoint, { ...params, project: pinnedProject as string }));

      expect(miss.headers["x-cache"]).toBe("MISS");
      expect(hit.headers["x-cache"]).toBe("HIT");
      expect(hit.body).toBe(miss.body);
      expect(calls).toHaveLength(1);
    },
  );

  it("never answers acme from globex's entry", async () => {
    const { as, calls } = await cachedService();
    const globex = await as("globex", url(STATS, { interval: "1hr" }));
    const acme = await as("acme", url(STATS, { interval: "1hr" }));

    expect(globex.headers["x-cache"]).toBe("MISS");
    expect(acme.headers["x-cache"]).toBe("MISS");
    expect(body(acme).result).toMatchObject([{ count: OWN.acme.invocations }]);
    expect(calls.map((call) => call.params.project)).toEqual(["globex", "acme"]);
  });
});

describe("what a credential may see besides its endpoints", () => {
  it.each(["acme", "globex", "admin"] as const)(
    "/api/endpoints lists %s's endpoints with their fixed params",
    async (who) => {
      const { as } = await tenantService();
      const listing = body(await as(who, "/api/endpoints")).result;
      const expected = catalog.flatMap((endpoint) => {
        const fixed = fixedFor(who, endpoint);
        return fixed ? [{ name: endpoint.name, fixed_params: fixed }] : [];
      });
      expect(listing.map(({ name, fixed_params }) => ({ name, fixed_params }))).toEqual(expected);
    },
  );

  it("lists all three endpoints for admin, with nothing fixed", async () => {
    const { as } = await tenantService();
    const listing = body(await as("admin", "/api/endpoints")).result;
    expect(listing.map(({ name, fixed_params }) => [name, fixed_params])).toEqual(
      catalog.map((endpoint) => [endpoint.name, {}]),
    );
  });

  it("/api/alerts lists to each credential exactly the rules whose endpoint and parameters it may call", async () => {
    // One rule per endpoint and tenant project; none can fire on these rows.
    const ruleOf = (endpoint: EndpointDefinition, project: Tenant) => {
      const base = { name: `${endpoint.name}-${project}`, endpoint: endpoint.name };
      const webhook = { url: "http://127.0.0.1:9/hook", secret: `whsec_${"A".repeat(32)}` };
      if (endpoint.name === LOGS) {
        const params = { project, project_tier: "FREE" };
        return { ...base, params, condition: { at_least: 1_000, within: "5m" }, webhook };
      }
      if (endpoint.name === USAGE) {
        const params = { project: usagePattern(project), interval: "hourly" };
        return {
          ...base,
          params,
          condition: { any_row: "total_rest_requests > 1000000" },
          webhook,
        };
      }
      const params = { project, interval: "1hr" };
      return { ...base, params, condition: { any_row: "count > 1000000" }, webhook };
    };
    const rules = catalog.flatMap((endpoint) =>
      (["acme", "globex"] as const).map((project) => ruleOf(endpoint, project)),
    );
    const { as } = await tenantService({
      config: { cache: { maxEntries: 100, maxBytes: 1_000_000 } },
      cache: { now: () => 0 },
      alertRules: openAlertRules(temporaryFile("rules.json", { rules })),
    });
    // What the scope rule lets each call: its endpoint, with every fixed value as the rule has it.
    const callable = (who: Who, rule: (typeof rules)[number]) => {
      const fixed = fixedFor(who, findEndpoint(rule.endpoint) as EndpointDefinition);
      const params: Record<string, string> = rule.params;
      return fixed !== undefined && Object.entries(fixed).every(([k, v]) => params[k] === v);
    };
    const seen: Record<Who, number> = { acme: 0, globex: 0, admin: 0 };
    for (const who of ["acme", "globex", "admin"] as const) {
      const listed = body(await as(who, "/api/alerts")).result.map((rule) => rule.name);
      const expected = rules.filter((rule) => callable(who, rule)).map((rule) => rule.name);
      expect(listed, who).toEqual(expected);
      seen[who] = listed.length;
      // One endpoint's rules, asked of it as any of its routes is: out of the scopes, 403.
      for (const endpoint of catalog) {
        const answer = await as(who, `/api/alerts?endpoint=${endpoint.id}`);
        if (fixedFor(who, endpoint) === undefined) {
          expect(answer.statusCode, `${who} ${endpoint.name}`).toBe(403);
          continue;
        }
        const own = body(answer).result.map((rule) => rule.name);
        const ofEndpoint = rules.filter((rule) => rule.endpoint === endpoint.name);
        expect(own, `${who} ${endpoint.name}`).toEqual(
          expected.filter((name) => ofEndpoint.some((rule) => rule.name === name)),
        );
      }
    }
    expect(seen).toEqual({ acme: 3, globex: 2, admin: 6 });
  });

  it("serves /metrics to admin only", async () => {
    const { as } = await tenantService();
    const tenant = await as("acme", "/metrics");
    expect(tenant.statusCode).toBe(403);
    expect(body(tenant).error.code).toBe("forbidden");
    expect((await as("admin", "/metrics")).statusCode).toBe(200);
  });

  it("logs the credential's name on each request line, never its key", async () => {
    const lines: string[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => lines.push(line) });
    const { as } = await tenantService({ logger });
    await as("acme", url(LOGS, { project_tier: "FREE" }));
    await as("acme", url(LOGS, { project: "globex", project_tier: "FREE" }));

    const requests = lines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((record) => record.msg === "request");
    expect(requests).toMatchObject([
      { credential: "acme", endpoint: LOGS, status: 200 },
      { credential: "acme", endpoint: LOGS, status: 403 },
    ]);
    const output = lines.join("");
    expect(output).not.toContain(KEYS.acme.key);
    expect(output).not.toContain(sha256Hex(KEYS.acme.key));
  });
});
