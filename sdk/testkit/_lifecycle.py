"""The focus changes the app asked for (`Lifecycle`); `FakeRuntime` decides them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["Action", "FakeLifecycle"]

Action = Literal["foreground", "background", "close"]


@dataclass
class FakeLifecycle:
    """Every focus change the app asked for and got, in order, as `(instance_id, action)`.
    A `close` ends the instance: later views and lifecycle requests for it are refused."""

    requests: list[tuple[str, Action]] = field(default_factory=list)
