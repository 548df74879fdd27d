// The Surface bridge's methods (core/bridge.js): each one's form, the validator of its params,
// and whether the runtime answers it. A message for a method not here is refused
// `bridge_method_unknown`; params a validator refuses, `bridge_params_invalid`.

import { isObject } from "./util.js";

const MAX_PURPOSE = 300; // lineup.sdk.capabilities MAX_PURPOSE_CHARS
const MAX_NAME = 128;
const MAX_BLOCKS = 32; // a `ui/message`'s content blocks
const MAX_URI = 2048; // lineup.hostbridge._surface_mcp MAX_URI
const MAX_DOWNLOAD_FILES = 4; // lineup.hostbridge._surface_mcp MAX_DOWNLOAD_FILES
// lineup.facts.view_log VIEW_LOG_LEVELS (MCP's logging levels; tests/hostbridge compares them)
export const LOG_LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];
const DISPLAY_MODE_NAMES = ["inline", "fullscreen", "pip"]; // the spec's McpUiDisplayMode
const INTERACTION_KINDS = ["notice", "choice", "confirm", "input"];
// lineup.sdk.protocol AGENT_MESSAGE_TYPES and MAX_LIST (tests/hostbridge compares them)
export const AGENT_MESSAGE_TYPES = ["lineup.app.state.patch", "lineup.tool.invoke", "lineup.v1.text"];
const MAX_LIST = 500;
const isId = (value) => typeof value === "string" && value.length > 0 && value.length <= 200;
const optId = (value) => value === undefined || isId(value);
// lineup.sdk.protocol SURFACE_ACTION_KINDS (tests/hostbridge compares the two)
export const ACTION_KINDS = [
  "lifecycle.foreground",
  "lifecycle.background",
  "lifecycle.close",
  "apps.open",
  "apps.launch",
  "apps.focus",
  "apps.close",
  "apps.open_default",
];

const keysWithin = (params, allowed) => Object.keys(params).every((k) => allowed.includes(k));
const optObject = (value) => value === undefined || isObject(value);
const isName = (value) => typeof value === "string" && value.length > 0 && value.length <= MAX_NAME;
const isSize = (value) => typeof value === "number" && Number.isFinite(value) && value >= 0;
const isTextBlock = (b) =>
  isObject(b) && b.type === "text" && typeof b.text === "string" && keysWithin(b, ["type", "text", "annotations", "_meta"]);
const none = (params) => params === undefined || (isObject(params) && keysWithin(params, []));

