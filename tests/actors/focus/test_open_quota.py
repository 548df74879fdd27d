"""`apps.open` holds each MiniApp to MAX_OPENED_PER_APP live instances it opened
(actors/focus/_actor.py); the Agent's launches are not counted against it."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, cast

import pytest

from lineup.actors.focus import FocusActor
from lineup.actors.focus._lifecycle import MAX_OPENED_PER_APP
from lineup.actors.kernel import (
    ActorContext,
    ActorKind,
    AuditRecord,
    Bus,
    ErrorCode,
    Identity,
    LineUpError,
)


class AuditingBus:
    def __init__(self) -> None:
        self.records: list[AuditRecord] = []

    def audit_refusal(self, record: AuditRecord) -> bool:
        self.records.append(record)
        return False


def focus_with(bus: AuditingBus) -> FocusActor:
    ctx = ActorContext(
        Identity(ActorKind.FOCUS, "focus"), 1, Path("/nonexistent"), {}, cast(Bus, bus)
    )
    return FocusActor(ctx)


def opened(actor: FocusActor, scope: str, opener: str, n: int) -> str:
    instance_id = f"{scope}:nav-{opener}-{n}"
    actor.instances.launch(instance_id, scope, foreground=True, call_id=f"nav-{opener}-{n}")
    return instance_id


def refusal(actor: FocusActor, opener: str) -> ErrorCode | None:
    try:
        actor.lifecycle._check_open_quota(opener)
    except LineUpError as exc:
        return exc.code
    return None


def test_an_app_may_hold_its_quota_of_opened_instances_and_no_more() -> None:
    bus = AuditingBus()
    actor = focus_with(bus)
    for n in range(MAX_OPENED_PER_APP):
        assert refusal(actor, "probe") is None
        opened(actor, "task-dashboard", "probe", n)
    assert refusal(actor, "probe") is ErrorCode.QUOTA_EXCEEDED
    [row] = bus.records
    assert (row.event, row.peer, row.code, row.message_type) == (
        "focus.open_quota_exceeded", "miniapp:probe", "quota_exceeded", "focus.sdk.apps.open"
    )  # fmt: skip


def test_the_agents_launches_and_other_apps_opens_do_not_count() -> None:
    actor = focus_with(AuditingBus())
    for n in range(3 * MAX_OPENED_PER_APP):
        # The Agent's launches: `<scope>:<call id>`.
        instance_id = f"task-dashboard:call-{n}"
        actor.instances.launch(instance_id, "task-dashboard", foreground=True, call_id=f"call-{n}")
    for n in range(MAX_OPENED_PER_APP - 1):
        opened(actor, "probe", "task-dashboard", n)
    assert refusal(actor, "probe") is None
    assert refusal(actor, "task-dashboard") is None


@pytest.mark.parametrize("final", ["stopped", "failed"])
def test_an_instance_that_ended_frees_its_place_in_the_quota(
    final: Literal["stopped", "failed"],
) -> None:
    actor = focus_with(AuditingBus())
    first = opened(actor, "task-dashboard", "probe", 0)
    for n in range(1, MAX_OPENED_PER_APP):
        opened(actor, "task-dashboard", "probe", n)
    assert refusal(actor, "probe") is ErrorCode.QUOTA_EXCEEDED
    actor.instances.remove(first, final)
    assert refusal(actor, "probe") is None
