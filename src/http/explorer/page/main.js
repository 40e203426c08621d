// The explorer: asks for the key once (kept in sessionStorage), lists the endpoints the key may
// call, and gives each a form, a view of its rows and a status line; every view refreshes itself
// with If-None-Match and redraws only when the answer changed, and an error leaves it dimmed and
// marked not current. `?refresh=<seconds>` in the page's URL sets the refresh interval (default
// 10 s, at least 1 s).
import { forgetKey, get, storedKey, storeKey } from "./api.js";
import { statsView, usageView } from "./charts.js";
import { h } from "./dom.js";
import { endpointForm } from "./form.js";
import { tableView } from "./table.js";

const VIEWS = { "functions.invocation-stats": statsView, "usage.api-counts": usageView };
const REFRESH_SECONDS = Math.max(
  1,
  Number(new URLSearchParams(location.search).get("refresh")) || 10,
);

const keyForm = document.getElementById("key-form");
const keyInput = document.getElementById("api-key");
const keyMessage = document.getElementById("key-message");
const keyNote = document.getElementById("key-note");
const noKey = document.getElementById("no-key");
const PLACEHOLDER = keyInput.placeholder;
const autoRefresh = document.getElementById("auto-refresh");
const endpoints = document.getElementById("endpoints");
document.getElementById("refresh-seconds").textContent = String(REFRESH_SECONDS);

const clock = (date) => `${date.toISOString().slice(11, 19)} UTC`;

/** The envelope's message as the page shows it: status, code, message and what to do next. */
function describeError(answer) {
  const { code, message } = answer.error;
  const retry = answer.retryAfter ? ` Retry after ${answer.retryAfter} s.` : "";
  return `${answer.status || "No answer"} ${code}: ${message}${retry}`;
}

/** The status line: what the last answer was and its X-Cache, Age and request id. */
function statusLine(answer, note) {
  const part = (field, label, value) =>
    value == null ? [] : [h("span", { "data-field": field }, `${label}${value}`)];
  const parts = [
    ...part("status", "HTTP ", answer.status),
    h("span", { "data-field": "note" }, note),
    ...part("x-cache", "X-Cache: ", answer.cache),
    ...part("age", "Age: ", answer.age == null ? null : `${answer.age} s`),
    ...part("request-id", "request id ", answer.requestId),
    h("span", {}, `at ${clock(new Date())}`),
  ];
  return parts.flatMap((span, i) => (i === 0 ? [span] : [" · ", span]));
}

/** One endpoint's section; `run()` sends its form, then it refreshes itself until `stop()`. */
function panel(endpoint) {
  const { form, query, showDetails, clearDetails } = endpointForm(endpoint);
  const view = (VIEWS[endpoint.name] ?? tableView)();
  const status = h("p", { class: "status", "aria-live": "polite" });
  const message = h("p", { class: "error", role: "alert", hidden: true });
  const staleLabel = h("p", { class: "stale-label", hidden: true });
  view.element.classList.add("view");
  const section = h(
    "section",
    { class: "endpoint", "data-endpoint": endpoint.name, "data-draws": "0" },
    h("h2", {}, endpoint.name),
    h("p", { class: "description" }, endpoint.description),
    form,
    status,
    message,
    staleLabel,
    view.element,
  );
  // What is refreshed: the last query sent, and the ETag of what is drawn when it is that query's.
  let last = { path: "", etag: null };
  let timer;
  let sent = 0;

  // What is drawn answered an earlier query, or one the service can no longer answer: it stays, dimmed
  // and labelled, until an answer comes (one that keeps or replaces it).
  const markCurrent = (current, reason = "") => {
    const drawn = section.dataset.draws !== "0";
    view.element.classList.toggle("stale", drawn && !current);
    staleLabel.hidden = !drawn || current;
    staleLabel.textContent = current ? "" : `not current: ${reason}`;
  };

  const schedule = (afterSeconds = REFRESH_SECONDS) => {
    clearTimeout(timer);
    if (autoRefresh.checked && last.path) timer = setTimeout(refresh, afterSeconds * 1000);
  };

  async function fetchAndShow(path, etag) {
    clearTimeout(timer);
    const mine = ++sent;
    const answer = await get(path, etag);
    // A Run pressed while a refresh was on its way: only the newest answer is shown.
    if (mine !== sent) return;
    message.hidden = !answer.error;
    if (answer.status === 304) {
      markCurrent(true);
      status.replaceChildren(...statusLine(answer, "not modified, kept what is drawn"));
    } else if (answer.error) {
      const unplaced = answer.error.details ? showDetails(answer.error.details) : [];
      const rest = unplaced.map((detail) => ` ${detail.param}: ${detail.message}.`).join("");
      message.textContent = `${describeError(answer)}${rest}`;
      markCurrent(false, describeError(answer));
      status.replaceChildren(...statusLine(answer, "error"));
      if (path !== last.path) last = { path, etag: null };
      // A refused query or key stays refused until the form or the key changes; only 429, 5xx
      // and an unreachable service are worth asking again, not before Retry-After.
      if (answer.status >= 400 && answer.status < 500 && answer.status !== 429) return;
      return schedule(Math.max(REFRESH_SECONDS, Number(answer.retryAfter) || 0));
    } else {
      clearDetails();
      last = { path, etag: answer.etag };
      view.draw(answer.result);
      section.dataset.draws = String(Number(section.dataset.draws) + 1);
      markCurrent(true);
      const rows = `${answer.result.length} rows${answer.truncated ? " (truncated)" : ""}`;
      status.replaceChildren(...statusLine(answer, rows));
    }
    schedule();
  }

  const run = () =>
    fetchAndShow(`/api/endpoints/${encodeURIComponent(endpoint.name)}?${query()}`, null);
  const refresh = () => fetchAndShow(last.path, last.etag);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    run();
  });
  const stop = () => {
    sent++;
    clearTimeout(timer);
  };
  return { section, run, schedule: () => schedule(), stop };
}

let panels = [];

function stopPanels() {
  for (const old of panels) old.stop();
  panels = [];
  endpoints.replaceChildren();
  noKey.hidden = false;
}

function note(text) {
  keyNote.textContent = text;
  keyNote.hidden = false;
}

async function start() {
  keyMessage.hidden = true;
  keyNote.hidden = true;
  stopPanels();
  const answer = await get("/api/endpoints");
  if (answer.error) {
    // A key the service does not know is not kept; one that is only throttled, or a service that
    // is down, is.
    if (answer.status === 401) {
      forgetKey();
      keyInput.placeholder = PLACEHOLDER;
    }
    keyMessage.textContent = describeError(answer);
    keyMessage.hidden = false;
    return;
  }
  keyInput.placeholder = "key in use (enter another to replace it)";
  noKey.hidden = true;
  panels = answer.result.map(panel);
  endpoints.replaceChildren(...panels.map((p) => p.section));
  for (const p of panels) p.run();
}

keyForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const key = keyInput.value.trim();
  keyInput.value = "";
  // An empty field is not a key: the one in use, if any, stays in use.
  if (!key) {
    note(storedKey() ? "The field was empty: still using the key in use." : "No key entered.");
    return;
  }
  storeKey(key);
  start();
});
autoRefresh.addEventListener("change", () => {
  for (const p of panels) p.schedule();
});
document.getElementById("forget-key").addEventListener("click", () => {
  forgetKey();
  keyInput.placeholder = PLACEHOLDER;
  keyNote.hidden = true;
  stopPanels();
});
if (storedKey()) start();
