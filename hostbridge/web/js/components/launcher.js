// The Apps launcher: the header's "Apps" button opens a menu of the apps the user may open
// (the runtime's `launchable` in `shell.apps`: each enabled, active app but the chat, by
// title). Choosing one sends `ui.open {app_scope}` — the same frame as the `#open=` deep link:
// its topmost live instance comes to the front, else a new one opens — and closes the menu.
// A menu button (WAI-ARIA): Enter, Space or ArrowDown on the button opens it on the first app
// (ArrowUp on the last); ArrowDown/ArrowUp move within it (wrapping), Home/End go to the ends;
// Escape closes it and focus goes back to the button; Tab, a click elsewhere or focus leaving
// it closes it. The list comes again whenever the registry changes (an install, an enable, a
// disable, a remove): an app disabled leaves the menu, even while it is open.

import { byTestId, el } from "../core/util.js";

const MAX_TITLE = 80;

export function createLauncher(ctx) {
  const toggle = byTestId("apps-button");
  const menu = byTestId("apps-menu");
  const root = toggle.parentElement;
  let shown = null; // the apps as last rendered (a key)

  const items = () => [...menu.querySelectorAll('[role="menuitem"]:not([aria-disabled="true"])')];

  function setOpen(open, focusAt = 0) {
    menu.hidden = !open;
    toggle.setAttribute("aria-expanded", String(open));
    if (open) {
      render(ctx.state);
      const all = items();
      if (all.length > 0) all[(focusAt + all.length) % all.length].focus();
      else menu.querySelector('[role="menuitem"]')?.focus();
    }
  }

  function close({ refocus }) {
    if (menu.hidden) return;
    setOpen(false);
    if (refocus) toggle.focus();
  }

  toggle.addEventListener("click", () => {
    if (menu.hidden) setOpen(true);
    else close({ refocus: true });
  });
  toggle.addEventListener("keydown", (event) => {
    if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
    event.preventDefault();
    setOpen(true, event.key === "ArrowDown" ? 0 : -1);
  });
  menu.addEventListener("keydown", (event) => {
    const all = items();
    const at = all.indexOf(document.activeElement);
    let next = null;
    if (event.key === "ArrowDown") next = at + 1;
    else if (event.key === "ArrowUp") next = at < 0 ? -1 : at - 1;
    else if (event.key === "Home") next = 0;
    else if (event.key === "End") next = -1;
    else if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      close({ refocus: true });
      return;
    } else if (event.key === "Tab") {
      close({ refocus: false }); // focus moves on as Tab says
      return;
    }
    if (next === null) return;
    event.preventDefault();
    if (all.length > 0) all[(next + all.length) % all.length].focus();
  });
  root.addEventListener("focusout", (event) => {
    if (event.relatedTarget !== null && !root.contains(event.relatedTarget)) {
      close({ refocus: false });
    }
  });
  document.addEventListener("pointerdown", (event) => {
    if (!root.contains(event.target)) close({ refocus: false });
  });

  function item(app) {
    const li = el("li", "apps-menu-entry");
    li.setAttribute("role", "none");
    const title = String(app.title || app.app_scope).slice(0, MAX_TITLE);
    const button = el("button", "apps-menu-item", "apps-menu-item", title);
    button.type = "button";
    button.tabIndex = -1;
    button.setAttribute("role", "menuitem");
    button.setAttribute("data-app-scope", app.app_scope);
    button.addEventListener("click", () => {
      ctx.send({ type: "ui.open", app_scope: app.app_scope });
      close({ refocus: true });
    });
    li.append(button);
    return li;
  }

  function render(state) {
    const apps = state.launchable ?? [];
    const key = JSON.stringify(apps.map((a) => [a.app_scope, a.title]));
    if (key === shown) return;
    shown = key;
    const focusedScope = menu.contains(document.activeElement)
      ? document.activeElement.getAttribute("data-app-scope")
      : null;
    const at = focusedScope === null ? -1 : items().indexOf(document.activeElement);
    if (apps.length === 0) {
      const li = el("li", "apps-menu-entry");
      li.setAttribute("role", "none");
      const none = el("span", "apps-menu-empty", "apps-menu-empty", "No apps to open");
      none.setAttribute("role", "menuitem");
      none.setAttribute("aria-disabled", "true");
      none.tabIndex = -1;
      li.append(none);
      menu.replaceChildren(li);
    } else {
      menu.replaceChildren(...apps.map(item));
    }
    if (focusedScope !== null) {
      // Rebuilt while the user was in it: focus stays on that app, or the one now in its place.
      const all = items();
      const same = all.find((b) => b.getAttribute("data-app-scope") === focusedScope);
      const target = same ?? all[Math.min(at, all.length - 1)];
      if (target) target.focus();
      else menu.querySelector('[role="menuitem"]')?.focus();
    }
  }

  return { render };
}
