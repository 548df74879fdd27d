// What a code means to the person at the Shell (issue 28, "user-facing words"): one table, code
// → one sentence in the user's terms, for every code the Shell can show.
//
// Theory of operation: a refusal, a failed install or a capability's result reaches the Shell
// as a stable code (`lineup.facts.errors.ErrorCode`, plus the few words the runtime ends a call
// or a question with: `app_closed`, `expired`, and the capability statuses). A component never
// shows the code as its message: it shows `sentenceFor(code)`, and keeps the code for the
// curious in a details line (`detailsLine(code)`), small and after the sentence. A code this
// table does not know (a newer runtime's) reads as the general sentence, never as the bare code.
// tests/browser/test_words_render.py lists ErrorCode and fails on a code with no sentence here.

import { el } from "./util.js";

// Said of whatever the user (or the Agent, or an app) tried: no "you did it wrong" unless the
// user did, and never a name of a process, a channel or a schema.
export const SENTENCES = Object.freeze({
  // --- the runtime underneath: nobody's misuse, trying again may help
  actor_restarted: "A part of LineUp restarted while this was on its way. Try again.",
  actor_unavailable: "A part of LineUp that this needs is not running.",
  runtime_unreachable: "LineUp cannot be reached right now. Try again once it is back.",
  acl_denied: "That is not allowed here.",
  deadline_exceeded: "LineUp did not answer in time. Try again.",
  frame_too_large: "That is too large to send.",
  frame_malformed: "LineUp could not read that request.",
  unknown_message_type: "LineUp does not know that request.",
  no_handler: "LineUp does not know that request.",
  mailbox_full: "LineUp is busy right now. Try again in a moment.",
  rate_limited: "That was asked too often. Wait a moment, then try again.",
  quota_exceeded: "This app has reached its limit (too many open, or no room left).",
  internal_error: "Something went wrong inside LineUp.",
  store_unavailable: "LineUp could not save or read its data.",
  shutting_down: "LineUp is stopping.",
  supervisor_escalated: "A part of LineUp kept failing, so LineUp stopped.",
  // --- what the Agent sent
  envelope_malformed: "A message could not be read.",
  envelope_too_large: "That is too long.",
  envelope_too_deep: "That message is nested too deeply to read.",
  unsupported_version: "The Agent speaks a version this LineUp does not understand.",
  envelope_type_unknown: "The Agent sent something this LineUp does not take.",
  scope_missing: "The Agent did not say which app its message was for.",
  conversation_mismatch: "The Agent's message was meant for another conversation.",
  sender_mismatch: "That message did not come from this conversation's Agent.",
  message_id_conflict: "A message arrived twice with different content.",
  // --- the link to the Agent's server
  not_connected: "LineUp is not connected to the Agent's server yet.",
  appserver_unreachable: "The Agent's server cannot be reached.",
  appserver_timeout: "The Agent's server stopped answering.",
  appserver_unavailable: "The Agent's server reports an error.",
  appserver_unauthorized: "The Agent's server refused this account.",
  appserver_protocol_error: "Something that is not the Agent's server answered.",
  // --- tools the Agent calls
  inventory_revision_mismatch: "The apps changed just before the Agent asked. It can ask again.",
  tool_not_advertised: "No app on this LineUp offers that tool.",
  tool_input_invalid: "The input does not fit what the tool expects.",
  tool_output_invalid: "The app's answer was not in the form it promised.",
  mcp_tool_error: "The MCP server's tool reported an error.",
  mcp_server_exited: "The MCP server stopped before it answered.",
  mcp_sampling_unsupported: "The MCP server asked for a model, and LineUp has none.",
  mcp_network_undeclared: "The MCP server tried a host it did not declare.",
  mcp_network_refused: "LineUp did not connect the MCP server to that host.",
  mcp_elicitation_unsupported: "The MCP server asked a question LineUp cannot show.",
  mcp_elicitation_url_unsupported: "The MCP server asked to send you to a web page.",
  app_disabled: "That app is turned off. Turn it on in the App Registry.",
  app_exited: "The app stopped unexpectedly.",
  app_instance_not_found: "That app is no longer open.",
  app_scope_mismatch: "That belongs to another app.",
  lifecycle_denied: "The app cannot do that now (or too many of it are open).",
  capability_denied: "The app did not declare that it needs this, so it may not ask.",
  call_already_final: "That request had already ended.",
  cancelled_by_user: "You cancelled it.",
  permission_denied: "That was not allowed.",
  app_not_installed: "That app is not installed.",
  app_version_mismatch: "This version, or a newer one, is installed already.",
  tool_not_visible: "That app cannot run right now.",
  invalid_arguments: "That request was not complete or not valid.",
  stale_revision: "Something changed meanwhile. Try again.",
  foreground_required: "The app must be in front for that.",
  activation_failed: "The app did not start.",
  activation_cancelled: "The app was closed before it was ready.",
  operation_expired: "Nobody answered in time.",
  handler_failed: "The app failed while doing it.",
  // --- questions and app sessions
  interaction_not_found: "That question is no longer there.",
  interaction_final: "That question has been answered or closed already.",
  answer_invalid: "That answer does not fit the question.",
  interaction_dismissed: "The Agent withdrew the question.",
  app_session_invalid: "That app session is not this conversation's.",
  // --- an app's own window (its Surface) and its files
  surface_unavailable: "This app has no window to show.",
  surface_not_found: "That app window is closed.",
  entrypoint_not_found: "That app has no such way in.",
  bridge_source_invalid: "A message came from outside the app's window and was ignored.",
  bridge_not_initialized: "The app's window was not ready yet.",
  bridge_method_unknown: "The app's window asked for something LineUp does not offer.",
  bridge_params_invalid: "The app's window sent a request that is not valid.",
  bridge_message_too_large: "The app's window sent too much at once.",
  bridge_rate_limited: "The app's window sent too many requests at once.",
  surface_focus_taken: "The app's window took the keyboard, so LineUp took it back.",
  proposal_too_long: "The app suggested a message too long to put in your message box.",
  link_declined: "You chose not to open that link.",
  resource_not_found: "The app's window asked for a file of its app that is not there.",
  resource_too_large: "The app's window asked for a file too large to hand it.",
  model_context_too_large: "The app tried to tell the Agent too much at once.",
  artifact_not_found: "That file is gone, or belongs to another app.",
  artifact_invalid: "That file's type or name is not allowed.",
  artifact_too_large: "That file is too large.",
  // --- what an app asked of this computer (capabilities)
  policy_denied: "Your settings do not allow this.",
  unsupported_on_host: "This computer cannot do that (or it is switched off).",
  provider_failed: "This computer tried and failed.",
  prompt_not_found: "That request is no longer waiting.",
  // --- installing apps
  bundle_malformed: "That file is not an app LineUp can install.",
  signature_invalid: "The app's signature does not check out, so it was not installed.",
  unknown_key: "The app is signed by a publisher this LineUp does not trust.",
  size_mismatch: "The app's file is not the one its publisher signed.",
  digest_mismatch: "The app's content is not the one its publisher signed.",
  host_version_unsupported: "The app needs a newer LineUp.",
  revoked: "That version of the app has been withdrawn by its publisher.",
  url_not_allowed: "Apps can only be installed from a secure (https) address.",
  download_failed: "The app could not be downloaded completely.",
  no_predecessor: "There is no earlier version to go back to.",
  app_protected: "This app is part of LineUp and cannot be changed that way.",
  app_unavailable: "The app's installed files are damaged or withdrawn.",
  catalog_entry_not_found: "That app is no longer in the catalog.",
  // --- how a call or a question ended, and a capability's result, besides the codes above
  app_closed: "The app was closed.",
  expired: "Nobody answered in time.",
  failed: "It did not work.",
  cancelled: "It was cancelled.",
});

export const GENERAL_SENTENCE = "That could not be done.";

const CODE = /^[a-z][a-z0-9_]{0,63}$/;

// The sentence for `code`: its own, or the general one (never the code itself).
export function sentenceFor(code) {
  return typeof code === "string" && Object.hasOwn(SENTENCES, code)
    ? SENTENCES[code]
    : GENERAL_SENTENCE;
}

// `lead` ("That app could not be opened.") and why, as one text: "<lead> <sentence>"; a code
// with no sentence of its own (an app's) adds nothing to the lead: its details line says it.
export function explained(lead, code) {
  const known = typeof code === "string" && Object.hasOwn(SENTENCES, code);
  if (!lead) return sentenceFor(code);
  return known && SENTENCES[code] !== lead ? `${lead} ${SENTENCES[code]}` : lead;
}

// The code for the curious: a small line "Details: <code>" (nothing for a missing or odd code;
// `extra` is the place it names, e.g. a field of the input).
export function detailsLine(code, extra = "") {
  if (typeof code !== "string" || !CODE.test(code)) return null;
  const line = el("small", "code-details", "code-details", "Details: ");
  line.append(el("code", "", "", code));
  if (extra) line.append(` ${extra}`);
  return line;
}
