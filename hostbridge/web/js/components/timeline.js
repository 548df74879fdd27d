// The chat (view kind `chat.timeline`, the system app's): its timeline, the composer, and
// "Show earlier messages". It is the one component always mounted: hidden when another app is
// in front, never cleared, so its timeline, scroll position and draft are as they were when it
// comes back. The timeline interleaves the messages (by order) with the main IM's interaction
// cards (at their `created_at`) and the app sub-sessions' folded groups (at their `opened_at`);
// an Agent's text that is a short result of a group shows in that group instead.
//
// It follows the conversation as chat UIs do (issue 28): at the newest it stays at the newest
// as items arrive; scrolled up, it keeps the user's place, and when something new arrives
// below, a "New messages" button (announced politely, in the tab order between the timeline
// and the composer) takes them to the newest and goes once they are there, however they got
// there. Sending a message goes to the newest. A toast floating over the timeline's foot
// (components/notices.js) never hides the newest item: the timeline's foot is padded by as
// much as the toasts overlap it.

import { byTestId, el, isId, isObject, isShown, replaceKeeping } from "../core/util.js";
import { sortedItems } from "../core/state.js";
import { ArtifactCards } from "./artifact_card.js";
import { CardCache } from "./interaction_card.js";
import { createGroup, updateGroup } from "./app_session_group.js";
import { renderNodes } from "./markdown.js";
import { createModeSwitch } from "./mode_switch.js";

const NEAR_BOTTOM_PX = 64;
const AUTHORS = { agent: "Agent", user: "You" };
const MESSAGE_STATES = ["received", "pending", "sent", "failed"];

