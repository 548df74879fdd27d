"""What an app reports about itself (`focus.sdk.diagnostics.report`, seed 004 §6 `DiagnosticsAPI`):
an instance's health and a bounded error report.

Each report is checked (one of the sender's live instances; within `sdk.MAX_REPORTS` per
`sdk.REPORT_WINDOW_S` per app, else `quota_exceeded` — not `rate_limited`, which the SDK's
channel waits out — the refusal audited within the bus's bounds), then audited and logged by
its codes alone: the event names the health, the row's `code` is the report's own code (a
closed machine word, `sdk.DiagnosticCode`). The report's `message` is bounded by the protocol
and goes nowhere: not to the audit, the logs or the store. The health is kept as the
instance's (its app's state view shows it).
"""

from __future__ import annotations

import logging
from collections import deque

import trio

from lineup.actors.kernel import AuditRecord, Envelope, ErrorCode, LineUpError
from lineup.sdk import protocol as sdk

from ._access import Access
from ._app_state import AppState, Lineage
from ._port import Port

__all__ = ["DIAGNOSTICS_EVENT", "Diagnostics"]

log = logging.getLogger("lineup.focus")

DIAGNOSTICS_EVENT = "focus.app_reported"  # + `_<health>`: one audit event per health


class Diagnostics:
    def __init__(self, port: Port, access: Access, lineage: Lineage, state: AppState) -> None:
        self._port = port
        self._access = access
        self._lineage = lineage
        self._state = state
        self._recent: dict[str, deque[float]] = {}  # app → when its recent reports came

    def report(self, msg: sdk.DiagnosticsReportRequest, env: Envelope) -> sdk.CommandReceipt:
        scope = self._access.live_owned(env, msg.instance_id)
        self._within_rate(scope, msg)
        code = None if msg.error is None else msg.error.code
        self._port.bus.audit(
            AuditRecord(
                event=f"{DIAGNOSTICS_EVENT}_{msg.health}",
                actor=self._port.me.name,
                peer=env.sender.name,
                code=code,
                message_type=msg.TYPE,
                subject_id=msg.instance_id,
            )
        )
        log.info(
            "focus.app_reported app=%s instance=%s health=%s code=%s",
            scope,
            msg.instance_id,
            msg.health,
            code,
        )
        if self._lineage.reported(msg.instance_id, msg.health):
            self._state.changed()
        return sdk.CommandReceipt(id=msg.instance_id)

    def _within_rate(self, scope: str, msg: sdk.DiagnosticsReportRequest) -> None:
        now = trio.current_time()
        recent = self._recent.setdefault(scope, deque())
        while recent and recent[0] <= now - sdk.REPORT_WINDOW_S:
            recent.popleft()
        if len(recent) >= sdk.MAX_REPORTS:
            self._port.bus.audit_refusal(
                AuditRecord(
                    event="focus.diagnostics_quota_exceeded",
                    actor=self._port.me.name,
                    peer=f"miniapp:{scope}",
                    code=ErrorCode.QUOTA_EXCEEDED.value,
                    message_type=msg.TYPE,
                    subject_id=msg.instance_id,
                )
            )
            raise LineUpError(ErrorCode.QUOTA_EXCEEDED, f"over {sdk.MAX_REPORTS} reports a minute")
        recent.append(now)
