"""The Shell's Apps launcher, hostbridge side: the `shell.apps` frame carries the apps the user
may open (`launchable`), in the greeting (focus's `ViewsReply`) and in every push (focus's
`hostbridge.apps.updated`); an entry that is not the protocol's is left out, the rest kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
from pydantic import ValidationError

from lineup.actors.focus.messages import ViewsReply, ViewsRequest
from lineup.actors.kernel import ActorKind, Envelope, Identity, Message
from lineup.hostbridge.messages import AppsUpdatedEvent
from lineup.hostbridge.shell_protocol import ShellApps
from lineup.tests.hostbridge.test_actor import TOKEN, FakeBus, next_frame, start_hostbridge
from lineup.tests.support.shell import open_shell_socket, shell_at

CHAT = {"instance_id": "chat", "app_scope": "chat", "state": "foreground", "title": "Chat"}
OFFERED = (
    {"app_scope": "app-registry", "title": "App Registry"},
    {"app_scope": "whiteboard", "title": "Whiteboard"},
)


class LaunchBus(FakeBus):
    async def request(self, peer: str, body: Message, **kwargs: Any) -> Message:
        if isinstance(body, ViewsRequest):
            self.requests.append(body)
            return ViewsReply(views=(), foreground="chat", instances=(CHAT,), launchable=OFFERED)
        return await super().request(peer, body, **kwargs)


def test_the_frame_carries_the_launchable_apps_and_refuses_an_entry_not_the_protocols() -> None:
    frame = ShellApps.model_validate({"foreground": "chat", "instances": [], "launchable": OFFERED})
    assert [a.app_scope for a in frame.launchable] == ["app-registry", "whiteboard"]
    assert ShellApps(foreground="chat", instances=()).launchable == ()  # an old focus's
    with pytest.raises(ValidationError):
        ShellApps.model_validate(
            {"foreground": "chat", "instances": [], "launchable": [{"app_scope": "", "title": ""}]}
        )


async def test_the_greeting_and_every_push_carry_the_launchable_apps(tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        actor, _bus, port = await start_hostbridge(nursery, tmp_path, LaunchBus())
        async with open_shell_socket(shell_at(port, TOKEN)) as ws:
            await ws.send_message('{"type": "shell.ready"}')
            assert (await next_frame(ws))["type"] == "shell.hello"
            greeted = await next_frame(ws)
            assert greeted["type"] == "shell.apps"
            assert greeted["launchable"] == list(OFFERED)

            # The registry changed (the Whiteboard disabled, an app installed): focus pushes.
            pushed = AppsUpdatedEvent(
                foreground="chat",
                instances=(CHAT,),
                launchable=(
                    {"app_scope": "app-registry", "title": "App Registry"},
                    {"app_scope": "Not A Scope!", "title": "x"},  # not the protocol's: left out
                    {"app_scope": "notes", "title": "n" * 5000},  # over the bound: left out
                    {"app_scope": "zebra", "title": "Zebra"},
                ),
            )
            env = Envelope(Identity(ActorKind.FOCUS, "focus"), pushed, 1, False)
            actor.on_apps(pushed, env)
            with trio.fail_after(10):
                while (frame := await next_frame(ws))["type"] != "shell.apps":
                    pass
            assert frame["launchable"] == [
                {"app_scope": "app-registry", "title": "App Registry"},
                {"app_scope": "zebra", "title": "Zebra"},
            ]
            assert [i["instance_id"] for i in frame["instances"]] == ["chat"]
        nursery.cancel_scope.cancel()