export function createTimeline(ctx) {
  const ui = {
    chat: byTestId("chat"),
    timeline: byTestId("timeline"),
    earlier: byTestId("timeline-earlier"),
    empty: byTestId("timeline-empty"),
    composer: byTestId("composer"),
    input: byTestId("composer-input"),
    send: byTestId("composer-send"),
    notices: byTestId("notices"),
  };
  // The way to the newest, between the timeline and the composer (a box of no height, so it
  // floats over the timeline's foot and takes no room).
  const newer = el("button", "timeline-newer", "timeline-newer");
  newer.type = "button";
  newer.hidden = true;
  newer.append(el("span", "", "", "New messages"), el("span", "timeline-newer-arrow", "", "↓"));
  newer.lastChild.setAttribute("aria-hidden", "true");
  newer.setAttribute("aria-label", "New messages: go to the newest");
  const said = el("span", "visually-hidden", "timeline-newer-status", "");
  said.setAttribute("role", "status");
  const jump = el("div", "timeline-jump");
  jump.append(newer, said);
  ui.composer.before(jump);
  let rendered = new Map(); // message id → {key, element}, to keep unchanged DOM nodes
  const cardRows = new Map(); // interaction id → its <li>
  const groups = new Map(); // app_session_id → its group
  const cards = new CardCache("timeline");
  const artifactCards = new ArtifactCards();
  const artifactRows = new Map(); // artifact id → its <li>
  const modeSwitch = createModeSwitch(ctx); // the chat's mode, at the top of the chat
  let shownItems = -1;
  let shownView;
  let composerEnabled = false;
  let scroll = null; // {top, atBottom} when another app came in front
  let following = true; // at the newest, as the last scroll left it
  let seenLast = null; // the timeline's last element when the user was last at the newest
  let inset = 0; // px of the timeline's foot under the toasts

  const canSend = () => ctx.isConnected() && composerEnabled && ctx.state.chatInstance !== null;

  function updateComposer() {
    // The text stays editable while the socket is down (a draft survives a reconnect); the
    // chat app's own "composer.enabled: false" disables it outright.
    ui.input.disabled = !composerEnabled;
    ui.send.disabled = !canSend();
  }

  function submit() {
    const text = ui.input.value;
    if (!text.trim() || !canSend()) return;
    const sent = ctx.send({
      type: "ui.event",
      app_scope: "chat",
      instance_id: ctx.state.chatInstance,
      // The id makes a resubmit after a lost connection harmless: the chat keeps one message.
      event: { kind: "composer.submit", text, client_id: crypto.randomUUID() },
    });
    if (sent) {
      ui.input.value = "";
      ui.input.focus();
      toNewest(); // the echo and the answer come below: the user goes with them
    }
  }

  function askEarlier() {
    const state = ctx.state;
    const oldest = sortedItems(state)[0];
    if (state.chatInstance === null || oldest === undefined) return;
    const sent = ctx.send({
      type: "ui.event",
      app_scope: "chat",
      instance_id: state.chatInstance,
      event: { kind: "timeline.earlier", before_order: oldest.order, before_id: oldest.id },
    });
    if (sent) ui.earlier.disabled = true; // until the page arrives
  }

  // ------------------------------------------------------------ following the conversation

  const atNewest = () => {
    const t = ui.timeline;
    return t.scrollHeight - t.scrollTop - t.clientHeight < NEAR_BOTTOM_PX;
  };

  function toNewest() {
    if (!isShown(ui.timeline)) return; // hidden, nothing is seen (restoreScroll comes back here)
    ui.timeline.scrollTop = ui.timeline.scrollHeight;
    following = true;
    seen();
  }

  // The user is at the newest: what is there now is seen, and the button has done its work.
  function seen() {
    seenLast = ui.timeline.lastElementChild;
    if (newer.hidden) return;
    const hadFocus = newer === document.activeElement;
    newer.hidden = true;
    said.textContent = "";
    if (hadFocus) focus();
  }

  // After a render or a scroll: at the newest, all is seen; scrolled up with a last element
  // the user has not seen at the newest (new below, not an earlier page above), the button.
  function checkNewer() {
    if (!isShown(ui.timeline)) return; // nothing can be measured, or seen, while hidden
    if (atNewest()) {
      seen();
      return;
    }
    const last = ui.timeline.lastElementChild;
    const below =
      last !== null &&
      last !== seenLast &&
      (seenLast === null ||
        !seenLast.isConnected ||
        Boolean(seenLast.compareDocumentPosition(last) & Node.DOCUMENT_POSITION_FOLLOWING));
    if (below && newer.hidden) {
      newer.hidden = false;
      said.textContent = "New messages below";
    }
  }

  ui.timeline.addEventListener(
    "scroll",
    () => {
      following = atNewest();
      checkNewer();
    },
    { passive: true },
  );
  // A picture that loads after its card grew the timeline: still at the newest.
  const stillAtNewest = () => following && toNewest();
  ui.timeline.addEventListener("load", stillAtNewest, true);
  // So is a row that grows (or shrinks) after the render that placed it, with no render after
  // (a card filled in, a line that wraps anew): the timeline's own box keeps its size, so only
  // its rows can say so. Each row is watched while it is in the timeline.
  const rows = typeof ResizeObserver === "function" ? new ResizeObserver(stillAtNewest) : null;
  let watched = new Set();
  function watchRows(elements) {
    if (rows === null) return;
    const now = new Set(elements);
    for (const row of watched) if (!now.has(row)) rows.unobserve(row);
    for (const row of now) if (!watched.has(row)) rows.observe(row);
    watched = now;
  }
  newer.addEventListener("click", () => {
    toNewest();
    focus();
  });

  // Pad the timeline's foot by how much the toasts cover it, so its newest item can be read.
  function fitUnderToasts() {
    if (!isShown(ui.timeline)) return; // measured again when the chat comes back
    const region = ui.notices;
    let overlap = 0;
    if (region !== null && region.childElementCount > 0) {
      const t = ui.timeline.getBoundingClientRect();
      const r = region.getBoundingClientRect();
      const across = r.left < t.right && r.right > t.left;
      if (across && r.top < t.bottom) overlap = Math.ceil(t.bottom - Math.max(r.top, t.top));
    }
    if (overlap !== inset) {
      inset = overlap;
      // A custom property (CSSOM, which the CSP allows), on the chat so that the timeline's
      // padding and the "New messages" button both see it (shell.css).
      ui.chat.style.setProperty("--toast-inset", `${inset}px`);
    }
    if (following) toNewest(); // a toast came or went, or the window changed: still there
  }

  if (ui.notices !== null && typeof ResizeObserver === "function") {
    const observer = new ResizeObserver(fitUnderToasts);
    observer.observe(ui.notices);
    observer.observe(ui.timeline);
  }

  ui.earlier.addEventListener("click", askEarlier);
  ui.composer.addEventListener("submit", (event) => {
    event.preventDefault();
    submit();
  });
  ui.input.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    event.preventDefault();
    submit();
  });

  function retryButton(item) {
    const retry = el("button", "retry", "retry", "Retry");
    retry.type = "button";
    retry.setAttribute("aria-label", "Retry sending this message");
    retry.addEventListener("click", () => {
      const instanceId = ctx.state.chatInstance;
      if (instanceId === null) return;
      const sent = ctx.send({
        type: "ui.event",
        app_scope: "chat",
        instance_id: instanceId,
        event: { kind: "message.retry", message_id: item.id },
      });
      if (sent) retry.disabled = true; // until the next snapshot says what became of it
    });
    return retry;
  }

  function renderMessage(item) {
    const author = item.author === "user" ? "user" : "agent";
    const state = MESSAGE_STATES.includes(item.state) ? item.state : "received";
    const li = el("li", `message from-${author}`, "message");
    li.setAttribute("data-author", author);
    li.setAttribute("data-state", state);
    li.setAttribute("data-message-id", item.id);
    li.append(el("span", "visually-hidden", "", `${AUTHORS[author]}: `));

    const bubble = el("div", "bubble", "message-body");
    renderNodes(item.tree, bubble, 0);
    li.append(bubble);

    const meta = el("div", "meta");
    const at = Number(item.at);
    if (Number.isFinite(at) && at > 0) {
      const date = new Date(at * 1000);
      const time = el(
        "time",
        "",
        "",
        date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }),
      );
      time.setAttribute("datetime", date.toISOString());
      time.setAttribute("title", date.toLocaleString());
      meta.append(time);
    }
    if (state === "pending") {
      meta.append(el("span", "status status-pending", "message-status", "sending…"));
    } else if (state === "sent" && author === "user") {
      // The AppServer has it: a quiet mark, said in words to assistive technology.
      const mark = el("span", "status status-sent", "message-sent", "✓ Sent");
      mark.setAttribute("title", "The AppServer has this message");
      meta.append(mark);
    } else if (state === "failed") {
      meta.append(el("span", "status status-failed", "message-status", "Not sent"), retryButton(item));
    }
    li.append(meta);
    return li;
  }

  function cardRow(view, state, now) {
    const card = cards.element(view, state, ctx, now);
    let row = cardRows.get(view.interaction_id);
    if (row === undefined) {
      row = el("li", "timeline-card", "timeline-card");
      row.setAttribute("data-interaction-id", view.interaction_id);
      cardRows.set(view.interaction_id, row);
    }
    if (row.firstChild !== card) row.replaceChildren(card);
    return row;
  }

  function artifactRow(artifact) {
    let row = artifactRows.get(artifact.artifact_id);
    if (row === undefined) {
      row = el("li", "timeline-card timeline-artifact", "timeline-artifact");
      row.setAttribute("data-artifact-id", artifact.artifact_id);
      row.append(artifactCards.element(artifact));
      artifactRows.set(artifact.artifact_id, row);
    }
    return row;
  }

  function groupRow(entry, state, now) {
    const session = entry.session;
    let group = groups.get(session.app_session_id);
    if (group === undefined) {
      group = createGroup(session);
      groups.set(session.app_session_id, group);
    }
    updateGroup(group, session, entry.views, { state, ctx, now, ...entry });
    return group.li;
  }

  // `extras`: {cards: [InteractionView], groups: [{session, views, artifacts, texts, appTitle,
  // inFront}], artifacts: [artifact card], grouped: Set of the item ids shown in a group, now}.
  function render(state, view, extras) {
    const items = view ? sortedItems(state) : [];
    const timeline = ui.timeline;
    const stickToBottom = atNewest();
    // Only a new chat snapshot or item re-enables Retry.
    const fresh = view !== shownView || shownItems !== state.itemsVersion;
    shownView = view;
    shownItems = state.itemsVersion;

    const timed = [
      ...(view ? extras.cards : []).map((v) => ({ at: v.created_at, card: v })),
      ...(view ? extras.groups : []).map((g) => ({ at: g.session.opened_at, group: g })),
      ...(view ? extras.artifacts : []).map((a) => ({ at: a.created_at, artifact: a })),
    ].sort((a, b) => a.at - b.at);
    const next = new Map();
    const elements = [];
    const usedCards = new Set();
    const usedGroups = new Set();
    const usedArtifacts = new Set();
    let k = 0;
    const flush = (until) => {
      while (k < timed.length && (until === null || timed[k].at < until)) {
        const entry = timed[k++];
        if (entry.card) {
          usedCards.add(entry.card.interaction_id);
          elements.push(cardRow(entry.card, state, extras.now));
        } else if (entry.artifact) {
          usedArtifacts.add(entry.artifact.artifact_id);
          elements.push(artifactRow(entry.artifact));
        } else {
          usedGroups.add(entry.group.session.app_session_id);
          elements.push(groupRow(entry.group, state, extras.now));
        }
      }
    };
    for (const item of items) {
      if (!isId(item.id) || next.has(item.id) || extras.grouped?.has(item.id)) continue;
      const at = Number(item.at);
      if (Number.isFinite(at) && at > 0) flush(at);
      const key = state.items.get(item.id).version;
      const old = rendered.get(item.id);
      const element = old && old.key === key ? old.element : renderMessage(item);
      if (fresh) {
        const retry = element.querySelector('[data-testid="retry"]');
        if (retry) retry.disabled = false;
      }
      next.set(item.id, { key, element });
      elements.push(element);
    }
    flush(null);
    for (const id of cardRows.keys()) if (!usedCards.has(id)) cardRows.delete(id);
    for (const id of groups.keys()) if (!usedGroups.has(id)) groups.delete(id);
    for (const id of artifactRows.keys()) if (!usedArtifacts.has(id)) artifactRows.delete(id);
    artifactCards.keep(usedArtifacts);
    cards.keep(usedCards);
    // Move only what changed, so unchanged messages are not re-announced by the live region.
    replaceKeeping(timeline, elements);
    watchRows(elements);
    rendered = next;
    ui.empty.hidden = elements.length > 0;
    ui.earlier.hidden = !(view && state.moreItems && items.length > 0);
    if (fresh) ui.earlier.disabled = false;
    composerEnabled = Boolean(view && isObject(view.composer) && view.composer.enabled === true);
    modeSwitch.render(view);
    updateComposer();
    if (stickToBottom) toNewest();
    checkNewer();
  }

  function saveScroll() {
    scroll = { top: ui.timeline.scrollTop, atBottom: atNewest() };
  }

  function restoreScroll() {
    const saved = scroll;
    scroll = null;
    if (saved === null || saved.atBottom) {
      toNewest();
    } else {
      ui.timeline.scrollTop = saved.top;
      following = false;
      checkNewer(); // what came while another app was in front is new
    }
    fitUnderToasts();
  }

  function focus() {
    (ui.input.disabled ? ui.timeline : ui.input).focus();
  }

  return { render, saveScroll, restoreScroll, updateComposer, focus, section: ui.chat };
}
