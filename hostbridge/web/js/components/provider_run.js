// The host providers the Shell runs once the runtime decided (issue 14), each ended with
// `capability.done`:
// - notification.show: a Shell toast (the notices region), and the browser's own notification
//   when the user has let this page show them (`Notification.permission === "granted"`; the
//   permissions page offers to ask, on a click of the user's);
// - artifact.save: a download of the app's artifact, by the ticket scheme of
//   artifact_card.js (`/artifacts/<id>?ticket=…&download=1`, served as an attachment), with a
//   "Saving …" toast taken down when the runtime says the save ended;
// - file.open: a dialog of the Shell's own ("Choose a file", Cancel; Escape cancels): the
//   user's click opens the browser's picker, and the chosen file's bytes (never a path: a page
//   has none) go to the runtime, base64. A file larger than the app's `max_bytes` is refused
//   here, in the dialog, which stays open for another choice: nothing is sent for it (the
//   runtime checks the size again).
// Every Shell connected runs what it is told; the first to finish wins, the others take theirs
// down when the runtime says it ended.

import { formatSize } from "./artifact_card.js";
import { el, isId, isObject, uniqueId } from "../core/util.js";

const TICKET = /^[0-9a-f]{32}$/;
const MAX_ARTIFACT_BYTES = 256 * 1024; // lineup.sdk.protocol MAX_ARTIFACT_BYTES
const ACCEPT = {
  "image/png": [".png"],
  "application/json": [".json"],
  "text/plain": [".txt"],
  "text/markdown": [".md", ".markdown"],
  "text/csv": [".csv"],
  "application/vnd.lineup.bundle": [".lineup"], // lineup.sdk.protocol BUNDLE_MEDIA_TYPE
};
const TYPE_NAMES = {
  "image/png": "PNG image",
  "application/json": "JSON",
  "text/plain": "Text",
  "text/markdown": "Markdown",
  "text/csv": "CSV",
  "application/vnd.lineup.bundle": "LineUp app bundle",
};

const clip = (text, max) => String(text).slice(0, max);

function base64Of(buffer) {
  const bytes = new Uint8Array(buffer);
  let binary = "";
  for (let at = 0; at < bytes.length; at += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(at, at + 0x8000));
  }
  return window.btoa(binary);
}

export function createProviderRuns(ctx, notices) {
  const started = new Set(); // run ids this Shell ran (or is running)
  const saving = new Map(); // run id → its "Saving …" toast, taken down when the run ends
  const picker = createFilePicker(ctx);

  function done(runId, status, file) {
    // `type` first: the hostbridge tells this longer frame by its start (_server._LONG_FRAME).
    const sent = ctx.send({
      type: "capability.done",
      run_id: runId,
      status,
      ...(file === undefined ? {} : { file }),
    });
    if (sent) ctx.state.answered.add(runId);
  }

  function notify(run) {
    const title = clip(run.input.title ?? "", 120);
    const body = typeof run.input.body === "string" ? clip(run.input.body, 1000) : "";
    const app = clip(run.app_title || run.app_scope || "An app", 200);
    const toast = notices.add("info", body ? `${app}: ${title} — ${body}` : `${app}: ${title}`, {
      testId: "capability-notification",
    });
    toast?.setAttribute("data-run-id", run.run_id);
    if ("Notification" in window && window.Notification.permission === "granted") {
      try {
        new window.Notification(title, { body });
      } catch {
        // A browser that shows them only from a service worker: the toast is shown anyway.
      }
    }
    done(run.run_id, "completed");
  }

  function save(run) {
    const artifact = run.artifact;
    if (!isObject(artifact) || !isId(artifact.artifact_id) || !TICKET.test(artifact.ticket)) {
      done(run.run_id, "failed");
      return;
    }
    const link = document.createElement("a");
    link.href =
      `/artifacts/${encodeURIComponent(artifact.artifact_id)}` +
      `?ticket=${artifact.ticket}&download=1`;
    link.setAttribute("download", "");
    link.rel = "noopener noreferrer";
    link.hidden = true;
    document.body.append(link);
    link.click();
    link.remove();
    const toast = notices.add("info", `Saving ${clip(artifact.name ?? "the file", 128)}…`, {
      testId: "capability-saved",
    });
    if (toast !== null) saving.set(run.run_id, toast);
    done(run.run_id, "completed");
  }

  function render(state) {
    const now = Date.now() / 1000;
    picker.render(state);
    for (const run of state.runs.values()) {
      if (started.has(run.run_id) || state.answered.has(run.run_id)) continue;
      if (run.expires_at <= now) continue;
      if (run.capability === "file.open" && picker.busy()) continue; // one picker at a time
      started.add(run.run_id);
      if (run.capability === "notification.show") notify(run);
      else if (run.capability === "artifact.save") save(run);
      else if (run.capability === "file.open") picker.open(run, (status, file) => done(run.run_id, status, file));
      else done(run.run_id, "failed"); // a provider this Shell does not have
    }
    for (const id of started) if (!state.runs.has(id)) started.delete(id);
    // The save ended (the runtime took the download's outcome): its toast has said its part.
    for (const [id, toast] of saving) {
      if (state.runs.has(id)) continue;
      toast.remove();
      saving.delete(id);
    }
  }

  return { render };
}

