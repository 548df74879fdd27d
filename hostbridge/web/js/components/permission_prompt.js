// The runtime's own permission prompt (issue 14): not a standard interaction, and not an app's.
// A `<dialog>` of the Shell's own DOM opened with showModal(): it is in the top layer, so
// nothing in a Surface's iframe can draw over it or click it, and the page behind it is inert.
// Its text is text only (textContent): the app's title, the capability (a human label and its
// name), what the app says it is for, and the runtime's own `detail` line. Buttons: Deny (where
// focus starts: the safe default), Allow once, Always allow where the runtime lets the answer be
// remembered, and Block (the Permissions page's Block from here: the app is not asked again for
// this capability until the user lifts it there). Escape is Cancel. It shows the time left, and
// goes on its own when the runtime says it ended or it expires.
// Several pending prompts come one at a time, fairly: the next is the oldest of the app served
// longest ago, so one app's queue never holds another's question back (issue 27). The runtime
// bounds each app's waiting prompts, and after a Deny, Block or Escape it ends that app's other
// prompts of the capability and does not ask again for a while: the dialog closes, and the
// header's Permissions button is in reach. A prompt of that app and capability that was already
// on its way when the user said no is one of those the runtime ends: it is held back, not shown
// for a moment, until the runtime has ended the prompt the no answered.
// The Allow and Block buttons take no input for ARM_MS after a prompt appears (`data-armed` is
// "true" after it), as browsers' own permission prompts do: a page that asks on the user's first
// keydown or click must not get the next Tab+Enter, or the second click of a double click.

import { el, uniqueId } from "../core/util.js";

export const CAPABILITY_LABELS = {
  "notification.show": "Show notifications",
  "artifact.save": "Save a file",
  "file.open": "Open a file",
  "app.install": "Install an app",
  "app.manage": "Manage apps",
  "surface.network": "Reach the network from its page",
  "surface.devices": "Use devices from its page",
  "mcp.network": "Reach the network from its server",
};
const MAX_TEXT = 300;
const MAX_DETAIL = 2000; // lineup.sdk.mcp_apps.MAX_DETAIL_CHARS
const TICK_MS = 1000;
export const ARM_MS = 500;

export const capabilityLabel = (name) =>
  Object.hasOwn(CAPABILITY_LABELS, name) ? CAPABILITY_LABELS[name] : "Use a system feature";

const clip = (text, max = MAX_TEXT) => String(text).slice(0, max);

