// Answers held to the service's own /openapi.json by an OpenAPI response validator, openapi-backend,
// its schemas compiled in JSON Schema 2020-12 (OpenAPI 3.1's dialect): the operation the request's
// path names, a status it declares, a media type that status declares (none, and no body, when it
// declares none), the JSON body against its schema and each declared header's value.
import { createHash } from "node:crypto";
import { Ajv2020 } from "ajv/dist/2020.js";
import type { FastifyInstance } from "fastify";
import { type Document, OpenAPIBackend, SetMatchType } from "openapi-backend";
import type { OpenApiDocument } from "../../src/http/openapi/document.ts";
import { withFormats } from "./json-schema.ts";

/** An answer as a test holds it: from `inject`, or a fetch's status, headers and text. */
export interface Answer {
  statusCode: number;
  headers: Record<string, string | string[] | number | undefined>;
  /** The body's text; a stream's is not read. */
  body?: string;
}

interface Response {
  content?: Record<string, unknown>;
}

type Contract = (url: string, answer: Answer) => string[];

/**
 * Checks answers against `document`; each check gives the ways an answer departs from it. A path
 * the document does not list is an answer it does not describe.
 */
export async function contractOf(document: OpenApiDocument): Promise<Contract> {
  const api = new OpenAPIBackend({
    definition: structuredClone(document) as unknown as Document,
    validate: true,
    strict: true,
    // Its check of the document itself knows OpenAPI 3.0 only; Spectral and openapi.test.ts hold
    // the document to 3.1. Quick skips that check (and compiles each validator when first used).
    quick: true,
    // Its options (type coercion for headers) on the 2020-12 dialect, with the formats checked.
    customizeAjv: (_draft07, options) => {
      return withFormats(new Ajv2020({ ...options, allErrors: true, strict: false })) as never;
    },
  });
  await api.init();
  // Dereferenced: each response as it is, not a $ref.
  const paths = api.definition.paths as unknown as Record<
    string,
    { get: { operationId: string; responses: Record<string, Response> } }
  >;

  return (url: string, answer: Answer): string[] => {
    const pathname = url.split("?")[0] as string;
    const { statusCode } = answer;
    const contentType = answer.headers["content-type"];
    const mediaType = contentType === undefined ? undefined : String(contentType).split(";")[0];
    // The path's own operation, whatever the format: Accept's are declared where they are served.
    const described = paths[pathname]?.get;
    if (!described) return [`no operation describes GET ${pathname}`];
    const where = `${described.operationId} ${statusCode}`;
    const operation = api.getOperation(described.operationId);
    const response = operation?.responses?.[String(statusCode)] as Response | undefined;
    if (!operation || !response) return [`${where}: status not declared`];
    const problems: string[] = [];
    if (!response.content) {
      if (mediaType !== undefined)
        problems.push(`${where}: Content-Type ${mediaType} on no content`);
      if (answer.body) problems.push(`${where}: a body where none is declared`);
    } else if (!mediaType || !response.content[mediaType]) {
      problems.push(`${where}: media type ${mediaType} not declared`);
    } else if (mediaType === "application/json" && answer.body !== undefined) {
      const body = api.validator.validateResponse(JSON.parse(answer.body), operation, statusCode);
      for (const error of body.errors ?? []) {
        problems.push(`${where}: body ${error.instancePath} ${error.message}`);
      }
    }
    const headers = Object.fromEntries(
      Object.entries(answer.headers).map(([name, value]) => [name, String(value)]),
    );
    const declared = api.validator.validateResponseHeaders(headers, operation, {
      statusCode,
      setMatchType: SetMatchType.Any,
    });
    for (const error of declared.errors ?? []) {
      problems.push(`${where}: header ${error.instancePath} ${error.message}`);
    }
    return problems;
  };
}

/**
 * The checks made, by the document they hold answers to: most services a test starts serve the
 * same document (another object with the same content), whose validator is built once; a service's
 * own document object is looked up by identity, so a call costs no serialisation.
 */
const byContent = new Map<string, Promise<Contract>>();
const byDocument = new WeakMap<OpenApiDocument, Promise<Contract>>();

/**
 * The check against the document `app` serves without a credential (every endpoint), that passes
 * an answer on a path the document does not list: 404s, /docs.
 */
export async function servedContract(app: FastifyInstance): Promise<Contract> {
  const document = await app.openApiDocuments.ready();
  let contract = byDocument.get(document);
  if (contract === undefined) {
    const digest = createHash("sha256").update(JSON.stringify(document)).digest("base64");
    contract = byContent.get(digest);
    if (contract === undefined) {
      contract = contractOf(document).then(
        (check): Contract =>
          (url, answer) =>
            (url.split("?")[0] as string) in document.paths ? check(url, answer) : [],
      );
      byContent.set(digest, contract);
    }
    byDocument.set(document, contract);
  }
  return contract;
}
