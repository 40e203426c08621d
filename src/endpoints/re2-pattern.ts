// Which regexes the service accepts (usage.api-counts' `project`, logs.all's `search_regex`), and an
// operator's list term patterns, which run as RE2 too (termPattern). The engines run C++ RE2
// (BigQuery's, DuckDB's, and the GoogleSQL reference's in tests); validation runs re2js, a port that accepts some patterns they
// refuse, which then failed as 502s. The rule, probed on DuckDB and the reference engine with a bound
// pattern (every pattern it accepts ran on both):
// - at most 256 characters: a project-ref or message pattern needs far fewer, and it bounds
//   compile time;
// - valid re2js syntax. Lookaround, backreferences, possessive quantifiers, `\Z`, `\G` and counts
//   above 1000 fail there as in C++ RE2; re2js also refuses `\C` (any byte), which C++ RE2 takes
//   and a URL match never needs. `(?i)`, `\Q…\E`, lazy quantifiers, `\b`, `\z`, `\pL` all run;
// - no named groups: `(?<n>…)` fails on DuckDB and the reference ("invalid perl operator"),
//   `(?P<n>…)` runs there but support differs between RE2 versions, and REGEXP_CONTAINS has no use
//   for a name;
// - at most MAX_STEPS instructions as C++ RE2 compiles it (programSteps replays its UTF-8
//   compiler on re2js's program; DuckDB's "pattern too large" came at 710 000-740 000 of them for
//   every class tried, so the count tracks the engine's). The query matches every request URL in
//   the window, and the cost has a cliff where RE2 has no room left for its DFA and runs its NFA,
//   slower per byte the larger the program: usage.api-counts daily on the demo data took 0.02 s
//   with `default`, 0.03 s with `\pL{15}` (24 300 instructions), 1.3 s with `\pL{16}` (25 900).
//   Over Unicode categories, scripts, unions, case folds, `.`, scattered code points, long
//   literals and chains of optional steps, the cliff came at 13 000 instructions at the lowest (a
//   literal of 13 000 bytes, each its own DFA list: 7.9x, where 12 000 took 1.4x) and 37 000 at
//   the highest (`\p{Nd}{229}`); no pattern below its cliff reached 3x (bench/pattern-cost.ts).
//   The cap is under half the lowest: below it the costliest were chains of optional steps such
//   as `(?:\w?\W?){239}`, 1.7x (2.5x with both cores busy), and it accepts `\pL{3}`, `a{1000}`,
//   `.{499}` or `[a-z]{1000}`.
import { LRUCache } from "lru-cache";
import { RE2JS } from "re2js";

const MAX_LENGTH = 256;
const MAX_STEPS = 6000;

/** re2js's compiled program: public in its type declarations as `any`; this is the part read here. */
interface Program {
  inst: { runes: ArrayLike<number>; arg: number }[];
}

/** Why the engines would refuse `pattern`, as a sentence a person can act on; undefined when it is fine. */
export function re2PatternProblem(pattern: string): string | undefined {
  if (pattern.length > MAX_LENGTH) {
    return `longer than ${MAX_LENGTH} characters (${pattern.length}); a pattern such as ^https://default\\. or timeout|refused needs far fewer`;
  }
  return verdicts.memo(pattern).problem;
}

/** The instructions C++ RE2 compiles `pattern` to (what MAX_STEPS caps), counted up to past `limit`. */
export function re2PatternSteps(pattern: string, limit = Number.POSITIVE_INFINITY): number {
  return programSteps(RE2JS.compile(pattern).re2Input.prog as Program, limit);
}

// A dashboard polls with the same pattern; compiling it takes up to tens of milliseconds.
const verdicts = new LRUCache<string, { problem?: string }>({
  max: 500,
  memoMethod: (pattern) => ({ problem: compileProblem(pattern) }),
});

/**
 * An operator's pattern (a list parameter's term) compiled as RE2, which matches in time linear in
 * the text whatever the pattern (a JS RegExp backtracks: `^(a+)+$` over 28 characters took
 * seconds); `ignoreCase` matches it in any case. Throws re2js's error, naming what RE2 refuses.
 */
