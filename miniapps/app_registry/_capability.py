"""The one seam between the App Registry and the SDK's capability requests."""

from __future__ import annotations

from typing import Any

from lineup.sdk import AppContext
from lineup.sdk import protocol as p

__all__ = ["request_capability"]


async def request_capability(
    app: AppContext,
    instance_id: str,
    capability: str,
    purpose: str,
    data: dict[str, Any],
    *,
    request_id: str,
) -> p.CapabilityResult:
    """Ask the runtime for `capability` for `instance_id`; the result, whatever it is."""
    # Until the SDK's `AppContext.capabilities` lands (helper A): the request itself.
    return await app._host.call(
        "gateway",
        p.CapabilityRequest(
            request_id=request_id,
            instance_id=instance_id,
            capability=capability,
            purpose=purpose,
            input=data,
        ),
        p.CapabilityResult,
    )
