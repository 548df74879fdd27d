// The Surface bridge: JSON-RPC 2.0 over postMessage between the Shell and a Surface's sandboxed
// iframe (issue 13), in the MCP Apps dialect (SEP-1865, "2026-01-26") where the meaning is the
// same, LineUp's own methods under `lineup/`.
//
// Theory of operation: one window "message" listener for every mounted Surface. A message is
// taken only if its `source` is the very window of a mounted Surface's iframe (the origin
// string of a sandboxed frame is "null" and proves nothing), its instance is live, it is within
// the rate (60/s, burst 120) and the size cap (64 KiB of UTF-8 JSON), it is JSON-RPC 2.0, the
// handshake allows it (`ui/initialize`, then `ui/notifications/initialized`, nothing else
// before), its method is in `METHODS` (core/bridge_methods.js) and its params pass that
// method's validator. Anything else is dropped and counted: per Surface on its container
// (`data-bridge-rejections`), and reported to the runtime at most once a second (`surface.rejected`, audited there). A rejected
// request with an `id` gets a JSON-RPC error, except from a foreign window, never answered.
// What needs the runtime goes as `surface.request` and comes back as `shell.surface.reply`
// (the hostbridge checks it again, focus a third time). A Surface's standard interaction
// (`lineup/ui/request`) goes the same way to the router, which records it as its app's own
// question (its card shows where that app's questions do); the reply names it, and once the
// Shell's state (`shell.interactions`) shows it final, that Surface alone is told
// (`lineup/notifications/interaction`). A capability request (`lineup/capabilities/request`)
// goes the same way to the gateway; its JSON-RPC result is the CapabilityResult, whatever the
// status (a refusal is a result, not an error). While the Shell has no link to the runtime
// (`setOnline(false)`, from main.js), every mounted Surface past its handshake is told
// (`lineup/notifications/connection`, and `hostContext.lineup.online` at `ui/initialize`),
// its requests awaiting the runtime are answered at once with `runtime_unreachable` (their
// replies would come on the socket that is gone), and a new one is refused the same way
// without waiting: the Surface keeps what it must and sends it again once told it is back.
// An MCP App's own requests the Shell serves itself (issue 30): `ui/initialize` answers the
// spec's `hostContext`, read from the Shell as it is (core/host_context.js), and a change of
// its theme or of the frame's width is sent as `ui/notifications/host-context-changed`;
// `ui/message` never speaks for the user: its text becomes a proposal above the chat's message
// box (components/proposal.js), answered `{}` once shown, refused `proposal_too_long` or
// `rate_limited` (per app instance); `ui/open-link` takes an http(s) URL only and opens it
// (`noopener`) once the user says so in the runtime's own prompt (components/link_prompt.js),
// else answered `{isError: true}` (reported `link_declined`); `ui/request-display-mode` is answered with the mode in force (inline,
// or fullscreen: the Surface takes the whole stage). Every refusal is reported by its code
// alone (`surface.rejected`, audited), never with the text or the URL. `notifications/message`
// goes to the runtime as `surface.log`, for the app's own log (`lineup logs`).
// `resources/list|read`, `ui/update-model-context` and `ui/download-file` are the runtime's
// (relayed; hostbridge/_surface_mcp.py): a resource not the app's is `-32002`.
// Host → View is always `contentWindow.postMessage(msg, "*")`: an opaque origin can only be
// addressed as "*", and a message holds only that Surface's own data. Nothing a Surface sends
// is ever used as a URL, markup, style or script.

import { FINAL_STATES } from "./state.js";
import { METHODS, METHOD_NAMES, isRpcId } from "./bridge_methods.js";
import { CONTEXT_METHOD, SERVED_CAPABILITIES, hostContext, watchHostContext } from "./host_context.js";
import { createMcpRequests } from "./mcp_requests.js";
import { createSubscriptions } from "./bridge_subscriptions.js";
import { isObject } from "./util.js";

