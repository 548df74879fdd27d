// The composer's proposal (issue 30): what an MCP App asked to say (`ui/message`,
// core/bridge.js). The runtime never lets an app speak as the user, so the text waits just above
// the chat's message box, named by the app that proposed it, until the user decides, by
// keyboard or pointer: "Send it" sends it as the user's own message (the composer's
// `composer.submit`, as if typed), "Edit" moves it into the message box (after the draft already
// there, never over it), "Discard" (or Escape) drops it. Nothing reaches the Agent unless the
// user sends it. One proposal at a time: a newer one takes the place of the one shown. Its text
// is text only (textContent); while the chat is behind an app, a notice says one waits.

import { byTestId, el } from "../core/util.js";

const MAX_TITLE = 200;

export function createProposal(ctx, notices) {
  const composer = byTestId("composer");
  const input = byTestId("composer-input");
  const box = el("section", "proposal", "proposal");
  box.hidden = true;
  const heading = el("p", "proposal-from", "proposal-from");
  heading.id = "proposal-from";
  box.setAttribute("aria-labelledby", heading.id);
  const text = el("p", "proposal-text", "proposal-text");
  const send = button("Send it", "proposal-send");
  const edit = button("Edit", "proposal-edit");
  const discard = button("Discard", "proposal-discard");
  const actions = el("div", "proposal-actions");
  actions.append(send, edit, discard);
  box.append(heading, text, actions);
  composer.before(box);
  let shown = null; // {instanceId, title, text}

  function button(label, testId) {
    const b = el("button", `proposal-button ${testId}`, testId, label);
    b.type = "button";
    return b;
  }

  function clear() {
    shown = null;
    box.hidden = true;
    text.textContent = "";
    input.focus();
  }

  send.addEventListener("click", () => {
    // Only as the composer itself would send: not while the chat turned its composer off.
    if (shown === null || ctx.state.chatInstance === null || input.disabled) return;
    const sent = ctx.send({
      type: "ui.event",
      app_scope: "chat",
      instance_id: ctx.state.chatInstance,
      event: { kind: "composer.submit", text: shown.text, client_id: crypto.randomUUID() },
    });
    if (sent) clear();
  });
  edit.addEventListener("click", () => {
    if (shown === null) return;
    const draft = input.value;
    input.value = draft.trim() ? `${draft}\n\n${shown.text}` : shown.text;
    clear();
    input.setSelectionRange(input.value.length, input.value.length);
  });
  discard.addEventListener("click", clear);
  box.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    event.preventDefault();
    clear();
  });

  // Shows `proposed` from the instance `instanceId`: null once shown, or the refusal's code.
  function offer(instanceId, proposed) {
    const instance = ctx.state.instances.find((i) => i.instance_id === instanceId);
    if (instance === undefined || ctx.state.chatInstance === null) return "runtime_unreachable";
    const title = String(ctx.title(instance)).slice(0, MAX_TITLE);
    shown = { instanceId, title, text: proposed };
    heading.textContent = `${title} proposes this message. Send it, edit it or discard it:`;
    text.textContent = proposed;
    box.hidden = false;
    box.setAttribute("data-instance-id", instanceId);
    if (ctx.state.foreground !== ctx.state.chatInstance) {
      notices.add("info", `${title} proposes a message: it waits above the conversation's message box.`, {
        testId: "proposal-notice",
      });
    }
    return null;
  }

  return { offer };
}
