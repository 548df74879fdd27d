"""Capability requests through the real runtime (issue 14): every result code reached by the
case that should produce it, each with its audit row and no row holding the purpose, the input
or a file's name; "Always allow" remembered and a revocation asking again; and a tool whose app
loses the capability it declares leaves the inventory in a new revision.

The apps are real MiniApp processes asking from their tools (the Agent calls them through the
AppServer); the user is a peer of the hostbridge's kind that gets the gateway's prompts and
provider runs and answers them (`tests/support/capability_app.py`)."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import trio

from lineup.actors.focus.messages import AppEnableRequest, InventoryReply
from lineup.actors.gateway.messages import (
    GrantSetRequest,
    GrantsListReply,
    PickedFile,
    SurfaceCapabilityRequest,
)
from lineup.actors.kernel import ActorKind, ErrorCode, LineUpError
from lineup.actors.store.messages import AuditRecord
from lineup.sdk.protocol import ArtifactInfo, CapabilityResult
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.capability_user import User, start_with_user
from lineup.tests.support.runtime import CONVERSATION, agent_client
from lineup.tests.support.tree import attach, audit_rows

WAIT = 20.0
PURPOSE = "PURPOSE-TEXT-7391 so you know"
SECRET = "INPUT-TEXT-5521"
FILE_NAME = "private-notes-8812.txt"
FILE_BYTES = b"FILE-CONTENT-4410\n"
NOTE = {"title": SECRET, "body": SECRET}
Expected = dict[str, tuple[str, str]]  # request id -> its terminal audit row (event, code)


class Scene:
    def __init__(self, agent: AgentView, revision: str, user: User, reader: Any) -> None:
        self.agent, self.revision, self.user, self.reader = agent, revision, user, reader

    async def ask(
        self, scope: str, capability: str, request_id: str, input: dict[str, Any] | None = None,
        **options: Any,
    ) -> str:  # fmt: skip
        arguments = {
            "capability": capability,
            "purpose": PURPOSE,
            "input_json": json.dumps(input or {}),
            "request_id": request_id,
            **options,
        }
        call_id = f"c-{request_id}"
        await self.agent.client.call_tool(
            CONVERSATION, f"{scope}.ask", arguments, self.revision, call_id=call_id
        )
        return call_id

    async def results(self, call_id: str) -> tuple[str, list[dict[str, Any]]]:
        done = await self.agent.terminal(call_id)
        result = done["payload"]["result"]
        return result["instance_id"], json.loads(result["results_json"])

    async def one(self, call_id: str) -> tuple[str, str | None, dict[str, Any] | None]:
        _, [result] = await self.results(call_id)
        return result["status"], result["code"], result["output"]


async def scene(nursery: trio.Nursery, data_dir: Path, capabilities: dict[str, Any]) -> Scene:
    runtime, user = await start_with_user(nursery, data_dir, capabilities)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT)
    reader = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "reader")
    return Scene(agent, await agent.inventory(), user, reader)


def terminal(rows: tuple[AuditRecord, ...], request_id: str) -> tuple[str, str | None] | None:
    ends = ("refused", "completed", "failed", "cancelled")
    found = [
        (r.event, r.code)
        for r in rows
        if r.subject_id == request_id and r.event.rsplit(".", 1)[-1] in ends
    ]
    return found[-1] if found else None


async def test_every_result_code_is_reached_by_its_case_and_audited_without_content(
    nursery: trio.Nursery, data_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    s = await scene(
        nursery,
        data_dir,
        {
            "unsupported": ["artifact.save"],
            "policy": {
                "capdeny": {"notification.show": "deny"},
                "capallow": {"notification.show": "allow"},
            },
            "prompt_timeout_s": 4.0,
            "rate_per_minute": {"notification.show": 1},
            # Cancelled, then denied, then asked again at once: no quiet after a no here
            # (test_prompt_bomb.py has it).
            "prompt_quiet_s": 0,
        },
    )
    expected: Expected = {}
    await refused_before_anyone_is_asked(s, expected)
    await the_user_cancels_denies_or_lets_it_expire(s, expected)
    allow_instance = await the_providers_run(s, expected)
    await a_disabled_apps_request_is_refused(s, expected, allow_instance)

    rows = await audit_rows(
        s.reader,
        lambda rows: all(terminal(rows, r) == e for r, e in expected.items()),
        event_prefix="gateway.capability",
    )
    asked = [r for r in rows if r.event == "gateway.capability.asked"]
    assert {r.subject_id for r in asked} == {"cancel", "deny", "expire", "provider", "open"}
    assert {r.peer for r in rows} == {"capapp", "capdeny", "capallow"}
    every = await audit_rows(s.reader, lambda rows: True)
    logged = capfd.readouterr()
    logs = "".join(f.read_text(errors="replace") for f in (data_dir / "rt").rglob("*.log"))
    for text in (repr(every), logged.out, logged.err, logs):
        for secret in ("PURPOSE-TEXT", SECRET, "private-notes", "FILE-CONTENT"):
            assert secret not in text


async def refused_before_anyone_is_asked(s: Scene, expected: Expected) -> None:
    # 1-4: refused before anyone is asked.
    call = await s.ask("capapp", "app.install", "undeclared", {"artifact_id": "art_x"})
    assert await s.one(call) == ("permission_denied", "capability_denied", None)
    expected["undeclared"] = ("gateway.capability.refused", "capability_denied")
    call = await s.ask("capapp", "artifact.save", "unsupported", {"artifact_id": "art_x"})
    assert await s.one(call) == ("unsupported_on_host", "unsupported_on_host", None)
    expected["unsupported"] = ("gateway.capability.refused", "unsupported_on_host")
    call = await s.ask("capapp", "file.open", "background", {}, background=True)
    assert await s.one(call) == ("failed", "foreground_required", None)
    expected["background"] = ("gateway.capability.refused", "foreground_required")
    call = await s.ask("capdeny", "notification.show", "policy", NOTE)
    assert await s.one(call) == ("policy_denied", "policy_denied", None)
    expected["policy"] = ("gateway.capability.refused", "policy_denied")


async def the_user_cancels_denies_or_lets_it_expire(
    s: Scene, expected: dict[str, tuple[str, str]]
) -> None:
    user = s.user
    # 5-7: the user is asked, and cancels, denies, or lets the prompt expire.
    for request_id, decision, result in (
        ("cancel", "cancel", ("cancelled_by_user", "cancelled_by_user", None)),
        ("deny", "deny", ("permission_denied", "permission_denied", None)),
        ("expire", None, ("expired", "operation_expired", None)),
    ):
        seen = len(user.prompts)
        call = await s.ask("capapp", "notification.show", request_id, NOTE)
        prompt = await user.prompt("notification.show", seen)
        assert (prompt.app_scope, prompt.app_title, prompt.purpose, prompt.rememberable) == (
            "capapp", "capapp title", PURPOSE, True,
        )  # fmt: skip
        if decision is not None:
            await user.answer(prompt.prompt_id, decision)
        assert await s.one(call) == result
        assert await user.end_of(prompt.prompt_id) == (decision or "expired")
        # The prompt is over: a (late) answer finds nothing.
        with pytest.raises(LineUpError) as late:
            await user.answer(prompt.prompt_id, "allow_once")
        assert late.value.code is ErrorCode.PROMPT_NOT_FOUND
        expected[request_id] = ("gateway.capability.refused", result[1] or "")


async def the_providers_run(s: Scene, expected: Expected) -> str:
    user = s.user
    # 8: allowed once, and the provider fails.
    seen_prompts, seen_runs = len(user.prompts), len(user.runs)
    call = await s.ask("capapp", "notification.show", "provider", NOTE)
    prompt = await user.prompt("notification.show", seen_prompts)
    await user.answer(prompt.prompt_id, "allow_once")
    run = await user.run("notification.show", seen_runs)
    assert run.input == NOTE  # the Shell shows what the app asked to show
    await user.done(run.run_id, "failed")
    assert await s.one(call) == ("failed", "provider_failed", None)
    expected["provider"] = ("gateway.capability.failed", "provider_failed")

    # 9-10: the host's policy allows: completed without a prompt; the next one in the same
    # minute is over the rate limit (1 a minute here) and never reaches the Shell.
    seen_prompts, seen_runs = len(user.prompts), len(user.runs)
    call = await s.ask("capallow", "notification.show", "allowed", NOTE, repeat=2)
    run = await user.run("notification.show", seen_runs)
    await user.done(run.run_id, "completed")
    allow_instance, (first, second) = await s.results(call)
    assert (first["status"], first["code"], first["output"]) == ("completed", None, {})
    assert (second["status"], second["code"]) == ("failed", "rate_limited")
    assert len(user.prompts) == seen_prompts and len(user.runs) == seen_runs + 1
    expected["allowed"] = ("gateway.capability.completed", "completed")
    expected["allowed-1"] = ("gateway.capability.refused", "rate_limited")

    # 11: file.open gives the app a new artifact of its own, with no path.
    seen_prompts, seen_runs = len(user.prompts), len(user.runs)
    call = await s.ask("capapp", "file.open", "open", {"media_types": ["text/plain"]})
    prompt = await user.prompt("file.open", seen_prompts)
    await user.answer(prompt.prompt_id, "allow_once")
    run = await user.run("file.open", seen_runs)
    picked = PickedFile(
        name=FILE_NAME, media_type="text/plain", content_b64=base64.b64encode(FILE_BYTES).decode()
    )
    await user.done(run.run_id, "completed", picked)
    status, code, output = await s.one(call)
    assert (status, code) == ("completed", None)
    assert output is not None and set(output) == {"artifact"}
    artifact = ArtifactInfo.model_validate(output["artifact"])
    assert (artifact.app_scope, artifact.name, artifact.size) == (
        "capapp", FILE_NAME, len(FILE_BYTES),
    )  # fmt: skip
    assert artifact.sha256 == hashlib.sha256(FILE_BYTES).hexdigest()
    assert "path" not in json.dumps(output) and "/" not in artifact.name
    expected["open"] = ("gateway.capability.completed", "completed")
    return allow_instance


async def a_disabled_apps_request_is_refused(
    s: Scene, expected: dict[str, tuple[str, str]], allow_instance: str
) -> None:
    user = s.user
    # 12: the app disabled, its (Surface's) request is refused from focus's answer.
    off = AppEnableRequest(app_scope="capallow", enabled=False)
    await user.bus.request("focus", off, expect=InventoryReply)
    surface = SurfaceCapabilityRequest(
        request_id="disabled",
        instance_id=allow_instance,
        capability="notification.show",
        purpose=PURPOSE,
        input=NOTE,
    )
    refused = await user.bus.request("gateway", surface, expect=CapabilityResult)
    assert (refused.status, refused.code) == ("failed", "app_disabled")
    again = await user.bus.request("gateway", surface, expect=CapabilityResult)
    assert again == refused  # a repeat: the same result
    expected["disabled"] = ("gateway.capability.refused", "app_disabled")


async def test_always_allow_is_remembered_a_revocation_asks_again_and_a_block_hides_tools(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir, {})
    user = s.user

    async def notify(request_id: str, decision: str | None) -> None:
        seen_prompts, seen_runs = len(user.prompts), len(user.runs)
        call = await s.ask("capapp", "notification.show", request_id, NOTE)
        if decision is not None:
            prompt = await user.prompt("notification.show", seen_prompts)
            await user.answer(prompt.prompt_id, decision)
        run = await user.run("notification.show", seen_runs)
        await user.done(run.run_id, "completed")
        assert (await s.one(call))[0] == "completed"
        assert len(user.prompts) == seen_prompts + (decision is not None)

    await notify("first", "allow_always")
    await notify("remembered", None)  # the grant: no prompt
    grants = await user.bus.request(
        "gateway",
        GrantSetRequest(app_scope="capapp", capability="notification.show", policy="ask"),
        expect=GrantsListReply,
    )
    mine = {(g.app_scope, g.capability): g for g in grants.grants}
    assert not mine["capapp", "notification.show"].granted  # revoked
    await notify("asked-again", "allow_once")

    # A block of file.open takes capapp.pick (which declares it) out of the inventory.
    assert "capapp.pick" in await tools_at_agent(s, s.revision)
    blocked = await user.bus.request(
        "gateway",
        GrantSetRequest(app_scope="capapp", capability="file.open", policy="deny"),
        expect=GrantsListReply,
    )
    row = {(g.app_scope, g.capability): g for g in blocked.grants}["capapp", "file.open"]
    assert (row.policy, row.granted) == ("deny", True)
    revision = await newer_revision(s, s.revision)
    assert "capapp.pick" not in await tools_at_agent(s, revision)
    assert "capapp.ask" in await tools_at_agent(s, revision)
    await user.bus.request(
        "gateway",
        GrantSetRequest(app_scope="capapp", capability="file.open", policy="ask"),
        expect=GrantsListReply,
    )
    back = await newer_revision(s, revision)
    assert "capapp.pick" in await tools_at_agent(s, back)


INVENTORY = "lineup.v1.client.inventory"


async def newer_revision(s: Scene, than: str) -> str:
    told = await s.agent.pull(INVENTORY, lambda m: int(m["payload"]["revision"]) > int(than))
    return str(told["payload"]["revision"])


async def tools_at_agent(s: Scene, revision: str) -> set[str]:
    told = await s.agent.pull(INVENTORY, lambda m: str(m["payload"]["revision"]) == revision)
    return {t["method"] for t in told["payload"]["tools"]}
