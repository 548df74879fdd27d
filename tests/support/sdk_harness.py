"""Two harnesses for one suite of the SDK's behaviour (`tests/sdk/behaviour/`), as httpx's mock
transport and trio's stream checks are held to the real thing: the testkit's `FakeRuntime`, and
a real runtime — real processes, a real store, the app as a dev app in its sandboxed process,
driven by the Agent through the real AppServer, its interactions answered as the hostbridge
would. A check written once against `Harness` expects the same observable outcome from both, so
the fake cannot drift from the runtime unseen.

The real runtime is started once per test module (`RealRuntime`), not once per test. A trio loop
lives as long as one test, so the runtime gets a loop of its own, in a thread, and each step of a
test runs there (`RealRuntime.run`). The shared zygote is started from the main thread first: a
zygote dies with the thread that started it (PR_SET_PDEATHSIG follows the parent thread).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import trio

from lineup.sdk import LineUpError, testkit
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.behaviour_app import SCOPE, Behave
from lineup.tests.support.interactions import Scene, scene_on
from lineup.tests.support.runtime import (
    AGENT_ID,
    CONVERSATION,
    shared_zygote,
    start_runtime_with_app,
)
from lineup.tests.support.shell import ShellClient, connect_shell, tree_text

T = TypeVar("T")
View = dict[str, Any]
WAIT = 20.0  # one step of a check, in the real runtime (each wait of the step)
STEP_WAIT = WAIT + 5.0  # the whole step, from the test's loop: its own waits fail first
START_WAIT = 45.0  # the real runtime's start or stop: within the first test's timeout
RESULT = "lineup.v1.tool.result"
PROGRESS = "lineup.v1.tool.progress"


@dataclass(frozen=True)
class Outcome:
    """A call's end as the Agent learns it: its result, or its error code; and the progress
    it was sent before."""

    result: dict[str, Any] | None = None
    code: str | None = None
    progress: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Answered:
    """The runtime's word on the user's answer to an interaction."""

    changed: bool
    state: str
    result: dict[str, Any] | None


class Harness(Protocol):
    """What a behaviour check drives: the Agent's calls, the user's view and answers."""

    name: str

    async def call(self, tool: str, arguments: dict[str, Any], call_id: str) -> Outcome:
        """The Agent calls `tool` (of the behaviour app); returns once the call has ended."""
        ...

    async def view(self, instance_id: str, until: Callable[[View], bool]) -> View:
        """The instance's newest view as the user is shown it, once `until(view)` holds."""
        ...

    async def answer(self, interaction_id: str, answer: dict[str, Any]) -> Answered:
        """The user answers; raises `LineUpError` as the runtime refuses the answer."""
        ...

    async def deliver(self, texts: list[tuple[str, str | None]]) -> None:
        """The Agent sends the behaviour app a text `(message id, instance id or None)` each;
        returns once the runtime holds them in the app's inboxes."""
        ...


def text_for_app(message_id: str, instance_id: str | None) -> dict[str, Any]:
    """An Agent's text for the behaviour app (`instance_id`, or the app as a whole)."""
    return {
        "v": 1,
        "id": message_id,
        "type": "lineup.v1.text",
        "conversation_id": CONVERSATION,
        "app_scope": SCOPE,
        "instance_id": instance_id,
        "sender": {"kind": "agent", "id": AGENT_ID},
        "payload": {"markdown": message_id},
    }


class FakeHarness:
    """The behaviour app on the testkit's `FakeRuntime`, started on the first call. Each call
    is for an instance of its own, named after the call, as a launch opens one in the
    runtime (the fake's one instance is the app's first)."""

    name = "fake"

    def __init__(self) -> None:
        self.app = Behave()
        self._runtime: testkit.FakeRuntime | None = None

    async def runtime(self) -> testkit.FakeRuntime:
        if self._runtime is None:
            self._runtime = await testkit.start(self.app)
        return self._runtime

    async def call(self, tool: str, arguments: dict[str, Any], call_id: str) -> Outcome:
        runtime = await self.runtime()
        runtime.instance_id = f"{SCOPE}:{call_id}"
        runtime.instances.add(runtime.instance_id)
        try:
            record = await testkit.call_tool(self.app, tool, arguments, call_id=call_id)
        except LineUpError as exc:  # refused before any app saw it
            return Outcome(code=exc.code.value)
        assert record.final, f"{call_id} still running"
        code = record.error_code or record.cancelled_reason
        return Outcome(record.result, code, tuple(record.progress))

    async def view(self, instance_id: str, until: Callable[[View], bool]) -> View:
        runtime = await self.runtime()
        await runtime.settle()
        views = [view for shown, view in runtime.ui.renders if shown == instance_id]
        assert views, f"no view of {instance_id}"
        assert until(views[-1]), views[-1]
        return views[-1]

    async def answer(self, interaction_id: str, answer: dict[str, Any]) -> Answered:
        runtime = await self.runtime()
        before = runtime.interactions.records[interaction_id]
        after = runtime.interactions.answer(interaction_id, answer)
        await runtime.settle()
        return Answered(after is not before, after.state, after.result)

    async def deliver(self, texts: list[tuple[str, str | None]]) -> None:
        runtime = await self.runtime()
        for message_id, instance_id in texts:  # named after the envelope, as the router does
            envelope = text_for_app(message_id, instance_id)
            runtime.inbox.put(envelope, message_id, instance_id=instance_id)


