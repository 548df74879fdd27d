"""What the demo Agent says of a code: a sentence in the user's terms, the code in a details line.

Theory of operation: a tool call, a question or a round the Agent asked can end with a stable
code (`lineup.facts.errors.ErrorCode`, or `app_closed` / `expired`, or an app's own code). The
Agent never writes the code as its message (issue 28, "user-facing words"): it writes what
happened (`explained(lead, code)`: the lead, then the code's sentence) and then a details line
with the code for the curious. The sentences are the Shell's
(`hostbridge/web/js/core/words.js`, the one table the Shell reads); this is the part of it a call
the Agent makes can end with, and `tests/ops/agent/test_words.py` fails on a sentence here that
differs from the Shell's. A code not here (an app's own) adds nothing to the lead but its details
line. No I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from ._questions import code_span

__all__ = ["GENERAL_SENTENCE", "SENTENCES", "details_line", "explained", "sentence_for"]

GENERAL_SENTENCE: Final = "That could not be done."

SENTENCES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "actor_restarted": "A part of LineUp restarted while this was on its way. Try again.",
        "actor_unavailable": "A part of LineUp that this needs is not running.",
        "deadline_exceeded": "LineUp did not answer in time. Try again.",
        "rate_limited": "That was asked too often. Wait a moment, then try again.",
        "quota_exceeded": "This app has reached its limit (too many open, or no room left).",
        "internal_error": "Something went wrong inside LineUp.",
        "store_unavailable": "LineUp could not save or read its data.",
        "shutting_down": "LineUp is stopping.",
        "envelope_too_large": "That is too long.",
        "inventory_revision_mismatch": (
            "The apps changed just before the Agent asked. It can ask again."
        ),
        "tool_not_advertised": "No app on this LineUp offers that tool.",
        "tool_input_invalid": "The input does not fit what the tool expects.",
        "tool_output_invalid": "The app's answer was not in the form it promised.",
        "mcp_tool_error": "The MCP server's tool reported an error.",
        "mcp_server_exited": "The MCP server stopped before it answered.",
        "mcp_sampling_unsupported": "The MCP server asked for a model, and LineUp has none.",
        "mcp_network_undeclared": "The MCP server tried a host it did not declare.",
        "mcp_network_refused": "LineUp did not connect the MCP server to that host.",
        "mcp_elicitation_unsupported": "The MCP server asked a question LineUp cannot show.",
        "mcp_elicitation_url_unsupported": "The MCP server asked to send you to a web page.",
        "app_disabled": "That app is turned off. Turn it on in the App Registry.",
        "app_exited": "The app stopped unexpectedly.",
        "app_instance_not_found": "That app is no longer open.",
        "lifecycle_denied": "The app cannot do that now (or too many of it are open).",
        "call_already_final": "That request had already ended.",
        "cancelled_by_user": "You cancelled it.",
        "permission_denied": "That was not allowed.",
        "app_not_installed": "That app is not installed.",
        "tool_not_visible": "That app cannot run right now.",
        "invalid_arguments": "That request was not complete or not valid.",
        "stale_revision": "Something changed meanwhile. Try again.",
        "foreground_required": "The app must be in front for that.",
        "activation_failed": "The app did not start.",
        "activation_cancelled": "The app was closed before it was ready.",
        "operation_expired": "Nobody answered in time.",
        "handler_failed": "The app failed while doing it.",
        "answer_invalid": "That answer does not fit the question.",
        "interaction_dismissed": "The Agent withdrew the question.",
        "app_session_invalid": "That app session is not this conversation's.",
        "app_closed": "The app was closed.",
        "expired": "Nobody answered in time.",
        "failed": "It did not work.",
        "cancelled": "It was cancelled.",
    }
)


def sentence_for(code: str | None) -> str:
    """The sentence for `code`, or the general one (never the code itself)."""
    return SENTENCES.get(code or "", GENERAL_SENTENCE)


def details_line(code: str, pointer: str | None = None) -> str:
    """`*Details: `code`*`, with the input's field it names (`pointer`, "" for the whole
    input); the code and the pointer come from the runtime, shown as code (escaped if odd)."""
    line = f"Details: {code_span(code[:64] or '?')}"
    if pointer is not None:
        line += f", at {code_span(pointer[:200]) if pointer else 'the whole input'}"
    return f"*{line}*"


def explained(lead: str, code: str, pointer: str | None = None) -> str:
    """`lead` (Markdown, ending in its own punctuation), the code's sentence (none for a code
    without one: an app's own), then the details line as a paragraph of its own."""
    said = f"{lead} {SENTENCES[code]}" if code in SENTENCES else lead
    return f"{said}\n\n{details_line(code, pointer)}"
