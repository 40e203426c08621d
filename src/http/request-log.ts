// One log line per request: id, endpoint, status, duration, rows, engine job or query id and bytes,
// cache status.
// Headers are never logged, so keys cannot leak; the query string is logged by parameter name only.
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";

export interface QueryLog {
  /** The credential's name: never the key or token. */
  credential?: string;
  endpoint?: string;
  cache?: string;
  rows?: number;
  jobId?: string;
  queryId?: string;
  bytesProcessed?: number;
}

declare module "fastify" {
  interface FastifyRequest {
    queryLog: QueryLog;
  }
}

export const requestLog = fp(async (app: FastifyInstance) => {
  app.decorateRequest("queryLog", null as unknown as QueryLog);
  // Callback-style hooks: an async one costs a promise and a microtask turn per request.
  app.addHook("onRequest", (request, reply, done) => {
    request.queryLog = {};
    reply.header("x-request-id", request.id);
    done();
  });
  app.addHook("onResponse", (request, reply, done) => {
    const { url } = request;
    const queryAt = url.indexOf("?");
    request.log.info(
      {
        method: request.method,
        path: queryAt === -1 ? url : url.slice(0, queryAt),
        params: Object.keys((request.query as object | undefined) ?? {}),
        status: reply.statusCode,
        durationMs: Math.round(reply.elapsedTime * 100) / 100,
        ...request.queryLog,
      },
      "request",
    );
    done();
  });
});
