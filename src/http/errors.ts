// The error envelope (docs/api.md, "Errors"): {"error":{"code","message",...}}, and the mapping from every
// failure to it. Bodies never carry stacks or engine internals.
import { randomBytes } from "node:crypto";
import { maxHeaderSize, STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { NotCachedError } from "../cache/result-cache.ts";
import type { RawQuery, ScopeDecision } from "../credentials/scope-rule.ts";
import { InvalidParamsError } from "../endpoints/params.ts";
import { AdmissionError } from "../engines/admission.ts";
import { EngineError } from "../engines/engine.ts";

// This process's random tag and a count: unique across replicas, and a fraction of a UUID's cost.
const PROCESS_TAG = randomBytes(6).toString("base64url");
let requestCount = 0;
/** A request id for a request that brings none. */
export const newRequestId = (): string => `${PROCESS_TAG}-${(++requestCount).toString(36)}`;

/**
 * Every code the envelope carries, its status and when it is sent (the table of docs/api.md): what
 * the service sends (the status of an error is its code's) and the error responses of the routes'
 * schemas, from which /openapi.json is generated.
 */
export const ERROR_CODES = {
  invalid_params: [400, "a parameter is missing, unknown, repeated or malformed (see details)"],
  bad_request: [
    400,
    "the URL is not validly percent-encoded, the request not valid HTTP, or a follow stream's Last-Event-ID not one of this service's event ids",
  ],
  unauthorized: [401, "missing, unknown or expired key; bad, expired or not yet valid token"],
  forbidden: [403, "the credential's scopes do not allow this endpoint or parameter value"],
  endpoint_not_found: [404, "no endpoint has that name or id (checked after the credential)"],
  not_found: [404, "no such route"],
  method_not_allowed: [
    405,
    "a method other than GET, HEAD or a CORS preflight on a path the service serves (Allow: GET, HEAD)",
  ],
  not_acceptable: [406, "Accept names none of the media types served (see available)"],
  request_timeout: [408, "the request did not arrive in time"],
  payload_too_large: [413, "the request declares a body: no route takes one"],
  rate_limited: [429, "over the credential's budget or engine share, or too many bad credentials"],
  headers_too_large: [431, "the request headers are over 16 KiB"],
  internal_error: [500, "a bug; the message quotes the request id"],
  engine_error: [502, "the engine failed"],
  overloaded: [503, "the engine's queue is full, or the service is under pressure"],
  shutting_down: [503, "the service is closing: ask another replica"],
  engine_timeout: [504, "no answer from the engine in time, waiting included"],
  not_cached: [
    504,
    "`Cache-Control: only-if-cached` and nothing held for the request (always, on an endpoint without a cache)",
  ],
  not_ready: [
    503,
    "/ready only: the engine did not answer a trivial query, or has not loaded a LOCAL_DATA file there at startup",
  ],
} as const satisfies Record<string, readonly [status: number, when: string]>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** The status of a request whose client left before its answer (nginx's). */
export const CLIENT_LEFT = 499;

export class HttpError extends Error {
  readonly statusCode: number;
  readonly code: ErrorCode;
  /** Sent as Retry-After when given. */
  readonly retryAfterSeconds: number | undefined;
  /** Fields the envelope carries beside the code and message (a 406's `available`). */
  readonly extra: Readonly<Record<string, unknown>> | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    options: { retryAfterSeconds?: number; extra?: Record<string, unknown> } = {},
  ) {
    super(message);
    this.name = "HttpError";
    this.statusCode = ERROR_CODES[code][0];
    this.code = code;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.extra = options.extra;
  }
}

/** The query string the scope rule granted; its refusal is thrown as a 403 in the envelope. */
export function granted(decision: ScopeDecision): RawQuery {
  if ("refused" in decision) {
    const { code, message } = decision.refused;
    throw new HttpError(code, message);
  }
  return decision.granted;
}

export const BADLY_ENCODED_URL = "The URL is not validly percent-encoded.";

/** The envelope of `code`, at the status the table gives it. */
export function sendError(
  reply: FastifyReply,
  code: ErrorCode,
  message: string,
  extra: Record<string, unknown> = {},
): FastifyReply {
  return sendEnvelope(reply, ERROR_CODES[code][0], code, message, extra);
}

function sendEnvelope(
  reply: FastifyReply,
  statusCode: number,
  code: ErrorCode,
  message: string,
  extra: Record<string, unknown> = {},
): FastifyReply {
  return reply
    .code(statusCode)
    .type("application/json; charset=utf-8")
    .send({ error: { code, message, ...extra } });
}

/** Fastify's own URL errors, which arise before routing and hooks (FastifyServerOptions.frameworkErrors). */
export function frameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  reply.header("x-request-id", request.id);
  return error.code === "FST_ERR_MAX_PARAM_LENGTH"
    ? sendError(
        reply,
        "endpoint_not_found",
        "No endpoint has a name or id that long; GET /api/endpoints lists them.",
      )
    : sendError(reply, "bad_request", BADLY_ENCODED_URL);
}

