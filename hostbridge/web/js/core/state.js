// The Shell's state, and the one reducer of the runtime's frames into it.
//
// Theory of operation: the hostbridge sends whole snapshots (runtime state, the app list, one
// view per instance) and upserts (a timeline's items by id, interactions and app sub-sessions by
// id); `reduce` folds each frame into `state`, re-checking its shape, and renders nothing: the
// components read the state afterwards (core/registry.js, main.js). So a reconnect or a reload
// needs nothing but the next snapshot.

import { isId, isObject, isOrder } from "./util.js";

export const MAX_FRAME_CHARS = 4 * 1024 * 1024; // largest frame accepted from the runtime
const MAX_ITEMS = 1000; // timeline items kept; the oldest go first (they can be asked again)
const MAX_INTERACTIONS = 1000;
const MAX_SESSIONS = 500;
// Instance states that are gone or going: such an instance gets no switcher button.
const ENDED_STATES = new Set(["stopping", "stopped", "failed"]);
const APP_SCOPE = /^[a-z][a-z0-9-]{0,62}$/; // an app the launcher may offer (`ui.open`)
export const FINAL_STATES = new Set(["completed", "cancelled", "expired", "failed"]);
const INTERACTION_KINDS = new Set(["notice", "choice", "confirm", "input"]);
const TOAST_RECENT_S = 60;

export function createState() {
  return {
    link: { connected: false, banner: null, reason: null },
    runtime: { state: "unknown", reason: null },
    foreground: null, // instance_id from the last shell.apps
    instances: [], // from the last shell.apps, live ones only
    launchable: [], // {app_scope, title} the launcher offers, from the last shell.apps
    firstSeen: new Map(), // instance_id → [seconds, stack index]: when this Shell first saw it
    views: new Map(), // instance_id → {appScope, view}: the last snapshot of each
    chatInstance: null, // the chat instance whose view the timeline shows
    items: new Map(), // message id → {item, version}: the chat's timeline items
    itemsVersion: 0, // bumped by every item frame, so the timeline re-renders
    moreItems: false, // older items than the oldest held remain (the last shell.page said)
    resuming: new Set(), // suspended instances the user opened, until their view arrives
    interactions: new Map(), // interaction_id → InteractionView (hostbridge/messages.py)
    interactionsVersion: 0,
    sessions: new Map(), // app_session_id → AppSessionView
    drafts: new Map(), // interaction_id → {field_id: value}: typed here, or kept by the runtime
    answering: new Set(), // interactions answered from this Shell, until their next view
    notices: [], // {level, text} to show, drained by the notices component
    toasts: [], // interaction views to toast (a notice), drained likewise
    draftStamps: new Map(), // interaction_id → n: drafts the runtime sent (its card is rebuilt)
    surfaceCalls: new Map(), // request_id → settle(reply): a Surface's requests (core/bridge.js)
    sessionData: new Map(), // instance_id → {surface_id, data, revision}: the newest heard
    onSurfaceNotify: null, // told each `shell.surface.notify` (main.js: core/bridge.js's)
    artifacts: new Map(), // artifact_id → ArtifactInfo JSON with its `ticket`
    artifactsVersion: 0,
    // Capabilities (issue 14): the runtime's own permission prompts and the host providers for
    // this Shell to run, by id, until the runtime says they ended; ids ended (a late frame of
    // one never reopens it); and the permissions page's grants (null: not listed yet).
    prompts: new Map(), // prompt_id → CapabilityPromptView JSON
    runs: new Map(), // run_id → ProviderRunView JSON
    capabilityEnded: new Set(),
    answered: new Set(), // prompts and runs this Shell answered, until they end
    grants: null,
    grantsVersion: 0,
  };
}

export const itemBefore = (a, b) => a.order < b.order || (a.order === b.order && a.id < b.id);

export function sortedItems(state) {
  const items = [...state.items.values()].map((entry) => entry.item);
  return items.sort((a, b) => (itemBefore(a, b) ? -1 : itemBefore(b, a) ? 1 : 0));
}

