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
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    StrictBool,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from lineup.actors.kernel import ErrorCode, LineUpError

from .manifest import ToolDescriptor
from .schema import InputInvalid, pointer_of

__all__ = [
    "DEFAULT_EXPIRES_IN_MS",
    "LEGACY",
    "MAX_EXPIRES_IN_MS",
    "MAX_REQUEST_BYTES",
    "MAX_RESULT_BYTES",
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

DEFAULT_EXPIRES_IN_MS: Final = 15 * 60 * 1000
MIN_EXPIRES_IN_MS: Final = 60 * 1000
MAX_EXPIRES_IN_MS: Final = 24 * 60 * 60 * 1000
MAX_REQUEST_BYTES: Final = 64 * 1024  # a request as compact UTF-8 JSON (what the store keeps)
MAX_RESULT_BYTES: Final = 64 * 1024  # a result likewise
MAX_TEXT: Final = 4096  # a `text` field's value, in characters
MAX_TEXTAREA: Final = 16384  # a `textarea` field's value
MAX_ACTIONS: Final = 20
MAX_FIELDS: Final = 12

_ID_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$"
ItemId = Annotated[StrictStr, Field(pattern=_ID_PATTERN)]
Title = Annotated[StrictStr, Field(min_length=1, max_length=200)]
Text = Annotated[StrictStr, Field(min_length=1, max_length=8192)]
ButtonLabel = Annotated[StrictStr, Field(min_length=1, max_length=40)]
Label = Annotated[StrictStr, Field(min_length=1, max_length=80)]
FieldType = Literal["text", "textarea", "number"]
ChoiceMode = Literal["single-choice", "multi-choice", "button"]
Length = Annotated[StrictInt, Field(ge=0)]
Bound = Annotated[float, Strict(), Field(allow_inf_nan=False)]


class _Model(BaseModel):
    # Scalars are strict: the tool input is JSON the Agent wrote; "3" is not a number, 1 is not
    # `true`. (Arrays may come as lists or tuples.)
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class _Request(_Model):
    @model_validator(mode="after")
    def _bounded(self) -> _Request:
        size = len(json.dumps(self.model_dump(mode="json"), ensure_ascii=False).encode())
        if size > MAX_REQUEST_BYTES:
            raise ValueError(f"the request takes more than {MAX_REQUEST_BYTES} bytes")
        return self


class Action(_Model):
    id: ItemId
    label: Label
    description: Annotated[StrictStr, Field(max_length=400)] | None = None


class InputField(_Model):
    """One field of an `input`: `min_length`/`max_length` only on text fields (at most
    `MAX_TEXT` or `MAX_TEXTAREA`), `minimum`/`maximum` only on a number."""

    id: ItemId
    label: Label
    type: FieldType
    required: StrictBool = False
    placeholder: Annotated[StrictStr, Field(max_length=200)] | None = None
    min_length: Length | None = None
    max_length: Length | None = None
    minimum: Bound | None = None
    maximum: Bound | None = None

    @model_validator(mode="after")
    def _bounds_fit_the_type(self) -> InputField:
        if self.type == "number":
            if self.min_length is not None or self.max_length is not None:
                raise ValueError("a number field takes no length bounds")
            if None not in (self.minimum, self.maximum) and self.minimum > self.maximum:  # type: ignore[operator]
                raise ValueError("minimum is above maximum")
        else:
            if self.minimum is not None or self.maximum is not None:
                raise ValueError("a text field takes no number bounds")
            cap = self.cap
            for bound in (self.min_length, self.max_length):
                if bound is not None and bound > cap:
                    raise ValueError(f"a {self.type} field holds at most {cap} characters")
            if None not in (self.min_length, self.max_length) and self.min_length > self.max_length:  # type: ignore[operator]
                raise ValueError("min_length is above max_length")
            if self.required and self.max_length == 0:
                raise ValueError("a required field cannot be empty")
        return self

    @property
    def cap(self) -> int:
        return MAX_TEXTAREA if self.type == "textarea" else MAX_TEXT


def _unique(items: tuple[Action, ...] | tuple[InputField, ...], what: str) -> None:
    ids = [item.id for item in items]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{what} ids must be unique")


class NoticeRequest(_Request):
    kind: Literal["notice"] = "notice"
    title: Title
    message: Text
    acknowledge_label: ButtonLabel | None = None


class ChoiceRequest(_Request):
    kind: Literal["choice"] = "choice"
    title: Title
    prompt: Text
    mode: ChoiceMode
    actions: Annotated[tuple[Action, ...], Field(min_length=1, max_length=MAX_ACTIONS)]

    @model_validator(mode="after")
    def _unique_actions(self) -> ChoiceRequest:
        _unique(self.actions, "action")
        return self


class ConfirmRequest(_Request):
    kind: Literal["confirm"] = "confirm"
    title: Title
    prompt: Text
    approve_label: ButtonLabel | None = None
    cancel_label: ButtonLabel | None = None


class InputRequest(_Request):
    kind: Literal["input"] = "input"
    title: Title
    prompt: Text
    fields: Annotated[tuple[InputField, ...], Field(min_length=1, max_length=MAX_FIELDS)]
    submit_label: ButtonLabel | None = None
    cancel_label: ButtonLabel | None = None

    @model_validator(mode="after")
    def _unique_fields(self) -> InputRequest:
        _unique(self.fields, "field")
        return self


StandardInteractionRequest = Annotated[
    NoticeRequest | ChoiceRequest | ConfirmRequest | InputRequest, Field(discriminator="kind")
]
REQUEST: Final[TypeAdapter[StandardInteractionRequest]] = TypeAdapter(StandardInteractionRequest)

# ------------------------------------------------------------------------------ the tools

_KIND_OF_TOOL: Final[Mapping[str, str]] = {
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
    for tool, kind in _KIND_OF_TOOL.items()
)

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
    kind = _KIND_OF_TOOL.get(LEGACY.get(tool, tool))
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
