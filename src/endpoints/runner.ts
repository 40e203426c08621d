// Runs an endpoint: through the result cache when its policy says so, else straight on the engine.
import { cacheEntryId, cacheKey } from "../cache/cache-key.ts";
import type { Payload, Rendition } from "../cache/payload.ts";
import {
  type CacheAnswer,
  type CachePolicy,
  type Demand,
  NotCachedError,
  type ResultCache,
  type ValueListener,
} from "../cache/result-cache.ts";
import {
  type QueryEngine,
  type QueryRequest,
  type QueryResult,
  ResultGoneError,
} from "../engines/engine.ts";
import type { SqlParams } from "../engines/sql-params.ts";
import { inSpan, isTracing } from "../telemetry/tracing.ts";
import type { CachedEndpoint, EndpointDefinition, PagingContract } from "./catalog.ts";
import { type CursorCodec, KEPT_PAGE_PARAM, keptPageOf } from "./cursor.ts";
import { RANGE_SETTLED } from "./time-range.ts";

/** What the engine did for this request, for the request log; absent when the cache answered. */
export interface Execution {
  rows: number;
  jobId?: string;
  queryId?: string;
  bytesProcessed?: number;
  /** How long the engine took, waiting for a slot included. */
  engineMs: number;
}

export interface Answer {
  payload: Payload;
  cache?: Omit<CacheAnswer, "payload"> & { ttlSeconds: number };
  execution?: Execution;
  /** A paged endpoint's full page: the cursor of its next page. */
  nextCursor?: string;
}

/**
 * Runs an endpoint for `credential` (a name: the admission gate's fair share and the log), answering
 * in `rendition` when given, else as `serialize` makes it. `callerLeft` gives a signal that aborts
 * when the caller stops waiting, asked for only when the answer waits for the engine: its query
 * then leaves the line or is stopped, unless others wait for the same one.
 */
export type RunEndpoint = (
  endpoint: EndpointDefinition,
  params: SqlParams,
  credential?: string,
  rendition?: Rendition,
  demand?: Demand,
  callerLeft?: () => AbortSignal,
) => Answer | Promise<Answer>;

/**
 * Tells `listener` of each value the cache stores for a cached endpoint's parameters (and of the
 * one held now, when `tellHeld`), until the returned function is called; it never queries beyond
 * the key's warming, and a first load when nothing is held.
 */
export type WatchEndpoint = (
  endpoint: CachedEndpoint,
  params: SqlParams,
  listener: ValueListener,
  tellHeld?: boolean,
) => () => void;

/** The start of a paged endpoint's window as this page bound it (a `since` resolved included). */
function windowStartOf(endpoint: EndpointDefinition, bound: SqlParams): string | undefined {
  const start = endpoint.paging && bound[endpoint.paging.window.start];
  return typeof start === "string" ? start : undefined;
}