// Parse and fold one frame; false if it was not one the Shell reads.
export function receive(state, data) {
  if (typeof data !== "string" || data.length > MAX_FRAME_CHARS) return false;
  let frame;
  try {
    frame = JSON.parse(data);
  } catch {
    return false;
  }
  if (!isObject(frame)) return false;
  return reduce(state, frame);
}

export function reduce(state, frame) {
  switch (frame.type) {
    case "shell.hello":
      // A greeting follows; its page of items merges into what this Shell holds (an item
      // frame sent meanwhile may be newer than the page: `rev` decides).
      state.moreItems = false;
      state.itemsVersion += 1;
      if (isObject(frame.runtime)) setRuntime(state, frame.runtime.state, frame.runtime.reason);
      return true;
    case "shell.runtime":
      setRuntime(state, frame.state, frame.reason);
      return true;
    case "shell.view":
      return onView(state, frame);
    case "shell.items":
      return onItems(state, frame);
    case "shell.page":
      return onPage(state, frame);
    case "shell.apps":
      return onApps(state, frame);
    case "shell.notice":
      if (typeof frame.text === "string" && frame.text) {
        const level = frame.level === "error" ? "error" : "info";
        state.notices.push({ level, text: frame.text, code: frame.code ?? null });
      }
      return true;
    case "shell.interactions":
      return onInteractions(state, frame);
    case "shell.app_sessions":
      return onSessions(state, frame);
    case "shell.drafts":
      return onDrafts(state, frame);
    case "shell.heartbeat":
      return false; // the connection's watchdog saw it; nothing to show
    case "shell.surface.reply":
      return onSurfaceReply(state, frame);
    case "shell.session_data":
      return onSessionData(state, frame);
    case "shell.surface.notify":
      state.onSurfaceNotify?.(frame); // to the Surface's bridge (core/bridge.js), nothing held
      return false;
    case "shell.artifacts":
      return onArtifacts(state, frame);
    case "shell.capability.prompt":
      return onPrompt(state, frame);
    case "shell.capability.run":
      return onRun(state, frame);
    case "shell.capability.ended":
      return onCapabilityEnded(state, frame);
    case "shell.grants":
      return onGrants(state, frame);
    default:
      return false; // a newer runtime may send more; ignoring keeps this Shell working
  }
}

function setRuntime(state, runtimeState, reason) {
  state.runtime = {
    state: typeof runtimeState === "string" ? runtimeState : "unknown",
    reason: typeof reason === "string" ? reason : null,
  };
}

function onView(state, frame) {
  if (!isId(frame.instance_id) || typeof frame.app_scope !== "string") return false;
  if (!isObject(frame.view)) return false;
  state.views.set(frame.instance_id, { appScope: frame.app_scope, view: frame.view });
  state.resuming.delete(frame.instance_id);
  if (frame.app_scope === "chat") state.chatInstance = frame.instance_id;
  return true;
}

// Items belong to the chat's timeline (the only trusted component that shows them).
function onItems(state, frame) {
  if (!isId(frame.instance_id) || frame.app_scope !== "chat") return false;
  if (!Array.isArray(frame.items)) return false;
  if (state.chatInstance === null) state.chatInstance = frame.instance_id;
  if (frame.instance_id !== state.chatInstance) return false;
  for (const item of frame.items) {
    if (!isObject(item) || !isId(item.id) || !isOrder(item.order) || !isOrder(item.rev)) continue;
    const held = state.items.get(item.id);
    if (held !== undefined && held.item.rev > item.rev) continue; // an older version
    state.itemsVersion += 1;
    state.items.set(item.id, { item, version: state.itemsVersion });
  }
  if (state.items.size > MAX_ITEMS) {
    for (const oldest of sortedItems(state).slice(0, state.items.size - MAX_ITEMS)) {
      state.items.delete(oldest.id);
    }
    state.moreItems = true;
  }
  return true;
}

function onPage(state, frame) {
  if (!isId(frame.instance_id) || frame.instance_id !== state.chatInstance) return false;
  state.moreItems = frame.more === true;
  state.itemsVersion += 1;
  return true;
}

