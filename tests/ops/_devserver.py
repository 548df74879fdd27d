"""A real devserver on 127.0.0.1:0 inside the test's trio run, and a thin HTTP helper."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import trio

from lineup.ops.devserver import AgentAccount, DevServerConfig, UserAccount
from lineup.ops.devserver._app import DevServerState
from lineup.ops.devserver._db import DevDatabase
from lineup.ops.devserver._serve import serve_state

WAIT = 5.0  # seconds any single wait may take before the test counts it as a hang

# alice and bob talk to agent-1 in separate conversations; carol talks to agent-2.
USERS = (
    UserAccount("alice", "pw-a", "user-alice", "conv-a", "agent-1"),
    UserAccount("bob", "pw-b", "user-bob", "conv-b", "agent-1"),
    UserAccount("carol", "pw-c", "user-carol", "conv-c", "agent-2"),
)
AGENTS = (AgentAccount("agent-1", "secret-1"), AgentAccount("agent-2", "secret-2"))
PASSWORDS = {user.username: user.password for user in USERS}
SECRETS = {agent.agent_id: agent.secret for agent in AGENTS}


@dataclass
class RunningServer:
    url: str
    state: DevServerState
    db: DevDatabase
    _scope: trio.CancelScope
    _stopped: trio.Event = field(default_factory=trio.Event)

    async def stop(self) -> None:
        self._scope.cancel()
        with trio.fail_after(WAIT):
            await self._stopped.wait()


async def start_devserver(nursery: trio.Nursery, db_path: Path, **overrides: Any) -> RunningServer:
    """Serve on a free port until the test ends or `stop()`; the db closes when it stops."""
    settings: dict[str, Any] = {"users": USERS, "agents": AGENTS}
    settings.update(overrides)
    config = DevServerConfig(host="127.0.0.1", port=0, db_path=db_path, **settings)
    db = DevDatabase.open(db_path)
    state = DevServerState(config, db)
    scope = trio.CancelScope()
    stopped = trio.Event()

    async def run(task_status: trio.TaskStatus[str]) -> None:
        try:
            with scope:
                await serve_state(state, task_status=task_status)
        finally:
            db.close()
            stopped.set()

    url: str = await nursery.start(run)
    return RunningServer(url, state, db, scope, stopped)


def envelope(conversation_id: str, **fields: Any) -> dict[str, Any]:
    message: dict[str, Any] = {
        "v": 1,
        "type": "lineup.v1.text",
        "conversation_id": conversation_id,
        "payload": {"markdown": "hello"},
    }
    message.update(fields)
    return message


class Api:
    """Raw calls against a devserver; every call has a deadline."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    async def user_token(self, username: str) -> str:
        response = await self.call(
            "POST",
            "/v1/auth/login",
            json={"username": username, "password": PASSWORDS[username]},
        )
        assert response.status_code == 200
        token = response.json()["token"]
        assert isinstance(token, str)
        return token

    async def agent_token(self, agent_id: str) -> str:
        response = await self.call(
            "POST", "/v1/agent/login", json={"agent_id": agent_id, "secret": SECRETS[agent_id]}
        )
        assert response.status_code == 200
        token = response.json()["token"]
        assert isinstance(token, str)
        return token

    async def post(
        self, path: str, token: str, body: dict[str, Any], key: str | None
    ) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}"}
        if key is not None:
            headers["Idempotency-Key"] = key
        return await self.call("POST", path, json=body, headers=headers)

    async def sync(
        self, path: str, token: str, cursor: str = "", timeout_ms: int = 0
    ) -> httpx.Response:
        params = {"cursor": cursor, "timeout_ms": str(timeout_ms)}
        return await self.call(
            "GET", path, params=params, headers={"Authorization": f"Bearer {token}"}
        )

    async def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        with trio.fail_after(WAIT + 30):
            return await self.http.request(method, path, **kwargs)


def error_code(response: httpx.Response) -> str:
    body = response.json()
    assert isinstance(body, dict)
    code = body["error"]
    assert isinstance(code, str)
    return code
