"""What the zygote imports before it forks the runtime's children."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path
from typing import Literal

import pytest

from lineup._early import RUNTIME_LANES, RUNTIME_PRELOAD, zygote_argv
from lineup.actors.kernel import Message, load_target
from lineup.supervisor._miniapps import MCP_HOST, MINIAPP_HOST
from lineup.supervisor._runtime import RuntimeOptions, plan_runtime
from lineup.supervisor._spawn import Zygote
from lineup.supervisor._spec import runtime_specs
from lineup.supervisor._zygote import (
    BASE,
    Preload,
    _build,
    _import,
    entries_for,
    lane_preloads,
    unbuilt_messages,
)


def test_the_zygote_preloads_the_module_of_every_runtime_actor() -> None:
    # Actor packages export their actor lazily, so preloading a package alone would load
    # nothing and every child would import its actor after the fork.
    for spec in runtime_specs():
        first_modules = {entry.split()[0] for entry in RUNTIME_PRELOAD}
        assert load_target(spec.target).__module__ in first_modules, spec.name


def test_before_the_first_spawn_the_zygote_imports_its_preload_in_order() -> None:
    preload = Preload(["a", "b"])
    assert preload.idling and preload.next() == "a"
    assert preload.idling and preload.next() == "b"
    assert not preload.idling


def test_while_children_start_a_spawn_imports_its_targets_package_alone() -> None:
    preload = Preload(
        ["lineup.hostbridge._actor", "lineup.actors.store._actor", "lineup.actors.storefront"]
    )
    assert preload.for_spawn("lineup.actors.store:StoreActor") == ["lineup.actors.store._actor"]
    # Nothing else loads meanwhile: a spawn would wait behind an import it does not need.
    assert not preload.idling
    assert preload.for_spawn("lineup.sdk:MiniAppHost") == []
    # Another package's entries wait their turn; a name that only starts alike is no part.
    assert list(preload.pending) == ["lineup.hostbridge._actor", "lineup.actors.storefront"]


def test_the_chats_spawn_on_the_way_to_ready_does_not_wait_for_the_mcp_adapter() -> None:
    """The MCP adapter is preloaded for an MCP app (`lineup.sdk._mcp_host`, ~0.4 s of CPU);
    the chat's spawn (`lineup.sdk:MiniAppHost`) takes the SDK's entries, and once took that
    one too, putting its import on the start's path (start → ready 0.56 s → 1.0 s)."""
    (first, *_) = lane_preloads(RUNTIME_PRELOAD, RUNTIME_LANES)
    wanted = Preload(first).for_spawn(MINIAPP_HOST)
    assert "lineup.sdk" in wanted
    assert not [entry for entry in wanted if "mcp" in entry], wanted
    assert [entry for entry in first if MCP_HOST in entry.split()]


def test_a_restart_after_ready_does_not_stop_the_rest_of_the_preload() -> None:
    preload = Preload(["lineup.hostbridge._actor", "lineup.ops.agent.demo"])
    preload.for_spawn("lineup.actors.store:StoreActor")
    preload.preload_all()
    assert preload.next() == "lineup.hostbridge._actor"
    preload.for_spawn("lineup.actors.router:RouterActor")  # a restart, the tree being ready
    assert preload.idling and preload.next() == "lineup.ops.agent.demo"


def test_the_mcp_adapter_loads_before_an_mcp_apps_fork_and_never_in_an_idle_zygote() -> None:
    """An idle tree runs no MCP app: the adapter and its SDK (26 MiB in the zygote, its own
    memory, shared with no child) wait for the first spawn of an MCP app."""
    (first, *_) = lane_preloads(RUNTIME_PRELOAD, RUNTIME_LANES)
    preload = Preload(first)
    loaded = []
    while preload.idling:  # before the first spawn, and after the tree is ready: the same
        loaded.append(preload.next())
    preload.preload_all()
    assert not preload.idling and preload.done
    assert not [entry for entry in loaded if "mcp" in entry], loaded
    (adapter,) = preload.for_spawn(MCP_HOST)
    assert MCP_HOST in adapter.split()
    assert preload.done and not preload.pending


def test_once_the_tree_is_ready_the_zygote_imports_the_rest_in_order() -> None:
    preload = Preload(["lineup.hostbridge._actor", "lineup.sdk", "lineup.ops.agent.demo"])
    assert preload.for_spawn("lineup.sdk:MiniAppHost") == ["lineup.sdk"]
    preload.preload_all()
    assert [preload.next(), preload.next()] == ["lineup.hostbridge._actor", "lineup.ops.agent.demo"]
    assert not preload.idling


class Deferred(Message):
    """A message no test validates: its validator is built by the zygote's idle time alone."""

    type: Literal["test.zygote.deferred"] = "test.zygote.deferred"
    n: int


