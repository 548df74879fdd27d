"""The Shell's side of the capability gateway (issue 14) at the hostbridge: the frames, what is
pending (the mirror, and the gateway asked at a greeting), the user's answers relayed to the
gateway with their refusals as notices to the Shell that sent them, a picked file reaching the
gateway with its base name only, and a Surface's capability request that waits on the user
without holding up the Shell's socket."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any, get_args

import pytest
import trio
from pydantic import ValidationError

from lineup.actors.gateway.messages import (
    CapabilityPendingReply,
    CapabilityPendingRequest,
    CapabilityResult,
    GrantSetRequest,
    GrantsListReply,
    GrantsListRequest,
    GrantView,
    PromptAnswerRequest,
    ProviderDoneRequest,
    SurfaceCapabilityRequest,
    UiAccepted,
)
from lineup.actors.kernel import ErrorCode, LineUpError, Message
from lineup.hostbridge._artifacts import ticket
from lineup.hostbridge._capabilities import (
    ANSWER_REFUSED,
    DONE_REFUSED,
    MAX_ENDED,
    MAX_PENDING,
    CapabilityMirror,
    base_name,
    picked_file,
)
from lineup.hostbridge._server import Reply, ShellHub, _listen
from lineup.hostbridge._shell_inbound import Decision
from lineup.hostbridge.messages import (
    CapabilityEndedEvent,
    CapabilityGatewayStartedEvent,
    CapabilityPromptEvent,
    CapabilityPromptView,
    GrantsChangedEvent,
    ProviderRunEvent,
    ProviderRunView,
)
from lineup.hostbridge.shell_protocol import (
    MAX_CAPABILITY_DONE_FRAME,
    MAX_PICKED_B64,
    MAX_SHELL_FRAME,
    RUNTIME_TO_SHELL,
    SHELL_TO_RUNTIME,
    CapabilityAnswerFrame,
    CapabilityDoneFrame,
    CapabilityFrame,
    GrantSetFrame,
    GrantsListFrame,
    PickedFileFrame,
    ShellAction,
    ShellCapabilityEnded,
    ShellCapabilityPrompt,
    ShellCapabilityRun,
    ShellGrants,
    ShellOutbound,
)
from lineup.sdk.capabilities import PROMPT_DECISIONS, Policy, PromptDecision
from lineup.sdk.protocol import MAX_ARTIFACT_BYTES, ArtifactInfo

from .test_actor import TOKEN, next_frame, start_hostbridge
from .test_server import _no_greeting, _Socket
from .test_surfaces import INSTANCE, SurfaceBus, connect, greet, request

SHA = "0" * 64


def prompt_view(
    prompt_id: str = "p1", expires_in: float = 60.0, **fields: Any
) -> CapabilityPromptView:
    return CapabilityPromptView(
        prompt_id=prompt_id,
        app_scope="surfacetest",
        app_title="Test Surface",
        instance_id=INSTANCE,
        capability=fields.pop("capability", "notification.show"),
        purpose=fields.pop("purpose", "<b>Tell you</b> when it is done"),
        rememberable=fields.pop("rememberable", True),
        expires_at=time.time() + expires_in,
        **fields,
    )


def artifact(artifact_id: str = "lu:artifact:a1") -> ArtifactInfo:
    return ArtifactInfo(
        artifact_id=artifact_id,
        app_scope="surfacetest",
        instance_id=INSTANCE,
        name="board.png",
        media_type="image/png",
        size=3,
        sha256=SHA,
        created_at=1.0,
    )


def run_view(
    run_id: str = "r1", capability: str = "artifact.save", **fields: Any
) -> ProviderRunView:
    return ProviderRunView(
        run_id=run_id,
        app_scope="surfacetest",
        app_title="Test Surface",
        instance_id=INSTANCE,
        capability=capability,
        input=fields.pop("input", {}),
        expires_at=time.time() + 60.0,
        **fields,
    )


def grant(policy: Policy = "allow", granted: bool = True) -> GrantView:
    return GrantView(
        app_scope="surfacetest",
        app_title="Test Surface",
        capability="notification.show",
        policy=policy,
        granted=granted,
        granted_at=10.0 if granted else None,
    )


class CapabilityBus(SurfaceBus):
    """SurfaceBus with a gateway: what is pending, the user's answers (accepted, or refused
    with `refuse`), the grants, and a Surface's capability request held until `release`."""

    def __init__(self) -> None:
        super().__init__()
        self.pending = CapabilityPendingReply(prompts=(), runs=())
        self.pending_asked = 0
        self.refuse: ErrorCode | None = None
        self.grants = GrantsListReply(grants=(grant("ask", granted=False),))
        self.release = trio.Event()

    async def request(self, peer: str, body: Message, **kwargs: Any) -> Message:
        if isinstance(body, CapabilityPendingRequest):
            self.pending_asked += 1
            self.changed.set()
            return self.pending
        if isinstance(body, PromptAnswerRequest | ProviderDoneRequest | GrantSetRequest):
            self.requests.append(body)
            self.changed.set()
            if self.refuse is not None:
                raise LineUpError(self.refuse, "no")
            if isinstance(body, GrantSetRequest):
                self.grants = GrantsListReply(grants=(grant(body.policy),))
                return self.grants
            return UiAccepted(id=body.prompt_id if isinstance(body, PromptAnswerRequest) else "r")
        if isinstance(body, GrantsListRequest):
            self.requests.append(body)
            self.changed.set()
            return self.grants
        if isinstance(body, SurfaceCapabilityRequest):
            self.requests.append(body)
            self.changed.set()
            await self.release.wait()  # the user is being asked
            return CapabilityResult(
                request_id=body.request_id,
                capability=body.capability,
                status="completed",
                output={},
            )
        return await super().request(peer, body, **kwargs)


