"""The four standard interaction requests (seed 003 §3.4) as frozen models, and their limits.

Every text is bounded and every scalar strict (the input is JSON the Agent or an app wrote), and
a whole request is at most `MAX_REQUEST_BYTES` of JSON, so the store can always keep it.
`lineup.sdk.interactions` gathers these with the tools and the checks that use them. Pure.
"""

import json
from typing import Annotated, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    StrictBool,
    StrictInt,
    StrictStr,
    TypeAdapter,
    model_validator,
)

__all__ = [
    "DEFAULT_EXPIRES_IN_MS",
    "MAX_ACTIONS",
    "MAX_EXPIRES_IN_MS",
    "MAX_FIELDS",
    "MAX_REQUEST_BYTES",
    "MAX_RESULT_BYTES",
    "MAX_TEXT",
    "MAX_TEXTAREA",
    "MIN_EXPIRES_IN_MS",
    "REQUEST",
    "Action",
    "ChoiceRequest",
    "ConfirmRequest",
    "InputField",
    "InputRequest",
    "NoticeRequest",
    "StandardInteractionRequest",
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
    def _bounded(self) -> "_Request":
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
    def _bounds_fit_the_type(self) -> "InputField":
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
    def _unique_actions(self) -> "ChoiceRequest":
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
    def _unique_fields(self) -> "InputRequest":
        _unique(self.fields, "field")
        return self


StandardInteractionRequest = Annotated[
    NoticeRequest | ChoiceRequest | ConfirmRequest | InputRequest, Field(discriminator="kind")
]
REQUEST: Final[TypeAdapter[StandardInteractionRequest]] = TypeAdapter(StandardInteractionRequest)