export function createRunner(deps: {
  engine: QueryEngine;
  cache?: ResultCache;
  /** The body and headers a result is cached as, and sent as unless a rendition is asked for. */
  serialize: (result: QueryResult) => Payload;
  /** Where background refreshes report their engine work; a request's is in its own log line. */
  log?: { info(fields: object, message: string): void };
  /** Makes a full page's next cursor. */
  cursors: CursorCodec;
}): { run: RunEndpoint; watch: WatchEndpoint } {
  const { engine, cache, serialize, log, cursors } = deps;
  const sqlOf = (endpoint: EndpointDefinition) => {
    const sql = endpoint.sql[engine.dialect];
    if (!sql) throw new Error(`${endpoint.name} has no SQL for ${engine.dialect}`);
    return sql;
  };

  async function query(
    endpoint: EndpointDefinition,
    params: SqlParams,
    cause: Pick<QueryRequest, "trigger" | "credential" | "signal">,
  ): Promise<[Payload, Execution, QueryResult]> {
    return measured(() =>
      engine.run({
        endpoint: endpoint.name,
        sql: sqlOf(endpoint).query,
        window: endpoint.window,
        params,
        maxRows: endpoint.maxRows,
        ...cause,
      }),
    );
  }

  /** The engine's answer to `work`, serialized, and what it did. */
  async function measured(
    work: () => Promise<QueryResult>,
  ): Promise<[Payload, Execution, QueryResult]> {
    const started = performance.now();
    const result = await work();
    const { jobId, queryId, bytesProcessed } = result;
    return [
      serialize(result),
      {
        rows: result.rows.length,
        jobId,
        queryId,
        bytesProcessed,
        engineMs: Math.round((performance.now() - started) * 10) / 10,
      },
      result,
    ];
  }

  /**
   * A later page of a walk, on an engine that keeps a query's result (BigQuery): read where the
   * cursor says it waits, which runs no query; else (the first later page, a result gone, a cursor
   * of another walk or deployment) one query for the whole rest of the walk from the cursor's
   * position, whose first page answers and whose rest is kept for the pages after.
   */
  async function walkOn(
    endpoint: EndpointDefinition & { paging: PagingContract },
    params: SqlParams,
    keptText: string | null | undefined,
    cause: Pick<QueryRequest, "trigger" | "credential" | "signal">,
  ): Promise<{ found: [Payload, Execution, QueryResult]; walk: string }> {
    const walk = cursors.walkOf(params);
    const kept = keptText ? keptPageOf(keptText) : undefined;
    const request = {
      endpoint: endpoint.name,
      window: endpoint.window,
      maxRows: endpoint.paging.pageSize,
      ...cause,
    };
    // A walk's page is whole, not cut at the row cap: the rows after it are the next page's.
    const whole = async (work: Promise<QueryResult>) => ({ ...(await work), truncated: false });
    const { readPage } = engine;
    if (kept?.walk === walk && readPage) {
      try {
        // A read of a kept result runs no query: it bills no bytes.
        const read = () => whole(readPage.call(engine, kept.place, { ...request, walk: params }));
        return {
          found: await measured(async () => ({ bytesProcessed: 0, ...(await read()) })),
          walk,
        };
      } catch (error) {
        if (!(error instanceof ResultGoneError)) throw error;
      }
    }
    const sql = sqlOf(endpoint).rest as string;
    const rest = () => whole(engine.run({ ...request, sql, params, keepResult: true }));
    return { found: await measured(rest), walk };
  }

  // Made once per entry, not on every hit; a reload's new entries get theirs on their first lookup.
  const lookupSpans = new WeakMap<EndpointDefinition, SpanOptions>();
  const lookupSpan = (endpoint: EndpointDefinition): SpanOptions => {
    let span = lookupSpans.get(endpoint);
    if (span === undefined) {
      span = { attributes: { "query_service.endpoint": endpoint.name } };
      lookupSpans.set(endpoint, span);
    }
    return span;
  };

  // Cache keys by parameters object: validated parameters are memoised per query string (and frozen),
  // so a dashboard's repeated request finds its key without sorting and encoding again.
  const keys = new WeakMap<SqlParams, { endpoint: EndpointDefinition; key: string }>();
  const keyOf = (endpoint: EndpointDefinition, params: SqlParams): string => {
    // Only a frozen object cannot change under its memoised key.
    if (!Object.isFrozen(params)) return cacheKey(endpoint, params);
    const known = keys.get(params);
    if (known?.endpoint === endpoint) return known.key;
    const key = cacheKey(endpoint, params);
    keys.set(params, { endpoint, key });
    return key;
  };

  async function uncached(
    endpoint: EndpointDefinition,
    params: SqlParams,
    credential?: string,
    rendition?: Rendition,
    demand?: Demand,
    callerLeft?: () => AbortSignal,
  ): Promise<Answer> {
    if (demand?.onlyIfCached) throw new NotCachedError("this endpoint's answers are never held");
    const { [KEPT_PAGE_PARAM]: keptText, ...bound } = params;
    const cause = { trigger: "request", credential, signal: callerLeft?.() } as const;
    const { paging } = endpoint;
    const walking =
      paging !== undefined &&
      bound.cursor_timestamp != null &&
      engine.readPage !== undefined &&
      sqlOf(endpoint).rest !== undefined;
    const { found, walk } = walking
      ? await walkOn({ ...endpoint, paging }, bound, keptText, cause)
      : { found: await query(endpoint, bound, cause), walk: undefined };
    const [payload, execution, { rows, rest }] = found;
    const last = rows.at(-1);
    // The window's start rides along, so that a `since` resolved for this page holds for the next.
    // A walk's kept result says whether more follow; a keyset page links on when it is full.
    const more =
      walk === undefined ? rows.length === endpoint.paging?.pageSize : rest !== undefined;
    const kept = walk !== undefined && rest ? { walk, place: rest } : undefined;
    return {
      payload: rendition ? rendition.render(payload) : payload,
      execution,
      ...(last &&
        more && {
          nextCursor: cursors.after(last, windowStartOf(endpoint, bound), kept),
        }),
    };
  }

  async function looked(
    cache: ResultCache,
    endpoint: CachedEndpoint,
    params: SqlParams,
    key: string,
    credential?: string,
    rendition?: Rendition,
    demand?: Demand,
    callerLeft?: () => AbortSignal,
  ): Promise<Answer> {
    const policy = policyOf(endpoint, params);
    let execution: Execution | undefined;
    let answered = false;
    const refresh = refreshLoader(endpoint, params, key);
    // The signal is the load's, which the cache aborts once every request waiting for it left.
    const load = async (signal?: AbortSignal) => {
      // Once this request is answered, a later call of this loader is the cache's warming.
      if (answered) return refresh();
      const cause = { trigger: "request", credential, signal } as const;
      const [loaded, executed] = await query(endpoint, params, cause);
      execution = executed;
      return loaded;
    };
    const found = await inSpan(
      "cache lookup",
      lookupSpan(endpoint),
      () => cache.get(key, policy, load, rendition, demand, callerLeft?.()),
      describeLookup,
    );
    answered = true;
    return answerOf(found, policy, execution);
  }

  /** Loads the key as the cache's own work, nobody's request, and logs what the engine did. */
  function refreshLoader(endpoint: EndpointDefinition, params: SqlParams, key: string) {
    return async () => {
      const [loaded, executed] = await query(endpoint, params, { trigger: "warming" });
      log?.info(
        { endpoint: endpoint.name, entry: cacheEntryId(key), ...executed },
        "cache refresh",
      );
      return loaded;
    };
  }

  const watch: WatchEndpoint = (endpoint, params, listener, tellHeld) => {
    if (!cache) throw new Error("watching needs the result cache");
    const key = keyOf(endpoint, params);
    const load = refreshLoader(endpoint, params, key);
    return cache.watch(key, policyOf(endpoint, params), load, listener, tellHeld);
  };

  const run: RunEndpoint = (endpoint, params, credential, rendition, demand, callerLeft) => {
    if (!endpoint.cache || !cache) {
      return uncached(endpoint, params, credential, rendition, demand, callerLeft);
    }
    const key = keyOf(endpoint, params);
    // A fresh value asked for plainly is answered in this turn: a dashboard's hit waits on no
    // promise. A traced request takes the lookup, which records its span.
    const fresh = demand || isTracing() ? undefined : cache.fresh(key, rendition);
    if (fresh) return answerOf(fresh, policyOf(endpoint as CachedEndpoint, params));
    return looked(
      cache,
      endpoint as CachedEndpoint,
      params,
      key,
      credential,
      rendition,
      demand,
      callerLeft,
    );
  };
  return { run, watch };
}

/** A time range that ended before the settled horizon never changes: kept a day, never warmed. */
const SETTLED: CachePolicy = { ttlSeconds: 86_400, warmingSeconds: 0 };

/** How long `params`' value is kept, and how often it is warmed while in use. */
const policyOf = (endpoint: CachedEndpoint, params: SqlParams): CachePolicy =>
  params[RANGE_SETTLED] ? SETTLED : endpoint.cache;

function answerOf(found: CacheAnswer, policy: CachePolicy, execution?: Execution): Answer {
  // A spread of the whole answer, payload too: excluding one key copies property by property.
  return { payload: found.payload, cache: { ...found, ttlSeconds: policy.ttlSeconds }, execution };
}

type SpanOptions = Parameters<typeof inSpan>[1];
const describeLookup = (found: CacheAnswer) => ({ "query_service.cache": found.status });
