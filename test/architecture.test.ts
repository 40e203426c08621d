// No import circles in src/: a module that needs another's types or helpers and is needed by it
// back means the two share something that belongs in a module of its own. And imports point down:
// the engines know nothing of endpoints, HTTP or the configuration; the cache and the endpoints
// nothing of HTTP; only the entry point builds the app. A regex over the import lines is enough
// here, since every module names its imports as relative paths in string literals.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const SRC = resolve(import.meta.dirname, "../src");

// `import … from "./x"`, `export … from "./x"` (type-only ones too), `import "./x"`, `import("./x")`.
const RELATIVE_IMPORT = /(?:\bfrom|\bimport)\s*\(?\s*"(\.{1,2}\/[^"]+)"/g;

function importGraph(): Map<string, string[]> {
  const modules = readdirSync(SRC, { recursive: true, encoding: "utf8" })
    .filter((file) => /\.(ts|js)$/.test(file))
    .map((file) => join(SRC, file));
  const known = new Set(modules);
  const graph = new Map<string, string[]>();
  for (const module of modules) {
    const source = readFileSync(module, "utf8");
    const targets = [...source.matchAll(RELATIVE_IMPORT)]
      .map((match) => resolve(dirname(module), match[1] as string))
      .filter((target) => known.has(target));
    graph.set(module, [...new Set(targets)]);
  }
  return graph;
}

/** Each circle once, as `a.ts → b.ts → a.ts`, found by a depth-first walk's edges back into its path. */
function circles(graph: Map<string, string[]>): string[] {
  const found = new Set<string>();
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (module: string) => {
    path.push(module);
    for (const target of graph.get(module) ?? []) {
      const at = path.indexOf(target);
      if (at >= 0) {
        const circle = path.slice(at);
        // Start at the least name, so that the same circle reached from elsewhere reads the same.
        const first = circle.indexOf([...circle].sort()[0] as string);
        const turned = [...circle.slice(first), ...circle.slice(0, first)];
        found.add([...turned, turned[0]].map((file) => relative(SRC, file as string)).join(" → "));
      } else if (!done.has(target)) {
        visit(target);
      }
    }
    path.pop();
    done.add(module);
  };
  for (const module of graph.keys()) if (!done.has(module)) visit(module);
  return [...found].sort();
}

/**
 * Who may not import whom: a module under `from` (a folder ending in `/`, or one file) imports
 * nothing under any of `not` (`""` is every module). `app.ts` is the app: only main.ts, the
 * process's entry, builds it (scripts and tests, outside src/, may too).
 */
const DIRECTION: { from: string; not: string[] }[] = [
  { from: "engines/", not: ["endpoints/", "http/", "config.ts"] },
  { from: "config.ts", not: ["credentials/", "endpoints/", "http/", "cache/"] },
  { from: "cache/", not: ["http/"] },
  { from: "endpoints/", not: ["http/"] },
  { from: "", not: ["app.ts"] },
];

const EXEMPT_FROM_DIRECTION = new Set(["main.ts"]);

const under = (module: string, room: string) =>
  room.endsWith("/") || room === "" ? module.startsWith(room) : module === room;

/** Each import that runs against the table, as `from.ts → target.ts`. */
function upwardArrows(graph: Map<string, string[]>): string[] {
  const found: string[] = [];
  for (const [module, targets] of graph) {
    const from = relative(SRC, module);
    if (EXEMPT_FROM_DIRECTION.has(from)) continue;
    for (const target of targets.map((file) => relative(SRC, file))) {
      const refused = DIRECTION.some(
        (rule) => under(from, rule.from) && rule.not.some((room) => under(target, room)),
      );
      if (refused) found.push(`${from} → ${target}`);
    }
  }
  return found.sort();
}

describe("the modules under src/", () => {
  it("import one another without a circle", () => {
    const graph = importGraph();
    // The walk sees the imports at all: the service's module reaches the result cache.
    expect(graph.get(join(SRC, "service.ts"))).toContain(join(SRC, "cache/result-cache.ts"));
    expect(circles(graph)).toEqual([]);
  });

  it("import downwards only, as the direction table says", () => {
    const graph = importGraph();
    // The table sees the arrows at all: main.ts builds the app, and the endpoints read the engines.
    expect(graph.get(join(SRC, "main.ts"))).toContain(join(SRC, "app.ts"));
    expect(graph.get(join(SRC, "endpoints/compile.ts"))).toContain(
      join(SRC, "engines/sql-text.ts"),
    );
    expect(upwardArrows(graph)).toEqual([]);
  });
});

describe("the service's long-lived parts (src/service.ts)", () => {
  it("reach no module of the HTTP app, directly or through another", () => {
    const graph = importGraph();
    const reached = new Set<string>();
    const visit = (module: string) => {
      for (const target of graph.get(module) ?? []) {
        if (reached.has(target)) continue;
        reached.add(target);
        visit(target);
      }
    };
    visit(join(SRC, "service.ts"));
    expect(reached).toContain(join(SRC, "cache/serialized-result.ts"));
    const http = [...reached].filter((module) => module.startsWith(`${join(SRC, "http")}/`));
    expect(http.map((module) => relative(SRC, module))).toEqual([]);
  });
});
