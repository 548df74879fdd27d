// The LineUp Shell: the browser side of hostbridge (DESIGN §7). Plain ES modules, no build.
//
// Theory of operation: core/connection.js keeps one WebSocket to `/ws` (its token offered as
// a subprotocol; a heartbeat watchdog); every frame goes through the one reducer (core/state.js) into `state`;
// then `render()` lets each component read the state: the runtime badge, notices and toasts,
// the app switcher and the Apps launcher, the stage (the chat, always mounted, or the component registered for the
// foreground view's kind, core/registry.js), the interaction overlay above it, the cards an app
// asked for in its own container, and the chat's timeline with its cards and sub-session groups.
// Every DOM node is built with createElement/textContent/setAttribute: no innerHTML, no inline
// script or style, no eval, no external load, so the one CSP the server sets holds and nothing
// in a message can become markup.

import { notifySurfaces, setOnline } from "./core/bridge.js";
import { createConnection } from "./core/connection.js";
import { createStage, register } from "./core/registry.js";
import {
  FINAL_STATES,
  createState,
  isOpen,
  receive,
  sessionOf,
  sortedItems,
} from "./core/state.js";
import { byTestId, el, isShown, replaceKeeping } from "./core/util.js";
import { card } from "./components/card.js";
import { CardCache } from "./components/interaction_card.js";
import { createLauncher } from "./components/launcher.js";
import { createLinkPrompt } from "./components/link_prompt.js";
import { createNotices } from "./components/notices.js";
import { createOverlay } from "./components/overlay.js";
import { createPermissionPrompt } from "./components/permission_prompt.js";
import { createPermissionsPage } from "./components/permissions_page.js";
import { createProposal } from "./components/proposal.js";
import { createProviderRuns } from "./components/provider_run.js";
import { createStatus } from "./components/status.js";
import { accessLinkChanged, stopTheft, surface } from "./components/surface.js";
import { createSwitcher, instanceTitle } from "./components/switcher.js";
import { taskDashboard } from "./components/task_dashboard.js";
import { createTimeline } from "./components/timeline.js";

const MAX_APP_CARDS = 5; // an app's own container shows its newest few cards
const MAX_TICK_MS = 60 * 60 * 1000;

register("task.dashboard", taskDashboard);
register("card", card); // the generic card any app may show (lineup.sdk.card)
register("lineup.surface", surface);

const state = createState();
state.onSurfaceNotify = notifySurfaces; // a Surface's subscriptions, straight to its bridge
const ui = {
  appView: byTestId("app-view"),
  placeholder: byTestId("app-placeholder"),
  appCards: byTestId("app-interactions"),
  skipLink: document.querySelector(".skip-link"),
};
let expiryTimer = null;
let askedKey = ""; // the foreground app's own questions and their states, as last rendered

const ctx = {
  state,
  send: (frame) => connection.send(frame),
  isConnected: () => connection.isConnected(),
  rerender: () => render(),
  // One answer per interaction from this Shell: the first click sends, the rest do nothing
  // until the runtime's next view of it (core/state.js clears `answering` then).
  answer(interactionId, answer) {
    if (state.answering.has(interactionId)) return false;
    const sent = connection.send({
      type: "interaction.answer",
      interaction_id: interactionId,
      answer,
    });
    if (sent) {
      state.answering.add(interactionId);
      render();
    }
    return sent;
  },
  draft(interactionId, values) {
    connection.send({ type: "interaction.draft", interaction_id: interactionId, values });
  },
  waitingInstances: (s) => waitingInstances(s, Date.now() / 1000),
};

const notices = createNotices();
const status = createStatus();
const switcher = createSwitcher(ctx);
const timeline = createTimeline(ctx);
const overlay = createOverlay(ctx);
const stage = createStage(ui.appView, ctx);
const permissionPrompt = createPermissionPrompt(ctx);
const providerRuns = createProviderRuns(ctx, notices);
const permissionsPage = createPermissionsPage(ctx);
const launcher = createLauncher(ctx);
const appCards = new CardCache("app");
// An MCP App's `ui/message` and `ui/open-link` (core/bridge.js): the user decides each.
const proposal = createProposal(ctx, notices);
const linkPrompt = createLinkPrompt(ctx);
ctx.title = (instance) => instanceTitle(state, instance);
ctx.propose = (instanceId, text) => proposal.offer(instanceId, text);
ctx.openLink = (instanceId, href) => {
  const instance = state.instances.find((i) => i.instance_id === instanceId);
  return instance === undefined ? Promise.resolve(false) : linkPrompt.ask(instanceTitle(state, instance), href);
};
const appCardList = el("div", "app-interactions-cards");
ui.appCards.append(appCardList);

