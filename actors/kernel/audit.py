"""Audit records: ids, types, decisions and codes only — never content (DESIGN §3).

The kernel defines the audit message so that every actor's bus can report rejections without
importing the store package; the store actor serves it.

Refusals are audited per offender at a bounded rate (`RefusalLedger`, no I/O): a peer that
sends denied frames in a loop gets the first few of each window as rows, then one counter row
(`SUPPRESSED`, its `subject_id` the number of refusals left without a row), and, past a bound
within one window, the verdict that it keeps misbehaving (its bus has it stopped).
"""

from dataclasses import dataclass, field
from typing import Final, Literal, Self

from pydantic import Field

from .errors import ErrorCode
from .messages import Message

__all__ = [
    "REFUSAL_ROWS_PER_WINDOW",
    "REFUSAL_WINDOW",
    "STOP_AFTER_REFUSALS",
    "SUPPRESSED",
    "AuditAppendReply",
    "AuditAppendRequest",
    "AuditRecord",
    "RefusalLedger",
]

SUPPRESSED: Final = "audit.suppressed"  # the counter row's event
REFUSAL_WINDOW: Final = 1.0  # seconds
REFUSAL_ROWS_PER_WINDOW: Final = 8  # rows per offender per window; the rest are counted
STOP_AFTER_REFUSALS: Final = 32  # refusals per offender within one window: it keeps misbehaving
MAX_OFFENDERS: Final = 1024  # offenders a ledger tracks at once (older windows are forgotten)

_ID = Field(default=None, max_length=200)


class AuditRecord(Message):
    type: Literal["store.audit.record"] = "store.audit.record"
    event: str = Field(max_length=100)  # e.g. "bus.acl_denied", "supervisor.escalated"
    actor: str = Field(max_length=100)  # who writes the row
    peer: str | None = _ID  # the other party, when there is one
    code: str | None = _ID  # an ErrorCode value, when it is a refusal
    message_type: str | None = _ID  # the tag involved (never the body)
    # call_id, message_id, instance_id… whatever the event is about; in a counter row
    # (`SUPPRESSED`), how many refusals of its `code` got no row of their own.
    subject_id: str | None = _ID
    at: float = 0.0  # wall clock seconds; filled by the writer

    @classmethod
    def scope_denied(cls, actor: str, peer: str, message_type: str, subject_id: str) -> Self:
        """`peer`, a MiniApp, named another app's instance, call or delivery in a
        `message_type` request: refused `app_scope_mismatch` by `actor`, and recorded."""
        return cls(
            event=f"{actor}.scope_denied",
            actor=actor,
            peer=peer,
            code=ErrorCode.APP_SCOPE_MISMATCH.value,
            message_type=message_type,
            subject_id=subject_id,
        )


class AuditAppendRequest(Message):
    type: Literal["store.audit.append"] = "store.audit.append"
    records: tuple[AuditRecord, ...] = Field(min_length=1, max_length=512)


class AuditAppendReply(Message):
    type: Literal["store.audit.append.reply"] = "store.audit.append.reply"
    count: int


@dataclass
class _Window:
    started: float
    count: int = 0  # refusals in this window
    suppressed: int = 0  # ... that got no row
    code: str | None = None  # the code of the last one suppressed (named by the counter row)
    message_type: str | None = None


@dataclass
class RefusalLedger:
    """Which refusals of each offender become audit rows (see the module's docstring).

    `note` decides one refusal; `take_suppressed` hands over (once) the count a window left
    without rows, which the caller writes as one `SUPPRESSED` row when the window is over.
    """

    window: float = REFUSAL_WINDOW
    rows: int = REFUSAL_ROWS_PER_WINDOW
    stop_after: int = STOP_AFTER_REFUSALS
    _windows: dict[str, _Window] = field(default_factory=dict)

    def note(self, offender: str, code: str, message_type: str | None, now: float) -> "_Verdict":
        """Record one refusal of `offender`'s at `now`. Returns (write a row for it?, the
        count an earlier window of this offender left unreported, does it keep misbehaving?)."""
        w = self._windows.get(offender)
        left_over: _Suppressed | None = None
        if w is None or now - w.started >= self.window:
            if w is not None and w.suppressed:
                left_over = _Suppressed(w.suppressed, w.code, w.message_type)
            if w is None and len(self._windows) >= MAX_OFFENDERS:
                self._windows.pop(next(iter(self._windows)))
            w = self._windows[offender] = _Window(now)
        w.count += 1
        write = w.count <= self.rows
        if not write:
            w.suppressed += 1
            w.code, w.message_type = code, message_type
        first_suppressed = not write and w.suppressed == 1
        return _Verdict(write, left_over, w.count >= self.stop_after, first_suppressed)

    def take_suppressed(self, offender: str) -> "_Suppressed | None":
        """The count of refusals without a row in `offender`'s current window (then zero)."""
        w = self._windows.get(offender)
        if w is None or not w.suppressed:
            return None
        taken = _Suppressed(w.suppressed, w.code, w.message_type)
        w.suppressed = 0
        return taken

    def forget(self, offender: str) -> None:
        self._windows.pop(offender, None)


@dataclass(frozen=True)
class _Suppressed:
    count: int
    code: str | None
    message_type: str | None

    def record(self, actor: str, offender: str, at: float = 0.0) -> AuditRecord:
        """The counter row: `count` refusals of `offender`'s that got no row."""
        return AuditRecord(
            event=SUPPRESSED,
            actor=actor,
            peer=offender,
            code=self.code,
            message_type=self.message_type,
            subject_id=str(self.count),
            at=at,
        )


@dataclass(frozen=True)
class _Verdict:
    write: bool  # write this refusal's own row
    left_over: _Suppressed | None  # an earlier window's count, to write as a counter row
    persistent: bool  # the offender keeps sending refused frames: have it stopped
    first_suppressed: bool  # the window's first refusal without a row: flush its count later
