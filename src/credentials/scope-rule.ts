// The scope rule, in this one place (docs/keys.md, "Scopes"). A request to endpoint E is
// allowed when some scope names E (by name or UUID) or `*`, and for each fixed param of that scope
// the request either omits it (the fixed value is then used) or gives exactly that value. The first
// scope, in the credential's order, that allows the request supplies the values. Applied before
// validation and before the cache key, so the engine and the cache only ever see in-scope values.
// The rule answers with a decision, not an error: the HTTP layer maps a refusal to its 403, and the
// alerts read it as "may not call".
import type { EndpointDefinition } from "../endpoints/catalog.ts";
import type { Credential, Scope } from "./credential.ts";

export type RawQuery = Readonly<Record<string, unknown>>;

/** Why the scopes refuse a request; `param` is the fixed param it gave another value for, if that is why. */
export interface ScopeRefusal {
  readonly code: "forbidden";
  readonly message: string;
  readonly param?: string;
}

/** The query string the endpoint is run with, or why the credential may not run it. */
export type ScopeDecision = { readonly granted: RawQuery } | { readonly refused: ScopeRefusal };

/** The caller's query string with the fixed params filled in, or a refusal. */
export function authorize(
  credential: Credential,
  endpoint: EndpointDefinition,
  query: RawQuery,
): ScopeDecision {
  const found = allowing(credential, endpoint, query);
  // A scope that fixes nothing (full access, the common case) passes the query through as it is.
  if ("fixed" in found) {
    return { granted: isEmpty(found.fixed) ? query : { ...query, ...found.fixed } };
  }
  const { conflict } = found;
  return {
    refused:
      conflict === undefined
        ? { code: "forbidden", message: `This credential may not call ${endpoint.name}.` }
        : {
            code: "forbidden",
            message: `This credential may call ${endpoint.name} only with its fixed ${conflict}: omit ${conflict} or send the value GET /api/endpoints lists.`,
            param: conflict,
          },
  };
}

/** The params the scope that allows this request fixes: none when no scope allows it. */
export function fixedFor(
  credential: Credential,
  endpoint: EndpointDefinition,
  query: RawQuery,
): Readonly<Record<string, string>> {
  const found = allowing(credential, endpoint, query);
  return "fixed" in found ? found.fixed : NOTHING_FIXED.fixed;
}

const NOTHING_FIXED = Object.freeze({ fixed: Object.freeze({}) });

/** The fixed params of the first scope that allows the request, or the first param that conflicts. */
function allowing(
  credential: Credential,
  endpoint: EndpointDefinition,
  query: RawQuery,
): { fixed: Readonly<Record<string, string>> } | { conflict: string | undefined } {
  let conflict: string | undefined;
  for (const scope of credential.scopes) {
    if (!names(scope, endpoint)) continue;
    if (isEmpty(scope.fixed_params)) return NOTHING_FIXED;
    const fixed = fixedParams(scope, endpoint);
    const differing = Object.keys(fixed).find(
      (param) => query[param] !== undefined && query[param] !== fixed[param],
    );
    if (differing === undefined) return { fixed };
    conflict ??= differing;
  }
  return { conflict };
}

/** The fixed params an omitted parameter would take, when the credential may call the endpoint. */
export function grantedParams(
  credential: Credential,
  endpoint: EndpointDefinition,
): Readonly<Record<string, string>> | undefined {
  const scope = credential.scopes.find((candidate) => names(candidate, endpoint));
  return scope && fixedParams(scope, endpoint);
}

/** The endpoints of `entries` the credential may call, each with the params its scope fixes. */
export function callableBy<E extends EndpointDefinition>(
  credential: Credential,
  entries: readonly E[],
): { endpoint: E; fixed: Readonly<Record<string, string>> }[] {
  return entries.flatMap((endpoint) => {
    const fixed = grantedParams(credential, endpoint);
    return fixed ? [{ endpoint, fixed }] : [];
  });
}

/** Whether the credential may see what concerns every endpoint and tenant, such as /metrics. */
export function hasFullAccess(credential: Credential): boolean {
  return credential.scopes.some(
    (scope) => scope.endpoint === "*" && Object.keys(scope.fixed_params).length === 0,
  );
}

function names(scope: Scope, endpoint: EndpointDefinition): boolean {
  return (
    scope.endpoint === "*" ||
    scope.endpoint === endpoint.name ||
    scope.endpoint.toLowerCase() === endpoint.id
  );
}

function isEmpty(record: Readonly<Record<string, string>>): boolean {
  for (const _ in record) return false;
  return true;
}

/** A `*` scope's fixed params apply to the endpoints that take them. */
function fixedParams(scope: Scope, endpoint: EndpointDefinition): Record<string, string> {
  return Object.fromEntries(
    Object.entries(scope.fixed_params).filter(([param]) => endpoint.paramNames.has(param)),
  );
}
