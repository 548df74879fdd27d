"""The focus actor (DESIGN §1). Its public protocol is `messages`."""

from ._actor import FocusActor

__all__ = ["FocusActor"]
