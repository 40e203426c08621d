// The catalog read from endpoint folders (endpoints/<name>/: endpoint.yaml and its SQL), each
// definition checked and compiled once. Every problem, in every folder, is one line naming the file
// and the field; any problem refuses the whole catalog, so a service never starts with part of it.
// The folders are an operator's: a file is read only when it is a regular file of at most
// MAX_ENDPOINT_FILE_BYTES, and a definition's YAML aliases are bounded.
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  openSync,
  readdirSync,
  readSync,
} from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { LineCounter, parseDocument } from "yaml";
import { type Catalog, catalogOf, type EndpointDefinition } from "./catalog.ts";
import { compileEndpoint, type SqlFiles } from "./compile.ts";
import { endpointDefinition } from "./definition.ts";

/** The built-in endpoints' folder: endpoints/ at the repository root. */
export const BUILT_IN_ENDPOINTS = fileURLToPath(new URL("../../endpoints/", import.meta.url));

export const DEFINITION_FILE = "endpoint.yaml";
/** The largest endpoint file read (docs/endpoints.md): a definition or a query is a few KiB. */
export const MAX_ENDPOINT_FILE_BYTES = 1024 * 1024;
/**
 * The most alias expansions a definition may make: a few anchors shared between parameters need
 * far fewer, and an alias bomb (anchors of anchors) would need millions.
 */
export const MAX_ALIAS_COUNT = 100;
const SQL_FILE = /^(?:(?:window|rest)\.)?(?:bigquery|duckdb)\.sql$/;

/** The definitions that could not be compiled: one line per problem. */
export class CatalogError extends Error {
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(`the endpoint catalog has ${problems.length} problem(s):\n${problems.join("\n")}`);
    this.name = "CatalogError";
    this.problems = problems;
  }
}

/**
 * The endpoints of every folder under `dirs` that holds an endpoint.yaml, in name order; throws
 * CatalogError listing every problem. File names in problems are relative to the working directory.
 */
export function loadCatalog(dirs: readonly string[] = [BUILT_IN_ENDPOINTS]): Catalog {
  const problems: string[] = [];
  const entries: EndpointDefinition[] = [];
  const seen = new Map<string, string>();
  for (const dir of dirs) {
    for (const folder of readdirSync(dir, { withFileTypes: true })) {
      if (!folder.isDirectory()) continue;
      const path = join(dir, folder.name);
      if (!existsSync(join(path, DEFINITION_FILE))) continue;
      const found = loadEndpoint(path, folder.name);
      if ("problems" in found) {
        problems.push(...found.problems);
        continue;
      }
      const { entry } = found;
      const file = shown(join(path, DEFINITION_FILE));
      for (const key of [entry.name, entry.id]) {
        const other = seen.get(key);
        if (other !== undefined) {
          problems.push(
            `${file}: ${key === entry.name ? "name" : "id"}: ${key} is also ${other}'s`,
          );
        }
        seen.set(key, file);
      }
      entries.push(entry);
    }
  }
  if (problems.length > 0) throw new CatalogError(problems);
  return catalogOf(entries.sort((a, b) => (a.name < b.name ? -1 : 1)));
}

let builtIn: Catalog | undefined;

/**
 * The built-in endpoints alone, loaded on first use: what a credential or rule file is checked
 * against when it is not given the service's catalog (a test's, a script's).
 */
export function builtInCatalog(): Catalog {
  builtIn ??= loadCatalog([BUILT_IN_ENDPOINTS]);
  return builtIn;
}

const shown = (path: string) => relative(process.cwd(), path) || path;

