// Which `project` regexes the service accepts. The engines run C++ RE2 (BigQuery's, DuckDB's, and
// the GoogleSQL reference's in tests); validation runs re2js, a port that accepts some patterns they
// refuse, which then failed as 502s. The rule, probed on DuckDB and the reference engine with a bound
// pattern (every pattern it accepts ran on both):
// - at most 256 characters: a project-ref pattern needs far fewer, and it bounds compile time;
// - valid re2js syntax. Lookaround, backreferences, possessive quantifiers, `\Z`, `\G` and counts
//   above 1000 fail there as in C++ RE2; re2js also refuses `\C` (any byte), which C++ RE2 takes
//   and a URL match never needs. `(?i)`, `\Q…\E`, lazy quantifiers, `\b`, `\z`, `\pL` all run;
// - no named groups: `(?<n>…)` fails on DuckDB and the reference ("invalid perl operator"),
//   `(?P<n>…)` runs there but support differs between RE2 versions, and REGEXP_CONTAINS has no use
//   for a name;
// - a compiled size of at most MAX_WEIGHT. C++ RE2 compiles a character class into UTF-8 byte
//   ranges, so `\pL` is hundreds of instructions where re2js has one, and `\pL{500}` fails with
//   "pattern too large" although re2js counts 1002 instructions. Weighing each class by its number
//   of rune ranges tracks C++ RE2: DuckDB failed at weights from 301 000 (`\p{Lo}{561}`) to 503 000
//   (`\p{Ll}{757}`), never below, over the Unicode categories and unions of them; the cap leaves
//   a threefold margin, and still accepts `\pL{100}`, `a{1000}` or `[a-z]{1000}`.
import { LRUCache } from "lru-cache";
import { RE2JS } from "re2js";

const MAX_LENGTH = 256;
const MAX_WEIGHT = 100_000;

/** re2js's compiled program: public in its type declarations as `any`; this is the part read here. */
interface Program {
  inst: { runes: ArrayLike<number> }[];
}

/** Why the engines would refuse `pattern`, as a sentence a person can act on; undefined when it is fine. */
export function re2PatternProblem(pattern: string): string | undefined {
  if (pattern.length > MAX_LENGTH) {
    return `longer than ${MAX_LENGTH} characters (${pattern.length}); a project-ref pattern such as ^https://default\\. needs far fewer`;
  }
  return verdicts.memo(pattern).problem;
}

// A dashboard polls with the same pattern; compiling it takes up to tens of milliseconds.
const verdicts = new LRUCache<string, { problem?: string }>({
  max: 500,
  memoMethod: (pattern) => ({ problem: compileProblem(pattern) }),
});

function compileProblem(pattern: string): string | undefined {
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(pattern);
  } catch (error) {
    return `not a valid RE2 regular expression: ${(error as Error).message}`;
  }
  const [name] = Object.keys(compiled.namedGroups());
  if (name !== undefined) {
    return `has the named group "${name}", which not every engine accepts; write (…) or (?:…) instead`;
  }
  const weight = programWeight(compiled.re2Input.prog as Program);
  if (weight > MAX_WEIGHT) {
    return `too large once compiled (${weight} steps, at most ${MAX_WEIGHT}): a repeated Unicode class such as \\pL{500} expands to hundreds of steps per copy; use a narrower class such as [a-z0-9] or a smaller count`;
  }
  return undefined;
}

/** Instructions, a character class counting as its number of rune ranges (others hold no runes). */
function programWeight(program: Program): number {
  let weight = 0;
  for (const inst of program.inst) weight += Math.max(1, inst.runes.length / 2);
  return weight;
}
