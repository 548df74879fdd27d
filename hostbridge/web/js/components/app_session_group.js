// An app sub-session's folded group in the main IM (contract §4): the Agent's questions asked
// inside that app, the user's answers and their results, and the Agent's short results (its
// texts that name the sub-session, shown as text with the timeline's safe Markdown), in the
// order they came; never the app's own operations (its own questions stay in its container). It
// sits in the timeline at its `opened_at`, folded; a button (Enter or Space) unfolds it. While
// one of its questions is open and its instance is not in front, it says "waiting for your
// answer", and the question can be answered from here. An ended sub-session unfolds read-only;
// a question of it still open goes back to the main IM (main.js placement), never revived here.
// Its "Continue" button asks the runtime for a new instance of the app, whose new sub-session
// references this one (`app_session.continue`); nothing is appended to the ended one.

import { isOpen } from "../core/state.js";
import { el, replaceKeeping, uniqueId } from "../core/util.js";
import { ArtifactCards } from "./artifact_card.js";
import { CardCache } from "./interaction_card.js";
import { renderNodes } from "./markdown.js";

export function createGroup(session) {
  const li = el("li", "app-session-group", "app-session-group");
  li.setAttribute("data-app-session-id", session.app_session_id);
  const bodyId = uniqueId("app-session");
  const toggle = el("button", "app-session-toggle", "app-session-toggle");
  toggle.type = "button";
  toggle.setAttribute("aria-expanded", "false");
  toggle.setAttribute("aria-controls", bodyId);
  const title = el("span", "app-session-title", "app-session-title");
  const status = el("span", "app-session-status", "app-session-status");
  const waiting = el("span", "app-session-waiting", "app-session-waiting", "waiting for your answer");
  waiting.hidden = true;
  const count = el("span", "app-session-status app-session-count", "app-session-count");
  count.hidden = true;
  toggle.append(title, status, count, waiting);
  const body = el("div", "app-session-body", "app-session-body");
  body.id = bodyId;
  body.hidden = true;
  body.setAttribute("role", "group");
  const note = el("p", "app-session-note", "app-session-note");
  const list = el("div", "app-session-cards");
  const resume = el("button", "interaction-button app-session-continue", "app-session-continue", "Continue");
  resume.type = "button";
  resume.hidden = true;
  const artifactList = el("div", "app-session-artifacts", "app-session-artifacts");
  body.append(note, list, artifactList, resume);
  li.append(toggle, body);
  const group = { li, toggle, title, status, waiting, body, note, list, resume, open: false };
  group.count = count;
  group.artifactList = artifactList;
  group.artifactCards = new ArtifactCards(4);
  group.continueSent = false;
  group.cards = new CardCache("group", { headingLevel: 4 });
  group.texts = new Map(); // message id → {version, element}: the Agent's short results
  resume.addEventListener("click", () => {
    if (group.continueSent || !group.ctx) return; // a double click continues once
    group.continueSent = group.ctx.send({
      type: "app_session.continue",
      app_session_id: session.app_session_id,
    });
    resume.disabled = group.continueSent;
  });
  toggle.addEventListener("click", () => {
    group.open = !group.open;
    toggle.setAttribute("aria-expanded", String(group.open));
    body.hidden = !group.open;
  });
  return group;
}

// One short result of the Agent, as text: the item's token tree, as the timeline renders it.
function textElement(group, item, version) {
  const held = group.texts.get(item.id);
  if (held !== undefined && held.version === version) return held.element;
  const element = el("div", "message from-agent app-session-text", "app-session-text");
  element.setAttribute("data-message-id", item.id);
  element.append(el("span", "visually-hidden", "", "Agent: "));
  const bubble = el("div", "bubble", "app-session-text-body");
  renderNodes(item.tree, bubble, 0);
  element.append(bubble);
  group.texts.set(item.id, { version, element });
  return element;
}

// `views`: the session's interactions, oldest first; `inFront`: its instance is in front;
// `artifacts`: what its instance made, oldest first; `texts`: the Agent's short results in it
// (timeline items), oldest first.
export function updateGroup(
  group,
  session,
  views,
  { state, ctx, now, appTitle, inFront, artifacts = [], texts = [] },
) {
  const ended = session.state === "closed";
  group.ctx = ctx;
  group.li.setAttribute("data-state", session.state);
  group.resume.hidden = !ended;
  group.resume.setAttribute("aria-label", `Continue in a new ${appTitle}`);
  group.title.textContent = appTitle;
  group.status.textContent = ended ? " · ended" : inFront ? " · in front" : " · open";
  const open = !ended && views.some((v) => isOpen(v, now));
  const waiting = open && !inFront;
  group.waiting.hidden = !waiting;
  group.li.setAttribute("data-waiting", String(waiting));
  // Folded, the group still says how many short results the Agent left in it.
  const results = texts.length === 1 ? "1 result" : `${texts.length} results`;
  group.count.textContent = ` · ${results}`;
  group.count.hidden = texts.length === 0;
  group.toggle.setAttribute(
    "aria-label",
    `${appTitle}, ${ended ? "ended" : "open"}${texts.length ? `, ${results}` : ""}` +
      `${waiting ? ", waiting for your answer" : ""}`,
  );
  group.note.textContent = ended
    ? "This app has ended: what was asked in it is shown read-only."
    : views.length === 0 && texts.length === 0
      ? "No questions from the Agent in this app yet."
      : "";
  group.note.hidden = group.note.textContent === "";
  // Cards at their `created_at`, texts at their `at`: in the order they came.
  const entries = [
    ...views.map((v) => ({ at: v.created_at, view: v })),
    ...texts.map((t) => ({ at: Number(t.at) || 0, text: t })),
  ].sort((a, b) => a.at - b.at);
  const elements = entries.map((e) =>
    e.view
      ? group.cards.element(e.view, state, ctx, now, ended)
      : textElement(group, e.text, state.items.get(e.text.id)?.version),
  );
  group.cards.keep(new Set(views.map((v) => v.interaction_id)));
  const shownTexts = new Set(texts.map((t) => t.id));
  for (const id of group.texts.keys()) if (!shownTexts.has(id)) group.texts.delete(id);
  replaceKeeping(group.list, elements);
  replaceKeeping(
    group.artifactList,
    artifacts.map((a) => group.artifactCards.element(a)),
  );
  group.artifactCards.keep(new Set(artifacts.map((a) => a.artifact_id)));
  group.artifactList.hidden = artifacts.length === 0;
}
