"""How each end of the standard interaction a form became is the server's answer
(`sdk/_mcp_elicit.py`), against an in-memory runtime: answered is accept, the user's cancel is
decline, an expiry or any other end is cancel; the question is tied to the one call running;
a question asked while several calls ran is the app's, withdrawn once each of them ended; a
form no card can ask is declined and reported by its code; the session declares form mode
only."""

from __future__ import annotations

from typing import Any, TypeVar

import mcp_types as types
import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from lineup.actors.kernel import Message
from lineup.sdk import protocol as p
from lineup.sdk._mcp_elicit import Elicitations, LineUpClientSession

M = TypeVar("M", bound=Message)
FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


class FakeRuntime:
    """The router and focus as the adapter's channel sees them: each question is recorded,
    and read back as `end` says it ended."""

    def __init__(self, end: dict[str, Any]) -> None:
        self.end = end
        self.asked: list[p.InteractionAskRequest] = []
        self.reports: list[p.DiagnosticsReportRequest] = []
        self.withdrawn: list[str] = []

    def _record(self, **changes: Any) -> p.InteractionRecord:
        asked = self.asked[-1]
        base = {
            "interaction_id": "i-1",
            "kind": asked.request["kind"],
            "state": "presented",
            "request": asked.request,
            "created_at": 0.0,
        }
        return p.InteractionRecord(**{**base, **changes})

    async def call(self, peer: str, request: Message, expect: type[M]) -> M:
        if isinstance(request, p.InteractionAskRequest):
            self.asked.append(request)
            reply: Message = p.InteractionReceipt(interaction=self._record())
        elif isinstance(request, p.InteractionGetRequest):
            reply = p.InteractionReceipt(interaction=self._record(**self.end), changed=False)
        elif isinstance(request, p.InteractionCancelRequest):
            self.withdrawn.append(request.interaction_id)
            ended = self._record(state="cancelled", terminal_code=request.reason)
            reply = p.InteractionReceipt(interaction=ended)
        elif isinstance(request, p.DiagnosticsReportRequest):
            self.reports.append(request)
            reply = p.CommandReceipt(id=request.instance_id)
        else:
            raise AssertionError(request)
        assert isinstance(reply, expect)
        return reply


def _form(schema: dict[str, Any]) -> types.ElicitRequestFormParams:
    return types.ElicitRequestFormParams(message="Who?", requested_schema=schema)


async def _elicit(
    end: dict[str, Any], schema: dict[str, Any] = FORM
) -> tuple[Any, FakeRuntime, Elicitations]:
    runtime = FakeRuntime(end)
    elicit = Elicitations(runtime, "app", "app:1")
    elicit.calls["call-1"] = "app:7"
    with trio.fail_after(5):
        answer = await elicit(None, _form(schema))  # type: ignore[arg-type]
    return answer, runtime, elicit


@pytest.mark.parametrize(
    ("end", "action"),
    [
        ({"state": "completed", "result": {"values": {"f0": "Ada"}}}, "accept"),
        ({"state": "cancelled", "terminal_code": "cancelled_by_user"}, "decline"),
        ({"state": "expired", "terminal_code": "operation_expired"}, "cancel"),
        ({"state": "cancelled", "terminal_code": "app_closed"}, "cancel"),
        ({"state": "failed", "terminal_code": "store_unavailable"}, "cancel"),
    ],
    ids=["answered", "user-cancel", "expired", "app-closed", "failed"],
)
async def test_each_end_of_the_question_is_the_servers_answer(
    end: dict[str, Any], action: str
) -> None:
    answer, runtime, _ = await _elicit(end)
    assert isinstance(answer, types.ElicitResult)
    assert answer.action == action
    assert answer.content == ({"name": "Ada"} if action == "accept" else None)
    (asked,) = runtime.asked
    # Tied to the one call running, for its instance; the expiry is the module's.
    assert (asked.parent_call_id, asked.instance_id) == ("call-1", "app:7")
    assert asked.expires_in_ms == 10 * 60 * 1000


async def test_a_question_asked_while_calls_ran_is_withdrawn_once_each_of_them_ended() -> None:
    runtime = FakeRuntime({})  # nobody answers
    elicit = Elicitations(runtime, "app", "app:1")
    elicit.calls.update({"a": "app:7", "b": "app:8"})
    elicit.ui_call_started("a")  # its UI's own call, beside the Agent's of the same id
    answers: list[Any] = []

    async def asked_by_the_server() -> None:
        answers.append(await elicit(None, _form(FORM)))  # type: ignore[arg-type]

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(asked_by_the_server)
            await wait_all_tasks_blocked()
            (asked,) = runtime.asked
            # Which call asked is not said over stdio: the app's question, for no call.
            assert (asked.parent_call_id, asked.instance_id) == (None, "app:1")
            elicit.calls["c"] = "app:9"  # started after it was asked: not its call
            for call_id in ("a", "b"):  # the Agent's calls: its UI's "a" still runs
                elicit.call_ended(call_id)
                await wait_all_tasks_blocked()
                assert (runtime.withdrawn, answers) == ([], [])  # one that asked may still run
            elicit.ui_call_ended("a")
    assert runtime.withdrawn == ["i-1"]
    (answer,) = answers
    assert isinstance(answer, types.ElicitResult) and answer.action == "cancel"


async def test_a_form_no_card_can_ask_is_declined_and_reported_by_its_code_alone() -> None:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}, "n": {"type": "string"}}}
    schema["required"] = ["ok"]
    answer, runtime, _ = await _elicit({}, schema)
    assert isinstance(answer, types.ElicitResult) and answer.action == "decline"
    assert runtime.asked == []
    (report,) = runtime.reports
    assert report.error is not None
    assert (report.error.code, report.error.message) == ("mcp_elicitation_unsupported", "")


async def test_url_mode_is_refused_with_its_code() -> None:
    runtime = FakeRuntime({})
    params = types.ElicitRequestURLParams(message="Go", url="https://x.test/", elicitation_id="e")
    answer = await Elicitations(runtime, "app", "app:1")(None, params)  # type: ignore[arg-type]
    assert isinstance(answer, types.ErrorData)
    assert answer.message == "mcp_elicitation_url_unsupported"


def test_the_session_declares_form_mode_only() -> None:
    send, receive = trio.open_memory_channel[Any](1)
    callback = Elicitations(FakeRuntime({}), "a", "a:1")
    session = LineUpClientSession(receive, send, elicitation_callback=callback)
    capabilities = session._build_capabilities("2025-11-25")
    assert capabilities.elicitation == types.ElicitationCapability(
        form=types.FormElicitationCapability()
    )
