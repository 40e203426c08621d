// Rows as a table, newest first when they have a timestamp; nested values (a log record's metadata)
// collapsed in an expandable cell. Cells opened stay open when the table is redrawn, or when
// records a live tail receives are added to it. Text shows its bidi controls rather than obeying them.
import { h } from "./dom.js";
import { visibleText } from "./visible-text.js";

const SUMMARY_LENGTH = 90;

// Shorter values (ids, timestamps, numbers) stay on one line; longer text wraps.
const LONG_TEXT = 40;

function cell(value, key, open) {
  if (value === null || typeof value !== "object") {
    const text = value === null ? "" : String(value);
    return h("td", { class: text.length > LONG_TEXT ? "long" : undefined }, ...visibleText(text));
  }
  const compact = JSON.stringify(value);
  const summary =
    compact.length > SUMMARY_LENGTH ? `${compact.slice(0, SUMMARY_LENGTH)}…` : compact;
  const details = h(
    "details",
    { "data-key": key, open: open.has(key) },
    h("summary", {}, ...visibleText(summary)),
    h("pre", {}, ...visibleText(JSON.stringify(value, null, 2))),
  );
  return h("td", { class: "nested" }, details);
}

// RFC 3339 UTC strings of one width sort as text.
const newestFirst = (rows) =>
  rows.toSorted((a, b) => (a.timestamp < b.timestamp ? 1 : a.timestamp > b.timestamp ? -1 : 0));

// What a live table keeps: the newest rows, so that a busy stream does not grow the page without end.
const LIVE_ROWS = 500;

/**
 * `draw(rows)` shows an answer's rows; `add(records)` puts records that arrived since among them
 * (by id, each once), keeping the newest LIVE_ROWS, and answers how many it added.
 */
export function tableView() {
  const element = h("div", { class: "table" });
  let shown = [];
  const render = (rows) => {
    shown = rows;
    const open = new Set([...element.querySelectorAll("details[open]")].map((d) => d.dataset.key));
    const columns = [...new Set(rows.flatMap((row) => Object.keys(row)))];
    const body = rows.map((row, index) =>
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
  const draw = (rows) => render(rows.some((row) => "timestamp" in row) ? newestFirst(rows) : rows);
  const add = (records) => {
    const ids = new Set(shown.map((row) => row.id));
    // A follow that starts before the newest row shown resends rows shown already.
    const fresh = records.filter((record) => {
      if (ids.has(record.id)) return false;
      ids.add(record.id);
      return true;
    });
    if (fresh.length > 0) render(newestFirst([...fresh, ...shown]).slice(0, LIVE_ROWS));
    return fresh.length;
  };
  return { element, draw, add };
}
