// The Surface host (view kind `lineup.surface`, issue 13): an app's own web page, framed in
// `<iframe sandbox="allow-scripts">` (no allow-same-origin, no popups, no forms, no top
// navigation: an opaque origin without storage), served by the hostbridge with its own CSP. The
// URL is the Shell's, never the view's: `/surfaces/<instance>/index.html`. Its messages go
// through the bridge (core/bridge.js). A `surface_version` this Shell does not run is not
// mounted: a text notice takes its place and the runtime is told (`surface.unavailable`).
// On unmount the Surface gets `ui/resource-teardown` and at most TEARDOWN_MS to answer before
// its iframe goes (the stage leaves the container's node to it meanwhile, hidden).
// A Surface that takes the keyboard while the runtime's own overlay or prompt is up
// (`stopTheft`, main.js) is stopped at once: its frame goes, before another key reaches it,
// and the user may show it again.
// An MCP App page that declares network domains or devices (`view.mcp_access`, issue 30) is
// framed only once the user has answered the runtime's own prompt for each (`surface.network`,
// `surface.devices`, asked as the Surface's own capability requests): a grant reaches that one
// document (its CSP allows the declared origins) and the frame's `allow` (the declared devices);
// a no, a dismissal or a refusal frames it with the spec's default (no network, no device). A
// change on the Permissions page frames the app's pages anew (`reframe`): a revoked grant
// without asking, so the default comes back at once.

import { SURFACE_VERSIONS, createBridge } from "../core/bridge.js";
import { el, isId, isObject } from "../core/util.js";

const DOCUMENT = "index.html"; // the one entry document of this bridge version
const DEFAULT_HEIGHT = 480;
const handles = new WeakMap(); // a mounted Surface's iframe → its handle
const live = new Set(); // every Surface handle mounted now (`reframe`)
export const NETWORK_CAPABILITY = "surface.network";
export const DEVICES_CAPABILITY = "surface.devices";
const ACCESS_PURPOSE = {
  [NETWORK_CAPABILITY]: "To open its page with the network access its manifest declares.",
  [DEVICES_CAPABILITY]: "To open its page with the devices its manifest declares.",
};
const ACCESS_TIMEOUT_MS = 305000; // the runtime ends the prompt well before (bridge.js's bound)
const asking = new Map(); // request_id → settle: the access questions waiting on the runtime

function mount(container, ctx, instanceId) {
  const root = el("div", "surface", "surface");
  root.setAttribute("data-instance-id", instanceId);
  root.setAttribute("data-bridge-rejections", "0");
  container.append(root);
  const handle = {
    ctx, instanceId, root, iframe: null, bridge: null, surfaceId: null, view: null, appScope: null, asking: 0,
  };
  live.add(handle);
  return handle;
}

function update(handle, entry) {
  const view = entry.view;
  const surfaceId = isId(view.surface_id) ? view.surface_id : null;
  handle.appScope = typeof entry.appScope === "string" ? entry.appScope : null;
  if (surfaceId !== handle.surfaceId) {
    drop(handle);
    handle.surfaceId = surfaceId;
    build(handle, view, true);
  }
  handle.view = view;
  if (handle.bridge !== null) handle.bridge.update(view);
}

// A frame feature (the `allow` name) as the spec names it in `McpUiResourcePermissions`.
const SPEC_PERMISSION = { "clipboard-write": "clipboardWrite" };

// One capability asked as the Surface's own request: its `CapabilityResult`, or null.
function askAccess(handle, capability) {
  const { ctx, instanceId } = handle;
  // The gateway keys a Surface's request by its id: this page's own, never another Shell's.
  const nonce = Array.from(crypto.getRandomValues(new Uint8Array(8)), (b) => b.toString(16).padStart(2, "0"));
  const requestId = `access-${nonce.join("")}`;
  return new Promise((resolve) => {
    const timer = window.setTimeout(() => settle({ error: { code: "deadline_exceeded" } }), ACCESS_TIMEOUT_MS);
    function settle(reply) {
      window.clearTimeout(timer);
      ctx.state.surfaceCalls.delete(requestId);
      asking.delete(requestId);
      resolve(reply.error == null && reply.result && typeof reply.result === "object" ? reply.result : null);
    }
    ctx.state.surfaceCalls.set(requestId, settle);
    asking.set(requestId, settle);
    const sent = ctx.send({
      type: "surface.request",
      request_id: requestId,
      instance_id: instanceId,
      surface_id: handle.surfaceId,
      method: "lineup/capabilities/request",
      params: { capability, purpose: ACCESS_PURPOSE[capability] },
    });
    if (!sent) settle({ error: { code: "runtime_unreachable" } });
  });
}

