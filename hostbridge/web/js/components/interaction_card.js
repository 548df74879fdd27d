// The card of one standard interaction (hostbridge/messages.py InteractionView; the request
// shapes are lineup/sdk/interactions.py's): a notice (read-only, never answered here), a choice (single, multi or
// buttons), a confirm, an input (text, textarea, number). Every text in it is the Agent's or
// the app's, shown as text only; buttons carry the request's own labels, or plain defaults.
//
// An open card sends one answer: the first submit disables it (the Shell keeps the id in
// `state.answering` until the runtime's next view of it, and the runtime keeps only the first
// answer anyway). A finished card shows its result, or that it expired, was dismissed, was
// cancelled. The checks here (required fields, lengths, bounds) are a convenience: the runtime
// checks the answer against the stored request. What the user types into an input is saved as
// a draft (state.drafts here, and `interaction.draft` to the runtime's memory), so a re-render,
// a reconnect or a reload keeps it.
//
// Once the user answered a card, focus goes where they will want it next (issue 28): the next
// open question (the first after the card in the page, else the nearest before it), else the
// composer. The Agent's follow-up question usually comes a moment after the answer: if it
// arrives within NEXT_QUESTION_MS while the focus still rests, untouched, in the composer where
// the answer left it, focus goes on to it.

import { FINAL_STATES, isOpen } from "../core/state.js";
import { byTestId, el, isObject, isShown, uniqueId } from "../core/util.js";

const DRAFT_DEBOUNCE_MS = 300;
const NEXT_QUESTION_MS = 10_000;
const CONTROLS = "input:not(:disabled), textarea:not(:disabled), button:not(:disabled)";
const MAX_TEXT = 8192;

const text = (value, fallback = "") =>
  typeof value === "string" && value ? value.slice(0, MAX_TEXT) : fallback;
const label = (value, fallback) => text(value, fallback).slice(0, 80);

// What a finished (or read-only) card says instead of its controls.
function outcome(view, now, readOnly) {
  const state = view.state;
  if (state === "completed" || state === "submitted") return "answered";
  if (state === "expired") return "expired";
  if (state === "cancelled") {
    if (view.terminal_code === "interaction_dismissed") return "dismissed";
    if (view.terminal_code === "app_closed") return "closed";
    return "cancelled";
  }
  if (state === "failed") return "failed";
  if (!isOpen(view, now)) return "expired"; // past its expiry, before the runtime says so
  return readOnly ? "unanswered" : null;
}

const OUTCOME_TEXT = {
  expired: "Expired",
  dismissed: "Dismissed",
  cancelled: "Cancelled",
  closed: "Closed with its app",
  failed: "Could not be completed",
  unanswered: "Not answered",
};

// The key of what a card shows: a card is rebuilt only when it changes (never while typing).
export function cardKey(state, view, now, readOnly) {
  const end = outcome(view, now, readOnly);
  if (end !== null) return `${end}|${JSON.stringify(view.result ?? null)}`;
  if (state.answering.has(view.interaction_id)) return "answering";
  return `open|${state.draftStamps.get(view.interaction_id) ?? 0}`;
}

export function buildCard(view, { state, ctx, now, place, readOnly = false, headingLevel = 3 }) {
  const request = isObject(view.request) ? view.request : {};
  const id = view.interaction_id;
  const card = el("article", `interaction-card kind-${view.kind}`, "interaction-card");
  card.setAttribute("data-interaction-id", id);
  card.setAttribute("data-kind", view.kind);
  card.setAttribute("data-state", view.state);
  card.setAttribute("data-place", place);
  card.setAttribute("tabindex", "-1"); // focus lands here when the card is rebuilt
  const titleId = uniqueId("interaction-title");
  card.setAttribute("aria-labelledby", titleId);

  const heading = el(`h${headingLevel}`, "interaction-title", "interaction-title");
  heading.id = titleId;
  heading.textContent = text(request.title, "A question from the Agent");
  const prompt = el(
    "p",
    "interaction-prompt",
    "interaction-prompt",
    text(view.kind === "notice" ? request.message : request.prompt),
  );
  card.append(heading, prompt);

  const end = outcome(view, now, readOnly);
  if (end !== null) {
    card.setAttribute("data-outcome", end);
    const shown = end === "answered" ? resultText(view, request) : OUTCOME_TEXT[end];
    if (shown) card.append(el("p", "interaction-outcome", "interaction-outcome", shown));
    return card;
  }
  card.setAttribute("data-outcome", "open");
  // A notice is read-only: its toast carries its acknowledge label (components/notices.js),
  // and the runtime answers it as soon as it is handed to the Shell.
  if (view.kind === "notice") return card;
  const answering = state.answering.has(id);
  const answer = (value) => !answering && ctx.answer(id, value);
  const controls = controlsFor(view, request, { state, ctx, answer, answering });
  card.append(controls);
  if (Number.isFinite(view.expires_at)) {
    const by = new Date(view.expires_at * 1000);
    const when = el("p", "interaction-expiry", "interaction-expiry");
    const time = el("time", "", "", by.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }));
    time.setAttribute("datetime", by.toISOString());
    when.append("You can answer until ", time);
    card.append(when);
  }
  if (answering) card.append(el("p", "interaction-sending", "interaction-sending", "Sending…"));
  return card;
}