/** One folder's entry, or its problems as lines. */
function loadEndpoint(
  path: string,
  folderName: string,
): { entry: EndpointDefinition } | { problems: string[] } {
  const file = shown(join(path, DEFINITION_FILE));
  const read = readEndpointFile(join(path, DEFINITION_FILE));
  if ("problem" in read) return { problems: [read.problem] };
  const lines = new LineCounter();
  const document = parseDocument(read.text, { lineCounter: lines, prettyErrors: false });
  if (document.errors.length > 0) {
    return {
      problems: document.errors.map((error) => {
        const at = lines.linePos(error.pos[0]);
        return `${file}: line ${at.line}: ${error.message.split("\n")[0]}`;
      }),
    };
  }
  let value: unknown;
  try {
    // Through JSON and back: each string the YAML gives is a slice of the file's text, and a file
    // with one character past Latin-1 (a dash in a description) makes every slice two bytes a
    // character. The endpoint's name would then make each request's log line two-byte, which costs
    // its UTF-8 encoding 0.5 µs of a cached hit; JSON's strings are compact copies of their own.
    value = JSON.parse(JSON.stringify(document.toJS({ maxAliasCount: MAX_ALIAS_COUNT })));
  } catch (error) {
    // yaml's ReferenceError for an alias bomb or an alias to no anchor; JSON's TypeError for a cycle.
    return { problems: [`${file}: ${(error as Error).message.split("\n")[0]}`] };
  }
  const parsed = endpointDefinition.safeParse(value);
  if (!parsed.success) {
    return {
      problems: parsed.error.issues.map(
        (issue) => `${file}: ${issue.path.join(".") || "(the file)"}: ${issue.message}`,
      ),
    };
  }
  const definition = parsed.data;
  if (definition.name !== folderName) {
    return {
      problems: [`${file}: name: ${definition.name} is not its folder's name, ${folderName}`],
    };
  }
  const sql: Record<string, string> = {};
  const unread: string[] = [];
  for (const name of readdirSync(path)) {
    if (!SQL_FILE.test(name)) continue;
    const sqlFile = readEndpointFile(join(path, name));
    if ("problem" in sqlFile) unread.push(sqlFile.problem);
    else sql[name] = sqlFile.text;
  }
  if (unread.length > 0) return { problems: unread };
  const compiled = compileEndpoint(definition, sql as SqlFiles);
  if ("entry" in compiled) return { entry: { ...compiled.entry, folder: shown(path) } };
  return {
    problems: compiled.problems.map(({ field, message }) =>
      field.endsWith(".sql")
        ? `${shown(join(path, field))}: ${message}`
        : `${file}: ${field}: ${message}`,
    ),
  };
}

/**
 * The text of an endpoint file, or the one line why it is not read: it is not a regular file (a
 * folder, a FIFO, a link to a device such as /dev/zero) or holds more than MAX_ENDPOINT_FILE_BYTES.
 * Checked on the file opened (without waiting for a FIFO's writer), not on its name. `file` is the
 * name the problem gives.
 */
export function readEndpointFile(
  path: string,
  file = shown(path),
): { text: string } | { problem: string } {
  let descriptor: number;
  try {
    descriptor = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    return { problem: `${file}: cannot be read (${(error as NodeJS.ErrnoException).code})` };
  }
  try {
    if (!fstatSync(descriptor).isFile()) return { problem: `${file}: is not a regular file` };
    // At most one byte past the limit is read, whatever size the file says it has.
    const buffer = Buffer.alloc(MAX_ENDPOINT_FILE_BYTES + 1);
    let length = 0;
    for (let n = -1; n !== 0 && length < buffer.length; length += n) {
      n = readSync(descriptor, buffer, length, buffer.length - length, null);
    }
    if (length > MAX_ENDPOINT_FILE_BYTES) {
      return {
        problem: `${file}: holds more than ${MAX_ENDPOINT_FILE_BYTES} bytes, the most an endpoint file may`,
      };
    }
    return { text: buffer.toString("utf8", 0, length) };
  } catch (error) {
    return { problem: `${file}: cannot be read (${(error as NodeJS.ErrnoException).code})` };
  } finally {
    closeSync(descriptor);
  }
}
