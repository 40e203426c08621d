import type { FastifyInstance } from "fastify";
import type { QueryEngine } from "../engines/engine.ts";
import { sendError } from "./errors.ts";
import { SPARED_FROM_SHEDDING } from "./load-shedding.ts";
import { HEALTH_SCHEMA, READY_SCHEMA } from "./openapi/service-schemas.ts";

const READY_TIMEOUT_MS = 5_000;
// /ready needs no key, and on BigQuery each check is a job: one check serves every probe for a while.
const READY_MEMO_MS = 5_000;

/**
 * Liveness (the process serves HTTP) and readiness (the engine answers a trivial query, and has
 * loaded every data file there was at startup); no key needed.
 */
export async function healthRoutes(app: FastifyInstance, { engine }: { engine: QueryEngine }) {
  let lastCheck: { at: number; done: Promise<void> } | undefined;
  const readiness = () => {
    if (!lastCheck || Date.now() - lastCheck.at >= READY_MEMO_MS) {
      lastCheck = { at: Date.now(), done: withTimeout(engine.ping(), READY_TIMEOUT_MS) };
    }
    return lastCheck.done;
  };

  app.get("/health", { config: SPARED_FROM_SHEDDING, schema: HEALTH_SCHEMA }, async () => ({
    status: "ok",
  }));

  app.get(
    "/ready",
    { config: SPARED_FROM_SHEDDING, schema: READY_SCHEMA },
    async (request, reply) => {
      if (engine.loadedThrough && engine.loadedThrough() === undefined) {
        return sendError(
          reply,
          "not_ready",
          `The ${engine.dialect} engine is still loading a LOCAL_DATA file that was there at startup.`,
        );
      }
      try {
        await readiness();
        return { status: "ready", engine: engine.dialect };
      } catch (error) {
        request.log.warn({ err: error }, "readiness check failed");
        return sendError(
          reply,
          "not_ready",
          `The ${engine.dialect} engine did not answer a trivial query.`,
        );
      }
    },
  );
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
