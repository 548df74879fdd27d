// The App Registry's table. The app sends the state (`apps`, each with the `actions` that
// apply to it, `available`: the local catalog's bundles, each installable or with its reason,
// `default_app`, `busy`, `status`), every word of it already in the user's terms (_view.py:
// titles, what an app is, how it stands; a code or a key id only in a details line); this
// frame draws it with text only
// (textContent, never markup) and sends the user's clicks as app events, each with a random
// `action_id` so that a re-sent click is the same request. While the app waits on the user's
// answer in the runtime's prompt (`busy`), every button is disabled.
(function () {
  "use strict";

  const bridge = window.LineUpBridge;
  const LABELS = {
    enable: "Enable",
    disable: "Disable",
    rollback: "Roll back",
    remove: "Remove",
    set_default: "Make default",
  };
  const rowsBody = document.getElementById("rows");
  const availableBody = document.getElementById("available");
  const availableSection = document.getElementById("available-section");
  const statusLine = document.getElementById("status");
  const statusCode = document.getElementById("status-code");
  const installButton = document.getElementById("install");
  const refreshButton = document.getElementById("refresh");

  let state = { apps: [], available: [], default_app: "chat", busy: null, status: null, listed: 0 };
  let sending = false; // a change (an install, a manage) on its way to the app
  // A refresh only reads: while it is on its way, its own button waits and every other button
  // stays usable, so the keyboard is never pushed off the button it is on.
  let refreshing = false;

  function actionId() {
    const bytes = new Uint8Array(12);
    crypto.getRandomValues(bytes);
    return Array.from(bytes, function (b) {
      return b.toString(16).padStart(2, "0");
    }).join("");
  }

  function text(tag, value, className) {
    const node = document.createElement(tag);
    node.textContent = value == null ? "" : String(value);
    if (className) node.className = className;
    return node;
  }

  // A small line for the curious: a code ("Details: <code>"), an app id, a signer's key.
  function details(value, prefix) {
    const line = text("span", prefix || "", "details");
    if (value) line.append(text("code", value));
    return line;
  }

  function toned(tag, value, tone) {
    return text(tag, value, "tone-" + String(tone || "info"));
  }

  // Each cell names its column (`data-label`): on a narrow screen a row is a stacked card whose
  // cells say what they are (registry.css), as the table's head is not shown there.
  const APP_COLUMNS = ["What it is", "Version", "Status", "Last change", "Actions"];
  const AVAILABLE_COLUMNS = ["Version", "Status"];

  function labelCells(row, labels) {
    Array.from(row.querySelectorAll(":scope > td")).forEach(function (cell, n) {
      if (labels[n]) cell.dataset.label = labels[n];
    });
  }

  function lastChange(last) {
    const cell = document.createElement("td");
    if (!last || typeof last !== "object" || !last.text) {
      cell.append(text("span", "—"));
      return cell;
    }
    cell.append(toned("span", last.text, last.tone));
    if (last.code) cell.append(details(String(last.code), "Details: "));
    return cell;
  }

  function busy() {
    return sending || state.busy != null;
  }

  function render() {
    // Keep the keyboard where it was: the same button, if it is still drawn.
    const active = document.activeElement;
    const keep = active && active.dataset ? active.dataset.key : null;
    rowsBody.replaceChildren();
    const apps = Array.isArray(state.apps) ? state.apps : [];
    apps.forEach(function (app) {
      if (!app || typeof app !== "object") return;
      const title = String(app.title || app.app_scope);
      const row = document.createElement("tr");
      row.dataset.app = String(app.app_scope);
      row.dataset.enabled = String(app.enabled === true);
      row.dataset.state = String(app.state);
      const name = document.createElement("th");
      name.scope = "row";
      name.append(text("span", title));
      if (app.default) name.append(text("span", "Default", "badge"));
      if (app.details) name.append(text("span", app.details, "details"));
      row.append(name);
      row.append(text("td", app.what || ""));
      row.append(text("td", app.version));
      const standing = document.createElement("td");
      standing.append(toned("span", app.status || "", app.status_tone));
      row.append(standing);
      row.append(lastChange(app.last));
      const cell = document.createElement("td");
      const group = document.createElement("div");
      group.className = "actions";
      group.setAttribute("role", "group");
      group.setAttribute("aria-label", "Actions for " + title);
      (Array.isArray(app.actions) ? app.actions : []).forEach(function (action) {
        if (!Object.prototype.hasOwnProperty.call(LABELS, action)) return;
        const button = text("button", LABELS[action], action === "remove" ? "danger" : "");
        button.type = "button";
        button.setAttribute("aria-label", LABELS[action] + " " + title);
        button.dataset.action = action;
        button.dataset.key = action + ":" + app.app_scope;
        button.disabled = busy();
        button.addEventListener("click", function () {
          send("registry.manage", { operation: action, app_scope: String(app.app_scope) });
        });
        group.append(button);
      });
      cell.append(group);
      row.append(cell);
      labelCells(row, APP_COLUMNS);
      rowsBody.append(row);
    });
    renderAvailable();
    installButton.disabled = busy();
    refreshButton.disabled = refreshing;
    const status = state.status && typeof state.status === "object" ? state.status : null;
    let code = "";
    if (state.busy != null) {
      statusLine.dataset.tone = "info";
      statusLine.textContent = "Waiting for your answer in LineUp's prompt…";
    } else if (status) {
      statusLine.dataset.tone = String(status.tone || "info");
      statusLine.textContent = String(status.text || "");
      code = status.code ? String(status.code) : "";
    } else {
      statusLine.dataset.tone = "info";
      statusLine.textContent = "";
    }
    statusCode.replaceChildren();
    statusCode.hidden = code === "";
    if (code) statusCode.append("Details: ", text("code", code));
    if (keep) {
      const again = document.querySelector('button[data-key="' + CSS.escape(keep) + '"]');
      if (again && !again.disabled) again.focus();
    }
    publish();
  }

  function renderAvailable() {
    availableBody.replaceChildren();
    const entries = Array.isArray(state.available) ? state.available : [];
    availableSection.hidden = entries.length === 0;
    entries.forEach(function (entry) {
      if (!entry || typeof entry !== "object") return;
      const scope = String(entry.app_scope || "");
      const title = String(entry.title || scope || "A file that is not an app");
      const version = String(entry.version || "");
      const row = document.createElement("tr");
      row.dataset.file = String(entry.file);
      row.dataset.catalogApp = scope;
      row.dataset.code = String(entry.code || "");
      const name = document.createElement("th");
      name.scope = "row";
      name.append(text("span", title));
      if (entry.details) name.append(text("span", entry.details, "details"));
      row.append(name);
      row.append(text("td", version || "—"));
      const cell = document.createElement("td");
      if (entry.installable === true) {
        const button = text("button", "Install", "primary");
        button.type = "button";
        button.setAttribute("aria-label", "Install " + title + " " + version);
        button.dataset.key = "catalog:" + String(entry.file);
        button.disabled = busy();
        button.addEventListener("click", function () {
          send("registry.install", { catalog_file: String(entry.file) });
        });
        cell.append(button);
      } else {
        const reason = toned("span", String(entry.reason || "Cannot be installed"), entry.tone);
        reason.classList.add("reason");
        cell.append(reason);
        // A refusal keeps its code for the curious; "Installed" is a success, not a refusal.
        if (entry.code && entry.tone === "error") cell.append(details(String(entry.code), "Details: "));
      }
      row.append(cell);
      labelCells(row, AVAILABLE_COLUMNS);
      availableBody.append(row);
    });
  }

  function publish() {
    // For tests and assistive tools: plain facts, never content.
    document.body.dataset.listed = String(state.listed || 0);
    document.body.dataset.busy = String(busy());
    document.body.dataset.apps = String(Array.isArray(state.apps) ? state.apps.length : 0);
    document.body.dataset.available = String(
      Array.isArray(state.available) ? state.available.length : 0
    );
  }

  function send(name, data) {
    const refresh = name === "registry.refresh";
    if (refresh ? refreshing : busy()) return;
    if (refresh) refreshing = true;
    else sending = true;
    render();
    const body = Object.assign({ action_id: actionId() }, data || {});
    bridge
      .request("lineup/event", { name: name, data: body })
      .catch(function (err) {
        statusLine.dataset.tone = "error";
        statusLine.textContent = "Could not reach the App Registry. Try again.";
        statusCode.replaceChildren("Details: ", text("code", String(err.code || "error")));
        statusCode.hidden = false;
      })
      .finally(function () {
        if (refresh) refreshing = false;
        else sending = false;
        render();
      });
  }

  function takeState(next) {
    if (!next || typeof next !== "object") return;
    state = next;
    render();
  }

  installButton.addEventListener("click", function () {
    send("registry.install", {});
  });
  refreshButton.addEventListener("click", function () {
    send("registry.refresh", {});
  });

  bridge.on("lineup/notifications/state", function (params) {
    takeState(params.state);
  });
  bridge.on("ui/notifications/tool-input", function () {});
  bridge.on("ui/notifications/tool-result", function () {});
  bridge.on("ui/resource-teardown", function () {
    return {};
  });

  async function start() {
    render();
    try {
      const init = await bridge.initialize({ name: "lineup-app-registry", version: "1.0.0" });
      const context = (init.hostContext && init.hostContext.lineup) || {};
      takeState(context.state);
      document.body.dataset.state = "ready";
      send("registry.refresh", {}); // what changed while this frame was not shown
      bridge.trackSize(); // the frame follows the page's height
    } catch (err) {
      document.body.dataset.state = "failed";
      statusLine.textContent = "The App Registry could not connect. Close it and open it again.";
      statusCode.replaceChildren("Details: ", text("code", String(err.code || "error")));
      statusCode.hidden = false;
    }
  }

  start();
})();