function onApps(state, frame) {
  const instances = Array.isArray(frame.instances) ? frame.instances : [];
  state.instances = instances.filter(
    (i) => isObject(i) && isId(i.instance_id) && !ENDED_STATES.has(i.state),
  );
  state.foreground = isId(frame.foreground) ? frame.foreground : null;
  const offered = Array.isArray(frame.launchable) ? frame.launchable : [];
  state.launchable = offered.filter(
    (a) => isObject(a) && APP_SCOPE.test(a.app_scope) && typeof a.title === "string",
  );
  const live = new Set(state.instances.map((i) => i.instance_id));
  const now = Date.now() / 1000;
  state.instances.forEach((i, index) => {
    if (!state.firstSeen.has(i.instance_id)) state.firstSeen.set(i.instance_id, [now, index]);
  });
  for (const id of state.firstSeen.keys()) if (!live.has(id)) state.firstSeen.delete(id);
  // A suspended instance has no process, so no view: one still held is from before it was
  // suspended (maybe from an earlier run, its Surface no longer served), and mounting it would
  // show a dead page. It shows again once its resumed app sends a view.
  const viewless = new Set(
    state.instances.filter((i) => i.state === "suspended").map((i) => i.instance_id),
  );
  for (const id of state.views.keys()) {
    if (!live.has(id) || viewless.has(id)) state.views.delete(id);
  }
  for (const id of state.resuming) if (!live.has(id)) state.resuming.delete(id);
  for (const id of state.sessionData.keys()) if (!live.has(id)) state.sessionData.delete(id);
  if (state.chatInstance !== null && !live.has(state.chatInstance)) state.chatInstance = null;
  const chat = state.instances.find((i) => i.app_scope === "chat");
  if (state.chatInstance === null && chat) state.chatInstance = chat.instance_id;
  return true;
}

const isTime = (value) => typeof value === "number" && Number.isFinite(value) && value >= 0;

function isInteraction(view) {
  return (
    isObject(view) &&
    isId(view.interaction_id) &&
    INTERACTION_KINDS.has(view.kind) &&
    typeof view.state === "string" &&
    isObject(view.request) &&
    (view.source === "agent_tool" || view.source === "miniapp") &&
    isTime(view.created_at)
  );
}

function onInteractions(state, frame) {
  if (!Array.isArray(frame.interactions)) return false;
  for (const view of frame.interactions) {
    if (!isInteraction(view)) continue;
    const held = state.interactions.get(view.interaction_id);
    // A final state is final: a late, older view of it never reopens the card.
    if (held !== undefined && FINAL_STATES.has(held.state) && !FINAL_STATES.has(view.state)) {
      continue;
    }
    state.interactions.set(view.interaction_id, view);
    state.answering.delete(view.interaction_id); // the runtime said what became of it
    if (FINAL_STATES.has(view.state)) {
      state.drafts.delete(view.interaction_id);
      state.draftStamps.delete(view.interaction_id);
    }
    // A notice new to this Shell, and recent (not one from long ago a greeting lists), toasts.
    const recent = Date.now() / 1000 - view.created_at < TOAST_RECENT_S;
    if (view.kind === "notice" && held === undefined && recent) state.toasts.push(view);
  }
  if (state.interactions.size > MAX_INTERACTIONS) {
    const finals = [...state.interactions.values()]
      .filter((v) => FINAL_STATES.has(v.state))
      .sort((a, b) => a.created_at - b.created_at);
    for (const old of finals.slice(0, state.interactions.size - MAX_INTERACTIONS)) {
      state.interactions.delete(old.interaction_id);
    }
  }
  state.interactionsVersion += 1;
  return true;
}

function onSessions(state, frame) {
  if (!Array.isArray(frame.sessions)) return false;
  for (const session of frame.sessions) {
    if (!isObject(session) || !isId(session.app_session_id) || !isId(session.instance_id)) {
      continue;
    }
    if (typeof session.app_scope !== "string" || !isTime(session.opened_at)) continue;
    if (session.state !== "open" && session.state !== "closed") continue;
    state.sessions.set(session.app_session_id, session);
  }
  while (state.sessions.size > MAX_SESSIONS) {
    state.sessions.delete(state.sessions.keys().next().value);
  }
  state.interactionsVersion += 1;
  return true;
}

