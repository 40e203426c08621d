// The query routes (docs/api.md), and the catalog listing.
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { LRUCache } from "lru-cache";
import type { RefreshBudget } from "../cache/refresh-budget.ts";
import type { Demand } from "../cache/result-cache.ts";
import type { Credential } from "../credentials/credential.ts";
import { authorize, fixedFor, grantedParams, type RawQuery } from "../credentials/scope-rule.ts";
import type { Catalog, EndpointDefinition } from "../endpoints/catalog.ts";
import type { CursorCodec } from "../endpoints/cursor.ts";
import { NO_PARAMS, parseParams, withWindowStart } from "../endpoints/params.ts";
import type { Answer, RunEndpoint } from "../endpoints/runner.ts";
import type { SqlParams } from "../endpoints/sql-params.ts";
import { annotateRequestSpan } from "../telemetry/tracing.ts";
import { granted, HttpError, sendError } from "./errors.ts";
import type { Format } from "./formats/format.ts";
import { acceptedFormat, MEDIA_TYPES, splitFormatSuffix } from "./formats/negotiate.ts";
import { QUERY_SCHEMA } from "./openapi/endpoint-schemas.ts";
import { LISTING_SCHEMA } from "./openapi/service-schemas.ts";
import { sendAnswer } from "./reply.ts";

