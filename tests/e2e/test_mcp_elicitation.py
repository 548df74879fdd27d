"""An MCP server's `elicitation/create` is a standard interaction the user answers in LineUp
(issue 31), and a LineUp cancellation of a running MCP call reaches its server as
`notifications/cancelled`. Our own server (`tests/support/mcp_server`) run as an MCP app; the
user's answers come as the Shell's frames over its WebSocket (the clicks are
`tests/browser/test_mcp_elicitation_e2e.py`'s). Real processes: the tree, the adapter, the
server."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import trio

from lineup.actors.kernel import ActorKind
from lineup.sdk.manifest import load_manifest, manifest_json
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.runtime import CONVERSATION, Runtime, agent_client, start_runtime
from lineup.tests.support.shell import ShellClient, connect_shell
from lineup.tests.support.tree import attach, audit_rows

from .test_mcp_app import SCOPE, _logged, our_server

RESULT = "lineup.v1.tool.result"
WAIT = 30.0
pytestmark = pytest.mark.timeout(120)

CHOICE_FORM = {
    "type": "object",
    "properties": {
        "color": {
            "type": "string",
            "title": "Colour",
            "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}],
        }
    },
    "required": ["color"],
}
INPUT_FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "maxLength": 40},
        "age": {"type": "integer", "title": "Age", "minimum": 0, "maximum": 150},
        "subscribe": {"type": "boolean", "title": "Subscribe"},  # optional: left out
    },
    "required": ["name"],
}
REQUIRED_BOOLEAN_FORM = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "agree": {"type": "boolean"}},
    "required": ["agree"],
}


@pytest.fixture
def server_entry(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> dict[str, str]:
    return our_server(tmp_path_factory, data_dir)


class Scene:
    def __init__(self, runtime: Runtime, agent: AgentView, revision: str, shell: ShellClient):
        self.runtime, self.agent, self.revision, self.shell = runtime, agent, revision, shell

    async def start(self, call_id: str, tool: str, args: dict[str, Any]) -> None:
        await self.agent.client.call_tool(
            CONVERSATION, f"{SCOPE}.{tool}", args, self.revision, call_id=call_id
        )

    async def result(self, call_id: str) -> Any:
        done = await self.agent.terminal(call_id)
        assert done["type"] == RESULT, done
        return done["payload"]["result"]["result"]

    async def card(self, kind: str) -> dict[str, Any]:
        """The app's open question of `kind`, once the Shell was sent it."""
        with trio.fail_after(WAIT):
            await self.shell.wait_until(lambda shell: _open_card(shell, kind) is not None)
        found = _open_card(self.shell, kind)
        assert found is not None
        return found

    async def answer(self, card: dict[str, Any], answer: dict[str, Any]) -> None:
        frame = {
            "type": "interaction.answer",
            "interaction_id": card["interaction_id"],
            "answer": answer,
        }
        await self.shell.send(frame)


def _open_card(shell: ShellClient, kind: str) -> dict[str, Any] | None:
    views: dict[str, dict[str, Any]] = {}
    for frame in shell.frames:
        if frame.get("type") == "shell.interactions":
            for view in frame["interactions"]:
                views[view["interaction_id"]] = view
    for view in views.values():
        if (
            view["owner_scope"] == SCOPE
            and view["kind"] == kind
            and view["state"] in ("pending", "presented")
        ):
            return view
    return None


async def _scene(
    nursery: trio.Nursery,
    data_dir: Path,
    entry: dict[str, str],
    *,
    deadlines: Mapping[str, int] | None = None,
) -> Scene:
    """The runtime with our server (`entry`, `server_entry`'s); with `deadlines`, those of
    its tools named there (ms), and the server started before the scene is handed over: the
    first call launches the app, whose cold start (a sandboxed adapter, then the server's own
    interpreter) took over three seconds under load, so a short deadline on a first call ran
    out before the server ever saw the call. A test of what a deadline does to a call the
    server holds times the call alone."""
    rt = data_dir / "rt"
    if deadlines:  # the manifest is LineUp's: a tool's deadline is its `timeout_ms`
        path = Path(entry["manifest"])
        manifest = load_manifest(json.loads(path.read_text()))
        shortened = {f"{SCOPE}.{tool}": ms for tool, ms in deadlines.items()}
        tools = tuple(
            t.model_copy(update={"timeout_ms": shortened[t.method]}) if t.method in shortened else t
            for t in manifest.tools
        )
        path.write_text(manifest_json(manifest.model_copy(update={"tools": tools})))
    runtime = await start_runtime(nursery, rt, extra_apps=(entry,), demo_agent=False)
    shell = await connect_shell(nursery, runtime.shell_url)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=40.0)
    scene = Scene(runtime, agent, await agent.revision_with(f"{SCOPE}.ask"), shell)
    if deadlines:
        await scene.start("warm-up", "add", {"a": 1, "b": 1})
        assert await scene.result("warm-up") == 2
    return scene


