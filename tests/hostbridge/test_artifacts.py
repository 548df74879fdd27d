"""Artifacts at the hostbridge (issue 13): cards with tickets for the Shells, and the content
served only for a request with the artifact's own ticket, under headers that run nothing."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import pytest
import trio

from lineup.actors.gateway.messages import ArtifactContent, ArtifactInfo, UiArtifactReadRequest
from lineup.actors.kernel import ErrorCode, LineUpError, Message
from lineup.hostbridge._artifacts import content_disposition, ticket
from lineup.hostbridge.messages import ArtifactCreatedEvent

from .test_actor import TOKEN, FakeBus, from_peer, next_frame, start_hostbridge
from .test_server import _get
from .test_surfaces import connect

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24
TEXT = b"a secret line\n"


def info(artifact_id: str, data: bytes, media_type: str, name: str, at: float) -> ArtifactInfo:
    return ArtifactInfo(
        artifact_id=artifact_id,
        app_scope="whiteboard",
        instance_id="whiteboard-1",
        name=name,
        media_type=media_type,
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        created_at=at,
    )


BOARD = info("art_" + "1" * 32, PNG, "image/png", "board.png", 100.0)
NOTES = info("art_" + "2" * 32, TEXT, "text/plain", 'notes "final"\r\n.txt', 200.0)


class ArtifactBus(FakeBus):
    def __init__(self) -> None:
        super().__init__()
        self.content = {BOARD.artifact_id: (BOARD, PNG), NOTES.artifact_id: (NOTES, TEXT)}
        self.artifacts = (NOTES, BOARD)  # the gateway lists newest first

    async def request(self, peer: str, body: Message, **kwargs: Any) -> Message:
        if isinstance(body, UiArtifactReadRequest):
            self.requests.append(body)
            if body.artifact_id not in self.content:
                raise LineUpError(ErrorCode.ARTIFACT_NOT_FOUND, "no such artifact")
            held, data = self.content[body.artifact_id]
            return ArtifactContent(info=held, content_b64=base64.b64encode(data).decode())
        return await super().request(peer, body, **kwargs)


def url(artifact_id: str, given: str | None = None, download: bool = False) -> str:
    query = f"?ticket={ticket(TOKEN, artifact_id) if given is None else given}"
    return f"/artifacts/{artifact_id}{query}{'&download=1' if download else ''}"


def test_a_ticket_is_the_hmac_of_the_artifact_id_under_the_token() -> None:
    expected = hmac.new(TOKEN.encode(), BOARD.artifact_id.encode(), hashlib.sha256).hexdigest()
    assert ticket(TOKEN, BOARD.artifact_id) == expected[:32]
    assert ticket(TOKEN, NOTES.artifact_id) != ticket(TOKEN, BOARD.artifact_id)
    assert ticket("another-run", BOARD.artifact_id) != ticket(TOKEN, BOARD.artifact_id)


@pytest.mark.parametrize(
    ("name", "header"),
    [
        ("board.png", 'inline; filename="board.png"'),
        ('notes "final"\r\n.txt', 'inline; filename="notes _final___.txt"'),
        ("résumé.csv", 'inline; filename="r_sum_.csv"'),
        ("...", 'inline; filename="artifact"'),
    ],
)
def test_a_file_name_in_the_header_is_ascii_safe(name: str, header: str) -> None:
    assert content_disposition(name, False) == header


async def test_an_artifact_is_served_with_its_ticket_only_under_headers_that_run_nothing(
    tmp_path: Path,
) -> None:
    bus = ArtifactBus()
    async with trio.open_nursery() as nursery:
        _actor, bus, port = await start_hostbridge(nursery, tmp_path, bus)
        png = await _get(port, url(BOARD.artifact_id))
        png_download = await _get(port, url(BOARD.artifact_id, download=True))
        text = await _get(port, url(NOTES.artifact_id))
        refused = [
            await _get(port, url(BOARD.artifact_id, given=ticket(TOKEN, NOTES.artifact_id))),
            await _get(port, url(BOARD.artifact_id, given="")),
            await _get(port, f"/artifacts/{BOARD.artifact_id}"),
            await _get(port, url(BOARD.artifact_id, given=TOKEN)),
            await _get(port, url("art_" + "9" * 32)),
        ]
        foreign = await _get(port, url(BOARD.artifact_id), host="evil.example")
        nursery.cancel_scope.cancel()
    status, headers, body = png
    assert (status, body) == (200, PNG)
    assert headers["content-type"] == "image/png"
    assert headers["content-disposition"] == 'inline; filename="board.png"'
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["content-security-policy"] == "default-src 'none'; img-src 'self'; sandbox"
    assert headers["cache-control"] == "no-store"
    assert png_download[1]["content-disposition"] == 'attachment; filename="board.png"'
    assert text[0] == 200 and text[2] == TEXT
    assert text[1]["content-type"] == "text/plain; charset=utf-8"
    assert text[1]["content-disposition"] == 'attachment; filename="notes _final___.txt"'
    assert [r[0] for r in refused] == [404] * 5
    assert foreign[0] == 403
    # The gateway was asked only with a right ticket.
    asked = [r.artifact_id for r in bus.requests if isinstance(r, UiArtifactReadRequest)]
    assert asked == [BOARD.artifact_id, BOARD.artifact_id, NOTES.artifact_id, "art_" + "9" * 32]
    rows = [(a.event, a.code, a.subject_id) for a in bus.audits]
    assert rows == [
        ("hostbridge.artifact_refused", "permission_denied", BOARD.artifact_id),
    ] * 4 + [("hostbridge.artifact_refused", "artifact_not_found", "art_" + "9" * 32)]
    assert {(a.message_type, a.peer, a.actor) for a in bus.audits} == {
        ("artifact.get", "user", "hostbridge")
    }
    for answer in [png, text, *refused]:
        assert TOKEN.encode() not in answer[2]


async def test_content_that_is_not_what_its_info_says_is_not_served(tmp_path: Path) -> None:
    bus = ArtifactBus()
    bus.content[BOARD.artifact_id] = (BOARD, PNG + b"x")  # not the size recorded
    html = info("art_" + "3" * 32, b"<p>", "text/html", "x.html", 1.0).model_copy()
    bus.content[html.artifact_id] = (html, b"<p>")
    async with trio.open_nursery() as nursery:
        _actor, bus, port = await start_hostbridge(nursery, tmp_path, bus)
        answers = [await _get(port, url(a)) for a in (BOARD.artifact_id, html.artifact_id)]
        nursery.cancel_scope.cancel()
    assert [a[0] for a in answers] == [404, 404]
    assert [a.code for a in bus.audits] == ["internal_error", "internal_error"]


async def test_a_greeting_lists_the_cards_oldest_first_and_a_new_one_goes_to_every_shell(
    tmp_path: Path,
) -> None:
    bus = ArtifactBus()
    async with trio.open_nursery() as nursery:
        actor, bus, port = await start_hostbridge(nursery, tmp_path, bus)
        async with await connect(port) as ws:
            await ws.send_message(json.dumps({"type": "shell.ready"}))
            frame = await next_frame(ws)
            while frame["type"] != "shell.artifacts":
                frame = await next_frame(ws)
            listed = frame
            made = info("art_" + "4" * 32, PNG, "image/png", "new.png", 300.0)
            actor.on_artifact(*from_peer("gateway", ArtifactCreatedEvent(artifact=made)))
            pushed = await next_frame(ws)
        nursery.cancel_scope.cancel()

    def card(a: ArtifactInfo) -> dict[str, Any]:
        return {**a.model_dump(mode="json"), "ticket": ticket(TOKEN, a.artifact_id)}

    assert listed["artifacts"] == [card(BOARD), card(NOTES)]
    assert pushed == {"type": "shell.artifacts", "artifacts": [card(made)]}
    assert TOKEN not in json.dumps([listed, pushed])
