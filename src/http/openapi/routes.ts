// GET /openapi.json, the OpenAPI document, and GET /docs, Swagger UI over it. The document is
// generated from the routes' schemas by @fastify/swagger, each endpoint made its own paths from the
// catalog (catalog-paths.ts). Without a credential it describes every endpoint (the catalog is
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
import packageJson from "../../../package.json" with { type: "json" };
import { sha256Hex } from "../../credentials/authenticate.ts";
import type { Credential } from "../../credentials/credential.ts";
import { grantedParams, hasFullAccess } from "../../credentials/scope-rule.ts";
import type { Catalog, EndpointDefinition } from "../../endpoints/catalog.ts";
import type { AnonymousLimit } from "../anonymous-limit.ts";
import { FixedBody } from "../fixed-body.ts";
import { type OpenApiDocument, withCatalogPaths } from "./catalog-paths.ts";
import { pruned, withSharedComponents } from "./components.ts";
import { credentialView, type Grant } from "./credential-view.ts";
import { CATALOG_TAG, OPENAPI_SCHEMA, SERVICE_TAG } from "./service-schemas.ts";

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
    await app.register(swagger, {
      openapi: {
        openapi: "3.1.0",
        info: {
          title: "Log & usage query service",
          version: packageJson.version,
          description:
            "Saved, read-only analytics queries over request and function logs. Every call but the " +
            "probes needs a credential: an API key as `X-API-KEY`, or an API key or signed access " +
            "token as `Authorization: Bearer`. `GET /openapi.json` without a credential describes " +
            "every endpoint; with one, only those it may call, with the parameters its scopes fix. " +
            "Each path answers HEAD as its GET does, without the body; any other method is 405 " +
            "`method_not_allowed` with `Allow: GET, HEAD`, and a path not listed here is 404 `not_found`.",
        },
        security: [{ apiKey: [] }, { bearer: [] }],
        tags: [CATALOG_TAG, SERVICE_TAG],
        components: {
          securitySchemes: {
            apiKey: { type: "apiKey", in: "header", name: "X-API-KEY", description: "An API key." },
            bearer: {
              type: "http",
              scheme: "bearer",
              description: "An API key, or a signed access token (JWT) from your backend.",
            },
          },
        },
      },
      hideUntagged: true,
      // OpenAPI 3.1 schemas are JSON Schema: `const` is as good as a one-value enum.
      convertConstToEnum: false,
      // A shared schema is named in the document by its $id.
      refResolver: { buildLocalReference: (schema) => String(schema.$id) },
      transformObject: (generated) =>
        withSharedComponents(
          (generated as { openapiObject: unknown }).openapiObject as OpenApiDocument,
        ) as never,
    });
    app.decorate(
      "openApiDocuments",
      documents(app, () => catalog.entries),
    );
  },
);

/**
 * The document of every endpoint of the catalog, and each credential's view of it; made anew when
 * the catalog is another. The routes' document is generated once: routes never change.
 */
function documents(app: FastifyInstance, entries: () => readonly EndpointDefinition[]) {
  let made:
    | {
        entries: readonly EndpointDefinition[];
        everything: OpenApiDocument;
        body: FixedBody;
        // By what the credential may call rather than by credential: tokens are new objects every request.
        views: LRUCache<string, FixedBody>;
      }
    | undefined;
  const current = () => {
    if (made?.entries !== entries()) {
      const generated = app.swagger() as unknown as OpenApiDocument;
      const everything = pruned(withCatalogPaths(generated, entries()));
      made = {
        entries: entries(),
        everything,
        body: new FixedBody(JSON.stringify(everything), JSON_TYPE),
        views: new LRUCache({ max: 1_000 }),
      };
    }
    return made;
  };
  return {
    everything: () => current().everything,
    /** What `credential` may see; null: everything. */
    bodyFor(credential: Credential | null): FixedBody {
      const { everything, body, views } = current();
      if (!credential) return body;
      const grant = grantOf(credential, entries());
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
    callable: entries.flatMap((endpoint) => {
      const fixed = grantedParams(credential, endpoint);
      return fixed ? [{ endpoint, fixed }] : [];
    }),
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
    return app.openApiDocuments.bodyFor(credential).send(request, reply);
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
