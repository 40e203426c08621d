// The kinds of route an endpoint has, in one table, and every path each entry of a catalog answers
// at, made from it, each declaring the schema its row makes of it. The routes register their generic paths from
// the table, a request finds its entry among the entry routes and is checked by the endpoint's
// validator, whose JSON Schema that entry declares, and the document is written from those same entry routes (openapi/entry-document.ts):
// a new kind is one row, and a URL shape is written here only. (The serving routes stay generic,
// `:nameOrId`, because Fastify takes no route once it listens and a reload replaces the catalog:
// the entry routes are made anew per catalog instead.)
import type { FastifyInstance } from "fastify";
import type { CachedEndpoint, EndpointDefinition } from "../endpoints/catalog.ts";
import { NO_PARAMS } from "../endpoints/params.ts";
import { answerHandler } from "./answer-route.ts";
import { followHandler } from "./follow-route.ts";
import type { Format, MediaFormat } from "./formats/format.ts";
import { json } from "./formats/json.ts";
import { ANSWER_FORMATS, negotiation } from "./formats/negotiate.ts";
import { grafanaHandler } from "./grafana-route.ts";
import {
  answerSchema,
  type DescribedEntry,
  followSchema,
  grafanaSchema,
  watchSchema,
} from "./openapi/entry-schemas.ts";
import {
  EVENT_STREAM,
  type FollowedEndpoint,
  type KindHandler,
  type KindParts,
  type RouteKind,
} from "./route-kind.ts";
import { watchHandler } from "./watch-route.ts";

/** GET /api/endpoints/<name>: the endpoint's answer, in JSON, NDJSON or CSV. */
const ANSWER: RouteKind<Format> = {
  path: "",
  negotiation: negotiation(ANSWER_FORMATS),
  pages: true,
};

/** GET …/<name>/follow: a followable endpoint's records as they arrive. */
const FOLLOW: RouteKind<MediaFormat, FollowedEndpoint> = {
  path: "/follow",
  has: (endpoint): endpoint is FollowedEndpoint => endpoint.paging?.follow === true,
  negotiation: negotiation([EVENT_STREAM, { contentType: "application/x-ndjson" }]),
};

/** GET …/<name>/watch: each new value a cached endpoint's answer takes. */
const WATCH: RouteKind<MediaFormat, CachedEndpoint> = {
  path: "/watch",
  has: (endpoint): endpoint is CachedEndpoint => endpoint.cache !== undefined,
  negotiation: negotiation([EVENT_STREAM]),
};

/** GET …/<name>/grafana: a Grafana dashboard of the endpoint, for the caller's credential. */
const GRAFANA: RouteKind<Format> = {
  path: "/grafana",
  negotiation: negotiation([json]),
  // None of the endpoint's: the scope judges the endpoint alone, and what it fixes is left out.
  params: NO_PARAMS,
};

/** A kind of route an endpoint may have. */
export interface KindRow {
  /** As its operation ids and summaries name it. */
  readonly name: "query" | "follow" | "watch" | "grafana";
  readonly kind: RouteKind<MediaFormat>;
  /** The formats a suffix on the endpoint's name asks for, at its name path. */
  readonly suffixes: readonly Format[];
  /** The schema an entry route of this kind declares: its query string, headers and answers. */
  readonly schema: (entry: DescribedEntry) => EntrySchema;
  /** What answers its requests. */
  readonly handler: KindHandler;
}

/** A route's schema as Fastify and @fastify/swagger take it, with its operation's names. */
export type EntrySchema = Record<string, unknown> & {
  tags: string[];
  operationId: string;
  querystring: Record<string, unknown>;
};

export const ROUTE_KINDS = {
  /** GET …/<name>: the endpoint's answer; `.json`, `.ndjson`, `.csv` after the name pick its format. */
  query: {
    name: "query",
    kind: ANSWER,
    suffixes: ANSWER_FORMATS,
    schema: answerSchema,
    handler: answerHandler(ANSWER),
  },
  /** GET …/<name>/follow: a followable endpoint's records as they arrive. */
  follow: {
    name: "follow",
    kind: FOLLOW,
    suffixes: [],
    schema: followSchema,
    handler: followHandler(FOLLOW),
  },
  /** GET …/<name>/watch: each new value a cached endpoint's answer takes. */
  watch: {
    name: "watch",
    kind: WATCH,
    suffixes: [],
    schema: watchSchema,
    handler: watchHandler(WATCH),
  },
  /** GET …/<name>/grafana: a dashboard of the endpoint for Grafana's Infinity datasource. */
  grafana: {
    name: "grafana",
    kind: GRAFANA,
    suffixes: [],
    schema: grafanaSchema,
    handler: grafanaHandler(GRAFANA),
  },
} as const satisfies Record<string, KindRow>;

const KIND_ROWS: readonly KindRow[] = Object.values(ROUTE_KINDS);

/** One way a path names an endpoint; each is a path of its own. */
export interface Naming {
  /** The path before the endpoint's name or id. */
  readonly under: string;
  readonly by: "name" | "id";
  /** After the endpoint's operation id, as the path's operations are called. */
  readonly operation: string;
  readonly summary: string;
}

const ENDPOINTS = "/api/endpoints";
const QUERY = `${ENDPOINTS}/query`;

