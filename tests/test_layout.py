"""The layout keeps protocols light: importing an actor's `messages` loads no actor (DESIGN §2).

Each check runs in a fresh interpreter, since this one has long since imported everything.
"""

from __future__ import annotations

import pytest

from lineup.tests.support.process import modules_after

PROTOCOLS = (
    "lineup.actors.store.messages",
    "lineup.actors.transport.messages",
    "lineup.actors.router.messages",
    "lineup.actors.focus.messages",
    "lineup.actors.gateway.messages",
    "lineup.hostbridge.messages",
    "lineup.hostbridge.shell_protocol",
)
# What only an actor needs: the database, the HTTP stack, and the actors themselves.
HEAVY_PACKAGES = ("apsw", "hypercorn", "starlette", "httpx", "markdown_it")
ACTOR_MODULES = (
    "lineup.actors.store._actor",
    "lineup.actors.transport._actor",
    "lineup.actors.router._actor",
    "lineup.actors.focus._actor",
    "lineup.actors.gateway._actor",
    "lineup.hostbridge._actor",
    "lineup.hostbridge._server",
)


def heavy(modules: set[str]) -> set[str]:
    return {
        name
        for name in modules
        if name.partition(".")[0] in HEAVY_PACKAGES
        or name in ACTOR_MODULES
        or name.endswith("._actor")
    }


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_importing_a_protocol_module_loads_no_actor_and_no_heavy_dependency(
    protocol: str,
) -> None:
    loaded = modules_after(f"import {protocol}")
    assert protocol in loaded
    assert heavy(loaded) == set()


def test_an_actor_package_still_exports_its_actor_on_first_use() -> None:
    # The other side of the lazy export, and proof that the check above can see a load.
    loaded = modules_after(
        "import lineup.actors.store as store\n"
        "assert 'lineup.actors.store._actor' not in sys.modules\n"
        "assert store.StoreActor.__name__ == 'StoreActor'"
    )
    assert {"apsw", "lineup.actors.store._actor"} <= heavy(loaded)


def test_an_actor_package_refuses_a_name_it_does_not_export() -> None:
    from lineup.actors import focus

    with pytest.raises(AttributeError):
        focus.NoSuchActor  # noqa: B018


def test_the_supervisors_cli_loads_no_sdk_and_builds_no_message() -> None:
    # `lineup run` waits for these imports before it starts a child: the SDK (an author's
    # package, ~0.1 s) is none of the supervisor's business, and a message's validator is built
    # on its first use (or by a zygote with nothing else to do), never by an import.
    loaded = modules_after(
        "import lineup.supervisor.cli\n"
        "from lineup.actors.kernel.messages import REGISTRY\n"
        "assert not [t for t, c in REGISTRY.items() if c.__pydantic_complete__], 'built'"
    )
    assert "lineup.supervisor.cli" in loaded
    assert {m for m in loaded if m == "lineup.sdk" or m.startswith("lineup.sdk.")} == set()


def test_the_wire_and_the_reference_appserver_load_no_http_client() -> None:
    # The AppServer's actor serves HTTP; a client is the senders' alone, who import
    # `lineup.wire.client`.
    loaded = modules_after("import lineup.wire\nimport lineup.ops.devserver.actor")
    assert "lineup.ops.devserver.actor" in loaded
    assert "lineup.wire.client" not in loaded
    assert {m for m in loaded if m.partition(".")[0] == "httpx"} == set()


def test_no_process_of_the_runtime_loads_httpx() -> None:
    # httpx with httpcore and h2 cost each process that talked to an AppServer ~60 ms, on the
    # start's critical path; the runtime's clients speak HTTP/1.1 with `lineup.wire.client`.
    # (The drill's proxy and the bench, which are no part of the runtime, still use httpx.)
    loaded = modules_after(
        "import importlib\n"
        "from lineup._early import RUNTIME_PRELOAD\n"
        "for entry in RUNTIME_PRELOAD:\n"
        "    for module in entry.split():\n"
        "        importlib.import_module(module.partition(':')[0])\n"
    )
    assert {"lineup.actors.transport._actor", "lineup.ops.agent.demo"} <= loaded
    assert {"lineup.wire.client", "lineup.actors.focus._registry"} <= loaded
    assert {m for m in loaded if m.partition(".")[0] in ("httpx", "httpcore")} == set()