// Each method: `form` (a request expects an answer; a notification must not carry an id), its
// validator, and whether the runtime answers it (`relay`).
export const METHODS = {
  "ui/initialize": {
    form: "request",
    valid: (p) =>
      isObject(p) &&
      keysWithin(p, ["protocolVersion", "appInfo", "appCapabilities"]) &&
      typeof p.protocolVersion === "string" &&
      p.protocolVersion.length <= 64 &&
      optObject(p.appInfo) &&
      optObject(p.appCapabilities),
  },
  "ui/notifications/initialized": { form: "notification", valid: (p) => optObject(p) },
  "ui/notifications/size-changed": {
    form: "notification",
    valid: (p) =>
      isObject(p) &&
      keysWithin(p, ["width", "height"]) &&
      isSize(p.height) &&
      (p.width === undefined || isSize(p.width)),
  },
  ping: { form: "request", valid: none },
  // An MCP App's requests the Shell serves itself (issue 30): a message it proposes for the
  // user to send (text blocks only), a link to open once the user says so, a display mode.
  "ui/message": {
    form: "request",
    valid: (p) =>
      isObject(p) &&
      keysWithin(p, ["role", "content", "_meta"]) &&
      p.role === "user" &&
      Array.isArray(p.content) &&
      p.content.length > 0 &&
      p.content.length <= MAX_BLOCKS &&
      p.content.every(
        (b) => isObject(b) && b.type === "text" && typeof b.text === "string" && keysWithin(b, ["type", "text", "annotations", "_meta"]),
      ),
  },
  "ui/open-link": {
    form: "request",
    valid: (p) => isObject(p) && keysWithin(p, ["url", "_meta"]) && typeof p.url === "string",
  },
  // The app's log line, for its app's own log (`lineup logs`); `data` is any JSON.
  "notifications/message": {
    form: "notification",
    valid: (p) =>
      isObject(p) &&
      keysWithin(p, ["level", "logger", "data", "_meta"]) &&
      LOG_LEVELS.includes(p.level) &&
      (p.logger === undefined || isName(p.logger)) &&
      "data" in p,
  },
  "ui/request-display-mode": {
    form: "request",
    valid: (p) => isObject(p) && keysWithin(p, ["mode", "_meta"]) && DISPLAY_MODE_NAMES.includes(p.mode),
  },
  // An MCP App's call of its own app's tool (issue 30): the runtime checks and runs it.
  "tools/call": {
    form: "request",
    relay: true,
    valid: (p) =>
      isObject(p) &&
      keysWithin(p, ["name", "arguments", "_meta"]) &&
      typeof p.name === "string" &&
      p.name.length > 0 &&
      p.name.length <= MAX_NAME &&
      optObject(p.arguments),
  },
  "lineup/session-data/get": { form: "request", valid: none, relay: true },
  "lineup/session-data/subscribe": { form: "request", valid: none, relay: true },
  "lineup/session-data/replace": {
    form: "request",
    relay: true,
    valid: (p) =>
      isObject(p) &&
      keysWithin(p, ["data", "expected_revision"]) &&
      isObject(p.data) &&
      Number.isSafeInteger(p.expected_revision) &&
      p.expected_revision >= 0,
  },
  "lineup/event": {
    form: "request",
    relay: true,
    valid: (p) => isObject(p) && keysWithin(p, ["name", "data"]) && isName(p.name) && optObject(p.data),
  },
  // The request's shape is the hostbridge's to check whole (lineup.sdk.interactions).
  "lineup/ui/request": {
    form: "request",
    relay: true,
    valid: (p) =>
      isObject(p) &&
      keysWithin(p, ["request"]) &&
      isObject(p.request) &&
      INTERACTION_KINDS.includes(p.request.kind),
  },
  // The Surface's share of its app's SDK (seed 004 §6): its app's view model, the apps it may
  // open, and a lifecycle or navigation action (focus checks the action whole).
  "lineup/state/snapshot": { form: "request", valid: none, relay: true },
  "lineup/apps/list-available": { form: "request", valid: none, relay: true },
  "lineup/actions/dispatch": {
    form: "request",
    relay: true,
    valid: (p) =>
      isObject(p) &&
      keysWithin(p, ["action"]) &&
      isObject(p.action) &&
      typeof p.action.kind === "string" &&
      ACTION_KINDS.includes(p.action.kind),
  },
  // The Surface's subscription to its app's view model (`lineup/notifications/app-state`) and
  // its app's Agent messages (seed 004 §5.4): listed, subscribed to (then
  // `lineup/notifications/agent-message`), acknowledged (core/bridge_subscriptions.js).
  "lineup/state/subscribe": { form: "request", valid: none, relay: true },
  "lineup/agent-messages/list": {
    form: "request",
    relay: true,
    valid: (p) =>
      none(p) ||
      (isObject(p) &&
        keysWithin(p, ["conversation_id", "after", "limit"]) &&
        optId(p.conversation_id) &&
        optId(p.after) &&
        (p.limit === undefined || (Number.isSafeInteger(p.limit) && p.limit >= 1 && p.limit <= MAX_LIST))),
  },
  "lineup/agent-messages/subscribe": {
    form: "request",
    relay: true,
    valid: (p) =>
      none(p) ||
      (isObject(p) &&
        keysWithin(p, ["conversation_id", "types", "include_pending"]) &&
        optId(p.conversation_id) &&
        (p.types === undefined ||
          (Array.isArray(p.types) && p.types.length > 0 && p.types.every((t) => AGENT_MESSAGE_TYPES.includes(t)))) &&
        (p.include_pending === undefined || typeof p.include_pending === "boolean")),
  },
  "lineup/agent-messages/acknowledge": {
    form: "request",
    relay: true,
    valid: (p) => isObject(p) && keysWithin(p, ["message_id"]) && isId(p.message_id),
  },
  // To the gateway (issue 14), decided as the app's own request: the result is the
  // CapabilityResult ({request_id, capability, status, code, output}).
  "lineup/capabilities/request": {
    form: "request",
    relay: true,
    valid: (p) =>
      isObject(p) &&
      keysWithin(p, ["capability", "purpose", "input"]) &&
      typeof p.capability === "string" &&
      p.capability.length > 0 &&
      p.capability.length <= 100 &&
      typeof p.purpose === "string" &&
      p.purpose.length > 0 &&
      p.purpose.length <= MAX_PURPOSE &&
      optObject(p.input),
  },
  // An MCP App's requests the runtime serves (issue 30; hostbridge/_surface_mcp.py checks each
  // again): its own app's resources, its context for the Agent, a file for the user to save.
  "resources/list": {
    form: "request",
    relay: true,
    valid: (p) => p === undefined || (isObject(p) && keysWithin(p, ["_meta"])),
  },
  "resources/read": {
    form: "request",
    relay: true,
    valid: (p) => isObject(p) && keysWithin(p, ["uri", "_meta"]) && typeof p.uri === "string" && p.uri.length <= MAX_URI,
  },
  "ui/update-model-context": {
    form: "request",
    relay: true,
    valid: (p) =>
      isObject(p) &&
      keysWithin(p, ["content", "structuredContent", "_meta"]) &&
      (p.content === undefined || (Array.isArray(p.content) && p.content.length <= MAX_BLOCKS && p.content.every(isTextBlock))) &&
      optObject(p.structuredContent),
  },
  "ui/download-file": {
    form: "request",
    relay: true,
    valid: (p) =>
      isObject(p) &&
      keysWithin(p, ["contents", "_meta"]) &&
      Array.isArray(p.contents) &&
      p.contents.length > 0 &&
      p.contents.length <= MAX_DOWNLOAD_FILES &&
      p.contents.every((c) => isObject(c) && c.type === "resource" && isObject(c.resource)),
  },
};
export const METHOD_NAMES = Object.keys(METHODS);

export const isRpcId = (id) =>
  (typeof id === "string" && id.length > 0 && id.length <= MAX_NAME) || Number.isSafeInteger(id);
