"""A Surface's question (`router.ui.surface.ask`, relayed by the hostbridge from the bridge's
`lineup/ui/request`) in the router's interaction service, on the real store: it is recorded as
its app's own question, under the app's quota, and told to that app as its own are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from lineup.actors.kernel import ActorKind, ErrorCode, LineUpError, message_allowed
from lineup.actors.router import _ids as ids
from lineup.actors.router._interactions import MAX_OPEN_PER_APP
from lineup.actors.router.messages import SurfaceAskRequest
from lineup.hostbridge.messages import InteractionsUpdatedEvent
from lineup.sdk import protocol as sdk
from lineup.tests.actors.store._harness import start_store

from .test_interactions import APP, CONFIRM, INSTANCE, Router, make_router

SCOPE = "task-dashboard"
SURFACE = "lu:surface:" + INSTANCE


@pytest.fixture
async def router(nursery: trio.Nursery, tmp_path: Path) -> Router:
    return make_router(await start_store(nursery, tmp_path / "data"))


def surface_ask(
    request_id: str = "s1-abc-1", *, scope: str = SCOPE, **request: Any
) -> SurfaceAskRequest:
    return SurfaceAskRequest(
        instance_id=INSTANCE,
        app_scope=scope,
        surface_id=SURFACE,
        request=request or {"kind": "confirm", **CONFIRM},
        request_id=request_id,
    )


async def test_a_surfaces_question_is_its_apps_own_and_its_answer_is_told_to_that_app(
    router: Router,
) -> None:
    asked = await router.questions.surface_ask(surface_ask(), "hostbridge")
    view = asked.interaction
    assert asked.changed is True
    assert (view.source, view.owner_scope, view.instance_id, view.call_id) == (
        "miniapp",
        SCOPE,
        INSTANCE,
        None,
    )
    assert (view.kind, view.state) == ("confirm", "presented")
    assert view.interaction_id == ids.surface_interaction_id(SCOPE, INSTANCE, "s1-abc-1")
    # Its own id space: the app asking by the same request id asks another question.
    assert view.interaction_id != ids.app_interaction_id(SCOPE, INSTANCE, "s1-abc-1")
    assert router.bus.shown(view.interaction_id) == ["pending", "presented"]
    record = await router.questions.get(
        APP, sdk.InteractionGetRequest(interaction_id=view.interaction_id)
    )
    assert record.interaction.parent_call_id is None  # the app may read it: it is its own

    again = await router.questions.surface_ask(surface_ask(), "hostbridge")  # a retry
    assert (again.interaction.interaction_id, again.changed) == (view.interaction_id, False)
    assert router.bus.shown(view.interaction_id) == ["pending", "presented"]

    await router.answer(view.interaction_id, {"approved": True})
    told = [(p, e) for p, e in router.bus.told if isinstance(e, sdk.InteractionUpdatedEvent)]
    assert [(p, e.interaction.interaction_id, e.interaction.result) for p, e in told] == [
        (f"miniapp:{SCOPE}", view.interaction_id, {"approved": True})
    ]
    assert told[0][1].interaction.asked_by == "surface"  # the app knows it did not ask it
    final = [
        v
        for p, e in router.bus.told
        if isinstance(e, InteractionsUpdatedEvent)
        for v in e.interactions
        if v.interaction_id == view.interaction_id
    ][-1]
    assert (final.state, final.result) == ("completed", {"approved": True})
    assert not [a for a in router.bus.audits if a.event == "router.interaction_refused"]


@pytest.mark.parametrize(
    ("ask", "code"),
    [
        (surface_ask(scope="other"), ErrorCode.APP_INSTANCE_NOT_FOUND),  # not that app's
        (surface_ask(kind="confirm", title="no prompt"), ErrorCode.TOOL_INPUT_INVALID),
        (surface_ask(kind="poll", title="t"), ErrorCode.TOOL_INPUT_INVALID),
    ],
    ids=["other-app", "bad-confirm", "unknown-kind"],
)
async def test_a_surfaces_question_refused_asks_nothing_and_is_audited_by_type_and_code(
    router: Router, ask: SurfaceAskRequest, code: ErrorCode
) -> None:
    with pytest.raises(LineUpError) as refused:
        await router.questions.surface_ask(ask, "hostbridge")
    assert refused.value.code is code
    assert not [e for _, e in router.bus.told if isinstance(e, InteractionsUpdatedEvent)]
    rows = [a for a in router.bus.audits if a.event == "router.interaction_refused"]
    assert [(a.peer, a.code, a.message_type, a.subject_id) for a in rows] == [
        ("hostbridge", code.value, "router.ui.surface.ask", INSTANCE)
    ]
    assert "no prompt" not in rows[0].model_dump_json()  # never what it asked


async def test_a_surfaces_questions_count_against_its_apps_quota(router: Router) -> None:
    for n in range(MAX_OPEN_PER_APP - 1):
        await router.questions.request(
            APP,
            sdk.InteractionAskRequest(
                instance_id=INSTANCE, request_id=f"r{n}", request={"kind": "confirm", **CONFIRM}
            ),
        )
    await router.questions.surface_ask(surface_ask("last"), "hostbridge")  # the app's 16th
    with pytest.raises(LineUpError) as over:
        await router.questions.surface_ask(surface_ask("over"), "hostbridge")
    assert over.value.code is ErrorCode.QUOTA_EXCEEDED
    with pytest.raises(LineUpError) as app_over:  # and the app's own past it likewise
        await router.questions.request(
            APP,
            sdk.InteractionAskRequest(
                instance_id=INSTANCE, request_id="r-over", request={"kind": "confirm", **CONFIRM}
            ),
        )
    assert app_over.value.code is ErrorCode.QUOTA_EXCEEDED
    again = await router.questions.surface_ask(surface_ask("last"), "hostbridge")
    assert again.changed is False  # a retry of an open one is no new question


def test_only_the_hostbridge_may_relay_a_surfaces_question() -> None:
    tag = SurfaceAskRequest.model_fields["type"].default
    assert message_allowed(ActorKind.HOSTBRIDGE, ActorKind.ROUTER, tag)
    for kind in (ActorKind.MINIAPP, ActorKind.TRANSPORT, ActorKind.FOCUS, ActorKind.GATEWAY):
        assert not message_allowed(kind, ActorKind.ROUTER, tag), kind
