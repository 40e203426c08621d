// A JSON Schema 2020-12 validator (the dialect of OpenAPI 3.1) that checks formats too, such as
// date-time, so a row schema's TIMESTAMP is held to RFC 3339, and its DATETIME to date-time-local.
import type { Ajv } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import formats from "ajv-formats";

/**
 * The OpenAPI Format Registry's date-time-local, which ajv-formats does not know: an RFC 3339
 * date-time without an offset (`2026-11-21T05:00:00`, a fraction when it has one).
 */
const DATE_TIME_LOCAL = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?$/;

/** `ajv` checking the formats of ajv-formats, and date-time-local. */
export function withFormats<T extends Ajv>(ajv: T): T {
  // A CommonJS module whose function is also its `default`, which is how TypeScript sees it.
  formats.default(ajv);
  ajv.addFormat("date-time-local", DATE_TIME_LOCAL);
  return ajv;
}

export function jsonSchemaValidator(): Ajv2020 {
  return withFormats(new Ajv2020({ allErrors: true, strict: true }));
}

/** The errors of `value` against `schema`, as ajv words them; empty when it conforms. */
export function schemaErrors(ajv: Ajv2020, schema: object, value: unknown): string[] {
  const validate = ajv.compile(schema);
  if (validate(value)) return [];
  return (validate.errors ?? []).map((error) => `${error.instancePath} ${error.message}`);
}
