"""Each instance's session data as the store keeps it, with its compare-and-set revisions
(`SessionData`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.facts.limits import MAX_JSON_DEPTH, MAX_SESSION_DATA_BYTES

from .. import protocol as p

__all__ = ["FakeSessionData"]


@dataclass
class FakeSessionData:
    """Each instance's session data as the store keeps it: compact JSON text and a revision
    (never written: no data, revision 0). `put` writes as another writer would (a Surface);
    `pending` holds the updates the app has not been told of yet (see `FakeRuntime.settle`)."""

    documents: dict[str, tuple[str, int]] = field(default_factory=dict)
    subscribed: set[str] = field(default_factory=set)
    pending: list[p.SessionDataEvent] = field(default_factory=list)

    def get(self, instance_id: str) -> tuple[dict[str, Any] | None, int]:
        """`(data, revision)` now; `data` is a copy."""
        text, revision = self.documents.get(instance_id, (None, 0))
        return (json.loads(text) if text is not None else None), revision

    def put(self, instance_id: str, data: dict[str, Any]) -> int:
        """Replace the value at its current revision; returns the new revision."""
        receipt = self._replace(
            p.SessionDataReplaceRequest(
                instance_id=instance_id, data=data, expected_revision=self.get(instance_id)[1]
            )
        )
        assert receipt.seq is not None
        return receipt.seq

    def _snapshot(self, instance_id: str) -> p.SessionDataSnapshot:
        data, revision = self.get(instance_id)
        return p.SessionDataSnapshot(instance_id=instance_id, data=data, revision=revision)

    def _subscribe(self, msg: p.SessionDataSubscribeRequest) -> p.SessionDataSnapshot:
        self.subscribed.add(msg.instance_id)
        return self._snapshot(msg.instance_id)

    def _replace(self, msg: p.SessionDataReplaceRequest) -> p.CommandReceipt:
        text = _bounded_json(msg.data)
        stored, revision = self.documents.get(msg.instance_id, (None, 0))
        if revision != msg.expected_revision:
            # A retry of a write that was applied finds its own data one revision on.
            if revision == msg.expected_revision + 1 and stored == text:
                return p.CommandReceipt(id=msg.instance_id, seq=revision, changed=False)
            raise LineUpError(ErrorCode.STALE_REVISION, msg.instance_id)
        self.documents[msg.instance_id] = (text, revision + 1)
        if msg.instance_id in self.subscribed:
            self.pending.append(
                p.SessionDataEvent(
                    instance_id=msg.instance_id, data=json.loads(text), revision=revision + 1
                )
            )
        return p.CommandReceipt(id=msg.instance_id, seq=revision + 1)


def _bounded_json(value: dict[str, Any]) -> str:
    """`value` as the store keeps it: compact JSON text. Raises `invalid_arguments` for what
    the store refuses: not strict JSON (NaN, Infinity), too deep, or too large."""
    deepest, pending = 0, [(value, 0)]
    while pending:  # iterative, as the store's check is
        item, depth = pending.pop()
        if isinstance(item, dict | list | tuple):
            deepest = max(deepest, depth + 1)
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)
    if deepest > MAX_JSON_DEPTH:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "session data nests too deep")
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "session data is not strict JSON") from exc
    if len(text.encode()) > MAX_SESSION_DATA_BYTES:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "session data is too large")
    return text
