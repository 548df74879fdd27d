"""The transport actor's whole public protocol. Every tag starts with `transport.`.

Besides what is declared here, the actor answers the kernel's `kernel.health.request`.
"""

from __future__ import annotations

from lineup.actors.kernel.control import HealthReply, HealthRequest

__all__ = ["HealthReply", "HealthRequest"]