function resultText(view, request) {
  const result = isObject(view.result) ? view.result : null;
  if (view.kind === "notice") return result?.acknowledged === true ? "Acknowledged" : "";
  if (result === null) return "Answered";
  if (view.kind === "choice" && Array.isArray(result.action_ids)) {
    const actions = Array.isArray(request.actions) ? request.actions : [];
    const names = result.action_ids.map((actionId) => {
      const action = actions.find((a) => isObject(a) && a.id === actionId);
      return action ? label(action.label, String(actionId)) : String(actionId);
    });
    return `You chose: ${names.join(", ")}`;
  }
  if (view.kind === "confirm" && typeof result.approved === "boolean") {
    return result.approved
      ? `You chose: ${label(request.approve_label, "Approve")}`
      : `You chose: ${label(request.cancel_label, "Cancel")}`;
  }
  if (view.kind === "input" && isObject(result.values)) {
    const fields = Array.isArray(request.fields) ? request.fields : [];
    const parts = Object.entries(result.values).map(([fieldId, value]) => {
      const field = fields.find((f) => isObject(f) && f.id === fieldId);
      return `${field ? label(field.label, fieldId) : fieldId}: ${String(value)}`;
    });
    return parts.length ? `You answered: ${parts.join("; ")}` : "You answered";
  }
  return "Answered";
}

function button(textContent, tone, testId, onClick, answering) {
  const b = el("button", `interaction-button interaction-button-${tone}`, testId, textContent);
  b.type = "button";
  if (answering) b.disabled = true;
  b.addEventListener("click", onClick);
  return b;
}

function controlsFor(view, request, env) {
  if (view.kind === "confirm") return confirmControls(request, env);
  if (view.kind === "choice") return choiceControls(view, request, env);
  return inputControls(view, request, env);
}

function confirmControls(request, { answer, answering }) {
  const row = el("div", "interaction-actions");
  row.setAttribute("role", "group");
  row.setAttribute("aria-label", "Your answer");
  row.append(
    button(label(request.approve_label, "Approve"), "primary", "interaction-approve", () =>
      answer({ approved: true }), answering),
    button(label(request.cancel_label, "Cancel"), "secondary", "interaction-cancel", () =>
      answer({ approved: false }), answering),
  );
  return row;
}

function choiceControls(view, request, { answer, answering }) {
  const actions = (Array.isArray(request.actions) ? request.actions : []).filter(
    (a) => isObject(a) && typeof a.id === "string",
  );
  if (request.mode === "button") {
    const row = el("div", "interaction-actions");
    row.setAttribute("role", "group");
    row.setAttribute("aria-label", "Your answer");
    for (const action of actions) {
      const b = button(label(action.label, action.id), "choice", "interaction-action", () =>
        answer({ action_ids: [action.id] }), answering);
      b.setAttribute("data-action-id", action.id);
      if (typeof action.description === "string" && action.description) {
        b.setAttribute("title", action.description.slice(0, 400));
        const note = el("span", "visually-hidden", "", ` (${action.description.slice(0, 400)})`);
        b.append(note);
      }
      row.append(b);
    }
    return row;
  }
  const multi = request.mode === "multi-choice";
  const form = el("form", "interaction-form", "interaction-form");
  form.noValidate = true;
  const set = el("fieldset", "interaction-options");
  const legend = el("legend", "visually-hidden", "", text(request.prompt, "Options"));
  set.append(legend);
  const name = uniqueId("choice");
  for (const action of actions) {
    const row = el("label", "interaction-option", "interaction-option");
    const input = document.createElement("input");
    input.type = multi ? "checkbox" : "radio";
    input.name = name;
    input.value = action.id;
    input.disabled = answering;
    input.setAttribute("data-action-id", action.id);
    row.append(input, el("span", "interaction-option-label", "", label(action.label, action.id)));
    if (typeof action.description === "string" && action.description) {
      row.append(el("span", "interaction-option-description", "", action.description.slice(0, 400)));
    }
    set.append(row);
  }
  const error = el("p", "interaction-error", "interaction-error");
  error.setAttribute("role", "alert");
  const submit = el("button", "interaction-button interaction-button-primary", "interaction-submit", "Submit");
  submit.type = "submit";
  submit.disabled = answering;
  form.append(set, error, submit);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = [...set.querySelectorAll("input:checked")].map((i) => i.value);
    if (chosen.length === 0) {
      error.textContent = multi ? "Choose at least one." : "Choose one.";
      return;
    }
    answer({ action_ids: chosen });
  });
  return form;
}

