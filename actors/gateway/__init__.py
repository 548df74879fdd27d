"""The gateway actor (DESIGN §1). Its public protocol is `messages`."""

from ._actor import GatewayActor

__all__ = ["GatewayActor"]
