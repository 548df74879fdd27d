// The Task Dashboard's trusted component (view kind `task.dashboard`): built once per
// instance, then updated in place from each snapshot, so a progress update neither rebuilds
// the buttons nor moves focus. Its status is the app's (`task.status`); this only shows it.

import { el, isId, isObject } from "../core/util.js";
import { progressBar } from "./progress_bar.js";

const TASK_STATUSES = { todo: "To do", doing: "In progress", done: "Done" };
// The Task Dashboard's actions, by the name its view lists them under.
const TASK_ACTIONS = {
  finish: { label: "Mark done", event: "task.finish", testId: "task-finish", tone: "primary" },
  close: { label: "Close", event: "task.close", testId: "task-close", tone: "secondary" },
};

function mount(container, ctx, instanceId) {
  const root = el("article", "task-dashboard", "task-dashboard");
  root.setAttribute("data-instance-id", instanceId);
  root.setAttribute("aria-labelledby", "task-title");

  const header = el("div", "task-header");
  const eyebrow = el("p", "task-eyebrow", "", "Task");
  const status = el("span", "task-status", "task-status");
  status.setAttribute("role", "status"); // a changed state is announced
  header.append(eyebrow, status);

  const heading = el("h2", "task-title", "task-title");
  heading.id = "task-title";
  heading.setAttribute("tabindex", "-1");

  const progress = progressBar("task-progress");

  const actions = el("div", "task-actions");
  actions.setAttribute("role", "group");
  actions.setAttribute("aria-label", "Task actions");

  root.append(header, heading, progress.node, actions);
  container.append(root);
  const parts = { root, heading, status, progress, actions };
  return { ctx, instanceId, appScope: "", view: null, actionsKey: null, ...parts };
}

function update(dash, entry) {
  const view = entry.view;
  if (dash.view === view) return; // not a new snapshot: nothing to update
  dash.view = view;
  dash.appScope = entry.appScope;
  const task = isObject(view.task) ? view.task : {};
  const title = typeof task.title === "string" && task.title.trim() ? task.title : "Untitled";
  dash.heading.textContent = title.slice(0, 500);
  dash.root.setAttribute("data-task-id", isId(task.task_id) ? task.task_id : "");

  const progress = Number.isFinite(task.progress)
    ? Math.min(100, Math.max(0, Math.round(task.progress)))
    : 0;
  dash.progress.set(progress);

  const status = Object.hasOwn(TASK_STATUSES, task.status) ? task.status : "unknown";
  dash.root.setAttribute("data-status", status);
  dash.status.setAttribute("data-status", status);
  dash.status.textContent = TASK_STATUSES[status] ?? "Unknown";

  const names = [];
  for (const name of Array.isArray(view.actions) ? view.actions : []) {
    if (Object.hasOwn(TASK_ACTIONS, name) && !names.includes(name)) names.push(name);
  }
  const key = names.join(" ");
  if (key === dash.actionsKey) {
    // A new snapshot answers whatever was clicked: the buttons work again.
    for (const button of dash.actions.children) button.removeAttribute("aria-disabled");
  } else {
    const hadFocus = dash.actions.contains(document.activeElement);
    dash.actions.replaceChildren(...names.map((name) => actionButton(dash, name)));
    dash.actions.hidden = names.length === 0;
    dash.actionsKey = key;
    if (hadFocus) (dash.actions.firstElementChild ?? dash.heading).focus();
  }
}

function actionButton(dash, name) {
  const action = TASK_ACTIONS[name];
  const button = el("button", `task-action task-action-${action.tone}`, action.testId, action.label);
  button.type = "button";
  button.addEventListener("click", () => {
    if (button.getAttribute("aria-disabled") === "true") return;
    const sent = dash.ctx.send({
      type: "ui.event",
      app_scope: dash.appScope,
      instance_id: dash.instanceId,
      event: { kind: action.event },
    });
    // aria-disabled, not disabled: the button keeps focus until the next snapshot.
    if (sent) button.setAttribute("aria-disabled", "true");
  });
  return button;
}

function unmount() {}

// A question the app asked (its close confirmation) changed: whatever was clicked has had its
// answer, though the app's view stayed the same. The buttons work again.
function release(dash) {
  for (const button of dash.actions.children) button.removeAttribute("aria-disabled");
}

export const taskDashboard = {
  mount,
  update,
  unmount,
  release,
  focus: (dash) => dash.heading.focus(),
};