/**
 * Errors of Node's HTTP parser, before a request exists (FastifyServerOptions.clientErrorHandler,
 * called with the app as `this`): the same envelope and a request id, written to the socket, which
 * is then closed, and one log line.
 */
export function clientError(this: FastifyInstance, error: NodeJS.ErrnoException, socket: Socket) {
  if (error.code === "ECONNRESET" || socket.destroyed) return;
  const [code, message]: [ErrorCode, string] =
    error.code === "HPE_HEADER_OVERFLOW"
      ? ["headers_too_large", `The request headers exceed ${maxHeaderSize} bytes.`]
      : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? ["request_timeout", "The request was not received in time."]
        : ["bad_request", "The request is not valid HTTP/1.1."];
  const [status] = ERROR_CODES[code];
  const body = JSON.stringify({ error: { code, message } });
  const requestId = newRequestId();
  this.log.info(
    { reqId: requestId, status, parserError: error.code },
    "request refused by the HTTP parser",
  );
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\n` +
        `Connection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

/** Every error and unknown route of the app answered in the envelope. */
export const errorEnvelope = fp(async (app: FastifyInstance) => {
  app.setNotFoundHandler((request, reply) =>
    sendError(
      reply,
      "not_found",
      `No route ${request.method} ${request.url.split("?")[0]}; see GET /api/endpoints.`,
    ),
  );

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (request.raw.destroyed && request.signal.aborted && error === request.signal.reason) {
      // The client left before its answer, and its query was withdrawn: nobody reads an answer,
      // and it is no error of the service's. 499, as proxies record a client that closed its request.
      return reply.code(CLIENT_LEFT).send();
    }
    if (error instanceof InvalidParamsError) {
      return sendError(reply, "invalid_params", "Some query parameters are invalid; see details.", {
        details: error.details,
      });
    }
    if (error instanceof HttpError) {
      if (error.retryAfterSeconds !== undefined) {
        reply.header("retry-after", String(error.retryAfterSeconds));
      }
      return sendError(reply, error.code, error.message, error.extra);
    }
    if (error instanceof NotCachedError) {
      return sendError(
        reply,
        "not_cached",
        "Nothing is cached for this request (Cache-Control: only-if-cached); ask without it to compute the answer.",
      );
    }
    if (error instanceof EngineError) {
      request.queryLog.jobId = error.detail?.jobId;
      request.log.error(
        { code: error.code, ...error.detail },
        `engine query failed: ${error.message}`,
      );
      return sendError(reply, error.code, error.message);
    }
    if (error instanceof AdmissionError) {
      reply.header("retry-after", String(error.retryAfterSeconds));
      return sendError(reply, error.code, error.message);
    }
    if (error.code === "FST_UNDER_PRESSURE") {
      return sendError(reply, "overloaded", "The service is overloaded; retry shortly.");
    }
    if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
      // Fastify's own refusal keeps the status Fastify gave it.
      return sendEnvelope(reply, error.statusCode, "bad_request", error.message);
    }
    request.log.error({ err: error }, "unhandled error");
    return sendError(
      reply,
      "internal_error",
      `An internal error occurred; quote request id ${request.id} when reporting it.`,
    );
  });
});
