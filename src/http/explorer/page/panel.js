// One endpoint's section: its form, the view of its rows (charts when its row is a time series,
// else a table) and a status line that says first how the view is kept current. A cached endpoint
// is watched: the service sends each new value as it stores it. A followable one with Live on is
// followed: each new record is added to the table. Anything else is polled, with If-None-Match, and
// so is a stream the service would not open (the status line says why), and a range that moves
// with now (a watch keeps one query). An error leaves what is drawn dimmed and marked not current.
import { describeError, get, isRefusal } from "./api.js";
import { timeSeriesView } from "./charts.js";
import { h } from "./dom.js";
import { endpointForm } from "./form.js";
import { movedRange } from "./range.js";
import { keepOpen } from "./sse.js";
import { tableView } from "./table.js";
import { timeSeriesOf } from "./time-series.js";
import { visibleText } from "./visible-text.js";

const WATCHING = ["watching", "watching (live)"];
const FOLLOWING = ["following", "live: following new records"];

// Records that arrive together (a catch-up sends many at once) are added to the table together.
const ADD_AFTER_MS = 200;

const clock = (date) => `${date.toISOString().slice(11, 19)} UTC`;

/** The value of a comment line `<name>: <value>` of a watch event: how fresh the value is. */
const comment = (event, name) =>
  event.comments.find((line) => line.startsWith(`${name}: `))?.slice(name.length + 2) ?? null;

/** The status line: how the view is kept current, then the last answer and its freshness. */
function statusLine(mode, shown) {
  const part = (field, label, value) =>
    value == null ? [] : [h("span", { "data-field": field }, `${label}${value}`)];
  const { answer = {}, note, at } = shown ?? {};
  const parts = [
    h("span", { "data-field": "mode" }, mode),
    ...part("status", "HTTP ", answer.status),
    ...part("note", "", note),
    ...part("x-cache", "X-Cache: ", answer.cache),
    ...part("cache-status", "Cache-Status: ", answer.cacheStatus),
    ...part("age", "Age: ", answer.age == null ? null : `${answer.age} s`),
    ...part("request-id", "request id ", answer.requestId),
    ...(at ? [h("span", {}, `at ${clock(at)}`)] : []),
  ];
  return parts.flatMap((span, i) => (i === 0 ? [span] : [" · ", span]));
}

/**
 * The section of `endpoint`, whose rows have the JSON Schema `row` (undefined: unknown, a table).
 * `run()` sends its form, then keeps the view current while `active()` (auto-refresh on);
 * `pause()` stops that and `resume()` takes it up again; `stop()` ends it. `refreshSeconds`: how
 * often it polls, and how long it waits before reopening a stream.
 */