function onDrafts(state, frame) {
  if (!isObject(frame.drafts)) return false;
  for (const [id, values] of Object.entries(frame.drafts)) {
    // What was typed here since wins over what the runtime kept from before.
    if (!isId(id) || !isObject(values) || state.drafts.has(id)) continue;
    state.drafts.set(id, { ...values });
    state.draftStamps.set(id, (state.draftStamps.get(id) ?? 0) + 1);
  }
  state.interactionsVersion += 1;
  return true;
}

// A Surface's request answered: to the bridge that asked (nothing to render).
function onSurfaceReply(state, frame) {
  if (!isId(frame.request_id)) return false;
  const settle = state.surfaceCalls.get(frame.request_id);
  if (settle === undefined) return false; // its Surface is gone, or it timed out
  settle({ result: frame.result, error: frame.error, progress: frame.progress });
  return false;
}

function onSessionData(state, frame) {
  if (!isId(frame.instance_id) || !isId(frame.surface_id) || !isOrder(frame.revision)) return false;
  const held = state.sessionData.get(frame.instance_id);
  if (held !== undefined && held.surface_id === frame.surface_id && held.revision >= frame.revision) {
    return false; // revisions only go up
  }
  const data = isObject(frame.data) ? frame.data : null;
  state.sessionData.set(frame.instance_id, {
    surface_id: frame.surface_id,
    data,
    revision: frame.revision,
  });
  return true;
}

const MAX_ARTIFACTS = 500;

function onArtifacts(state, frame) {
  if (!Array.isArray(frame.artifacts)) return false;
  for (const a of frame.artifacts) {
    if (!isObject(a) || !isId(a.artifact_id) || typeof a.ticket !== "string") continue;
    if (typeof a.name !== "string" || typeof a.media_type !== "string") continue;
    if (!isOrder(a.size) || !isTime(a.created_at)) continue;
    state.artifacts.set(a.artifact_id, a);
  }
  while (state.artifacts.size > MAX_ARTIFACTS) {
    state.artifacts.delete(state.artifacts.keys().next().value);
  }
  state.artifactsVersion += 1;
  return true;
}

const MAX_PENDING = 64; // prompts (and runs) held, as the hostbridge holds
const MAX_ENDED = 1000;

function hold(map, key, value) {
  map.delete(key);
  map.set(key, value);
  while (map.size > MAX_PENDING) map.delete(map.keys().next().value);
}

function onPrompt(state, frame) {
  const p = frame.prompt;
  if (!isObject(p) || !isId(p.prompt_id) || state.capabilityEnded.has(p.prompt_id)) return false;
  if (typeof p.capability !== "string" || typeof p.purpose !== "string") return false;
  if (typeof p.app_title !== "string" || !isTime(p.expires_at)) return false;
  hold(state.prompts, p.prompt_id, p);
  return true;
}

function onRun(state, frame) {
  const r = frame.run;
  if (!isObject(r) || !isId(r.run_id) || state.capabilityEnded.has(r.run_id)) return false;
  if (typeof r.capability !== "string" || !isObject(r.input) || !isTime(r.expires_at)) return false;
  hold(state.runs, r.run_id, r);
  return true;
}

function onCapabilityEnded(state, frame) {
  if (!isId(frame.id)) return false;
  state.prompts.delete(frame.id);
  state.runs.delete(frame.id);
  state.answered.delete(frame.id);
  state.capabilityEnded.add(frame.id);
  while (state.capabilityEnded.size > MAX_ENDED) {
    state.capabilityEnded.delete(state.capabilityEnded.values().next().value);
  }
  return true;
}

function onGrants(state, frame) {
  if (!Array.isArray(frame.grants)) return false;
  state.grants = frame.grants.filter(
    (g) => isObject(g) && isId(g.app_scope) && isId(g.capability) && typeof g.policy === "string",
  );
  state.grantsVersion += 1;
  return true;
}

// Where an interaction's cards go (hostbridge/messages.py InteractionView, contract §4).
export function sessionOf(state, view) {
  if (view.source !== "agent_tool" || !isId(view.app_session_id)) return null;
  return state.sessions.get(view.app_session_id) ?? null;
}

export const isOpen = (view, now) =>
  !FINAL_STATES.has(view.state) &&
  view.state !== "submitted" &&
  !(isTime(view.expires_at) && view.expires_at <= now);
