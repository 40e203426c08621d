// Only the catalog knows the endpoints: no module under src/ names a built-in endpoint or the
// parameters of its paging contract (window and retention) in its code, so that an operator's
// endpoint with other names is served by the same code. Comments may use them as examples; the
// CLI's log-query is logs.all's own client and names it on purpose.
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { builtInCatalog } from "../../src/endpoints/load-catalog.ts";

const SRC = resolve(import.meta.dirname, "../../src");
const NOT_CHECKED = [/^cli\//];
// A comment or a string literal, whichever starts first: strings inside comments are not code,
// and comment markers inside strings are not comments.
const COMMENT_OR_STRING =
  /\/\/[^\n]*|\/\*[\s\S]*?\*\/|"((?:[^"\\\n]|\\.)*)"|'((?:[^'\\\n]|\\.)*)'|`((?:[^`\\]|\\.)*)`/g;

/** The string literals of a module's code (template literals whole). */
function stringLiterals(source: string): string[] {
  return [...source.matchAll(COMMENT_OR_STRING)].flatMap(([, double, single, template]) => {
    const text = double ?? single ?? template;
    return text === undefined ? [] : [text];
  });
}

/** The identifiers of a module's code, outside its comments and strings. */
function identifiers(source: string): string[] {
  return source.replace(COMMENT_OR_STRING, " ").match(/[A-Za-z_$][\w$]*/g) ?? [];
}

/** The names only the catalog may know: the built-ins' names and their contracts' parameters. */
function catalogNames(): Set<string> {
  return new Set(
    builtInCatalog().entries.flatMap((endpoint) => [
      endpoint.name,
      ...(endpoint.paging
        ? [
            endpoint.paging.window.start,
            endpoint.paging.window.end,
            ...(endpoint.paging.window.since ? [endpoint.paging.window.since] : []),
            endpoint.paging.retention.param,
          ]
        : []),
    ]),
  );
}

/**
 * Whether a literal names `name`: it is the name, or, for a name no prose uses (one with a `.` or
 * a `_`: logs.all, iso_timestamp_start), holds it as a word.
 */
function isNamed(literal: string, name: string): boolean {
  if (literal === name) return true;
  if (!/[._]/.test(name)) return false;
  return new RegExp(`(^|[^\\w.-])${name.replaceAll(".", "\\.")}($|[^\\w.-])`).test(literal);
}

describe("the catalog's names", () => {
  it("finds a name in a string literal and not in a comment", () => {
    const source = '// logs.all\n/* "logs.all" */\nconst a = "x // y";\nconst b = `logs.all`;';
    expect(stringLiterals(source)).toEqual(["x // y", "logs.all"]);
    expect(identifiers(source)).toEqual(["const", "a", "const", "b"]);
  });

  it("are named by no module outside the catalog's data", () => {
    const known = catalogNames();
    expect(known).toContain("iso_timestamp_start");
    const found: string[] = [];
    for (const file of readdirSync(SRC, { recursive: true, encoding: "utf8" })) {
      if (!/\.(ts|js)$/.test(file) || NOT_CHECKED.some((pattern) => pattern.test(file))) continue;
      const source = readFileSync(join(SRC, file), "utf8");
      for (const literal of stringLiterals(source)) {
        for (const name of known) {
          if (isNamed(literal, name)) found.push(`${file}: "${name}"`);
        }
      }
      // A parameter read as a property (`params.iso_timestamp_start`).
      for (const identifier of identifiers(source)) {
        if (identifier.includes("_") && known.has(identifier)) found.push(`${file}: ${identifier}`);
      }
    }
    expect(found).toEqual([]);
  });
});