def no_env() -> Any:
    return None


# ---------------------------------------------------------------------- frames


def test_the_capability_frames_the_shell_sends_parse_to_their_models() -> None:
    frames = [
        (
            {"type": "capability.answer", "prompt_id": "p1", "decision": "allow_once"},
            CapabilityAnswerFrame,
        ),
        (
            {"type": "capability.done", "run_id": "r1", "status": "cancelled_by_user"},
            CapabilityDoneFrame,
        ),
        (
            {
                "type": "capability.done",
                "run_id": "r1",
                "status": "completed",
                "file": {"name": "a.txt", "media_type": "", "content_b64": "aGk="},
            },
            CapabilityDoneFrame,
        ),
        ({"type": "grants.list"}, GrantsListFrame),
        (
            {"type": "grant.set", "app_scope": "a", "capability": "file.open", "policy": "ask"},
            GrantSetFrame,
        ),
    ]
    for frame, model in frames:
        parsed = SHELL_TO_RUNTIME.validate_json(json.dumps(frame))
        assert type(parsed) is model
        assert parsed.model_dump(exclude_unset=True) == frame


@pytest.mark.parametrize(
    "frame",
    [
        {"type": "capability.answer", "prompt_id": "p1", "decision": "allow_forever"},
        {"type": "capability.answer", "prompt_id": "", "decision": "deny"},
        {"type": "capability.answer", "prompt_id": "p1", "decision": "deny", "app_scope": "x"},
        {"type": "capability.done", "run_id": "r1", "status": "expired"},
        {"type": "capability.done", "run_id": "r1", "status": "completed", "file": {"name": "a"}},
        {
            "type": "capability.done",
            "run_id": "r1",
            "status": "completed",
            "file": {"name": "a", "media_type": "", "content_b64": "A" * (MAX_PICKED_B64 + 1)},
        },
        {"type": "grant.set", "app_scope": "a", "capability": "file.open", "policy": "always"},
        {"type": "grants.list", "all": True},
    ],
    ids=[
        "decision",
        "empty-id",
        "extra",
        "status",
        "file-fields",
        "file-size",
        "policy",
        "extra-list",
    ],
)
def test_a_capability_frame_outside_the_protocol_is_refused(frame: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        SHELL_TO_RUNTIME.validate_json(json.dumps(frame))


def test_a_picked_file_fits_its_frame_and_is_at_most_an_artifact() -> None:
    assert MAX_PICKED_B64 == (MAX_ARTIFACT_BYTES * 4) // 3 + 4
    assert MAX_CAPABILITY_DONE_FRAME > MAX_PICKED_B64 > MAX_SHELL_FRAME


@pytest.mark.parametrize(
    "frame",
    [
        ShellCapabilityPrompt(prompt={"prompt_id": "p1"}),
        ShellCapabilityRun(run={"run_id": "r1"}),
        ShellCapabilityEnded(id="p1", outcome="deny"),
        ShellGrants(grants=({"app_scope": "a", "capability": "file.open", "policy": "ask"},)),
    ],
    ids=lambda f: f.type,
)
def test_every_capability_frame_to_the_shell_reads_back(frame: ShellOutbound) -> None:
    assert RUNTIME_TO_SHELL.validate_json(frame.model_dump_json()) == frame


# ---------------------------------------------------------------------- the mirror


def test_the_mirror_holds_what_is_pending_until_it_ends_and_never_reopens_an_ended_one() -> None:
    mirror = CapabilityMirror()
    assert mirror.prompt(prompt_view("p1"))
    assert mirror.run(run_view("r1"))
    mirror.end("p1")
    assert not mirror.prompt(prompt_view("p1"))  # a late view of an ended prompt
    prompts, runs = mirror.pending(time.time())
    assert (prompts, [r.run_id for r in runs]) == ([], ["r1"])
    # What the gateway lists replaces what was held, but not what ended meanwhile.
    mirror.replace([prompt_view("p1"), prompt_view("p2")], [])
    prompts, runs = mirror.pending(time.time())
    assert ([p.prompt_id for p in prompts], runs) == (["p2"], [])


def test_the_mirror_is_bounded_and_forgets_what_expired_long_ago() -> None:
    mirror = CapabilityMirror()
    for n in range(MAX_PENDING + 5):
        mirror.prompt(prompt_view(f"p{n}"))
    prompts, _ = mirror.pending(time.time())
    assert len(prompts) == MAX_PENDING
    assert (prompts[0].prompt_id, prompts[-1].prompt_id) == ("p5", f"p{MAX_PENDING + 4}")
    mirror.prompt(prompt_view("old", expires_in=-60.0))  # its `ended` was lost
    assert "old" not in {p.prompt_id for p in mirror.pending(time.time())[0]}
    for n in range(MAX_ENDED + 1):
        mirror.end(f"e{n}")
    assert mirror.prompt(prompt_view("e0"))  # the oldest ended id was let go


# ---------------------------------------------------------------------- picked files


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("C:\\Users\\ada\\Desktop\\plan.md", "plan.md"),
        ("/home/ada/.ssh/../notes.txt", "notes.txt"),
        ("../../etc/passwd", "passwd"),
        ("a\x00b\x1f.csv", "ab.csv"),
        ("dir/", "file"),
        ("..", "file"),
        ("x" * 300 + ".json", "x" * 123 + ".json"),
    ],
)
def test_a_picked_files_name_keeps_its_base_name_only(given: str, kept: str) -> None:
    assert base_name(given) == kept


