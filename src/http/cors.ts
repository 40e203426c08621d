import cors from "@fastify/cors";
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";

/** Dashboards in browsers may call from any origin: keys travel in headers, never in cookies. */
export const openCors = fp(async (app: FastifyInstance) => {
  await app.register(cors, {
    origin: "*",
    // An OPTIONS without preflight headers gets the same 204; strict, the plugin answers it with a
    // plain-text 400 outside the error envelope.
    strictPreflight: false,
    // What the service serves: HEAD is not routed (a HEAD of logs.all would run its query for nothing).
    methods: ["GET"],
    allowedHeaders: ["X-API-KEY", "Authorization", "Content-Type", "If-None-Match", "X-Request-Id"],
    // Joined once here: given a list, the plugin joins it on every request.
    exposedHeaders: [
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
    ].join(", "),
  });
});
