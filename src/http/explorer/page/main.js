// The explorer: asks for the key once (kept in sessionStorage), lists the endpoints the key may
// call and gives each a panel (panel.js), which keeps itself current until the auto-refresh box is
// cleared, the key changes or the page is left. `?refresh=<seconds>` in the page's URL sets the
// refresh interval (default 10 s, at least 1 s).
import { describeError, forgetKey, get, getDocument, storedKey, storeKey } from "./api.js";
import { panel } from "./panel.js";

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
  // The document gives each endpoint's row (its columns' types), which says how it is drawn.
  const [answer, openApi] = await Promise.all([get("/api/endpoints"), getDocument()]);
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
  const options = { refreshSeconds: REFRESH_SECONDS, active: () => autoRefresh.checked };
  const rows = openApi?.components?.schemas ?? {};
  panels = answer.result.map((endpoint) => panel(endpoint, rows[`${endpoint.name}.row`], options));
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
  for (const p of panels) (autoRefresh.checked ? p.resume : p.pause)();
});
// Leaving the page closes its streams; coming back to it (from the back-forward cache) reopens them.
addEventListener("pagehide", () => {
  for (const p of panels) p.pause();
});
addEventListener("pageshow", (event) => {
  if (event.persisted && autoRefresh.checked) for (const p of panels) p.resume();
});
document.getElementById("forget-key").addEventListener("click", () => {
  forgetKey();
  keyInput.placeholder = PLACEHOLDER;
  keyNote.hidden = true;
  stopPanels();
});
if (storedKey()) start();
