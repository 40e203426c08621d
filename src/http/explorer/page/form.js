// A form for one endpoint, built from its catalog entry (GET /api/endpoints): required marks,
// allowed (or suggested) values as selects, timestamps as datetime inputs (UTC). It
// does not validate: the service does, and its 400 details are shown beside the fields they name.
import { h } from "./dom.js";
import { visibleString, visibleText } from "./visible-text.js";

// datetime-local gives "2026-11-21T05:00" or "2026-11-21T05:00:30"; the page reads it as UTC.
const asUtcTimestamp = (value) => `${value.length === 16 ? `${value}:00` : value}Z`;
const asInputTimestamp = (iso) => iso.replace(/(\.\d+)?(Z|[+-]\d\d:\d\d)$/, "");

function input(param, value, fieldId) {
  const common = { id: fieldId, name: param.name, required: param.required };
  // Allowed values are the only ones: a select. A required parameter's suggested values too: the
  // one there is, invocation-stats' interval, reads any other value as 1day, so the list loses
  // nothing. An optional one's suggestions (logs.all's filters) are offered as a datalist, and any
  // other value may be typed.
  const choices = param.allowed ?? (param.required ? param.examples : undefined);
  if (param.examples && !choices) {
    const listId = `${fieldId}.suggestions`;
    const field = h("input", { ...common, type: "text", spellcheck: "false", list: listId });
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
      ...options.map((v) => h("option", { value: v }, visibleString(v) || "—")),
    );
    select.value = value;
    return [select];
  }
  if (param.format === "date-time") {
    const field = h("input", { ...common, type: "datetime-local", step: 1 });
    field.value = value && asInputTimestamp(value);
    return [field, h("span", { class: "unit" }, "UTC")];
  }
  const field = h("input", { ...common, type: "text", spellcheck: "false" });
  field.value = value;
  return [field];
}

/**
 * The form of `endpoint`, filled with its example values. `query()` gives the query string to send
 * (fixed params are left to the service, empty optional ones left out); `showDetails(details)`
 * puts each 400 detail beside its field and returns those that name no field.
 */
export function endpointForm(endpoint) {
  const example = new URLSearchParams(endpoint.example.split("?")[1] ?? "");
  const fixed = endpoint.fixed_params ?? {};
  // A page cursor comes from an answer's Link header, for scripts; the page shows the first page.
  const params = endpoint.params.filter((param) => param.name !== "cursor");
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
    h("button", { type: "submit" }, "Run"),
  );

  const query = () => {
    const search = new URLSearchParams();
    for (const param of params) {
      const field = form.elements.namedItem(param.name);
      if (!field || field.disabled) continue;
      const value =
        field.type === "datetime-local" && field.value ? asUtcTimestamp(field.value) : field.value;
      if (value !== "" || param.required) search.set(param.name, value);
    }
    return search.toString();
  };

  const clearDetails = () => {
    for (const error of form.querySelectorAll(".field-error")) error.textContent = "";
    for (const field of form.querySelectorAll(".field")) field.classList.remove("invalid");
  };

  const showDetails = (details) => {
    clearDetails();
    return details.filter(({ param, message }) => {
      const field = form.querySelector(`.field[data-param="${CSS.escape(param)}"]`);
      if (!field) return true;
      field.classList.add("invalid");
      const error = field.querySelector(".field-error");
      error.textContent = error.textContent ? `${error.textContent}; ${message}` : message;
      return false;
    });
  };

  return { form, query, showDetails, clearDetails };
}
