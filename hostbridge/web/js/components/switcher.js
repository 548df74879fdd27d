// The app switcher: one tab per live instance, the foreground marked, and a close button for
// every instance but the chat. A tab is labelled by its view's top-level `label` (say, the
// task's title) when it has one, else by its app's title; the tabs keep the order in which
// the instances started (the sub-session's `opened_at`, else when this Shell first saw it),
// never the focus stack's, so switching does not move them. Rebuilt from the state, keeping
// keyboard focus on the same instance's button; arrow keys move between tabs.

import { byTestId, el } from "../core/util.js";

const MAX_LABEL = 80;
const INSIST_MS = 2000; // an app that asks before a close has this long to ask the user

export function instanceTitle(state, instance) {
  const entry = state.views.get(instance.instance_id);
  const label = entry?.view?.label;
  if (typeof label === "string" && label.trim()) return label.trim().slice(0, MAX_LABEL);
  return typeof instance.title === "string" && instance.title
    ? instance.title
    : String(instance.app_scope);
}

function startedAt(state, instance) {
  for (const session of state.sessions.values()) {
    if (session.instance_id === instance.instance_id) return [session.opened_at, 0];
  }
  return state.firstSeen.get(instance.instance_id) ?? [Infinity, 0];
}

export function tabOrder(state) {
  const keyed = state.instances.map((instance, index) => {
    const [at, seen] = startedAt(state, instance);
    return { instance, key: [instance.app_scope === "chat" ? 0 : 1, at, seen, index] };
  });
  keyed.sort((a, b) => {
    for (let i = 0; i < a.key.length; i += 1) {
      if (a.key[i] !== b.key[i]) return a.key[i] < b.key[i] ? -1 : 1;
    }
    return 0;
  });
  return keyed.map((k) => k.instance);
}

export function createSwitcher(ctx) {
  const nav = byTestId("app-switcher");
  const list = nav.querySelector(".app-list");
  let shown = null;

  list.addEventListener("keydown", (event) => {
    if (event.key !== "ArrowRight" && event.key !== "ArrowLeft") return;
    const tabs = [...list.querySelectorAll('[data-testid="app-tab"]')];
    const at = tabs.indexOf(document.activeElement);
    if (at < 0) return;
    event.preventDefault();
    const step = event.key === "ArrowRight" ? 1 : -1;
    tabs[(at + step + tabs.length) % tabs.length].focus();
  });

  function render(state) {
    const ordered = tabOrder(state);
    const waiting = ctx.waitingInstances(state);
    const rows = ordered.map((i) => [
      i.instance_id,
      i.app_scope,
      i.state,
      i.mode ?? null,
      instanceTitle(state, i),
      i.instance_id === state.foreground,
      waiting.has(i.instance_id),
    ]);
    const key = JSON.stringify(rows);
    if (key === shown) return;
    shown = key;
    const active = document.activeElement;
    const refocus =
      active && list.contains(active)
        ? [active.getAttribute("data-testid"), active.getAttribute("data-instance-id")]
        : null;
    nav.hidden = ordered.length === 0;
    list.replaceChildren(...ordered.map((i) => tab(state, i, waiting.has(i.instance_id))));
    if (refocus !== null) {
      const buttons = [...list.querySelectorAll("button")];
      const same = buttons.find(
        (b) =>
          b.getAttribute("data-testid") === refocus[0] &&
          b.getAttribute("data-instance-id") === refocus[1],
      );
      const target = same ?? buttons.find((b) => b.getAttribute("aria-current") === "page");
      if (target) target.focus();
    }
  }

  function tab(state, instance, waiting) {
    const li = el("li", "app");
    const inFront = instance.instance_id === state.foreground;
    const title = instanceTitle(state, instance);
    const button = el("button", "app-tab", "app-tab");
    button.type = "button";
    button.setAttribute("data-instance-id", instance.instance_id);
    button.setAttribute("data-app-scope", String(instance.app_scope));
    // The latest shell.apps decides what is in front, whatever an instance's own state says.
    const instanceState = String(instance.state ?? "background");
    const shownState = inFront
      ? "foreground"
      : instanceState === "foreground"
        ? "background"
        : instanceState;
    button.setAttribute("data-state", shownState);
    if (inFront) button.setAttribute("aria-current", "page");
    button.textContent = title;
    // A suspended instance has no process since the runtime restarted: opening it resumes it.
    if (shownState === "suspended") {
      button.append(el("span", "app-tab-note", "app-tab-note", " · Suspended — open to resume"));
      button.setAttribute("title", `${title} is suspended; open it to resume it`);
    }
    if (waiting) {
      button.append(el("span", "app-tab-waiting", "app-tab-waiting", " · waiting for your answer"));
    }
    // The chat's mode, when it is not the text one (seed 003 §5.1): seen from any app.
    if (typeof instance.mode === "string" && instance.mode !== "im") {
      const mode = instance.mode.charAt(0).toUpperCase() + instance.mode.slice(1);
      button.append(el("span", "app-tab-mode", "app-tab-mode", ` · ${mode}`));
    }
    button.addEventListener("click", () => {
      if (instance.instance_id !== state.foreground) {
        const sent = ctx.send({
          type: "ui.intent",
          intent: "focus",
          instance_id: instance.instance_id,
        });
        if (sent && shownState === "suspended") state.resuming.add(instance.instance_id);
      }
    });
    li.append(button);
    if (instance.app_scope !== "chat") {
      const close = el("button", "app-close", "app-close", "×");
      close.type = "button";
      close.setAttribute("data-instance-id", instance.instance_id);
      close.setAttribute("aria-label", `Close ${title}`);
      close.setAttribute("title", `Close ${title}`);
      close.addEventListener("click", () => {
        const frame = { type: "ui.intent", intent: "close", instance_id: instance.instance_id };
        ctx.send(insists(instance.instance_id) ? { ...frame, force: true } : frame);
      });
      li.append(close);
    }
    return li;
  }

  // An app may ask before it is closed (`app.close_requests.v1`): the runtime hands it the
  // close, and it asks the user or closes. So that no app can keep its tab for good, a close
  // the user repeats is forced when the app's question about it is still open (the user
  // closes anyway), or when the app asked nothing within INSIST_MS of the last close.
  const closeAsked = new Map(); // instance_id → when its close was last sent
  function insists(instanceId) {
    const now = Date.now();
    const before = closeAsked.get(instanceId);
    closeAsked.set(instanceId, now);
    while (closeAsked.size > 64) closeAsked.delete(closeAsked.keys().next().value);
    if (before === undefined) return false;
    const asked = [...ctx.state.interactions.values()].filter(
      (view) =>
        view.source === "miniapp" &&
        view.instance_id === instanceId &&
        view.created_at * 1000 >= before,
    );
    if (asked.some((view) => view.state === "pending" || view.state === "presented")) return true;
    return asked.length === 0 && now - before >= INSIST_MS;
  }

  return { render };
}
