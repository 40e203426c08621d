// One log line per request: id, endpoint, status, duration, rows, engine job or query id and bytes,
// cache status. A request whose client left before its answer was sent has no response to time:
// its line says so ("client left") with the status proxies record for it, 499.
// Headers are never logged, so keys cannot leak; the query string is logged by parameter name only.
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { type Logger, pino } from "pino";
import { deferredChild } from "./deferred-child-logger.ts";
import { CLIENT_LEFT } from "./errors.ts";

export interface QueryLog {
  /** The credential's name: never the key or token. */
  credential?: string;
  endpoint?: string;
  cache?: string;
  rows?: number;
  jobId?: string;
  queryId?: string;
  bytesProcessed?: number;
  engineMs?: number;
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
  const writeLine = requestLineWriter(app.log);
  if (!writeLine) return;
  app.setChildLoggerFactory(deferredChild);
  app.addHook("onResponse", (request, reply, done) => {
    writeLine(
      request,
      `"status":${reply.statusCode},"durationMs":${Math.round(reply.elapsedTime * 100) / 100}`,
      "request",
    );
    done();
  });
  // Fastify writes no response for a request whose client closed it first: no onResponse either.
  app.addHook("onRequestAbort", (request, done) => {
    writeLine(request, `"status":${CLIENT_LEFT}`, "client left");
    done();
  });
});

interface PinoParts {
  stream: { write(line: string): void };
  time: () => string;
  bindings: string;
}

/**
 * Writes a request's line in pino's format, to pino's stream, with pino's clock and bindings, when
 * info is enabled; undefined when the logger is not pino's (no logger: tests). `outcome` is the
 * line's status and duration fields, as JSON. The line is put together here rather than by
 * `logger.info`: in a micro-benchmark pino's generic serialiser took 1.2 µs a line and this 0.4
 * (docs/benchmarks.md, "Result cache").
 */
function requestLineWriter(
  logger: FastifyBaseLogger,
): ((request: FastifyRequest, outcome: string, message: string) => void) | undefined {
  const parts = logger as unknown as Record<symbol, unknown>;
  const stream = parts[pino.symbols.streamSym] as PinoParts["stream"] | undefined;
  if (!stream) return undefined;
  const time = parts[pino.symbols.timeSym] as PinoParts["time"];
  const bindings = parts[pino.symbols.chindingsSym] as string;
  const pinoLogger = logger as Logger;
  const info = pinoLogger.levels.values.info;
  return (request, outcome, message) => {
    if (!pinoLogger.isLevelEnabled("info")) return;
    const { url } = request;
    const queryAt = url.indexOf("?");
    let params = "";
    for (const name in (request.query as object | undefined) ?? {}) {
      params += params ? `,${jsonString(name)}` : jsonString(name);
    }
    let fields = "";
    const queryLog = request.queryLog as Record<string, string | number | undefined>;
    for (const key in queryLog) {
      const value = queryLog[key];
      if (value !== undefined) fields += `,"${key}":${jsonValue(value)}`;
    }
    stream.write(
      `{"level":${info}${time()}${bindings},"reqId":${jsonString(request.id)},"method":${jsonString(request.method)},"path":${jsonString(queryAt === -1 ? url : url.slice(0, queryAt))},"params":[${params}],${outcome}${fields},"msg":"${message}"}\n`,
    );
  };
}

// Printable ASCII but `"` and `\`: what JSON takes between quotes as it is.
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
function jsonString(value: string): string {
  return PLAIN.test(value) ? `"${value}"` : JSON.stringify(value);
}
function jsonValue(value: string | number): string {
  if (typeof value === "string") return jsonString(value);
  return Number.isFinite(value) ? `${value}` : "null";
}
