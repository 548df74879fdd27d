// The chat's mode (seed 003 §5.1): Interact is in one mode at a time (IM, Audio or Video),
// which the runtime records on the chat's instance, so the chat comes back in that mode when
// the apps in front of it close, and after a restart. The bar at the top of the chat shows
// the mode the chat's view says (the chat renders the mode the runtime told it; the tab shows
// the runtime's own record, components/switcher.js), and offers the modes the view names as
// toggle buttons: Tab reaches the group, the arrow keys move between its buttons, Enter or
// Space switches. A switch is the chat's `mode.switch` event; the chat asks the runtime, and
// the bar changes when the chat is told, never before. No media starts here.

import { byTestId, el } from "../core/util.js";

const LABELS = { im: "IM", audio: "Audio", video: "Video" };
const MODE = /^[a-z]{1,16}$/;

const label = (mode) => LABELS[mode] ?? mode;

export function createModeSwitch(ctx) {
  const bar = byTestId("chat-mode");
  const group = bar.querySelector(".chat-mode-buttons");
  const current = byTestId("chat-mode-current");
  let shown = null;

  group.addEventListener("keydown", (event) => {
    if (event.key !== "ArrowRight" && event.key !== "ArrowLeft") return;
    const buttons = [...group.querySelectorAll("button")];
    const at = buttons.indexOf(document.activeElement);
    if (at < 0) return;
    event.preventDefault();
    const step = event.key === "ArrowRight" ? 1 : -1;
    buttons[(at + step + buttons.length) % buttons.length].focus();
  });

  function ask(mode) {
    const instanceId = ctx.state.chatInstance;
    if (instanceId === null) return;
    ctx.send({
      type: "ui.event",
      app_scope: "chat",
      instance_id: instanceId,
      event: { kind: "mode.switch", mode },
    });
  }

  function render(view) {
    const modes = view && Array.isArray(view.modes) ? view.modes.filter((m) => MODE.test(m)) : [];
    const mode = view && typeof view.mode === "string" ? view.mode : null;
    const key = JSON.stringify([modes, mode]);
    if (key === shown) return;
    shown = key;
    bar.hidden = modes.length === 0;
    bar.setAttribute("data-mode", typeof mode === "string" ? mode : "");
    current.textContent = typeof mode === "string" ? `${label(mode)} mode` : "";
    const focused = group.contains(document.activeElement)
      ? document.activeElement.getAttribute("data-mode")
      : null;
    group.replaceChildren(
      ...modes.map((m) => {
        const button = el("button", "chat-mode-button", "mode-button", label(m));
        button.type = "button";
        button.setAttribute("data-mode", m);
        button.setAttribute("aria-pressed", String(m === mode));
        button.addEventListener("click", () => {
          if (m !== mode) ask(m);
        });
        return button;
      }),
    );
    if (focused !== null) group.querySelector(`[data-mode="${focused}"]`)?.focus();
  }

  return { render };
}
