"""An app that floods the capability gateway, through the real runtime (issue 27, findings 5
and 6): its waiting prompts are bounded per app, so another app is still asked; a Deny or a
dismissal answers its other waiting prompts of that capability and keeps it from asking again at
once; Block on the prompt is a grant of deny; and a flood of refused requests writes a few audit
rows a second and one counter row, not a row each.

The hostile app asks as its Surface would (`gateway.ui.surface.capability` for its live
instance, many at once); the user is the peer of the hostbridge's kind that gets the prompts
(`tests/support/capability_user.py`)."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import trio

from lineup.actors.gateway.messages import (
    GrantsListReply,
    GrantsListRequest,
    SurfaceCapabilityRequest,
)
from lineup.actors.kernel.audit import REFUSAL_ROWS_PER_WINDOW, REFUSAL_WINDOW, SUPPRESSED
from lineup.sdk.capabilities import MAX_WAITING_PROMPTS_PER_APP
from lineup.sdk.protocol import CapabilityResult
from lineup.tests.support.tree import audit_rows

from .test_capabilities import NOTE, PURPOSE, Scene, scene

BOMB = 40  # requests the hostile app keeps waiting at once (more than the old shared cap)
FLOOD = 300  # refused requests in a row


async def instance_of(s: Scene, scope: str) -> str:
    """A live instance of `scope` (its tool asks for a capability it does not declare)."""
    call = await s.ask(scope, "app.install", f"{scope}-start", {"artifact_id": "art_x"})
    instance, _ = await s.results(call)
    return instance


def surface(instance: str, request_id: str, capability: str, input: dict[str, Any]) -> Any:
    return SurfaceCapabilityRequest(
        request_id=request_id,
        instance_id=instance,
        capability=capability,
        purpose=PURPOSE,
        input=input,
    )


async def test_one_apps_prompt_bomb_is_bounded_fair_dismissed_at_once_and_blockable(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir, {})
    user = s.user
    bomber, other = await instance_of(s, "capapp"), await instance_of(s, "capallow")
    results: dict[str, CapabilityResult] = {}
    send, answers = trio.open_memory_channel[tuple[str, CapabilityResult]](BOMB + 10)

    async def ask(instance: str, request_id: str, capability: str = "notification.show") -> None:
        body = surface(
            instance, request_id, capability, NOTE if capability == "notification.show" else {}
        )
        await send.send(
            (request_id, await user.bus.request("gateway", body, expect=CapabilityResult))
        )

    async def answered(count: int) -> None:
        with trio.fail_after(20):
            while len(results) < count:
                request_id, result = await answers.receive()
                results[request_id] = result

    async with trio.open_nursery() as bombing:
        for n in range(BOMB):
            bombing.start_soon(ask, bomber, f"bomb-{n}")
        # All but the app's own bound are refused at once, rate_limited, without a prompt.
        await answered(BOMB - MAX_WAITING_PROMPTS_PER_APP)
        refused = {(r.status, r.code) for r in results.values()}
        assert refused == {("failed", "rate_limited")}
        mine = await user.prompts_of("capapp", MAX_WAITING_PROMPTS_PER_APP)

        # Another app is still asked.
        bombing.start_soon(ask, other, "other")
        [theirs] = await user.prompts_of("capallow", 1)
        await user.answer(theirs.prompt_id, "deny")

        # One dismissal answers every waiting prompt of the bomber's for that capability.
        await user.answer(mine[0].prompt_id, "cancel")
        for prompt in mine:
            assert await user.end_of(prompt.prompt_id) == "cancel"
        await answered(BOMB + 1)
    assert len([p for p in user.prompts if p.app_scope == "capapp"]) == MAX_WAITING_PROMPTS_PER_APP
    assert results["other"].code == "permission_denied"
    cancelled = [r for r in results.values() if r.status == "cancelled_by_user"]
    assert len(cancelled) == MAX_WAITING_PROMPTS_PER_APP

    # Asked again at once: refused without a prompt, so the Shell is free for the Permissions
    # page.
    await ask(bomber, "again")
    await answered(BOMB + 2)
    assert (results["again"].status, results["again"].code) == ("failed", "rate_limited")

    # Block on the prompt (the app in front, for file.open): a grant of deny, and the next
    # request is refused without a prompt.
    seen = len(user.prompts)
    async with trio.open_nursery() as blocking:
        blocking.start_soon(ask, other, "open", "file.open")
        prompt = await user.prompt("file.open", seen)
        await user.answer(prompt.prompt_id, "block")
        await answered(BOMB + 3)
    assert results["open"].code == "permission_denied"
    listed = await user.bus.request("gateway", GrantsListRequest(), expect=GrantsListReply)
    row = {(g.app_scope, g.capability): g for g in listed.grants}["capallow", "file.open"]
    assert (row.policy, row.granted) == ("deny", True)
    await ask(other, "after-block", "file.open")
    await answered(BOMB + 4)
    assert (results["after-block"].status, results["after-block"].code) == (
        "policy_denied", "policy_denied",
    )  # fmt: skip
    rows = await audit_rows(
        s.reader,
        lambda rows: any(r.subject_id == "after-block" for r in rows),
        event_prefix="gateway.capability",
    )
    asked = {r.subject_id for r in rows if r.event == "gateway.capability.asked"}
    assert "again" not in asked and "after-block" not in asked and "open" in asked


async def test_a_flood_of_refused_requests_writes_a_few_rows_a_second_and_one_counter_row(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir, {})
    bomber = await instance_of(s, "capapp")

    async def ask(n: int) -> None:
        body = surface(bomber, f"flood-{n}", "app.install", {"artifact_id": "art_x"})
        result = await s.user.bus.request("gateway", body, expect=CapabilityResult)
        assert result.code == "capability_denied"

    started = time.monotonic()
    for batch in range(0, FLOOD, 50):
        async with trio.open_nursery() as flood:
            for n in range(batch, batch + 50):
                flood.start_soon(ask, n)
    elapsed = time.monotonic() - started

    def flooded(rows: tuple[Any, ...]) -> list[Any]:
        return [r for r in rows if (r.subject_id or "").startswith("flood-")]

    def counted(rows: tuple[Any, ...]) -> int:
        return sum(int(r.subject_id) for r in rows if r.event == SUPPRESSED)

    # Every refusal is accounted for: a row of its own, or in a counter row.
    rows = await audit_rows(
        s.reader, lambda rows: len(flooded(rows)) + counted(rows) >= FLOOD, peer="capapp"
    )
    windows = math.ceil(elapsed / REFUSAL_WINDOW) + 2
    assert len(flooded(rows)) <= REFUSAL_ROWS_PER_WINDOW * windows
    assert {(r.event, r.code) for r in flooded(rows)} == {
        ("gateway.capability.refused", "capability_denied")
    }
    assert len(flooded(rows)) + counted(rows) == FLOOD
