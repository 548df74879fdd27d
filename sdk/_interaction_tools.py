"""The interaction tools the Agent calls (`interaction.notice|choice|confirm|input`, and the
legacy names in `LEGACY`): their input and output schemas, inside the schema subset
(`sdk/schema.py`), and `output_schema_of`, the exact output schema of one request's result.

The subset has no pattern, no `minItems` and no open object: the schemas state what it can,
and `lineup.sdk.interactions.request_of` checks the rest. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ._interaction_requests import (
    MAX_ACTIONS,
    MAX_EXPIRES_IN_MS,
    MAX_FIELDS,
    MAX_TEXT,
    MAX_TEXTAREA,
    MIN_EXPIRES_IN_MS,
    InputRequest,
    StandardInteractionRequest,
)
from .manifest import ToolDescriptor

__all__ = [
    "KIND_OF_TOOL",
    "LEGACY",
    "TOOLS",
    "output_schema_of",
]

KIND_OF_TOOL: Final[Mapping[str, str]] = {
    "interaction.notice": "notice",
    "interaction.choice": "choice",
    "interaction.confirm": "confirm",
    "interaction.input": "input",
}
LEGACY: Final[Mapping[str, str]] = {
    "choice": "interaction.choice",
    "confirm": "interaction.confirm",
    "input": "interaction.input",
}


def _string(low: int, high: int, description: str) -> dict[str, Any]:
    return {"type": "string", "minLength": low, "maxLength": high, "description": description}


def _object(properties: dict[str, Any], required: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
        **extra,
    }


_ID_TEXT: Final = "1 to 64 of A-Z a-z 0-9 _ . : - starting with a letter or digit; unique"
_TITLE: Final = _string(1, 200, "A short title.")
_PROMPT: Final = _string(1, 8192, "What is asked, as plain text.")
_EXPIRES: Final = {
    "type": "integer",
    "minimum": MIN_EXPIRES_IN_MS,
    "maximum": MAX_EXPIRES_IN_MS,
    "description": "How long the person has to answer, in ms (default 15 minutes).",
}
_APP_SESSION: Final = _object(
    {"app_session_id": _string(1, 200, "An app sub-session of this conversation.")},
    ["app_session_id"],
    description="Ask inside this app sub-session; without it the question is the main IM's.",
)
_BUTTON: Final = _string(1, 40, "A button's label.")
_ACTION: Final = _object(
    {
        "id": _string(1, 64, _ID_TEXT),
        "label": _string(1, 80, "What the person sees."),
        "description": {"type": "string", "maxLength": 400},
    },
    ["id", "label"],
)
_FIELD: Final = _object(
    {
        "id": _string(1, 64, _ID_TEXT),
        "label": _string(1, 80, "What the person sees."),
        "type": {"type": "string", "enum": ["text", "textarea", "number"]},
        "required": {"type": "boolean", "default": False},
        "placeholder": {"type": "string", "maxLength": 200},
        "min_length": {"type": "integer", "minimum": 0, "maximum": MAX_TEXTAREA},
        "max_length": {
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_TEXTAREA,
            "description": f"Text fields only: text at most {MAX_TEXT}, textarea {MAX_TEXTAREA}.",
        },
        "minimum": {"type": "number", "description": "Number fields only."},
        "maximum": {"type": "number", "description": "Number fields only."},
    },
    ["id", "label", "type"],
)
_INPUTS: Final[Mapping[str, dict[str, Any]]] = {
    "notice": _object(
        {"title": _TITLE, "message": _string(1, 8192, "The notice, as plain text."),
         "acknowledge_label": _BUTTON, "app_session_context": _APP_SESSION},
        ["title", "message"],
    ),
    "choice": _object(
        {"title": _TITLE, "prompt": _PROMPT,
         "mode": {"type": "string", "enum": ["single-choice", "multi-choice", "button"]},
         "actions": {"type": "array", "items": _ACTION, "maxItems": MAX_ACTIONS,
                     "description": "1 to 20 actions."},
         "expires_in_ms": _EXPIRES, "app_session_context": _APP_SESSION},
        ["title", "prompt", "mode", "actions"],
    ),
    "confirm": _object(
        {"title": _TITLE, "prompt": _PROMPT, "approve_label": _BUTTON, "cancel_label": _BUTTON,
         "expires_in_ms": _EXPIRES, "app_session_context": _APP_SESSION},
        ["title", "prompt"],
    ),
    "input": _object(
        {"title": _TITLE, "prompt": _PROMPT,
         "fields": {"type": "array", "items": _FIELD, "maxItems": MAX_FIELDS,
                    "description": "1 to 12 fields."},
         "submit_label": _BUTTON, "cancel_label": _BUTTON,
         "expires_in_ms": _EXPIRES, "app_session_context": _APP_SESSION},
        ["title", "prompt", "fields"],
    ),
}  # fmt: skip
_OUTPUTS: Final[Mapping[str, dict[str, Any]]] = {
    "notice": _object({"acknowledged": {"type": "boolean"}}, ["acknowledged"]),
    "choice": _object(
        {"action_ids": {"type": "array", "items": {"type": "string", "maxLength": 64},
                        "maxItems": MAX_ACTIONS,
                        "description": "The chosen actions' ids, in the request's order."}},
        ["action_ids"],
    ),
    "confirm": _object({"approved": {"type": "boolean"}}, ["approved"]),
    # The subset has no open object: the values' keys are the request's field ids, exactly
    # described by `output_schema_of(request)`.
    "input": _object(
        {"values": _object({}, [], description="Each answered field's value by its id.")},
        ["values"],
    ),
}  # fmt: skip
_DESCRIPTIONS: Final[Mapping[str, str]] = {
    "notice": "Show the person a notice in the chat. Answered at once: it does not wait.",
    "choice": "Ask the person to pick among actions; returns the chosen action ids.",
    "confirm": "Ask the person to approve or not; returns approved true or false.",
    "input": "Ask the person to fill a few text or number fields; returns the values by id.",
}

TOOLS: Final[tuple[ToolDescriptor, ...]] = tuple(
    ToolDescriptor(
        method=tool,
        handling="interactive",
        activation_requirement="activation_not_required",
        input_schema=_INPUTS[kind],
        output_schema=_OUTPUTS[kind],
        timeout_ms=MAX_EXPIRES_IN_MS,
        description=_DESCRIPTIONS[kind],
    )
    for tool, kind in KIND_OF_TOOL.items()
)


def output_schema_of(request: StandardInteractionRequest) -> dict[str, Any]:
    """The exact output schema (inside the subset) of `request`'s results: the tool's own for a
    notice, choice or confirm; for an input, `values` with the request's fields as properties."""
    if not isinstance(request, InputRequest):
        return _OUTPUTS[request.kind]
    properties: dict[str, Any] = {}
    for spec in request.fields:
        if spec.type == "number":
            schema: dict[str, Any] = {"type": "number"}
            if spec.minimum is not None:
                schema["minimum"] = spec.minimum
            if spec.maximum is not None:
                schema["maximum"] = spec.maximum
        else:
            low = max(spec.min_length or 0, 1 if spec.required else 0)
            high = spec.cap if spec.max_length is None else spec.max_length
            schema = {"type": "string", "minLength": low, "maxLength": high}
        properties[spec.id] = schema
    required = [spec.id for spec in request.fields if spec.required]
    return _object({"values": _object(properties, required)}, ["values"])
