from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import trio

from lineup.actors.kernel import ActorContext, ActorKind, Bus, Envelope, Identity, Message
from lineup.ops.devserver.actor import DevServerActor
from lineup.tests.ops._devserver import WAIT


async def _nothing(env: Envelope) -> Message | None:
    return None


def _context(data_dir: Path, config: dict[str, Any]) -> ActorContext:
    identity = Identity(ActorKind.DEV, "devserver")
    return ActorContext(identity, 0, data_dir, config, Bus(identity, _nothing))


async def test_the_actor_serves_from_its_config_with_the_db_in_the_data_dir(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    config = {
        "devserver": {
            "host": "127.0.0.1",
            "port": 0,
            "db_path": "dev.db",
            "users": [{"username": "zoe", "password": "pw", "conversation_id": "conv-z"}],
            "agents": [{"agent_id": "demo-agent", "secret": "s"}],
        }
    }
    actor = DevServerActor(_context(tmp_path, config))
    assert actor.kind is ActorKind.DEV
    with trio.fail_after(WAIT):
        await nursery.start(actor.run)
    assert actor.url is not None
    async with httpx.AsyncClient(base_url=actor.url) as http:
        with trio.fail_after(WAIT):
            login = await http.post("/v1/auth/login", json={"username": "zoe", "password": "pw"})
    assert login.json()["conversation_id"] == "conv-z"
    assert login.json()["user_id"] == "user-zoe"
    assert (tmp_path / "dev.db").exists()
