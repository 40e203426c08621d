// The format of an endpoint's test cases (`cases.yaml` beside its definition): each case pins "now",
// names the fixture rows the embedded engine serves, gives a query string and what the answer must
// be. Reading a file gives its cases, or its problems, one line each naming the file and the field.
import { parseDocument } from "yaml";
import { z } from "zod";
import { sourceTables } from "../../schema.ts";
import { parseIsoTimestamp } from "../../time.ts";
import { MAX_ALIAS_COUNT, readEndpointFile } from "../load-catalog.ts";

/** A query-string value: YAML reads 404 or true as a number or a boolean, the URL holds text. */
const queryValue = z.union([z.string(), z.number(), z.boolean()]).transform(String);

/** The files LOCAL_DATA reads, the way fixture rows reach the engine. */
const EXPORT_FILE = /\.(?:json|jsonl|ndjson)(?:\.gz)?$|\.parquet$/;

const expectation = z
  .strictObject({
    status: z.int().min(100).max(599).meta({ description: "the answer's HTTP status" }),
    rows: z
      .array(z.record(z.string(), z.unknown()))
      .meta({
        description: "exactly the rows of the answer's result, in order, as the JSON holds them",
      })
      .optional(),
    count: z
      .int()
      .min(0)
      .meta({ description: "how many rows the answer's result holds" })
      .optional(),
    error: z
      .string()
      .meta({ description: "the error envelope's code, e.g. invalid_params" })
      .optional(),
  })
  .meta({ description: "the status, and at most one of rows, count and error" })
  .refine(
    (expected) =>
      [expected.rows, expected.count, expected.error].filter((x) => x !== undefined).length <= 1,
    {
      message: "give at most one of rows, count and error",
    },
  );

const testCase = z.strictObject({
  name: z.string().min(1).meta({ description: "what the case shows; unique in its file" }),
  now: z
    .string()
    .meta({
      format: "date-time",
      description: "the instant the engine and the service take as now, ISO 8601 with a zone",
    })
    .refine((text) => parseIsoTimestamp(text) !== undefined, {
      message: "must be an ISO 8601 instant with a zone, e.g. 2026-01-15T12:00:00Z",
    }),
  fixtures: z
    .partialRecord(
      z.enum(sourceTables().map((table) => table.name) as [string, ...string[]]),
      z
        .string()
        .regex(
          EXPORT_FILE,
          "must name an .ndjson, .jsonl or .json file (optionally .gz) or a .parquet file",
        ),
    )
    .meta({
      description:
        "per source table, a file of its rows as bq extract writes them (NDJSON, or Parquet), relative to the endpoint's folder or to the built-in endpoints/fixtures/; a table left out is empty",
    })
    .default({}),
  params: z
    .record(z.string(), queryValue)
    .meta({ description: "the query string, as a map of parameter to value" })
    .default({}),
  page: z
    .int()
    .min(2)
    .meta({
      description:
        "a paged endpoint's page after the first: the answer is the page reached from the first by following each page's Link rel=next; absent: the first page",
    })
    .optional(),
  follow: z
    .literal("catch-up")
    .meta({
      description:
        "the answer is a follow stream's catch-up: the records from the start the params give (since or the window's start) up to now, read by its window SQL, oldest first",
    })
    .optional(),
  expect: expectation,
});

export const caseFileSchema = z
  .array(
    testCase.refine((entry) => entry.page === undefined || entry.follow === undefined, {
      message: "give page or follow, not both",
      path: ["follow"],
    }),
  )
  .min(1)
  .meta({
    title: "Endpoint test cases",
    description:
      "The test cases of one endpoint, run by npm run test:endpoints on the embedded engine.",
  })
  .superRefine((cases, context) => {
    const seen = new Set<string>();
    cases.forEach((entry, index) => {
      if (seen.has(entry.name)) {
        context.addIssue({
          code: "custom",
          path: [index, "name"],
          message: `another case is named "${entry.name}"`,
        });
      }
      seen.add(entry.name);
    });
  });

export type EndpointCase = z.output<typeof caseFileSchema>[number];

/**
 * The cases of `file`, or what is wrong with it: one line per problem, naming the file and the field.
 * The file is an operator's, read with the bounds of the endpoint files beside it.
 */
export function readCaseFile(file: string): { cases: EndpointCase[] } | { problems: string[] } {
  const read = readEndpointFile(file, file);
  if ("problem" in read) return { problems: [read.problem] };
  const document = parseDocument(read.text, { prettyErrors: false });
  if (document.errors.length > 0) {
    return {
      problems: document.errors.map((error) => {
        const at = error.linePos?.[0];
        return `${file}${at ? `:${at.line}:${at.col}` : ""}: ${error.message.split("\n")[0]}`;
      }),
    };
  }
  let content: unknown;
  try {
    content = document.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (error) {
    // yaml's ReferenceError for an alias bomb, or an alias to no anchor.
    return { problems: [`${file}: ${(error as Error).message}`] };
  }
  const parsed = caseFileSchema.safeParse(content);
  if (parsed.success) return { cases: parsed.data };
  return {
    problems: parsed.error.issues.map(
      (issue) => `${file}: ${where(content, issue.path)}${issue.message}`,
    ),
  };
}

/** A field's place: `case 2 "a page": expect.status: `, the case by its number and its name. */
function where(content: unknown, path: PropertyKey[]): string {
  const [index, ...field] = path;
  if (typeof index !== "number") return "";
  const name = (Array.isArray(content) ? content[index] : undefined)?.name;
  const label = `case ${index + 1}${typeof name === "string" ? ` "${name}"` : ""}`;
  return `${[label, field.map(String).join(".")].filter((part) => part !== "").join(": ")}: `;
}
