// Where a BigQuery query can prune the partitions of its source tables (edge_logs and
// function_edge_logs, partitioned by day on `timestamp`): read from the analyzer's resolved tree,
// not from the text, so that no layout of the SQL changes the answer. BigQuery prunes by a filter
// that compares the partitioning column itself with a constant expression, as a conjunct of the
// WHERE: here, `<alias>.timestamp` compared (> >= < <=) with a parameter or a CAST of one, as an
// argument of the scan's top-level AND. A bound inside IFNULL, OR or CASE, or compared with an
// expression that computes (GREATEST, CASE, CURRENT_TIMESTAMP), is not one.
import type { GoogleSql, ResolvedNode } from "./googlesql.ts";

/** The tables partitioned by day on `timestamp`. */
export const PARTITIONED_TABLES: readonly string[] = ["edge_logs", "function_edge_logs"];

/** A prunable bound: `timestamp <op> CAST(@param AS TIMESTAMP)` (or the parameter itself). */
export interface TimeBound {
  side: "lower" | "upper";
  param: string;
}

/** One scan of a partitioned table and how its filter bounds the partitioning column. */
export interface PartitionedScan {
  table: string;
  /** The bounds BigQuery can prune with. */
  bounds: TimeBound[];
  /** Sides the filter bounds the column on in a form BigQuery does not prune by. */
  unprunable: ("lower" | "upper")[];
}

interface Node {
  kind: string;
  fields: Record<string, unknown>;
}

/** A oneof wrapper (`{ node: "kind", kind: {...} }`) down to its node, its `parent` fields merged in. */
function open(value: unknown): Node | undefined {
  if (!value || typeof value !== "object") return undefined;
  let kind = "";
  let current = value as ResolvedNode;
  while (typeof current.node === "string" && current[current.node]) {
    kind = current.node;
    current = current[kind] as ResolvedNode;
  }
  return { kind, fields: flatten(current) };
}

function flatten(node: ResolvedNode): Record<string, unknown> {
  const { parent, ...own } = node;
  return parent && typeof parent === "object"
    ? { ...flatten(parent as ResolvedNode), ...own }
    : own;
}

/** Every node of the tree, depth first, with the chain of nodes above it. */
function* nodes(value: unknown, above: Node[] = []): Generator<[Node, Node[]]> {
  if (Array.isArray(value)) {
    for (const item of value) yield* nodes(item, above);
    return;
  }
  const node = open(value);
  if (!node) return;
  if (node.kind) yield [node, above];
  const chain = node.kind ? [...above, node] : above;
  for (const child of Object.values(node.fields)) yield* nodes(child, chain);
}

// Scans a filter reaches its table through: the table's rows, joined with arrays or other tables.
const ROW_PRESERVING = new Set(["resolved_array_scan_node", "resolved_join_scan_node"]);

const COMPARISONS: Record<string, { side: "lower" | "upper"; flipped: "lower" | "upper" }> = {
  "ZetaSQL:$greater": { side: "lower", flipped: "upper" },
  "ZetaSQL:$greater_or_equal": { side: "lower", flipped: "upper" },
  "ZetaSQL:$less": { side: "upper", flipped: "lower" },
  "ZetaSQL:$less_or_equal": { side: "upper", flipped: "lower" },
};

function functionName(node: Node): string | undefined {
  return (node.fields.function as { name?: string } | undefined)?.name;
}

function args(node: Node): unknown[] {
  return (node.fields.argument_list as unknown[] | undefined) ?? [];
}

/** The arguments of a (nested) AND, or the expression itself. */
function conjuncts(expr: unknown): Node[] {
  const node = open(expr);
  if (!node) return [];
  if (functionName(node) === "ZetaSQL:$and") return args(node).flatMap(conjuncts);
  return [node];
}

function isColumn(value: unknown, columnId: string): boolean {
  const node = open(value);
  return (
    node?.kind === "resolved_column_ref_node" &&
    (node.fields.column as { column_id?: string }).column_id === columnId
  );
}

/** The parameter a constant expression of one parameter names: `@p` or `CAST(@p AS …)`. */
function parameterOf(value: unknown): string | undefined {
  const node = open(value);
  if (node?.kind === "resolved_parameter_node") return String(node.fields.name).toLowerCase();
  if (node?.kind === "resolved_cast_node") return parameterOf(node.fields.expr);
  return undefined;
}

/** The sides on which `conjunct` compares the column anywhere inside it. */
function comparedSides(conjunct: Node, columnId: string): ("lower" | "upper")[] {
  const sides = new Set<"lower" | "upper">();
  for (const [node] of [[conjunct, []] as [Node, Node[]], ...nodes(conjunct.fields)]) {
    const comparison = COMPARISONS[functionName(node) ?? ""];
    const [left, right] = args(node);
    if (comparison && isColumn(left, columnId)) sides.add(comparison.side);
    if (comparison && isColumn(right, columnId)) sides.add(comparison.flipped);
    if (functionName(node) === "ZetaSQL:$equal" && args(node).some((a) => isColumn(a, columnId))) {
      sides.add("lower").add("upper");
    }
  }
  return [...sides];
}

/** The prunable bound a conjunct is, if it is one. */
function boundOf(conjunct: Node, columnId: string): TimeBound | undefined {
  const comparison = COMPARISONS[functionName(conjunct) ?? ""];
  const [left, right] = args(conjunct);
  if (!comparison) return undefined;
  const param = isColumn(left, columnId)
    ? parameterOf(right)
    : isColumn(right, columnId)
      ? parameterOf(left)
      : undefined;
  if (param === undefined) return undefined;
  return { side: isColumn(left, columnId) ? comparison.side : comparison.flipped, param };
}

/** Each scan of a partitioned table in a resolved query, with the bounds its filter puts on it. */
export function partitionedScans(statement: ResolvedNode): PartitionedScan[] {
  const scans: PartitionedScan[] = [];
  for (const [node, above] of nodes(statement)) {
    if (node.kind !== "resolved_table_scan_node") continue;
    const table = (node.fields.table as { name: string }).name.toLowerCase();
    if (!PARTITIONED_TABLES.includes(table)) continue;
    const columns = node.fields.column_list as { column_id: string; name: string }[];
    const columnId = columns.find((c) => c.name === "timestamp")?.column_id;
    // The nearest filter over the table's rows: above it only joins and array scans.
    let filter: Node | undefined;
    for (const scan of [...above].reverse()) {
      if (scan.kind === "resolved_filter_scan_node") {
        filter = scan;
        break;
      }
      if (!ROW_PRESERVING.has(scan.kind)) break;
    }
    const parts = filter && columnId ? conjuncts(filter.fields.filter_expr) : [];
    const bounds = parts.flatMap((part) => boundOf(part, columnId as string) ?? []);
    const unprunable = new Set(
      parts
        .filter((part) => !boundOf(part, columnId as string))
        .flatMap((part) => comparedSides(part, columnId as string)),
    );
    scans.push({ table, bounds, unprunable: [...unprunable] });
  }
  return scans;
}

const resolved = new Map<string, Promise<PartitionedScan[]>>();

/** partitionedScans of a SQL text, analysed once per text. */
export function scansOf(engine: GoogleSql, sql: string): Promise<PartitionedScan[]> {
  let found = resolved.get(sql);
  if (!found) {
    found = engine.resolve(sql).then(partitionedScans);
    resolved.set(sql, found);
    found.catch(() => resolved.delete(sql));
  }
  return found;
}