class RealRuntime:
    """The runtime with the behaviour app as a dev app, a Shell on it, the Agent logged in and a
    peer of the hostbridge's kind, all in a trio loop of their own (a thread) for a module's
    tests. `start` returns once all are ready; `stop` ends them."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.scene: Scene | None = None
        self.shell: ShellClient | None = None
        self._ready = threading.Event()
        self._failed: BaseException | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="real-runtime", daemon=True)

    def start(self) -> None:
        trio.run(shared_zygote().start)  # from this thread: see the module's docstring
        self._thread.start()
        if not self._ready.wait(START_WAIT):
            raise TimeoutError("the real runtime did not start")
        if self._failed is not None:
            raise RuntimeError("the real runtime did not start") from self._failed

    def stop(self) -> None:
        """End the runtime; raises if it failed while the tests ran."""
        if self._token is not None and self._stop is not None:
            with contextlib.suppress(trio.RunFinishedError):  # it ended on its own
                trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
        self._thread.join(START_WAIT)
        assert not self._thread.is_alive(), "the real runtime did not stop"
        if self._failed is not None:
            raise RuntimeError("the real runtime failed") from self._failed

    async def run(self, step: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run `step(*args)` in the runtime's loop, from a test's own; bounded by `STEP_WAIT`."""
        assert self._token is not None
        inner = functools.partial(trio.from_thread.run, step, *args, trio_token=self._token)
        with trio.fail_after(STEP_WAIT):
            return await trio.to_thread.run_sync(inner, abandon_on_cancel=True)

    def _run(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as exc:  # reported by `start`, or by the tests' failures
            self._failed = exc
        finally:
            self._ready.set()

    async def _main(self) -> None:
        async with trio.open_nursery() as nursery:
            runtime = await start_runtime_with_app(nursery, self.data_dir, Behave, title="Behave")
            self.scene = await scene_on(nursery, runtime)
            self.shell = await connect_shell(nursery, runtime.shell_url)
            self._token = trio.lowlevel.current_trio_token()
            self._stop = trio.Event()
            self._ready.set()
            await self._stop.wait()
            nursery.cancel_scope.cancel()


class RealHarness:
    """The checks' steps, carried out in a `RealRuntime`."""

    name = "real"

    def __init__(self, runtime: RealRuntime) -> None:
        self.runtime = runtime

    @property
    def _scene(self) -> Scene:
        assert self.runtime.scene is not None
        return self.runtime.scene

    async def call(self, tool: str, arguments: dict[str, Any], call_id: str) -> Outcome:
        return await self.runtime.run(self._call, tool, arguments, call_id)

    async def _call(self, tool: str, arguments: dict[str, Any], call_id: str) -> Outcome:
        agent: AgentView = self._scene.agent
        await agent.client.call_tool(
            CONVERSATION, tool, arguments, self._scene.revision, call_id=call_id
        )
        final = await agent.terminal(call_id)
        payload = final["payload"]
        progress = tuple(m["payload"]["progress"] for m in agent.of_call(call_id, PROGRESS))
        if final["type"] == RESULT:
            return Outcome(result=payload["result"], progress=progress)
        return Outcome(code=payload["code"], progress=progress)

    async def view(self, instance_id: str, until: Callable[[View], bool]) -> View:
        return await self.runtime.run(self._view, instance_id, until)

    async def _view(self, instance_id: str, until: Callable[[View], bool]) -> View:
        shell = self.runtime.shell
        assert shell is not None

        def shown(sh: ShellClient) -> bool:
            return instance_id in sh.views and until(sh.views[instance_id])

        with trio.fail_after(WAIT):
            await shell.wait_until(shown)
        return shell.views[instance_id]

    async def answer(self, interaction_id: str, answer: dict[str, Any]) -> Answered:
        return await self.runtime.run(self._answer, interaction_id, answer)

    async def deliver(self, texts: list[tuple[str, str | None]]) -> None:
        return await self.runtime.run(self._deliver, texts)

    async def _deliver(self, texts: list[tuple[str, str | None]]) -> None:
        client = self._scene.agent.client
        for message_id, instance_id in texts:
            await client.send(text_for_app(message_id, instance_id), idempotency_key=message_id)
        # The transport admits a conversation in order: once the chat shows a text sent after
        # them, the runtime holds these.
        marker = f"after {texts[-1][0]}"
        await client.say(CONVERSATION, marker)
        shell = self.runtime.shell
        assert shell is not None

        def shown(sh: ShellClient) -> bool:
            return marker in [tree_text(i["tree"]) for i in sh.timeline() if i["author"] == "agent"]

        with trio.fail_after(WAIT):
            await shell.wait_until(shown)

    async def _answer(self, interaction_id: str, answer: dict[str, Any]) -> Answered:
        reply = await self._scene.answer(interaction_id, answer)
        view = reply.interaction
        return Answered(reply.changed, view.state, view.result)
