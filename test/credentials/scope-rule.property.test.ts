// The scope rule against an oracle written here from its statement alone: random scope sets and
// random requests, and `authorize` must allow exactly when the oracle does, with the same values;
// and every route kind that names an endpoint must let in exactly what the rule grants.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import fc from "fast-check";
import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { type Scope, scopesSchema } from "../../src/credentials/credential.ts";
import { authorize, type RawQuery } from "../../src/credentials/scope-rule.ts";
import { createTokenVerifier } from "../../src/credentials/tokens.ts";
import type { EndpointDefinition } from "../../src/endpoints/catalog.ts";
import { builtIn, catalog } from "../support/catalog.ts";
import { startService } from "../support/service.ts";

// Written out rather than read from the catalog, so that the oracle shares no code with the rule.
const DECLARED: Readonly<Record<string, readonly string[]>> = {
  "functions.invocation-stats": [
    "project",
    "function_id",
    "interval",
    "from",
    "to",
    "bucket",
    "max_points",
  ],
  "logs.all": [
    "project",
    "project_tier",
    "iso_timestamp_start",
    "iso_timestamp_end",
    "status",
    "method",
    "path",
    "search",
    "search_regex",
    "since",
    "cursor",
  ],
  "usage.api-counts": ["project", "interval", "from", "to", "bucket", "max_points"],
};
/**
 * A presentation of the answer that every route of an endpoint's rows takes: the scope never sees
 * it, so none fixes or forbids it (a `*` scope's fixed value of it applies to no endpoint).
 */
const PRESENTATION = ["time_format"];
const ALL_PARAMS = [...new Set(Object.values(DECLARED).flat()), ...PRESENTATION];

/** Two values per parameter: a scope fixes one of them, a request gives one, so they often meet. */
const POOLS: Readonly<Record<string, readonly [string, string]>> = {
  project: ["acme", "globex"],
  function_id: ["fn-a", "fn-b"],
  interval: ["1hr", "hourly"],
  from: ["1795219200000", "2026-11-21T00:00:00Z"],
  to: ["1795240800000", "2026-11-21T06:00:00Z"],
  bucket: ["1m", "1h"],
  max_points: ["10", "300"],
  project_tier: ["FREE", "PRO"],
  iso_timestamp_start: ["2026-11-21T00:00:00Z", "2026-11-20T00:00:00Z"],
  iso_timestamp_end: ["2026-11-21T05:00:00Z", "2026-11-21T06:00:00Z"],
  status: ["5xx", "404"],
  method: ["GET", "POST"],
  since: ["15m", "1h"],
  time_format: ["epoch_ms", "rfc3339"],
};
const poolOf = (param: string): readonly string[] => POOLS[param] ?? ["x", "y"];

// ---------------------------------------------------------------------------------------------
// The oracle, from the rule's text

interface Verdict {
  scope: Scope;
  /** The fixed params that applied: a `*` scope's only where the endpoint declares them. */
  fixed: Record<string, string>;
  query: RawQuery;
}

const scopeNames = (scope: Scope, endpoint: EndpointDefinition) =>
  scope.endpoint === "*" ||
  scope.endpoint === endpoint.name ||
  scope.endpoint.toLowerCase() === endpoint.id;

function applicableFixed(scope: Scope, endpoint: EndpointDefinition): Record<string, string> {
  return Object.fromEntries(
    Object.entries(scope.fixed_params).filter(
      ([param]) => scope.endpoint !== "*" || DECLARED[endpoint.name]?.includes(param),
    ),
  );
}

/** Each fixed param either omitted or given as exactly its value (an array is never exactly). */
const conflicts = (fixed: Record<string, string>, query: RawQuery) =>
  Object.keys(fixed).filter((param) => query[param] !== undefined && query[param] !== fixed[param]);

