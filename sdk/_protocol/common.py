"""What every part of the MiniApp protocol uses: an id's bounds and the receipt of a write."""

from typing import Annotated, Literal

from pydantic import Field

from lineup.actors.kernel import Message

__all__ = ["CommandReceipt", "Id"]

Id = Annotated[str, Field(min_length=1, max_length=200)]


class CommandReceipt(Message):
    """The runtime accepted (and persisted) a MiniApp's write. Refusals are error codes."""

    type: Literal["router.sdk.receipt"] = "router.sdk.receipt"
    id: Id
    seq: int | None = None
    changed: bool = True