function boundsText(field) {
  if (field.type === "number") {
    const low = Number.isFinite(field.minimum) ? field.minimum : null;
    const high = Number.isFinite(field.maximum) ? field.maximum : null;
    if (low !== null && high !== null) return `A number from ${low} to ${high}`;
    if (low !== null) return `A number, at least ${low}`;
    if (high !== null) return `A number, at most ${high}`;
    return "A number";
  }
  const min = Number.isInteger(field.min_length) ? field.min_length : null;
  const max = Number.isInteger(field.max_length) ? field.max_length : null;
  if (min !== null && max !== null) return `${min} to ${max} characters`;
  if (min !== null) return `At least ${min} characters`;
  if (max !== null) return `Up to ${max} characters`;
  return "";
}

// The convenience check of one field's value; null when fine.
function fieldError(field, raw) {
  const empty = raw.trim() === "";
  if (empty) return field.required === true ? "Required." : null;
  if (field.type === "number") {
    const value = Number(raw);
    if (!Number.isFinite(value)) return "Enter a number.";
    if (Number.isFinite(field.minimum) && value < field.minimum) return `At least ${field.minimum}.`;
    if (Number.isFinite(field.maximum) && value > field.maximum) return `At most ${field.maximum}.`;
    return null;
  }
  if (Number.isInteger(field.min_length) && raw.length < field.min_length) {
    return `At least ${field.min_length} characters.`;
  }
  if (Number.isInteger(field.max_length) && raw.length > field.max_length) {
    return `At most ${field.max_length} characters.`;
  }
  return null;
}

function inputControls(view, request, { state, ctx, answer, answering }) {
  const id = view.interaction_id;
  const fields = (Array.isArray(request.fields) ? request.fields : []).filter(
    (f) => isObject(f) && typeof f.id === "string",
  );
  const draft = state.drafts.get(id) ?? {};
  const form = el("form", "interaction-form", "interaction-form");
  form.noValidate = true;
  const inputs = new Map();
  const errors = new Map();
  for (const field of fields) {
    const row = el("div", "interaction-field");
    const inputId = uniqueId("field");
    const caption = el("label", "interaction-field-label", "", label(field.label, field.id));
    caption.htmlFor = inputId;
    if (field.required === true) caption.append(el("span", "interaction-required", "", " (required)"));
    const input = document.createElement(field.type === "textarea" ? "textarea" : "input");
    if (field.type !== "textarea") input.type = field.type === "number" ? "number" : "text";
    if (field.type === "textarea") input.rows = 3;
    input.id = inputId;
    input.className = "interaction-input";
    input.setAttribute("data-testid", "interaction-field");
    input.setAttribute("data-field-id", field.id);
    input.disabled = answering;
    if (field.required === true) input.setAttribute("aria-required", "true");
    if (typeof field.placeholder === "string") input.placeholder = field.placeholder.slice(0, 200);
    if (field.type === "number") {
      if (Number.isFinite(field.minimum)) input.min = String(field.minimum);
      if (Number.isFinite(field.maximum)) input.max = String(field.maximum);
      input.step = "any";
    } else if (Number.isInteger(field.max_length)) {
      input.maxLength = field.max_length;
    }
    const saved = draft[field.id];
    if (typeof saved === "string" || typeof saved === "number") input.value = String(saved);
    const described = [];
    const hint = boundsText(field);
    if (hint) {
      const hintEl = el("span", "interaction-hint", "interaction-hint", hint);
      hintEl.id = uniqueId("hint");
      described.push(hintEl.id);
      row.append(caption, input, hintEl);
    } else {
      row.append(caption, input);
    }
    const error = el("span", "interaction-error", "interaction-field-error");
    error.id = uniqueId("error");
    described.push(error.id);
    input.setAttribute("aria-describedby", described.join(" "));
    row.append(error);
    form.append(row);
    inputs.set(field.id, input);
    errors.set(field.id, error);
  }

  let timer = null;
  form.addEventListener("input", () => {
    const values = {};
    for (const [fieldId, input] of inputs) values[fieldId] = input.value;
    state.drafts.set(id, values);
    window.clearTimeout(timer);
    timer = window.setTimeout(() => ctx.draft(id, values), DRAFT_DEBOUNCE_MS);
  });

  const actions = el("div", "interaction-actions");
  const submit = el(
    "button",
    "interaction-button interaction-button-primary",
    "interaction-submit",
    label(request.submit_label, "Submit"),
  );
  submit.type = "submit";
  submit.disabled = answering;
  const cancel = button(label(request.cancel_label, "Cancel"), "secondary", "interaction-cancel",
    () => answer({ cancelled: true }), answering);
  actions.append(submit, cancel);
  form.append(actions);

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const values = {};
    let first = null;
    for (const field of fields) {
      const input = inputs.get(field.id);
      const problem = fieldError(field, input.value);
      errors.get(field.id).textContent = problem ?? "";
      input.setAttribute("aria-invalid", problem ? "true" : "false");
      if (problem && first === null) first = input;
      if (!problem && input.value.trim() !== "") {
        values[field.id] = field.type === "number" ? Number(input.value) : input.value;
      }
    }
    if (first !== null) {
      first.focus();
      return;
    }
    window.clearTimeout(timer);
    answer({ values });
  });
  return form;
}

