// Rows as a table, newest first when they have a timestamp; nested values (logs.all's metadata)
// collapsed in an expandable cell. Cells opened stay open when the table is redrawn.
import { h } from "./dom.js";

const SUMMARY_LENGTH = 90;

// Shorter values (ids, timestamps, numbers) stay on one line; longer text wraps.
const LONG_TEXT = 40;

function cell(value, key, open) {
  if (value === null || typeof value !== "object") {
    const text = value === null ? "" : String(value);
    return h("td", { class: text.length > LONG_TEXT ? "long" : undefined }, text);
  }
  const compact = JSON.stringify(value);
  const summary =
    compact.length > SUMMARY_LENGTH ? `${compact.slice(0, SUMMARY_LENGTH)}…` : compact;
  const details = h(
    "details",
    { "data-key": key, open: open.has(key) },
    h("summary", {}, summary),
    h("pre", {}, JSON.stringify(value, null, 2)),
  );
  return h("td", { class: "nested" }, details);
}

export function tableView() {
  const element = h("div", { class: "table" });
  const draw = (rows) => {
    const open = new Set([...element.querySelectorAll("details[open]")].map((d) => d.dataset.key));
    const columns = [...new Set(rows.flatMap((row) => Object.keys(row)))];
    // RFC 3339 UTC strings of one width sort as text.
    const ordered = columns.includes("timestamp")
      ? rows.toSorted((a, b) =>
          a.timestamp < b.timestamp ? 1 : a.timestamp > b.timestamp ? -1 : 0,
        )
      : rows;
    const body = ordered.map((row, index) =>
      h(
        "tr",
        {},
        ...columns.map((column) => cell(row[column] ?? null, `${row.id ?? index}/${column}`, open)),
      ),
    );
    element.dataset.points = String(rows.length);
    element.replaceChildren(
      rows.length === 0
        ? h("p", { class: "empty" }, "No rows.")
        : h(
            "table",
            {},
            h("thead", {}, h("tr", {}, ...columns.map((column) => h("th", {}, column)))),
            h("tbody", {}, ...body),
          ),
    );
  };
  return { element, draw };
}
