"""The hostbridge's audit rows about the user at the Shell: what they did, or what of theirs was
refused, by kind and id only (never a frame's content), cut to the row's bounds."""

from __future__ import annotations

from lineup.actors.kernel import AuditRecord

__all__ = ["user_record"]


def user_record(
    event: str, message_type: str | None, *, code: str | None, subject_id: str | None = None
) -> AuditRecord:
    """An audit row about the user at the Shell: kinds and ids only, cut to the row's bounds."""
    return AuditRecord(
        event=event,
        actor="hostbridge",
        peer="user",
        code=code,
        message_type=None if message_type is None else message_type[:100],
        subject_id=None if subject_id is None else subject_id[:200],
    )