export async function endpointRoutes(
  app: FastifyInstance,
  {
    catalog,
    run,
    refreshBudget,
    cursors,
    now,
  }: {
    catalog: Catalog;
    run: RunEndpoint;
    refreshBudget: RefreshBudget;
    cursors: CursorCodec;
    /** Epoch µs: where a relative start (`since`) counts back from. */
    now: () => bigint;
  },
) {
  const validParams = paramsValidator(cursors);
  const descriptions = new Map(
    catalog.entries.map((endpoint) => [endpoint, describeEndpoint(endpoint)]),
  );
  // One listing per credential, built on its first request: credentials are few and long-lived.
  const listings = new WeakMap<Credential, string>();
  const listingFor = (credential: Credential) => {
    let listing = listings.get(credential);
    if (listing === undefined) {
      const callable = catalog.entries.flatMap((endpoint) => {
        const fixed = grantedParams(credential, endpoint);
        return fixed ? [{ ...descriptions.get(endpoint), fixed_params: fixed }] : [];
      });
      listing = JSON.stringify({ result: callable });
      listings.set(credential, listing);
    }
    return listing;
  };
  app.get("/api/endpoints", { schema: LISTING_SCHEMA }, async (request, reply) => {
    parseParams(NO_PARAMS, request.query);
    return reply.type("application/json; charset=utf-8").send(listingFor(request.credential));
  });

  // By name, by UUID, and by either under /query (the path Logflare and Supabase Studio call).
  for (const path of ["/api/endpoints/:nameOrId", "/api/endpoints/query/:nameOrId"]) {
    app.route({
      method: ["DELETE", "HEAD", "PATCH", "POST", "PUT"],
      url: path,
      handler: async (_request, reply) => {
        reply.header("allow", "GET");
        throw new HttpError("method_not_allowed", "The endpoints answer GET only.");
      },
    });
    // Not async: a cached hit is answered in the turn it arrived in (see runner.ts).
    app.get<{ Params: { nameOrId: string } }>(path, { schema: QUERY_SCHEMA }, (request, reply) => {
      const { endpoint, format: named } = target(catalog, request.params.nameOrId);
      request.queryLog.endpoint = endpoint.name;
      annotateRequestSpan(request, endpoint.name);
      const raw = request.query as RawQuery;
      const query = granted(authorize(request.credential, endpoint, raw));
      const validated = validParams(endpoint, query);
      // Only a paged endpoint's window takes `since`; the scope is looked at again only for a page
      // that carries the window `since` resolved to.
      const window = endpoint.paging?.window;
      const since = window?.since;
      const params =
        since !== undefined && since in validated
          ? withWindowStart(
              window,
              validated,
              now(),
              () => !(since in fixedFor(request.credential, endpoint, raw)),
            )
          : validated;
      // The request is otherwise valid; only now can its Accept be what fails it.
      const format = named ?? negotiated(request, reply);
      if (!format) {
        sendError(
          reply,
          "not_acceptable",
          `Accept names none of the formats served: ${MEDIA_TYPES.join(", ")}.`,
          { available: MEDIA_TYPES },
        );
        return;
      }
      const { credential } = request;
      const answer = run(
        endpoint,
        params,
        credential.name,
        format.renditionFor?.(endpoint.columnNames),
        demandOf(request.headers, refreshBudget, credential),
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
 * `parseParams` of the query the endpoint runs with, memoised per service (a cursor one service
 * takes, another with a different secret refuses). Failures are not kept. Dashboards repeat the same
 * few query strings, and validation is a pure function of them. A request's own query is the same
 * frozen object whenever its text repeats (query-string.ts), so it is found by identity and lives as
 * long as that object; a query with fixed params applied is made anew per request, so it is found
 * by its JSON, in an LRU bounded by count and by the keys' length.
 */
function paramsValidator(cursors: CursorCodec) {
  const validatedByQuery = new WeakMap<RawQuery, Map<EndpointDefinition, SqlParams>>();
  const validatedByJson = new LRUCache<string, SqlParams>({
    max: 1_000,
    maxSize: 4 * 1024 * 1024,
    sizeCalculation: (_params, key) => key.length,
  });
  return (endpoint: EndpointDefinition, query: RawQuery): SqlParams => {
    // Only a frozen object cannot change under its memoised value.
    if (!Object.isFrozen(query)) {
      const key = `${endpoint.id} ${JSON.stringify(query)}`;
      let params = validatedByJson.get(key);
      if (params === undefined) {
        params = Object.freeze(parseParams(endpoint.params, query, cursors));
        validatedByJson.set(key, params);
      }
      return params;
    }
    let byEndpoint = validatedByQuery.get(query);
    if (byEndpoint === undefined) {
      byEndpoint = new Map();
      validatedByQuery.set(query, byEndpoint);
    }
    let params = byEndpoint.get(endpoint);
    if (params === undefined) {
      params = Object.freeze(parseParams(endpoint.params, query, cursors));
      byEndpoint.set(endpoint, params);
    }
    return params;
  };
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

/** The format the request's Accept prefers, if any; the answer then varies with Accept. */
function negotiated(request: FastifyRequest, reply: FastifyReply): Format | undefined {
  const vary = reply.getHeader("vary");
  reply.header("vary", vary ? `${vary}, Accept` : "Accept");
  return acceptedFormat(request.headers.accept);
}

/** The endpoint a path names and the format its suffix asks for, if any: `usage.api-counts.csv`. */
function target(
  catalog: Catalog,
  nameOrId: string,
): { endpoint: EndpointDefinition; format?: Format } {
  const endpoint = catalog.find(nameOrId);
  if (endpoint) return { endpoint };
  const suffixed = splitFormatSuffix(nameOrId);
  if (suffixed) {
    const named = catalog.find(suffixed.name);
    // A suffix goes on a name only, not on a UUID.
    if (named?.name === suffixed.name) return { endpoint: named, format: suffixed.format };
  }
  throw new HttpError(
    "endpoint_not_found",
    `No endpoint is named or has the id "${nameOrId}"; GET /api/endpoints lists them.`,
  );
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
      ...(property.format && { format: property.format }),
    })),
    max_rows: endpoint.maxRows,
    cache: endpoint.cache
      ? { ttl_seconds: endpoint.cache.ttlSeconds, warming_seconds: endpoint.cache.warmingSeconds }
      : null,
    paths: endpoint.paths,
    example: `/api/endpoints/${endpoint.name}?${new URLSearchParams(endpoint.example)}`,
  };
}
