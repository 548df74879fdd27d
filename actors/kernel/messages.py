"""The message base: one frozen pydantic model per message, tagged by a `type` literal.

Every message class registers its tag in `REGISTRY` when it is defined, so a receiver can look
up the model for an incoming tag *after* the ACL has allowed it, and validate only then. Tags are
globally unique (`<actor>.<noun>.<verb>`); a duplicate tag is a programming error at import time.

A protocol may load in parts (`PROTOCOL_HOMES`): a process imports only the modules whose
messages it names, and `lookup` loads the rest of that protocol, once, on the first tag of
it that is not registered yet. So the store's ~180 classes are not on the way of a process
that sends it two of them, and a reply or event of the store's is never refused as unknown
for want of an import.
"""

import importlib
from typing import Any, ClassVar, Final

from pydantic import BaseModel, ConfigDict

__all__ = ["PROTOCOL_HOMES", "REGISTRY", "Message", "lookup", "message_type"]

REGISTRY: "dict[str, type[Message]]" = {}

# Tag prefix -> the module that loads that protocol whole (its classes live in modules by area,
# each imported on its own by whoever names them).
PROTOCOL_HOMES: Final = {"store.": "lineup.actors.store.messages"}


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


def lookup(tag: str) -> "type[Message] | None":
    """The model of `tag`: registered, or registered once its protocol's home is loaded
    (`PROTOCOL_HOMES`); None for a tag no protocol defines. Loads only a home of that table,
    never a module a peer names."""
    cls = REGISTRY.get(tag)
    if cls is None:
        home = next((m for prefix, m in PROTOCOL_HOMES.items() if tag.startswith(prefix)), None)
        if home is not None:
            protocol = importlib.import_module(home)
            for name in protocol.__all__:
                getattr(protocol, name)  # a lazy home loads each part on its first read
            cls = REGISTRY.get(tag)
    return cls
