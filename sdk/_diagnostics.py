"""What an app may report about itself (seed 004 §6 `DiagnosticsAPI`): an instance's health and
a bounded error report. The runtime audits and logs a report by its codes alone, and keeps the
health as the instance's (the app's state view shows it); the report's `message` is bounded
and never written anywhere (`lineup.sdk._protocol.diagnostics`)."""

from __future__ import annotations

from typing import Literal

from . import protocol as p
from ._channel import RuntimeChannel

__all__ = ["Diagnostics"]


class Diagnostics:
    """`AppContext.diagnostics`."""

    def __init__(self, host: RuntimeChannel, instance_id: str) -> None:
        self._host = host
        self._instance_id = instance_id

    async def report(
        self,
        health: Literal["ok", "degraded", "failing"],
        *,
        code: str | None = None,
        message: str = "",
        instance_id: str | None = None,
    ) -> p.CommandReceipt:
        """Report `instance_id` (default: the process's own) as `health`, with an error
        report when `code` is given (a machine word such as `render_failed`; `message` at most
        `protocol.MAX_DIAGNOSTIC_MESSAGE` characters). Raises `LineUpError`: `quota_exceeded`
        (over `protocol.MAX_REPORTS` a minute), `app_instance_not_found`; a code or message
        out of bounds is refused before anything is sent (pydantic's `ValidationError`)."""
        error = None if code is None else p.ErrorReport(code=code, message=message)
        return await self._host.call(
            "focus",
            p.DiagnosticsReportRequest(
                instance_id=instance_id or self._instance_id, health=health, error=error
            ),
            p.CommandReceipt,
        )
