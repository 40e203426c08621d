// Requests this service can take: no route takes a body, so one that declares a body is refused at
// once and its connection closed before the body is read (a GET with 50 MB would otherwise be
// drained to the end); and exactly one Host header (RFC 9112 §3.2), which Node would merge silently.
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import { sendError } from "./errors.ts";

export const requestShape = fp(async (app: FastifyInstance) => {
  // Callback-style: an async hook costs a promise and a microtask turn per request. A refusal sends
  // its answer and then lets Fastify go on, which stops at a sent reply (as after an async hook).
  app.addHook("onRequest", (request, reply, done) => {
    const { headers, raw } = request;
    const declaresBody =
      headers["transfer-encoding"] !== undefined || Number(headers["content-length"] ?? 0) > 0;
    if (declaresBody) {
      reply.header("connection", "close");
      // A turn later: Node's parser first reads the rest of what arrived, so a body with bad
      // framing (chunking) gets the parser's 400, not this answer.
      setImmediate(() => {
        sendError(
          reply,
          "payload_too_large",
          "This service takes no request body; send parameters in the query string.",
        );
        done();
      });
      return;
    }
    let hosts = 0;
    for (let i = 0; i < raw.rawHeaders.length; i += 2) {
      const name = raw.rawHeaders[i] as string;
      if (name.length === 4 && name.toLowerCase() === "host") hosts++;
    }
    if (hosts > 1) {
      reply.header("connection", "close");
      sendError(reply, "bad_request", "The request has more than one Host header.");
    }
    done();
  });
});
