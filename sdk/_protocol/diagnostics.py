"""What an app may report about itself (seed 004 §6 `DiagnosticsAPI`): an instance's health and,
optionally, a bounded error report.

The runtime keeps the last health of each instance (the app's own state view shows it),
audits each report by its codes only — the health and the report's `code`, both from closed
shapes — and never writes the report's `message` anywhere: not to the audit, not to the logs,
not to the store. The message is bounded (`MAX_DIAGNOSTIC_MESSAGE`) and so is the rate
(`MAX_REPORTS` per `REPORT_WINDOW_S` per app, then `quota_exceeded`).
"""

from typing import Annotated, Final, Literal

from pydantic import Field

from lineup.actors.kernel import Message

from .common import Id

__all__ = [
    "MAX_DIAGNOSTIC_MESSAGE",
    "MAX_REPORTS",
    "REPORT_WINDOW_S",
    "DiagnosticCode",
    "DiagnosticsReportRequest",
    "ErrorReport",
]

MAX_DIAGNOSTIC_MESSAGE: Final = 500  # characters of an error report's message
MAX_REPORTS: Final = 20  # reports one app may make per window
REPORT_WINDOW_S: Final = 60.0
# A code is a short machine word (`render_failed`, `sync.timeout`): it is audited, so it can
# hold no free text.
DiagnosticCode = Annotated[
    str, Field(pattern=r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$", max_length=64)
]


class ErrorReport(Message):
    type: Literal["focus.sdk.diagnostics.error"] = "focus.sdk.diagnostics.error"
    code: DiagnosticCode
    message: str = Field(default="", max_length=MAX_DIAGNOSTIC_MESSAGE)


class DiagnosticsReportRequest(Message):
    """`instance_id` (one of the sender's live instances) is `health`; `error` says why."""

    type: Literal["focus.sdk.diagnostics.report"] = "focus.sdk.diagnostics.report"
    instance_id: Id
    health: Literal["ok", "degraded", "failing"]
    error: ErrorReport | None = None
