// The runtime badge (what the runtime says of itself, or that this Shell is not connected)
// and the banner that says why the Shell is not connected.

import { byTestId } from "../core/util.js";

const RUNTIME_STATES = {
  created: { label: "Starting…", tone: "busy" },
  restoring: { label: "Restoring…", tone: "busy" },
  authenticating: { label: "Signing in…", tone: "busy" },
  synchronizing: { label: "Synchronizing…", tone: "busy" },
  online: { label: "Online", tone: "ok" },
  reconnecting: {
    label: "Reconnecting — messages will be sent when the connection returns",
    tone: "warn",
  },
  offline_degraded: {
    label: "Offline — messages will be sent when the connection returns",
    tone: "warn",
  },
  stopping: { label: "Stopping…", tone: "off" },
  stopped: { label: "Stopped", tone: "off" },
};
const LOCAL_STATES = {
  unknown: { label: "Connecting…", tone: "busy" },
  disconnected: { label: "Disconnected", tone: "off" },
};
// Why the link to the AppServer is down (the transport's appserver_* codes), in words.
const LINK_REASONS = {
  appserver_unreachable: "the AppServer cannot be reached",
  appserver_timeout: "the AppServer stopped answering",
  appserver_unavailable: "the AppServer reports an error",
  appserver_unauthorized: "the AppServer refused this account",
  appserver_protocol_error: "the network answers with something that is not the AppServer",
};

export function createStatus() {
  const badge = byTestId("runtime-state");
  const banner = byTestId("connection-banner");
  let shown = null;

  function render(state) {
    // Not connected: what the runtime said last is no longer known to be true.
    const { state: runtimeState, reason } =
      !state.link.connected && state.link.banner !== null
        ? { state: "disconnected", reason: null }
        : state.runtime;
    const key = `${runtimeState}|${reason}|${state.link.banner}|${state.link.reason}`;
    if (key === shown) return;
    shown = key;
    const known = RUNTIME_STATES[runtimeState] ?? LOCAL_STATES[runtimeState];
    const { label, tone } = known ?? { label: "Unknown state", tone: "busy" };
    const why = Object.hasOwn(LINK_REASONS, reason) ? LINK_REASONS[reason] : null;
    const down = runtimeState === "reconnecting" || runtimeState === "offline_degraded";
    badge.setAttribute("data-state", runtimeState);
    badge.setAttribute("data-tone", tone);
    if (down && why) badge.setAttribute("data-reason", reason);
    else badge.removeAttribute("data-reason");
    badge.textContent = down && why ? `${label}: ${why}` : label;

    const text = state.link.banner;
    banner.hidden = text === null;
    banner.textContent = text ?? "";
    if (state.link.reason) banner.setAttribute("data-reason", state.link.reason);
    else banner.removeAttribute("data-reason");
    document.body.classList.toggle("is-disconnected", text !== null);
  }

  return { render };
}
