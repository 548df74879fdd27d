"""The app of the SDK's behaviour suite (`tests/sdk/behaviour/`): each mode of `behave.run` uses
one service of the SDK against the runtime and reports what the runtime answered — receipts,
revisions, refusal codes — in its result, or, for what comes after the call's end, in its view.
The suite runs it on the testkit's fake and as a dev app in a real runtime, and expects the same
report from both."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppContext, AppInfo, LineUpError, MiniApp, ToolCall, tool
from lineup.sdk import protocol as p
from lineup.sdk.interactions import ConfirmRequest
from lineup.sdk.manifest import AgentSubscription, Entrypoint

SCOPE = "behave"
VIEW_KIND = "behave"  # a kind no one trusts: any app may draw it
OK = "ok"

Mode = Literal[
    "twice",
    "bad_output",
    "session",
    "session_bounds",
    "render",
    "render_bounds",
    "ask",
    "say",
    "close_other",
    "artifacts",
    "context",
    "surface",
    "fail",
    "cancel",
    "raise",
    "subscribe",
    "withdraw",
    "ask_parent",
    "capabilities",
    "trust",
    "inbox",
]
REFUSED_ARTIFACTS = (  # (media type, name), each refused by the gateway
    ("application/x-unheard-of", "a.txt"),
    ("text/plain", "../a.txt"),
    ("text/plain", "a\x07.txt"),
)


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class EchoInput(_Model):
    text: str = Field(max_length=100)


class EchoOutput(_Model):
    text: str = Field(max_length=100)


class RunInput(_Model):
    mode: Mode
    # For the bounds, each tried once, in order: documents of `sizes` bytes, then of `depths`
    # levels (session data), or views of `keys` keys, then of `sizes` bytes (a render).
    sizes: tuple[int, ...] = Field(default=(), max_length=4)
    depths: tuple[int, ...] = Field(default=(), max_length=4)
    keys: tuple[int, ...] = Field(default=(), max_length=4)
    other: str | None = Field(default=None, max_length=200)  # another instance of this app


class RunOutput(_Model):
    instance_id: str = Field(max_length=200)
    codes: tuple[str, ...] = Field(default=(), max_length=16)
    revisions: tuple[int, ...] = Field(default=(), max_length=16)
    data: str | None = Field(default=None, max_length=1000)  # session data, as JSON text
    interaction_id: str | None = Field(default=None, max_length=300)
    same: bool | None = None  # artifacts: the repeat and the read-back matched


async def code_of(attempt: Any) -> str:
    """`ok`, or the code the runtime refused `attempt()` with."""
    try:
        await attempt()
    except LineUpError as exc:
        return exc.code.value
    return OK


def sized(size: int) -> dict[str, Any]:
    """A document whose compact UTF-8 JSON is exactly `size` bytes (at least 8)."""
    return {"x": "y" * (size - len('{"x":""}'))}


def nested(depth: int) -> dict[str, Any]:
    """Objects nested `depth` deep (`{}` is 1)."""
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def sized_view(size: int) -> dict[str, Any]:
    """A view whose compact UTF-8 JSON is exactly `size` bytes."""
    return {"kind": VIEW_KIND, "x": "y" * (size - len(f'{{"kind":"{VIEW_KIND}","x":""}}'))}


def wide(keys: int) -> dict[str, Any]:
    """A view of `keys` keys, its kind among them."""
    return {"kind": VIEW_KIND, **{f"k{i}": i for i in range(keys - 1)}}


class Behave(MiniApp):
    app_info = AppInfo(
        app_scope=SCOPE,
        version="1.0.0",
        kind="bundled-reference",
        requested_capabilities=("notification.show",),
        entrypoints=(
            Entrypoint(id="board", kind="surface", document="index.html", events=("poke",)),
        ),
        # It asks for the Agent's conversation-wide texts too (seed 004 §5.3), which the
        # inbox modes list beside its instances'.
        agent_subscriptions=(AgentSubscription(type="lineup.v1.text", scope="conversation"),),
    )

    async def start(self, app: AppContext) -> None:
        self.app = app
        self.told: dict[str, list[dict[str, Any]]] = {}  # instance_id -> interactions' ends
        self.heard: dict[str, list[list[Any]]] = {}  # instance_id -> [revision, data] heard

    @tool("behave.echo", handling="launch", input=EchoInput, output=EchoOutput)
    async def echo(self, call: ToolCall[EchoInput]) -> EchoOutput:
        return EchoOutput(text=call.input.text)

    @tool("behave.run", handling="launch", input=RunInput, output=RunOutput, timeout_ms=60_000)
    async def run(self, call: ToolCall[RunInput]) -> RunOutput | None:
        instance = call.instance_id
        mode = call.input.mode
        sink: Any = call._sink  # the runtime itself, past the SDK's own guard of one terminal
        if mode == "twice":
            await call.complete(RunOutput(instance_id=instance))
            again = await code_of(lambda: sink.complete(call.call_id, {"instance_id": instance}))
            failed = await code_of(lambda: sink.fail(call.call_id, "too_late"))
            await self.app.ui.render(instance, {"kind": VIEW_KIND, "after_final": [again, failed]})
            return None
        if mode == "bad_output":
            refused = await code_of(lambda: sink.complete(call.call_id, {"nope": 1}))
            return RunOutput(instance_id=instance, codes=(refused,))
        if mode == "session":
            return await self._session(instance)
        if mode == "session_bounds":
            documents = [*map(sized, call.input.sizes), *map(nested, call.input.depths)]
            codes = [await self._write(instance, document) for document in documents]
            return RunOutput(instance_id=instance, codes=tuple(codes))
        if mode == "render":
            await self.app.ui.render(instance, {"kind": VIEW_KIND, "shown": call.call_id})
            return RunOutput(instance_id=instance)
        if mode == "render_bounds":
            views = [*map(wide, call.input.keys), *map(sized_view, call.input.sizes)]
            codes = [await code_of(lambda v=v: self.app.ui.render(instance, v)) for v in views]
            return RunOutput(instance_id=instance, codes=tuple(codes))
        if mode == "ask":
            record = await self.app.ui.request(
                ConfirmRequest(kind="confirm", title="Go", prompt="Go on?"),
                instance_id=instance,
                request_id=f"ask:{call.call_id}",
            )
            return RunOutput(instance_id=instance, interaction_id=record.interaction_id)
        if mode in ("fail", "cancel", "raise"):
            await call.progress({"step": 1})
            if mode == "fail":
                await call.fail("out_of_paper")
            elif mode == "cancel":
                await call.cancel("not_today")
            else:
                raise RuntimeError("the handler broke")
            return None
        if mode == "context":
            facts = await self.app.refresh(instance)
            seen = [facts.app_scope, facts.instance_id, facts.state, facts.mode]
            return RunOutput(instance_id=instance, data=json.dumps(seen))
        if mode == "surface":
            return await self._surface(instance)
        if mode == "subscribe":
            await self.app.session_data.subscribe(instance, self._heard)
            data = self.app.session_data
            for revision in (0, 1):
                await data.replace(instance, {"n": revision + 1}, revision)
            return RunOutput(instance_id=instance)
        if mode == "withdraw":
            return await self._withdraw(instance, call.call_id)
        if mode == "ask_parent":
            await self._ask_parent(call)
            return None
        if mode == "trust":
            # What focus keeps for the apps it trusts: another app's component, the runtime's
            # own view kinds, an item list; an untrusted kind is drawn.
            ui = self.app.ui
            item = p.ViewItem(id="i1", order=1, fields={"markdown": "hi"})
            codes = [
                await code_of(lambda: ui.render(instance, {"kind": "chat.timeline"})),
                await code_of(lambda: ui.render(instance, {"kind": "task.dashboard"})),
                await code_of(lambda: ui.render(instance, {"kind": "lineup.surface"})),
                await code_of(lambda: ui.put_items(instance, [item])),
                await code_of(lambda: ui.render(instance, {"kind": VIEW_KIND})),
            ]
            return RunOutput(instance_id=instance, codes=tuple(codes))
        if mode == "inbox":
            return await self._inbox(instance, call.input.other or "")
        if mode == "capabilities":
            return await self._capabilities(instance, call.call_id)
        if mode == "close_other":
            return await self._close_other(instance, call.input.other or "")
        if mode == "artifacts":
            return await self._artifacts(instance, call.call_id)
        # "say": what the runtime reserves for other apps: the user's text, the registry.
        said = await code_of(lambda: self.app.conversation.send_text(f"m:{call.call_id}", "hi"))
        listed = await code_of(self.app.registry.list)
        return RunOutput(instance_id=instance, codes=(said, listed))

    async def _heard(self, snapshot: p.SessionDataSnapshot) -> None:
        """Show every revision of the instance's session data the app hears of, in order."""
        heard = self.heard.setdefault(snapshot.instance_id, [])
        heard.append([snapshot.revision, snapshot.data])
        await self.app.ui.render(snapshot.instance_id, {"kind": VIEW_KIND, "heard": heard})

    async def _withdraw(self, instance: str, call_id: str) -> RunOutput:
        """Ask, withdraw the question, withdraw it again, read it; read one that is not ours."""
        ui = self.app.ui
        asked = await ui.request(
            ConfirmRequest(title="Go", prompt="Go on?"),
            instance_id=instance,
            request_id=f"withdraw:{call_id}",
        )
        first = await ui.cancel(asked.interaction_id)
        again = await ui.cancel(asked.interaction_id)
        read = await ui.get(asked.interaction_id)
        seen = [
            [first.changed, first.interaction.state, first.interaction.terminal_code],
            [again.changed, again.interaction.state],
            [read.state, read.terminal_code],
        ]
        missing = await code_of(lambda: ui.get("lu:interaction:app:" + "0" * 40))
        return RunOutput(instance_id=instance, codes=(missing,), data=json.dumps(seen))

    async def _ask_parent(self, call: ToolCall[RunInput]) -> None:
        """Ask a question tied to this call while it runs, then once it has its result; show
        both answers in the view."""
        instance = call.instance_id

        async def ask(key: str) -> Any:
            return await self.app.ui.request(
                ConfirmRequest(title="Go", prompt="Go on?"),
                instance_id=instance,
                parent_call_id=call.call_id,
                request_id=f"{key}:{call.call_id}",
            )

        codes = [await code_of(lambda: ask("running"))]
        await call.complete(RunOutput(instance_id=instance))
        codes.append(await code_of(lambda: ask("final")))
        await self.app.ui.render(instance, {"kind": VIEW_KIND, "asked": codes})

    async def _surface(self, instance: str) -> RunOutput:
        """Open the instance's Surface, open it again, patch it, close it twice, patch it
        closed; then open one from an entrypoint the manifest lacks."""
        surfaces = self.app.surfaces
        opened = await surfaces.request_open(instance, state={"n": 0})
        replies = [
            opened,
            await surfaces.request_open(instance, state={"n": 9}),
            await surfaces.update(opened.surface_id, {"n": 1}),
            await surfaces.request_close(opened.surface_id),
            await surfaces.request_close(opened.surface_id),
        ]
        codes = [
            await code_of(lambda: surfaces.update(opened.surface_id, {"n": 2})),
            await code_of(lambda: surfaces.request_open(instance, entrypoint="nowhere")),
        ]
        seen = [[r.surface_id, r.entrypoint, r.state_revision, r.open, r.changed] for r in replies]
        return RunOutput(instance_id=instance, codes=tuple(codes), data=json.dumps(seen))

    async def _inbox(self, own: str, other: str) -> RunOutput:
        """What this instance's inbox, another instance's and the app's hold; what
        acknowledging each of them from this instance changed; what is left."""
        inbox = self.app.inbox

        async def held() -> dict[str, list[str]]:
            return {
                name: [d.delivery_id for d in await inbox.list(instance_id=instance_id)]
                for name, instance_id in (("own", own), ("other", other), ("app", None))
            }

        before = await held()
        listed = sorted({i for ids in before.values() for i in ids})
        acks = {i: (await inbox.acknowledge(i, instance_id=own)).changed for i in listed}
        seen = {"before": before, "acks": acks, "after": await held()}
        return RunOutput(instance_id=own, data=json.dumps(seen))

    async def _capabilities(self, instance: str, call_id: str) -> RunOutput:
        """What the gateway decides before it would ask the user anything: a capability the
        manifest does not declare, a declared one with an input its model refuses, one for an
        instance that is not there; and the first again, by its request id."""
        ask = self.app.capabilities.request
        results = [
            await ask("file.open", "open a file", instance_id=instance, request_id=f"{call_id}:1"),
            await ask("notification.show", "say", {"nope": 1}, instance_id=instance),
            await ask("notification.show", "say", {"title": "t"}, instance_id=SCOPE + ":gone"),
            await ask("file.open", "open a file", instance_id=instance, request_id=f"{call_id}:1"),
        ]
        seen = [[r.capability, r.status, r.code, r.output] for r in results]
        return RunOutput(instance_id=instance, data=json.dumps(seen))

    async def _close_other(self, instance: str, other: str) -> RunOutput:
        """Close another instance of this app, then try its view and its session data."""
        data = self.app.session_data
        codes = [
            await code_of(lambda: self.app.lifecycle.request_close(other)),
            await code_of(lambda: self.app.ui.render(other, {"kind": VIEW_KIND})),
            await code_of(lambda: data.get(other)),
            await code_of(lambda: data.replace(other, {"n": 1}, 0)),
            await code_of(lambda: self.app.lifecycle.request_close(other)),
        ]
        return RunOutput(instance_id=instance, codes=tuple(codes))

    async def _artifacts(self, instance: str, call_id: str) -> RunOutput:
        """Make an artifact, make it again (the same request), read it back; then what the
        gateway refuses: an unknown id, and each of `REFUSED_ARTIFACTS`."""
        artifacts = self.app.artifacts
        made, again = [
            await artifacts.create(instance, "text/plain", b"hello", "a.txt", request_id=call_id)
            for _ in range(2)
        ]
        info, content = await artifacts.read(made.artifact_id)
        listed = await artifacts.list(instance)
        same = (
            again == made
            and info == made
            and content == b"hello"
            and [a.artifact_id for a in listed] == [made.artifact_id]
            and (made.name, made.media_type, made.size, made.instance_id)
            == ("a.txt", "text/plain", 5, instance)
        )
        unknown = "art_" + "0" * 32
        codes = [await code_of(lambda: artifacts.read(unknown))]
        for media_type, name in REFUSED_ARTIFACTS:
            codes.append(
                await code_of(lambda m=media_type, n=name: artifacts.create(instance, m, b"x", n))
            )
        return RunOutput(instance_id=instance, codes=tuple(codes), same=same)

    async def _write(self, instance: str, document: dict[str, Any]) -> str:
        data = self.app.session_data
        revision = (await data.get(instance)).revision
        return await code_of(lambda: data.replace(instance, document, revision))

    async def _session(self, instance: str) -> RunOutput:
        """Compare-and-set: a write at the revision read, one at a stale revision, the retry of
        the applied write, a write at the new revision; the revisions seen on the way."""
        data = self.app.session_data
        first = await data.get(instance)
        revisions = [first.revision]
        codes = []
        for document, expected in (({"n": 1}, 0), ({"n": 2}, 0), ({"n": 1}, 0), ({"n": 3}, 1)):
            try:
                revisions.append(await data.replace(instance, document, expected))
                codes.append(OK)
            except LineUpError as exc:
                codes.append(exc.code.value)
        last = await data.get(instance)
        revisions.append(last.revision)
        return RunOutput(
            instance_id=instance,
            codes=tuple(codes),
            revisions=tuple(revisions),
            data=json.dumps([first.data, last.data]),
        )

    async def on_interaction_updated(self, record: p.InteractionRecord) -> None:
        if record.instance_id is None:
            return
        told = self.told.setdefault(record.instance_id, [])
        told.append({"state": record.state, "result": record.result})
        await self.app.ui.render(record.instance_id, {"kind": VIEW_KIND, "told": told})