export function panel(endpoint, row, { refreshSeconds, active }) {
  const { form, query, moving, showDetails, clearDetails } = endpointForm(endpoint);
  const series = timeSeriesOf(row, endpoint.time_columns);
  const view = series ? timeSeriesView(series) : tableView();
  const status = h("p", { class: "status", "aria-live": "polite" });
  const message = h("p", { class: "error", role: "alert", hidden: true });
  const staleLabel = h("p", { class: "stale-label", hidden: true });
  view.element.classList.add("view");
  const watchable = endpoint.cache != null;
  const live = endpoint.paging?.follow
    ? h("input", { type: "checkbox", class: "live-toggle" })
    : undefined;
  if (live) form.append(h("label", { class: "live" }, live, " Live"));
  const section = h(
    "section",
    { class: "endpoint", "data-endpoint": endpoint.name, "data-draws": "0" },
    h("h2", {}, ...visibleText(endpoint.name)),
    h("p", { class: "description" }, ...visibleText(endpoint.description)),
    form,
    status,
    message,
    staleLabel,
    view.element,
  );
  // What is shown: the query it answers and its ETag (a GET's, or a watch event's id).
  let last = { search: undefined, etag: null };
  // Where a live tail resumes (the id of the last record added to the table), and how many came.
  let cursor;
  let received = 0;
  let timer;
  let sent = 0;
  let closeStream;
  let pending = [];
  let addTimer;
  // How the view is kept current (first in the status line, and data-mode), and the last answer.
  let mode = "";
  let shown;
  // Whether the range asked for moves with now, as the form said at Run.
  let movingRange = false;

  const path = (suffix, search) =>
    `/api/endpoints/${encodeURIComponent(endpoint.name)}${suffix}?${search}`;
  const say = (kind, text) => {
    section.dataset.mode = kind;
    mode = text;
    status.replaceChildren(...statusLine(mode, shown));
  };
  const showStatus = (answer, note) => {
    shown = { answer, note, at: new Date() };
    status.replaceChildren(...statusLine(mode, shown));
  };
  const polling = (why) =>
    say("polling", `polling every ${refreshSeconds} s${why ? `: ${why}` : ""}`);
  const stopped = () => say("stopped", "not asked again until Run or a new key");

  // What is drawn answered an earlier query, or one the service can no longer answer: it stays, dimmed
  // and labelled, until an answer comes (one that keeps or replaces it).
  const markCurrent = (current, reason = "") => {
    const drawn = section.dataset.draws !== "0";
    view.element.classList.toggle("stale", drawn && !current);
    staleLabel.hidden = !drawn || current;
    staleLabel.textContent = current ? "" : `not current: ${reason}`;
  };

  const draw = (search, etag, rows) => {
    clearDetails();
    message.hidden = true;
    last = { search, etag };
    view.draw(rows);
    section.dataset.draws = String(Number(section.dataset.draws) + 1);
    markCurrent(true);
  };

  /** Asks for `search` by GET and shows the answer; resolves to it, or to nothing once superseded. */
  async function ask(search, etag) {
    clearTimeout(timer);
    const mine = ++sent;
    const answer = await get(path("", search), etag);
    // A Run pressed while a refresh was on its way: only the newest answer is shown.
    if (mine !== sent) return undefined;
    message.hidden = !answer.error;
    if (answer.status === 304) {
      markCurrent(true);
      showStatus(answer, "not modified, kept what is drawn");
    } else if (answer.error) {
      const unplaced = answer.error.details ? showDetails(answer.error.details) : [];
      const rest = unplaced.map((detail) => ` ${detail.param}: ${detail.message}.`).join("");
      message.textContent = `${describeError(answer)}${rest}`;
      markCurrent(false, describeError(answer));
      showStatus(answer, "error");
      if (search !== last.search) last = { search, etag: null };
    } else {
      draw(search, answer.etag, answer.result);
      showStatus(answer, `${answer.result.length} rows${answer.truncated ? " (truncated)" : ""}`);
    }
    return answer;
  }

  // What is asked again: the query shown, a moving range ending at the time of asking.
  const again = () => (movingRange ? movedRange(last.search, Date.now()) : last.search);

  const schedule = (seconds) => {
    clearTimeout(timer);
    if (active()) timer = setTimeout(() => poll(again(), last.etag), seconds * 1000);
  };

  /** Asks now, then again every interval; an error not before Retry-After, a refusal not at all. */
  async function poll(search, etag) {
    const answer = await ask(search, etag);
    if (!answer) return;
    if (!answer.error) return schedule(refreshSeconds);
    if (isRefusal(answer)) return stopped();
    schedule(Math.max(refreshSeconds, Number(answer.retryAfter) || 0));
  }

  /**
   * Keeps the stream at `streamPath` open, saying so as `kind` and handing each event and the
   * stream's opening answer to `onEvent`. A stream the service would not open gives way to polling
   * `search`, which says why.
   */
  function stream(search, streamPath, lastEventId, [kind, text], onEvent) {
    say("opening", "connecting");
    let opened;
    closeStream = keepOpen(streamPath, lastEventId, refreshSeconds, {
      open: (answer) => {
        opened = answer;
        say(kind, text);
      },
      event: (event) => onEvent(event, opened),
      reopening: (why) => say("reopening", `reconnecting in ${refreshSeconds} s: ${why}`),
      refused: (answer) => {
        closeStream = undefined;
        polling(describeError(answer));
        poll(search, last.etag);
      },
    });
  }

  /** A cached endpoint: each value the service stores for `search`, as it stores it. */
  function watch(search, etag) {
    last = { search, etag };
    stream(search, path("/watch", search), etag, WATCHING, (event, opened) => {
      if (event.type !== "result") return;
      const rows = JSON.parse(event.data).result;
      // A value that a reopened stream sends again is drawn already.
      if (event.id !== last.etag) draw(search, event.id, rows);
      showStatus(
        {
          status: opened.status,
          cacheStatus: comment(event, "cache-status"),
          age: comment(event, "age"),
          requestId: opened.requestId,
        },
        `${rows.length} rows`,
      );
    });
  }

  /**
   * A followable endpoint with Live on: its newest rows, then each record that arrives after them.
   * Its paging contract names the parameters that bound its window and the column rows are ordered
   * by, newest first.
   */
  async function follow(search) {
    const { window, order } = endpoint.paging;
    const followed = new URLSearchParams(search);
    // A follow runs on from its start: it refuses an end.
    followed.delete(window.end);
    if (cursor === undefined) {
      const answer = await ask(search, null);
      if (!answer) return;
      if (isRefusal(answer)) return stopped();
      // A follow starts at now: one that has no start of its own (from the form or the key's scope)
      // starts a millisecond before the newest row drawn, so that a record stored while the stream
      // opened is not missed; the rows sent again are shown already.
      const [newest] = order[0].split(" ");
      const times = (answer.result ?? []).map((row) => Date.parse(row[newest]));
      const given = [...followed.keys(), ...Object.keys(endpoint.fixed_params ?? {})];
      const starts = [window.start, window.since];
      if (times.length > 0 && !starts.some((param) => given.includes(param))) {
        followed.set(window.start, new Date(Math.max(...times) - 1).toISOString());
      }
    }
    stream(search, path("/follow", followed), cursor, FOLLOWING, (event, opened) => {
      // `start` says where the stream starts; its id is kept as a reopening's Last-Event-ID.
      if (event.type !== "message") return;
      pending.push(event);
      addTimer ??= setTimeout(() => addPending(opened), ADD_AFTER_MS);
    });
  }

  const addPending = (opened) => {
    addTimer = undefined;
    received += view.add(pending.map((event) => JSON.parse(event.data)));
    cursor = pending.at(-1).id;
    pending = [];
    markCurrent(true);
    showStatus(opened, `${view.element.dataset.points} rows, ${received} arrived live`);
  };

  /** Stops keeping the view current; an answer on its way is not shown. */
  const halt = () => {
    sent++;
    clearTimeout(timer);
    clearTimeout(addTimer);
    addTimer = undefined;
    pending = [];
    closeStream?.();
    closeStream = undefined;
  };

  /** Keeps `search` current, the way this panel does. */
  const keepCurrent = (search, etag) => {
    if (movingRange) {
      polling("the range moves with now");
      return poll(search, etag);
    }
    if (watchable) return watch(search, etag);
    if (live?.checked) return follow(search);
    polling();
    poll(search, etag);
  };

  const run = () => {
    halt();
    cursor = undefined;
    received = 0;
    movingRange = moving();
    const search = query();
    if (active()) return keepCurrent(search, null);
    say("paused", "paused");
    ask(search, null);
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    run();
  });
  // Live on follows the form as it is now; off, the table is polled again.
  live?.addEventListener("change", run);

  return {
    section,
    run,
    pause: () => {
      halt();
      say("paused", "paused");
    },
    resume: () => {
      halt();
      if (last.search !== undefined) keepCurrent(again(), last.etag);
    },
    stop: halt,
  };
}
