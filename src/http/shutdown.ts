// Closing answers everyone: from the moment the app closes, new requests get 503 shutting_down
// (and their connection closed), queued queries are refused at once, running ones may finish
// within the grace, and at its end are answered 503 too, so that close() resolves in time. A
// connection whose first request has not arrived (no byte, or part of a head) is closed at once:
// Node stops enforcing its timeouts once the server closes, and neither it nor Fastify counts such
// a connection as idle, so it would hold close() open for as long as its client keeps it. A request
// arriving is what marks a connection: a 'data' listener on the socket would move Node's reading of
// every request on it from its C++ parser to JS streams (15–30 % of a cached hit's req/s).
import type { Socket } from "node:net";
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import type { AdmittedEngine } from "../engines/admission.ts";
import { sendError } from "./errors.ts";

// Time left, before the grace ends, to write the last answers and close the engine.
const LAST_ANSWERS_MS = 1_000;

export const shutdown = fp(
  async (app: FastifyInstance, options: { engine: AdmittedEngine; graceMs: number }) => {
    let closing = false;
    const silent = new Set<Socket>();
    app.server.on("connection", (socket: Socket) => {
      if (closing) return void socket.destroy();
      silent.add(socket);
      socket.once("close", () => silent.delete(socket));
    });
    // Callback-style hooks: an async one costs a promise and a microtask turn per request.
    app.addHook("onRequest", (request, reply, done) => {
      silent.delete(request.raw.socket);
      if (closing) {
        reply.header("connection", "close");
        sendError(reply, "shutting_down", "The service is shutting down; retry shortly.");
      }
      done();
    });
    // A kept-alive connection answered after close began would hold close() until its idle timeout.
    app.addHook("onSend", (_request, reply, payload, done) => {
      if (closing) reply.header("connection", "close");
      done(null, payload);
    });
    app.addHook("preClose", async () => {
      closing = true;
      for (const socket of silent) socket.destroy();
      options.engine.drain();
      // Not cleared on close: requests still running then (app.inject's) must be answered too.
      setTimeout(
        () => options.engine.abortRunning(),
        Math.max(0, options.graceMs - LAST_ANSWERS_MS),
      ).unref();
    });
  },
);