export function termPattern(pattern: string, ignoreCase: boolean): RE2JS {
  return RE2JS.compile(pattern, ignoreCase ? RE2JS.CASE_INSENSITIVE : 0);
}

/** Why RE2 cannot compile `pattern` (a backreference, lookaround...); undefined when it can. */
export function re2SyntaxProblem(pattern: string): string | undefined {
  return parsed(pattern).problem;
}

function parsed(pattern: string): { compiled: RE2JS; problem?: undefined } | { problem: string } {
  try {
    return { compiled: RE2JS.compile(pattern) };
  } catch (error) {
    return { problem: `not a valid RE2 regular expression: ${(error as Error).message}` };
  }
}

function compileProblem(pattern: string): string | undefined {
  const parse = parsed(pattern);
  if (parse.problem !== undefined) return parse.problem;
  const { compiled } = parse;
  const [name] = Object.keys(compiled.namedGroups());
  if (name !== undefined) {
    return `has the named group "${name}", which not every engine accepts; write (…) or (?:…) instead`;
  }
  if (programSteps(compiled.re2Input.prog as Program, MAX_STEPS) > MAX_STEPS) {
    return `too costly to run: it compiles to more than ${MAX_STEPS} steps, and every value in the window (a request URL, a log message) is matched against it (a Unicode class such as \\pL is 1600 steps, and \\pL{20} twenty times that); use a narrower class such as [a-z0-9] or a smaller count`;
  }
  return undefined;
}

const FOLD_CASE = 1; // re2js's RE2Flags.FOLD_CASE, on a rune instruction's arg

/** C++ RE2's instructions for re2js's program, counted until they are more than `limit`. */
function programSteps(program: Program, limit: number): number {
  const folded = new Map<number, number>();
  let steps = 0;
  for (const { runes, arg } of program.inst) {
    if (runes.length === 0) steps += 1;
    else if (runes.length > 1) steps += classSteps(runes);
    else if ((arg & FOLD_CASE) === 0) steps += utf8(runes[0] as number).length;
    else {
      const rune = runes[0] as number;
      const size = folded.get(rune) ?? foldedRuneSteps(rune);
      folded.set(rune, size);
      steps += size;
    }
    if (steps > limit) break;
  }
  return steps;
}

/**
 * A case-folded letter: C++ RE2 parses it as the class of its case variants, which re2js's class
 * parser lists when there are more than two (k: K, k and the Kelvin sign). Of two, one is an
 * ASCII byte range with a fold flag, or else two sequences about as long and their alternation.
 */
function foldedRuneSteps(rune: number): number {
  const program = RE2JS.compile(`(?i)[\\x{${rune.toString(16)}}]`).re2Input.prog as Program;
  const variants = program.inst.find((inst) => inst.runes.length > 0)?.runes ?? [];
  if (variants.length > 2) return classSteps(variants);
  return rune < 0x80 ? 1 : 2 * utf8(rune).length + 1;
}

interface ByteInst {
  /** An alternation of `out` and `out1`, else the byte range lo–hi (ASCII letters folded) then `out`. */
  alt: boolean;
  lo: number;
  hi: number;
  fold: boolean;
  out: number;
  out1: number;
}

/**
 * The instructions C++ RE2's compiler (re2/compile.cc, UTF-8, forward) emits for the class of
 * rune ranges `runes` (sorted [lo, hi] pairs): each range split into UTF-8 sequences of byte
 * ranges, merged into a trie on their leading bytes, with trailing byte ranges shared through a
 * cache and 80–10FFFF compiled as six instructions; when the class treats A–Z as a–z, upper-case
 * ranges are left to a fold flag on the lower-case ones.
 */
