// A form for one endpoint, built from its catalog entry (GET /api/endpoints): required marks,
// allowed (or suggested) values as selects, timestamps as datetime inputs (UTC), what an optional
// parameter left empty means (its default) in the empty field or choice. It
// does not validate: the service does, and its 400 details are shown beside the fields they name.
import { h } from "./dom.js";
import { rangePicker } from "./range.js";
import { asInputTimestamp, asUtcTimestamp } from "./utc-input.js";
import { visibleString, visibleText } from "./visible-text.js";

/** A default as a query string would give it: a string as it is, anything else as JSON. */
const defaultText = (value) =>
  visibleString(typeof value === "string" ? value : JSON.stringify(value));

function input(param, value, fieldId) {
  const common = { id: fieldId, name: param.name, required: param.required };
  // An empty field is left out of the query, so the service applies the default: shown in it.
  const unset = param.default === undefined ? undefined : defaultText(param.default);
  // Allowed values are the only ones: a select. A required parameter's suggested values too (a
  // span that reads any other value as its longest loses nothing by it). An optional one's
  // suggestions (a log's filters) are offered as a datalist, and any other value may be typed.
  const choices = param.allowed ?? (param.required ? param.examples : undefined);
  if (param.examples && !choices) {
    const listId = `${fieldId}.suggestions`;
    const field = h("input", {
      ...common,
      type: "text",
      spellcheck: "false",
      list: listId,
      ...(unset !== undefined && { placeholder: unset }),
    });
    field.value = value;
    const suggestions = h(
      "datalist",
      { id: listId },
      ...param.examples.map((v) => h("option", { value: v, label: visibleString(v) })),
    );
    return [field, suggestions];
  }
  if (choices) {
    const options = param.required ? choices : ["", ...choices];
    const select = h(
      "select",
      common,
      ...options.map((v) =>
        h(
          "option",
          { value: v },
          v === "" && unset !== undefined ? `default (${unset})` : visibleString(v) || "—",
        ),
      ),
    );
    select.value = value;
    return [select];
  }
  if (param.format === "date-time") {
    const field = h("input", { ...common, type: "datetime-local", step: 1 });
    field.value = value && asInputTimestamp(value);
    return [field, h("span", { class: "unit" }, "UTC")];
  }
  const field = h("input", {
    ...common,
    type: "text",
    spellcheck: "false",
    ...(unset !== undefined && { placeholder: unset }),
  });
  field.value = value;
  return [field];
}

// A range's own parameters besides from and to, which the picker gives: sent with a range only.
const RANGE_OPTIONS = ["bucket", "max_points"];

/**
 * The form of `endpoint`, filled with its example values. `query(now)` gives the query string to
 * send (fixed params are left to the service, empty optional ones left out; a range picked, its
 * from and to at `now` in place of the span parameter); `moving()`, whether the range picked moves
 * with now; `showDetails(details)` puts each 400 detail beside its field and returns those that
 * name no field.
 */
export function endpointForm(endpoint) {
  const example = new URLSearchParams(endpoint.example.split("?")[1] ?? "");
  const fixed = endpoint.fixed_params ?? {};
  const range = endpoint.range ? rangePicker(endpoint) : undefined;
  // A page cursor comes from an answer's Link header, for scripts; the page shows the first page.
  // A range's from and to come from its picker. The span parameter a range stands in for is
  // optional only for a range: without one, the form asks for it as the endpoint always has.
  const params = endpoint.params
    .filter((param) => param.name !== "cursor" && !(range && ["from", "to"].includes(param.name)))
    .map((param) =>
      param.name === endpoint.range?.instead_of ? { ...param, required: true } : param,
    );
  const fields = params.map((param) => {
    const fieldId = `${endpoint.name}.${param.name}`;
    const label = h(
      "label",
      { for: fieldId },
      ...visibleText(param.name),
      param.required ? h("abbr", { class: "required", title: "required" }, "*") : "",
    );
    const controls =
      param.name in fixed
        ? [h("input", { id: fieldId, name: param.name, value: fixed[param.name], disabled: true })]
        : input(param, example.get(param.name) ?? "", fieldId);
    const error = h("span", { class: "field-error", "data-error-for": param.name, role: "alert" });
    return h(
      "div",
      { class: "field", "data-param": param.name, title: visibleString(param.description ?? "") },
      label,
      ...controls,
      error,
    );
  });
  const form = h(
    "form",
    { class: "params", novalidate: true },
    ...fields,
    ...(range?.elements ?? []),
    h("button", { type: "submit" }, "Run"),
  );

  // A range stands in for the span parameter, and bucket and max_points go with it only: the ones
  // not sent are greyed out (those the scope fixes stay so).
  const showRange = () => {
    const ranged = range.picked();
    const { instead_of: span } = endpoint.range;
    const toggled = [
      ...(span ? [[span, ranged]] : []),
      ...RANGE_OPTIONS.map((name) => [name, !ranged]),
    ];
    for (const [name, off] of toggled) {
      const field = form.elements.namedItem(name);
      if (field && !(name in fixed)) field.disabled = off;
    }
  };
  if (range) {
    range.onChange(showRange);
    showRange();
  }

  const query = (now = Date.now()) => {
    const search = new URLSearchParams();
    for (const param of params) {
      const field = form.elements.namedItem(param.name);
      if (!field || field.disabled) continue;
      const value =
        field.type === "datetime-local" && field.value ? asUtcTimestamp(field.value) : field.value;
      if (value !== "" || param.required) search.set(param.name, value);
    }
    for (const [name, value] of range?.params(now) ?? []) search.set(name, value);
    return search.toString();
  };
  const moving = () => range?.moving() ?? false;

  const clearDetails = () => {
    for (const error of form.querySelectorAll(".field-error")) error.textContent = "";
    for (const field of form.querySelectorAll(".field")) field.classList.remove("invalid");
  };

  const showDetails = (details) => {
    clearDetails();
    return details.filter(({ param, message }) => {
      // A hidden field (a custom range's bound, when a "last" one is picked) is no place for it.
      const field = form.querySelector(`.field[data-param="${CSS.escape(param)}"]`);
      if (!field || field.hidden) return true;
      field.classList.add("invalid");
      const error = field.querySelector(".field-error");
      error.textContent = error.textContent ? `${error.textContent}; ${message}` : message;
      return false;
    });
  };

  return { form, query, moving, showDetails, clearDetails };
}