const connection = createConnection({
  onFrame(data) {
    if (receive(state, data)) render();
  },
  onStatus(link) {
    state.link = link;
    setOnline(link.connected); // every Surface is told, and its waiting requests end
    accessLinkChanged(link.connected); // a page waiting on its grant is framed without it
    if (!link.connected) state.runtime = { state: "disconnected", reason: null };
    state.answering.clear(); // what was sent on a dead socket may never have arrived
    state.answered.clear();
    render();
  },
  onOpen() {
    sendDeepLink();
    render();
  },
  onTooLong: () => notices.add("error", "This message is too long to send. Please shorten it."),
  onNewRun() {
    // Another run's link: its messages and questions are its own.
    state.items.clear();
    state.itemsVersion += 1;
    state.interactions.clear();
    state.sessions.clear();
    state.drafts.clear();
    state.interactionsVersion += 1;
    state.sessionData.clear();
    state.artifacts.clear();
    state.artifactsVersion += 1;
    state.prompts.clear();
    state.runs.clear();
    state.grants = null;
    state.grantsVersion += 1;
  },
});

// ---------------------------------------------------------------- the deep link

// `#open=<app_scope>` asks the runtime to open that app (seed 004 §4.3: an explicit target is
// the start target). The fragment is URL-encoded parameters, so with the token it reads
// `#token=<token>&open=<app_scope>`; core/connection.js takes the token and leaves the rest.
// Taken from the address bar once (a reload does not open it again), sent once connected; the
// runtime brings the app's instance forward or opens one, and a refusal (an unknown or
// disabled app) comes back as a notice naming its code, the chat staying in front.
const APP_SCOPE = /^[a-z][a-z0-9-]{0,62}$/;
let deepLink = null; // the app to open, until it is sent

function takeDeepLink() {
  const params = new URLSearchParams(window.location.hash.slice(1));
  const scope = params.get("open");
  if (scope === null) return;
  params.delete("open");
  const rest = params.toString();
  const url = window.location.pathname + window.location.search + (rest ? `#${rest}` : "");
  window.history.replaceState(window.history.state, "", url);
  if (!APP_SCOPE.test(scope)) {
    notices.add("error", "That app could not be opened.", { code: "app_not_installed" });
    return;
  }
  deepLink = scope;
  sendDeepLink();
}

function sendDeepLink() {
  if (deepLink !== null && connection.send({ type: "ui.open", app_scope: deepLink })) {
    deepLink = null;
  }
}

window.addEventListener("hashchange", takeDeepLink);

// ---------------------------------------------------------------- where cards go

const byCreation = (a, b) => a.created_at - b.created_at;

