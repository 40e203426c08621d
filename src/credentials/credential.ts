// Who is asking: a name and the scopes it may use, however it was presented (an API key from
// API_KEYS or API_KEYS_FILE, or a signed access token). The scope rule is in scope-rule.ts.
import { z } from "zod";
import type { Catalog, EndpointDefinition } from "../endpoints/catalog.ts";
import { InvalidParamsError, parseParams } from "../endpoints/params.ts";

export interface Scope {
  /** An endpoint's name or UUID, or `*` for every endpoint. */
  endpoint: string;
  /** Parameters this scope pins: omitted, they take this value; given, they must equal it. */
  fixed_params: Readonly<Record<string, string>>;
}

export interface Credential {
  /** For logs, metrics and the rate limit; never the key or token itself. */
  name: string;
  scopes: readonly Scope[];
  /** Overrides RATE_LIMIT_PER_MINUTE for this credential. */
  rateLimitPerMinute?: number;
  /** Overrides CACHE_FORCED_REFRESH_PER_MINUTE for this credential. */
  forcedRefreshPerMinute?: number;
  /** Epoch ms after which a token is no longer valid: a follow stream it opened ends then. */
  expiresAt?: number;
}

/**
 * A keys-file or token name. API_KEYS' keys go by api-key-<n>: no other credential may take one
 * and so share its rate budget and its lines in the log.
 */
export const credentialName = (missing: string) =>
  z
    .string({ error: missing })
    .min(1, missing)
    .refine(
      (name) => !/^api-key-\d+$/.test(name),
      "names api-key-<n> belong to the keys of API_KEYS",
    );

export const FULL_ACCESS: readonly Scope[] = Object.freeze([{ endpoint: "*", fixed_params: {} }]);

/** The scopes' JSON form, shared by the keys file and token claims; checked against `catalog`. */
export const scopesSchema = (catalog: Catalog) =>
  z
    .array(
      z.strictObject({
        endpoint: z.string().min(1, "names an endpoint, its UUID or *"),
        fixed_params: z.record(z.string(), z.string()).default({}),
      }),
    )
    .min(1, "needs at least one scope")
    .superRefine((scopes, ctx) => {
      scopes.forEach((scope, index) => {
        const problem = scopeProblem(catalog, scope);
        if (problem) ctx.addIssue({ code: "custom", path: [index], message: problem });
      });
    });

/** Why a scope cannot be honoured as written: an unknown endpoint, or a fixed value it would refuse. */
function scopeProblem(catalog: Catalog, scope: Scope): string | undefined {
  const endpoints = scope.endpoint === "*" ? catalog.entries : [catalog.find(scope.endpoint)];
  const [named] = endpoints;
  if (!named) return `no endpoint is named or has the id "${scope.endpoint}"`;
  for (const [param, value] of Object.entries(scope.fixed_params)) {
    const takers = endpoints.filter((endpoint) => endpoint?.paramNames.has(param));
    if (takers.length === 0) {
      return `fixes "${param}", which ${scope.endpoint === "*" ? "no endpoint" : named.name} takes`;
    }
    for (const endpoint of takers as EndpointDefinition[]) {
      const refusal = refusalOf(endpoint, param, value) ?? pinProblem(endpoint, param, value);
      if (refusal) return `fixes "${param}" to a value ${endpoint.name} refuses: ${refusal}`;
    }
  }
  return undefined;
}

/**
 * A pinned regular expression that picks the project must confine the caller: matched anywhere,
 * `acme` also matches `acme-staging` and `.../acme.png`, and an alternation can add any other
 * tenant. A pattern that only narrows within a project (logs.all's search_regex) needs no anchor.
 */
function pinProblem(endpoint: EndpointDefinition, param: string, value: string) {
  if (param !== "project" || !endpoint.patternParams.has(param)) return undefined;
  return value.startsWith("^") && !value.includes("|")
    ? undefined
    : `a pinned pattern must start with ^ and hold no |, e.g. ^https://acme\\. (fix ${param} per endpoint when it means a project ref elsewhere)`;
}

/** What the endpoint's own validation says of `param=value` among otherwise valid parameters. */
function refusalOf(endpoint: EndpointDefinition, param: string, value: string): string | undefined {
  try {
    parseParams(endpoint.params, { ...endpoint.example, [param]: value });
    return undefined;
  } catch (error) {
    if (!(error instanceof InvalidParamsError)) throw error;
    return error.details.find((detail) => detail.param === param)?.message;
  }
}
