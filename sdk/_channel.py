"""The runtime side of a MiniApp's channel, as the SDK's services see it: one typed call."""

from __future__ import annotations

from typing import Protocol, TypeVar

from lineup.actors.kernel import Message

__all__ = ["RuntimeChannel"]

M = TypeVar("M", bound=Message)


class RuntimeChannel(Protocol):
    """The runtime side of a MiniApp's channel, as the SDK's services use it: `MiniAppHost` in
    the process, an in-memory fake (`lineup.sdk.testkit.FakeRuntime`) in an author's tests."""

    async def call(self, peer: str, request: Message, expect: type[M]) -> M: ...