// ---------------------------------------------------------------- focus after an answer

// The composer the focus was left in after an answer, with its text then, until when a new
// question may take the focus from it.
let resting = null;

// The open questions shown now, each with a control to answer it by.
const OPEN_CARDS = '[data-testid="interaction-card"][data-outcome="open"]:not([data-kind="notice"])';
const openQuestions = () =>
  [...document.querySelectorAll(OPEN_CARDS)].filter(
    (card) => isShown(card) && card.querySelector(CONTROLS) !== null,
  );

// After the render in which the user answered `answered` (the card now "Sending…").
function focusAfterAnswer(answered) {
  if (!answered.isConnected || !answered.contains(document.activeElement)) return; // moved on
  const others = openQuestions().filter((card) => card !== answered);
  const after = others.find(
    (card) => answered.compareDocumentPosition(card) & Node.DOCUMENT_POSITION_FOLLOWING,
  );
  const next = after ?? others.at(-1);
  if (next !== undefined) {
    next.querySelector(CONTROLS).focus();
    return;
  }
  const composer = byTestId("composer-input");
  if (composer === null || composer.disabled || !isShown(composer)) return;
  composer.focus();
  resting = { composer, text: composer.value, until: Date.now() + NEXT_QUESTION_MS };
}

// After the render that showed the new open question `card` for the first time.
function focusArrived(card) {
  const rest = resting;
  if (rest === null) return;
  if (Date.now() > rest.until || document.activeElement !== rest.composer) {
    resting = null; // the user moved on, or it came too late to be the answer's follow-up
    return;
  }
  if (rest.composer.value !== rest.text || !card.isConnected || !openQuestions().includes(card)) {
    return;
  }
  resting = null;
  card.querySelector(CONTROLS).focus();
}

// The cards of one place (the timeline, a group, the overlay, an app's container), kept by id:
// an unchanged card keeps its element (and what is typed in it), a changed one is rebuilt in
// place, and focus that was in it goes to the new card.
export class CardCache {
  constructor(place, options = {}) {
    this.place = place;
    this.options = options;
    this.cards = new Map(); // interaction_id → {key, element}
  }

  element(view, state, ctx, now, readOnly = false) {
    const key = `${cardKey(state, view, now, readOnly)}|${readOnly}`;
    const held = this.cards.get(view.interaction_id);
    if (held && held.key === key) return held.element;
    const element = buildCard(view, {
      state,
      ctx,
      now,
      readOnly,
      place: this.place,
      headingLevel: this.options.headingLevel ?? 3,
    });
    if (held && held.element.isConnected && held.element.contains(document.activeElement)) {
      held.element.replaceWith(element);
      (element.querySelector(CONTROLS) ?? element).focus();
      // The user's own answer: once the whole render is done, on to what comes next.
      if (key.startsWith("answering|") && held.key.startsWith("open|")) {
        queueMicrotask(() => focusAfterAnswer(element));
      }
    } else if (held && held.element.isConnected) {
      held.element.replaceWith(element);
    } else if (held === undefined && key.startsWith("open|") && resting !== null) {
      queueMicrotask(() => focusArrived(element));
    }
    this.cards.set(view.interaction_id, { key, element });
    return element;
  }

  // Forget the cards not in `ids` (they are no longer shown here).
  keep(ids) {
    for (const id of this.cards.keys()) if (!ids.has(id)) this.cards.delete(id);
  }
}

export const isFinal = (view) => FINAL_STATES.has(view.state);
