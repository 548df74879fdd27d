"""The focus stack and instance lifecycle table, without I/O."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lineup.actors.focus._stack import LIVE, NOT_UP, TRANSITIONS, FocusStack, transition
from lineup.actors.kernel import ErrorCode, LineUpError


def with_chat() -> FocusStack:
    stack = FocusStack()
    stack.add("chat", foreground=True)
    stack.ready("chat")
    return stack


def test_launching_an_app_puts_it_in_front_and_sends_chat_to_the_background() -> None:
    stack = with_chat()
    assert stack.add("td-1", foreground=True) == {"td-1": "starting"}
    assert stack.ready("td-1") == {"td-1": "foreground", "chat": "background"}
    assert stack.top == "td-1"


def test_closing_the_top_restores_the_previous_live_instance() -> None:
    stack = with_chat()
    stack.add("td-1", foreground=True)
    stack.ready("td-1")
    assert stack.remove("td-1", "stopped") == {"td-1": "stopped", "chat": "foreground"}
    assert stack.top == "chat"


def test_failing_the_top_restores_the_one_below_not_the_recovery_app() -> None:
    stack = with_chat()
    for name in ("a", "b"):
        stack.add(name, foreground=True)
        stack.ready(name)
    changes = stack.remove("b", "failed")
    assert changes == {"b": "failed", "a": "foreground"}


def test_closing_the_top_without_restoring_the_previous_gives_the_front_to_the_recovery_app() -> (
    None
):
    stack = with_chat()
    for name in ("a", "b"):
        stack.add(name, foreground=True)
        stack.ready(name)
    changes = stack.remove("b", "stopped", restore_previous=False)
    assert changes == {"b": "stopped", "chat": "foreground"}  # `a` stays behind
    assert stack.order == ["a", "chat"]


def test_closing_an_instance_behind_the_front_moves_no_front_either_way() -> None:
    stack = with_chat()
    for name in ("a", "b"):
        stack.add(name, foreground=True)
        stack.ready(name)
    assert stack.remove("a", "stopped", restore_previous=False) == {"a": "stopped"}
    assert stack.top == "b"


def test_the_recovery_app_cannot_be_closed() -> None:
    with pytest.raises(LineUpError) as refused:
        with_chat().remove("chat", "stopped")
    assert refused.value.code is ErrorCode.LIFECYCLE_DENIED


def test_a_closed_instance_cannot_be_brought_forward() -> None:
    stack = with_chat()
    stack.add("a", foreground=True)
    stack.ready("a")
    stack.remove("a", "stopped")
    with pytest.raises(LineUpError) as refused:
        stack.bring_forward("a")
    assert refused.value.code is ErrorCode.APP_INSTANCE_NOT_FOUND


def test_after_a_restart_starting_and_stopping_instances_come_back_suspended() -> None:
    stack = FocusStack()
    changes = stack.recover(
        {"chat": "background", "a": "starting", "b": "stopping", "c": "stopped"},
        ["chat", "a", "b"],
    )
    assert changes == {"a": "suspended", "b": "suspended"}
    assert stack.states["c"] == "stopped"
    assert "c" not in stack.order


def test_a_suspended_instance_keeps_its_place_but_not_the_front_until_it_is_resumed() -> None:
    stack = with_chat()
    stack.add("td-1", foreground=True)
    stack.ready("td-1")
    assert stack.suspend("td-1") == {"td-1": "suspended", "chat": "foreground"}
    assert stack.order == ["chat", "td-1"]
    # Bringing it forward without its process changes nothing that the Shell would show.
    assert stack.bring_forward("td-1") == {}
    assert stack.states == {"chat": "foreground", "td-1": "suspended"}

    assert stack.resume("td-1", foreground=True) == {"td-1": "foreground", "chat": "background"}
    assert stack.top == "td-1"


def test_a_suspended_instance_resumed_for_a_call_comes_back_behind_the_front() -> None:
    stack = with_chat()
    for name in ("a", "b"):
        stack.add(name, foreground=True)
        stack.ready(name)
    stack.suspend("a")
    assert stack.resume("a", foreground=False) == {"a": "background"}
    assert stack.order == ["chat", "a", "b"]
    assert stack.states["b"] == "foreground"

    stack.suspend("b")  # now the top is suspended and `a` is in front
    assert stack.resume("b", foreground=False) == {"b": "background"}
    assert stack.order == ["chat", "b", "a"]
    assert stack.states["a"] == "foreground"


def test_a_suspended_instance_can_be_closed_and_the_front_stays() -> None:
    stack = with_chat()
    stack.add("a", foreground=True)
    stack.ready("a")
    stack.suspend("a")
    assert stack.remove("a", "stopped") == {"a": "stopped"}
    assert stack.states == {"chat": "foreground", "a": "stopped"}


@pytest.mark.parametrize(
    ("current", "target"),
    [
        ("stopped", "foreground"),
        ("failed", "background"),
        ("stopping", "foreground"),
        ("foreground", "starting"),
        ("suspended", "stopped"),
    ],
)
def test_illegal_instance_transitions_are_refused(current: str, target: str) -> None:
    with pytest.raises(LineUpError) as refused:
        transition(current, target)
    assert refused.value.code is ErrorCode.LIFECYCLE_DENIED


operations = st.lists(
    st.tuples(
        st.sampled_from(
            ["add", "ready", "forward", "back", "close", "fail", "suspend", "resume", "resume_bg"]
        ),
        st.sampled_from(["a", "b", "c"]),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(ops=operations)
def test_whatever_happens_at_most_one_instance_is_in_the_foreground(
    ops: list[tuple[str, str]],
) -> None:
    stack = with_chat()
    for op, name in ops:
        code: ErrorCode | None
        try:
            if op == "add":
                stack.add(name, foreground=True)
            elif op == "ready":
                if stack.states.get(name) == "starting":
                    stack.ready(name)
            elif op == "forward":
                stack.bring_forward(name)
            elif op == "back":
                stack.send_back(name)
            elif op == "suspend":
                if name != "chat":
                    stack.suspend(name)
            elif op in ("resume", "resume_bg"):
                stack.resume(name, foreground=op == "resume")
            else:
                stack.remove(name, "stopped" if op == "close" else "failed")
        except LineUpError as refused:
            code = refused.code
        else:
            code = None
        assert code in (None, ErrorCode.LIFECYCLE_DENIED, ErrorCode.APP_INSTANCE_NOT_FOUND)
        foreground = [i for i, s in stack.states.items() if s == "foreground"]
        assert len(foreground) <= 1
        assert all(stack.states[i] in LIVE for i in stack.order)
        up = [i for i in stack.order if stack.states[i] not in NOT_UP]
        # While an app starts or is suspended, the one below keeps the front.
        assert foreground == up[-1:]
        for state in stack.states.values():
            assert state in TRANSITIONS
    assert stack.states["chat"] in LIVE  # the recovery app never goes away


def test_the_moves_to_write_are_taken_once_each_with_the_state_it_left() -> None:
    stack = FocusStack()
    stack.add("chat", foreground=True)
    stack.ready("chat")
    assert stack.take_moves() == {"chat": (None, "foreground")}
    assert stack.take_moves() == {}
    stack.add("td-1", foreground=True)
    stack.ready("td-1")
    assert stack.take_moves() == {
        "td-1": (None, "foreground"),
        "chat": ("foreground", "background"),
    }


def test_a_move_that_came_back_where_it_started_is_nothing_to_write() -> None:
    stack = with_chat()
    stack.add("td-1", foreground=True)
    stack.ready("td-1")
    stack.take_moves()
    stack.bring_forward("chat")
    stack.bring_forward("td-1")
    assert stack.take_moves() == {}


def test_moves_not_written_are_put_back_oldest_state_first() -> None:
    stack = with_chat()
    stack.take_moves()
    stack.add("td-1", foreground=True)
    taken = stack.take_moves()
    stack.ready("td-1")  # moved again before the first write was retried
    stack.restore_moves(taken)
    assert stack.take_moves() == {
        "td-1": (None, "foreground"),
        "chat": ("foreground", "background"),
    }


def test_an_instance_never_written_is_forgotten_entirely() -> None:
    stack = with_chat()
    stack.take_moves()
    stack.add("td-1", foreground=True)
    stack.forget("td-1")
    assert "td-1" not in stack.states
    assert stack.order == ["chat"]
    assert stack.take_moves() == {}
