// The one way in for every route that names an endpoint — its answer (GET), a watch, a follow
// stream, its Grafana dashboard, the alerts listing — and for the listings (`list`): the endpoint the request names (404), what the credential's scopes
// grant (403), the parameters (400), then the format (406). In that order and with the same
// messages whatever the route, so a client learns one set of answers. The credential itself was
// checked before any route ran (auth.ts).
import type { FastifyReply, FastifyRequest } from "fastify";
import { LRUCache } from "lru-cache";
import { authorize, fixedFor, type RawQuery } from "../credentials/scope-rule.ts";
import type { Catalog, EndpointDefinition } from "../endpoints/catalog.ts";
import type { CursorCodec } from "../endpoints/cursor.ts";
import { NO_PARAMS, type ParamsSchema, parseParams, withWindowStart } from "../endpoints/params.ts";
import { resolveRange } from "../endpoints/time-range.ts";
import type { SqlParams } from "../engines/sql-params.ts";
import { annotateRequestSpan } from "../telemetry/tracing.ts";
import { granted, HttpError } from "./errors.ts";
import type { Format, MediaFormat } from "./formats/format.ts";
import { json } from "./formats/json.ts";
import { negotiation, splitFormatSuffix } from "./formats/negotiate.ts";
import { timeFormatOf, withoutTimeFormat } from "./formats/time-format.ts";
import type { EndpointRequests, RouteKind } from "./route-kind.ts";
import { entryRouteOf, listedPaths } from "./route-kinds.ts";

/** A listing (GET /api/endpoints): JSON, and no parameters. */
export const LISTING: RouteKind<Format> & { params: ParamsSchema } = {
  negotiation: negotiation([json]),
  params: NO_PARAMS,
};

export function endpointRequests({
  catalog,
  cursors,
  now,
  settledLagUs,
}: {
  /** Where a path's name or UUID is looked up. */
  catalog: Catalog;
  /** Opens the page cursors of this service. */
  cursors: CursorCodec;
  /** Epoch µs: where a relative start (`since`) counts back from, and a time range's default end. */
  now: () => bigint;
  /** How late records still arrive (µs): a time range that ended before now − it never changes. */
  settledLagUs: bigint;
}): EndpointRequests {
  const validParams = paramsValidator(cursors);
  return {
    // Not async, as nothing in it waits: a cached hit is answered in the turn it arrived in.
    enter(kind, request, reply, { nameOrId = pathName(request), narrow } = {}) {
      // The entry route its path names, found at once; else looked up again, to refuse or to
      // take an id in capitals.
      const route = entryRouteOf(catalog.entries, kind, nameOrId);
      const { endpoint, format: suffixed } = route ?? target(catalog, kind, nameOrId);
      // A route under the endpoint's path is a request of that endpoint, refused or not.
      if (kind.path !== undefined) {
        request.queryLog.endpoint = endpoint.name;
        annotateRequestSpan(request, endpoint.name);
      }
      // A kind that takes the endpoint's parameters takes `time_format` too, as a presentation
      // of the answer: neither the scope nor the endpoint's validator sees it.
      const { query: own, given } = kind.params
        ? { query: request.query as RawQuery, given: undefined }
        : withoutTimeFormat(request.query as RawQuery);
      const asked = narrow ? narrow(own, endpoint) : own;
      const { credential } = request;
      const query = granted(authorize(credential, endpoint, kind.params ? NOTHING : asked));
      const timeFormat = timeFormatOf(given);
      let params: SqlParams;
      if (kind.params) {
        params = parseParams(kind.params, own);
      } else {
        const validated = kind.pages
          ? validParams(endpoint, query)
          : parseParams(endpoint.params, query);
        // Only a paged endpoint's window takes `since`; the scope is looked at again only for a page
        // that carries the window `since` resolved to.
        const window = endpoint.paging?.window;
        const since = window?.since;
        params =
          since !== undefined && since in validated
            ? withWindowStart(
                window,
                validated,
                now(),
                () => !(since in fixedFor(credential, endpoint, asked)),
              )
            : validated;
        // A time range is resolved per request: its end defaults to now, and its buckets align.
        // Without one (a dashboard's span, a cached hit's usual path) nothing is read or made.
        if (endpoint.range && params.from != null) {
          const at = now();
          params = resolveRange(endpoint.range, params, at, at - settledLagUs);
        }
      }
      // The request is otherwise valid; only now can its format be what fails it.
      const format = formatOf(kind, suffixed, request, reply);
      return { endpoint, query, params, format, ...(timeFormat && { timeFormat }) };
    },
    list(kind, request, reply) {
      parseParams(kind.params, request.query);
      return formatOf(kind, undefined, request, reply);
    },
  };
}

const NOTHING: RawQuery = Object.freeze({});

const pathName = (request: FastifyRequest) => (request.params as { nameOrId: string }).nameOrId;

/** The endpoint a path names and the format its suffix asks for, if any: `usage.api-counts.csv`. */
function target<E extends EndpointDefinition>(
  catalog: Catalog,
  kind: RouteKind<MediaFormat, E>,
  nameOrId: string,
): { endpoint: E; format: Format | undefined } {
  const named = catalog.find(nameOrId);
  const found = named ? { endpoint: named, format: undefined } : suffixedName(catalog, nameOrId);
  if (!found) {
    throw new HttpError(
      "endpoint_not_found",
      `No endpoint is named or has the id "${nameOrId}"; GET /api/endpoints lists them.`,
    );
  }
  const { endpoint, format } = found;
  if (kind.has && !kind.has(endpoint)) {
    throw new HttpError(
      "endpoint_not_found",
      `${endpoint.name} has no ${kind.path} path; its paths are ${listedPaths(endpoint).join(", ")}.`,
    );
  }
  return { endpoint: endpoint as E, format };
}

/** `usage.api-counts.csv`: the endpoint and the format; a suffix goes on a name only, not on a UUID. */
function suffixedName(
  catalog: Catalog,
  path: string,
): { endpoint: EndpointDefinition; format: Format } | undefined {
  const suffixed = splitFormatSuffix(path);
  if (!suffixed) return undefined;
  const endpoint = catalog.find(suffixed.name);
  return endpoint?.name === suffixed.name ? { endpoint, format: suffixed.format } : undefined;
}

/** The suffix's format, else the one Accept prefers (the answer then varies with Accept); else 406. */
function formatOf<F extends MediaFormat>(
  kind: RouteKind<F, EndpointDefinition>,
  suffixed: Format | undefined,
  request: FastifyRequest,
  reply: FastifyReply,
): F {
  const { formats, available } = kind.negotiation;
  if (suffixed) {
    const format = formats.find((candidate) => candidate === suffixed);
    if (format) return format;
    throw new HttpError(
      "not_acceptable",
      `The suffix .${suffixed.suffix} names a format this path does not give; available lists those it does.`,
      { extra: { available } },
    );
  }
  const vary = reply.getHeader("vary");
  reply.header("vary", vary ? `${vary}, Accept` : "Accept");
  const format = kind.negotiation.accepted(request.headers.accept);
  if (format) return format;
  throw new HttpError(
    "not_acceptable",
    "Accept names none of the formats this path gives; available lists them.",
    { extra: { available } },
  );
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
