"""The link's machine on its own (`facts/link.py`): no transport, no AppServer."""

from __future__ import annotations

from typing import get_args

import pytest

from lineup.facts.link import SUPERVISOR_PHASES, TABLE, LinkEvent, RuntimeState, move


def walk(*events: LinkEvent, start: RuntimeState = "created") -> RuntimeState | None:
    state: RuntimeState | None = start
    for event in events:
        assert state is not None
        state = move(state, event)
    return state


def test_a_start_goes_through_the_link_states_up_to_online() -> None:
    assert walk("restore", "log_in", "logged_in", "synced") == "online"


def test_a_login_retried_while_down_still_ends_synchronizing() -> None:
    assert walk("restore", "log_in", "failed", "failed", "degraded", "logged_in") == (
        "synchronizing"
    )


def test_once_degraded_a_failure_stays_degraded_and_a_sync_brings_it_online() -> None:
    assert move("offline_degraded", "failed") == "offline_degraded"
    assert move("offline_degraded", "synced") == "online"


def test_a_refused_token_logs_in_again_from_any_state_the_link_was_up_in() -> None:
    for state in ("synchronizing", "online", "reconnecting", "offline_degraded"):
        assert move(state, "log_in") == "authenticating"


def test_news_another_loop_has_overtaken_moves_nothing() -> None:
    assert move("created", "synced") is None  # nothing syncs before the first login
    assert move("restoring", "synced") is None
    assert move("synchronizing", "logged_in") is None  # a login's end is news once


@pytest.mark.parametrize("phase", ["stopping", "stopped"])
def test_nothing_leaves_the_supervisors_stop(phase: RuntimeState) -> None:
    assert all(move(phase, event) is None for event in get_args(LinkEvent))


def test_every_state_is_in_the_table_and_every_link_state_is_reachable() -> None:
    assert set(TABLE) == set(get_args(RuntimeState))
    reached: set[RuntimeState] = {"created"}
    frontier: list[RuntimeState] = ["created"]
    while frontier:
        for target in TABLE[frontier.pop()].values():
            if target not in reached:
                reached.add(target)
                frontier.append(target)
    assert reached == set(TABLE) - {"stopping", "stopped"}
    assert set(TABLE) >= SUPERVISOR_PHASES
