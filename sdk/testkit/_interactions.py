"""The standard interactions the app asks, as the router keeps them (`Ui.request`); a test
plays the user."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.facts.interactions import TABLE, move

from .. import interactions as std
from .. import protocol as p

__all__ = ["FakeInteractions"]


@dataclass
class FakeInteractions:
    """The interactions the app asked, by id (`records`), in the order asked (`asked`). A test
    plays the user with `answer` (the answer as the Shell sends it, checked as the runtime
    checks it) or ends one with `end`; the app hears of it at the next `settle`, as the router
    tells only the owner app."""

    records: dict[str, p.InteractionRecord] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)
    untold: list[p.InteractionRecord] = field(default_factory=list)

    @property
    def last(self) -> p.InteractionRecord | None:
        return self.records[self.asked[-1]] if self.asked else None

    def answer(self, interaction_id: str, answer: dict[str, Any]) -> p.InteractionRecord:
        """The user answers: `answer_invalid` as the runtime refuses a bad one; a second
        answer changes nothing (the first wins) and returns the record as it is."""
        record = self.records[interaction_id]
        if not record.is_open:
            return record
        if std.is_cancel(answer):
            return self.end(interaction_id, "cancelled", "cancelled_by_user")
        result = std.result_of(std.REQUEST.validate_python(record.request), answer)
        return self._moved(record.model_copy(update={"state": "submitted", "result": result}))

    def end(self, interaction_id: str, state: str, code: str) -> p.InteractionRecord:
        """End an open interaction (`cancelled`, `expired`, `failed`) with `code`."""
        record = self.records[interaction_id]
        if not record.is_open:
            return record
        return self._moved(record.model_copy(update={"state": state, "terminal_code": code}))

    def _moved(self, record: p.InteractionRecord) -> p.InteractionRecord:
        record = p.InteractionRecord.model_validate(record.model_dump())
        self.records[record.interaction_id] = record
        self.untold.append(record)
        return record

    def _ask(self, msg: p.InteractionAskRequest, app_scope: str) -> p.InteractionReceipt:
        interaction_id = f"ix:{app_scope}:{msg.instance_id}:{msg.request_id}"
        if interaction_id in self.records:
            return p.InteractionReceipt(interaction=self.records[interaction_id], changed=False)
        kind = msg.request.get("kind")
        tool_input = {k: v for k, v in msg.request.items() if k != "kind"}
        if msg.expires_in_ms is not None and kind != "notice":
            tool_input["expires_in_ms"] = msg.expires_in_ms
        request, expires_in_ms = std.request_of(f"interaction.{kind}", tool_input)
        now = time.time()
        record = p.InteractionRecord(
            interaction_id=interaction_id,
            kind=request.kind,
            state="presented",
            request=request.model_dump(mode="json"),
            instance_id=msg.instance_id,
            parent_call_id=msg.parent_call_id,
            presentation=msg.presentation,
            created_at=now,
            expires_at=now + expires_in_ms / 1000 if expires_in_ms is not None else None,
        )
        self.records[interaction_id] = record
        self.asked.append(interaction_id)
        if record.kind == "notice":  # handed on: answered at once, as the runtime does
            record = self._moved(
                record.model_copy(update={"state": "submitted", "result": {"acknowledged": False}})
            )
        return p.InteractionReceipt(interaction=record)

    def _told(self, record: p.InteractionRecord) -> None:
        """The app was told of `record`. An answer told to its owner is delivered: it settles
        (`completed`), as the router settles it once it told the app."""
        held = self.records[record.interaction_id]
        if record.state == held.state and "settle" in TABLE[held.state]:
            settled = {**held.model_dump(), "state": move(held.state, "settle")}
            self.records[held.interaction_id] = p.InteractionRecord.model_validate(settled)

    def _own(self, interaction_id: str) -> p.InteractionRecord:
        record = self.records.get(interaction_id)
        if record is None:
            raise LineUpError(ErrorCode.INTERACTION_NOT_FOUND, interaction_id)
        return record
