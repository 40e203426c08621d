// GET /openapi.json, the OpenAPI document, and GET /docs, Swagger UI over it. The document is
// generated from the routes' schemas by @fastify/swagger: the app's own, and each endpoint's entry
// routes (entry-document.ts). Without a credential it describes every endpoint (the catalog is
// public: docs/api.md lists it); with one, only what that credential may call, with the values its
// scopes fix. /docs and its assets are served from node_modules, so the page works offline, and
// need no credential: what anyone may fetch is counted per client address instead, and sent
// compressed.
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance, preHandlerHookHandler } from "fastify";
import fp from "fastify-plugin";
import { LRUCache } from "lru-cache";
import { sha256Hex } from "../../credentials/authenticate.ts";
import type { Credential } from "../../credentials/credential.ts";
import { callableBy, hasFullAccess } from "../../credentials/scope-rule.ts";
import type { Catalog, EndpointDefinition } from "../../endpoints/catalog.ts";
import type { AnonymousLimit } from "../anonymous-limit.ts";
import { FixedBody } from "../fixed-body.ts";
import { serves } from "../route-kinds.ts";
import { pruned, withSharedComponents } from "./components.ts";
import { credentialView, type Grant } from "./credential-view.ts";
import { type OpenApiDocument, SWAGGER_OPTIONS, withEntryPaths } from "./document.ts";
import { describeEntries } from "./entry-document.ts";
import { OPENAPI_SCHEMA } from "./service-schemas.ts";

const JSON_TYPE = "application/json; charset=utf-8";

declare module "fastify" {
  interface FastifyInstance {
    /** The documents /openapi.json and /docs serve. */
    openApiDocuments: ReturnType<typeof documents>;
  }
}

/**
 * Before any route: @fastify/swagger, collecting each route that declares a schema with a tag (the
 * others, such as the pages and their assets, are not part of the API).
 */
export const openApiGeneration = fp(
  async (app: FastifyInstance, { catalog }: { catalog: Catalog }) => {
    await app.register(swagger, SWAGGER_OPTIONS);
    app.decorate(
      "openApiDocuments",
      documents(app, () => catalog.entries),
    );
  },
);

/** The document of one catalog, and each credential's view of it. */
interface Made {
  entries: readonly EndpointDefinition[];
  everything: OpenApiDocument;
  body: FixedBody;
  // By what the credential may call rather than by credential: tokens are new objects every request.
  views: LRUCache<string, FixedBody>;
}

/**
 * The document of every endpoint of the catalog, and each credential's view of it; made anew when
 * the catalog is another. The app's own routes never change; the entry routes come with the catalog.
 */
function documents(app: FastifyInstance, entries: () => readonly EndpointDefinition[]) {
  let made: Promise<Made> | undefined;
  let madeFor: readonly EndpointDefinition[] | undefined;
  let last: Made | undefined;
  const make = async (endpoints: readonly EndpointDefinition[]): Promise<Made> => {
    const own = app.swagger() as unknown as OpenApiDocument;
    const everything = pruned(
      withSharedComponents(
        withEntryPaths(own, await describeEntries(endpoints, (row) => serves(app, row))),
      ),
    );
    const document: Made = {
      entries: endpoints,
      everything,
      body: new FixedBody(JSON.stringify(everything), JSON_TYPE),
      views: new LRUCache({ max: 1_000 }),
    };
    // An older catalog's document finished late is not the last one made.
    if (madeFor === endpoints) last = document;
    return document;
  };
  const current = (): Promise<Made> => {
    const endpoints = entries();
    if (madeFor !== endpoints || made === undefined) {
      madeFor = endpoints;
      made = make(endpoints);
      // A failure is not kept: the next request tries again.
      made.catch(() => {
        if (madeFor === endpoints) made = undefined;
      });
    }
    return made;
  };
  return {
    /** The document of the catalog of the moment, made if it is not yet. */
    ready: async () => (await current()).everything,
    /** The document last made (`ready` first): for a caller that cannot wait. */
    everything: () => {
      if (!last) throw new Error("The OpenAPI document is not made yet.");
      return last.everything;
    },
    /** What `credential` may see; null: everything. */
    async bodyFor(credential: Credential | null): Promise<FixedBody> {
      // The grant of the catalog the document was made of: a reload while it was made must not
      // pair one catalog's document with another's grant (and keep that view).
      const { entries: endpoints, everything, body, views } = await current();
      if (!credential) return body;
      const grant = grantOf(credential, endpoints);
      const key = JSON.stringify([
        grant.metrics,
        grant.callable.map(({ endpoint, fixed }) => [endpoint.name, fixed]),
      ]);
      let view = views.get(key);
      if (view === undefined) {
        view = new FixedBody(JSON.stringify(credentialView(everything, grant)), JSON_TYPE);
        views.set(key, view);
      }
      return view;
    },
  };
}

/** What `credential` may call, with its fixed params. */
function grantOf(credential: Credential, entries: readonly EndpointDefinition[]): Grant {
  return {
    callable: callableBy(credential, entries),
    metrics: hasFullAccess(credential),
  };
}

/** GET /openapi.json, in the credential scope: a credential is optional there, but checked when sent. */
export async function openApiRoute(app: FastifyInstance, { limit }: { limit: AnonymousLimit }) {
  // An anonymous caller is counted per address; like /metrics, one with a credential is not charged
  // for reading what tools and the docs page read.
  const config = { credentialOptional: true, rateLimit: false } as const;
  const countAnonymous: preHandlerHookHandler = (request, reply, done) => {
    if (request.credential) return done();
    limit(request, reply, done);
  };
  const options = { config, preHandler: countAnonymous, schema: OPENAPI_SCHEMA };
  app.get("/openapi.json", options, async (request, reply) => {
    const credential: Credential | null = request.credential;
    // Short-lived: the document changes with the service's version. It differs per credential, so
    // a shared cache keeps one per credential header, and only the anonymous one at all.
    reply
      .header("cache-control", credential ? "private, max-age=60" : "public, max-age=60")
      .header("vary", "X-API-KEY, Authorization");
    return (await app.openApiDocuments.bodyFor(credential)).send(request, reply);
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
  // The page's document is the catalog's of the moment, made before Swagger UI's route reads it.
  app.addHook("preHandler", async () => {
    await app.openApiDocuments.ready();
  });
  swaggerUiAssets ??= readSwaggerUiAssets();
  const { version, bodies } = await swaggerUiAssets;
  await app.register(swaggerUi, {
    // The document /openapi.json serves without a credential, rather than the routes' own.
    transformSpecification: () => app.openApiDocuments.everything(),
    transformSpecificationClone: false,
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