function classSteps(runes: ArrayLike<number>): number {
  const insts: ByteInst[] = [{ alt: false, lo: 0, hi: 0, fold: false, out: 0, out1: 0 }]; // 0: none
  let freed = 0;
  const cache = new Map<string, number>();
  const keyOf = (inst: ByteInst) => `${inst.lo} ${inst.hi} ${inst.fold} ${inst.out}`;
  const add = (inst: ByteInst) => insts.push(inst) - 1;
  const range = (lo: number, hi: number, fold: boolean, out: number): ByteInst => ({
    alt: false,
    lo,
    hi,
    fold,
    out,
    out1: 0,
  });
  const cached = (inst: ByteInst) => {
    const key = keyOf(inst);
    const id = cache.get(key) ?? add(inst);
    cache.set(key, id);
    return id;
  };
  const at = (id: number) => insts[id] as ByteInst;
  const isCached = (id: number) => cache.has(keyOf(at(id)));
  const sameRange = (a: number, b: number) =>
    !at(a).alt && at(a).lo === at(b).lo && at(a).hi === at(b).hi && at(a).fold === at(b).fold;

  // AddSuffixRecursive: merges the sequence starting at `id` into the trie at `root`.
  const merge = (root: number, id: number): number => {
    const top = at(root);
    let shared = top.alt ? top.out1 : root;
    if (!sameRange(shared, id))
      return add({ alt: true, lo: 0, hi: 0, fold: false, out: root, out1: id });
    if (isCached(shared)) {
      shared = add({ ...at(shared) });
      if (top.alt) top.out1 = shared;
      else root = shared;
    }
    const next = at(id).out;
    if (!isCached(id)) freed++;
    at(shared).out = merge(at(shared).out, next);
    return root;
  };
  let trie = 0;
  const addSequence = (id: number) => {
    trie = trie === 0 ? id : merge(trie, id);
  };

  // AddRuneRangeUTF8.
  const addRange = (lo: number, hi: number, fold: boolean): void => {
    if (lo > hi) return;
    if (lo === 0x80 && hi === 0x10ffff) {
      const cont1 = add(range(0x80, 0xbf, false, 0));
      addSequence(add(range(0xc2, 0xdf, false, cont1)));
      const cont2 = add(range(0x80, 0xbf, false, cont1));
      addSequence(add(range(0xe0, 0xef, false, cont2)));
      const cont3 = add(range(0x80, 0xbf, false, cont2));
      addSequence(add(range(0xf0, 0xf4, false, cont3)));
      return;
    }
    for (const max of [0x7f, 0x7ff, 0xffff]) {
      if (lo <= max && max < hi) {
        addRange(lo, max, fold);
        addRange(max + 1, hi, fold);
        return;
      }
    }
    if (hi < 0x80) {
      addSequence(add(range(lo, hi, fold, 0)));
      return;
    }
    for (let i = 1; i < 4; i++) {
      const m = (1 << (6 * i)) - 1; // the last i bytes of a sequence
      if ((lo & ~m) !== (hi & ~m)) {
        if ((lo & m) !== 0) {
          addRange(lo, lo | m, fold);
          addRange((lo | m) + 1, hi, fold);
          return;
        }
        if ((hi & m) !== m) {
          addRange(lo, (hi & ~m) - 1, fold);
          addRange(hi & ~m, hi, fold);
          return;
        }
      }
    }
    const low = utf8(lo);
    const high = utf8(hi);
    let id = 0;
    for (let i = low.length - 1; i >= 0; i--) {
      const inst = range(low[i] as number, high[i] as number, false, id);
      id = i === 0 || (low[i] === high[i] && i !== low.length - 1) ? add(inst) : cached(inst);
    }
    addSequence(id);
  };

  const ranges: [number, number][] = [];
  for (let i = 0; i + 1 < runes.length; i += 2)
    ranges.push([runes[i] as number, runes[i + 1] as number]);
  const contains = (rune: number) => ranges.some(([lo, hi]) => lo <= rune && rune <= hi);
  let foldsAscii = true;
  for (let upper = 0x41; upper <= 0x5a && foldsAscii; upper++) {
    foldsAscii = contains(upper) === contains(upper + 0x20);
  }
  for (const [lo, hi] of ranges) {
    if (foldsAscii && 0x41 <= lo && hi <= 0x5a) continue;
    const foldNeedless =
      (lo <= 0x41 && 0x7a <= hi) || hi < 0x41 || 0x7a < lo || (0x5a < lo && hi < 0x61);
    addRange(lo, hi, foldsAscii && !foldNeedless);
  }
  return insts.length - 1 - freed;
}

const encoder = new TextEncoder();

/** A rune's UTF-8 bytes; a surrogate as U+FFFD's, as C++ RE2 encodes it. */
function utf8(rune: number): Uint8Array {
  return encoder.encode(String.fromCodePoint(rune));
}