async def test_an_elicitation_is_a_card_whose_answer_is_the_servers_and_one_none_can_ask_is_not(
    data_dir: Path, server_entry: dict[str, str]
) -> None:
    """The questions a card can ask, then those it cannot: one tree for both (the second
    needs no card open, and the first leaves none)."""
    async with trio.open_nursery() as nursery:
        s = await _scene(nursery, data_dir, server_entry)
        await _an_elicitation_is_a_card_whose_answer_or_cancel_is_the_servers_answer(s)
        await _a_form_no_card_can_ask_is_declined_and_url_mode_is_refused_both_audited(s, nursery)
        nursery.cancel_scope.cancel()


async def _an_elicitation_is_a_card_whose_answer_or_cancel_is_the_servers_answer(
    s: Scene,
) -> None:
    # Form mode only: the capability LineUp declares is what it can do.
    await s.start("caps", "client_elicitation", {})
    assert json.loads(await s.result("caps")) == {"form": {}}

    await s.start("choose", "ask", {"message": "Pick one", "schema": CHOICE_FORM})
    card = await s.card("choice")
    asked = card["request"]
    assert (asked["title"], asked["prompt"]) == ("Our Test Server", "Pick one")  # its name
    assert [a["label"] for a in card["request"]["actions"]] == ["Red", "Green"]
    await s.answer(card, {"action_ids": ["o1"]})
    assert json.loads(await s.result("choose")) == {
        "action": "accept",
        "content": {"color": "g"},
    }

    await s.start("fill", "ask", {"message": "Who?", "schema": INPUT_FORM})
    card = await s.card("input")
    fields = card["request"]["fields"]
    assert [(f["label"], f["type"], f["required"]) for f in fields] == [
        ("Name", "text", True),
        ("Age", "number", False),
    ]
    await s.answer(card, {"values": {"f0": "Ada", "f1": 36}})
    assert json.loads(await s.result("fill")) == {
        "action": "accept",
        "content": {"name": "Ada", "age": 36},
    }

    await s.start("refuse", "ask", {"message": "Who?", "schema": INPUT_FORM})
    card = await s.card("input")
    await s.answer(card, {"cancelled": True})  # the card's Cancel
    assert json.loads(await s.result("refuse")) == {"action": "decline"}
    await s.agent.settle()
    for call_id in ("caps", "choose", "fill", "refuse"):
        assert len(s.agent.of_call(call_id, RESULT, "lineup.v1.tool.error")) == 1


async def _a_form_no_card_can_ask_is_declined_and_url_mode_is_refused_both_audited(
    s: Scene, nursery: trio.Nursery
) -> None:
    await s.start("bool", "ask", {"message": "Agree?", "schema": REQUIRED_BOOLEAN_FORM})
    assert json.loads(await s.result("bool")) == {"action": "decline"}
    await s.start("url", "ask_url", {})
    assert "mcp_elicitation_url_unsupported" in await s.result("url")
    reader = await attach(nursery, s.runtime.supervisor, ActorKind.ROUTER, "reader")
    wanted = {"mcp_elicitation_unsupported", "mcp_elicitation_url_unsupported"}
    rows = await audit_rows(
        reader,
        lambda rows: wanted <= {r.code for r in rows},
        peer=f"miniapp:{SCOPE}",
    )
    assert wanted <= {r.code for r in rows if r.event.startswith("focus.app_reported")}
    assert _open_card(s.shell, "confirm") is None  # nothing was asked of the user


async def test_calls_lineup_ends_are_cancelled_at_their_server_once_and_withdraw_its_question(
    data_dir: Path, server_entry: dict[str, str]
) -> None:
    """Two calls whose deadline passes, one after the other on one tree: one the server is
    running, then one waiting on the question the server asked for it."""
    async with trio.open_nursery() as nursery:
        s = await _scene(nursery, data_dir, server_entry, deadlines={"slow": 3000, "ask": 3000})
        await _a_lineup_cancellation_of_a_running_call_reaches_the_server_once(s, data_dir)
        await _a_call_lineup_ends_withdraws_the_question_its_server_asked_for_it(s)
        nursery.cancel_scope.cancel()


