"""The transport actor (DESIGN §1). Its public protocol is `messages`."""

from ._actor import TransportActor

__all__ = ["TransportActor"]
