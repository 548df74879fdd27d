"""The real runtime tree: every actor boots, answers health, and comes back after a SIGKILL."""

from __future__ import annotations

from pathlib import Path

import trio

from lineup.actors.kernel import ActorKind, HealthReply, HealthRequest
from lineup.supervisor import runtime_specs
from lineup.tests.support.process import wait_pid_gone
from lineup.tests.support.runtime import start_runtime
from lineup.tests.support.tree import attach, start_tree, until_answered

ACTORS = [spec.name for spec in runtime_specs()]


async def test_each_actor_killed_in_turn_is_restarted_alone_and_answers_health(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """One tree, each actor SIGKILLed in turn: the victim alone comes back (a new pid, the next
    incarnation), every other keeps its pid, and the restart counts name the victims so far.
    One tree for all the victims, not one each: that a restart leaves the other children as
    they were is the claim, checked after every kill."""
    supervisor = await start_tree(nursery, runtime_specs(), data_dir)
    # A runtime actor may ask any *other* runtime actor for health: two probes cover all six,
    # each through channels the supervisor introduces (and introduces again after the restart).
    as_router = await attach(nursery, supervisor, ActorKind.ROUTER, "probe-r")
    as_focus = await attach(nursery, supervisor, ActorKind.FOCUS, "probe-f")

    async def health(name: str) -> HealthReply:
        bus = as_focus if name == "router" else as_router
        return await until_answered(lambda: bus.request(name, HealthRequest(), expect=HealthReply))

    killed: list[str] = []
    for victim in ACTORS:
        before = {name: await health(name) for name in ACTORS}
        supervisor.kill(victim)
        await wait_pid_gone(before[victim].pid)
        killed.append(victim)
        after = {name: await health(name) for name in ACTORS}
        assert after[victim].pid != before[victim].pid, victim
        assert after[victim].incarnation == before[victim].incarnation + 1, victim
        for name in ACTORS:
            if name != victim:
                assert after[name].pid == before[name].pid, (victim, name)
        restarts = [c.restarts for c in supervisor.status().children]
        assert restarts == [int(name in killed) for name in ACTORS], victim


async def test_with_its_own_appserver_the_tree_is_ready_once_the_transport_has_a_session(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    # Ready before the transport's first login, a message sent at once found no AppServer
    # session and was refused (`not_connected`): the tree waits for the login's answer.
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    link = runtime.supervisor.status().runtime
    assert link is not None
    assert link.state not in {"created", "restoring", "authenticating"}