def test_a_picked_file_gets_a_media_type_and_its_bytes_unchanged() -> None:
    content = base64.b64encode(b"# notes\n").decode()
    file = picked_file(PickedFileFrame(name="/tmp/x/notes.md", media_type="", content_b64=content))
    assert file is not None
    assert (file.name, file.media_type, file.content_b64) == ("notes.md", "text/markdown", content)
    png = picked_file(PickedFileFrame(name="a.png", media_type="image/png", content_b64=content))
    assert png is not None and png.media_type == "image/png"
    unknown = picked_file(PickedFileFrame(name="a.exe", media_type="", content_b64=content))
    assert unknown is not None and unknown.media_type == "application/octet-stream"
    assert (
        picked_file(PickedFileFrame(name="a.txt", media_type="", content_b64="not base64!")) is None
    )
    big = base64.b64encode(b"x" * (MAX_ARTIFACT_BYTES + 1)).decode()[:MAX_PICKED_B64]
    assert picked_file(PickedFileFrame(name="a.txt", media_type="", content_b64=big)) is None


# ---------------------------------------------------------------------- the socket's size rule


async def test_only_a_capability_done_may_be_longer_than_a_shell_frame() -> None:
    content = base64.b64encode(b"x" * (200 * 1024)).decode()
    done = json.dumps(
        {
            "type": "capability.done",
            "run_id": "r1",
            "status": "completed",
            "file": {"name": "a.txt", "media_type": "text/plain", "content_b64": content},
        }
    )
    handed: list[CapabilityFrame] = []
    got = trio.Event()

    class Host:
        async def frame(self, frame: CapabilityFrame, reply: Reply) -> None:
            handed.append(frame)
            got.set()

    async def inbound(frame: ShellAction) -> None:
        raise AssertionError("handed on as an action")

    send, _receive = ShellHub().join()
    socket = _Socket(done)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_listen, socket, send, _no_greeting, inbound, print, None, Host())
            await got.wait()
            nursery.cancel_scope.cancel()
    assert isinstance(handed[0], CapabilityDoneFrame) and socket.closed_with is None

    # Anything else that long, or a done frame that only says so in a second `type`, closes.
    for text in (
        json.dumps({"type": "grants.list", "pad": "x" * (MAX_SHELL_FRAME + 1)}),
        '{"type": "capability.done", "type": "grants.list", "p": "' + "x" * MAX_SHELL_FRAME + '"}',
        done.replace(content, content * 2),
    ):
        socket = _Socket(text)
        with trio.fail_after(5):
            await _listen(socket, send, _no_greeting, inbound, lambda t: None, None, Host())
        assert socket.closed_with == 1009


