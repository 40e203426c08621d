// What a `project` pattern costs usage.api-counts (interval=daily) on the embedded DuckDB engine
// over the demo data, against a literal: the basis of re2-pattern.ts's MAX_STEPS, and the corpus
// test/endpoints/pattern-cost.test.ts holds the validator to (by the steps it counts, not by time:
// a ratio of timings moves with the load on the machine). Median of 5 runs after one warm-up,
// each pattern's runs interleaved with the literal's so that load on the machine hits both alike;
// an accepted pattern over MAX_RATIO× the literal is marked and fails the run.
// Run: node bench/pattern-cost.ts [pattern ...]   (default: the corpus below, about a minute)
import { cpus } from "node:os";
import { RE2JS } from "re2js";
import { re2PatternProblem, re2PatternSteps } from "../src/endpoints/re2-pattern.ts";
import { loadData } from "../src/engines/duckdb/data.ts";
import { createDuckDbEngine, type DuckDbEngine } from "../src/engines/duckdb.ts";
import { endpointRequest } from "../test/support/catalog.ts";

export const LITERALS = ["default", "^https://default\\."] as const;

/** Patterns a person would write; each must be accepted. */
export const USEFUL = [
  ...LITERALS,
  "^https://(default|staging)\\.",
  "(?i)^https://DEFAULT\\.",
  "[a-z0-9]{20}",
  "^https://[a-z]{20}\\.supabase\\.co/rest/",
  "a{1000}",
  Array.from({ length: 40 }, (_, i) => `ref${i}`).join("|"),
];

/** What an accepted pattern may cost, in times the literal's. */
const MAX_RATIO = 5;

/** Patterns built to be costly; each must be refused or cost at most MAX_RATIO× a literal. */
export const ADVERSARIAL = [
  // The issue's three, accepted before the cost cap.
  "\\pL{146}",
  "(?i)\\pL{145}",
  "[\\p{L}\\p{N}]{100}",
  "\\pL{1000}",
  "\\pN{100}",
  ".{200}",
  "[^/]{150}",
  "((a|b){10}){10}",
  "\\pL|\\pN|\\pP|\\pS|\\pM|\\pZ|\\pC",
  // Shapes that are hard on a DFA or an NFA rather than large.
  "[a-z]*a[a-z]{20}",
  "(a|aa)*b",
  "(.*){100}",
  "(?:x*){1000}",
  "(?:\\b.){400}",
  "(?:a?){500}a{500}",
  "(?:(a)){1000}(?:(b)){1000}(?:(c)){1000}(?:(d)){1000}",
  "(?:[a-z]{20}\\.){12}",
];

/** Families of costlier patterns as n grows from 1 to 1000, timed at the cap (familyEdges). */
const ADVERSARIAL_FAMILIES: ((n: number) => string)[] = [
  // Repeated Unicode classes: categories, scripts, unions, complements, scattered code points.
  (n) => `\\pL{${n}}`,
  (n) => `[\\p{L}\\p{N}]{${n}}`,
  (n) => `\\pN{${n}}`,
  (n) => `\\p{Lu}{${n}}`,
  (n) => `\\p{Co}{${n}}`,
  (n) => `\\p{Greek}{${n}}`,
  (n) => `\\p{Cyrillic}{${n}}`,
  (n) => `\\p{Han}{${n}}`,
  (n) => `\\PL{${n}}`,
  (n) => `[\\x{100}-\\x{10FFFF}]{${n}}`,
  (n) => `[\\x{100}\\x{102}\\x{104}\\x{106}\\x{108}\\x{10A}\\x{10C}\\x{10E}]{${n}}`,
  // Case-folded classes and letters (k folds to K and the Kelvin sign).
  (n) => `(?i)\\pL{${n}}`,
  (n) => `(?i)\\p{Lu}{${n}}`,
  (n) => `(?i)[\\p{Lu}\\p{Nd}]{${n}}`,
  (n) => `(?i)\\w{${n}}`,
  (n) => `(?i)k{1000}k{${n}}`,
  (n) => `(?i)θ{${n}}`,
  // Nested counted groups, alternations of classes.
  (n) => `((a|b){10}){${Math.ceil(n / 10)}}`,
  (n) => `(?:\\p{Greek}{10}){${Math.ceil(n / 10)}}`,
  (n) => `((\\pN{2}){2}){${Math.ceil(n / 4)}}`,
  (n) => `(?:\\pL|\\pN|\\pP|\\pS){${n}}`,
  (n) => `(?:\\p{Greek}|\\p{Cyrillic}|\\p{Han}|\\p{Arabic}|\\p{Hebrew}){${n}}`,
  // Any character, any but one; a long literal; optional steps; mixes.
  (n) => `.{${n}}`,
  (n) => `(?s).{${n}}`,
  (n) => `[^/]{${n}}`,
  (n) => `a{1000}b{1000}c{1000}d{1000}e{1000}f{${n}}`,
  (n) => `(?:\\w?\\W?){${n}}`,
  (n) => `(?:[aeiou]?[^aeiou]?){${n}}`,
  (n) => `^https://\\pL{${n}}\\.supabase\\.co/`,
  (n) => `[\\pL\\pN]{3}\\p{Greek}{${n}}`,
];

