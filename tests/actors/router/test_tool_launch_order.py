"""A call that comes after a launch of its app is given to that launch's instance, however the
news of the instance and focus's answers cross on the way (seed 004 §7.3: an `app_ready` call
for an instance still starting is held, not refused).

The router asks focus for the call's instance; focus answers "none", then makes the launch's
instance and announces it. Its `started` is handled the moment the router reads it, while the
answer only wakes the asking task: so the router may take the news before the answer. A faster
link made that window common enough to fail an e2e test under load; here focus is scripted to
open it every time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import trio

from lineup.actors.focus.messages import (
    FindInstanceRequest,
    InstanceReply,
    InventoryRequest,
    LaunchRequest,
)
from lineup.actors.kernel import (
    ActorKind,
    Envelope,
    ErrorCode,
    Identity,
    LineUpError,
    Message,
)
from lineup.actors.router._pipeline import ToolPipeline
from lineup.tests.actors.router.test_tool_instance_end import (
    INSTANCE,
    INVENTORY,
    SCOPE,
    agent_calls,
    call_state,
    pipeline_of,
)
from lineup.tests.actors.store._harness import WAIT, router_peer, start_store

HANDED_OVER: Final = ("waiting_for_app", "delivered", "running")


async def test_a_call_after_a_launch_waits_for_its_instance_when_the_news_beats_the_answer(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    store = await start_store(nursery, tmp_path / "data")
    await store.put_live_instances(SCOPE, INSTANCE)
    pipeline: ToolPipeline | None = None
    finds = 0

    async def focus(env: Envelope) -> Message | None:
        nonlocal finds
        assert pipeline is not None
        if isinstance(env.body, LaunchRequest):
            await trio.sleep_forever()  # its app starts slowly: the launch stays under way
        if isinstance(env.body, FindInstanceRequest):
            finds += 1
            if finds == 1:
                # "None yet" — and the launch's instance is made and announced at once, its
                # news read by the router before this answer is.
                pipeline.instance_started(SCOPE)
                raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, SCOPE)
            return InstanceReply(instance_id=INSTANCE, app_scope=SCOPE, state="foreground")
        if isinstance(env.body, InventoryRequest):
            return INVENTORY
        return None

    await router_peer(nursery, store, Identity(ActorKind.FOCUS, "focus"), focus)
    pipeline = pipeline_of(store.router)
    await nursery.start(pipeline.run)

    with trio.fail_after(WAIT):
        await agent_calls(pipeline, f"{SCOPE}.launch", "launch-1")
        await agent_calls(pipeline, f"{SCOPE}.direct", "call-1")

    state, code = await call_state(store, "call-1")
    assert (state, code) in [(s, None) for s in HANDED_OVER]
    assert finds == 2  # asked again once the launch had its instance