def test_httpx_comes_without_its_command_line_client() -> None:
    # httpx loads its CLI (click, pygments, rich: ~0.1 s) whenever they are installed, as the
    # dev tools install them; no process of LineUp runs it.
    loaded = modules_after("import lineup\nimport httpx\nassert httpx.AsyncClient")
    assert "httpx" in loaded
    assert {m.partition(".")[0] for m in loaded} & {"click", "rich", "pygments"} == set()


def test_a_supervisor_starts_the_whole_runtime_without_any_actors_protocol() -> None:
    # Not its imports alone: what it loads while it starts and runs the tree, up to ready and
    # through its stop (the phases it tells the hostbridge are kernel messages). Each actor's
    # protocol, the SDK's with the hostbridge's, cost the supervisor ~0.1 s of CPU at the very
    # time the zygotes need both cores for the children's modules.
    loaded = modules_after(
        "import tempfile, pathlib, trio\n"
        "from lineup.supervisor import Supervisor\n"
        "from lineup.supervisor._runtime import LANES, PRELOAD, RuntimeOptions, plan_runtime\n"
        "async def main(data_dir):\n"
        "    plan = plan_runtime(RuntimeOptions(data_dir=data_dir))\n"
        "    supervisor = Supervisor(plan.specs, data_dir=data_dir, preload=PRELOAD,\n"
        "                            lanes=LANES, link_wait=plan.link_wait)\n"
        "    async with trio.open_nursery() as nursery:\n"
        "        await nursery.start(supervisor.run)\n"
        "        assert supervisor.state == 'running'\n"
        "        nursery.cancel_scope.cancel()\n"
        "with tempfile.TemporaryDirectory() as tmp:\n"
        "    trio.run(main, pathlib.Path(tmp))\n"
    )
    assert "lineup.supervisor._tree" in loaded
    protocols = {
        m
        for m in loaded
        if m.startswith(("lineup.sdk", "lineup.hostbridge.", "lineup.wire"))
        or (m.startswith("lineup.actors.") and m.endswith("messages") and ".kernel." not in m)
    }
    assert protocols == set()


def test_the_facts_load_no_io_no_trio_and_no_actor() -> None:
    """Every process reads the facts (the states and tables of every machine), a MiniApp's
    too: importing them loads the kernel's errors and nothing that opens, sends or waits."""
    facts = (
        "interactions",
        "tool_calls",
        "outbox",
        "instances",
        "operations",
        "views",
        "limits",
        "scopes",
        "artifacts",
        "view_log",
    )
    loaded = modules_after("\n".join(f"import lineup.facts.{name}" for name in facts))
    assert {f"lineup.facts.{name}" for name in facts} <= loaded
    assert {"trio", "socket", "apsw", "pydantic", "lineup.actors.kernel.bus"} & loaded == set()
    assert {m for m in loaded if m.startswith("lineup.")} == {
        "lineup._lazy",
        "lineup.actors",
        "lineup.actors.kernel",
        "lineup.actors.kernel.errors",
        "lineup.facts",
        "lineup.facts.errors",
        *(f"lineup.facts.{name}" for name in facts),
    }


def test_the_hostbridges_protocol_loads_one_area_of_the_stores() -> None:
    # It names `AppSessionState`: the store's other ~180 classes stay unloaded (the bus finds
    # them when one arrives: tests/actors/kernel/test_messages.py).
    loaded = modules_after("import lineup.hostbridge.messages")
    store = {name for name in loaded if name.startswith("lineup.actors.store.")}
    assert "lineup.actors.store.app_sessions.messages" in store
    assert "lineup.actors.store.instances.messages" not in store
    assert "lineup.actors.store.apps.messages" not in store


def test_every_name_the_stores_protocol_exports_has_an_area_that_defines_it() -> None:
    from lineup.actors.store import messages

    eager = {"FINAL_INTERACTION_STATES", "FINAL_TOOL_CALL_STATES"}
    assert set(messages.__all__) == set(messages._HOMES) | eager
    for name in messages.__all__:
        assert getattr(messages, name) is not None, name
