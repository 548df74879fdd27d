"""Focus's instances without I/O: each change is taken as one commit, and a written commit says
what it does (`Instances.effects`), which the actor then carries out."""

from __future__ import annotations

import pytest

from lineup.actors.focus._instances import (
    Announce,
    Born,
    Commit,
    Instances,
    PushApps,
    RefreshView,
)
from lineup.actors.kernel import ErrorCode, LineUpError


def fresh() -> Instances:
    """A runtime's first start on an empty store: the chat is born, up, in front."""
    instances = Instances()
    instances.recover((), (), runtime_restarted=True)
    return instances


def launched(instances: Instances, instance_id: str, *, foreground: bool = True) -> Commit:
    scope, _, call_id = instance_id.partition(":")
    instances.launch(instance_id, scope, foreground=foreground, call_id=call_id)
    return instances.commit()


def test_the_first_start_gives_birth_to_the_chat_up_in_one_commit() -> None:
    instances = Instances()
    instances.recover((), (), runtime_restarted=True)
    commit = instances.commit()
    assert commit.born == Born("chat", "chat", mode="im")
    assert commit.moves == {"chat": (None, "foreground")}
    assert commit.stack == ("chat",)
    # Born up (the machine's birth in a live state): no start to announce, only the list.
    assert instances.effects(commit) == [PushApps()]
    assert instances.commit() == Commit(born=None, moves={}, stack=("chat",))


def test_a_launch_is_born_starting_then_ready_takes_the_front() -> None:
    instances = fresh()
    instances.commit()
    born = launched(instances, "board:c1")
    assert born.born == Born("board:c1", "board", "c1")
    assert born.moves == {"board:c1": (None, "starting")}
    assert instances.effects(born) == [Announce("board:c1", "board", "started"), PushApps()]

    instances.ready("board:c1")
    up = instances.commit()
    assert up.moves == {
        "board:c1": ("starting", "foreground"),
        "chat": ("foreground", "background"),
    }
    assert instances.effects(up) == [Announce("board:c1", "board", "ready"), PushApps()]
    assert instances.front() == "board:c1"
    assert instances.listing() == (
        "board:c1",
        [("chat", "chat", "background"), ("board:c1", "board", "foreground")],
    )


def test_a_commit_not_written_goes_with_the_next_one() -> None:
    instances = fresh()
    instances.commit()
    lost = launched(instances, "board:c1")
    instances.rewind(lost)  # the store did not take it
    instances.bring_forward("chat")
    commit = instances.commit()
    assert commit.born == Born("board:c1", "board", "c1")
    assert commit.moves == {"board:c1": (None, "starting")}
    assert commit.stack == ("board:c1", "chat")
    assert instances.effects(commit) == [Announce("board:c1", "board", "started"), PushApps()]


def test_a_forgotten_launch_exists_nowhere() -> None:
    instances = fresh()
    instances.commit()
    instances.launch("board:c1", "board", foreground=True, call_id="c1")
    instances.forget("board:c1")
    assert instances.scope_of("board:c1") is None
    assert not instances.is_live("board:c1")
    assert instances.commit() == Commit(born=None, moves={}, stack=("chat",))


def test_a_live_instance_cannot_be_launched_twice() -> None:
    instances = fresh()
    launched(instances, "board:c1")
    with pytest.raises(LineUpError) as refused:
        instances.launch("board:c1", "board", foreground=True, call_id="c1")
    assert refused.value.code is ErrorCode.LIFECYCLE_DENIED


def test_after_a_runtime_restart_app_instances_are_suspended_and_a_resume_asks_for_the_view() -> (
    None
):
    rows = [("chat", "chat", "background"), ("board:c1", "board", "foreground")]
    instances = Instances()
    instances.recover(rows, ["chat", "board:c1"], runtime_restarted=True)
    commit = instances.commit()
    assert commit.born is None  # the chat was live: not born again
    assert commit.moves == {
        "board:c1": ("foreground", "suspended"),
        "chat": ("background", "foreground"),
    }
    assert instances.effects(commit) == [PushApps()]
    assert instances.running("board") == []
    assert instances.shown() == {"chat"}
    assert instances.topmost("board") == "board:c1"  # live, though it has no process

    instances.resume("board:c1", foreground=True)
    resumed = instances.effects(instances.commit())
    assert resumed == [
        Announce("board:c1", "board", "ready"),
        RefreshView("board", "board:c1"),
        PushApps(),
    ]


def test_a_focus_restarted_alone_keeps_the_app_instances_up() -> None:
    rows = [("chat", "chat", "background"), ("board:c1", "board", "foreground")]
    instances = Instances()
    instances.recover(rows, ["chat", "board:c1"], runtime_restarted=False)
    assert instances.commit().moves == {}
    assert instances.running("board") == ["board:c1"]
    assert instances.scopes_up() == ["board", "chat"]


def test_an_ended_chat_is_born_again_at_the_bottom() -> None:
    rows = [("chat", "chat", "failed"), ("board:c1", "board", "background")]
    instances = Instances()
    instances.recover(rows, ["board:c1"], runtime_restarted=False)
    commit = instances.commit()
    assert commit.born == Born("chat", "chat", mode="im")
    assert commit.stack == ("chat", "board:c1")
    assert instances.front() == "board:c1"


def test_removing_the_front_gives_it_back_and_announces_the_end() -> None:
    instances = fresh()
    for call in ("c1", "c2"):
        launched(instances, f"board:{call}")
        instances.ready(f"board:{call}")
    instances.commit()
    assert instances.running("board") == ["board:c2", "board:c1"]
    instances.remove("board:c2", "failed")
    commit = instances.commit()
    assert instances.effects(commit) == [
        Announce("board:c2", "board", "failed"),
        PushApps(),
    ]
    assert instances.front() == "board:c1"
    assert instances.live_of("board") == ["board:c1"]
    assert instances.live_scope("board:c2") is None
    assert instances.scope_of("board:c2") == "board"  # known, for a late request's refusal


def test_an_apps_opens_are_counted_by_their_mark_among_live_instances() -> None:
    instances = fresh()
    for n in range(3):
        launched(instances, f"board:nav-probe-{n}")
    launched(instances, "board:call-1")
    launched(instances, "probe:nav-board-0")
    assert instances.count_live(marked="nav-probe-") == 3
    assert instances.count_live() == 6  # the chat included
    instances.remove("board:nav-probe-0", "stopped")
    assert instances.count_live(marked="nav-probe-") == 2
