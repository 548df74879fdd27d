// The interaction overlay: a question of the foreground app's sub-session, shown above that
// app while it is in front and the question is open (contract §4). Escape (or "Later") folds
// it to a one-line bar that unfolds again; switching to another app folds it for good (the
// group in the IM then says "waiting for your answer"), and it comes back when the app does.
// It never takes focus by itself: it comes first in the tab order of the stage. While it is
// shown unfolded, `render` says so (true): the Shell then keeps the app's Surface from taking
// the keyboard away from it (main.js).

import { byTestId, el, replaceKeeping } from "../core/util.js";
import { CardCache } from "./interaction_card.js";

export function createOverlay(ctx) {
  const root = byTestId("interaction-overlay");
  const bar = el("div", "overlay-bar", "overlay-bar");
  const barText = el("span", "overlay-bar-text", "", "");
  const show = el("button", "overlay-show", "overlay-show", "Show");
  show.type = "button";
  bar.append(barText, show);
  const panel = el("div", "overlay-panel", "overlay-panel");
  const heading = el("h2", "overlay-heading", "", "The Agent asks");
  heading.id = "overlay-heading";
  const later = el("button", "overlay-later", "overlay-later", "Later");
  later.type = "button";
  later.setAttribute("aria-label", "Fold this question (Escape)");
  const head = el("div", "overlay-head");
  head.append(heading, later);
  const cards = el("div", "overlay-cards");
  panel.append(head, cards);
  root.append(bar, panel);
  root.setAttribute("aria-labelledby", "overlay-heading");
  const cache = new CardCache("overlay", { headingLevel: 3 });
  let folded = false;
  let shownFor = null; // the instance the overlay was last shown above

  const fold = (value) => {
    folded = value;
    ctx.rerender();
  };
  later.addEventListener("click", () => {
    fold(true);
    show.focus();
  });
  show.addEventListener("click", () => {
    fold(false);
    (cards.querySelector("input, textarea, button") ?? panel).focus();
  });
  root.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" || folded) return;
    event.preventDefault();
    fold(true);
    show.focus();
  });

  // `views`: the open questions of the foreground instance's sub-session (or none).
  function render(state, instanceId, views, now) {
    if (instanceId !== shownFor) folded = false; // another app, or back: shown unfolded
    shownFor = views.length ? instanceId : null;
    root.hidden = views.length === 0;
    root.setAttribute("data-folded", String(folded));
    bar.hidden = !folded;
    panel.hidden = folded;
    barText.textContent =
      views.length === 1 ? "A question from the Agent is waiting. " : `${views.length} questions from the Agent are waiting. `;
    const elements = views.map((v) => cache.element(v, state, ctx, now));
    cache.keep(new Set(views.map((v) => v.interaction_id)));
    replaceKeeping(cards, elements);
    return views.length > 0 && !folded;
  }

  return { render };
}