# ---------------------------------------------------------------------- through the actor


async def test_prompts_and_runs_reach_every_shell_and_a_greeting_asks_the_gateway(
    tmp_path: Path,
) -> None:
    bus = CapabilityBus()
    bus.pending = CapabilityPendingReply(prompts=(prompt_view("p0"),), runs=())
    async with trio.open_nursery() as nursery:
        actor, _bus, port = await start_hostbridge(nursery, tmp_path, bus)
        await bus.until(lambda: bus.pending_asked >= 1)  # at start
        async with await connect(port) as ws:
            greeting = await greet(ws)  # up to the Surface's view
            frame = await next_frame(ws)
            while frame["type"] != "shell.capability.prompt":
                frame = await next_frame(ws)
            assert frame["prompt"]["prompt_id"] == "p0"
            assert frame["prompt"]["purpose"] == "<b>Tell you</b> when it is done"  # as text
            assert "type" not in frame["prompt"]
            assert bus.pending_asked >= 2  # and again at the greeting
            assert all(f["type"] != "shell.capability.prompt" for f in greeting)

            actor.on_capability_prompt(CapabilityPromptEvent(prompt=prompt_view("p1")), no_env())
            assert (await next_frame(ws))["prompt"]["prompt_id"] == "p1"
            saved = run_view("r1", artifact=artifact())
            actor.on_capability_run(ProviderRunEvent(run=saved), no_env())
            run = (await next_frame(ws))["run"]
            assert run["artifact"]["ticket"] == ticket(TOKEN, "lu:artifact:a1")
            assert TOKEN not in json.dumps(run)
            actor.on_capability_ended(CapabilityEndedEvent(id="p1", outcome="deny"), no_env())
            assert await next_frame(ws) == {
                "type": "shell.capability.ended",
                "id": "p1",
                "outcome": "deny",
            }
            # A late view of the ended prompt is not shown again.
            actor.on_capability_prompt(CapabilityPromptEvent(prompt=prompt_view("p1")), no_env())
            actor.on_capability_ended(CapabilityEndedEvent(id="r1", outcome="completed"), no_env())
            assert (await next_frame(ws))["id"] == "r1"
        nursery.cancel_scope.cancel()


async def test_a_restarted_gateway_takes_down_the_prompts_the_killed_one_told_of(
    tmp_path: Path,
) -> None:
    bus = CapabilityBus()
    async with trio.open_nursery() as nursery:
        actor, _bus, port = await start_hostbridge(nursery, tmp_path, bus)
        async with await connect(port) as ws:
            await greet(ws)
            actor.on_capability_prompt(CapabilityPromptEvent(prompt=prompt_view("p1")), no_env())
            assert (await next_frame(ws))["prompt"]["prompt_id"] == "p1"
            # The gateway is killed (it never says p1 ended) and its successor, started,
            # holds only the request asked again under its id: a new prompt.
            bus.pending = CapabilityPendingReply(prompts=(prompt_view("p2"),), runs=())
            actor.on_gateway_started(CapabilityGatewayStartedEvent(), no_env())
            assert await next_frame(ws) == {
                "type": "shell.capability.ended",
                "id": "p1",
                "outcome": "gateway_restarted",
            }
            assert (await next_frame(ws))["prompt"]["prompt_id"] == "p2"
        nursery.cancel_scope.cancel()


