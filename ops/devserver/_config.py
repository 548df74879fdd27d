"""The devserver's configuration: where it listens, its database, and who may log in."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

__all__ = [
    "DEFAULT_AGENT_ID",
    "DEFAULT_AGENT_SECRET",
    "DEFAULT_CONVERSATION_ID",
    "DEFAULT_HOST",
    "DEFAULT_PASSWORD",
    "DEFAULT_PORT",
    "DEFAULT_USERNAME",
    "DEFAULT_USER_ID",
    "AgentAccount",
    "DevServerConfig",
    "UserAccount",
]

DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8787
DEFAULT_USERNAME: Final = "demo"
DEFAULT_PASSWORD: Final = "demo"
DEFAULT_USER_ID: Final = "user-demo"
DEFAULT_AGENT_ID: Final = "demo-agent"
DEFAULT_AGENT_SECRET: Final = "demo-secret"
DEFAULT_CONVERSATION_ID: Final = "conv-demo"


@dataclass(frozen=True, slots=True)
class UserAccount:
    """A user who logs in with a password and owns exactly one conversation with one agent."""

    username: str
    password: str
    user_id: str
    conversation_id: str
    agent_id: str = DEFAULT_AGENT_ID


@dataclass(frozen=True, slots=True)
class AgentAccount:
    """An agent; it serves the conversations of every user whose `agent_id` names it."""

    agent_id: str
    secret: str


@dataclass(frozen=True, slots=True)
class DevServerConfig:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT  # 0 picks a free port; `serve` reports the bound one
    db_path: Path = Path("devserver.db")
    users: tuple[UserAccount, ...] = (
        UserAccount(DEFAULT_USERNAME, DEFAULT_PASSWORD, DEFAULT_USER_ID, DEFAULT_CONVERSATION_ID),
    )
    agents: tuple[AgentAccount, ...] = (AgentAccount(DEFAULT_AGENT_ID, DEFAULT_AGENT_SECRET),)
    # Fault injection for drills and tests: the fraction of POST calls answered 503 before
    # anything is stored (drawn from a PRNG seeded with `seed`), and latency added to each call.
    fail_rate: float = 0.0
    delay_ms: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.fail_rate <= 1.0:
            raise ValueError("fail_rate must be within [0, 1]")
        if self.delay_ms < 0:
            raise ValueError("delay_ms must not be negative")
        if not 0 <= self.port <= 65535:
            raise ValueError("port must be within [0, 65535]")

    def conversations_of(self, agent_id: str) -> tuple[str, ...]:
        """The conversations `agent_id` serves, in configuration order, without repeats."""
        seen: dict[str, None] = {}
        for user in self.users:
            if user.agent_id == agent_id:
                seen.setdefault(user.conversation_id, None)
        return tuple(seen)

    @classmethod
    def from_mapping(
        cls, raw: Mapping[str, Any], *, base_dir: Path | None = None
    ) -> DevServerConfig:
        """Build from a JSON-able dict (an actor's config). Keys, all optional:

        `host`, `port`, `db_path` (relative paths resolve against `base_dir`),
        `users`: `[{"username", "password", "user_id"?, "conversation_id"?, "agent_id"?}]`,
        `agents`: `[{"agent_id", "secret"}]`, `fail_rate`, `delay_ms`, `seed`.
        Raises `ValueError` (or `KeyError`/`TypeError`) for a malformed entry.
        """
        defaults = cls()
        db_path = Path(str(raw.get("db_path", defaults.db_path)))
        if base_dir is not None and not db_path.is_absolute():
            db_path = base_dir / db_path
        users = defaults.users
        if "users" in raw:
            users = tuple(_user(entry) for entry in raw["users"])
        agents = defaults.agents
        if "agents" in raw:
            agents = tuple(
                AgentAccount(str(a["agent_id"]), str(a["secret"])) for a in raw["agents"]
            )
        return cls(
            host=str(raw.get("host", defaults.host)),
            port=int(raw.get("port", defaults.port)),
            db_path=db_path,
            users=users,
            agents=agents,
            fail_rate=float(raw.get("fail_rate", 0.0)),
            delay_ms=int(raw.get("delay_ms", 0)),
            seed=int(raw.get("seed", 0)),
        )


def _user(entry: Mapping[str, Any]) -> UserAccount:
    username = str(entry["username"])
    return UserAccount(
        username=username,
        password=str(entry["password"]),
        user_id=str(entry.get("user_id", f"user-{username}")),
        conversation_id=str(entry.get("conversation_id", f"conv-{username}")),
        agent_id=str(entry.get("agent_id", DEFAULT_AGENT_ID)),
    )
