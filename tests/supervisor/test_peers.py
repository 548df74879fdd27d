"""A child's and the tree's moves go through their tables (`facts/children.py`,
`facts/supervisor.py`); one the table lacks is logged as the supervisor's bug and changes
nothing, and never raises into the tree."""

from __future__ import annotations

import logging

import pytest

from lineup.actors.kernel import ActorKind, Bus, Identity
from lineup.facts.children import ChildEvent
from lineup.facts.supervisor import Phase, PhaseEvent
from lineup.supervisor._lifecycle import Lifecycle
from lineup.supervisor._peers import Changes, Child


def refusals(caplog: pytest.LogCaptureFixture, event: str) -> list[logging.LogRecord]:
    return [
        r for r in caplog.records if r.levelno == logging.ERROR and r.getMessage().startswith(event)
    ]


def phase_of(lifecycle: Lifecycle) -> Phase:
    return lifecycle.phase


def test_a_childs_move_in_the_table_changes_its_state(caplog: pytest.LogCaptureFixture) -> None:
    child = Child(Identity(ActorKind.STORE, "store"))
    events: tuple[ChildEvent, ...] = ("spawn", "ready", "crashed", "restart", "spawn")
    for event in events:
        child.move(event)
    assert child.state == "starting"
    assert refusals(caplog, "supervisor.child_move_refused") == []


def test_a_childs_move_the_table_lacks_is_logged_and_keeps_its_state(
    caplog: pytest.LogCaptureFixture,
) -> None:
    child = Child(Identity(ActorKind.STORE, "store"))
    child.move("spawn")
    child.move("ready")
    child.move("given_up")  # only a child whose process ended is given up on
    assert child.state == "running"
    assert len(refusals(caplog, "supervisor.child_move_refused")) == 1


def test_the_trees_phase_moves_by_its_table_and_a_missing_move_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = Bus(Identity(ActorKind.SUPERVISOR, "supervisor"), lambda env: None)
    changes = Changes()
    lifecycle = Lifecycle(bus, {}, changes)
    woken = changes.event
    lifecycle.move("start")
    assert (lifecycle.phase, woken.is_set()) == ("starting", True)
    lifecycle.move("stopped")  # not stopped without stopping
    assert lifecycle.phase == "starting"
    assert len(refusals(caplog, "supervisor.phase_move_refused")) == 1
    phases: tuple[PhaseEvent, ...] = ("ready", "stop", "stop", "stopped")
    for event in phases:
        lifecycle.move(event)
    assert phase_of(lifecycle) == "stopped"  # (read anew: the moves change it)
    told = lifecycle.state()
    assert told is not None and told.state == "stopped"
