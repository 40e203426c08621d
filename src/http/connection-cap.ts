// At most `maxConnections` open connections: past it Node closes a new one at once (not left
// hanging in the accept queue), and each refusal is counted, the first of a burst logged. The cap
// stays below the process's file-descriptor limit, so the engine and its files keep descriptors.
import { readFileSync } from "node:fs";
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import { BurstWarning } from "../burst-warning.ts";

// Descriptors left for everything but client connections: DuckDB's files, BigQuery's sockets, logs.
const DESCRIPTOR_MARGIN = 128;
// A refusal after this long without one starts a new burst, which gets its own log line.
const BURST_GAP_MS = 10_000;

export interface ConnectionStats {
  max: number;
  refused: number;
  open(): Promise<number>;
}

declare module "fastify" {
  interface FastifyInstance {
    connections: ConnectionStats;
  }
}

/** The soft limit on open files, where the system tells it (Linux); undefined elsewhere. */
function descriptorLimit(): number | undefined {
  try {
    const line = /^Max open files\s+(\d+)/m.exec(readFileSync("/proc/self/limits", "utf8"));
    return line ? Number(line[1]) : undefined;
  } catch {
    return undefined;
  }
}

export const connectionCap = fp(async (app: FastifyInstance, options: { max: number }) => {
  const limit = descriptorLimit();
  const max =
    limit === undefined
      ? options.max
      : Math.max(1, Math.min(options.max, limit - DESCRIPTOR_MARGIN));
  if (max < options.max) {
    app.log.warn(
      { requested: options.max, max, descriptorLimit: limit },
      "HTTP_MAX_CONNECTIONS lowered to fit the open-file limit",
    );
  }
  app.server.maxConnections = max;
  const refusals = new BurstWarning(BURST_GAP_MS);
  const stats: ConnectionStats = {
    max,
    refused: 0,
    open: () =>
      new Promise((resolve, reject) =>
        app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
      ),
  };
  app.server.on("drop", (connection) => {
    stats.refused++;
    const unsaid = refusals.occur();
    if (unsaid === undefined) return;
    app.log.warn(
      { max, remoteAddress: connection?.remoteAddress, refusedSinceLastLine: unsaid },
      "connection refused: HTTP_MAX_CONNECTIONS reached (further refusals in this burst are only counted)",
    );
  });
  app.decorate("connections", stats);
});
