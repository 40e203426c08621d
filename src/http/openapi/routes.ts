// GET /openapi.json, the OpenAPI document, and GET /docs, Swagger UI over it. Without a credential
// the document describes every endpoint (the catalog is public: README lists it); with one, only
// what that credential may call, with the values its scopes fix. /docs and its assets are served
// from node_modules, so the page works offline, and need no credential.
import swagger, { type StaticDocumentSpec } from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance } from "fastify";
import { LRUCache } from "lru-cache";
import type { Credential } from "../../credentials/credential.ts";
import { grantedParams } from "../../credentials/scope-rule.ts";
import { catalog } from "../../endpoints/catalog.ts";
import { type Callable, openApiDocument } from "./document.ts";

const EVERY_ENDPOINT: readonly Callable[] = catalog.map((endpoint) => ({ endpoint, fixed: {} }));

/** What `credential` may call, with its fixed params. */
function callableBy(credential: Credential): Callable[] {
  return catalog.flatMap((endpoint) => {
    const fixed = grantedParams(credential, endpoint);
    return fixed ? [{ endpoint, fixed }] : [];
  });
}

/** GET /openapi.json, in the credential scope: a credential is optional there, but checked when sent. */
export async function openApiRoute(app: FastifyInstance) {
  const everything = JSON.stringify(openApiDocument(EVERY_ENDPOINT));
  // By what the credential may call rather than by credential: tokens are new objects every request.
  const documents = new LRUCache<string, string>({ max: 1_000 });
  const documentFor = (credential: Credential) => {
    const callable = callableBy(credential);
    const grant = JSON.stringify(callable.map(({ endpoint, fixed }) => [endpoint.name, fixed]));
    let document = documents.get(grant);
    if (document === undefined) {
      document = JSON.stringify(openApiDocument(callable));
      documents.set(grant, document);
    }
    return document;
  };
  // An anonymous caller has no budget to count against; like /metrics, one with a credential is
  // not charged for reading what tools and the docs page read.
  const config = { credentialOptional: true, rateLimit: false } as const;
  app.get("/openapi.json", { config }, async (request, reply) => {
    const credential: Credential | null = request.credential;
    return reply
      .type("application/json; charset=utf-8")
      .send(credential ? documentFor(credential) : everything);
  });
}

// Everything the page loads comes from this origin; Swagger UI sets inline styles and data: images.
const CONTENT_SECURITY_POLICY =
  "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; " +
  "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'";

/** GET /docs: Swagger UI over the document of every endpoint; "Authorize" takes the key. */
export async function apiReference(app: FastifyInstance) {
  // The plugin's types know OpenAPI 2 and 3.0 only; it serves the object it is given as it is.
  const document = openApiDocument(EVERY_ENDPOINT) as unknown as StaticDocumentSpec["document"];
  await app.register(swagger, { mode: "static", specification: { document } });
  await app.register(swaggerUi, {
    routePrefix: "/docs",
    staticCSP: CONTENT_SECURITY_POLICY,
    theme: { title: "Log & usage query service" },
    uiConfig: { docExpansion: "list", tryItOutEnabled: true, displayRequestDuration: true },
  });
}
