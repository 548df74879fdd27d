"""Interact's mode on the focus stack, without I/O (seed 003 §5.1, seed 004 §4.5; issue 29,
item 5): a switch is one commit whose effect tells the app; the chat comes back in front in
the mode it was in when the app over it closes, and after a recovery from the store. And the
records of seed 000 §6 a commit carries (item 6): conversation, parent, a failure's code."""

from __future__ import annotations

import pytest

from lineup.actors.focus._instances import Born, Instances, PushApps, TellMode
from lineup.actors.kernel import ErrorCode, LineUpError


def chat_and_board(*, board_on_top: bool = True) -> Instances:
    instances = Instances()
    instances.recover((), (), runtime_restarted=True)
    instances.commit()
    instances.launch(
        "board:c1",
        "board",
        foreground=board_on_top,
        call_id="c1",
        conversation_id="conv-1",
        parent_instance_id="chat",
    )
    instances.ready("board:c1")
    instances.commit()
    return instances


def test_a_switch_is_written_with_the_next_commit_and_tells_the_app_once() -> None:
    instances = Instances()
    instances.recover((), (), runtime_restarted=True)
    instances.commit()
    assert instances.set_mode("chat", "audio")
    commit = instances.commit()
    assert dict(commit.modes) == {"chat": "audio"} and not commit.moves
    assert instances.effects(commit) == [TellMode("chat", "chat", "audio", False), PushApps()]
    assert not instances.set_mode("chat", "audio")  # the same mode: nothing to write
    assert not instances.commit().modes


def test_only_a_live_instance_of_an_app_with_modes_has_one_to_switch() -> None:
    instances = chat_and_board()
    with pytest.raises(LineUpError) as no_modes:
        instances.set_mode("board:c1", "video")
    assert no_modes.value.code is ErrorCode.INVALID_ARGUMENTS
    with pytest.raises(LineUpError) as gone:
        instances.set_mode("board:gone", "video")
    assert gone.value.code is ErrorCode.APP_INSTANCE_NOT_FOUND
    assert instances.mode_of("board:c1") is None


def test_the_chat_comes_back_in_front_in_the_mode_it_was_in_when_the_app_over_it_closes() -> None:
    instances = Instances()
    instances.recover((), (), runtime_restarted=True)
    instances.set_mode("chat", "audio")
    instances.commit()
    instances.launch("board:c1", "board", foreground=True, call_id="c1")
    instances.ready("board:c1")
    opened = instances.commit()
    assert instances.state_of("chat") == "background"
    assert not any(isinstance(e, TellMode) for e in instances.effects(opened))

    instances.remove("board:c1", "stopped")
    closed = instances.commit()
    assert instances.front() == "chat" and instances.mode_of("chat") == "audio"
    assert TellMode("chat", "chat", "audio", True) in instances.effects(closed)
    _, listed = instances.listing()
    assert ("chat", "chat", "foreground") in listed


def test_a_recovery_keeps_the_mode_the_store_has() -> None:
    instances = Instances()
    instances.recover(
        [("chat", "chat", "foreground"), ("board:c1", "board", "background")],
        ["chat", "board:c1"],
        runtime_restarted=True,
        modes={"chat": "video"},
        parents={"board:c1": "chat"},
    )
    assert instances.mode_of("chat") == "video"
    assert instances.parent_of("board:c1") == "chat"
    assert instances.commit().born is None  # the chat was live: not born again


def test_a_switch_not_written_goes_with_the_next_commit() -> None:
    instances = Instances()
    instances.recover((), (), runtime_restarted=True)
    instances.commit()
    instances.set_mode("chat", "video")
    lost = instances.commit()
    instances.rewind(lost)
    assert dict(instances.commit().modes) == {"chat": "video"}


def test_a_launch_keeps_its_conversation_and_parent_and_a_failure_its_code() -> None:
    instances = Instances()
    instances.recover((), (), runtime_restarted=True)
    instances.commit()
    instances.launch(
        "board:c1",
        "board",
        foreground=True,
        call_id="c1",
        conversation_id="conv-1",
        parent_instance_id="chat",
    )
    commit = instances.commit()
    assert commit.born == Born("board:c1", "board", "c1", "conv-1", "chat", None)
    instances.remove("board:c1", "failed", error="activation_failed")
    assert dict(instances.commit().errors) == {"board:c1": "activation_failed"}