/** Each family's costliest member the validator accepts and the next, refused one: the cap's two sides. */
export function familyEdges(): string[] {
  return ADVERSARIAL_FAMILIES.flatMap((family) => {
    const accepted = (n: number) => re2PatternProblem(family(n)) === undefined;
    if (!accepted(1)) return [family(1)];
    let [low, high] = [1, 1000];
    while (low < high) {
      const mid = Math.ceil((low + high) / 2);
      if (accepted(mid)) low = mid;
      else high = mid - 1;
    }
    return low < 1000 ? [family(low), family(low + 1)] : [family(low)];
  });
}

/** The embedded engine with the demo data, and a timer for usage.api-counts with a pattern. */
async function demoEngine(): Promise<{
  engine: DuckDbEngine;
  timeMs: (project: string) => Promise<number>;
}> {
  const engine = await createDuckDbEngine();
  await loadData(engine, { demoData: true });
  const timeMs = async (project: string) => {
    const started = performance.now();
    await engine.run(endpointRequest("usage.api-counts", "duckdb", { project, interval: "daily" }));
    return performance.now() - started;
  };
  return { engine, timeMs };
}

/** Medians of `runs` timings of `pattern` and of `literal`, taken alternately after one warm-up of each. */
async function medianMs(
  timeMs: (project: string) => Promise<number>,
  pattern: string,
  literal: string,
  runs: number,
): Promise<{ pattern: number; literal: number }> {
  await timeMs(literal);
  await timeMs(pattern);
  const times = { pattern: [] as number[], literal: [] as number[] };
  for (let run = 0; run < runs; run++) {
    times.literal.push(await timeMs(literal));
    times.pattern.push(await timeMs(pattern));
  }
  const median = (values: number[]) =>
    values.sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
  return { pattern: median(times.pattern), literal: median(times.literal) };
}

if (import.meta.main) {
  const given = process.argv.slice(2);
  const { engine, timeMs } = await demoEngine();
  const rows: string[][] = [];
  for (const pattern of given.length > 0 ? given : [...USEFUL, ...ADVERSARIAL, ...familyEdges()]) {
    const timed = await medianMs(timeMs, pattern, LITERALS[0], 5).catch((error: Error) => error);
    const program = RE2JS.compile(pattern).re2Input.prog as {
      inst: { runes: ArrayLike<number> }[];
    };
    const ranges = program.inst.reduce((sum, inst) => sum + Math.max(1, inst.runes.length / 2), 0);
    const accepted = re2PatternProblem(pattern) === undefined;
    const ratio = timed instanceof Error ? undefined : timed.pattern / timed.literal;
    const tooCostly = accepted && ratio !== undefined && ratio > MAX_RATIO;
    if (tooCostly) process.exitCode = 1;
    rows.push([
      `\`${pattern}\``,
      accepted ? "accepted" : "refused",
      timed instanceof Error ? timed.message.slice(0, 60) : timed.pattern.toFixed(1),
      ratio === undefined ? "" : `${ratio.toFixed(2)}${tooCostly ? ` (over ${MAX_RATIO}×)` : ""}`,
      String(re2PatternSteps(pattern)),
      String(program.inst.length),
      String(ranges),
    ]);
    console.error(rows.at(-1)?.join("  "));
  }
  await engine.close();
  const header = [
    "pattern",
    "verdict",
    "ms",
    "× literal",
    "C++ steps",
    "re2js insts",
    "re2js ranges",
  ];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(" | ")} |`;
  console.log(`machine: ${cpus().length} × ${cpus()[0]?.model}, Node ${process.version}`);
  console.log(line(header));
  console.log(line(widths.map((w) => "-".repeat(w))));
  for (const row of rows) console.log(line(row));
}