// An MCP App page's declared access, asked in turn: the network (which the runtime applies to
// the document it serves next), then the devices. Resolves to the frame's `allow` and what the
// page is told was approved (the spec's `hostCapabilities.sandbox`: the granted origins and
// devices, nothing else).
async function access(handle, wanted) {
  const devices = Array.isArray(wanted.devices) ? wanted.devices.filter((d) => typeof d === "string") : [];
  const sandbox = {};
  if (wanted.network === true) {
    const network = await askAccess(handle, NETWORK_CAPABILITY);
    if (network?.status === "completed" && isObject(wanted.csp)) sandbox.csp = wanted.csp;
  }
  if (devices.length === 0) return { allow: "", sandbox };
  const answer = await askAccess(handle, DEVICES_CAPABILITY);
  if (answer?.status !== "completed") return { allow: "", sandbox };
  const features = devices.map((d) => d.replace(/[^a-z-]/g, ""));
  sandbox.permissions = Object.fromEntries(features.map((d) => [SPEC_PERMISSION[d] ?? d, {}]));
  return { allow: features.join("; "), sandbox };
}

function build(handle, view, ask) {
  const { root } = handle;
  const wanted = view.mcp_access && typeof view.mcp_access === "object" ? view.mcp_access : null;
  if (ask && wanted !== null && handle.surfaceId !== null && SURFACE_VERSIONS.includes(view.surface_version)) {
    handle.asking += 1;
    const turn = handle.asking;
    const notice = el(
      "p",
      "surface-notice",
      "surface-asking",
      "This app's view waits for your answer on what it may reach.",
    );
    notice.setAttribute("role", "status");
    root.replaceChildren(notice);
    root.setAttribute("data-state", "asking");
    access(handle, wanted).then(({ allow, sandbox }) => {
      // Another Surface, an unmount or a newer ask meanwhile: this answer frames nothing.
      if (handle.asking !== turn || !live.has(handle) || handle.surfaceId !== view.surface_id) return;
      frame(handle, handle.view ?? view, allow, sandbox);
    });
    return;
  }
  handle.asking += 1;
  frame(handle, view, "", {});
}

function frame(handle, view, allow, sandbox) {
  const { ctx, instanceId, root } = handle;
  if (handle.surfaceId === null) {
    root.replaceChildren(el("p", "surface-notice", "surface-notice", "This app's view could not be shown."));
    return;
  }
  if (!SURFACE_VERSIONS.includes(view.surface_version)) {
    root.replaceChildren(
      el("p", "surface-notice", "surface-unavailable", "This app's view needs a newer LineUp."),
    );
    root.setAttribute("data-state", "unavailable");
    ctx.send({ type: "surface.unavailable", instance_id: instanceId, surface_id: handle.surfaceId });
    return;
  }
  const label = typeof view.label === "string" && view.label.trim() ? view.label.slice(0, 200) : "App";
  const iframe = document.createElement("iframe");
  iframe.className = "surface-frame";
  iframe.setAttribute("data-testid", "surface-frame");
  iframe.setAttribute("sandbox", "allow-scripts");
  iframe.setAttribute("referrerpolicy", "no-referrer");
  iframe.setAttribute("allow", allow);
  iframe.setAttribute("title", `${label} (app view)`);
  iframe.setAttribute("tabindex", "0");
  iframe.style.height = `${DEFAULT_HEIGHT}px`;
  // Listening before the frame's first script runs.
  handle.bridge = createBridge({
    ctx,
    instanceId,
    iframe,
    view,
    sandbox,
    onSize: (height) => {
      // `height` is the document's: the frame's border (border-box) comes on top of it, or
      // every Surface would scroll by the border's width.
      iframe.style.height = `${height + iframe.offsetHeight - iframe.clientHeight}px`;
    },
    onRejected: (count) => root.setAttribute("data-bridge-rejections", String(count)),
    // An MCP App's `ui/request-display-mode`: fullscreen takes the whole stage (shell.css).
    onDisplayMode: (mode) => root.setAttribute("data-display-mode", mode),
  });
  iframe.src = `/surfaces/${encodeURIComponent(instanceId)}/${DOCUMENT}`;
  handle.iframe = iframe;
  handles.set(iframe, handle);
  root.setAttribute("data-state", "mounted");
  root.setAttribute("data-display-mode", "inline");
  root.setAttribute("data-surface-id", handle.surfaceId);
  root.replaceChildren(iframe);
}

