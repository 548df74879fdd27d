"""A Surface's question (the bridge's `lineup/ui/request`) through the hostbridge, on the
FakeBus: checked whole against the standard request models, relayed to the router as
`router.ui.surface.ask` with the app whose view it relays, and answered to the Shell that asked
with the interaction's id; a refusal (its own or the router's) answered with its code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from lineup.actors.kernel import ErrorCode, LineUpError, Message
from lineup.actors.router.messages import SurfaceAskReply, SurfaceAskRequest
from lineup.hostbridge.messages import InteractionView

from .test_actor import next_frame, start_hostbridge
from .test_surfaces import INSTANCE, SCOPE, SURFACE, SurfaceBus, connect, greet, request

CONFIRM = {"kind": "confirm", "title": "Submit", "prompt": "Submit the board?"}
ASKED_ID = "lu:interaction:surface:abc"


class AskBus(SurfaceBus):
    """SurfaceBus with a router that records a Surface's question (or refuses it)."""

    def __init__(self) -> None:
        super().__init__()
        self.refusal: ErrorCode | None = None

    async def request(self, peer: str, body: Message, **kwargs: Any) -> Message:
        if isinstance(body, SurfaceAskRequest):
            assert peer == "router"
            self.requests.append(body)
            self.changed.set()
            if self.refusal is not None:
                raise LineUpError(self.refusal, "refused")
            view = InteractionView(
                interaction_id=ASKED_ID,
                kind="confirm",
                state="presented",
                request=body.request,
                source="miniapp",
                owner_scope=body.app_scope,
                instance_id=body.instance_id,
                created_at=1.0,
            )
            return SurfaceAskReply(interaction=view, changed=True)
        return await super().request(peer, body, **kwargs)


def asked(bus: AskBus) -> list[SurfaceAskRequest]:
    return [r for r in bus.requests if isinstance(r, SurfaceAskRequest)]


async def test_a_surfaces_question_goes_to_the_router_as_its_apps_and_its_id_comes_back(
    tmp_path: Path,
) -> None:
    async with trio.open_nursery() as nursery:
        bus = AskBus()
        _actor, _, port = await start_hostbridge(nursery, tmp_path, bus)
        async with await connect(port) as ws:
            await greet(ws)
            await ws.send_message(
                request("lineup/ui/request", {"request": CONFIRM}, request_id="q1")
            )
            answer = await next_frame(ws)
            bus.refusal = ErrorCode.QUOTA_EXCEEDED
            await ws.send_message(
                request("lineup/ui/request", {"request": CONFIRM}, request_id="q2")
            )
            over = await next_frame(ws)
        nursery.cancel_scope.cancel()
    assert answer == {
        "type": "shell.surface.reply",
        "request_id": "q1",
        "instance_id": INSTANCE,
        "surface_id": SURFACE,
        "result": {"interaction_id": ASKED_ID},
        "error": None,
    }
    assert over["error"] == {"code": "quota_exceeded"} and over["result"] is None
    assert asked(bus)[0] == SurfaceAskRequest(
        instance_id=INSTANCE,
        app_scope=SCOPE,  # the app whose view the hostbridge relays, never the Shell's word
        surface_id=SURFACE,
        request=CONFIRM,
        request_id="q1",
    )
    # The router's refusals are the router's to audit.
    assert not [a for a in bus.audits if a.event == "hostbridge.surface_request_refused"]


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"request": {"kind": "confirm", "title": "No prompt"}},
        {"request": {**CONFIRM, "script": "<b>"}},
        {"request": {**CONFIRM, "title": 7}},
        {"request": {"kind": "poll", "title": "t", "prompt": "p"}},
        {"request": {"kind": "choice", "title": "t", "prompt": "p", "mode": "single-choice"}},
        {"request": CONFIRM, "expires_in_ms": 60_000},
    ],
    ids=["none", "no-prompt", "extra-field", "not-text", "kind", "no-actions", "extra-param"],
)
async def test_a_question_that_is_no_standard_request_is_refused_before_the_router(
    tmp_path: Path, params: dict[str, Any]
) -> None:
    async with trio.open_nursery() as nursery:
        bus = AskBus()
        _actor, _, port = await start_hostbridge(nursery, tmp_path, bus)
        async with await connect(port) as ws:
            await greet(ws)
            await ws.send_message(request("lineup/ui/request", params))
            answer = await next_frame(ws)
        nursery.cancel_scope.cancel()
    assert answer["error"] == {"code": "bridge_params_invalid"}
    assert asked(bus) == []
    refused = [a for a in bus.audits if a.event == "hostbridge.surface_request_refused"]
    assert [(a.code, a.message_type) for a in refused] == [
        ("bridge_params_invalid", "surface.request")
    ]
    assert "No prompt" not in json.dumps([a.model_dump() for a in refused])


async def test_a_question_of_a_surface_no_longer_shown_is_refused(tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        bus = AskBus()
        _actor, _, port = await start_hostbridge(nursery, tmp_path, bus)
        async with await connect(port) as ws:
            await greet(ws)
            await ws.send_message(
                request("lineup/ui/request", {"request": CONFIRM}, surface_id="lu:surface:x")
            )
            answer = await next_frame(ws)
        nursery.cancel_scope.cancel()
    assert answer["error"] == {"code": "surface_not_found"}
    assert asked(bus) == []
