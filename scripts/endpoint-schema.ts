// `npm run endpoint-schema`: writes endpoints/endpoint.schema.json, the JSON Schema of an endpoint's
// definition file (src/endpoints/definition.ts), which editors check endpoint.yaml files against.
// test/endpoints/catalog.test.ts fails while the file is not what this writes.
import { writeFileSync } from "node:fs";
import { DEFINITION_SCHEMA_FILE, definitionJsonSchema } from "../src/endpoints/definition.ts";

writeFileSync(DEFINITION_SCHEMA_FILE, definitionJsonSchema());
process.stdout.write(`wrote ${DEFINITION_SCHEMA_FILE.pathname}\n`);
