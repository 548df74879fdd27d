// An MCP App's requests that the Shell serves itself, for one Surface's bridge (core/bridge.js,
// which has checked the message, its rate, size, handshake and params' shape already):
// `ui/message`, `ui/open-link`, `ui/request-display-mode`, `notifications/message` (issue 30).
// What the user sees and decides is the components': the proposal above the chat's message box
// (components/proposal.js, `ctx.propose`) and the link prompt (components/link_prompt.js,
// `ctx.openLink`). Every refusal goes back to the bridge (`refuse`: answered, counted and
// reported by its code); a user's no is answered and reported by its code, never counted against
// the app. Neither the text nor the URL is ever reported.

import { CONTEXT_METHOD, DISPLAY_MODES } from "./host_context.js";

// An MCP App's `ui/message`: a proposal in the chat's composer, bounded in length and rate.
export const MAX_PROPOSAL_CHARS = 4000;
const PROPOSALS_PER_MINUTE = 3;
const MINUTE_MS = 60000;
const MAX_URL_CHARS = 2048; // a `ui/open-link` URL
// When each instance's last proposals were shown (ms): the rate is the app instance's, so a
// Surface mounted anew (its app brought back to the front) does not start it over.
const proposedAt = new Map();
const MAX_PROPOSERS = 256;
// An app's log lines (`notifications/message`): lineup.facts.view_log MAX_VIEW_LOG_CHARS, and
// at most this many a second per Surface (the hostbridge bounds them again per instance).
const MAX_LOG_CHARS = 2000;
const LOGS_PER_S = 5;
const LOG_BURST = 20;

export function createMcpRequests(options) {
  const { ctx, instanceId, bridge, codes, answer, fail, refuse, invalid, report, post } = options;

  // The runtime never lets an app speak as the user: its message becomes a proposal in the
  // chat's composer, named by the app, that only the user sends.
  function propose(id, params) {
    const text = params.content.map((block) => block.text).join("\n\n");
    if (!text.trim()) return invalid(id);
    if (text.length > MAX_PROPOSAL_CHARS) return refuse(id, codes.proposalTooLong);
    const now = Date.now();
    const recent = (proposedAt.get(instanceId) ?? []).filter((at) => now - at < MINUTE_MS);
    if (recent.length >= PROPOSALS_PER_MINUTE) return refuse(id, codes.rateLimited);
    const refused = ctx.propose(instanceId, text);
    if (refused !== null) return refuse(id, refused);
    proposedAt.delete(instanceId);
    proposedAt.set(instanceId, [...recent, now]);
    while (proposedAt.size > MAX_PROPOSERS) proposedAt.delete(proposedAt.keys().next().value);
    answer(id, {});
  }

  // Only an http(s) URL, shown whole in the runtime's own prompt; opened in a new tab with
  // `noopener` only once the user says so. One at a time per Surface. The user's no is a
  // result, `{isError: true}` (ext-apps' `McpUiOpenLinkResult`, which the `App` class hands its
  // page as such: a page that reads `isError` goes on), reported by its code; a URL that is not
  // one is an error.
  function openLink(id, params) {
    let url = null;
    try {
      url = params.url.length <= MAX_URL_CHARS ? new URL(params.url) : null;
    } catch {
      url = null;
    }
    if (url === null || (url.protocol !== "https:" && url.protocol !== "http:")) {
      return refuse(id, codes.invalidArguments);
    }
    if (bridge.linkAsked) return refuse(id, codes.rateLimited);
    bridge.linkAsked = true;
    ctx.openLink(instanceId, url.href).then((opened) => {
      bridge.linkAsked = false;
      if (opened) return answer(id, {});
      report(codes.linkDeclined);
      answer(id, { isError: true });
    });
  }

  // Inline, or fullscreen (the Surface takes the whole stage); answered with the mode in force.
  function displayMode(id, params) {
    if (DISPLAY_MODES.includes(params.mode) && params.mode !== bridge.displayMode) {
      bridge.displayMode = params.mode;
      options.onDisplayMode?.(params.mode);
      post({ jsonrpc: "2.0", method: CONTEXT_METHOD, params: { displayMode: params.mode } });
    }
    answer(id, { mode: bridge.displayMode });
  }

  // The app's log: its `data` as text (JSON unless a string), cut, to the runtime, which writes
  // it to the app's own log (`lineup logs`); never shown, never audited. Offline, dropped.
  let logTokens = LOG_BURST;
  let logAt = performance.now();
  function log(params) {
    const now = performance.now();
    logTokens = Math.min(LOG_BURST, logTokens + ((now - logAt) / 1000) * LOGS_PER_S);
    logAt = now;
    if (logTokens < 1) return refuse(undefined, codes.rateLimited);
    logTokens -= 1;
    let text;
    try {
      text = typeof params.data === "string" ? params.data : JSON.stringify(params.data);
    } catch {
      return invalid(undefined);
    }
    if (typeof text !== "string") return invalid(undefined);
    if (typeof params.logger === "string") text = `${params.logger}: ${text}`;
    ctx.send({
      type: "surface.log",
      instance_id: instanceId,
      level: params.level,
      text: text.slice(0, MAX_LOG_CHARS),
    });
  }

  return { propose, openLink, displayMode, log };
}
