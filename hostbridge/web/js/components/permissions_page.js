// The permissions page (issue 14): the header's "Permissions" button opens a panel listing, per
// app, each capability it declares, what applies now (allowed, blocked, ask every time), and
// whether and when the user granted it; Revoke (back to asking), Block and Allow change it
// (`grant.set`), which takes effect on the app's next request. The list is asked when the panel
// opens (`grants.list`) and comes again whenever a grant changes (`shell.grants`). Escape or
// Close shuts it, and focus goes back to the button. It also offers to let this page show
// system notifications (the browser asks, on that click).

import { capabilityLabel } from "./permission_prompt.js";
import { reframe } from "./surface.js";
import { byTestId, el } from "../core/util.js";

const POLICY_TEXT = { allow: "Allowed", deny: "Blocked", ask: "Asks every time" };
// "Always allow" is never offered for these: they ask every time (lineup.sdk.capabilities).
const NEVER_REMEMBERED = new Set(["app.install", "app.manage"]);

const when = (seconds) =>
  new Date(seconds * 1000).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });

export function createPermissionsPage(ctx) {
  const toggle = byTestId("permissions-button");
  const page = byTestId("permissions-page");
  const list = el("div", "permissions-list", "permissions-list");
  const empty = el("p", "permissions-empty", "permissions-empty", "No installed app asks for any permission.");
  const heading = el("h2", "permissions-heading", "permissions-heading", "Permissions");
  heading.id = "permissions-heading";
  heading.tabIndex = -1;
  const close = el("button", "permissions-close", "permissions-close", "Close");
  close.type = "button";
  const system = el("button", "permissions-system", "permissions-notifications", "Allow system notifications");
  system.type = "button";
  const top = el("div", "permissions-top");
  top.append(heading, close);
  page.append(top, system, empty, list);
  let version = -1;
  let appsKey = null; // the launcher's apps as last seen: a change (an install) asks again

  function setOpen(open) {
    page.hidden = !open;
    toggle.setAttribute("aria-expanded", String(open));
    if (open) {
      version = -1;
      ctx.send({ type: "grants.list" });
      render(ctx.state);
      heading.focus();
    } else if (page.contains(document.activeElement) || document.activeElement === document.body) {
      toggle.focus();
    }
  }

  toggle.addEventListener("click", () => setOpen(page.hidden));
  close.addEventListener("click", () => setOpen(false));
  page.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.stopPropagation();
      setOpen(false);
    }
  });
  system.addEventListener("click", () => {
    if (!("Notification" in window)) return;
    window.Notification.requestPermission().then(() => render(ctx.state));
  });

  function row(grant) {
    const item = el("div", "grant-row", "grant-row");
    item.setAttribute("data-app-scope", grant.app_scope);
    item.setAttribute("data-capability", grant.capability);
    item.setAttribute("data-policy", grant.policy);
    const label = capabilityLabel(grant.capability);
    const name = el("p", "grant-name", "grant-name", `${label} (${String(grant.capability).slice(0, 100)})`);
    const status = el("p", "grant-policy", "grant-policy", POLICY_TEXT[grant.policy] ?? grant.policy);
    let origin;
    if (grant.supported === false) origin = "Not available on this computer";
    else if (grant.granted && Number.isFinite(grant.granted_at)) {
      origin = `Set by you on ${when(grant.granted_at)}`;
      if (Number.isFinite(grant.expires_at)) origin += `, until ${when(grant.expires_at)}`;
    } else origin = "Not set by you";
    const since = el("p", "grant-origin", "grant-origin", origin);
    const actions = el("div", "grant-actions");
    const set = (policy, text, testId) => {
      const b = el("button", "grant-button", testId, text);
      b.type = "button";
      b.setAttribute("aria-label", `${text}: ${label} for ${grant.app_title || grant.app_scope}`);
      b.addEventListener("click", () => {
        const sent = ctx.send({
          type: "grant.set",
          app_scope: grant.app_scope,
          capability: grant.capability,
          policy,
        });
        // A page the grant shaped is framed anew: a revoked network is gone at once.
        if (sent) reframe(grant.app_scope, grant.capability, policy);
      });
      actions.append(b);
    };
    if (grant.granted) set("ask", "Revoke", "grant-revoke");
    if (grant.policy !== "deny") set("deny", "Block", "grant-block");
    if (grant.policy !== "allow" && !NEVER_REMEMBERED.has(grant.capability)) {
      set("allow", "Allow", "grant-allow");
    }
    item.append(name, status, since, actions);
    return item;
  }

  function render(state) {
    const notifications = "Notification" in window ? window.Notification.permission : "denied";
    system.hidden = notifications !== "default";
    const apps = JSON.stringify(state.launchable ?? []);
    if (!page.hidden && appsKey !== null && apps !== appsKey) ctx.send({ type: "grants.list" });
    appsKey = apps;
    if (page.hidden || state.grantsVersion === version) return;
    version = state.grantsVersion;
    const grants = state.grants ?? [];
    empty.hidden = grants.length > 0;
    empty.textContent = state.grants === null ? "Loading…" : "No installed app asks for any permission.";
    const byApp = new Map();
    for (const grant of grants) {
      if (!byApp.has(grant.app_scope)) byApp.set(grant.app_scope, []);
      byApp.get(grant.app_scope).push(grant);
    }
    const hadFocus = list.contains(document.activeElement);
    const focusedId = hadFocus ? document.activeElement.getAttribute("data-testid") : null;
    const focusedRow = hadFocus ? document.activeElement.closest(".grant-row") : null;
    const key = focusedRow
      ? `${focusedRow.getAttribute("data-app-scope")}\u0000${focusedRow.getAttribute("data-capability")}`
      : null;
    const sections = [];
    for (const [scope, rows] of byApp) {
      const section = el("section", "grant-app", "grant-app");
      section.setAttribute("data-app-scope", scope);
      const title = String(rows[0].app_title || scope).slice(0, 200);
      section.append(el("h3", "grant-app-title", "grant-app-title", title), ...rows.map(row));
      sections.push(section);
    }
    list.replaceChildren(...sections);
    if (hadFocus) {
      // The row's buttons were rebuilt: focus stays on that row (its first button).
      const again = [...list.querySelectorAll(".grant-row")].find(
        (r) => `${r.getAttribute("data-app-scope")}\u0000${r.getAttribute("data-capability")}` === key,
      );
      const target =
        again?.querySelector(`[data-testid="${focusedId}"]`) ?? again?.querySelector("button");
      (target ?? heading).focus();
    }
  }

  return { render, open: () => setOpen(true) };
}
