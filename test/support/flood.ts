// A flood of costly `usage.api-counts` patterns: the costliest of each family the validator
// accepts, and their neighbours, as distinct cache keys of about the same cost.
import { re2PatternProblem } from "../../src/endpoints/re2-pattern.ts";

// The families whose costliest accepted members cost most on the demo data (bench/pattern-cost.ts),
// and have enough members for a flood.
const FAMILIES = [
  (n: number) => `(?:\\w?\\W?){${n}}`,
  (n: number) => `(?:[aeiou]?[^aeiou]?){${n}}`,
  (n: number) => `.{${n}}`,
  (n: number) => `(?:a?){${n}}a{${n}}`,
];

export function floodPatterns(count: number): string[] {
  const perFamily = Math.ceil(count / FAMILIES.length);
  return FAMILIES.flatMap((family) => {
    let largest = 0;
    while (largest < 1000 && re2PatternProblem(family(largest + 1)) === undefined) largest++;
    return Array.from({ length: Math.min(perFamily, largest) }, (_, i) => family(largest - i));
  }).slice(0, count);
}