export function createPermissionPrompt(ctx) {
  const dialog = el("dialog", "permission-prompt", "permission-prompt");
  dialog.setAttribute("role", "alertdialog");
  const headingId = uniqueId("permission-heading");
  const purposeId = uniqueId("permission-purpose");
  dialog.setAttribute("aria-labelledby", headingId);
  dialog.setAttribute("aria-describedby", purposeId);
  const eyebrow = el("p", "permission-eyebrow", "", "LineUp permission");
  const heading = el("h2", "permission-heading", "permission-heading");
  heading.id = headingId;
  const capability = el("p", "permission-capability", "permission-capability");
  const purpose = el("p", "permission-purpose", "permission-purpose");
  purpose.id = purposeId;
  const detail = el("p", "permission-detail", "permission-detail");
  const expiry = el("p", "permission-expiry", "permission-expiry");
  expiry.setAttribute("aria-live", "off");
  const deny = button("Deny", "permission-deny", "deny");
  const once = button("Allow once", "permission-allow-once", "allow_once");
  const always = button("Always allow", "permission-allow-always", "allow_always");
  const block = button("Block", "permission-block", "block");
  const actions = el("div", "permission-actions");
  actions.append(deny, once, always, block);
  dialog.append(eyebrow, heading, capability, purpose, detail, expiry, actions);
  document.body.append(dialog);

  let shown = null; // the prompt view on screen
  let ticker = null;
  let arming = null;
  let served = 0; // prompts shown so far
  const lastServed = new Map(); // app_scope → `served` when its last prompt was shown
  const declined = new Map(); // "app_scope capability" → the prompt a no answered, until it ends
  const pairOf = (view) => `${view.app_scope}\n${view.capability}`;

  function button(text, testId, decision) {
    const b = el("button", `permission-button permission-${decision}`, testId, text);
    b.type = "button";
    b.addEventListener("click", () => answer(decision));
    return b;
  }

  function answer(decision) {
    if (shown === null) return;
    if (decision !== "deny" && decision !== "cancel" && once.disabled) return; // not armed yet
    const promptId = shown.prompt_id;
    if (ctx.send({ type: "capability.answer", prompt_id: promptId, decision })) {
      ctx.state.answered.add(promptId);
      if (decision === "deny" || decision === "block" || decision === "cancel") {
        // The runtime takes a no for the app's other waiting prompts of the capability too,
        // and ends them: they are not shown meanwhile.
        for (const view of ctx.state.prompts.values()) {
          if (view.app_scope === shown.app_scope && view.capability === shown.capability) {
            ctx.state.answered.add(view.prompt_id);
          }
        }
        declined.delete(pairOf(shown));
        declined.set(pairOf(shown), promptId);
        while (declined.size > 256) declined.delete(declined.keys().next().value);
      }
    }
    hide();
    ctx.rerender(); // the next prompt, if one waits
  }

  // Escape (the dialog's cancel) dismisses: the runtime's `cancelled_by_user`. A close that is
  // not ours (the browser closed it on a close request without a cancel event) is one too.
  dialog.addEventListener("cancel", (event) => {
    event.preventDefault();
    answer("cancel");
  });
  dialog.addEventListener("close", () => {
    // Our own close() of an earlier prompt is told after the next one opened: not an answer.
    if (shown !== null && !dialog.open) answer("cancel");
  });

  function arm(armed) {
    once.disabled = always.disabled = block.disabled = !armed;
    dialog.setAttribute("data-armed", String(armed));
  }

  function hide() {
    shown = null;
    window.clearInterval(ticker);
    ticker = null;
    window.clearTimeout(arming);
    arming = null;
    arm(false); // `data-armed` says whether the prompt on screen takes an answer: none now
    if (dialog.open) dialog.close();
    dialog.removeAttribute("data-prompt-id");
  }

  function tick() {
    if (shown === null) return;
    const left = Math.ceil(shown.expires_at - Date.now() / 1000);
    if (left <= 0) {
      // Expired: the runtime says so too (`expired`); nothing to answer.
      ctx.state.answered.add(shown.prompt_id);
      hide();
      ctx.rerender();
      return;
    }
    expiry.textContent = left === 1 ? "Expires in 1 second" : `Expires in ${left} seconds`;
  }

  function show(view) {
    shown = view;
    const title = clip(view.app_title || view.app_scope || "An app", 200);
    const label = capabilityLabel(view.capability);
    heading.textContent = `${title} asks to: ${label}`;
    capability.textContent = `Permission: ${label} (${clip(view.capability, 100)})`;
    purpose.textContent = `${title} says: “${clip(view.purpose)}”`;
    // The runtime's own line (an MCP App page's origins: up to MAX_DETAIL, one kind a line).
    const extra = typeof view.detail === "string" ? clip(view.detail, MAX_DETAIL) : "";
    detail.textContent = extra;
    detail.hidden = extra === "";
    always.hidden = view.rememberable !== true;
    block.setAttribute("aria-label", `Block ${title} from asking to: ${label}`);
    served += 1;
    lastServed.delete(view.app_scope);
    lastServed.set(view.app_scope, served);
    while (lastServed.size > 256) lastServed.delete(lastServed.keys().next().value);
    dialog.setAttribute("data-prompt-id", view.prompt_id);
    dialog.setAttribute("data-capability", clip(view.capability, 100));
    tick();
    if (shown === null) return; // expired already
    arm(false);
    window.clearTimeout(arming);
    arming = window.setTimeout(() => arm(true), ARM_MS);
    if (!dialog.open) dialog.showModal();
    deny.focus();
    window.clearInterval(ticker);
    ticker = window.setInterval(tick, TICK_MS);
  }

  function render(state) {
    const now = Date.now() / 1000;
    if (shown !== null && !state.prompts.has(shown.prompt_id)) hide(); // ended elsewhere
    if (shown !== null) return; // one at a time
    for (const [pair, promptId] of declined) {
      if (state.capabilityEnded.has(promptId) || !state.prompts.has(promptId)) declined.delete(pair);
    }
    // The oldest prompt of the app whose prompt was shown longest ago (or never).
    let next = null;
    let nextServed = Infinity;
    for (const view of state.prompts.values()) {
      if (state.answered.has(view.prompt_id) || view.expires_at <= now) continue;
      if (declined.has(pairOf(view))) {
        state.answered.add(view.prompt_id); // on its way before the no: the runtime ends it
        continue;
      }
      const at = lastServed.get(view.app_scope) ?? -1;
      if (at < nextServed) {
        next = view;
        nextServed = at;
      }
    }
    if (next !== null) show(next);
  }

  return { render, element: dialog };
}
