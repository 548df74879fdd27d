// The Shell's one WebSocket to the hostbridge: the token, reconnecting with a capped, jittered
// backoff, and a watchdog. The hostbridge sends `shell.heartbeat` every 1.5 s whatever else it
// sends (hostbridge/shell_protocol.py HEARTBEAT_S); after SILENCE_MS without any frame the
// socket is given up as dead (a frozen or unplugged runtime never closes it) and the Shell says
// so and reconnects. Frames go to `onFrame` as text; what the link is doing goes to `onStatus`.

import { storageGet, storageSet } from "./util.js";

const TOKEN_KEY = "lineup.token";
export const SHELL_SUBPROTOCOL = "lineup.shell.v1"; // shell_protocol.SHELL_SUBPROTOCOL
export const TOKEN_SUBPROTOCOL = "lineup.token."; // shell_protocol.TOKEN_SUBPROTOCOL
const BACKOFF_MIN_MS = 250;
const BACKOFF_MAX_MS = 5000;
export const SILENCE_MS = 4000; // shell_protocol.SILENCE_S
const MAX_SEND_BYTES = 60 * 1024; // hostbridge closes the socket on a Shell frame over 64 KiB
// The one longer frame: `capability.done` with a picked file (shell_protocol
// MAX_CAPABILITY_DONE_FRAME: 256 KiB base64, and its fields).
export const MAX_FILE_FRAME_BYTES = Math.floor((256 * 1024 * 4) / 3) + 4 + 1024;
// Close codes after which retrying cannot help (hostbridge/_server.py): the token is from
// an earlier run (4401), or the page was refused (4403). The Shell stops and says why.
const FATAL_CLOSES = new Map([
  [
    4401,
    "This tab's access token is from an earlier run of the runtime, and the runtime refused " +
      "it. Run `lineup status` and open the Shell link it prints (`lineup run` printed it too).",
  ],
  [4403, "The runtime refused this page. Open the link that `lineup run` printed."],
]);

// The token comes in the URL fragment (never sent to a server, so never in its logs); it is
// kept in sessionStorage for reloads and stripped from the address bar and history.
function readToken() {
  const params = new URLSearchParams(window.location.hash.slice(1));
  const fromFragment = params.get("token");
  if (fromFragment) {
    storageSet(TOKEN_KEY, fromFragment);
    params.delete("token");
    const rest = params.toString();
    const url = window.location.pathname + window.location.search + (rest ? `#${rest}` : "");
    window.history.replaceState(window.history.state, "", url);
    return fromFragment;
  }
  return storageGet(TOKEN_KEY);
}

// `onStatus({connected, banner, reason})`: banner is null when all is well; reason is
// "refused" once the Shell gave up. `onOpen()` after each connect; `onTooLong()` when a frame
// is too large to send; `onNewRun()` when a new link (another run's token) replaced the old.
export function createConnection({ onFrame, onStatus, onOpen, onTooLong, onNewRun }) {
  const link = {
    token: null,
    socket: null,
    connected: false,
    attempt: 0,
    retryTimer: null,
    watchdog: null,
    gaveUp: false,
  };

  function status(banner, reason = null) {
    onStatus({ connected: link.connected, banner, reason });
  }

  // The token travels as a subprotocol, never in the URL: the browser prints a failed
  // socket's URL in the console (hostbridge/_shell_frame.py TOKEN_SUBPROTOCOL).
  function socketUrl() {
    const scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
    return `${scheme}//${window.location.host}/ws`;
  }

  function armWatchdog(socket) {
    window.clearTimeout(link.watchdog);
    link.watchdog = window.setTimeout(() => {
      if (link.socket !== socket) return;
      // Silent for too long: dead as far as the user is concerned. Its close event (whenever
      // the browser gives up on it) is ignored from now on.
      drop(socket);
      scheduleReconnect();
    }, SILENCE_MS);
  }

  function drop(socket) {
    window.clearTimeout(link.watchdog);
    link.socket = null;
    link.connected = false;
    try {
      socket.close();
    } catch {
      // Already closing.
    }
  }

  function connect() {
    link.retryTimer = null;
    let socket;
    try {
      socket = new WebSocket(socketUrl(), [SHELL_SUBPROTOCOL, TOKEN_SUBPROTOCOL + link.token]);
    } catch {
      scheduleReconnect();
      return;
    }
    link.socket = socket;
    armWatchdog(socket);
    socket.addEventListener("open", () => {
      if (link.socket !== socket) return;
      link.connected = true;
      link.attempt = 0;
      status(null);
      send({ type: "shell.ready" });
      onOpen();
    });
    socket.addEventListener("message", (event) => {
      if (link.socket !== socket) return;
      armWatchdog(socket);
      onFrame(event.data);
    });
    socket.addEventListener("close", (event) => {
      if (link.socket !== socket) return;
      window.clearTimeout(link.watchdog);
      link.socket = null;
      link.connected = false;
      if (FATAL_CLOSES.has(event.code)) {
        link.gaveUp = true;
        status(FATAL_CLOSES.get(event.code), "refused");
        return;
      }
      scheduleReconnect();
    });
  }

  function scheduleReconnect() {
    if (link.gaveUp || link.retryTimer !== null) return;
    const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** link.attempt);
    const delay = Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
    link.attempt = Math.min(link.attempt + 1, 16);
    status(`Disconnected from the runtime. Reconnecting in ${Math.ceil(delay / 1000)} s…`);
    link.retryTimer = window.setTimeout(connect, delay);
  }

  function send(frame) {
    const socket = link.socket;
    if (!link.connected || socket === null || socket.readyState !== WebSocket.OPEN) return false;
    const text = JSON.stringify(frame);
    const limit = frame.type === "capability.done" ? MAX_FILE_FRAME_BYTES : MAX_SEND_BYTES;
    if (new Blob([text]).size > limit) {
      onTooLong();
      return false;
    }
    socket.send(text);
    return true;
  }

  // The new link opened in this same tab changes only the fragment, which reloads nothing:
  // the Shell takes the new token itself and connects again, even after it gave up.
  window.addEventListener("hashchange", () => {
    if (!new URLSearchParams(window.location.hash.slice(1)).get("token")) return;
    const token = readToken();
    if (token === link.token && !link.gaveUp) return;
    link.token = token;
    link.gaveUp = false;
    onNewRun();
    link.attempt = 0;
    if (link.retryTimer !== null) {
      window.clearTimeout(link.retryTimer);
      link.retryTimer = null;
    }
    const previous = link.socket;
    if (previous !== null) drop(previous);
    connect();
  });

  function start() {
    link.token = readToken();
    if (link.token) {
      connect();
      return true;
    }
    status("No access token. Open the address printed by `lineup run`.");
    return false;
  }

  return { start, send, isConnected: () => link.connected };
}