/** By name, by UUID, and by name under /query (the path Logflare and Supabase Studio call). */
const NAMINGS: readonly Naming[] = [
  { under: ENDPOINTS, by: "name", operation: "", summary: "by name" },
  { under: QUERY, by: "id", operation: "_by_id", summary: "by id" },
  {
    under: QUERY,
    by: "name",
    operation: "_query_path",
    summary: "by name, at the path Logflare and Supabase Studio call",
  },
];

/** The Fastify paths that serve `row` for every endpoint, each prefix once. */
const genericPaths = (row: KindRow): string[] =>
  [...new Set(NAMINGS.map(({ under }) => under))].map(
    (under) => `${under}/:nameOrId${row.kind.path}`,
  );

/**
 * Each kind's routes, over `parts`: its generic paths, where a request finds its entry route. A
 * kind `parts` cannot serve (watch, without a cache) has none.
 */
export function registerKinds(app: FastifyInstance, parts: KindParts): void {
  for (const row of KIND_ROWS) {
    const handler = row.handler(parts);
    if (handler === undefined) continue;
    for (const path of genericPaths(row)) app.get(path, handler);
  }
}

/** Whether `app` serves `row` (registerKinds gave it its routes). */
export const serves = (app: FastifyInstance, row: KindRow): boolean =>
  app.hasRoute({ method: "GET", url: genericPaths(row)[0] as string });

/**
 * One path of one endpoint: the endpoint, its kind of route, how it is named, the suffix's format.
 * The schema it declares is `row.schema(route)`, made where the document is written: serving,
 * listing and naming paths need none of it.
 */
export interface EntryRoute extends DescribedEntry {
  readonly url: string;
  readonly row: KindRow;
  readonly naming: Naming;
}

/** Where a request of a kind finds its entry by the name or id in its path. */
type EntryIndex = Map<RouteKind<MediaFormat>, Map<string, EntryRoute>>;

const made = new WeakMap<
  readonly EndpointDefinition[],
  { routes: readonly EntryRoute[]; index: EntryIndex }
>();

/** Every path of every endpoint of `entries`, made once per catalog (a reload gives another). */
function madeFor(entries: readonly EndpointDefinition[]) {
  let found = made.get(entries);
  if (found === undefined) {
    const routes = entries.flatMap(routesOfEndpoint);
    found = { routes, index: indexOf(routes) };
    made.set(entries, found);
  }
  return found;
}

/** Every path of `endpoint`, its kinds in table order. */
export function routesOfEndpoint(endpoint: EndpointDefinition): EntryRoute[] {
  return KIND_ROWS.filter((row) => row.kind.has?.(endpoint) ?? true).flatMap((row) =>
    NAMINGS.flatMap((naming) => {
      const named = `${naming.under}/${endpoint[naming.by]}`;
      const suffixes = naming.by === "name" ? row.suffixes : [];
      const route = (url: string, format?: Format): EntryRoute => ({
        endpoint,
        naming,
        ...(format && { format }),
        url,
        row,
      });
      return [
        route(`${named}${row.kind.path}`),
        ...suffixes.map((format) => route(`${named}.${format.suffix}${row.kind.path}`, format)),
      ];
    }),
  );
}

/**
 * Where `endpoint` answers, as the listing and a 404 name it: each kind's path by name, and the
 * answer's by id and by name under /query too (the format suffixes and the other kinds' paths under
 * /query are there as well, but not listed).
 */
export const listedPaths = (endpoint: EndpointDefinition): string[] =>
  routesOfEndpoint(endpoint)
    .filter(
      ({ row, naming, format }) =>
        !format &&
        (row === ROUTE_KINDS.query || (naming.under === ENDPOINTS && naming.by === "name")),
    )
    .map(({ url }) => url);

/**
 * Each kind's entries by the segment a path names them with: a name, a name with a suffix, an id.
 * Either prefix takes any of them (as catalog.find does); a name wins over another's suffixed name.
 */
function indexOf(routes: readonly EntryRoute[]): EntryIndex {
  const index: EntryIndex = new Map();
  for (const route of [...routes].sort((a, b) => Number(!!a.format) - Number(!!b.format))) {
    let ofKind = index.get(route.row.kind);
    if (ofKind === undefined) {
      ofKind = new Map();
      index.set(route.row.kind, ofKind);
    }
    const segment = `${route.endpoint[route.naming.by]}${route.format ? `.${route.format.suffix}` : ""}`;
    if (!ofKind.has(segment)) ofKind.set(segment, route);
  }
  return index;
}

/** Every path of every endpoint of `entries`, in catalog order, each endpoint's kinds in table order. */
export const entryRoutes = (entries: readonly EndpointDefinition[]): readonly EntryRoute[] =>
  madeFor(entries).routes;

/**
 * The entry route of `kind` a path's `segment` names among `entries`; undefined for a segment no
 * path of that kind names as written (an id in capitals, an unknown name: the caller looks again).
 */
export const entryRouteOf = <E extends EndpointDefinition>(
  entries: readonly EndpointDefinition[],
  kind: RouteKind<MediaFormat, E>,
  segment: string,
): (EntryRoute & { endpoint: E }) | undefined =>
  // Only endpoints `kind` has are indexed under it.
  madeFor(entries).index.get(kind)?.get(segment) as (EntryRoute & { endpoint: E }) | undefined;
