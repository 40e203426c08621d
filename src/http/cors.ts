import cors from "@fastify/cors";
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";

const EXPOSED_HEADERS = [
  "X-Cache",
  "Age",
  "ETag",
  "X-Result-Truncated",
  "X-Bytes-Processed",
  "Cache-Status",
  "Server-Timing",
  "Link",
  "X-Request-Id",
  "Retry-After",
  "RateLimit-Limit",
  "RateLimit-Remaining",
  "RateLimit-Reset",
].join(", ");

/** Dashboards in browsers may call from any origin: keys travel in headers, never in cookies. */
export const openCors = fp(async (app: FastifyInstance) => {
  // Every answer's two headers are the same, so they are set here rather than by @fastify/cors's
  // hook, which builds its options and Fastify's route options anew for each request: about 1.4 µs
  // of a cached hit's 21 µs in bench/cache.ts (docs/benchmarks.md, "Result cache").
  app.addHook("onRequest", (_request, reply, done) => {
    reply
      .header("access-control-allow-origin", "*")
      .header("access-control-expose-headers", EXPOSED_HEADERS);
    done();
  });
  // Preflights are the plugin's: its hook, in a scope of its own, runs on its OPTIONS route only.
  await app.register(async (preflights) => {
    await preflights.register(cors, {
      origin: "*",
      // An OPTIONS without preflight headers gets the same 204; strict, the plugin answers it with a
      // plain-text 400 outside the error envelope.
      strictPreflight: false,
      // What the service serves (http/methods.ts).
      methods: ["GET", "HEAD"],
      allowedHeaders: [
        "X-API-KEY",
        "Authorization",
        "Content-Type",
        "If-None-Match",
        "X-Request-Id",
      ],
    });
  });
});
