// API keys from `X-API-KEY` or `Authorization: Bearer`, compared in constant time.
import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";
import { HttpError } from "./errors.ts";

// Digests have one length whatever the key's, so comparing them leaks neither content nor length.
const digest = (key: string) => createHash("sha256").update(key).digest();

/** A short, non-reversible name for a key, for per-key state such as rate limits. */
export const keyId = (key: string) => digest(key).toString("base64url").slice(0, 22);

export function presentedKey(request: FastifyRequest): string | undefined {
  const header = request.headers["x-api-key"];
  if (typeof header === "string" && header !== "") return header;
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? "");
  return bearer?.[1];
}

/** An onRequest hook that rejects requests without one of `keys` (401 unauthorized). */
export function requireApiKey(keys: readonly string[]) {
  const accepted = keys.map(digest);
  return async (request: FastifyRequest) => {
    const key = presentedKey(request);
    const candidate = digest(key ?? "");
    // Every accepted key is compared, so timing does not tell which one (or whether any) matched.
    const matches = accepted.reduce(
      (found, known) => timingSafeEqual(known, candidate) || found,
      false,
    );
    if (key === undefined || !matches) {
      throw new HttpError(
        401,
        "unauthorized",
        key === undefined
          ? "Missing API key: send it as X-API-KEY: <key> or Authorization: Bearer <key>."
          : "Invalid API key.",
      );
    }
  };
}
