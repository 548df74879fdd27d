"""The standard interactions (seed 003 §3.4): the four requests, their tools, their results. Pure.

Theory of operation
-------------------
An interaction is a question the runtime itself puts to the person: a `notice` to acknowledge,
a `choice` among actions, a `confirm` (approve or not), an `input` of a few fields. The Agent asks
by calling one of `TOOLS` (`interaction.notice|choice|confirm|input`, or a legacy name in
`LEGACY`); a MiniApp asks with the request itself (`sdk.ui.request`). Either way the request is
one of the frozen models here, every text bounded, and the whole of it at most
`MAX_REQUEST_BYTES` of JSON, so the store can always keep it.

    request_of(tool, tool_input)  -> (request, expires_in_ms | None)    or TOOL_INPUT_INVALID
    result_of(request, answer)    -> the result (the tool's output)     or ANSWER_INVALID
    is_cancel(answer)             -> whether the answer is the user's cancel

The answer is what the user's client sent; `result_of` checks it against the request (unknown
action ids, missing required fields, text lengths, number bounds) and normalises it: action ids
deduplicated and in the request's order, values in the request's field order. A result is at
most `MAX_RESULT_BYTES` of JSON.

The tools' schemas are inside the schema subset (`sdk/schema.py`), which has no pattern, no
`minItems` and no open object: they state what the subset can, and `request_of` checks the rest
(id patterns, unique ids, at least one action or field, bounds that depend on a field's type).
Likewise the static output schema of `interaction.input` cannot name the request's field ids:
`output_schema_of(request)` is the exact output schema of one request's result, for any kind.

The requests (models and limits) are `_interaction_requests`, the tools' schemas
`_interaction_tools`; this module checks tool inputs and answers against them, and gathers all
three: it is the one the router, the testkit and apps import.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from lineup.actors.kernel import ErrorCode, LineUpError

from ._interaction_requests import (
    DEFAULT_EXPIRES_IN_MS,
    MAX_ACTIONS,
    MAX_EXPIRES_IN_MS,
    MAX_FIELDS,
    MAX_REQUEST_BYTES,
    MAX_RESULT_BYTES,
    MAX_TEXT,
    MAX_TEXTAREA,
    MIN_EXPIRES_IN_MS,
    REQUEST,
    Action,
    ChoiceRequest,
    ConfirmRequest,
    InputField,
    InputRequest,
    NoticeRequest,
    StandardInteractionRequest,
)
from ._interaction_tools import KIND_OF_TOOL, LEGACY, TOOLS, output_schema_of
from .schema import InputInvalid, pointer_of

__all__ = [
    "DEFAULT_EXPIRES_IN_MS",
    "LEGACY",
    "MAX_ACTIONS",
    "MAX_EXPIRES_IN_MS",
    "MAX_FIELDS",
    "MAX_REQUEST_BYTES",
    "MAX_RESULT_BYTES",
    "MAX_TEXT",
    "MAX_TEXTAREA",
    "MIN_EXPIRES_IN_MS",
    "REQUEST",
    "TOOLS",
    "Action",
    "ChoiceRequest",
    "ConfirmRequest",
    "InputField",
    "InputRequest",
    "NoticeRequest",
    "StandardInteractionRequest",
    "app_session_of",
    "is_cancel",
    "output_schema_of",
    "request_of",
    "result_of",
]

# ------------------------------------------------------------------------------ requests


def _refuse(code: ErrorCode, why: str) -> LineUpError:
    return LineUpError(code, why)


def _bad_input(pointer: str, why: str) -> LineUpError:
    return InputInvalid(pointer, why)  # `tool_input_invalid`, naming the field


def request_of(
    tool: str, tool_input: Mapping[str, Any]
) -> tuple[StandardInteractionRequest, int | None]:
    """The request a call of `tool` (a name of `TOOLS`, or a legacy one) asks, and its
    `expires_in_ms` (the default when absent; None for a notice, which takes none). Raises
    `LineUpError(invalid_arguments)` for a tool that is not an interaction's,
    `LineUpError(tool_input_invalid)` for an input that is not such a request or an expiry
    outside `MIN_EXPIRES_IN_MS..MAX_EXPIRES_IN_MS`. Ignores `app_session_context`
    (`app_session_of`)."""
    kind = KIND_OF_TOOL.get(LEGACY.get(tool, tool))
    if kind is None:
        raise _refuse(ErrorCode.INVALID_ARGUMENTS, "not an interaction tool")
    if not isinstance(tool_input, Mapping):
        raise _bad_input("", "the input is not an object")
    fields = {
        k: v for k, v in tool_input.items() if k not in ("expires_in_ms", "app_session_context")
    }
    if "kind" in fields:
        raise _bad_input("/kind", "the tool names the kind")
    expires: int | None = None
    if kind == "notice":
        if "expires_in_ms" in tool_input:
            raise _bad_input("/expires_in_ms", "a notice takes no expiry")
    else:
        raw = tool_input.get("expires_in_ms", DEFAULT_EXPIRES_IN_MS)
        if isinstance(raw, float) and raw.is_integer():
            raw = int(raw)
        if not isinstance(raw, int) or isinstance(raw, bool):
            raise _bad_input("/expires_in_ms", "expires_in_ms is not an integer")
        if not MIN_EXPIRES_IN_MS <= raw <= MAX_EXPIRES_IN_MS:
            raise _bad_input("/expires_in_ms", "expires_in_ms is out of bounds")
        expires = raw
    app_session_of(tool_input)
    try:
        request = REQUEST.validate_python({**fields, "kind": kind})
    except ValidationError as exc:
        where = exc.errors()[0]["loc"][1:]  # the first token is the union's tag (the kind)
        raise _bad_input(pointer_of(where), "not a valid request") from exc
    return request, expires


def app_session_of(tool_input: Mapping[str, Any]) -> str | None:
    """The `app_session_context.app_session_id` a tool input names, or None. Raises
    `LineUpError(tool_input_invalid)` when the context is present but malformed."""
    context = tool_input.get("app_session_context")
    if context is None and "app_session_context" not in tool_input:
        return None
    if not isinstance(context, dict) or set(context) != {"app_session_id"}:
        raise _bad_input("/app_session_context", "app_session_context is malformed")
    value = context["app_session_id"]
    if not isinstance(value, str) or not 1 <= len(value) <= 200:
        raise _bad_input("/app_session_context/app_session_id", "app_session_context is malformed")
    return value


# ------------------------------------------------------------------------------ results


def is_cancel(answer: object) -> bool:
    """Whether `answer` is the user's cancel (`{"cancelled": true}`) rather than an answer.
    A cancel is not a result: the caller cancels the interaction instead of answering it."""
    return (
        isinstance(answer, dict) and answer == {"cancelled": True} and answer["cancelled"] is True
    )


def _invalid(why: str) -> LineUpError:
    return LineUpError(ErrorCode.ANSWER_INVALID, why)


def _only(answer: object, key: str) -> Any:
    if not isinstance(answer, dict) or set(answer) != {key}:
        raise _invalid(f"the answer must be exactly {{{key!r}: ...}}")
    return answer[key]


def _is_number(value: object) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def _choice(request: ChoiceRequest, answer: object) -> dict[str, Any]:
    ids = _only(answer, "action_ids")
    if not isinstance(ids, list | tuple) or not all(isinstance(i, str) for i in ids):
        raise _invalid("action_ids must be a list of ids")
    chosen = set(ids)
    known = [action.id for action in request.actions]
    if not chosen <= set(known):
        raise _invalid("an action id is not the request's")
    ordered = [i for i in known if i in chosen]
    if not ordered or (request.mode != "multi-choice" and len(ordered) != 1):
        raise _invalid("single-choice and button take exactly one action, multi-choice one or more")
    return {"action_ids": ordered}


def _text_ok(spec: InputField, value: object) -> bool:
    if not isinstance(value, str):
        return False
    low = max(spec.min_length or 0, 1 if spec.required else 0)
    high = spec.cap if spec.max_length is None else spec.max_length
    return low <= len(value) <= high


def _number_ok(spec: InputField, value: object) -> bool:
    if not _is_number(value):
        return False
    assert isinstance(value, int | float)
    low = -math.inf if spec.minimum is None else spec.minimum
    high = math.inf if spec.maximum is None else spec.maximum
    return low <= value <= high


def _input(request: InputRequest, answer: object) -> dict[str, Any]:
    values = _only(answer, "values")
    if not isinstance(values, dict):
        raise _invalid("values must be an object")
    specs = {spec.id: spec for spec in request.fields}
    if not set(values) <= set(specs):
        raise _invalid("a value names a field the request does not have")
    result: dict[str, Any] = {}
    for spec in request.fields:
        if spec.id not in values:
            if spec.required:
                raise _invalid("a required field has no value")
            continue
        value = values[spec.id]
        ok = _number_ok(spec, value) if spec.type == "number" else _text_ok(spec, value)
        if not ok:
            raise _invalid("a value breaks its field's type or bounds")
        result[spec.id] = value
    return {"values": result}


def _flag(answer: object, key: str) -> dict[str, Any]:
    value = _only(answer, key)
    if not isinstance(value, bool):
        raise _invalid(f"{key} must be true or false")
    return {key: value}


def result_of(request: StandardInteractionRequest, answer: object) -> dict[str, Any]:
    """The result of `request` that `answer` (what the user's client sent) gives: checked
    against the request and normalised. Raises `LineUpError(answer_invalid)` for anything that
    is not an answer to it (a cancel included: see `is_cancel`). Never changes `request`."""
    if isinstance(request, NoticeRequest):
        result = _flag(answer, "acknowledged")
    elif isinstance(request, ConfirmRequest):
        result = _flag(answer, "approved")
    elif isinstance(request, ChoiceRequest):
        result = _choice(request, answer)
    else:
        result = _input(request, answer)
    size = len(json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode())
    if size > MAX_RESULT_BYTES:
        raise _invalid(f"the answer takes more than {MAX_RESULT_BYTES} bytes")
    return result
