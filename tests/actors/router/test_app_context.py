"""An MCP App's context for the Agent (actors/router/_app_context.py, issue 30) on the real
store, with the router's fake bus of `test_interactions`: told in the instance's open
sub-session as its own envelope type (never a text), each replacing the last, a retry a
repeat, refusals audited by code, nothing of the content in an audit row."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest
import trio

from lineup import wire
from lineup.actors.kernel import ActorKind, Bus, ErrorCode, Identity, LineUpError
from lineup.actors.router import _ids as ids
from lineup.actors.router._app_context import APP_CONTEXT_REFUSED, APP_CONTEXT_TOLD, AppContexts
from lineup.actors.router.messages import SurfaceContextRequest
from lineup.actors.store.messages import AppSessionGetReply, AppSessionGetRequest
from lineup.actors.transport.messages import AppServerSession
from lineup.tests.actors.store._harness import start_store

from .test_interactions import INSTANCE, SESSION, Router, make_router

SCOPE = "task-dashboard"


@pytest.fixture
async def router(nursery: trio.Nursery, tmp_path: Path) -> Router:
    return make_router(await start_store(nursery, tmp_path / "data"))


def contexts(router: Router) -> AppContexts:
    async def session() -> AppServerSession:
        return SESSION

    return AppContexts(cast(Bus, router.bus), Identity(ActorKind.ROUTER, "router"), session)


def update(
    request_id: str, *texts: str, data: dict[str, object] | None = None, scope: str = SCOPE
) -> SurfaceContextRequest:
    return SurfaceContextRequest(
        instance_id=INSTANCE,
        app_scope=scope,
        request_id=request_id,
        content=texts,
        structured_content=data,
    )


async def context_rows(router: Router) -> list[dict[str, object]]:
    return [r.body for r in await router.outbox() if r.kind == wire.APP_SESSION_CONTEXT]


async def test_the_apps_context_reaches_the_agent_in_its_sub_session_each_replacing_the_last(
    router: Router,
) -> None:
    await router.harness.put_live_instances(SCOPE, INSTANCE)
    await router.sessions.opened(INSTANCE, SCOPE)
    told = contexts(router)

    first = await told.update(update("s1-a-1", "3 tasks due", data={"due": 3}), "hostbridge")
    retry = await told.update(update("s1-a-1", "3 tasks due", data={"due": 3}), "hostbridge")
    same = await told.update(update("s1-a-2", "3 tasks due", data={"due": 3}), "hostbridge")
    second = await told.update(update("s1-a-3", "2 tasks due"), "hostbridge")

    assert first.changed and second.changed and second.revision > first.revision
    assert (retry.changed, retry.revision) == (False, first.revision)
    assert (same.changed, same.revision) == (False, first.revision)  # the spec's dedupe
    rows = await context_rows(router)
    assert [r["id"] for r in rows] == [
        ids.app_context_row_id(INSTANCE, "s1-a-1"),
        ids.app_context_row_id(INSTANCE, "s1-a-3"),
    ]
    parsed = [wire.CLIENT_ENVELOPE.validate_python(r) for r in rows]
    payloads = [p.payload for p in parsed if isinstance(p, wire.AppSessionContextEnvelope)]
    assert [(p.app_session_id, p.app_scope, p.instance_id) for p in payloads] == [
        (ids.app_session_id(INSTANCE), SCOPE, INSTANCE)
    ] * 2
    assert [(tuple(c.text for c in p.content), p.structured_content) for p in payloads] == [
        (("3 tasks due",), {"due": 3}),
        (("2 tasks due",), None),
    ]
    assert [p.revision for p in payloads] == [first.revision, second.revision]
    assert all(r["type"] != wire.TEXT for r in rows)  # never as the user's words
    audits = [a for a in router.bus.audits if a.event == APP_CONTEXT_TOLD]
    assert [(a.subject_id, a.code) for a in audits] == [(INSTANCE, None)] * 4
    assert "tasks" not in str([a.model_dump() for a in router.bus.audits])


@pytest.mark.parametrize(
    ("opened", "scope", "code"),
    [
        (False, SCOPE, ErrorCode.APP_SESSION_INVALID),  # no sub-session (yet)
        (True, "other-app", ErrorCode.APP_INSTANCE_NOT_FOUND),  # not that app's instance
    ],
    ids=["no-sub-session", "other-app"],
)
async def test_a_context_with_no_open_sub_session_of_that_app_is_refused_and_audited(
    router: Router, opened: bool, scope: str, code: ErrorCode
) -> None:
    await router.harness.put_live_instances(SCOPE, INSTANCE)
    if opened:
        await router.sessions.opened(INSTANCE, SCOPE)
    with pytest.raises(LineUpError) as refused:
        await contexts(router).update(update("s1-a-1", "secret", scope=scope), "hostbridge")
    assert refused.value.code is code
    assert await context_rows(router) == []
    audits = [a for a in router.bus.audits if a.event == APP_CONTEXT_REFUSED]
    assert [(a.code, a.subject_id) for a in audits] == [(code.value, INSTANCE)]


async def test_a_closed_sub_session_takes_no_context(router: Router) -> None:
    await router.harness.put_live_instances(SCOPE, INSTANCE)
    await router.sessions.opened(INSTANCE, SCOPE)
    await router.harness.end_instance(SCOPE, INSTANCE)
    await router.lifecycle.ended(INSTANCE, SCOPE)
    found = await router.bus.store.request(
        "store", AppSessionGetRequest(instance_id=INSTANCE), expect=AppSessionGetReply
    )
    assert found.session is not None and found.session.state == "closed"
    with pytest.raises(LineUpError) as refused:
        await contexts(router).update(update("s1-a-1", "late"), "hostbridge")
    assert refused.value.code is ErrorCode.APP_SESSION_INVALID
    assert await context_rows(router) == []