async def _a_lineup_cancellation_of_a_running_call_reaches_the_server_once(
    s: Scene, data_dir: Path
) -> None:
    await s.start("slow-1", "slow", {"steps": 1})
    ended = await s.agent.terminal("slow-1")  # its deadline passed: the runtime ends it
    assert (ended["type"], ended["payload"]["code"]) == (
        "lineup.v1.tool.error",
        "operation_expired",
    )
    # The server heard `notifications/cancelled` for that request, its session still up.
    await _logged(data_dir / "rt" / "logs" / f"{SCOPE}.log", "slow cancelled")
    await s.start("add-after", "add", {"a": 1, "b": 2})
    done = await s.agent.terminal("add-after")
    assert done["payload"]["result"] == {"result": 3}
    await s.agent.settle()
    assert len(s.agent.of_call("slow-1", RESULT, "lineup.v1.tool.error")) == 1
    log = (data_dir / "rt" / "logs" / f"{SCOPE}.log").read_text()
    assert log.count("slow cancelled") == 1
    assert "server starting" in log and log.count("server starting") == 1  # not restarted


def _ended_card(shell: ShellClient, kind: str) -> bool:
    return any(
        view["owner_scope"] == SCOPE and view["kind"] == kind and view["state"] == "cancelled"
        for frame in shell.frames
        if frame.get("type") == "shell.interactions"
        for view in frame["interactions"]
    )


async def _a_call_lineup_ends_withdraws_the_question_its_server_asked_for_it(s: Scene) -> None:
    # A server that does not withdraw its question when its call is cancelled (`hold`).
    await s.start("ask-1", "ask", {"message": "Who?", "schema": INPUT_FORM, "hold": True})
    ended = await s.agent.terminal("ask-1")  # its deadline passed, nobody answered
    assert (ended["type"], ended["payload"]["code"]) == (
        "lineup.v1.tool.error",
        "operation_expired",
    )
    # The card does not outlive its call: the user is not left a question nobody waits for.
    with trio.fail_after(WAIT):
        await s.shell.wait_until(lambda shell: _ended_card(shell, "input"))
    await s.agent.settle()
    assert len(s.agent.of_call("ask-1", RESULT, "lineup.v1.tool.error")) == 1


async def test_a_question_asked_while_two_calls_ran_ends_once_both_have_ended(
    data_dir: Path, server_entry: dict[str, str]
) -> None:
    """Over stdio a question does not say which call asked it: asked while two calls ran, it
    is the app's, for no call. It is still the server's to have answered while one of them
    runs, and it ends once both have ended, not at its ten-minute expiry. About twenty
    seconds by design: the second question ends only when both calls reach their deadlines
    (3 s and 15 s, the second long enough for the first question to be answered under load)."""
    deadlines = {"slow": 3000, "ask": 15000}
    async with trio.open_nursery() as nursery:
        s = await _scene(nursery, data_dir, server_entry, deadlines=deadlines)
        log = data_dir / "rt" / "logs" / f"{SCOPE}.log"

        card = await _asked_beside_a_running_call(s, "1")
        ended = await s.agent.terminal("slow-1")  # the other call ends first
        assert ended["payload"]["code"] == "operation_expired"
        await _logged(log, "slow cancelled")  # the adapter has seen it end
        await s.answer(card, {"values": {"f0": "Ada"}})
        answered = {"action": "accept", "content": {"name": "Ada"}}
        assert json.loads(await s.result("ask-1")) == answered

        card = await _asked_beside_a_running_call(s, "2")
        for call_id in ("slow-2", "ask-2"):  # neither answered: each ends at its deadline
            ended = await s.agent.terminal(call_id)
            assert ended["payload"]["code"] == "operation_expired"
        with trio.fail_after(WAIT):
            await s.shell.wait_until(lambda shell: _state_of(shell, card) == "cancelled")
        await s.agent.settle()
        for call_id in ("slow-1", "ask-1", "slow-2", "ask-2"):
            assert len(s.agent.of_call(call_id, RESULT, "lineup.v1.tool.error")) == 1
        nursery.cancel_scope.cancel()


async def _asked_beside_a_running_call(s: Scene, n: str) -> dict[str, Any]:
    """`slow-n` running at the server, then `ask-n`'s question (one the server never
    withdraws), once its card is open."""
    await s.start(f"slow-{n}", "slow", {"steps": 1})
    await s.agent.pull(
        "lineup.v1.tool.progress", lambda m: m["payload"].get("call_id") == f"slow-{n}"
    )
    await s.start(f"ask-{n}", "ask", {"message": "Who?", "schema": INPUT_FORM, "hold": True})
    return await s.card("input")


def _state_of(shell: ShellClient, card: dict[str, Any]) -> str | None:
    """The latest state the Shell was told of `card`'s interaction."""
    state = None
    for frame in shell.frames:
        if frame.get("type") == "shell.interactions":
            for view in frame["interactions"]:
                if view["interaction_id"] == card["interaction_id"]:
                    state = view["state"]
    return state
