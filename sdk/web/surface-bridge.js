// A small JSON-RPC 2.0 client of the LineUp Surface bridge (the MCP Apps dialect, SEP-1865).
// The Host is the Shell: it is this frame's parent, and only a message whose `source` is that
// window is taken. We post with target "*" because our own origin is opaque (the frame is
// sandboxed without allow-same-origin); nothing here is secret to the Shell.
//
// `trackSize()` keeps the Shell told the page's own size (`ui/notifications/size-changed`),
// so the Shell can make the frame exactly as tall as the page: once when called, then on
// every change a ResizeObserver sees, coalesced to one report an animation frame, and only a
// size not already reported. The page's own size is its document element's box, not its
// scrollHeight: that one never drops below the frame's height, so the frame could grow but
// never shrink (a narrower Shell, less content).
//
// `onConnection(listener)` calls `listener(online)` whenever the Shell's link to the runtime
// goes down or comes back (`lineup/notifications/connection`); `isOnline()` is the link as last
// told (`hostContext.lineup.online` at the handshake). While offline the Shell answers every
// request at once with the code `runtime_unreachable`: keep what must not be lost and send it
// again when the listener hears `true`.
(function () {
  "use strict";

  const PROTOCOL_VERSION = "2026-01-26";
  const REQUEST_TIMEOUT_MS = 10000;
  let nextId = 1;
  const pending = new Map(); // id -> {resolve, reject, timer}
  const handlers = new Map(); // method -> function(params) (notifications and Host requests)
  const CONNECTION = "lineup/notifications/connection";
  const linkListeners = [];
  let online = true;

  function setOnline(value) {
    if (typeof value !== "boolean" || value === online) return;
    online = value;
    linkListeners.slice().forEach(function (listener) {
      try {
        listener(online);
      } catch (err) {
        setTimeout(function () {
          throw err; // reported as the page's own error, the other listeners still told
        });
      }
    });
  }

  function onConnection(listener) {
    if (typeof listener === "function") linkListeners.push(listener);
  }

  function post(message) {
    window.parent.postMessage(message, "*");
  }

  function bridgeError(error) {
    const data = error && typeof error === "object" ? error.data : null;
    const err = new Error(
      (error && typeof error.message === "string" && error.message) || "bridge error"
    );
    err.code =
      (data && typeof data.code === "string" && data.code) ||
      (error && typeof error.code === "string" ? error.code : "internal_error");
    return err;
  }

  function request(method, params, timeoutMs) {
    const id = nextId++;
    return new Promise(function (resolve, reject) {
      const timer = setTimeout(function () {
        pending.delete(id);
        const err = new Error("no answer");
        err.code = "deadline_exceeded";
        reject(err);
      }, timeoutMs || REQUEST_TIMEOUT_MS);
      pending.set(id, { resolve: resolve, reject: reject, timer: timer });
      post({ jsonrpc: "2.0", id: id, method: method, params: params || {} });
    });
  }

  function notify(method, params) {
    post({ jsonrpc: "2.0", method: method, params: params || {} });
  }

  function on(method, handler) {
    handlers.set(method, handler);
  }

  function answer(id, result) {
    post({ jsonrpc: "2.0", id: id, result: result || {} });
  }

  window.addEventListener("message", function (event) {
    if (event.source !== window.parent) return; // only the Host speaks to us
    const msg = event.data;
    if (!msg || typeof msg !== "object" || msg.jsonrpc !== "2.0") return;
    const hasId = typeof msg.id === "number" || typeof msg.id === "string";
    if (hasId && typeof msg.method !== "string") {
      const slot = pending.get(msg.id);
      if (!slot) return;
      pending.delete(msg.id);
      clearTimeout(slot.timer);
      if (msg.error) slot.reject(bridgeError(msg.error));
      else slot.resolve(msg.result || {});
      return;
    }
    if (typeof msg.method !== "string") return;
    const handler = handlers.get(msg.method);
    const params = msg.params && typeof msg.params === "object" ? msg.params : {};
    if (!hasId) {
      if (msg.method === CONNECTION) setOnline(params.online);
      if (handler) handler(params);
      return;
    }
    if (msg.method === "ping") {
      answer(msg.id, {});
      return;
    }
    if (!handler) {
      post({
        jsonrpc: "2.0",
        id: msg.id,
        error: { code: -32601, message: "method not found", data: { code: "bridge_method_unknown" } },
      });
      return;
    }
    Promise.resolve()
      .then(function () {
        return handler(params);
      })
      .then(
        function (result) {
          answer(msg.id, result);
        },
        function () {
          answer(msg.id, {});
        }
      );
  });

  // The handshake: `ui/initialize`, then `ui/notifications/initialized`; the Host takes
  // nothing else before it. Resolves with the Host's `ui/initialize` result.
  async function initialize(appInfo) {
    const result = await request("ui/initialize", {
      protocolVersion: PROTOCOL_VERSION,
      appInfo: appInfo,
      appCapabilities: {},
    });
    const context = result.hostContext && result.hostContext.lineup;
    if (context && typeof context === "object") setOnline(context.online);
    notify("ui/notifications/initialized", {});
    return result;
  }

  let tracking = false;
  let reported = ""; // the size last told, "width×height"
  let scheduled = false;

  function reportSize() {
    scheduled = false;
    const box = document.documentElement.getBoundingClientRect();
    const size = { width: Math.ceil(box.width), height: Math.ceil(box.height) };
    const key = size.width + "×" + size.height;
    if (key === reported) return;
    reported = key;
    notify("ui/notifications/size-changed", size);
  }

  // Call it once the handshake is done (the Host takes nothing before it); again is a no-op.
  function trackSize() {
    if (tracking) return;
    tracking = true;
    reportSize();
    if (typeof ResizeObserver !== "function") return;
    const observer = new ResizeObserver(function () {
      if (scheduled) return;
      scheduled = true;
      window.requestAnimationFrame(reportSize);
    });
    observer.observe(document.documentElement);
    if (document.body) observer.observe(document.body);
  }

  // The app's SDK as a Surface has it (seed 004 §6: "the same semantics, restricted"), for the
  // Surface's own app and instance: its view model, the apps it may open, and the lifecycle
  // and navigation actions, each decided by the runtime (a refusal rejects with `err.code`).
  function dispatch(action) {
    return request("lineup/actions/dispatch", { action: action });
  }
  // A listener list per notification method, told in order (`subscribe` below).
  function listeners(method) {
    const list = [];
    on(method, function (params) {
      list.slice().forEach(function (listener) {
        listener(params);
      });
    });
    return {
      add: function (listener) {
        list.push(listener);
        return function () {
          const at = list.indexOf(listener);
          if (at >= 0) list.splice(at, 1);
        };
      },
    };
  }
  const viewListeners = listeners("lineup/notifications/app-state");
  const messageListeners = listeners("lineup/notifications/agent-message");
  const state = Object.freeze({
    snapshot: function () {
      return request("lineup/state/snapshot", {});
    },
    // `listener(view)` now and on every newer view of the app; resolves with the way to stop.
    subscribe: function (listener) {
      const stop = viewListeners.add(function (params) {
        listener(params.view);
      });
      return request("lineup/state/subscribe", {}).then(function (result) {
        listener(result.view);
        return stop;
      });
    },
  });
  // The app's Agent messages (seed 004 §5.4), its conversation's and this instance's:
  // `handler(message)` for each one the filter takes ({conversation_id, types,
  // include_pending}), once; a display message is acknowledged by the Shell once handed, any
  // other stays in the inbox until `acknowledge(message_id)`.
  const agentMessages = Object.freeze({
    list: function (options) {
      return request("lineup/agent-messages/list", options || {});
    },
    subscribe: function (options, handler) {
      const stop = messageListeners.add(function (params) {
        handler(params.message);
      });
      return request("lineup/agent-messages/subscribe", options || {}).then(function () {
        return stop;
      });
    },
    acknowledge: function (messageId) {
      return request("lineup/agent-messages/acknowledge", { message_id: messageId }).then(
        function (result) {
          return result.acknowledged === true;
        }
      );
    },
  });
  const apps = Object.freeze({
    listAvailable: function () {
      return request("lineup/apps/list-available", {}).then(function (result) {
        return result.apps || [];
      });
    },
    // options: {entrypoint, display_mode: "foreground" | "background"}
    launch: function (appScope, requestId, options) {
      const action = { kind: "apps.launch", app_scope: appScope, request_id: requestId };
      if (options && options.entrypoint) action.entrypoint = options.entrypoint;
      if (options && options.display_mode) action.display_mode = options.display_mode;
      return dispatch(action);
    },
    focus: function (instanceId) {
      return dispatch({ kind: "apps.focus", instance_id: instanceId });
    },
    close: function (instanceId) {
      return dispatch({ kind: "apps.close", instance_id: instanceId });
    },
    openDefaultApp: function () {
      return dispatch({ kind: "apps.open_default" });
    },
  });
  const actions = Object.freeze({ dispatch: dispatch });

  window.LineUpBridge = Object.freeze({
    state: state,
    agentMessages: agentMessages,
    apps: apps,
    actions: actions,
    PROTOCOL_VERSION: PROTOCOL_VERSION,
    initialize: initialize,
    request: request,
    notify: notify,
    on: on,
    trackSize: trackSize,
    onConnection: onConnection,
    isOnline: function () {
      return online;
    },
  });
})();
