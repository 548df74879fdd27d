// A Surface's subscriptions to its app's view model and its app's Agent messages (seed 004 §6:
// the SDK's `state.subscribe` and `agent_messages.subscribe`, "the same semantics,
// restricted"), for one bridge (core/bridge.js).
//
// Theory of operation: `lineup/state/subscribe` is answered `{view, seq}`; from then on each
// newer view the runtime pushes (`shell.surface.notify`, kind `app_state`, its `seq` only going
// up) is told as `lineup/notifications/app-state` {view, seq}, an older or equal seq dropped.
// `lineup/agent-messages/subscribe` {conversation_id?, types?, include_pending?} is answered
// `{pending: n}` and then, with `include_pending`, hands what waited; every message the runtime
// pushes after (kind `agent_messages`) that matches the filter (the chain's SDK step) is told
// as `lineup/notifications/agent-message` {message}, each `message_id` once however often it
// comes (rule 2); a display message (`requires_ack` false) is acknowledged by the bridge once
// handed (rule 3; those handed together in one request), any other waits for the Surface's `lineup/agent-messages/acknowledge`. A
// new `ui/initialize` ends both; a link back renews both (the runtime forgot nothing it holds,
// but what it pushed meanwhile went to the socket that is gone).

import { isObject } from "./util.js";

const MAX_SEEN = 4096; // message ids a subscription remembers having handed
const MAX_ACK = 500; // ids in one acknowledgement (lineup.sdk.protocol MAX_BATCH)

export function createSubscriptions({ post, relay }) {
  let state = null; // {seq}: subscribed to the view model
  let messages = null; // {conversation_id, types, seen}: subscribed to the Agent's messages

  const notify = (method, params) => post({ jsonrpc: "2.0", method, params });

  function tellView(view, seq) {
    if (state === null || !Number.isSafeInteger(seq) || seq <= state.seq || !isObject(view)) return;
    state.seq = seq;
    notify("lineup/notifications/app-state", { view, seq });
  }

  function hand(list) {
    if (messages === null || !Array.isArray(list)) return;
    const handed = []; // display messages, acknowledged together: one request per burst
    for (const m of list) {
      if (!isObject(m) || typeof m.message_id !== "string" || messages.seen.has(m.message_id)) continue;
      if (messages.conversation_id !== null && m.conversation_id !== messages.conversation_id) continue;
      if (messages.types !== null && !messages.types.includes(m.type)) continue;
      messages.seen.add(m.message_id);
      if (messages.seen.size > MAX_SEEN) messages.seen.delete(messages.seen.values().next().value);
      notify("lineup/notifications/agent-message", { message: m });
      if (m.requires_ack === false) handed.push(m.message_id);
    }
    for (let at = 0; at < handed.length; at += MAX_ACK) {
      relay("lineup/agent-messages/acknowledge", null, { message_ids: handed.slice(at, at + MAX_ACK) });
    }
  }

  return {
    // A relayed request answered (`id` null: the bridge's own renewal): `[result, after]`,
    // the result the Surface is answered with and what to do once it is (or null).
    settled(name, id, params, result) {
      if (name === "lineup/state/subscribe") {
        const seq = Number.isSafeInteger(result.seq) ? result.seq : -1;
        if (id !== null) state = { seq };
        else if (state !== null) tellView(result.view, seq);
        return [result, null];
      }
      if (name === "lineup/agent-messages/subscribe") {
        if (id !== null) {
          messages = {
            conversation_id: typeof params.conversation_id === "string" ? params.conversation_id : null,
            types: Array.isArray(params.types) ? params.types : null,
            seen: messages === null ? new Set() : messages.seen,
          };
        }
        const pending = Array.isArray(result.messages) ? result.messages : [];
        return [{ pending: pending.length }, () => hand(pending)];
      }
      return [result, null];
    },
    // The runtime's news for this Surface (`shell.surface.notify`).
    notify(kind, params) {
      if (kind === "app_state") tellView(params.view, params.seq);
      else if (kind === "agent_messages") hand(params.messages);
    },
    // Back online: renewed, for what was pushed to the socket that is gone.
    renew() {
      if (state !== null) relay("lineup/state/subscribe", null, {});
      if (messages !== null) {
        const params = { include_pending: true };
        if (messages.conversation_id !== null) params.conversation_id = messages.conversation_id;
        if (messages.types !== null) params.types = messages.types;
        relay("lineup/agent-messages/subscribe", null, params);
      }
    },
    reset() {
      state = null;
      messages = null;
    },
  };
}
