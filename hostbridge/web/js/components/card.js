// The generic card (view kind `card`): the runtime's own component, so any app may show one
// (`lineup.sdk.card`), a development or installed app included. The view is
//   {"kind": "card", "title": str, "text": str, "fields": [{"label": str, "value": str}],
//    "progress"?: 0..1, "actions"?: [{"id": str, "label": str}]}
// Built once per instance, then updated in place from each snapshot (focus stays where it
// was). Every part is text (textContent), cut to a bound here as well; anything of the wrong
// shape is left out, never shown as something else. A button pressed is the app's to decide
// (`ui.event` `card.action` with its id); it stays aria-disabled until the next snapshot, so a
// press is sent once, and keeps focus meanwhile.

import { el, isObject } from "../core/util.js";
import { progressBar } from "./progress_bar.js";

const MAX_TITLE = 200;
const MAX_TEXT = 4000;
const MAX_FIELDS = 20;
const MAX_LABEL = 100;
const MAX_VALUE = 1000;
const MAX_ACTIONS = 4;
const MAX_ACTION_LABEL = 40;
const ACTION_ID = /^[a-z][a-z0-9_.-]{0,63}$/;

const textOf = (value, max) => (typeof value === "string" ? value.slice(0, max) : "");

function mount(container, ctx, instanceId) {
  const root = el("article", "card-view", "card-view");
  root.setAttribute("data-instance-id", instanceId);
  root.setAttribute("aria-labelledby", "card-view-title");

  const heading = el("h2", "card-view-title", "card-view-title");
  heading.id = "card-view-title";
  heading.setAttribute("tabindex", "-1"); // where focus goes when the card comes in front

  const text = el("p", "card-view-text", "card-view-text");

  const fields = el("dl", "card-view-fields", "card-view-fields");

  const progress = progressBar("card-view-progress");

  const actions = el("div", "card-view-actions", "card-view-actions");
  actions.setAttribute("role", "group");
  actions.setAttribute("aria-label", "Actions");

  root.append(heading, text, fields, progress.node, actions);
  container.append(root);
  return { ctx, instanceId, appScope: null, view: null, root, heading, text, fields, progress, actions };
}

function actionButton(card, action) {
  const button = el("button", "card-view-action", "card-view-action", textOf(action.label, MAX_ACTION_LABEL));
  button.type = "button";
  button.setAttribute("data-action", action.id);
  button.addEventListener("click", () => {
    if (button.getAttribute("aria-disabled") === "true") return;
    const sent = card.ctx.send({
      type: "ui.event",
      app_scope: card.appScope,
      instance_id: card.instanceId,
      event: { kind: "card.action", action: action.id },
    });
    if (sent) button.setAttribute("aria-disabled", "true");
  });
  return button;
}

function update(card, entry) {
  const view = entry.view;
  if (card.view === view) return; // not a new snapshot: nothing to update
  card.view = view;
  card.appScope = typeof entry.appScope === "string" ? entry.appScope : null;
  card.heading.textContent = textOf(view.title, MAX_TITLE).trim() || "Untitled";

  const text = textOf(view.text, MAX_TEXT);
  card.text.textContent = text;
  card.text.hidden = text === "";

  const rows = [];
  for (const field of Array.isArray(view.fields) ? view.fields.slice(0, MAX_FIELDS) : []) {
    if (!isObject(field)) continue;
    const term = el("dt", "card-view-label", "card-view-label", textOf(field.label, MAX_LABEL));
    const value = el("dd", "card-view-value", "card-view-value", textOf(field.value, MAX_VALUE));
    const row = el("div", "card-view-field", "card-view-field");
    row.append(term, value);
    rows.push(row);
  }
  card.fields.replaceChildren(...rows);
  card.fields.hidden = rows.length === 0;

  const shown = Number.isFinite(view.progress);
  card.progress.node.hidden = !shown;
  const percent = shown ? Math.round(Math.min(1, Math.max(0, view.progress)) * 100) : 0;
  card.progress.set(percent, shown);

  // Rebuilt from each snapshot; the button that had focus gets it back (by its id).
  const focused = card.actions.contains(document.activeElement)
    ? document.activeElement.getAttribute("data-action")
    : null;
  const buttons = [];
  for (const action of Array.isArray(view.actions) ? view.actions.slice(0, MAX_ACTIONS) : []) {
    if (!isObject(action) || typeof action.id !== "string" || !ACTION_ID.test(action.id)) continue;
    if (textOf(action.label, MAX_ACTION_LABEL).trim() === "") continue;
    buttons.push(actionButton(card, action));
  }
  card.actions.replaceChildren(...buttons);
  card.actions.hidden = buttons.length === 0;
  const again = buttons.find((b) => b.getAttribute("data-action") === focused);
  if (again) again.focus();
}

function unmount() {}

export const card = { mount, update, unmount, focus: (handle) => handle.heading.focus() };
