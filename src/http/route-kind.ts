// What a kind of route is, and what its handler is given: the types every kind shares, below the
// table of kinds (route-kinds.ts). The table names each kind's handler, and each handler's module
// needs only this, so neither imports the other.
import type { FastifyReply, FastifyRequest, RouteHandlerMethod } from "fastify";
import type { RefreshBudget } from "../cache/refresh-budget.ts";
import type { RawQuery } from "../credentials/scope-rule.ts";
import type { EndpointDefinition, PagingContract } from "../endpoints/catalog.ts";
import type { FollowHub } from "../endpoints/follow.ts";
import type { ParamsSchema } from "../endpoints/params.ts";
import type { RunEndpoint, WatchEndpoint } from "../endpoints/runner.ts";
import type { SqlParams } from "../engines/sql-params.ts";
import type { MediaFormat } from "./formats/format.ts";
import type { Negotiation } from "./formats/negotiate.ts";
import type { TimeFormat } from "./formats/time-format.ts";
import type { ReservePlace } from "./streams/stream-places.ts";

/** A kind of route: which endpoints have it, what it answers in, whose parameters it takes. */
export interface RouteKind<
  F extends MediaFormat,
  E extends EndpointDefinition = EndpointDefinition,
> {
  /** After the endpoint's path (`/watch`); absent for a route not under it (the alerts listing). */
  readonly path?: string;
  /** Whether an endpoint has this kind of route; absent when every endpoint does. */
  has?(endpoint: EndpointDefinition): endpoint is E;
  readonly negotiation: Negotiation<F>;
  /** The route's own parameters, where they are not the endpoint's: the scope then judges the endpoint alone. */
  readonly params?: ParamsSchema;
  /** Its answer comes in pages: a `cursor` is opened with the service's codec (streams take none). */
  readonly pages?: true;
}

export type FollowedEndpoint = EndpointDefinition & { paging: PagingContract };

/** Server-Sent Events: what a watch gives, and a follow stream by default. */
export const EVENT_STREAM: MediaFormat = { contentType: "text/event-stream" };

/** A request let in: the endpoint, the query string the scope granted, its parameters, its format. */
export interface Entered<F extends MediaFormat, E extends EndpointDefinition> {
  endpoint: E;
  /** The caller's query string with the scope's fixed params filled in. */
  query: RawQuery;
  params: SqlParams;
  format: F;
  /** How its instants are written (`time_format`); absent: as the spec writes them. */
  timeFormat?: TimeFormat;
}

/**
 * Takes a route kind's own parameters out of the query string before the scope sees it, refusing
 * those it will not take (InvalidParamsError): a follow stream's `after` and `until`.
 */
export type Narrow<E extends EndpointDefinition> = (query: RawQuery, endpoint: E) => RawQuery;

/** The one way in for every route that names an endpoint (endpoint-request.ts). */
export interface EndpointRequests {
  /**
   * The request let in through every step, or the error that refuses it (thrown). The endpoint is
   * the one its path names (`:nameOrId`), unless `nameOrId` is given.
   */
  enter<F extends MediaFormat, E extends EndpointDefinition>(
    kind: RouteKind<F, E>,
    request: FastifyRequest,
    reply: FastifyReply,
    options?: { nameOrId?: string; narrow?: Narrow<E> },
  ): Entered<F, E>;
  /** The format of a request to a route that names no endpoint (a listing), its parameters checked. */
  list<F extends MediaFormat>(
    kind: RouteKind<F> & { params: ParamsSchema },
    request: FastifyRequest,
    reply: FastifyReply,
  ): F;
}

/** Watches open and events they sent, for /metrics. */
export interface WatchStats {
  open: number;
  eventsSent: number;
}

/** What a kind's handler may take of the service and the app. */
export interface KindParts {
  requests: EndpointRequests;
  run: RunEndpoint;
  /** Absent without a cache: a service that caches nothing has nothing to watch. */
  watch?: WatchEndpoint;
  /** What a request may spend on recomputing a cached value (Cache-Control). */
  refreshBudget: RefreshBudget;
  hub: FollowHub;
  /** Where each stream takes its place (shared with every stream kind). */
  reserve: ReservePlace;
  /** Counted as watches open, close and send. */
  watchStats: WatchStats;
  /** The engine's QueryEngine.loadedThrough, when its data is loaded from files. */
  loadedThrough?: () => bigint | undefined;
}

/** A kind's handler over `parts`; undefined when they cannot serve it (watch, without a cache). */
export type KindHandler = (parts: KindParts) => RouteHandlerMethod | undefined;
