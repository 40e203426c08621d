// The time-range picker of an endpoint that answers any time range (its listing's `range`): a last
// 15 minutes … 7 days that moves with now, or a custom from/to (datetime inputs read as UTC), sent
// as `from` and `to` in epoch milliseconds in place of the span parameter. None picked: the span
// parameter's form, as the endpoint answers without a range.
import { h } from "./dom.js";
import { asUtcTimestamp } from "./utc-input.js";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const PRESETS = [
  ["last 15 minutes", 15 * MINUTE],
  ["last hour", HOUR],
  ["last 6 hours", 6 * HOUR],
  ["last 24 hours", 24 * HOUR],
  ["last 7 days", 7 * 24 * HOUR],
];
const CUSTOM = "custom";

const epochMs = (value) => Date.parse(asUtcTimestamp(value));

/** A datetime input for `param` of a custom range, with the field its 400 details go beside. */
function customField(endpoint, param) {
  const fieldId = `${endpoint.name}.range.${param}`;
  const field = h("input", { id: fieldId, type: "datetime-local", step: 1, class: "range-bound" });
  const element = h(
    "div",
    { class: "field", "data-param": param, hidden: true },
    h("label", { for: fieldId }, param),
    field,
    h("span", { class: "unit" }, "UTC"),
    h("span", { class: "field-error", "data-error-for": param, role: "alert" }),
  );
  return { field, element };
}

/**
 * The picker of `endpoint`: `elements` to put in its form; `picked()`, whether a range is; `moving()`,
 * whether it is one that moves with now; `params(now)`, the `from` and `to` to send (none without a
 * range); `onChange(listener)`.
 */
export function rangePicker(endpoint) {
  const fieldId = `${endpoint.name}.range`;
  const insteadOf = endpoint.range.instead_of;
  const select = h(
    "select",
    { id: fieldId, class: "range-picker" },
    h("option", { value: "" }, insteadOf ? `— (by ${insteadOf})` : "—"),
    ...PRESETS.map(([label, ms]) => h("option", { value: String(ms) }, label)),
    h("option", { value: CUSTOM }, "custom from/to"),
  );
  const picker = h(
    "div",
    {
      class: "field range",
      title: `Any time range, in place of ${insteadOf ?? "the span"}: sent as from and to`,
    },
    h("label", { for: fieldId }, "range"),
    select,
  );
  const from = customField(endpoint, "from");
  const to = customField(endpoint, "to");
  select.addEventListener("change", () => {
    from.element.hidden = to.element.hidden = select.value !== CUSTOM;
  });

  const picked = () => select.value !== "";
  const moving = () => picked() && select.value !== CUSTOM;
  const params = (now) => {
    if (!picked()) return [];
    if (moving()) {
      return [
        ["from", String(now - Number(select.value))],
        ["to", String(now)],
      ];
    }
    // Left empty, the service says so beside the field; `to` empty is now.
    return [
      ["from", from.field.value ? String(epochMs(from.field.value)) : ""],
      ...(to.field.value ? [["to", String(epochMs(to.field.value))]] : []),
    ];
  };
  const onChange = (listener) => select.addEventListener("change", listener);
  return { elements: [picker, from.element, to.element], picked, moving, params, onChange };
}

/** `search` (with `from` and `to` in epoch ms) moved to end at `now`, the same length. */
export function movedRange(search, now) {
  const moved = new URLSearchParams(search);
  const length = Number(moved.get("to")) - Number(moved.get("from"));
  moved.set("from", String(now - length));
  moved.set("to", String(now));
  return moved.toString();
}
