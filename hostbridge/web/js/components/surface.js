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

import { SURFACE_VERSIONS, createBridge } from "../core/bridge.js";
import { el, isId } from "../core/util.js";

const DOCUMENT = "index.html"; // the one entry document of this bridge version
const DEFAULT_HEIGHT = 480;
const handles = new WeakMap(); // a mounted Surface's iframe → its handle

function mount(container, ctx, instanceId) {
  const root = el("div", "surface", "surface");
  root.setAttribute("data-instance-id", instanceId);
  root.setAttribute("data-bridge-rejections", "0");
  container.append(root);
  return { ctx, instanceId, root, iframe: null, bridge: null, surfaceId: null, view: null };
}

function update(handle, entry) {
  const view = entry.view;
  const surfaceId = isId(view.surface_id) ? view.surface_id : null;
  if (surfaceId !== handle.surfaceId) {
    drop(handle);
    handle.surfaceId = surfaceId;
    build(handle, view);
  }
  handle.view = view;
  if (handle.bridge !== null) handle.bridge.update(view);
}

function build(handle, view) {
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
  iframe.setAttribute("allow", "");
  iframe.setAttribute("title", `${label} (app view)`);
  iframe.setAttribute("tabindex", "0");
  iframe.style.height = `${DEFAULT_HEIGHT}px`;
  // Listening before the frame's first script runs.
  handle.bridge = createBridge({
    ctx,
    instanceId,
    iframe,
    view,
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
    build(handle, handle.view);
    ctx.rerender(); // shielded like the others while the runtime's own UI is up
  });
  root.replaceChildren(notice, again);
  root.setAttribute("data-state", "stopped");
  ctx.send({ type: "surface.rejected", instance_id: instanceId, code: "surface_focus_taken", count: 1 });
  return true;
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
