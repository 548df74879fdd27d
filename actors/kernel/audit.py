"""Audit records: ids, types, decisions and codes only — never content (DESIGN §3).

The kernel defines the audit message so that every actor's bus can report rejections without
importing the store package; the store actor serves it.
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field

from .errors import ErrorCode
from .messages import Message

__all__ = ["AuditAppendReply", "AuditAppendRequest", "AuditRecord"]

_ID = Field(default=None, max_length=200)


class AuditRecord(Message):
    type: Literal["store.audit.record"] = "store.audit.record"
    event: str = Field(max_length=100)  # e.g. "bus.acl_denied", "supervisor.escalated"
    actor: str = Field(max_length=100)  # who writes the row
    peer: str | None = _ID  # the other party, when there is one
    code: str | None = _ID  # an ErrorCode value, when it is a refusal
    message_type: str | None = _ID  # the tag involved (never the body)
    subject_id: str | None = _ID  # call_id, message_id, instance_id… whatever the event is about
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