function oracle(
  scopes: readonly Scope[],
  endpoint: EndpointDefinition,
  query: RawQuery,
): Verdict | undefined {
  for (const scope of scopes) {
    if (!scopeNames(scope, endpoint)) continue;
    const fixed = applicableFixed(scope, endpoint);
    if (conflicts(fixed, query).length === 0)
      return { scope, fixed, query: { ...query, ...fixed } };
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Arbitraries

/** A UUID with each letter in either case. */
const mixedCase = (id: string) =>
  fc
    .array(fc.boolean(), { minLength: id.length, maxLength: id.length })
    .map((upper) => [...id].map((c, i) => (upper[i] ? c.toUpperCase() : c)).join(""));

const subsetOf = (params: readonly string[]) =>
  fc
    .subarray([...params])
    .chain((chosen) =>
      fc
        .tuple(...chosen.map((param) => fc.constantFrom(...poolOf(param))))
        .map((values) =>
          Object.fromEntries(chosen.map((param, i) => [param, values[i] as string])),
        ),
    );

const scope: fc.Arbitrary<Scope> = fc.oneof(
  ...catalog.map((endpoint) =>
    fc.record({
      endpoint: fc.oneof(fc.constant(endpoint.name), mixedCase(endpoint.id)),
      fixed_params: subsetOf(DECLARED[endpoint.name] ?? []),
    }),
  ),
  fc.record({ endpoint: fc.constant("*"), fixed_params: subsetOf(ALL_PARAMS) }),
);

/** Omitted, a pool value, another value, or repeated (never "exactly" a value). */
const given = (param: string): fc.Arbitrary<string | string[] | undefined> =>
  fc.oneof(
    fc.constant(undefined),
    fc.constantFrom(...poolOf(param)),
    fc.constantFrom("other", ""),
    fc.array(fc.constantFrom(...poolOf(param), "other"), { minLength: 1, maxLength: 3 }),
  );

/**
 * An endpoint's name (short in a counterexample) and a query string as the parser gives it, of the
 * parameters the route may be given (not those it refuses before the scope looks).
 */
const requestOf = (
  names: readonly string[],
  refusedFirst: readonly string[] = [],
  presentation: readonly string[] = [],
) =>
  fc.constantFrom(...names).chain((name) => {
    // "projct" is unknown to every endpoint: the rule passes it on, validation refuses it later.
    const params = [...(DECLARED[name] ?? []), "projct", ...presentation].filter(
      (param) => !refusedFirst.includes(param),
    );
    return fc.tuple(...params.map(given)).map((values) => ({
      name,
      query: Object.fromEntries(
        params.flatMap((param, i) => (values[i] === undefined ? [] : [[param, values[i]]])),
      ) as RawQuery,
    }));
  });
const request = requestOf(catalog.map((endpoint) => endpoint.name));

const endpointNamed = (name: string) =>
  catalog.find((endpoint) => endpoint.name === name) as EndpointDefinition;

// ---------------------------------------------------------------------------------------------

describe("the scope rule", () => {
  it("has the oracle's view of what each endpoint declares", () => {
    for (const endpoint of catalog) {
      expect([...endpoint.paramNames].sort()).toEqual([...(DECLARED[endpoint.name] ?? [])].sort());
    }
  });

  it("allows exactly when the oracle does, with the oracle's values; otherwise refuses as forbidden", () => {
    const outcomes = { allowed: 0, refusedByEndpoint: 0, refusedByParam: 0 };
    fc.assert(
      fc.property(fc.array(scope, { maxLength: 4 }), request, (scopes, { name, query }) => {
        const endpoint = endpointNamed(name);
        const expected = oracle(scopes, endpoint, query);
        const decision = authorize({ name: "tenant", scopes }, endpoint, query);

        if (expected) {
          expect(decision).not.toHaveProperty("refused");
          const actual = "granted" in decision ? decision.granted : undefined;
          expect(actual).toEqual(expected.query);
          for (const [param, value] of Object.entries(expected.fixed)) {
            expect(actual?.[param], param).toBe(value);
          }
          outcomes.allowed++;
          return;
        }
        if (!("refused" in decision)) expect.fail(`allowed ${JSON.stringify(decision)}`);
        const { code, message, param } = decision.refused;
        expect(code).toBe("forbidden");
        const naming = scopes.filter((s) => scopeNames(s, endpoint));
        if (naming.length === 0) {
          expect(message).toContain(endpoint.name);
          expect(param).toBeUndefined();
          outcomes.refusedByEndpoint++;
        } else {
          const refusedParams = naming.flatMap((s) =>
            conflicts(applicableFixed(s, endpoint), query),
          );
          expect(refusedParams).toContain(param);
          expect(message).toMatch(new RegExp(`\\b${param}\\b`));
          outcomes.refusedByParam++;
        }
      }),
      { numRuns: 2000 },
    );
    // Every branch was taken, so none of the checks above held vacuously.
    expect(outcomes.allowed).toBeGreaterThan(100);
    expect(outcomes.refusedByEndpoint).toBeGreaterThan(100);
    expect(outcomes.refusedByParam).toBeGreaterThan(100);
  });

  it("answers without the HTTP layer: no module under src/credentials imports from src/http", () => {
    const credentials = resolve(import.meta.dirname, "../../src/credentials");
    const http = resolve(credentials, "../http");
    const intoHttp = readdirSync(credentials, { recursive: true, encoding: "utf8" })
      .filter((file) => file.endsWith(".ts"))
      .flatMap((file) => {
        const source = readFileSync(join(credentials, file), "utf8");
        return [...source.matchAll(/\b(?:from|import)\s*\(?\s*["']([^"']+)["']/g)]
          .map(([, specifier = ""]) => resolve(dirname(join(credentials, file)), specifier))
          .filter((target) => !relative(http, target).startsWith(".."))
          .map((target) => `${file} -> ${relative(credentials, target)}`);
      });
    expect(intoHttp).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// Every route kind that names an endpoint, through the whole service

const SECRET = "a-test-secret-of-at-least-32-bytes!!";

/**
 * Each route kind: the endpoints that have it (written out, as DECLARED is), its URL, the parameters
 * it refuses before the scope looks, whether it takes the presentation parameters (which the scope
 * never judges), and whether the scope judges the endpoint alone (the alerts listing takes no
 * parameter of the endpoint's, nor does a Grafana dashboard).
 */
const ROUTE_KINDS = [
  {
    kind: "answer",
    endpoints: Object.keys(DECLARED),
    url: (name: string, query: string) => `/api/endpoints/${name}?${query}`,
    presentation: PRESENTATION,
  },
  {
    kind: "watch",
    endpoints: ["functions.invocation-stats", "usage.api-counts"],
    url: (name: string, query: string) => `/api/endpoints/query/${name}/watch?${query}`,
    presentation: PRESENTATION,
  },
  {
    kind: "follow",
    endpoints: ["logs.all"],
    url: (name: string, query: string) => `/api/endpoints/${name}/follow?${query}`,
    refusedFirst: ["iso_timestamp_end", "cursor"],
    presentation: PRESENTATION,
  },
  {
    kind: "grafana",
    endpoints: Object.keys(DECLARED),
    url: (name: string) => `/api/endpoints/${name}/grafana`,
    endpointAlone: true,
  },
  {
    kind: "alerts listing",
    endpoints: Object.keys(DECLARED),
    url: (name: string) => `/api/alerts?endpoint=${name}`,
    endpointAlone: true,
  },
] as const;

/** A scope set a token may carry: the claims' schema refuses a fixed value the endpoint would. */
const grantable = scopesSchema(builtIn);
const grantableScopes = fc.array(
  scope.filter((candidate) => grantable.safeParse([candidate]).success),
  { minLength: 1, maxLength: 4 },
);

const routeRequest = fc
  .constantFrom(...ROUTE_KINDS)
  .chain((route) =>
    requestOf(
      route.endpoints,
      "refusedFirst" in route ? route.refusedFirst : [],
      "presentation" in route ? route.presentation : [],
    ).map(({ name, query }) => ({ route, name, query })),
  );

/** The query as the service parses its string: a value given once is text, not a list of one. */
const asParsed = (query: RawQuery): RawQuery =>
  Object.fromEntries(
    Object.entries(query).map(([param, value]) => [
      param,
      Array.isArray(value) && value.length === 1 ? value[0] : value,
    ]),
  );

const withoutPresentation = (query: RawQuery): RawQuery =>
  Object.fromEntries(Object.entries(query).filter(([param]) => !PRESENTATION.includes(param)));

const queryString = (query: RawQuery) =>
  new URLSearchParams(
    Object.entries(query).flatMap(([param, value]) =>
      (Array.isArray(value) ? value : [value]).map((one): [string, string] => [param, one]),
    ),
  ).toString();

describe("every route kind that names an endpoint", () => {
  it("lets in exactly what the rule grants, and refuses the rest with the rule's 403", async () => {
    const { app } = await startService({
      now: "2026-11-21T05:17:42.123456Z",
      tokens: createTokenVerifier({ secret: SECRET, maxLifetimeSeconds: 7200 }),
      cache: { now: () => 0 },
      config: { cache: { maxEntries: 100, maxBytes: 1_000_000 }, rateLimitPerMinute: 1_000_000 },
    });
    const key = new TextEncoder().encode(SECRET);
    const outcomes = Object.fromEntries(
      ROUTE_KINDS.map(({ kind }) => [kind, { allowed: 0, refused: 0 }]),
    );
    await fc.assert(
      fc.asyncProperty(grantableScopes, routeRequest, async (scopes, { route, name, ...asked }) => {
        const query = asParsed(asked.query);
        const endpoint = endpointNamed(name);
        const judged = "endpointAlone" in route ? {} : withoutPresentation(query);
        const token = await new SignJWT({ sub: "tenant", scopes })
          .setProtectedHeader({ alg: "HS256" })
          .setExpirationTime("1h")
          .sign(key);
        // An Accept no route gives: a request let in stops at its parameters or its format, before
        // any query or stream.
        const response = await app.inject({
          url: route.url(name, queryString(query)),
          headers: { authorization: `Bearer ${token}`, accept: "application/xml" },
        });
        const counted = outcomes[route.kind] as { allowed: number; refused: number };
        if (oracle(scopes, endpoint, judged)) {
          expect([400, 406], response.body).toContain(response.statusCode);
          counted.allowed++;
          return;
        }
        const decision = authorize({ name: "tenant", scopes }, endpoint, judged);
        const refusal = "refused" in decision ? decision.refused : undefined;
        expect(response.statusCode, response.body).toBe(403);
        expect(JSON.parse(response.body)).toEqual({
          error: { code: "forbidden", message: refusal?.message },
        });
        counted.refused++;
      }),
      { numRuns: 600 },
    );
    // Every kind took both branches, so neither held vacuously.
    for (const { kind } of ROUTE_KINDS) {
      expect(outcomes[kind]?.allowed, kind).toBeGreaterThan(10);
      expect(outcomes[kind]?.refused, kind).toBeGreaterThan(10);
    }
  }, 120_000);
});
