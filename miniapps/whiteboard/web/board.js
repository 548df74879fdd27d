// The Whiteboard's canvas. Drawing happens here at pointer rate; what the user did goes to the
// app as ops (`board.patch` events, batched, at most one every PATCH_INTERVAL_MS). An op stays
// pending, drawn on top of the board, until a session data revision lists its id in `applied`
// (or `refused`); until then it is re-sent every RESEND_MS, and the app applies an op id once.
// The board shown is always the newest session data revision plus the pending ops, so a
// reload (of this frame, of the Shell) or a restart of the app loses nothing that was sent.
// While the Shell has no link to the runtime (the bridge's `onConnection`), the board says it
// is offline, keeps what is drawn pending and sends nothing, Submit and Export wait; once the
// link is back everything pending goes at once and the board says when it is saved. What is
// drawn offline lives in this frame only: a restart of the whole runtime meanwhile loses it,
// and the board says so.
(function () {
  "use strict";

  const bridge = window.LineUpBridge;
  const WIDTH = 1600;
  const HEIGHT = 1000;
  const BACKGROUND = "#ffffff";
  const MAX_POINTS = 2000;
  const PATCH_INTERVAL_MS = 100;
  const RESEND_MS = 1000;
  const MAX_PATCH_BYTES = 48 * 1024; // one event's JSON stays well under the bridge's 64 KiB
  const MAX_TEXT = 500;
  const OFFLINE_TEXT =
    "Offline: LineUp cannot be reached. What you draw is saved once it is back " +
    "(not if LineUp restarts meanwhile).";

  const canvas = document.getElementById("canvas");
  const ctx = canvas.getContext("2d");
  const statusLine = document.getElementById("board-status");
  const titleLine = document.getElementById("board-title");
  const widthInput = document.getElementById("width");
  const textInput = document.getElementById("text-input");
  const undoButton = document.getElementById("undo");
  const submitButton = document.getElementById("submit");
  const exportButton = document.getElementById("export");

  let items = []; // the board's items as the newest revision holds them
  let revision = -1;
  let phase = "drawing";
  let online = true; // the Shell's link to the runtime, as the bridge last told
  let exporting = null; // the id of the export this frame asked for, until its outcome comes
  const pending = new Map(); // op_id -> {op, sentAt} (insertion order: the order drawn)
  let queue = []; // op ids drawn but not sent yet
  let lastPatchAt = 0;
  let current = null; // the stroke being drawn
  let tool = "pen";
  let colour = "#1f2328";
  let opCount = 0;
  let textSlot = 0;
  const mine = []; // op ids this frame made, newest last: what Undo takes back first
  const sessionPrefix = randomId();

  function randomId() {
    const bytes = new Uint8Array(6);
    crypto.getRandomValues(bytes);
    return Array.from(bytes, function (b) {
      return b.toString(16).padStart(2, "0");
    }).join("");
  }

  function newOpId() {
    opCount += 1;
    return "op-" + sessionPrefix + "-" + opCount;
  }

  function setStatus(text) {
    statusLine.textContent = text;
  }

  function publish() {
    // For tests and assistive tools: plain facts, never content.
    document.body.dataset.revision = String(revision);
    document.body.dataset.pending = String(pending.size); // queued ones are pending too
    document.body.dataset.items = String(visibleItems().length);
    document.body.dataset.phase = phase;
    document.body.dataset.link = online ? "online" : "offline";
  }

  // Submit and Export need the runtime: they wait while it is away (and while they run).
  function controls() {
    submitButton.disabled = phase !== "drawing" || !online;
    exportButton.disabled = exporting !== null || phase !== "drawing" || !online;
  }

  // ------------------------------------------------------------------ drawing

  function visibleItems() {
    const shown = items.slice();
    const undone = new Set();
    pending.forEach(function (entry) {
      const op = entry.op;
      if (op.kind === "undo") undone.add(op.target);
      else if (!shown.some(function (i) { return i.id === op.op_id; })) shown.push(itemOf(op));
    });
    return shown.filter(function (i) {
      return !undone.has(i.id);
    });
  }

  function itemOf(op) {
    const item = Object.assign({}, op, { id: op.op_id });
    delete item.op_id;
    return item;
  }

  function drawStroke(item) {
    const pts = item.points;
    ctx.strokeStyle = item.mode === "erase" ? BACKGROUND : item.colour;
    ctx.fillStyle = ctx.strokeStyle;
    ctx.lineWidth = item.width;
    ctx.lineCap = "round";
    ctx.lineJoin = "round";
    if (pts.length === 2) {
      ctx.beginPath();
      ctx.arc(pts[0], pts[1], Math.max(0.5, item.width / 2), 0, 2 * Math.PI);
      ctx.fill();
      return;
    }
    ctx.beginPath();
    ctx.moveTo(pts[0], pts[1]);
    for (let i = 2; i < pts.length; i += 2) ctx.lineTo(pts[i], pts[i + 1]);
    ctx.stroke();
  }

  function drawText(item) {
    ctx.font = "18px system-ui, sans-serif";
    ctx.textBaseline = "top";
    const lines = [];
    for (let i = 0; i < item.text.length; i += 60) lines.push(item.text.slice(i, i + 60));
    let widest = 0;
    lines.forEach(function (line) {
      widest = Math.max(widest, ctx.measureText(line).width);
    });
    ctx.strokeStyle = item.colour;
    ctx.lineWidth = 2;
    ctx.strokeRect(item.x, item.y, widest + 16, lines.length * 22 + 8);
    ctx.fillStyle = item.colour;
    lines.forEach(function (line, n) {
      ctx.fillText(line, item.x + 8, item.y + 6 + n * 22);
    });
  }

  function redraw() {
    ctx.fillStyle = BACKGROUND;
    ctx.fillRect(0, 0, WIDTH, HEIGHT);
    visibleItems().forEach(function (item) {
      if (item.kind === "stroke") drawStroke(item);
      else if (item.kind === "text") drawText(item);
    });
    if (current) drawStroke(itemOf(current));
    publish();
  }

  function boardPoint(event) {
    const rect = canvas.getBoundingClientRect();
    const x = Math.round(((event.clientX - rect.left) / rect.width) * WIDTH);
    const y = Math.round(((event.clientY - rect.top) / rect.height) * HEIGHT);
    return [Math.min(WIDTH, Math.max(0, x)), Math.min(HEIGHT, Math.max(0, y))];
  }

  function beginStroke(point) {
    current = {
      op_id: newOpId(),
      kind: "stroke",
      mode: tool === "erase" ? "erase" : "pen",
      colour: colour,
      width: Number(widthInput.value) || 4,
      points: [point[0], point[1]],
    };
  }

  function extendStroke(point) {
    const pts = current.points;
    if (pts[pts.length - 2] === point[0] && pts[pts.length - 1] === point[1]) return;
    if (pts.length >= 2 * MAX_POINTS) {
      // A stroke has at most MAX_POINTS points: go on in a new one from the last point.
      const last = [pts[pts.length - 2], pts[pts.length - 1]];
      endStroke();
      beginStroke(last);
    }
    current.points.push(point[0], point[1]);
  }

  function endStroke() {
    if (!current) return;
    const op = current;
    current = null;
    add(op);
  }

  function add(op) {
    pending.set(op.op_id, { op: op, sentAt: 0 });
    queue.push(op.op_id);
    if (op.kind !== "undo") mine.push(op.op_id);
    redraw();
    schedule();
  }

  function placeText(point) {
    const text = textInput.value.trim().slice(0, MAX_TEXT);
    if (!text) {
      setStatus("Type the text first, then place it.");
      textInput.focus();
      return;
    }
    add({ op_id: newOpId(), kind: "text", x: point[0], y: point[1], text: text, colour: colour });
    textInput.value = "";
  }

  function undo() {
    const shown = new Set(visibleItems().map(function (i) { return i.id; }));
    let target = null;
    while (mine.length) {
      const candidate = mine.pop();
      if (shown.has(candidate)) {
        target = candidate;
        break;
      }
    }
    if (target === null) {
      const all = visibleItems();
      if (!all.length) return;
      target = all[all.length - 1].id;
    }
    add({ op_id: newOpId(), kind: "undo", target: target });
  }

  // ------------------------------------------------------------------ sending

  let flushTimer = null;

  function schedule() {
    if (flushTimer !== null) return;
    const wait = Math.max(0, lastPatchAt + PATCH_INTERVAL_MS - Date.now());
    flushTimer = setTimeout(function () {
      flushTimer = null;
      flush();
    }, wait);
  }

  function flush() {
    if (!online) return; // kept pending (and queued) until the link is back
    const now = Date.now();
    const due = queue.filter(function (id) { return pending.has(id); });
    queue = [];
    pending.forEach(function (entry, id) {
      if (entry.sentAt && now - entry.sentAt >= RESEND_MS && due.indexOf(id) < 0) due.push(id);
    });
    if (!due.length) return;
    lastPatchAt = now;
    let batch = [];
    let size = 0;
    due.forEach(function (id) {
      const entry = pending.get(id);
      const bytes = JSON.stringify(entry.op).length;
      if (batch.length && size + bytes > MAX_PATCH_BYTES) {
        send(batch);
        batch = [];
        size = 0;
      }
      entry.sentAt = now;
      batch.push(entry.op);
      size += bytes;
    });
    if (batch.length) send(batch);
    publish();
  }

  function send(ops) {
    bridge.request("lineup/event", { name: "board.patch", data: { ops: ops } }).catch(function (err) {
      // The app may be restarting (`actor_restarted`): the ops stay pending and go again.
      // With no link to the runtime (`runtime_unreachable`, the bridge's notice on its way)
      // they go again once it is back.
      setStatus(
        err.code === "actor_restarted"
          ? "Reconnecting…"
          : err.code === "runtime_unreachable"
            ? OFFLINE_TEXT
            : "Not saved yet, retrying…",
      );
    });
  }

  setInterval(flush, RESEND_MS);

  // The link went down: nothing is sent, the board says so. Back: all that is pending goes now.
  function takeLink(up) {
    online = up;
    controls();
    if (!up) {
      setStatus(OFFLINE_TEXT);
    } else {
      queue = Array.from(pending.keys());
      setStatus(queue.length ? "Back online: saving…" : "Back online.");
      flush();
    }
    publish();
  }

  // ------------------------------------------------------------------ the runtime's word

  function takeSessionData(params) {
    if (typeof params.revision !== "number" || params.revision <= revision) return;
    revision = params.revision;
    const data = params.data && typeof params.data === "object" ? params.data : {};
    const board = data.board && typeof data.board === "object" ? data.board : null;
    items = board && Array.isArray(board.items) ? board.items : [];
    if (board && typeof board.title === "string") titleLine.textContent = board.title;
    (Array.isArray(data.applied) ? data.applied : []).forEach(function (id) {
      pending.delete(id);
    });
    let full = false;
    (Array.isArray(data.refused) ? data.refused : []).forEach(function (r) {
      if (r && pending.has(r.op_id)) {
        pending.delete(r.op_id);
        if (r.code === "quota_exceeded") full = true;
      }
    });
    if (full) setStatus("The board is full: that last change was not kept.");
    else if (!pending.size) setStatus("Saved.");
    redraw();
  }

  function takeState(state) {
    if (!state || typeof state !== "object") return;
    if (typeof state.title === "string") titleLine.textContent = state.title;
    if (typeof state.phase === "string") phase = state.phase;
    controls();
    if (phase === "confirming") setStatus("Waiting for your confirmation…");
    else if (phase === "submitting") setStatus("Submitting…");
    takeExport(state.export);
    publish();
  }

  // The outcome of an export, as the app reports it in the state (`export`): the runtime
  // asked the user and the Shell saved the download, or said why not (a code, shown as text).
  const EXPORT_TEXT = {
    saving: "Exporting…",
    completed: "Exported: the PNG was saved as a download.",
    cancelled_by_user: "Export cancelled.",
    permission_denied: "Export not allowed.",
    policy_denied: "Export is blocked for this app.",
    unsupported_on_host: "This host cannot save files.",
    expired: "The export was not confirmed in time.",
  };

  function takeExport(outcome) {
    if (!outcome || typeof outcome !== "object" || typeof outcome.status !== "string") return;
    document.body.dataset.export = outcome.status;
    if (typeof outcome.code === "string") document.body.dataset.exportCode = outcome.code;
    else delete document.body.dataset.exportCode;
    // For tests and assistive tools: the artifact saved (an id, never content).
    if (typeof outcome.artifact_id === "string") {
      document.body.dataset.exportArtifact = outcome.artifact_id;
    }
    const text = EXPORT_TEXT[outcome.status];
    setStatus(text || "The export failed (" + (outcome.code || "error") + ").");
    if (outcome.export_id === exporting && outcome.status !== "saving") exporting = null;
    controls();
  }

  bridge.onConnection(takeLink);
  bridge.on("lineup/notifications/session-data", takeSessionData);
  bridge.on("lineup/notifications/state", function (params) {
    takeState(params.state);
  });
  bridge.on("ui/notifications/tool-input", function () {});
  bridge.on("ui/notifications/tool-result", function () {});
  bridge.on("ui/resource-teardown", function () {
    flush();
    return {};
  });

  // ------------------------------------------------------------------ controls

  function selectTool(name) {
    tool = name;
    document.body.dataset.tool = name;
    document.querySelectorAll(".tool").forEach(function (b) {
      b.setAttribute("aria-pressed", String(b.dataset.tool === name));
    });
    if (name === "text") textInput.focus();
  }

  function selectColour(value) {
    colour = value;
    document.querySelectorAll(".swatch").forEach(function (b) {
      b.setAttribute("aria-pressed", String(b.dataset.colour === value));
    });
  }

  document.querySelectorAll(".tool").forEach(function (b) {
    b.addEventListener("click", function () { selectTool(b.dataset.tool); });
  });
  document.querySelectorAll(".swatch").forEach(function (b) {
    b.addEventListener("click", function () { selectColour(b.dataset.colour); });
  });
  undoButton.addEventListener("click", undo);
  submitButton.addEventListener("click", function () {
    flush();
    submitButton.disabled = true;
    bridge.request("lineup/event", { name: "board.submit", data: {} }).catch(function () {
      controls();
      setStatus("Could not submit yet; try again.");
    });
  });
  exportButton.addEventListener("click", function () {
    flush();
    exporting = randomId();
    exportButton.disabled = true;
    bridge
      .request("lineup/event", { name: "board.export", data: { export_id: exporting } })
      .catch(function () {
        exporting = null;
        controls();
        setStatus("Could not export yet; try again.");
      });
  });
  textInput.addEventListener("keydown", function (event) {
    if (event.key === "Enter") {
      event.preventDefault();
      // From the keyboard: boxes go down the left side, one under the other.
      const y = 40 + (textSlot % 20) * 44;
      textSlot += 1;
      placeText([40, y]);
    }
  });

  canvas.addEventListener("pointerdown", function (event) {
    if (event.button !== 0) return;
    const point = boardPoint(event);
    if (tool === "text") {
      placeText(point);
      return;
    }
    try {
      canvas.setPointerCapture(event.pointerId);
    } catch (err) {
      // A pointer the browser does not know (a synthetic event): draw without capture.
    }
    beginStroke(point);
    redraw();
  });
  canvas.addEventListener("pointermove", function (event) {
    if (!current) return;
    extendStroke(boardPoint(event));
    redraw();
  });
  canvas.addEventListener("pointerup", endStroke);
  canvas.addEventListener("pointercancel", endStroke);

  document.addEventListener("keydown", function (event) {
    if ((event.ctrlKey || event.metaKey) && (event.key === "z" || event.key === "Z")) {
      event.preventDefault();
      undo();
      return;
    }
    if (event.target === textInput || event.ctrlKey || event.metaKey || event.altKey) return;
    const key = event.key.toLowerCase();
    if (key === "p") selectTool("pen");
    else if (key === "e") selectTool("erase");
    else if (key === "t") {
      event.preventDefault();
      selectTool("text");
    }
  });

  // ------------------------------------------------------------------ start

  async function start() {
    redraw();
    try {
      const init = await bridge.initialize({ name: "lineup-whiteboard", version: "1.0.0" });
      const context = (init.hostContext && init.hostContext.lineup) || {};
      takeState(context.state);
      takeSessionData(await bridge.request("lineup/session-data/subscribe", {}));
      document.body.dataset.state = "ready";
      bridge.trackSize(); // the frame follows the page's height
    } catch (err) {
      document.body.dataset.state = "failed";
      setStatus("The board could not connect (" + (err.code || "error") + ").");
    }
  }

  start();
})();
