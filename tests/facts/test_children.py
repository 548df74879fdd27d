"""The supervisor's child's machine on its own (`facts/children.py`): no process, no tree."""

from __future__ import annotations

from typing import get_args

from hypothesis import given
from hypothesis import strategies as st

from lineup.facts import children
from lineup.facts.children import UP, ChildEvent, ChildState


def walk(*events: ChildEvent, start: ChildState = "new") -> ChildState | None:
    state: ChildState | None = start
    for event in events:
        assert state is not None
        state = children.move(state, event)
    return state


def test_a_child_starts_crashes_and_is_restarted_up_again() -> None:
    assert walk("spawn", "ready") == UP
    assert walk("spawn", "ready", "crashed") == "failed"
    assert walk("spawn", "ready", "crashed", "restart", "spawn", "ready") == UP


def test_a_child_that_dies_starting_is_failed_and_one_that_ends_cleanly_is_stopped() -> None:
    assert walk("spawn", "crashed") == "failed"
    assert walk("spawn", "ready", "exited") == "stopped"


def test_a_stop_ends_stopped_however_its_process_exited() -> None:
    assert walk("spawn", "ready", "stop", "exited", "stopped") == "stopped"
    assert walk("spawn", "ready", "stop", "crashed", "stopped") == "stopped"  # by SIGTERM
    assert walk("spawn", "ready", "stop", "stopped") == "stopped"  # not reaped yet


def test_a_process_reaped_after_its_stop_gave_up_waiting_still_ends_the_child() -> None:
    assert walk("spawn", "ready", "stop", "stopped", "crashed") == "failed"
    assert walk("spawn", "ready", "killed", "crashed") == "failed"
    assert walk("spawn", "ready", "killed", "stop") == "stopping"


def test_a_miniapp_stopped_for_good_or_given_up_is_failed_and_may_be_launched_again() -> None:
    assert walk("spawn", "ready", "crashed", "killed") == "failed"
    assert walk("spawn", "ready", "crashed", "given_up") == "failed"
    assert walk("spawn", "ready", "exited", "given_up") == "failed"
    assert walk("spawn", "ready", "crashed", "given_up", "spawn", "ready") == UP


def test_a_start_may_begin_before_the_last_process_of_the_child_is_reaped() -> None:
    assert walk("spawn", "spawn") == "starting"  # a start that timed out, tried again
    assert walk("spawn", "ready", "stop", "spawn", "ready") == UP  # focus starts it again


def test_a_move_no_code_path_makes_moves_nothing() -> None:
    assert children.move("new", "stop") is None  # no process to stop
    assert children.move("new", "ready") is None
    assert children.move("running", "ready") is None  # ready is news once per process
    assert children.move("running", "given_up") is None  # given up once its process ended
    assert children.move("running", "spawn") is None  # a running child is not started again
    assert children.move("restarting", "crashed") is None  # its new process is not forked yet
    assert children.move("stopped", "ready") is None


def test_stale_news_of_two_tasks_on_one_child_moves_nothing() -> None:
    # Each of these was once made when two of the supervisor's tasks met on one child.
    assert children.move("running", "restart") is None  # focus started it during the backoff
    assert children.move("starting", "restart") is None
    assert children.move("stopping", "restart") is None
    assert children.move("new", "restart") is None  # (rest for one) not started yet
    assert children.move("running", "stopped") is None  # a stop's end, after a new start
    assert children.move("starting", "stopped") is None
    assert children.move("stopping", "ready") is None  # a ready read after its stop began


@given(st.lists(st.sampled_from(get_args(ChildEvent))))
def test_only_a_ready_puts_a_child_up_and_a_missing_move_keeps_the_state(
    events: list[ChildEvent],
) -> None:
    state: ChildState = "new"
    for event in events:
        after = children.move(state, event)
        if after == UP and state != UP:
            assert event == "ready"
        state = state if after is None else after
        assert state in children.TABLE


def test_every_child_state_is_in_the_table_and_reachable_from_new() -> None:
    assert set(children.TABLE) == set(get_args(ChildState))
    reached: set[ChildState] = {"new"}
    frontier: list[ChildState] = ["new"]
    while frontier:
        for target in children.TABLE[frontier.pop()].values():
            if target not in reached:
                reached.add(target)
                frontier.append(target)
    assert reached == set(children.TABLE)
    assert all("new" not in moves.values() for moves in children.TABLE.values())
