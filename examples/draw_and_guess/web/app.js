// Draw-and-Guess's Surface: the word to draw, a canvas, the Agent's guesses and the outcome.
// It speaks to the Shell through the runtime's bridge client (window.LineUpBridge). Drawing
// happens here at pointer rate; each stroke goes to the app in batches of its points
// (`stroke.add`: the stroke's id, the batch's seq in it, at most MAX_BATCH points), one every
// BATCH_MS while the pointer moves. A batch stays pending, drawn on top, until a session data
// revision lists its key in `applied` (or `refused`); until then it is re-sent every RESEND_MS,
// and the app applies a key once. So a reload of this frame, of the Shell, or a restart of the
// app loses nothing that was sent. The round's facts (word, tries left, guesses, outcome) come
// in the Surface state. Text only, by textContent: no markup is ever made from data.
(function () {
  "use strict";

  const bridge = window.LineUpBridge;
  const WIDTH = 800;
  const HEIGHT = 600;
  const PEN = "#1f2328";
  const BACKGROUND = "#ffffff";
  const PEN_WIDTH = 6;
  const MAX_BATCH = 256; // points in one batch, as the app takes them
  const BATCH_MS = 100;
  const RESEND_MS = 1000;

  const canvas = document.getElementById("canvas");
  const ctx = canvas.getContext("2d");
  const wordLine = document.getElementById("word");
  const triesLine = document.getElementById("tries");
  const statusLine = document.getElementById("status");
  const guessList = document.getElementById("guesses");
  const noGuesses = document.getElementById("no-guesses");
  const clearButton = document.getElementById("clear");
  const giveUpButton = document.getElementById("give-up");

  let strokes = []; // the strokes as the newest revision holds them: [{id, parts}]
  let revision = -1;
  let phase = "starting";
  const pending = new Map(); // key -> {data, sentAt}: batches sent and not yet applied
  let clearing = null; // the clear id sent and not yet applied: old strokes hidden meanwhile
  let current = null; // the stroke being drawn: {id, seq, unsent: [x, y, ...], last: [x, y]}
  let strokeCount = 0;
  const framePrefix = randomId();

  function randomId() {
    const bytes = new Uint8Array(6);
    crypto.getRandomValues(bytes);
    return Array.from(bytes, function (b) {
      return b.toString(16).padStart(2, "0");
    }).join("");
  }

  function setStatus(text) {
    statusLine.textContent = text;
  }

  function publish() {
    // For tests and assistive tools: plain facts, never content.
    document.body.dataset.revision = String(revision);
    document.body.dataset.pending = String(pending.size);
    document.body.dataset.strokes = String(shownLines().length);
    document.body.dataset.phase = phase;
  }

  // ------------------------------------------------------------------ drawing

  function shownLines() {
    // Each stroke's points in order: the applied ones, then the pending and unsent batches.
    const byId = new Map();
    if (clearing === null) {
      strokes.forEach(function (s) {
        const parts = new Map();
        s.parts.forEach(function (part) {
          parts.set(part[0], part[1]);
        });
        byId.set(s.id, parts);
      });
    }
    pending.forEach(function (entry) {
      const d = entry.data;
      if (!byId.has(d.stroke_id)) byId.set(d.stroke_id, new Map());
      byId.get(d.stroke_id).set(d.seq, d.points);
    });
    if (current && current.unsent.length) {
      if (!byId.has(current.id)) byId.set(current.id, new Map());
      byId.get(current.id).set(current.seq, current.unsent);
    }
    const lines = [];
    byId.forEach(function (parts) {
      const flat = [];
      Array.from(parts.keys())
        .sort(function (a, b) {
          return a - b;
        })
        .forEach(function (seq) {
          parts.get(seq).forEach(function (v) {
            flat.push(v);
          });
        });
      if (flat.length) lines.push(flat);
    });
    return lines;
  }

  function drawLine(pts) {
    ctx.strokeStyle = PEN;
    ctx.fillStyle = PEN;
    ctx.lineWidth = PEN_WIDTH;
    ctx.lineCap = "round";
    ctx.lineJoin = "round";
    if (pts.length === 2) {
      ctx.beginPath();
      ctx.arc(pts[0], pts[1], PEN_WIDTH / 2, 0, 2 * Math.PI);
      ctx.fill();
      return;
    }
    ctx.beginPath();
    ctx.moveTo(pts[0], pts[1]);
    for (let i = 2; i < pts.length; i += 2) ctx.lineTo(pts[i], pts[i + 1]);
    ctx.stroke();
  }

  function redraw() {
    ctx.fillStyle = BACKGROUND;
    ctx.fillRect(0, 0, WIDTH, HEIGHT);
    shownLines().forEach(drawLine);
    publish();
  }

  function canvasPoint(event) {
    // Client pixels to the canvas's own, clamped to it (the app clamps again). The drawing is
    // the canvas's content box: its border (clientLeft/clientTop) is outside it.
    const rect = canvas.getBoundingClientRect();
    const left = rect.left + canvas.clientLeft;
    const top = rect.top + canvas.clientTop;
    const x = Math.round(((event.clientX - left) / canvas.clientWidth) * WIDTH);
    const y = Math.round(((event.clientY - top) / canvas.clientHeight) * HEIGHT);
    return [Math.min(WIDTH, Math.max(0, x)), Math.min(HEIGHT, Math.max(0, y))];
  }

  function drawing() {
    return phase === "playing";
  }

  function beginStroke(point) {
    strokeCount += 1;
    current = { id: "s-" + framePrefix + "-" + strokeCount, seq: 0, unsent: [], last: null };
    extendStroke(point);
  }

  function extendStroke(point) {
    const last = current.last;
    if (last && last[0] === point[0] && last[1] === point[1]) return;
    current.last = point;
    current.unsent.push(point[0], point[1]);
    if (current.unsent.length >= 2 * MAX_BATCH) sendBatch();
  }

  function endStroke() {
    if (!current) return;
    sendBatch();
    current = null;
    redraw();
  }

  function sendBatch() {
    // The unsent points of the stroke being drawn, as its next batch.
    if (!current || !current.unsent.length) return;
    const data = { stroke_id: current.id, seq: current.seq, points: current.unsent };
    current.seq += 1;
    current.unsent = [];
    const key = data.stroke_id + ":" + data.seq;
    pending.set(key, { data: data, sentAt: Date.now() });
    send("stroke.add", data);
  }

  function send(name, data) {
    return bridge.request("lineup/event", { name: name, data: data }).catch(function (err) {
      // The app may be restarting (`actor_restarted`): what is pending goes again.
      setStatus(err.code === "actor_restarted" ? "Reconnecting…" : "Not saved yet, retrying…");
    });
  }

  function tick() {
    if (current) sendBatch();
    const now = Date.now();
    pending.forEach(function (entry) {
      if (now - entry.sentAt >= RESEND_MS) {
        entry.sentAt = now;
        send("stroke.add", entry.data);
      }
    });
    if (clearing !== null && now - clearing.sentAt >= RESEND_MS) {
      clearing.sentAt = now;
      send("drawing.clear", { clear_id: clearing.id });
    }
    publish();
  }

  setInterval(tick, BATCH_MS);

  function clearDrawing() {
    if (!drawing()) return;
    // What was drawn before the clear is cleared by it: nothing of it is re-sent.
    pending.clear();
    current = null;
    clearing = { id: randomId(), sentAt: Date.now() };
    send("drawing.clear", { clear_id: clearing.id });
    redraw();
  }

  // ------------------------------------------------------------------ the runtime's word

  function takeSessionData(params) {
    if (typeof params.revision !== "number" || params.revision <= revision) return;
    revision = params.revision;
    const data = params.data && typeof params.data === "object" ? params.data : {};
    const held = data.drawing && Array.isArray(data.drawing.strokes) ? data.drawing.strokes : [];
    strokes = held.filter(function (s) {
      return s && typeof s.id === "string" && Array.isArray(s.parts);
    });
    const applied = Array.isArray(data.applied) ? data.applied : [];
    applied.forEach(function (key) {
      pending.delete(key);
    });
    if (clearing !== null && applied.indexOf("clear:" + clearing.id) >= 0) clearing = null;
    let full = false;
    (Array.isArray(data.refused) ? data.refused : []).forEach(function (r) {
      if (r && pending.has(r.key)) {
        pending.delete(r.key);
        if (r.code === "quota_exceeded") full = true;
      }
    });
    if (full) setStatus("The drawing is full: that last line was not kept.");
    redraw();
  }

  const OUTCOME_TEXT = {
    won: "The Agent guessed it!",
    lost: "No tries left: the Agent did not guess it.",
    gave_up: "You gave up this round.",
  };

  function takeState(state) {
    if (!state || typeof state !== "object") return;
    if (typeof state.phase === "string") phase = state.phase;
    if (typeof state.word === "string") wordLine.textContent = state.word;
    if (typeof state.tries_left === "number" && typeof state.max_tries === "number") {
      triesLine.textContent = "Tries left: " + state.tries_left + " of " + state.max_tries;
      document.body.dataset.triesLeft = String(state.tries_left);
    }
    if (Array.isArray(state.guesses)) showGuesses(state.guesses);
    if (phase === "idle") {
      setStatus("No round is being played: ask the Agent to start one.");
    } else if (OUTCOME_TEXT[phase]) {
      setStatus(OUTCOME_TEXT[phase]);
    } else if (phase === "playing") {
      setStatus("Draw the word; the Agent guesses.");
    }
    clearButton.disabled = !drawing();
    giveUpButton.disabled = !drawing();
    if (!drawing()) current = null;
    publish();
  }

  function showGuesses(guesses) {
    const items = guesses
      .filter(function (g) {
        return g && typeof g.word === "string";
      })
      .map(function (g) {
        const li = document.createElement("li");
        li.className = g.correct === true ? "right" : "wrong";
        li.textContent = g.word + (g.correct === true ? " — right" : " — wrong");
        return li;
      });
    guessList.replaceChildren.apply(guessList, items);
    noGuesses.hidden = items.length > 0;
    document.body.dataset.guesses = String(items.length);
  }

  bridge.on("lineup/notifications/session-data", takeSessionData);
  bridge.on("lineup/notifications/state", function (params) {
    takeState(params.state);
  });
  bridge.on("ui/notifications/tool-input", function () {});
  bridge.on("ui/notifications/tool-result", function () {});
  bridge.on("ui/resource-teardown", function () {
    if (current) sendBatch();
    return {};
  });

  // ------------------------------------------------------------------ controls

  clearButton.addEventListener("click", clearDrawing);
  giveUpButton.addEventListener("click", function () {
    if (!drawing()) return;
    if (current) sendBatch();
    giveUpButton.disabled = true;
    bridge.request("lineup/event", { name: "round.give_up", data: {} }).catch(function (err) {
      giveUpButton.disabled = !drawing();
      setStatus("Could not give up yet (" + (err.code || "error") + "); try again.");
    });
  });

  canvas.addEventListener("pointerdown", function (event) {
    if (event.button !== 0 || !drawing()) return;
    try {
      canvas.setPointerCapture(event.pointerId);
    } catch (err) {
      // A pointer the browser does not know (a synthetic event): draw without capture.
    }
    beginStroke(canvasPoint(event));
    redraw();
  });
  canvas.addEventListener("pointermove", function (event) {
    if (!current) return;
    extendStroke(canvasPoint(event));
    redraw();
  });
  canvas.addEventListener("pointerup", endStroke);
  canvas.addEventListener("pointercancel", endStroke);

  // ------------------------------------------------------------------ start

  async function start() {
    redraw();
    try {
      const init = await bridge.initialize({ name: "draw-and-guess", version: "1.0.0" });
      const context = (init.hostContext && init.hostContext.lineup) || {};
      takeState(context.state);
      takeSessionData(await bridge.request("lineup/session-data/subscribe", {}));
      document.body.dataset.state = "ready";
      bridge.trackSize(); // the frame follows the page's height
    } catch (err) {
      document.body.dataset.state = "failed";
      setStatus("The game could not connect (" + (err.code || "error") + ").");
    }
  }

  start();
})();
