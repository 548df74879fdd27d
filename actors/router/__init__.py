"""The router actor (DESIGN §1). Its public protocol is `messages`."""

from ._actor import RouterActor

__all__ = ["RouterActor"]