export const SURFACE_VERSIONS = [1]; // the bridge versions this Shell runs (sdk/manifest.py)
export const PROTOCOL_VERSION = "2026-01-26";
const HOST_VERSION = "0.13";
export const MAX_MESSAGE_BYTES = 64 * 1024;
const RATE_PER_S = 60;
const RATE_BURST = 120;
const REPORT_MS = 1000; // `surface.rejected` at most this often
const REPLY_TIMEOUT_MS = 15000; // a `surface.request` the runtime never answered
// A capability request may wait on the user (the prompt, then a file picker): the runtime ends
// it by its own deadlines first (hostbridge/_surfaces.py CAPABILITY_TIMEOUT).
const CAPABILITY_TIMEOUT_MS = 305000;
// An MCP App's `tools/call`: its app stops the tool first (sdk/mcp_apps.py UI_TOOL_CALL_TIMEOUT_S).
const TOOL_CALL_TIMEOUT_MS = 75000;
const MAX_FORWARD_BYTES = 60 * 1024; // a Shell frame (core/connection.js MAX_SEND_BYTES)
const MIN_HEIGHT = 120;
const MAX_HEIGHT = 4000;
export const TEARDOWN_MS = 500;
const MAX_ASKED = 64; // a Surface's questions awaiting their end (the router caps open ones)
const CONNECTION_METHOD = "lineup/notifications/connection";

export const CODES = {
  source: "bridge_source_invalid",
  notInitialized: "bridge_not_initialized",
  method: "bridge_method_unknown",
  params: "bridge_params_invalid",
  tooLarge: "bridge_message_too_large",
  rate: "bridge_rate_limited",
  unreachable: "runtime_unreachable", // no link to the runtime: answered at once
  // An MCP App's requests the Shell serves (`ui/message`, `ui/open-link`), refused:
  proposalTooLong: "proposal_too_long",
  rateLimited: "rate_limited",
  invalidArguments: "invalid_arguments",
  linkDeclined: "link_declined",
};
const RPC_INVALID = -32600;
const RPC_METHOD = -32601;
const RPC_PARAMS = -32602;
const RPC_RUNTIME = -32000;
const RPC_RESOURCE = -32002; // MCP's "resource not found"
// Relayed requests that may wait on the user (the permission prompt, then a save).
const WAITS_ON_USER = new Set(["lineup/capabilities/request", "ui/download-file"]);

// The runtime's news for a Surface that subscribed (`shell.surface.notify`: its app's view
// model, its app's Agent messages; core/bridge_subscriptions.js): to that Surface's bridge only.
export function notifySurfaces(frame) {
  if (!isObject(frame) || !isObject(frame.params)) return;
  for (const bridge of bridges) {
    if (bridge.instanceId === frame.instance_id && bridge.view.surface_id === frame.surface_id) {
      bridge.subscriptions.notify(frame.kind, frame.params);
    }
  }
}

// ---------------------------------------------------------------- rejections, reported

const reports = new Map(); // "instance\0code" → {instance, code, count}
let reportTimer = null;
let lastReport = 0;
let reporter = null; // the Shell's `ctx`, from the first bridge made

function report(instanceId, code) {
  const key = `${instanceId ?? ""}\u0000${code}`;
  const held = reports.get(key);
  if (held) held.count += 1;
  else reports.set(key, { instanceId, code, count: 1 });
  if (reportTimer !== null) return;
  const delay = Math.max(0, lastReport + REPORT_MS - Date.now());
  reportTimer = window.setTimeout(flushReports, delay);
}

function flushReports() {
  reportTimer = null;
  lastReport = Date.now();
  if (reporter === null) return;
  for (const [key, r] of reports) {
    const sent = reporter.send({
      type: "surface.rejected",
      instance_id: r.instanceId,
      code: r.code,
      count: Math.min(r.count, 1000000),
    });
    if (sent) reports.delete(key); // else kept: sent with the next report once connected
  }
  if (reports.size > 0) reportTimer = window.setTimeout(flushReports, REPORT_MS);
}

