// The generic card (view kind `card`): the runtime's own component, so any app may show one
// (`lineup.sdk.card`), a development or installed app included. The view is
//   {"kind": "card", "title": str, "text": str, "fields": [{"label": str, "value": str}],
//    "progress"?: 0..1, "actions"?: [{"id": str, "label": str}],
//    "countdown"?: {"started_at": s, "ends_at": s}}
// Built once per instance, then updated in place from each snapshot (focus stays where it
// was). Every part is text (textContent), cut to a bound here as well; anything of the wrong
// shape is left out, never shown as something else. A button pressed is the app's to decide
// (`ui.event` `card.action` with its id); it stays aria-disabled until the next snapshot, so a
// press is sent once, and keeps focus meanwhile. A countdown (a timer's card: the Pomodoro's) is
// the Shell's own to redraw: the time left to `ends_at` (wall-clock seconds, this machine's
// clock: the runtime is local), once a second while the card is mounted, and the progress from
// `started_at` unless the view gives one; the app renders only when something else changes,
// never a render per second through the store. Its node is a `role="timer"` (not announced at
// every tick), and the ticking stops at zero and when the card is unmounted.

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
const TICK_MS = 1000;

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

  const countdown = el("p", "card-view-countdown", "card-view-countdown");
  countdown.setAttribute("role", "timer");
  countdown.hidden = true;

  const progress = progressBar("card-view-progress");

  const actions = el("div", "card-view-actions", "card-view-actions");
  actions.setAttribute("role", "group");
  actions.setAttribute("aria-label", "Actions");

  root.append(heading, text, countdown, fields, progress.node, actions);
  container.append(root);
  const parts = { root, heading, text, countdown, fields, progress, actions };
  return { ctx, instanceId, appScope: null, view: null, timer: null, ...parts };
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
  startCountdown(card, view);

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

// The view's countdown, if it has a well-formed one: drawn now, then once a second until zero.
function startCountdown(card, view) {
  stopCountdown(card);
  const c = view.countdown;
  const valid =
    isObject(c) && Number.isFinite(c.started_at) && Number.isFinite(c.ends_at) && c.started_at < c.ends_at;
  card.countdown.hidden = !valid;
  if (!valid) return;
  const ownProgress = !Number.isFinite(view.progress);
  const tick = () => {
    const now = Date.now() / 1000;
    const left = Math.max(0, Math.ceil(c.ends_at - now));
    card.countdown.textContent = `${Math.floor(left / 60)} min ${left % 60} s left`;
    card.countdown.setAttribute("data-left", String(left));
    if (ownProgress) {
      const gone = (now - c.started_at) / (c.ends_at - c.started_at);
      card.progress.node.hidden = false;
      card.progress.set(Math.round(Math.min(1, Math.max(0, gone)) * 100));
    }
    if (left === 0) stopCountdown(card);
  };
  tick();
  if (card.countdown.getAttribute("data-left") !== "0") card.timer = window.setInterval(tick, TICK_MS);
}

function stopCountdown(card) {
  if (card.timer !== null) window.clearInterval(card.timer);
  card.timer = null;
}

function unmount(card) {
  stopCountdown(card);
}

export const card = { mount, update, unmount, focus: (handle) => handle.heading.focus() };
