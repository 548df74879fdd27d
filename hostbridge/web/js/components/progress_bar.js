// The labelled progress bar of the Task Dashboard and the card: "Progress", the percentage as
// text (hidden from assistive technology: the bar itself tells it) and a <progress> of 0..100.
// `prefix` names its parts: the container's class, the label's id (`${prefix}-label`), the
// bar's test id (`${prefix}`) and the percentage's (`${prefix}-value`).

import { el } from "../core/util.js";

export function progressBar(prefix) {
  const node = el("div", prefix);
  const labels = el("div", "task-progress-labels");
  const label = el("span", "task-progress-label", "", "Progress");
  label.id = `${prefix}-label`;
  const percent = el("span", "task-progress-value", `${prefix}-value`);
  percent.setAttribute("aria-hidden", "true");
  labels.append(label, percent);
  const bar = el("progress", "task-progress-bar", prefix);
  bar.setAttribute("max", "100");
  bar.setAttribute("aria-labelledby", label.id);
  node.append(labels, bar);
  return {
    node,
    // `value`: a whole percentage, 0..100; `shown` false leaves `data-progress` empty.
    set(value, shown = true) {
      bar.setAttribute("value", String(value));
      bar.setAttribute("data-progress", shown ? String(value) : "");
      percent.textContent = `${value}%`;
    },
  };
}
