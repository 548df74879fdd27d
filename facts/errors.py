"""The error codes: one stable code for every refusal anywhere in LineUp, and who is at fault.

Every refusal carries one `ErrorCode` (DESIGN §5): the router, the SDK, the bus, the Shell's
replies and the tests all share this one enum. Callers branch on the code, never on message text.
No I/O: this module imports no trio, no socket and no database, so any process reads it.

Who is at fault
---------------
Each code names, in `FAULT` (the one table, one row per code), which party the refusal is
about: whose doing it is, and so who must act for it not to happen again. A `Fault` is one of:

`caller`
    Whoever sent the request that is refused (a MiniApp, a Surface, the Shell, a CLI command,
    another actor, the Agent's envelope as the wire checks it) misused the API: the request is
    malformed, over a bound, not allowed to it, names what is not there (or not its), or comes
    too often. Changing the request is the fix.
`agent`
    The Agent: what it sent through the AppServer (an envelope of the router's filter chain, a
    tool call against the inventory, a sub-session) is not valid for it; or it withdrew what it
    asked. Codes only the Agent's messages earn.
`app`
    A MiniApp failed at its part: its handler failed, its output broke the tool's contract, its
    process ended or never came up, or its bundle (its publisher's) does not verify or is revoked.
`user`
    The person (or their policy) decided: said no, cancelled, closed it first, or did not answer
    in time.
`network`
    The AppServer or the network: the link is down or was never up, an answer is late, wrong or
    refused, a download did not arrive whole.
`runtime`
    The runtime itself, broken underneath and nobody's misuse: a peer restarting or gone, a
    deadline, a full mailbox, the store, a host provider, shutdown, a bug. Retrying may help.

A code keeps its fault wherever it is raised: a code one party earns in one place and another
elsewhere says the party of what it means (`envelope_too_large` is `caller`: the Agent's
envelope on the inbound chain, an app's view in focus). `tests/facts/test_errors.py` fails on a
code with no fault, and on a docs table (docs/architecture.md, "Error codes") that differs.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Final, Literal, get_args

__all__ = ["FAULT", "FAULTS", "ErrorCode", "Fault"]

Fault = Literal["caller", "agent", "app", "user", "network", "runtime"]
FAULTS: Final[tuple[Fault, ...]] = get_args(Fault)


class ErrorCode(StrEnum):
    # --- the bus and the kernel -------------------------------------------------------------
    ACTOR_RESTARTED = "actor_restarted"  # the peer died with the request in flight; retry
    ACTOR_UNAVAILABLE = "actor_unavailable"  # the peer is not running and will not come back
    ACL_DENIED = "acl_denied"  # no channel, or this message type is not allowed on it
    DEADLINE_EXCEEDED = "deadline_exceeded"
    FRAME_TOO_LARGE = "frame_too_large"
    FRAME_MALFORMED = "frame_malformed"  # not JSON, not a frame, or a body that fails its model
    UNKNOWN_MESSAGE_TYPE = "unknown_message_type"
    NO_HANDLER = "no_handler"  # a known type this actor does not serve
    MAILBOX_FULL = "mailbox_full"
    RATE_LIMITED = "rate_limited"
    QUOTA_EXCEEDED = "quota_exceeded"  # a per-app bound (instances it opened, …) is reached
    INTERNAL_ERROR = "internal_error"
    STORE_UNAVAILABLE = "store_unavailable"
    SHUTTING_DOWN = "shutting_down"
    SUPERVISOR_ESCALATED = "supervisor_escalated"  # a child broke the restart intensity
    # --- inbound envelopes (the router's filter chain, seed 004 §5.3) ----------------------
    ENVELOPE_MALFORMED = "envelope_malformed"
    ENVELOPE_TOO_LARGE = "envelope_too_large"  # bytes, or a string, array or object too long
    ENVELOPE_TOO_DEEP = "envelope_too_deep"  # nested deeper than the wire allows
    UNSUPPORTED_VERSION = "unsupported_version"
    ENVELOPE_TYPE_UNKNOWN = "envelope_type_unknown"
    SCOPE_MISSING = "scope_missing"
    CONVERSATION_MISMATCH = "conversation_mismatch"
    SENDER_MISMATCH = "sender_mismatch"
    # An id already names another message: one of the other direction, one in the runtime's own
    # namespace, or an inbound one with other content. Refused, never a crash (issue 11).
    MESSAGE_ID_CONFLICT = "message_id_conflict"
    NOT_CONNECTED = "not_connected"  # no AppServer session yet (never logged in)
    # --- the AppServer link: why the runtime is reconnecting / offline_degraded ------------
    APPSERVER_UNREACHABLE = "appserver_unreachable"  # no answer: refused, reset, DNS
    APPSERVER_TIMEOUT = "appserver_timeout"  # no (whole) answer in time: frozen, dripping
    APPSERVER_UNAVAILABLE = "appserver_unavailable"  # it answered 5xx
    APPSERVER_UNAUTHORIZED = "appserver_unauthorized"  # login refused, or the token rejected
    APPSERVER_PROTOCOL_ERROR = "appserver_protocol_error"  # HTML, garbage, wrong shape, redirect
    # --- seed 003 §4.4: tool routing --------------------------------------------------------
    INVENTORY_REVISION_MISMATCH = "inventory_revision_mismatch"
    TOOL_NOT_ADVERTISED = "tool_not_advertised"
    TOOL_INPUT_INVALID = "tool_input_invalid"
    TOOL_OUTPUT_INVALID = "tool_output_invalid"
    MCP_TOOL_ERROR = "mcp_tool_error"  # an MCP server's tool answered `isError`
    MCP_SERVER_EXITED = "mcp_server_exited"  # an MCP app's server ended with calls open
    MCP_SAMPLING_UNSUPPORTED = "mcp_sampling_unsupported"  # asked of LineUp by an MCP server
    MCP_NETWORK_UNDECLARED = "mcp_network_undeclared"  # a host its manifest does not declare
    MCP_NETWORK_REFUSED = "mcp_network_refused"  # not a public address, unreachable, too many
    MCP_ELICITATION_UNSUPPORTED = "mcp_elicitation_unsupported"  # a form no card can ask
    MCP_ELICITATION_URL_UNSUPPORTED = "mcp_elicitation_url_unsupported"  # URL mode: not offered
    APP_DISABLED = "app_disabled"
    APP_EXITED = "app_exited"  # a MiniApp's process ended by itself; its instances failed
    APP_INSTANCE_NOT_FOUND = "app_instance_not_found"
    APP_SCOPE_MISMATCH = "app_scope_mismatch"
    LIFECYCLE_DENIED = "lifecycle_denied"
    CAPABILITY_DENIED = "capability_denied"
    CALL_ALREADY_FINAL = "call_already_final"
    # --- seed 004 §7.3: tool calls and activation -------------------------------------------
    CANCELLED_BY_USER = "cancelled_by_user"
    PERMISSION_DENIED = "permission_denied"
    APP_NOT_INSTALLED = "app_not_installed"
    APP_VERSION_MISMATCH = "app_version_mismatch"
    TOOL_NOT_VISIBLE = "tool_not_visible"
    INVALID_ARGUMENTS = "invalid_arguments"
    STALE_REVISION = "stale_revision"  # a write based on a revision that is no longer current
    FOREGROUND_REQUIRED = "foreground_required"
    ACTIVATION_FAILED = "activation_failed"  # the instance a held call waited for never came up
    ACTIVATION_CANCELLED = "activation_cancelled"  # ... its start was cancelled (closed first)
    OPERATION_EXPIRED = "operation_expired"
    HANDLER_FAILED = "handler_failed"
    # Standard interactions and app sub-sessions (seed 000 §7.3, seed 003 §3.4).
    INTERACTION_NOT_FOUND = "interaction_not_found"  # no such interaction, or not the caller's
    INTERACTION_FINAL = "interaction_final"  # it has its terminal state: nothing changes it
    ANSWER_INVALID = "answer_invalid"  # not an answer to that request (unknown action, bounds…)
    INTERACTION_DISMISSED = "interaction_dismissed"  # the Agent withdrew the question
    APP_SESSION_INVALID = "app_session_invalid"  # not a sub-session of this Agent and conversation
    # Surfaces, their bridge, and artifacts (seed 003 §3.5, §5.3; seed 004 §6.3).
    SURFACE_UNAVAILABLE = "surface_unavailable"  # no surface entrypoint, or an unknown version
    SURFACE_NOT_FOUND = "surface_not_found"  # no such open Surface, or not the caller's
    ENTRYPOINT_NOT_FOUND = "entrypoint_not_found"  # a launch names an entrypoint not declared
    BRIDGE_SOURCE_INVALID = "bridge_source_invalid"  # a message not from that Surface's own frame
    BRIDGE_NOT_INITIALIZED = "bridge_not_initialized"  # before the `ui/initialize` handshake
    BRIDGE_METHOD_UNKNOWN = "bridge_method_unknown"  # not a declared bridge method or app event
    BRIDGE_PARAMS_INVALID = "bridge_params_invalid"  # params or envelope fail their schema
    BRIDGE_MESSAGE_TOO_LARGE = "bridge_message_too_large"  # over the bridge's size cap
    BRIDGE_RATE_LIMITED = "bridge_rate_limited"  # a Surface sending faster than the bridge takes
    SURFACE_FOCUS_TAKEN = "surface_focus_taken"  # took the keyboard from the runtime's own UI
    RUNTIME_UNREACHABLE = "runtime_unreachable"  # the Shell has no link to the runtime now
    PROPOSAL_TOO_LONG = "proposal_too_long"  # an MCP App's `ui/message` over the composer's bound
    LINK_DECLINED = "link_declined"  # the user did not open the link an MCP App asked to open
    RESOURCE_NOT_FOUND = "resource_not_found"  # no such resource of the Surface's own app
    RESOURCE_TOO_LARGE = "resource_too_large"  # a resource over what a Surface may read
    MODEL_CONTEXT_TOO_LARGE = "model_context_too_large"  # an MCP App's context over its bound
    ARTIFACT_NOT_FOUND = "artifact_not_found"  # no such artifact, or not the caller's
    ARTIFACT_INVALID = "artifact_invalid"  # a media type not allowed, a bad name, bad bytes
    ARTIFACT_TOO_LARGE = "artifact_too_large"  # one artifact over MAX_ARTIFACT_BYTES
    # The capability gateway (seed 004 §6.3): a request's result is one of the statuses of
    # `lineup.sdk.capabilities.CapabilityStatus`; these are the codes those results carry.
    POLICY_DENIED = "policy_denied"  # the host's or the user's policy says deny
    UNSUPPORTED_ON_HOST = "unsupported_on_host"  # no provider for it here (or switched off)
    PROVIDER_FAILED = "provider_failed"  # the host provider ran and failed (controlled)
    PROMPT_NOT_FOUND = "prompt_not_found"  # no such pending permission prompt or provider run
    # App delivery (seed 000 §9, seed 004 §4.3, §8.3): why a bundle does not install, or an
    # operation on the registry is refused.
    BUNDLE_MALFORMED = "bundle_malformed"  # not a bundle, or an unsafe or oversize entry
    SIGNATURE_INVALID = "signature_invalid"  # the signed manifest's signature does not verify
    UNKNOWN_KEY = "unknown_key"  # signed by a key this runtime does not trust
    SIZE_MISMATCH = "size_mismatch"  # the payload's byte size is not the signed one
    DIGEST_MISMATCH = "digest_mismatch"  # the payload's SHA-256 is not the signed one
    HOST_VERSION_UNSUPPORTED = "host_version_unsupported"  # min_host_version above ours
    REVOKED = "revoked"  # that app version (or its key) is revoked
    URL_NOT_ALLOWED = "url_not_allowed"  # an install URL that is not HTTPS (or loopback in dev)
    DOWNLOAD_FAILED = "download_failed"  # the bundle could not be fetched whole
    NO_PREDECESSOR = "no_predecessor"  # a rollback with no verified predecessor to go back to
    APP_PROTECTED = "app_protected"  # `chat` can be neither disabled nor removed
    APP_UNAVAILABLE = "app_unavailable"  # revoked with no predecessor, or its cache is broken
    CATALOG_ENTRY_NOT_FOUND = "catalog_entry_not_found"  # no such bundle in the local catalog

    @property
    def fault(self) -> Fault:
        """Who is at fault for a refusal with this code (`FAULT`)."""
        return FAULT[self]


# Who is at fault, by code (see the module's docstring): one row per code.
FAULT: Final[Mapping[ErrorCode, Fault]] = MappingProxyType(
    {
        ErrorCode.ACTOR_RESTARTED: "runtime",
        ErrorCode.ACTOR_UNAVAILABLE: "runtime",
        ErrorCode.ACL_DENIED: "caller",
        ErrorCode.DEADLINE_EXCEEDED: "runtime",
        ErrorCode.FRAME_TOO_LARGE: "caller",
        ErrorCode.FRAME_MALFORMED: "caller",
        ErrorCode.UNKNOWN_MESSAGE_TYPE: "caller",
        ErrorCode.NO_HANDLER: "caller",
        ErrorCode.MAILBOX_FULL: "runtime",
        ErrorCode.RATE_LIMITED: "caller",
        ErrorCode.QUOTA_EXCEEDED: "caller",
        ErrorCode.INTERNAL_ERROR: "runtime",
        ErrorCode.STORE_UNAVAILABLE: "runtime",
        ErrorCode.SHUTTING_DOWN: "runtime",
        ErrorCode.SUPERVISOR_ESCALATED: "runtime",
        ErrorCode.ENVELOPE_MALFORMED: "caller",
        ErrorCode.ENVELOPE_TOO_LARGE: "caller",
        ErrorCode.ENVELOPE_TOO_DEEP: "caller",
        ErrorCode.UNSUPPORTED_VERSION: "agent",
        ErrorCode.ENVELOPE_TYPE_UNKNOWN: "agent",
        ErrorCode.SCOPE_MISSING: "agent",
        ErrorCode.CONVERSATION_MISMATCH: "agent",
        ErrorCode.SENDER_MISMATCH: "agent",
        ErrorCode.MESSAGE_ID_CONFLICT: "agent",
        ErrorCode.NOT_CONNECTED: "network",
        ErrorCode.APPSERVER_UNREACHABLE: "network",
        ErrorCode.APPSERVER_TIMEOUT: "network",
        ErrorCode.APPSERVER_UNAVAILABLE: "network",
        ErrorCode.APPSERVER_UNAUTHORIZED: "network",
        ErrorCode.APPSERVER_PROTOCOL_ERROR: "network",
        ErrorCode.INVENTORY_REVISION_MISMATCH: "agent",
        ErrorCode.TOOL_NOT_ADVERTISED: "agent",
        ErrorCode.TOOL_INPUT_INVALID: "agent",
        ErrorCode.TOOL_OUTPUT_INVALID: "app",
        ErrorCode.MCP_TOOL_ERROR: "app",
        ErrorCode.MCP_SERVER_EXITED: "app",
        ErrorCode.MCP_SAMPLING_UNSUPPORTED: "app",
        ErrorCode.MCP_NETWORK_UNDECLARED: "app",
        ErrorCode.MCP_NETWORK_REFUSED: "app",
        ErrorCode.MCP_ELICITATION_UNSUPPORTED: "app",
        ErrorCode.MCP_ELICITATION_URL_UNSUPPORTED: "app",
        ErrorCode.APP_DISABLED: "caller",
        ErrorCode.APP_EXITED: "app",
        ErrorCode.APP_INSTANCE_NOT_FOUND: "caller",
        ErrorCode.APP_SCOPE_MISMATCH: "caller",
        ErrorCode.LIFECYCLE_DENIED: "caller",
        ErrorCode.CAPABILITY_DENIED: "caller",
        ErrorCode.CALL_ALREADY_FINAL: "caller",
        ErrorCode.CANCELLED_BY_USER: "user",
        ErrorCode.PERMISSION_DENIED: "caller",
        ErrorCode.APP_NOT_INSTALLED: "caller",
        ErrorCode.APP_VERSION_MISMATCH: "caller",
        ErrorCode.TOOL_NOT_VISIBLE: "agent",
        ErrorCode.INVALID_ARGUMENTS: "caller",
        ErrorCode.STALE_REVISION: "caller",
        ErrorCode.FOREGROUND_REQUIRED: "caller",
        ErrorCode.ACTIVATION_FAILED: "app",
        ErrorCode.ACTIVATION_CANCELLED: "user",
        ErrorCode.OPERATION_EXPIRED: "user",
        ErrorCode.HANDLER_FAILED: "app",
        ErrorCode.INTERACTION_NOT_FOUND: "caller",
        ErrorCode.INTERACTION_FINAL: "caller",
        ErrorCode.ANSWER_INVALID: "caller",
        ErrorCode.INTERACTION_DISMISSED: "agent",
        ErrorCode.APP_SESSION_INVALID: "agent",
        ErrorCode.SURFACE_UNAVAILABLE: "caller",
        ErrorCode.SURFACE_NOT_FOUND: "caller",
        ErrorCode.ENTRYPOINT_NOT_FOUND: "caller",
        ErrorCode.SURFACE_FOCUS_TAKEN: "app",
        ErrorCode.RUNTIME_UNREACHABLE: "runtime",
        ErrorCode.PROPOSAL_TOO_LONG: "caller",
        ErrorCode.LINK_DECLINED: "user",
        ErrorCode.RESOURCE_NOT_FOUND: "caller",
        ErrorCode.RESOURCE_TOO_LARGE: "caller",
        ErrorCode.MODEL_CONTEXT_TOO_LARGE: "caller",
        ErrorCode.BRIDGE_SOURCE_INVALID: "caller",
        ErrorCode.BRIDGE_NOT_INITIALIZED: "caller",
        ErrorCode.BRIDGE_METHOD_UNKNOWN: "caller",
        ErrorCode.BRIDGE_PARAMS_INVALID: "caller",
        ErrorCode.BRIDGE_MESSAGE_TOO_LARGE: "caller",
        ErrorCode.BRIDGE_RATE_LIMITED: "caller",
        ErrorCode.ARTIFACT_NOT_FOUND: "caller",
        ErrorCode.ARTIFACT_INVALID: "caller",
        ErrorCode.ARTIFACT_TOO_LARGE: "caller",
        ErrorCode.POLICY_DENIED: "user",
        ErrorCode.UNSUPPORTED_ON_HOST: "runtime",
        ErrorCode.PROVIDER_FAILED: "runtime",
        ErrorCode.PROMPT_NOT_FOUND: "caller",
        ErrorCode.BUNDLE_MALFORMED: "app",
        ErrorCode.SIGNATURE_INVALID: "app",
        ErrorCode.UNKNOWN_KEY: "app",
        ErrorCode.SIZE_MISMATCH: "app",
        ErrorCode.DIGEST_MISMATCH: "app",
        ErrorCode.HOST_VERSION_UNSUPPORTED: "app",
        ErrorCode.REVOKED: "app",
        ErrorCode.URL_NOT_ALLOWED: "caller",
        ErrorCode.DOWNLOAD_FAILED: "network",
        ErrorCode.NO_PREDECESSOR: "caller",
        ErrorCode.APP_PROTECTED: "caller",
        ErrorCode.APP_UNAVAILABLE: "app",
        ErrorCode.CATALOG_ENTRY_NOT_FOUND: "caller",
    }
)
