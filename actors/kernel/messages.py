"""The message base: one frozen pydantic model per message, tagged by a `type` literal.

Every message class registers its tag in `REGISTRY` when it is defined, so a receiver can look
up the model for an incoming tag *after* the ACL has allowed it, and validate only then. Tags are
globally unique (`<actor>.<noun>.<verb>`); a duplicate tag is a programming error at import time.
"""

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

__all__ = ["REGISTRY", "Message", "message_type"]

REGISTRY: "dict[str, type[Message]]" = {}


class Message(BaseModel):
    """Base of every message on every channel. Subclasses declare `type: Literal["..."]`."""

    # A float that JSON cannot hold is written as itself (`NaN`, not pydantic's silent `null`),
    # so that the bus refuses it at the sender (`bus._to_json`) instead of changing it.
    model_config = ConfigDict(
        frozen=True, extra="forbid", ser_json_inf_nan="constants", defer_build=True
    )

    TYPE: ClassVar[str] = ""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        field = cls.model_fields.get("type")
        if field is None or not isinstance(field.default, str):
            return  # an abstract intermediate class
        tag = field.default
        existing = REGISTRY.get(tag)
        if existing is not None and (existing.__module__, existing.__qualname__) != (
            cls.__module__,
            cls.__qualname__,
        ):
            raise TypeError(f"message type {tag!r} defined twice: {existing} and {cls}")
        cls.TYPE = tag
        REGISTRY[tag] = cls


def message_type(body: Any) -> str | None:
    """The tag of a raw body, or None if it has none."""
    if isinstance(body, dict):
        tag = body.get("type")
        if isinstance(tag, str):
            return tag
    return None
