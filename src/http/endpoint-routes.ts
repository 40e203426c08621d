// The query routes (docs/api.md), and the catalog listing.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { RefreshBudget } from "../cache/refresh-budget.ts";
import type { Demand } from "../cache/result-cache.ts";
import type { Credential } from "../credentials/credential.ts";
import { grantedParams } from "../credentials/scope-rule.ts";
import type { Catalog, EndpointDefinition } from "../endpoints/catalog.ts";
import type { Answer, RunEndpoint } from "../endpoints/runner.ts";
import { type EndpointRequests, LISTING } from "./endpoint-request.ts";
import { LISTING_SCHEMA } from "./openapi/service-schemas.ts";
import { sendAnswer } from "./reply.ts";
import { genericPaths, listedPaths, ROUTE_KINDS } from "./route-kinds.ts";

export async function endpointRoutes(
  app: FastifyInstance,
  {
    catalog,
    run,
    refreshBudget,
    requests,
  }: {
    catalog: Catalog;
    run: RunEndpoint;
    refreshBudget: RefreshBudget;
    requests: EndpointRequests;
  },
) {
  // One listing per credential and catalog, built on its first request: credentials are few and
  // long-lived, and a reload replaces the catalog's entries whole.
  const listings = new WeakMap<readonly EndpointDefinition[], WeakMap<Credential, string>>();
  const listingFor = (credential: Credential) => {
    const { entries } = catalog;
    let ofCatalog = listings.get(entries);
    if (ofCatalog === undefined) {
      ofCatalog = new WeakMap();
      listings.set(entries, ofCatalog);
    }
    let listing = ofCatalog.get(credential);
    if (listing === undefined) {
      const callable = entries.flatMap((endpoint) => {
        const fixed = grantedParams(credential, endpoint);
        return fixed ? [{ ...describeEndpoint(endpoint), fixed_params: fixed }] : [];
      });
      listing = JSON.stringify({ result: callable });
      ofCatalog.set(credential, listing);
    }
    return listing;
  };
  app.get("/api/endpoints", { schema: LISTING_SCHEMA }, async (request, reply) => {
    const format = requests.list(LISTING, request, reply);
    return reply.type(format.contentType).send(listingFor(request.credential));
  });

  const { query } = ROUTE_KINDS;
  for (const path of genericPaths(query)) {
    // Not async: a cached hit is answered in the turn it arrived in (see runner.ts).
    app.get<{ Params: { nameOrId: string } }>(path, (request, reply) => {
      const { endpoint, params, format } = requests.enter(query.kind, request, reply);
      const { credential } = request;
      const answer = run(
        endpoint,
        params,
        credential.name,
        format.renditionFor?.(endpoint.columnNames),
        demandOf(request.headers, refreshBudget, credential),
        // Aborted when the client goes: a query nobody waits for leaves the engine's line.
        () => request.signal,
      );
      if (answer instanceof Promise) return answer.then((found) => respond(request, reply, found));
      respond(request, reply, answer);
    });
  }
}

function respond(request: FastifyRequest, reply: FastifyReply, answer: Answer): FastifyReply {
  request.queryLog.cache = answer.cache?.status;
  Object.assign(request.queryLog, answer.execution);
  if (answer.nextCursor) reply.header("link", nextLink(request.url, answer.nextCursor));
  return sendAnswer(request, reply, answer);
}

/**
 * What a request's Cache-Control asks of a cached answer (RFC 9111 §5.2.1): `no-cache` and
 * `max-age=<n>` a value at most that old (no-cache: recomputed now), `only-if-cached` no query.
 * A conditional request (If-None-Match) revalidates what the caller holds: the `no-cache` and
 * `max-age=0` that fetch and browsers add to it by themselves ask nothing more (docs/caching.md,
 * "Polling with an ETag"); a `max-age` of a second or more, which no client adds, still does.
 */
function demandOf(
  { "cache-control": header, "if-none-match": validator }: FastifyRequest["headers"],
  budget: RefreshBudget,
  credential: Credential,
): Demand | undefined {
  if (!header) return undefined;
  let maxAgeSeconds: number | undefined;
  let onlyIfCached = false;
  for (const directive of header.toLowerCase().split(",")) {
    const [name, value = ""] = directive.trim().split("=");
    const maxAge =
      name === "no-cache"
        ? 0
        : name === "max-age" && /^\d+$/.test(value)
          ? Number(value)
          : undefined;
    const addedByClient = maxAge === 0 && Boolean(validator);
    if (maxAge !== undefined && !addedByClient) {
      maxAgeSeconds = Math.min(maxAgeSeconds ?? maxAge, maxAge);
    }
    if (name === "only-if-cached") onlyIfCached = true;
  }
  // Directives that ask nothing of a held value (max-stale, a browser's own) leave a plain request.
  if (maxAgeSeconds === undefined && !onlyIfCached) return undefined;
  return {
    mayRecompute: () => budget.spend(credential.name, credential.forcedRefreshPerMinute),
    ...(maxAgeSeconds !== undefined && { maxAgeSeconds }),
    ...(onlyIfCached && { onlyIfCached }),
  };
}

/** RFC 8288's next link: the path the caller used, its parameters, and the next page's cursor. */
function nextLink(url: string, cursor: string): string {
  const queryAt = url.indexOf("?");
  const query = new URLSearchParams(queryAt === -1 ? "" : url.slice(queryAt + 1));
  query.set("cursor", cursor);
  return `<${queryAt === -1 ? url : url.slice(0, queryAt)}?${query}>; rel="next"`;
}

function describeEndpoint(endpoint: EndpointDefinition) {
  const schema = endpoint.paramsJsonSchema;
  return {
    name: endpoint.name,
    id: endpoint.id,
    description: endpoint.description,
    params: Object.entries(schema.properties).map(([name, property]) => ({
      name,
      type: "string",
      required: schema.required?.includes(name) ?? false,
      description: property.description,
      ...(property.enum && { allowed: property.enum }),
      ...(property.examples && { examples: property.examples }),
      ...(property.default !== undefined && { default: property.default }),
      ...(property.format && { format: property.format }),
    })),
    max_rows: endpoint.maxRows,
    cache: endpoint.cache
      ? { ttl_seconds: endpoint.cache.ttlSeconds, warming_seconds: endpoint.cache.warmingSeconds }
      : null,
    paths: listedPaths(endpoint),
    example: `/api/endpoints/${endpoint.name}?${new URLSearchParams(endpoint.example)}`,
    ...(endpoint.paging && {
      paging: {
        page_size: endpoint.paging.pageSize,
        order: endpoint.paging.order,
        window: endpoint.paging.window,
        follow: endpoint.paging.follow,
      },
    }),
  };
}