async def test_answers_reach_the_gateway_and_a_refusal_is_a_notice_to_that_shell_only(
    tmp_path: Path,
) -> None:
    bus = CapabilityBus()
    async with trio.open_nursery() as nursery:
        actor, _bus, port = await start_hostbridge(nursery, tmp_path, bus)
        async with await connect(port) as ws, await connect(port) as other:
            await greet(ws)
            await greet(other)
            answer = {"type": "capability.answer", "prompt_id": "p1", "decision": "allow_once"}
            await ws.send_message(json.dumps(answer))
            await bus.until(lambda: any(isinstance(r, PromptAnswerRequest) for r in bus.requests))
            bus.refuse = ErrorCode.PROMPT_NOT_FOUND
            await ws.send_message(json.dumps({**answer, "decision": "deny"}))
            notice = await next_frame(ws)
            while notice["type"] != "shell.notice":
                notice = await next_frame(ws)
            assert notice["level"] == "error" and notice["code"] == "prompt_not_found"
            # The other Shell got no notice: its next frame is the next broadcast.
            actor.on_capability_ended(CapabilityEndedEvent(id="p1", outcome="allow_once"), no_env())
            frame = await next_frame(other)
            while frame["type"] not in ("shell.capability.ended", "shell.notice"):
                frame = await next_frame(other)
            assert frame["type"] == "shell.capability.ended"
        nursery.cancel_scope.cancel()
    answers = [r for r in bus.requests if isinstance(r, PromptAnswerRequest)]
    assert [(a.prompt_id, a.decision) for a in answers] == [("p1", "allow_once"), ("p1", "deny")]
    rows = [
        (a.event, a.message_type, a.code, a.subject_id) for a in bus.audits if "capab" in a.event
    ]
    # The refused answer is audited by its refusal alone, within the per-offender bound: a
    # Shell that sends answers in a loop gets a few rows a second, not one each.
    assert rows == [
        ("ui.capability.answer", "capability.answer", "allow_once", "p1"),
        (ANSWER_REFUSED, "capability.answer", "prompt_not_found", "p1"),
    ]
    assert [a.event for a in bus.refusals if "capab" in a.event] == [ANSWER_REFUSED]


async def test_a_picked_file_reaches_the_gateway_with_its_base_name_and_its_bytes(
    tmp_path: Path,
) -> None:
    bus = CapabilityBus()
    content = base64.b64encode(bytes(range(256)) * 800).decode()  # 200 KiB: a long frame
    async with trio.open_nursery() as nursery:
        _actor, _bus, port = await start_hostbridge(nursery, tmp_path, bus)
        async with await connect(port) as ws:
            await greet(ws)
            done: dict[str, Any] = {  # a frame as the Shell sends it (JSON)
                "type": "capability.done",
                "run_id": "r9",
                "status": "completed",
                "file": {
                    "name": "C:\\fakepath\\secret plans.csv",
                    "media_type": "text/csv",
                    "content_b64": content,
                },
            }
            await ws.send_message(json.dumps(done))
            await bus.until(lambda: any(isinstance(r, ProviderDoneRequest) for r in bus.requests))
            bad = {**done, "file": {**done["file"], "content_b64": "%%%"}}
            await ws.send_message(json.dumps(bad))
            notice = await next_frame(ws)
            assert notice["type"] == "shell.notice" and notice["code"] == "artifact_invalid"
        nursery.cancel_scope.cancel()
    [sent] = [r for r in bus.requests if isinstance(r, ProviderDoneRequest)]
    assert sent.status == "completed" and sent.file is not None
    assert (sent.file.name, sent.file.media_type) == ("secret plans.csv", "text/csv")
    assert sent.file.content_b64 == content
    rows = [(a.event, a.code, a.subject_id) for a in bus.audits if "capab" in a.event]
    assert rows == [
        ("ui.capability.done", "completed", "r9"),
        (DONE_REFUSED, "artifact_invalid", "r9"),
    ]
    assert not any("secret" in json.dumps(a.model_dump()) for a in bus.audits)


