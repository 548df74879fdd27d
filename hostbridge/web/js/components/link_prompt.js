// The runtime's own prompt before a Surface's link is opened (`ui/open-link`, core/bridge.js,
// issue 30), in the permission prompt's style: a `<dialog>` of the Shell's own DOM opened with
// showModal() (in the top layer: nothing in a Surface can draw over it or click it), naming the
// app and showing the full URL as text. "Don't open" has focus first (the safe default); "Open
// link" takes no input for ARM_MS, as the permission prompt's Allow; Escape declines. Only on
// "Open link" does the Shell open it: `window.open(url, "_blank", "noopener")`, so the new tab
// has no handle on the Shell. One link at a time: asked while one is shown, declined at once.
// The bridge checked the URL already (http or https only); it is checked here again.

import { el, uniqueId } from "../core/util.js";
import { ARM_MS } from "./permission_prompt.js";

const MAX_TITLE = 200;

export function createLinkPrompt(ctx) {
  const dialog = el("dialog", "permission-prompt link-prompt", "link-prompt");
  dialog.setAttribute("role", "alertdialog");
  const headingId = uniqueId("link-heading");
  const urlId = uniqueId("link-url");
  dialog.setAttribute("aria-labelledby", headingId);
  dialog.setAttribute("aria-describedby", urlId);
  const eyebrow = el("p", "permission-eyebrow", "", "LineUp: open a link");
  const heading = el("h2", "permission-heading", "link-heading");
  heading.id = headingId;
  const url = el("p", "link-url", "link-url");
  url.id = urlId;
  const note = el("p", "permission-detail", "", "It opens in a new tab, which gets no access to LineUp.");
  const decline = button("Don't open", "link-decline", "deny");
  const open = button("Open link", "link-open", "allow_once");
  const actions = el("div", "permission-actions");
  actions.append(decline, open);
  dialog.append(eyebrow, heading, url, note, actions);
  document.body.append(dialog);

  let shown = null; // {href, resolve}
  let arming = null;

  function button(text, testId, look) {
    const b = el("button", `permission-button permission-${look}`, testId, text);
    b.type = "button";
    return b;
  }

  function end(opened) {
    if (shown === null) return;
    const { resolve } = shown;
    shown = null;
    window.clearTimeout(arming);
    // Unarmed once ended: `data-armed` says whether the prompt shown now takes "Open link".
    open.disabled = true;
    dialog.setAttribute("data-armed", "false");
    if (dialog.open) dialog.close();
    resolve(opened);
    ctx.rerender(); // the Surfaces are no longer shielded
  }

  decline.addEventListener("click", () => end(false));
  open.addEventListener("click", () => {
    if (shown === null || open.disabled) return;
    const target = new URL(shown.href);
    if (target.protocol !== "https:" && target.protocol !== "http:") return end(false);
    window.open(target.href, "_blank", "noopener");
    end(true);
  });
  dialog.addEventListener("cancel", (event) => {
    event.preventDefault();
    end(false);
  });
  dialog.addEventListener("close", () => {
    if (shown !== null && !dialog.open) end(false);
  });

  // Resolves true once the user opened `href`, false if they did not (or another is shown).
  function ask(title, href) {
    if (shown !== null || document.querySelector("dialog[open]") !== null) {
      return Promise.resolve(false);
    }
    return new Promise((resolve) => {
      shown = { href, resolve };
      heading.textContent = `${String(title).slice(0, MAX_TITLE)} asks to open this link:`;
      url.textContent = href;
      open.disabled = true;
      dialog.setAttribute("data-armed", "false");
      arming = window.setTimeout(() => {
        open.disabled = false;
        dialog.setAttribute("data-armed", "true");
      }, ARM_MS);
      dialog.showModal();
      decline.focus();
      ctx.rerender(); // the Surfaces are shielded while it is up (main.js)
    });
  }

  return { ask };
}