def test_once_all_is_imported_the_zygote_builds_each_message_it_has_not_yet() -> None:
    preload = Preload(["lineup.hostbridge._actor"])
    assert not preload.done  # its imports come first
    preload.next()
    assert preload.done
    preload.for_spawn("lineup.sdk:MiniAppHost")
    assert not preload.done  # the start's spawns come first

    assert not Deferred.__pydantic_complete__  # messages defer it to their first use
    unbuilt = list(unbuilt_messages())
    assert Deferred in unbuilt
    for cls in unbuilt:
        _build(cls)
    assert Deferred.__pydantic_complete__
    assert list(unbuilt_messages()) == []
    assert Deferred.model_validate({"n": 1}).n == 1


def test_an_entry_names_what_its_module_imports_on_first_use_and_is_found_by_its_first() -> None:
    entry = "lineup.actors.transport._actor httpcore certifi"
    preload = Preload([entry, "lineup.actors.transporter"])
    assert preload.for_spawn("lineup.actors.transport:TransportActor") == [entry]
    _import("json email.utils")  # each module, in order
    assert {"json", "email.utils"} <= set(sys.modules)


def test_a_preload_entry_that_fails_to_import_leaves_the_zygote_serving(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _import("lineup.no_such_module")  # the child that needs it fails with its own error
    assert "ModuleNotFoundError" in capsys.readouterr().err


def test_a_lane_preloads_its_own_modules_and_the_first_zygote_all_the_others() -> None:
    lane = ("lineup.hostbridge._actor", "extra.two")
    preload = ("extra.one", "trio", "extra.two", "lineup.actors.store._actor", "extra.one")
    first, its = lane_preloads(preload, (lane,))
    assert its == lane
    # Once each, in order, without BASE (already loaded) or what the lane claims: nothing
    # the tree does not name.
    assert first == ("extra.one", "lineup.actors.store._actor")
    assert not set(BASE) & set(first)
    assert lane_preloads(("extra.one",)) == (("extra.one",),)


def test_each_runtime_child_is_forked_by_the_zygote_that_preloads_its_module() -> None:
    zygote = Zygote(RUNTIME_PRELOAD, RUNTIME_LANES)
    modules = lane_preloads(RUNTIME_PRELOAD, RUNTIME_LANES)
    lanes = {}
    for spec in plan_runtime(RuntimeOptions(data_dir=Path("/nonexistent"))).specs:
        lanes[spec.name] = zygote.lane_of(spec.target)
        # It names an entry of the child's package: the spawn imports it, then forks.
        assert entries_for(modules[lanes[spec.name]], spec.target), spec.name
    assert {name for name, lane in lanes.items() if lane == 1} == {"devserver", "hostbridge"}


def test_a_zygote_whose_supervisor_left_before_it_was_ready_exits_quietly() -> None:
    # `lineup run` refusing its data dir exits while its early zygote still imports: the
    # zygote's "ready" then meets a closed socket, which must end it like any later close.
    ours, theirs = socket.socketpair()
    with theirs:
        zygote = subprocess.Popen(
            zygote_argv(theirs.fileno()),
            pass_fds=(theirs.fileno(),),
            stderr=subprocess.PIPE,
            text=True,
        )
    ours.close()  # gone before the zygote could say it is ready
    _, stderr = zygote.communicate(timeout=60)
    assert "Traceback" not in stderr, stderr
    assert zygote.returncode == 0


def test_after_the_base_a_childs_first_validator_imports_nothing() -> None:
    # pydantic looks its plugins up (importlib.metadata, ~25 ms of imports) when it builds its
    # first validator: a child forked after `load_base` must find that done, not pay it again.
    probe = (
        "import sys\n"
        "from lineup.supervisor._zygote import load_base\n"
        "load_base()\n"
        "before = set(sys.modules)\n"
        "from pydantic import BaseModel\n"
        "class Probe(BaseModel):\n"
        "    n: int\n"
        "Probe(n=1)\n"
        "print(sorted(set(sys.modules) - before))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_a_child_whose_streams_are_broken_exits_and_never_serves_as_a_zygote() -> None:
    # A forked child that raised out of `_child` would land in the zygote's loop, which would
    # catch it and go on serving. Its flushes at exit raising (a pipe whose reader left) must
    # not carry it there: it exits with its own code (1 here: its boot is refused).
    probe = (
        "import io, os, socket, sys\n"
        "from lineup.supervisor._zygote import _child\n"
        "class Broken(io.StringIO):\n"
        "    def flush(self):\n"
        "        raise BrokenPipeError(32, 'Broken pipe')\n"
        "control, _peer = socket.socketpair()\n"
        "zygote_side, _supervisor_side = socket.socketpair()\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    try:\n"
        "        sys.stdout, sys.stderr = Broken(), Broken()\n"
        "        _child({'name': 'probe'}, control.fileno(), None, zygote_side, os.getppid())\n"
        "    finally:\n"
        "        os._exit(77)  # back out of _child: where the zygote's loop would take over\n"
        "print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "1", (out.stdout, out.stderr)
