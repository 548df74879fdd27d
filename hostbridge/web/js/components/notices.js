// Notices (the runtime's `shell.notice`) and toasts (an Agent's notice interaction, whose card
// is in the timeline as well: a toast is never the only place it shows). At most MAX_NOTICES
// at once, the oldest going first; info and toasts go by themselves after a while, errors stay
// until dismissed. Each has a dismiss button (Escape on it dismisses too).

import { byTestId, el } from "../core/util.js";
import { detailsLine, explained } from "../core/words.js";

const MAX_NOTICES = 5;
const MAX_NOTICE_CHARS = 2000;
const INFO_NOTICE_MS = 8000;

export function createNotices() {
  const region = byTestId("notices");

  function add(level, text, { testId = "notice", dismissLabel = null, code = null } = {}) {
    if (typeof text !== "string" || !text) return null;
    const notice = el("div", `notice notice-${level}`, testId);
    notice.setAttribute("data-level", level);
    notice.setAttribute("role", level === "error" ? "alert" : "status");
    const said = code === null ? text : explained(text, code); // a refusal: why, in words
    const body = el("span", "notice-text", "", said.slice(0, MAX_NOTICE_CHARS));
    if (code !== null) body.append(detailsLine(code) ?? "");
    const dismiss = el("button", "notice-dismiss", `${testId}-dismiss`, dismissLabel ?? "×");
    dismiss.type = "button";
    dismiss.setAttribute("aria-label", dismissLabel ?? "Dismiss notification");
    dismiss.addEventListener("click", () => notice.remove());
    notice.addEventListener("keydown", (event) => {
      if (event.key === "Escape") notice.remove();
    });
    notice.append(body, dismiss);
    region.append(notice);
    while (region.children.length > MAX_NOTICES) region.firstElementChild.remove();
    if (level === "info") window.setTimeout(() => notice.remove(), INFO_NOTICE_MS);
    return notice;
  }

  // Drain what the reducer queued.
  function render(state) {
    for (const { level, text, code } of state.notices.splice(0)) add(level, text, { code });
    for (const view of state.toasts.splice(0)) {
      const request = view.request;
      const title = typeof request.title === "string" ? request.title : "Notice";
      const message = typeof request.message === "string" ? request.message : "";
      const label =
        typeof request.acknowledge_label === "string" && request.acknowledge_label
          ? request.acknowledge_label
          : null;
      const toast = add("info", message ? `${title}: ${message}` : title, {
        testId: "toast",
        dismissLabel: label,
      });
      toast?.setAttribute("data-interaction-id", view.interaction_id);
    }
  }

  return { add, render };
}
