"""The drill's questions are valid requests of every kind, and its scripted user's answers
valid answers to them, by the runtime's own rules (`lineup.sdk.interactions`): a drill that
asked or answered wrongly would test refusals, not races. Every run, however short, opens
with a question of each script, the expiring ones first."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import pytest
import trio
import trio.testing

from lineup import wire
from lineup.ops.drill._asking import (
    EXPIRY_MS,
    EXPIRY_SLACK_S,
    KINDS,
    OPENING,
    SCRIPTS,
    Asker,
    answer_for,
    request_for,
)
from lineup.ops.drill._check import STALE
from lineup.sdk import interactions as std
from lineup.sdk.schema import validate


def test_every_drill_question_is_a_valid_request_and_every_answer_a_valid_answer() -> None:
    tools = {t.method: t for t in std.TOOLS}
    for kind in KINDS:
        for n in range(6):
            tool_input = request_for(kind, n)
            if kind != "notice":
                tool_input["expires_in_ms"] = EXPIRY_MS
            in_session = {**tool_input, "app_session_context": {"app_session_id": "s"}}
            assert validate(tools[f"interaction.{kind}"].input_schema, in_session) == []
            request, expires = std.request_of(f"interaction.{kind}", tool_input)
            assert expires == (None if kind == "notice" else EXPIRY_MS)
            view = {"kind": kind, "request": request.model_dump(mode="json")}
            for seed in range(40):
                std.result_of(request, answer_for(view, random.Random(seed)))


NEWEST = "rev-2"  # the revision the runtime last sent, which the Agent's next page brings


@dataclass
class FakeAgent:
    """What the Asker needs of `LoadAgent`: it records the posts instead of making them."""

    sessions: dict[str, str] = field(default_factory=dict)
    revision: str = "rev-1"
    conversation: str = "conv-demo"
    agent_id: str = "demo-agent"
    posted: list[tuple[float, wire.ToolCallPayload]] = field(default_factory=list)
    dismissed: list[str] = field(default_factory=list)
    stale: set[str] = field(default_factory=set)  # call ids the runtime refuses as stale
    all_stale: bool = False  # every call posted meanwhile is refused stale

    async def revision_other_than(self, revision: str) -> None:
        await trio.sleep_forever()  # no install here: the re-ask waits out its bound

    def ended(self, call_id: str) -> dict[str, Any] | None:
        if call_id in self.stale:
            return {"type": "lineup.v1.tool.error", "payload": {"code": STALE}}
        return None

    async def final(self, call_id: str) -> dict[str, Any]:
        if call_id in self.stale:
            return {"type": "lineup.v1.tool.error", "payload": {"code": STALE}}
        await trio.sleep_forever()  # taken: its end comes long after
        raise AssertionError("unreachable")

    async def inventory_known(self) -> None:
        pass

    async def news(self) -> None:
        await trio.sleep(5)  # the next page: it brings the newest revision
        self.revision = NEWEST

    async def post_call(
        self, client: object, call_id: str, tool: str, payload: wire.ToolCallPayload
    ) -> None:
        assert tool == payload.tool and call_id == payload.call_id
        self.posted.append((trio.current_time(), payload))
        if self.all_stale:
            self.stale.add(call_id)

    async def post_until_taken(self, client: object, envelope: dict[str, Any], key: str) -> None:
        self.dismissed.append(str(envelope["payload"]["call_id"]))


async def _asked(
    seconds: float, seed: int, stale: set[str] | None = None
) -> tuple[Asker, FakeAgent, float]:
    agent = FakeAgent(stale=stale or set())
    asker = Asker(agent, seed)  # type: ignore[arg-type]
    start = trio.current_time()
    await asker.drive(seconds, 1.0, client=None)
    return asker, agent, start


@pytest.mark.parametrize("seed", [1, 7, 42])
async def test_even_a_run_shorter_than_an_expiry_opens_with_every_script_expiring_ones_first(
    mock_clock: trio.testing.MockClock, seed: int
) -> None:
    mock_clock.autojump_threshold = 0
    asker, agent, start = await _asked(10, seed)
    plans = list(asker.plans.values())
    assert [p.script for p in plans[: len(OPENING)]] == list(OPENING)
    assert set(OPENING) == set(SCRIPTS)
    by_call = {payload.call_id: payload for _, payload in agent.posted}
    for plan in plans[: len(OPENING)]:
        assert plan.kind != "notice" and not plan.bogus
        assert plan.script != "cancel" or plan.kind in ("choice", "input")
        expiry = by_call[plan.call_id].input["expires_in_ms"]
        assert expiry == (EXPIRY_MS if plan.script in ("expire", "expire_race") else 15 * 60_000)
    # Ten seconds of load: no drawn question may expire (it would end long after the load).
    assert [p.script for p in plans[len(OPENING) :] if p.script.startswith("expire")] == []
    assert asker.expiries_due() == start + 1 + EXPIRY_MS / 1000  # the second question's
    dismissed = [p.call_id for p in plans if p.script in ("dismiss", "race")]
    assert sorted(agent.dismissed) == sorted(dismissed)


async def test_a_long_run_draws_expiring_questions_while_they_expire_within_the_load(
    mock_clock: trio.testing.MockClock,
) -> None:
    mock_clock.autojump_threshold = 0
    asker, _, start = await _asked(300, seed=3)
    drawn = list(asker.plans.values())[len(OPENING) :]
    expiring = [p for p in drawn if p.script in ("expire", "expire_race")]
    assert {p.script for p in expiring} == {"expire", "expire_race"}
    assert all(p.asked_at + EXPIRY_MS / 1000 + EXPIRY_SLACK_S < start + 300 for p in expiring)
    assert asker.expiries_due() < start + 300


async def test_a_question_refused_for_a_stale_revision_is_asked_again_with_its_script(
    mock_clock: trio.testing.MockClock,
) -> None:
    """An install changed the inventory while the first question was posted: the Agent asks
    it again, under a new call id, until it is taken (at most three times)."""
    mock_clock.autojump_threshold = 0
    seed = 5
    refused = {f"call-drill-{seed}-ask0", f"call-drill-{seed}-ask0-1", f"call-drill-{seed}-ask0-2"}
    asker, agent, _ = await _asked(60, seed, stale=refused - {f"call-drill-{seed}-ask0-2"})
    first = [p for p in asker.plans.values() if p.call_id.startswith(f"call-drill-{seed}-ask0")]
    assert [p.call_id for p in first] == sorted(refused)
    assert {(p.kind, p.script) for p in first} == {(first[0].kind, OPENING[0])}
    posted = [payload.call_id for _, payload in agent.posted]
    assert posted.count(f"call-drill-{seed}-ask0-2") == 1


async def test_after_the_load_a_script_refused_stale_every_time_is_asked_once_more(
    mock_clock: trio.testing.MockClock,
) -> None:
    """The whole short load refused stale (the Agent behind an inventory that kept changing):
    once the load is over and the Agent knows the newest revision, each script but the
    expiring ones is asked again, once, under it, in the conversation itself; a script one of
    whose questions was taken is not."""
    mock_clock.autojump_threshold = 0
    agent = FakeAgent(all_stale=True)
    asker = Asker(agent, 11)  # type: ignore[arg-type]
    await asker.drive(10, 1.0, client=None)
    taken = next(p for p in asker.plans.values() if p.script == "answer" and p.kind != "notice")
    agent.stale.discard(taken.call_id)
    agent.all_stale = False
    before = set(asker.plans)

    async def newest() -> str:
        return NEWEST

    async def took(call_ids: list[str]) -> set[str]:  # as the store says
        return {taken.call_id} & set(call_ids)

    caught_up = trio.current_time() + 5  # the next page
    with trio.move_on_after(60):  # each question then waits for its end, which never comes
        await asker.ask_the_starved(client=None, seconds=30, newest=newest, taken=took)
    assert asker.starved["agent_caught_up"] is True
    again = [asker.plans[c] for c in asker.plans if c not in before]
    revisions = {p.call_id: p.inventory_revision for _, p in agent.posted}
    assert {revisions[p.call_id] for p in again} == {NEWEST}
    assert min(p.asked_at for p in again) >= caught_up
    assert sorted(p.script for p in again) == sorted(
        set(SCRIPTS) - {"expire", "expire_race", "answer"}
    )
    for plan in again:
        assert plan.kind != "notice" and not plan.bogus and plan.app_session_id is None
        assert plan.script != "cancel" or plan.kind in ("choice", "input")


async def test_a_refusal_the_agent_has_not_heard_yet_still_starves_its_script(
    mock_clock: trio.testing.MockClock,
) -> None:
    """The load's last refusals may still wait in the outbox's backlog when it ends: the
    Agent knows no end of those questions, yet the store refused them. What was taken is the
    store's to say, so the scripts are asked again."""
    mock_clock.autojump_threshold = 0
    agent = FakeAgent()  # no end of any question reaches the Agent
    asker = Asker(agent, 13)  # type: ignore[arg-type]
    await asker.drive(10, 1.0, client=None)
    before = set(asker.plans)

    async def newest() -> str:
        return agent.revision

    async def took(call_ids: list[str]) -> set[str]:  # the store refused every one stale
        return set()

    with trio.move_on_after(60):
        await asker.ask_the_starved(client=None, seconds=30, newest=newest, taken=took)
    again = sorted(asker.plans[c].script for c in asker.plans if c not in before)
    assert again == sorted(set(SCRIPTS) - {"expire", "expire_race"})
