"""The start target (seed 004 §4.3): explicit > a restorable foreground > the default app > chat,
and a default app that fails to start leaves chat in front. Against an in-memory fake of focus
(the stack as a list, launches that succeed or fail by app)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import pytest
import trio
import trio.testing

from lineup.actors.focus._start import StartTarget, StartTargets, start_targets
from lineup.actors.focus.messages import InstanceReply
from lineup.actors.kernel import ErrorCode, LineUpError, Message
from lineup.sdk import protocol as sdk

CHAT = "chat"


def test_the_order_is_explicit_then_restore_then_default_then_chat() -> None:
    targets = start_targets(
        explicit="whiteboard",
        focus_restarted=True,
        front=("task-dashboard:c1", "task-dashboard"),
        default="notes",
        recovery=CHAT,
    )
    assert [(t.kind, t.app_scope) for t in targets] == [
        ("explicit", "whiteboard"),
        ("restore", "task-dashboard"),
        ("default", "notes"),
        ("recovery", CHAT),
    ]
    assert targets[1].instance_id == "task-dashboard:c1"


def test_after_a_runtime_restart_nothing_is_restored_so_the_default_comes_first() -> None:
    # The chat in front after a runtime restart is the recovery app, not a restored instance.
    targets = start_targets(
        explicit=None, focus_restarted=False, front=("chat", CHAT), default="whiteboard",
        recovery=CHAT,
    )  # fmt: skip
    assert [t.kind for t in targets] == ["default", "recovery"]


def test_no_default_or_chat_as_the_default_leaves_only_the_recovery_app() -> None:
    for default in (None, CHAT):
        targets = start_targets(
            explicit=None, focus_restarted=False, front=None, default=default, recovery=CHAT
        )
        assert targets == (StartTarget("recovery", CHAT),)


@dataclass
class FakeFocus:
    """The stack bottom first (the top is in front) and who owns what; `broken` apps fail to
    start (`activation_failed`), `disabled` ones are refused (`app_disabled`)."""

    stack: list[str] = field(default_factory=lambda: ["chat"])
    owners: dict[str, str] = field(default_factory=lambda: {"chat": CHAT})
    suspended: set[str] = field(default_factory=set)
    installed: set[str] = field(default_factory=lambda: {"whiteboard", "task-dashboard"})
    disabled: set[str] = field(default_factory=set)
    broken: set[str] = field(default_factory=set)
    told: list[tuple[str, Message]] = field(default_factory=list)
    launched: list[str] = field(default_factory=list)
    launch_gate: trio.Event | None = None

    @property
    def front(self) -> str:
        return self.owners[self.stack[-1]]

    def topmost(self, scope: str) -> str | None:
        return next((i for i in reversed(self.stack) if self.owners[i] == scope), None)

    def require_enabled(self, scope: str) -> None:
        if scope not in self.installed:
            raise LineUpError(ErrorCode.APP_NOT_INSTALLED, scope)
        if scope in self.disabled:
            raise LineUpError(ErrorCode.APP_DISABLED, scope)

    async def foreground(self, instance_id: str) -> InstanceReply:
        self.stack.remove(instance_id)
        self.stack.append(instance_id)
        self.suspended.discard(instance_id)  # resumed
        return InstanceReply(
            instance_id=instance_id, app_scope=self.owners[instance_id], state="foreground"
        )

    async def launch(self, scope: str, call_id: str) -> InstanceReply:
        if self.launch_gate is not None:
            await self.launch_gate.wait()
        instance_id = f"{scope}:{call_id}"
        self.launched.append(instance_id)
        if scope in self.broken:
            raise LineUpError(ErrorCode.ACTIVATION_FAILED, instance_id)  # (removed again)
        self.owners[instance_id] = scope
        self.stack.append(instance_id)
        return InstanceReply(instance_id=instance_id, app_scope=scope, state="foreground")

    def tell_app(self, scope: str, event: Message) -> None:
        self.told.append((scope, event))

    def starts(self) -> StartTargets:
        return StartTargets(
            topmost=self.topmost,
            require_enabled=self.require_enabled,
            foreground=self.foreground,
            launch=self.launch,
            tell_app=self.tell_app,
        )


def reads(value: str | None) -> Callable[[], Awaitable[str | None]]:
    async def default() -> str | None:
        return value

    return default


async def test_opening_an_app_with_no_instance_launches_one_in_front_and_tells_its_app() -> None:
    fake = FakeFocus()
    reply = await fake.starts().open("whiteboard")
    assert fake.front == "whiteboard" and reply.app_scope == "whiteboard"
    assert fake.told == [
        ("whiteboard", sdk.UiEvent(instance_id=reply.instance_id, event={"kind": "app.opened"}))
    ]


async def test_opening_an_app_with_a_live_instance_brings_that_one_forward() -> None:
    fake = FakeFocus(
        stack=["chat", "whiteboard:c1", "task-dashboard:c2"],
        owners={"chat": CHAT, "whiteboard:c1": "whiteboard", "task-dashboard:c2": "task-dashboard"},
        suspended={"whiteboard:c1"},
    )
    reply = await fake.starts().open("whiteboard")
    assert reply.instance_id == "whiteboard:c1" and fake.stack[-1] == "whiteboard:c1"
    assert fake.suspended == set() and fake.launched == []
    assert fake.told == [
        ("whiteboard", sdk.UiEvent(instance_id="whiteboard:c1", event={"kind": "app.opened"}))
    ]


@pytest.mark.parametrize(
    ("scope", "code"),
    [("nope", ErrorCode.APP_NOT_INSTALLED), ("task-dashboard", ErrorCode.APP_DISABLED)],
)
async def test_an_unknown_or_disabled_app_is_refused_with_its_code_and_chat_stays(
    scope: str, code: ErrorCode
) -> None:
    fake = FakeFocus(disabled={"task-dashboard"})
    with pytest.raises(LineUpError) as caught:
        await fake.starts().open(scope)
    assert caught.value.code is code
    assert fake.stack == ["chat"] and fake.launched == []


async def test_opening_chat_brings_the_recovery_app_forward() -> None:
    fake = FakeFocus(
        stack=["chat", "whiteboard:c1"], owners={"chat": CHAT, "whiteboard:c1": "whiteboard"}
    )
    await fake.starts().open(CHAT)
    assert fake.front == CHAT and fake.launched == []


async def test_at_a_runtime_start_the_default_app_is_opened_in_front() -> None:
    fake = FakeFocus()
    target = await fake.starts().at_start(
        focus_restarted=False, front=("chat", CHAT), default=reads("whiteboard")
    )
    assert (target.kind, target.app_scope) == ("default", "whiteboard")
    assert fake.front == "whiteboard"


async def test_at_a_runtime_start_with_no_default_chat_stays_in_front() -> None:
    fake = FakeFocus()
    target = await fake.starts().at_start(
        focus_restarted=False, front=("chat", CHAT), default=reads(None)
    )
    assert (target.kind, target.app_scope) == ("recovery", CHAT)
    assert fake.stack == ["chat"] and fake.launched == []


@pytest.mark.parametrize("how", ["broken", "disabled", "uninstalled"])
async def test_a_default_app_that_fails_to_start_falls_back_to_chat(how: str) -> None:
    fake = FakeFocus()
    if how == "broken":
        fake.broken.add("whiteboard")
    elif how == "disabled":
        fake.disabled.add("whiteboard")
    else:
        fake.installed.discard("whiteboard")
    target = await fake.starts().at_start(
        focus_restarted=False, front=("chat", CHAT), default=reads("whiteboard")
    )
    assert target.kind == "recovery" and fake.front == CHAT
    assert fake.told == []


async def test_a_default_that_cannot_be_read_falls_back_to_chat() -> None:
    async def unreadable() -> str | None:
        raise LineUpError(ErrorCode.STORE_UNAVAILABLE, "down")

    fake = FakeFocus()
    target = await fake.starts().at_start(
        focus_restarted=False, front=("chat", CHAT), default=unreadable
    )
    assert target.kind == "recovery" and fake.launched == []


async def test_after_focus_alone_restarted_the_instance_in_front_stays_before_any_default() -> None:
    fake = FakeFocus(
        stack=["chat", "task-dashboard:c1"],
        owners={"chat": CHAT, "task-dashboard:c1": "task-dashboard"},
    )
    read: list[bool] = []

    async def default() -> str | None:
        read.append(True)
        return "whiteboard"

    target = await fake.starts().at_start(
        focus_restarted=True, front=("task-dashboard:c1", "task-dashboard"), default=default
    )
    assert target == StartTarget("restore", "task-dashboard", "task-dashboard:c1")
    assert fake.front == "task-dashboard" and fake.launched == [] and read == []


async def test_an_explicit_target_that_comes_first_wins_over_the_default() -> None:
    fake = FakeFocus()
    starts = fake.starts()
    gate = trio.Event()

    async def default() -> str | None:
        await gate.wait()  # the Shell's deep link arrives while focus reads the setting
        return "whiteboard"

    async with trio.open_nursery() as nursery:
        results: list[StartTarget] = []

        async def start() -> None:
            results.append(
                await starts.at_start(focus_restarted=False, front=("chat", CHAT), default=default)
            )

        nursery.start_soon(start)
        await trio.testing.wait_all_tasks_blocked()
        await starts.open("task-dashboard")
        gate.set()
    assert results[0].kind == "explicit"
    assert fake.front == "task-dashboard"
    assert [i.split(":")[0] for i in fake.launched] == ["task-dashboard"]
