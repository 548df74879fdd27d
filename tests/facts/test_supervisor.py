"""The supervisor's own phase on its own (`facts/supervisor.py`): no process, no tree."""

from __future__ import annotations

from typing import get_args

import pytest

from lineup.facts import supervisor
from lineup.facts.supervisor import SHUTDOWN, Phase, PhaseEvent, lifecycle_part, shell_part


def phases(*events: PhaseEvent, start: Phase = "created") -> Phase | None:
    phase: Phase | None = start
    for event in events:
        assert phase is not None
        phase = supervisor.move(phase, event)
    return phase


def test_a_tree_starts_runs_and_stops_once() -> None:
    assert phases("start", "ready", "stop", "stop", "stopped") == "stopped"
    assert phases("start", "stop", "stopped") == "stopped"  # escalated or cancelled starting


@pytest.mark.parametrize("event", get_args(PhaseEvent))
def test_nothing_leaves_a_stopped_tree(event: PhaseEvent) -> None:
    assert supervisor.move("stopped", event) is None


def test_a_tree_neither_starts_twice_nor_is_ready_before_it_starts() -> None:
    assert supervisor.move("running", "start") is None
    assert supervisor.move("created", "ready") is None
    assert supervisor.move("running", "stopped") is None  # not stopped without stopping


def test_the_supervisor_tells_restoring_until_restored_then_its_stop() -> None:
    assert set(supervisor.TABLE) == set(get_args(Phase))
    assert lifecycle_part("starting", restored=False) == "restoring"
    assert lifecycle_part("running", restored=True) is None  # the link's states are shown
    assert lifecycle_part("stopping", restored=False) == "stopping"
    assert lifecycle_part("stopped", restored=True) == "stopped"


@pytest.mark.parametrize("phase", get_args(Phase))
def test_the_shell_is_told_restoring_then_the_link_then_shutdown_for_its_end_too(
    phase: Phase,
) -> None:
    for restored in (False, True):
        told = shell_part(phase, restored=restored)
        part = lifecycle_part(phase, restored=restored)
        assert told == (SHUTDOWN if part in ("stopping", "stopped") else part)