// The main IM's cards, each open sub-session group with its questions, and (per instance) the
// cards an app asked for itself. An artifact's card goes to its instance's sub-session group if
// this Shell knows one, else to the main IM (at its `created_at`). An Agent's text naming a
// sub-session this Shell knows (its `app_session_id`) is a short result in that group, not a
// message of the main timeline; naming one it does not know, it stays in the timeline.
function placement(s, now) {
  const main = [];
  const grouped = new Map(); // app_session_id → views
  const byApp = new Map(); // instance_id → views
  for (const view of s.interactions.values()) {
    if (view.source === "miniapp") {
      if (!byApp.has(view.instance_id)) byApp.set(view.instance_id, []);
      byApp.get(view.instance_id).push(view);
      continue;
    }
    const session = sessionOf(s, view);
    // No sub-session (or one this Shell was not told of): the main IM's. A question still open
    // when its app ended stays with the main IM; the ended group keeps the rest, read-only.
    if (session === null || (session.state === "closed" && isOpen(view, now))) {
      main.push(view);
      continue;
    }
    if (!grouped.has(session.app_session_id)) grouped.set(session.app_session_id, []);
    grouped.get(session.app_session_id).push(view);
  }
  const sessionOfInstance = new Map();
  for (const session of s.sessions.values()) {
    sessionOfInstance.set(session.instance_id, session.app_session_id); // the latest wins
  }
  const mainArtifacts = [];
  const groupArtifacts = new Map(); // app_session_id → artifacts
  for (const artifact of s.artifacts.values()) {
    const sessionId = artifact.instance_id ? sessionOfInstance.get(artifact.instance_id) : undefined;
    if (sessionId === undefined) {
      mainArtifacts.push(artifact);
      continue;
    }
    if (!groupArtifacts.has(sessionId)) groupArtifacts.set(sessionId, []);
    groupArtifacts.get(sessionId).push(artifact);
  }
  const groupTexts = new Map(); // app_session_id → the Agent's items, in timeline order
  const groupedItems = new Set(); // their ids, which the main timeline leaves out
  for (const item of sortedItems(s)) {
    if (item.author !== "agent" || !s.sessions.has(item.app_session_id)) continue;
    if (!groupTexts.has(item.app_session_id)) groupTexts.set(item.app_session_id, []);
    groupTexts.get(item.app_session_id).push(item);
    groupedItems.add(item.id);
  }
  const groups = [...s.sessions.values()].map((session) => {
    const instance = s.instances.find((i) => i.instance_id === session.instance_id);
    return {
      session,
      views: (grouped.get(session.app_session_id) ?? []).sort(byCreation),
      artifacts: (groupArtifacts.get(session.app_session_id) ?? []).sort(byCreation),
      texts: groupTexts.get(session.app_session_id) ?? [],
      appTitle: instance ? instanceTitle(s, instance) : appName(s, session.app_scope),
      inFront: session.state === "open" && session.instance_id === s.foreground,
    };
  });
  return {
    main: main.sort(byCreation),
    groups,
    byApp,
    artifacts: mainArtifacts.sort(byCreation),
    groupedItems,
  };
}

// An app no longer open, by its title as the launcher lists it (issue 28: "Draw and Guess",
// never a made-up "Draw And Guess"); an app not listed any more, by its id.
const appName = (s, scope) =>
  s.launchable.find((app) => app.app_scope === scope)?.title ?? String(scope);

// The instances behind the front with a question open: an Agent's question of their open
// sub-session, or one the app asked itself (its card is in the app's own container).
function waitingInstances(s, now) {
  const waiting = new Set();
  for (const view of s.interactions.values()) {
    if (view.source === "miniapp") {
      if (isOpen(view, now) && view.instance_id && view.instance_id !== s.foreground) {
        waiting.add(view.instance_id);
      }
      continue;
    }
    const session = sessionOf(s, view);
    if (session === null || session.state !== "open" || !isOpen(view, now)) continue;
    if (session.instance_id !== s.foreground) waiting.add(session.instance_id);
  }
  return waiting;
}

// Re-render when the next open card passes its expiry, so it shows as expired on time.
function armExpiry(now) {
  window.clearTimeout(expiryTimer);
  let next = Infinity;
  for (const view of state.interactions.values()) {
    if (FINAL_STATES.has(view.state) || !Number.isFinite(view.expires_at)) continue;
    if (view.expires_at > now) next = Math.min(next, view.expires_at);
  }
  if (next === Infinity) return;
  const delay = Math.min(MAX_TICK_MS, Math.max(0, (next - now) * 1000) + 50);
  expiryTimer = window.setTimeout(render, delay);
}

// ---------------------------------------------------------------- rendering