// Another Surface (a new id) replaces this one at once: no teardown wait.
function drop(handle) {
  if (handle.bridge !== null) handle.bridge.close();
  handle.bridge = null;
  handle.iframe = null;
  handle.root.replaceChildren();
}

// Returns the node the stage must leave in place: it removes itself after the teardown.
function unmount(handle) {
  const { bridge, root } = handle;
  live.delete(handle);
  handle.asking += 1;
  handle.bridge = null;
  if (bridge === null) return null;
  root.hidden = true;
  root.removeAttribute("data-testid"); // a leaving Surface is no longer "the" Surface
  bridge.teardown("unmounted").then(() => {
    bridge.close();
    root.remove();
  });
  return root;
}

// The Surface whose frame is `iframe` took the keyboard from the runtime's own UI: stopped (its
// frame removed), the runtime told (audited as the app's fault), and a button to show it again.
// Returns whether `iframe` was a mounted Surface's.
export function stopTheft(iframe) {
  const handle = handles.get(iframe);
  if (handle === undefined || handle.iframe !== iframe) return false;
  const { ctx, instanceId, root } = handle;
  drop(handle);
  const notice = el(
    "p",
    "surface-notice",
    "surface-stopped",
    "This app's view was stopped: it took the keyboard while LineUp was asking you something.",
  );
  const again = el("button", "surface-again", "surface-again", "Show it again");
  again.type = "button";
  again.addEventListener("click", () => {
    build(handle, handle.view, true);
    ctx.rerender(); // shielded like the others while the runtime's own UI is up
  });
  root.replaceChildren(notice, again);
  root.setAttribute("data-state", "stopped");
  ctx.send({ type: "surface.rejected", instance_id: instanceId, code: "surface_focus_taken", count: 1 });
  return true;
}

// The user changed `capability` for `appScope` on the Permissions page: each of its MCP App
// pages that declares it is framed anew, asking again only for an allow (a remembered grant
// answers without a prompt); a revoke or a block frames it with the default at once.
export function reframe(appScope, capability, policy) {
  if (capability !== NETWORK_CAPABILITY && capability !== DEVICES_CAPABILITY) return;
  for (const handle of live) {
    if (handle.appScope !== appScope || !handle.view?.mcp_access || handle.surfaceId === null) continue;
    drop(handle);
    build(handle, handle.view, policy === "allow");
  }
}

// The Shell's link went down: an access question's answer can no longer come, so the page is
// framed with the default now (fail closed; opening it again asks again).
export function accessLinkChanged(connected) {
  if (connected) return;
  for (const settle of [...asking.values()]) settle({ error: { code: "runtime_unreachable" } });
}

export const surface = {
  mount,
  update,
  unmount,
  // Never into a frame the runtime's own UI shields (main.js): that focus would be no theft,
  // but the Shell must not hand the keyboard to a Surface meanwhile either.
  focus: (handle) =>
    (handle.iframe?.hasAttribute("data-shielded") ? handle.root : (handle.iframe ?? handle.root)).focus(),
};
