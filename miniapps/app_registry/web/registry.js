// The App Registry's table. The app sends the state (`apps`, each with the `actions` that
// apply to it, `available`: the local catalog's bundles, each installable or with its reason,
// `default_app`, `busy`, `status`); this frame draws it with text only
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
  const OPERATIONS = {
    install: "install",
    update: "update",
    enable: "enable",
    disable: "disable",
    rollback: "roll back",
    revoke: "revoke",
    remove: "remove",
    set_default: "make default",
  };

  const rowsBody = document.getElementById("rows");
  const availableBody = document.getElementById("available");
  const availableSection = document.getElementById("available-section");
  const statusLine = document.getElementById("status");
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

  function operationText(op) {
    if (!op || typeof op !== "object") return "—";
    let line = (OPERATIONS[op.kind] || String(op.kind)) + ": " + String(op.state);
    if (op.version) line += " (" + String(op.version) + ")";
    if (op.code) line += " — " + String(op.code);
    return line;
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
      name.append(text("span", app.app_scope, "scope"));
      row.append(name);
      row.append(text("td", app.version));
      row.append(text("td", app.kind));
      row.append(text("td", app.source));
      row.append(text("td", app.enabled ? "Enabled" : "Disabled"));
      row.append(text("td", app.state));
      row.append(text("td", operationText(app.operation)));
      row.append(text("td", app.predecessor || "—"));
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
      rowsBody.append(row);
    });
    renderAvailable();
    installButton.disabled = busy();
    refreshButton.disabled = refreshing;
    const status = state.status && typeof state.status === "object" ? state.status : null;
    if (state.busy != null) {
      statusLine.dataset.tone = "info";
      statusLine.textContent = "Waiting for your answer in LineUp's prompt…";
    } else if (status) {
      statusLine.dataset.tone = String(status.tone || "info");
      statusLine.textContent = String(status.text || "");
    } else {
      statusLine.dataset.tone = "info";
      statusLine.textContent = "";
    }
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
      const version = String(entry.version || "");
      const row = document.createElement("tr");
      row.dataset.file = String(entry.file);
      row.dataset.catalogApp = scope;
      row.dataset.code = String(entry.code || "");
      const name = document.createElement("th");
      name.scope = "row";
      name.append(text("span", scope || "(not a readable bundle)"));
      row.append(name);
      row.append(text("td", version || "—"));
      row.append(text("td", entry.key_id || "—", "key"));
      const cell = document.createElement("td");
      if (entry.installable === true) {
        const button = text("button", "Install", "primary");
        button.type = "button";
        button.setAttribute("aria-label", "Install " + scope + " " + version);
        button.dataset.key = "catalog:" + String(entry.file);
        button.disabled = busy();
        button.addEventListener("click", function () {
          send("registry.install", { catalog_file: String(entry.file) });
        });
        cell.append(button);
      } else {
        const reason = text("span", String(entry.reason || "cannot be installed"), "reason");
        cell.append(reason);
        if (entry.code) cell.append(text("span", String(entry.code), "code"));
      }
      row.append(cell);
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
        statusLine.textContent =
          "Could not reach the App Registry (" + (err.code || "error") + "); try again.";
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
      statusLine.textContent = "The App Registry could not connect (" + (err.code || "error") + ").";
    }
  }

  start();
})();
