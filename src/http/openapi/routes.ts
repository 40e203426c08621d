// GET /openapi.json, the OpenAPI document, and GET /docs, Swagger UI over it. Without a credential
// the document describes every endpoint (the catalog is public: docs/api.md lists it); with one, only
// what that credential may call, with the values its scopes fix. /docs and its assets are served
// from node_modules, so the page works offline, and need no credential: what anyone may fetch is
// counted per client address instead, and sent compressed.
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import swagger, { type StaticDocumentSpec } from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance, preHandlerHookHandler } from "fastify";
import { LRUCache } from "lru-cache";
import { sha256Hex } from "../../credentials/authenticate.ts";
import type { Credential } from "../../credentials/credential.ts";
import { grantedParams, hasFullAccess } from "../../credentials/scope-rule.ts";
import { catalog } from "../../endpoints/catalog.ts";
import type { AnonymousLimit } from "../anonymous-limit.ts";
import { FixedBody } from "../fixed-body.ts";
import { type Described, openApiDocument } from "./document.ts";

const JSON_TYPE = "application/json; charset=utf-8";

const EVERYTHING: Described = {
  callable: catalog.map((endpoint) => ({ endpoint, fixed: {} })),
  metrics: true,
};

/** What `credential` may call, with its fixed params. */
function describedFor(credential: Credential): Described {
  return {
    callable: catalog.flatMap((endpoint) => {
      const fixed = grantedParams(credential, endpoint);
      return fixed ? [{ endpoint, fixed }] : [];
    }),
    metrics: hasFullAccess(credential),
  };
}

/** GET /openapi.json, in the credential scope: a credential is optional there, but checked when sent. */
export async function openApiRoute(app: FastifyInstance, { limit }: { limit: AnonymousLimit }) {
  const everything = new FixedBody(JSON.stringify(openApiDocument(EVERYTHING)), JSON_TYPE);
  // By what the credential may call rather than by credential: tokens are new objects every request.
  const documents = new LRUCache<string, FixedBody>({ max: 1_000 });
  const documentFor = (credential: Credential) => {
    const described = describedFor(credential);
    const grant = JSON.stringify([
      described.metrics,
      described.callable.map(({ endpoint, fixed }) => [endpoint.name, fixed]),
    ]);
    let document = documents.get(grant);
    if (document === undefined) {
      document = new FixedBody(JSON.stringify(openApiDocument(described)), JSON_TYPE);
      documents.set(grant, document);
    }
    return document;
  };
  // An anonymous caller is counted per address; like /metrics, one with a credential is not charged
  // for reading what tools and the docs page read.
  const config = { credentialOptional: true, rateLimit: false } as const;
  const countAnonymous: preHandlerHookHandler = (request, reply, done) => {
    if (request.credential) return done();
    limit(request, reply, done);
  };
  app.get("/openapi.json", { config, preHandler: countAnonymous }, async (request, reply) => {
    const credential: Credential | null = request.credential;
    // Short-lived: the document changes with the service's version. It differs per credential, so
    // a shared cache keeps one per credential header, and only the anonymous one at all.
    reply
      .header("cache-control", credential ? "private, max-age=60" : "public, max-age=60")
      .header("vary", "X-API-KEY, Authorization");
    return (credential ? documentFor(credential) : everything).send(request, reply);
  });
}

// Everything the page loads comes from this origin; Swagger UI sets inline styles and data: images.
const CONTENT_SECURITY_POLICY =
  "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; " +
  "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'";

// What the page loads from the plugin's static folder, by media type.
const SWAGGER_UI_ASSETS: Record<string, string> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "index.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "application/javascript; charset=utf-8",
  "swagger-ui-standalone-preset.js": "application/javascript; charset=utf-8",
  "favicon-32x32.png": "image/png",
  "favicon-16x16.png": "image/png",
};
const SWAGGER_UI_STATIC = join(
  dirname(createRequire(import.meta.url).resolve("@fastify/swagger-ui")),
  "static",
);
// The page's references to them, as the plugin writes them (`./static/x` or `/docs/static/x`).
const ASSET_REFERENCE = new RegExp(
  `/static/(${Object.keys(SWAGGER_UI_ASSETS)
    .map((name) => name.replaceAll(".", "\\."))
    .join("|")})"`,
  "g",
);

/** The assets and a version naming their contents; read once per process, as they never change. */
let swaggerUiAssets: Promise<{ version: string; bodies: Map<string, FixedBody> }> | undefined;
async function readSwaggerUiAssets() {
  const bodies = new Map<string, FixedBody>();
  for (const [name, type] of Object.entries(SWAGGER_UI_ASSETS)) {
    bodies.set(name, new FixedBody(await readFile(join(SWAGGER_UI_STATIC, name)), type));
  }
  const etags = [...bodies.values()].map((body) => body.etag).join();
  return { version: sha256Hex(etags).slice(0, 16), bodies };
}

/**
 * GET /docs: Swagger UI over the document of every endpoint; "Authorize" takes the key. Its assets
 * are served compressed under a path naming their version, so browsers keep them for good.
 */
export async function apiReference(app: FastifyInstance, { limit }: { limit: AnonymousLimit }) {
  app.addHook("onRequest", limit);
  swaggerUiAssets ??= readSwaggerUiAssets();
  const { version, bodies } = await swaggerUiAssets;
  // The plugin's types know OpenAPI 2 and 3.0 only; it serves the object it is given as it is.
  const document = openApiDocument(EVERYTHING) as unknown as StaticDocumentSpec["document"];
  await app.register(swagger, { mode: "static", specification: { document } });
  await app.register(swaggerUi, {
    routePrefix: "/docs",
    staticCSP: CONTENT_SECURITY_POLICY,
    theme: { title: "Log & usage query service" },
    uiConfig: { docExpansion: "list", tryItOutEnabled: true, displayRequestDuration: true },
  });
  for (const [name, body] of bodies) {
    app.get(`/docs/static/${version}/${name}`, async (request, reply) => {
      reply
        .header("content-security-policy", CONTENT_SECURITY_POLICY)
        .header("x-content-type-options", "nosniff")
        .header("cache-control", "public, max-age=31536000, immutable");
      return body.send(request, reply);
    });
  }
  // The page names its assets by version: a new version is a new URL, never a stale cached file.
  app.addHook("onSend", async (request, _reply, payload) => {
    if (request.routeOptions.url !== "/docs" && request.routeOptions.url !== "/docs/") {
      return payload;
    }
    return String(payload).replace(ASSET_REFERENCE, `/static/${version}/$1"`);
  });
}