function render() {
  const now = Date.now() / 1000;
  status.render(state);
  notices.render(state);
  switcher.render(state);
  launcher.render(state);
  permissionsPage.render(state);

  const front = state.instances.find((i) => i.instance_id === state.foreground);
  const chatInFront = !front || front.app_scope === "chat";
  const entry = chatInFront ? undefined : state.views.get(front.instance_id);
  const focused = document.activeElement;
  const chatWasShown = !timeline.section.hidden;

  if (chatWasShown && !chatInFront) timeline.saveScroll();
  timeline.section.hidden = !chatInFront;
  ui.skipLink.hidden = !chatInFront;
  const mounted = !chatInFront && stage.show(front.instance_id, entry);
  if (!mounted) stage.clear();
  ui.appView.hidden = !mounted;
  ui.placeholder.hidden = chatInFront || mounted;
  if (!chatInFront && !mounted) {
    const title = instanceTitle(state, front);
    ui.placeholder.querySelector("p").textContent =
      entry === undefined && state.resuming.has(front.instance_id)
        ? `Resuming ${title}…`
        : entry === undefined && front.state === "starting"
          ? `Opening ${title}…`
          : `${title} is in front. This Shell cannot show its view yet; ` +
            "switch back to the conversation with the bar above.";
  }

  const places = placement(state, now);
  // The overlay: the open questions of the foreground app's own sub-session.
  const frontGroup = chatInFront ? undefined : places.groups.find((g) => g.inFront);
  const overlayUp = overlay.render(
    state,
    chatInFront ? null : front.instance_id,
    frontGroup ? frontGroup.views.filter((v) => isOpen(v, now)) : [],
    now,
  );
  // An app's own questions: in its container, shown while it is in front, focus untouched.
  const asked = chatInFront ? [] : (places.byApp.get(front.instance_id) ?? []);
  const shown = asked.sort(byCreation).slice(-MAX_APP_CARDS);
  const key = asked.map((v) => `${v.interaction_id}:${v.state}`).join(" ");
  if (key !== askedKey && mounted) stage.poke();
  askedKey = key;
  ui.appCards.hidden = shown.length === 0;
  replaceKeeping(
    appCardList,
    shown.map((v) => appCards.element(v, state, ctx, now)),
  );
  appCards.keep(new Set(shown.map((v) => v.interaction_id)));

  const chat = state.chatInstance === null ? undefined : state.views.get(state.chatInstance);
  const chatView = chat && chat.view.kind === "chat.timeline" ? chat.view : null;
  timeline.render(state, chatView, {
    cards: places.main,
    groups: places.groups,
    artifacts: places.artifacts,
    grouped: places.groupedItems,
    now,
  });
  if (!chatWasShown && chatInFront) timeline.restoreScroll();

  // Focus that was on something now hidden or gone moves to what took its place.
  const current = document.activeElement;
  if (
    focused &&
    focused !== document.body &&
    (!current || current === document.body || !isShown(current))
  ) {
    if (chatInFront) timeline.focus();
    else if (mounted) stage.focus();
  }
  // The runtime's own dialogs last: nothing the stage does moves focus out of them.
  providerRuns.render(state);
  permissionPrompt.render(state);
  shieldSurfaces(overlayUp || document.querySelector("dialog[open]") !== null);
  armExpiry(now);
}

// While the runtime's own overlay or one of its dialogs is up, no Surface may take the keyboard
// from it: a frame that focuses itself every few milliseconds would get the keys the user types
// into the runtime's question or prompt, and no browser API keeps a frame from taking focus
// (not `inert`, not `display: none`). So meanwhile the Surfaces' frames take no click and no
// Tab (a focus that lands in one is never the user's), and one that takes focus all the same is
// stopped before another key reaches it (`stopTheft`), the focus given back where it was.
let shielded = false;

function shieldSurfaces(on) {
  shielded = on;
  for (const frame of document.querySelectorAll("iframe.surface-frame")) {
    frame.toggleAttribute("data-shielded", on);
    frame.setAttribute("tabindex", on ? "-1" : "0");
  }
}

// The runtime's own UI that holds the keyboard now, read from the page as it is (a dialog just
// closed gives focus back to what had it, a Surface's frame maybe: that is no theft).
const guard = () => {
  const dialog = document.querySelector("dialog[open]");
  if (dialog !== null) return dialog;
  const panel = document.querySelector('[data-testid="overlay-panel"]');
  return panel !== null && isShown(panel) ? panel : null;
};
let guarded = null; // the last element of the overlay or a dialog that had focus

document.addEventListener("focusin", (event) => {
  if (shielded && guard()?.contains(event.target)) guarded = event.target;
});
window.addEventListener("blur", () => {
  // The page lost focus to one of its frames (to another window, nothing here is focused).
  const frame = document.activeElement;
  const around = guard();
  if (!shielded || around === null || !(frame instanceof HTMLIFrameElement)) return;
  if (!stopTheft(frame)) return;
  const back = guarded?.isConnected && around?.contains(guarded) ? guarded : null;
  (back ?? around?.querySelector("input, textarea, button:not([disabled])") ?? around)?.focus();
});

// ---------------------------------------------------------------- start

render();
connection.start();
takeDeepLink();
