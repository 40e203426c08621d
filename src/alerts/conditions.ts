// What makes a rule's condition true: a comparison on a cached answer's rows (its newest, or any),
// or at least N records within a window of the followed logs. Each gives the rows that made it true.
import type { EndpointDefinition } from "../endpoints/catalog.ts";
import type { Row } from "../engines/engine.ts";
import { parseIsoTimestamp } from "../time.ts";

export type Operator = ">=" | ">" | "<=" | "<" | "==" | "!=";

/** `<column> <op> <number>`, on a numeric column of the endpoint's rows. */
export interface Comparison {
  column: string;
  operator: Operator;
  value: number;
}

const COMPARISON = /^\s*([a-z_][a-z0-9_]*)\s*(>=|<=|==|!=|>|<)\s*(-?\d+(?:\.\d+)?)\s*$/;

const TESTS: Record<Operator, (a: number, b: number) => boolean> = {
  ">=": (a, b) => a >= b,
  ">": (a, b) => a > b,
  "<=": (a, b) => a <= b,
  "<": (a, b) => a < b,
  "==": (a, b) => a === b,
  "!=": (a, b) => a !== b,
};

/** The comparison `text` says; throws naming what is wrong with it. */
export function parseComparison(endpoint: EndpointDefinition, text: string): Comparison {
  const [, column = "", operator, value] = COMPARISON.exec(text) ?? [];
  if (operator === undefined) {
    throw new Error(
      `condition: "${text}" is not <column> <op> <number>, with op one of >=, >, <=, <, ==, !=`,
    );
  }
  const numeric = Object.entries(endpoint.columns.properties)
    .filter(([, schema]) => [schema.type].flat().some((t) => t === "integer" || t === "number"))
    .map(([name]) => name);
  if (!numeric.includes(column)) {
    throw new Error(
      `condition: ${endpoint.name} has no numeric column ${column}; it has ${numeric.join(", ")}`,
    );
  }
  return { column, operator: operator as Operator, value: Number(value) };
}

/** The rows that make the comparison true: of the newest row (by timestamp) alone, or of all. */
export function matchingRows(rows: Row[], which: "newest" | "any", comparison: Comparison): Row[] {
  const holds = (row: Row) => {
    const found = row[comparison.column];
    // A NULL (a bucket without times) makes no comparison true.
    return typeof found === "number" && TESTS[comparison.operator](found, comparison.value);
  };
  if (which === "any") return rows.filter(holds);
  const newest = rows.reduce<Row | undefined>(
    (latest, row) =>
      latest === undefined || String(row.timestamp) > String(latest.timestamp) ? row : latest,
    undefined,
  );
  return newest !== undefined && holds(newest) ? [newest] : [];
}

/**
 * The newest `count` records a followed feed delivered. Whether `count` of them fall within the
 * window needs no more: when the newest `count` do not, fewer than `count` do.
 */
export class RecordWindow {
  readonly #count: number;
  readonly #withinMicros: bigint;
  #newest: { micros: bigint; row: Row }[] = [];

  constructor(count: number, withinSeconds: number) {
    this.#count = count;
    this.#withinMicros = BigInt(withinSeconds) * 1_000_000n;
  }

  add(row: Row): void {
    const micros = parseIsoTimestamp(String(row.timestamp)) ?? 0n;
    this.#newest.push({ micros, row });
    this.#newest.sort((a, b) => (a.micros < b.micros ? 1 : a.micros > b.micros ? -1 : 0));
    this.#newest.length = Math.min(this.#newest.length, this.#count);
  }

  /** The records that make the condition true at `now` (µs), newest first; [] when it is false. */
  matching(now: bigint): Row[] {
    const inWindow = this.#newest.filter(({ micros }) => micros > now - this.#withinMicros);
    return inWindow.length >= this.#count ? inWindow.map(({ row }) => row) : [];
  }
}