function createFilePicker(ctx) {
  const dialog = el("dialog", "file-open", "file-open");
  const headingId = uniqueId("file-open-heading");
  dialog.setAttribute("aria-labelledby", headingId);
  const heading = el("h2", "file-open-heading", "file-open-heading");
  heading.id = headingId;
  const explain = el("p", "file-open-explain", "file-open-explain");
  const types = el("p", "file-open-types", "file-open-types");
  const error = el("p", "file-open-error", "file-open-error");
  error.setAttribute("role", "alert");
  error.hidden = true;
  const input = document.createElement("input");
  input.type = "file";
  input.className = "visually-hidden";
  input.setAttribute("data-testid", "file-open-input");
  input.tabIndex = -1;
  input.setAttribute("aria-hidden", "true");
  const choose = el("button", "file-open-choose", "file-open-choose", "Choose a file");
  choose.type = "button";
  const cancel = el("button", "file-open-cancel", "file-open-cancel", "Cancel");
  cancel.type = "button";
  const actions = el("div", "file-open-actions");
  actions.append(choose, cancel);
  dialog.append(heading, explain, types, error, input, actions);
  document.body.append(dialog);

  let current = null; // {run, finish}

  choose.addEventListener("click", () => input.click()); // the user's click: the gesture
  cancel.addEventListener("click", () => finish("cancelled_by_user"));
  dialog.addEventListener("cancel", (event) => {
    event.preventDefault();
    finish("cancelled_by_user");
  });
  dialog.addEventListener("close", () => {
    if (current !== null && !dialog.open) finish("cancelled_by_user");
  });
  input.addEventListener("change", () => {
    const file = input.files && input.files[0];
    input.value = "";
    if (file && current !== null) take(file, current);
  });

  function finish(status, file) {
    if (current === null) return;
    const { finish: tell } = current;
    current = null;
    if (dialog.open) dialog.close();
    tell(status, file);
  }

  async function take(file, run) {
    const limit = Math.min(MAX_ARTIFACT_BYTES, Number(run.run.input.max_bytes) || MAX_ARTIFACT_BYTES);
    if (file.size > limit) {
      error.textContent = `That file is ${formatSize(file.size)}; this app takes at most ${formatSize(limit)}. Choose a smaller one, or cancel.`;
      error.hidden = false;
      choose.focus();
      return;
    }
    let content;
    try {
      content = base64Of(await file.arrayBuffer());
    } catch {
      if (current === run) finish("failed");
      return;
    }
    if (current !== run) return; // cancelled, or ended elsewhere, meanwhile
    finish("completed", {
      name: clip(file.name || "file", 1024),
      media_type: clip(file.type || "", 128),
      content_b64: content,
    });
  }

  function open(run, tell) {
    current = { run, finish: tell };
    const app = clip(run.app_title || run.app_scope || "An app", 200);
    const allowed = Array.isArray(run.input.media_types)
      ? run.input.media_types.filter((t) => Object.hasOwn(ACCEPT, t))
      : [];
    const accepted = allowed.length > 0 ? allowed : Object.keys(ACCEPT);
    input.accept = accepted.flatMap((t) => [t, ...ACCEPT[t]]).join(",");
    const limit = Math.min(MAX_ARTIFACT_BYTES, Number(run.input.max_bytes) || MAX_ARTIFACT_BYTES);
    heading.textContent = `${app} asks you to open a file`;
    explain.textContent =
      `${app} gets a copy of the file you choose (at most ${formatSize(limit)}), ` +
      "never where it is on this computer.";
    types.textContent = `Types: ${accepted.map((t) => TYPE_NAMES[t]).join(", ")}`;
    error.hidden = true;
    error.textContent = "";
    dialog.setAttribute("data-run-id", run.run_id);
    if (!dialog.open) dialog.showModal();
    choose.focus();
  }

  function render(state) {
    if (current === null) return;
    const id = current.run.run_id;
    if (!state.runs.has(id) || current.run.expires_at <= Date.now() / 1000) {
      current = null; // ended elsewhere (another Shell, or its time ran out)
      if (dialog.open) dialog.close();
    }
  }

  return { open, render, busy: () => current !== null };
}
