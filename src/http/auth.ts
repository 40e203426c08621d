// API keys from `X-API-KEY` or `Authorization: Bearer`, compared in constant time.
import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { HttpError } from "./errors.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** Which accepted key the request carried (its position in API_KEYS): per-key state without the key. */
    apiKeyIndex: number;
  }
}

// Digests have one length whatever the key's, so comparing them leaks neither content nor length.
const digest = (key: string) => createHash("sha256").update(key).digest();

function presentedKey(request: FastifyRequest): string | undefined {
  const header = request.headers["x-api-key"];
  if (typeof header === "string" && header !== "") return header;
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? "");
  return bearer?.[1];
}

/** Rejects every request of the enclosing scope without one of `keys` (401), before anything else. */
export const requireApiKey = fp(
  async (app: FastifyInstance, { keys }: { keys: readonly string[] }) => {
    const accepted = keys.map(digest);
    app.decorateRequest("apiKeyIndex", -1);
    app.addHook("onRequest", async (request) => {
      const key = presentedKey(request);
      const candidate = digest(key ?? "");
      // Every accepted key is compared, so timing does not tell which one (or whether any) matched.
      let match = -1;
      accepted.forEach((known, index) => {
        if (timingSafeEqual(known, candidate)) match = index;
      });
      if (key === undefined || match < 0) {
        throw new HttpError(
          401,
          "unauthorized",
          key === undefined
            ? "Missing API key: send it as X-API-KEY: <key> or Authorization: Bearer <key>."
            : "Invalid API key.",
        );
      }
      request.apiKeyIndex = match;
    });
  },
);