async def test_the_permissions_page_lists_and_sets_grants_and_hears_of_changes(
    tmp_path: Path,
) -> None:
    bus = CapabilityBus()
    async with trio.open_nursery() as nursery:
        actor, _bus, port = await start_hostbridge(nursery, tmp_path, bus)
        async with await connect(port) as ws, await connect(port) as other:
            await greet(ws)
            await greet(other)
            await ws.send_message(json.dumps({"type": "grants.list"}))
            listed = await next_frame(ws)
            assert listed["type"] == "shell.grants"
            assert [(g["capability"], g["policy"], g["granted"]) for g in listed["grants"]] == [
                ("notification.show", "ask", False)
            ]
            await ws.send_message(
                json.dumps(
                    {
                        "type": "grant.set",
                        "app_scope": "surfacetest",
                        "capability": "notification.show",
                        "policy": "deny",
                    }
                )
            )
            after = await next_frame(ws)
            assert [g["policy"] for g in after["grants"]] == ["deny"]
            # The gateway tells of the change: every Shell gets the list again.
            actor.on_grants_changed(GrantsChangedEvent(), no_env())
            again = await next_frame(other)
            assert again["type"] == "shell.grants" and again["grants"][0]["policy"] == "deny"
        nursery.cancel_scope.cancel()
    [set_] = [r for r in bus.requests if isinstance(r, GrantSetRequest)]
    assert (set_.app_scope, set_.capability, set_.policy) == (
        "surfacetest",
        "notification.show",
        "deny",
    )
    assert [(a.event, a.code, a.subject_id) for a in bus.audits if a.event == "ui.grant.set"] == [
        ("ui.grant.set", "deny", "surfacetest:notification.show")
    ]


async def test_a_surfaces_capability_request_waits_on_the_user_without_holding_the_socket(
    tmp_path: Path,
) -> None:
    bus = CapabilityBus()
    async with trio.open_nursery() as nursery:
        _actor, _bus, port = await start_hostbridge(nursery, tmp_path, bus)
        async with await connect(port) as ws:
            await greet(ws)
            params = {
                "capability": "notification.show",
                "purpose": "Tell you",
                "input": {"title": "t"},
            }
            await ws.send_message(request("lineup/capabilities/request", params, request_id="c1"))
            await bus.until(
                lambda: any(isinstance(r, SurfaceCapabilityRequest) for r in bus.requests)
            )
            # The user's answer comes on the same socket while the request waits.
            answer = {"type": "capability.answer", "prompt_id": "p1", "decision": "allow_once"}
            await ws.send_message(json.dumps(answer))
            await bus.until(lambda: any(isinstance(r, PromptAnswerRequest) for r in bus.requests))
            bus.release.set()
            reply = await next_frame(ws)
            # A purpose too long for the gateway is the bridge's refusal, never relayed.
            long = {**params, "purpose": "x" * 301}
            await ws.send_message(request("lineup/capabilities/request", long, request_id="c2"))
            refused = await next_frame(ws)
        nursery.cancel_scope.cancel()
    [asked] = [r for r in bus.requests if isinstance(r, SurfaceCapabilityRequest)]
    assert (asked.request_id, asked.instance_id, asked.capability, asked.purpose, asked.input) == (
        "c1", INSTANCE, "notification.show", "Tell you", {"title": "t"}
    )  # fmt: skip
    assert reply["type"] == "shell.surface.reply" and reply["request_id"] == "c1"
    assert reply["result"] == {
        "request_id": "c1",
        "capability": "notification.show",
        "status": "completed",
        "code": None,
        "output": {},
    }
    assert refused["error"] == {"code": "bridge_params_invalid"}


def test_the_shell_may_send_every_answer_the_gateway_takes_and_no_other() -> None:
    assert get_args(Decision) == get_args(PromptDecision) == PROMPT_DECISIONS
