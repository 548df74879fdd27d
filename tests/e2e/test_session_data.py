"""Session data through the real runtime: it belongs to a live instance, and an instance that
has ended has none to read or write (seed 004 §6.3)."""

from __future__ import annotations

from pathlib import Path

import trio

from lineup.actors.focus.messages import InstanceReply, UiIntentRequest
from lineup.actors.kernel import ActorKind, ErrorCode
from lineup.tests.e2e.test_im_link import texts
from lineup.tests.support.runtime import (
    CONVERSATION,
    Runtime,
    shell_and_agent,
    start_runtime_with_app,
)
from lineup.tests.support.strict_json_app import StrictJson
from lineup.tests.support.tree import attach, audit_rows

from .test_tools import runtime_with_probe

WAIT = 20.0


async def test_the_session_data_of_an_ended_instance_is_not_found_for_get_subscribe_or_replace(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await runtime_with_probe(nursery, data_dir)
    shell, agent, revision = await shell_and_agent(nursery, runtime)

    async def run(call_id: str, **arguments: str) -> None:
        await agent.client.call_tool(
            CONVERSATION, "probe.run", arguments, revision, call_id=call_id
        )
        await agent.terminal(call_id)

    await run("p-first", mode="ok")
    first = "probe:p-first"
    ui = await attach(nursery, runtime.supervisor, ActorKind.HOSTBRIDGE, "probe-ui")
    closed = await ui.request(
        "focus", UiIntentRequest(intent="close", instance_id=first), expect=InstanceReply
    )
    assert closed.state == "stopped"

    # The same app, from a live instance of its own, names the one that ended.
    await run("p-late", mode="session_of", other_id=first)
    missing = ErrorCode.APP_INSTANCE_NOT_FOUND.value
    with trio.fail_after(WAIT):
        await shell.wait_until(
            lambda sh: any(
                v.get("call_id") == "p-late" and v.get("codes") for v in sh.views.values()
            )
        )
    codes = next(v["codes"] for v in shell.views.values() if v.get("call_id") == "p-late")
    assert codes == [missing, missing, missing, "ok"]  # and its own call still completes


async def test_a_live_instance_reads_and_writes_its_own_session_data(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """The refusal above is about ending, not about naming: the same requests for a live
    instance of the app are answered."""
    runtime = await runtime_with_probe(nursery, data_dir)
    shell, agent, revision = await shell_and_agent(nursery, runtime)
    await agent.client.call_tool(
        CONVERSATION, "probe.run", {"mode": "ok"}, revision, call_id="p-open"
    )
    await agent.terminal("p-open")
    await agent.client.call_tool(
        CONVERSATION,
        "probe.run",
        {"mode": "session_of", "other_id": "probe:p-open"},
        revision,
        call_id="p-peer",
    )
    await agent.terminal("p-peer")
    with trio.fail_after(WAIT):
        await shell.wait_until(
            lambda sh: any(
                v.get("call_id") == "p-peer" and v.get("codes") for v in sh.views.values()
            )
        )
    codes = next(v["codes"] for v in shell.views.values() if v.get("call_id") == "p-peer")
    assert codes == ["ok", "ok", "ok", "ok"]


async def runtime_with_strict_app(nursery: trio.Nursery, data_dir: Path) -> Runtime:
    return await start_runtime_with_app(nursery, data_dir, StrictJson, title="Strict")


async def test_session_data_with_nan_infinity_or_a_lone_surrogate_is_refused_never_stored_as_null(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await runtime_with_strict_app(nursery, data_dir)
    shell, agent, revision = await shell_and_agent(nursery, runtime)
    await agent.client.call_tool(
        CONVERSATION, "strict.run", {"mode": "session"}, revision, call_id="s-1"
    )
    await agent.terminal("s-1")
    with trio.fail_after(WAIT):
        await shell.wait_until(
            lambda sh: any(v.get("call_id") == "s-1" and v.get("codes") for v in sh.views.values())
        )
    view = next(v for v in shell.views.values() if v.get("call_id") == "s-1")
    refused = ErrorCode.INVALID_ARGUMENTS.value
    assert view["codes"] == ["ok", refused, refused, refused]
    assert view["current"] == [{"n": 1}, 1]  # the strict write stands; nothing became null


async def test_a_raw_bus_frame_with_nan_is_frame_malformed_and_the_runtime_serves_on(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await runtime_with_strict_app(nursery, data_dir)
    shell, agent, revision = await shell_and_agent(nursery, runtime)
    await agent.client.call_tool(
        CONVERSATION, "strict.run", {"mode": "raw_frame"}, revision, call_id="s-raw"
    )
    auditor = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "auditor")
    rows = await audit_rows(
        auditor,
        lambda rows: any(r.event == "bus.frame_malformed" for r in rows),
        event_prefix="bus.frame_malformed",
    )
    assert {(r.peer, r.code) for r in rows} == {("miniapp:strict", "frame_malformed")}
    # The runtime itself is untouched: the chat answers, no actor restarted.
    await agent.client.say(CONVERSATION, "still here", idempotency_key="still-1")
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda sh: texts(sh, "agent") == ["still here"])
    children = runtime.supervisor.children
    assert {c.restarts for name, c in children.items() if not name.startswith("miniapp:")} == {0}