// ---------------------------------------------------------------- the one listener

const bridges = new Set();
let listening = false;
let serial = 0;
// Request ids are this page's own: the router keys a Surface's question by its request id, and
// two Shells (or a reloaded one) must never name the same.
const PAGE = Array.from(crypto.getRandomValues(new Uint8Array(6)), (b) =>
  b.toString(16).padStart(2, "0"),
).join("");
let online = false; // the Shell's link to the runtime, as main.js last said

// The Shell's link went down or came back: every Surface hears of it (once per change).
export function setOnline(connected) {
  if (connected === online) return;
  online = connected;
  for (const bridge of bridges) bridge.linkChanged();
}

function onMessage(event) {
  const source = event.source;
  if (source !== null) {
    for (const bridge of bridges) {
      if (bridge.iframe.contentWindow === source) {
        bridge.receive(event.data);
        return;
      }
    }
  }
  // Not a Surface's own window (another frame, the Shell itself): dropped, never answered.
  if (bridges.size === 0) report(null, CODES.source);
  for (const bridge of bridges) bridge.reject(CODES.source, undefined);
}

const utf8Length = (text) => new TextEncoder().encode(text).length;

// One Surface's end of the bridge. `view` is its instance's `lineup.surface` view; `onSize`
// gets a clamped height; `onRejected(count)` whenever the count grows.
export function createBridge({ ctx, instanceId, iframe, view, sandbox, onSize, onRejected, onDisplayMode }) {
  if (!listening) {
    window.addEventListener("message", onMessage);
    listening = true;
  }
  if (reporter === null) reporter = ctx;
  serial += 1;
  const bridge = {
    iframe,
    instanceId,
    view,
    sandbox: isObject(sandbox) ? sandbox : {}, // what the user approved of its declared access
    phase: "new", // "new" → (ui/initialize answered) "initializing" → "ready"
    tokens: RATE_BURST,
    at: performance.now(),
    rejections: 0,
    stateRevision: -1, // the state revision the Surface was last given
    toolResultKey: null,
    toolCallId: null, // the runtime's call whose tool input the Surface was last given
    subscribed: false,
    sessionRevision: -1,
    nextCall: 0,
    calls: new Set(), // request ids of this bridge awaiting the runtime
    asked: new Set(), // interaction ids this Surface asked, until it is told their end
    hostRequests: new Map(), // Host → View request id → resolve
    toldOnline: null, // the link as this Surface was last told it (null: not yet)
    displayMode: "inline",
    unwatch: null, // stops watching the host context (from `ui/initialize` on)
    linkAsked: false, // a `ui/open-link` awaits the user
    closed: false,
    prefix: `s${serial}-${PAGE}`,
  };

  function post(message) {
    const target = bridge.closed ? null : iframe.contentWindow;
    if (target) target.postMessage(message, "*");
  }

  const answer = (id, result) => post({ jsonrpc: "2.0", id, result });
  bridge.subscriptions = createSubscriptions({ post, relay: (...a) => relay(...a) });
  const fail = (id, rpcCode, code) =>
    post({ jsonrpc: "2.0", id, error: { code: rpcCode, message: code, data: { code } } });

  // Dropped: counted, shown on the container, reported; a request with an id is answered
  // with the error (unless it came from a window that is not this Surface's).
  bridge.reject = (code, id, rpcCode = RPC_INVALID) => {
    bridge.rejections += 1;
    onRejected(bridge.rejections);
    report(instanceId, code);
    if (code !== CODES.source && isRpcId(id)) fail(id, rpcCode, code);
  };

  const mcp = createMcpRequests({
    ctx,
    instanceId,
    bridge,
    codes: CODES,
    answer,
    fail: (id, code) => fail(id, RPC_RUNTIME, code),
    refuse: (id, code) => bridge.reject(code, id, RPC_RUNTIME),
    invalid: (id) => bridge.reject(CODES.params, id, RPC_PARAMS),
    report: (code) => report(instanceId, code),
    post,
    onDisplayMode,
  });

  function withinRate() {
    const now = performance.now();
    bridge.tokens = Math.min(RATE_BURST, bridge.tokens + ((now - bridge.at) / 1000) * RATE_PER_S);
    bridge.at = now;
    if (bridge.tokens < 1) return false;
    bridge.tokens -= 1;
    return true;
  }

  bridge.receive = (data) => {
    if (bridge.closed) return;
    if (!ctx.state.instances.some((i) => i.instance_id === instanceId)) {
      bridge.reject(CODES.source, undefined); // its instance is gone: nobody to answer for
      return;
    }
    const id = isObject(data) && isRpcId(data.id) ? data.id : undefined;
    if (!withinRate()) return bridge.reject(CODES.rate, id);
    let text;
    try {
      text = JSON.stringify(data);
    } catch {
      return bridge.reject(CODES.params, id);
    }
    if (typeof text !== "string") return bridge.reject(CODES.params, id);
    // A UTF-8 byte per character at least: a longer text is over without encoding it.
    if (text.length > MAX_MESSAGE_BYTES || utf8Length(text) > MAX_MESSAGE_BYTES) {
      return bridge.reject(CODES.tooLarge, id);
    }
    if (!isObject(data) || data.jsonrpc !== "2.0") return bridge.reject(CODES.params, id);
    if (!("method" in data)) return onResponse(data);
    const name = data.method;
    if (typeof name !== "string" || (data.id !== undefined && id === undefined)) {
      return bridge.reject(CODES.params, id);
    }
    // Params absent (undefined, or null as the ext-apps `App` class sends a list's without a
    // cursor) or an object, which the method's validator checks.
    const params = data.params ?? undefined;
    if (params !== undefined && !isObject(params)) {
      return bridge.reject(CODES.params, id, RPC_PARAMS);
    }
    const allowed =
      name === "ui/initialize" ||
      bridge.phase === "ready" ||
      (bridge.phase === "initializing" && name === "ui/notifications/initialized");
    if (!allowed) return bridge.reject(CODES.notInitialized, id);
    const method = Object.hasOwn(METHODS, name) ? METHODS[name] : null;
    if (method === null) return bridge.reject(CODES.method, id, RPC_METHOD);
    if ((method.form === "request") !== (id !== undefined)) return bridge.reject(CODES.params, id);
    if (!method.valid(params)) return bridge.reject(CODES.params, id, RPC_PARAMS);
    handle(name, method, id, params ?? {});
  };

  function onResponse(data) {
    const done = isRpcId(data.id) ? bridge.hostRequests.get(data.id) : undefined;
    if (done === undefined || ("result" in data) === ("error" in data)) {
      return bridge.reject(CODES.params, undefined); // an answer to nothing asked
    }
    bridge.hostRequests.delete(data.id);
    done();
  }

  function handle(name, method, id, params) {
    if (method.relay) return relay(name, id, params);
    if (name === "ui/initialize") {
      const v = bridge.view;
      bridge.phase = "initializing";
      bridge.subscribed = false;
      bridge.subscriptions.reset();
      bridge.sessionRevision = -1;
      bridge.stateRevision = stateRevision(v);
      bridge.toolResultKey = null;
      bridge.toolCallId = null;
      bridge.toldOnline = online;
      const context = hostContext(iframe, bridge.displayMode);
      bridge.unwatch?.();
      bridge.unwatch = watchHostContext(
        iframe,
        context.containerDimensions,
        () => bridge.displayMode,
        (fields) => post({ jsonrpc: "2.0", method: CONTEXT_METHOD, params: fields }),
      );
      return answer(id, {
        protocolVersion: PROTOCOL_VERSION,
        hostInfo: { name: "lineup", version: HOST_VERSION },
        // Only what this Shell really does.
        hostCapabilities: {
          openLinks: {},
          serverTools: {}, // `tools/call` of its own app's tools (visibility "app")
          message: { text: {} },
          logging: {},
          ...SERVED_CAPABILITIES,
          sandbox: bridge.sandbox, // the origins and devices granted for this load, if any
          lineup: { methods: METHOD_NAMES },
        },
        hostContext: {
          ...context,
          // The call this Surface was opened for, when the runtime opened it for one.
          ...(isObject(v.tool_info) ? { toolInfo: v.tool_info } : {}),
          lineup: {
            surface_id: v.surface_id,
            surface_version: v.surface_version,
            state: isObject(v.state) ? v.state : {},
            state_revision: bridge.stateRevision,
            online,
          },
        },
      });
    }
    if (name === "ui/notifications/initialized") {
      if (bridge.phase === "ready") return;
      bridge.phase = "ready";
      if (isObject(bridge.view.tool_input)) sendToolInput(bridge.view);
      notifyView();
      tellLink(); // it may have changed since `ui/initialize`
      return;
    }
    if (name === "ui/notifications/size-changed") {
      onSize(Math.round(Math.min(MAX_HEIGHT, Math.max(MIN_HEIGHT, params.height))));
      return;
    }
    if (name === "ping") return answer(id, {});
    if (name === "ui/message") return mcp.propose(id, params);
    if (name === "ui/open-link") return mcp.openLink(id, params);
    if (name === "ui/request-display-mode") return mcp.displayMode(id, params);
    if (name === "notifications/message") return mcp.log(params);
  }

  // `id` null: the bridge's own request (a subscription renewed), answered to nobody.
  function relay(name, id, params) {
    bridge.nextCall += 1;
    const requestId = `${bridge.prefix}-${bridge.nextCall}`;
    const frame = {
      type: "surface.request",
      request_id: requestId,
      instance_id: instanceId,
      surface_id: bridge.view.surface_id,
      method: name,
      params,
    };
    if (utf8Length(JSON.stringify(frame)) > MAX_FORWARD_BYTES) {
      return id === null ? undefined : bridge.reject(CODES.tooLarge, id);
    }
    if (!online) return id === null ? undefined : fail(id, RPC_RUNTIME, CODES.unreachable);
    const wait = WAITS_ON_USER.has(name)
      ? CAPABILITY_TIMEOUT_MS
      : name === "tools/call"
        ? TOOL_CALL_TIMEOUT_MS
        : REPLY_TIMEOUT_MS;
    const timer = window.setTimeout(() => settle({ error: { code: "deadline_exceeded" } }), wait);
    function settle(reply) {
      if (isObject(reply.progress)) return progressed(reply.progress); // not the answer yet
      window.clearTimeout(timer);
      ctx.state.surfaceCalls.delete(requestId);
      bridge.calls.delete(requestId);
      if (isObject(reply.error)) {
        const code = typeof reply.error.code === "string" ? reply.error.code : "internal_error";
        if (id !== null) fail(id, code === "resource_not_found" ? RPC_RESOURCE : RPC_RUNTIME, code);
        return;
      }
      const [result, after] = bridge.subscriptions.settled(
        name, id, params, isObject(reply.result) ? reply.result : {},
      ); // prettier-ignore
      if (name === "lineup/session-data/subscribe") {
        bridge.subscribed = true;
        if (Number.isSafeInteger(result.revision)) {
          // Renewed by the bridge itself: a newer snapshot is the Surface's news.
          if (id === null && result.revision > bridge.sessionRevision && isObject(result.data)) {
            post({
              jsonrpc: "2.0",
              method: "lineup/notifications/session-data",
              params: { data: result.data, revision: result.revision },
            });
          }
          bridge.sessionRevision = Math.max(bridge.sessionRevision, result.revision);
        }
      }
      if (name === "lineup/ui/request" && typeof result.interaction_id === "string") {
        bridge.asked.add(result.interaction_id);
        if (bridge.asked.size > MAX_ASKED) bridge.asked.delete(bridge.asked.values().next().value);
      }
      if (id !== null) answer(id, result);
      after?.();
      if (name === "lineup/session-data/subscribe") forwardSessionData();
      if (name === "lineup/ui/request") forwardInteractions(); // it may have ended already
    }
    // A `tools/call`'s progress, to the page if it asked for it (`_meta.progressToken`).
    function progressed(progress) {
      const token = isObject(params._meta) ? params._meta.progressToken : undefined;
      if (name !== "tools/call" || id === null || !isRpcId(token)) return;
      post({ jsonrpc: "2.0", method: "notifications/progress", params: { ...progress, progressToken: token } });
    }
    ctx.state.surfaceCalls.set(requestId, settle);
    bridge.calls.add(requestId);
    const sent = ctx.send({
      type: "surface.request",
      request_id: frame.request_id,
      instance_id: frame.instance_id,
      surface_id: frame.surface_id,
      method: frame.method,
      params: frame.params,
    });
    if (!sent) settle({ error: { code: CODES.unreachable } }); // no link: the Surface retries
  }

  // The link changed: a Surface past its handshake is told (once per change), and what it
  // awaits from the runtime ends now, as its reply can no longer come. Back online, its
  // subscription is renewed, for the snapshot: a revision written meanwhile was told to the
  // socket that is gone (and an app may write none for a change it already applied).
  function tellLink() {
    if (bridge.phase !== "ready" || bridge.toldOnline === online) return;
    bridge.toldOnline = online;
    post({ jsonrpc: "2.0", method: CONNECTION_METHOD, params: { online } });
  }

  bridge.linkChanged = () => {
    if (!online) {
      for (const requestId of [...bridge.calls]) {
        ctx.state.surfaceCalls.get(requestId)?.({ error: { code: CODES.unreachable } });
      }
    } else if (bridge.phase === "ready") {
      if (bridge.subscribed) relay("lineup/session-data/subscribe", null, {});
      bridge.subscriptions.renew();
    }
    tellLink();
  };

  function sendToolInput(v) {
    bridge.toolCallId = isObject(v.tool_info) ? v.tool_info.id : null;
    post({
      jsonrpc: "2.0",
      method: "ui/notifications/tool-input",
      params: { arguments: v.tool_input },
    });
  }

  // A call the runtime shows (issue 30): a new one's input, then its outcome once, as the
  // spec's `tool-result` (the CallToolResult focus made) or `tool-cancelled` (its code).
  function notifyCall(v) {
    const callId = v.tool_info.id;
    if (callId !== bridge.toolCallId && isObject(v.tool_input)) sendToolInput(v);
    const outcome = isObject(v.call_result)
      ? { method: "ui/notifications/tool-result", params: v.call_result }
      : typeof v.call_cancelled === "string"
        ? { method: "ui/notifications/tool-cancelled", params: { reason: v.call_cancelled } }
        : null;
    const key = outcome === null ? null : JSON.stringify([callId, outcome.method]);
    if (key === null || key === bridge.toolResultKey) return;
    bridge.toolResultKey = key;
    post({ jsonrpc: "2.0", ...outcome });
  }

  // What changed in the view reaches a Surface past its handshake: a newer state, a new tool
  // result.
  function notifyView() {
    if (bridge.phase !== "ready") return;
    const v = bridge.view;
    const revision = stateRevision(v);
    if (revision > bridge.stateRevision) {
      bridge.stateRevision = revision;
      post({
        jsonrpc: "2.0",
        method: "lineup/notifications/state",
        params: { state: isObject(v.state) ? v.state : {}, revision },
      });
    }
    if (isObject(v.tool_info)) {
      notifyCall(v);
    } else if (isObject(v.tool_result)) {
      const key = JSON.stringify(v.tool_result);
      if (key !== bridge.toolResultKey) {
        bridge.toolResultKey = key;
        post({
          jsonrpc: "2.0",
          method: "ui/notifications/tool-result",
          params: { structuredContent: v.tool_result },
        });
      }
    }
  }

  function forwardSessionData() {
    const held = ctx.state.sessionData.get(instanceId);
    if (!bridge.subscribed || held === undefined) return;
    if (held.surface_id !== bridge.view.surface_id || held.revision <= bridge.sessionRevision) return;
    bridge.sessionRevision = held.revision;
    post({
      jsonrpc: "2.0",
      method: "lineup/notifications/session-data",
      params: { data: held.data, revision: held.revision },
    });
  }

  // The questions this Surface asked that the Shell's state shows final: each told once.
  function forwardInteractions() {
    for (const interactionId of bridge.asked) {
      const view = ctx.state.interactions.get(interactionId);
      if (view === undefined || !FINAL_STATES.has(view.state)) continue;
      bridge.asked.delete(interactionId);
      const params = { interaction_id: interactionId, state: view.state };
      if (isObject(view.result)) params.result = view.result;
      if (typeof view.terminal_code === "string") params.terminal_code = view.terminal_code;
      post({ jsonrpc: "2.0", method: "lineup/notifications/interaction", params });
    }
  }

  // The Shell re-rendered: the instance's latest view, and its latest session data.
  // A state revision lower than the one given: the Surface was opened anew (focus restarted
  // and the app opened it again): the runtime forgot its subscription, which is renewed.
  bridge.update = (nextView) => {
    const reopened = bridge.phase === "ready" && stateRevision(nextView) < bridge.stateRevision;
    bridge.view = nextView;
    if (reopened) {
      bridge.stateRevision = -1;
      if (bridge.subscribed) relay("lineup/session-data/subscribe", null, {});
    }
    notifyView();
    forwardSessionData();
    forwardInteractions();
  };

  // The app closed while the call it shows had no outcome: the runtime ends that call
  // `app_closed`, and the page is gone by then, so it is told before its teardown.
  function cancelCallOfClosedApp() {
    const v = bridge.view;
    if (bridge.phase !== "ready" || !isObject(v.tool_info)) return;
    if (ctx.state.instances.some((i) => i.instance_id === instanceId)) return; // still live
    notifyCall(v); // an outcome the last view already had goes first
    const key = JSON.stringify([v.tool_info.id, "ui/notifications/tool-cancelled"]);
    const ended = JSON.stringify([v.tool_info.id, "ui/notifications/tool-result"]);
    if (bridge.toolResultKey === key || bridge.toolResultKey === ended) return;
    bridge.toolResultKey = key;
    post({ jsonrpc: "2.0", method: "ui/notifications/tool-cancelled", params: { reason: "app_closed" } });
  }

  // `ui/resource-teardown`, then resolves on the Surface's answer or after TEARDOWN_MS.
  bridge.teardown = (reason) =>
    new Promise((resolve) => {
      if (bridge.phase === "new" || bridge.closed) return resolve();
      cancelCallOfClosedApp();
      const id = `${bridge.prefix}-teardown`;
      const timer = window.setTimeout(done, TEARDOWN_MS);
      function done() {
        window.clearTimeout(timer);
        bridge.hostRequests.delete(id);
        resolve();
      }
      bridge.hostRequests.set(id, done);
      post({ jsonrpc: "2.0", id, method: "ui/resource-teardown", params: { reason } });
    });

  bridge.close = () => {
    bridge.closed = true;
    bridge.unwatch?.();
    bridge.unwatch = null;
    bridges.delete(bridge);
    for (const requestId of bridge.calls) ctx.state.surfaceCalls.delete(requestId);
    bridge.calls.clear();
    bridge.asked.clear();
  };

  bridges.add(bridge);
  return bridge;
}

function stateRevision(view) {
  return Number.isSafeInteger(view.state_revision) && view.state_revision >= 0
    ? view.state_revision
    : 0;
}
