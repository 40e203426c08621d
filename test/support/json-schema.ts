// A JSON Schema 2020-12 validator (the dialect of OpenAPI 3.1) that checks formats too, such as
// date-time, so a row schema's TIMESTAMP is held to RFC 3339.
import { Ajv2020 } from "ajv/dist/2020.js";
import formats from "ajv-formats";

export function jsonSchemaValidator(): Ajv2020 {
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  // A CommonJS module whose function is also its `default`, which is how TypeScript sees it.
  formats.default(ajv);
  return ajv;
}

/** The errors of `value` against `schema`, as ajv words them; empty when it conforms. */
export function schemaErrors(ajv: Ajv2020, schema: object, value: unknown): string[] {
  const validate = ajv.compile(schema);
  if (validate(value)) return [];
  return (validate.errors ?? []).map((error) => `${error.instancePath} ${error.message}`);
}
