"""The MiniApps' processes on others' word: focus has one started (only the SDK's host, in the
sandbox the supervisor sets) or stopped. A child that broke the protocol is killed, and a MiniApp
stays down (its instances fail); one that ended by itself leaves its instances without a process.
Focus is told of each. Focus decides *which* app runs, never *what code* runs.

An MCP app (its config names `mcp`: the command of its server, from its manifest, and its
folder) runs the SDK's MCP adapter (`MCP_HOST`) in the `mcp` sandbox profile, which may execute
the command's program (resolved here, on the runtime's PATH) and what is in its folder, nothing
else (`_sandbox`).
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
from collections.abc import MutableMapping
from pathlib import Path
from typing import Final

import trio

from lineup.actors.kernel import (
    ActorKind,
    AuditRecord,
    ErrorCode,
    Identity,
    LineUpError,
)
from lineup.actors.kernel.control import (
    AppFailedEvent,
    ChildStartReply,
    ChildStartRequest,
    ChildStopReply,
    ChildStopRequest,
    PeerMisbehavedEvent,
)

from ._mcp_secrets import SecretsUnsafe, env_for
from ._peers import Child, signal_child
from ._process import STOP_KILL_WAIT, Processes
from ._spec import ChildSpec, Restart

__all__ = ["MINIAPP_HOST", "MiniApps"]

log = logging.getLogger("lineup.supervisor")

MINIAPP_HOST: Final = "lineup.sdk:MiniAppHost"  # the program a dynamic child runs
MCP_HOST: Final = "lineup.sdk._mcp_host:McpAppHost"  # ... or, for an MCP app, this one


class MiniApps:
    """Starts and stops MiniApps' processes as asked (see the module's docstring)."""

    def __init__(
        self,
        children: MutableMapping[str, Child],
        processes: Processes,
        data_dir: Path,
        start_timeout: float,
    ) -> None:
        self._children = children
        self._processes = processes
        self._bus = processes.bus
        self._data_dir = data_dir
        self._start_timeout = start_timeout
        self._lock = trio.Lock()
        self.allow_weak_sandbox = False

    async def start(self, request: ChildStartRequest) -> ChildStartReply:
        """Start one MiniApp's process (idempotent). Only `miniapp:<scope>` names, only the
        SDK's host as the program: focus decides *which* app runs, never *what code* runs."""
        if not request.name.startswith("miniapp:") or request.name in (
            "miniapp:",
            *(n for n, c in self._children.items() if c.identity.kind is not ActorKind.MINIAPP),
        ):
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, request.name)
        child = self._children.get(request.name)
        config = dict(request.config)
        policy = self.sandbox_policy(request.name)
        if config.get("mcp") is not None:
            asked = config["mcp"]
            config["mcp"], policy = mcp_server(asked, policy)
            env = _secrets_of(self._data_dir, request.name, asked)
            if env:  # an imported server's: in its boot message alone (`_mcp_secrets`)
                config["mcp"]["env"] = env
        spec = ChildSpec(
            request.name,
            ActorKind.MINIAPP,
            MINIAPP_HOST if config.get("mcp") is None else MCP_HOST,
            restart=Restart.TRANSIENT,
            # The sandbox is the supervisor's to set, after focus's config: a request can
            # name an app, never weaken its confinement.
            config={**config, "sandbox": policy},
        )
        if child is None:
            child = Child(Identity(ActorKind.MINIAPP, request.name), spec=spec)
            self._children[request.name] = child
        elif not child.is_up():
            # What focus names now runs (an installed app updated or rolled back since).
            child.spec = spec
        if not child.is_up():
            # The child's own lock too: a restart of it may be starting a process (one under
            # way is waited for, and found up, not started again on top of it).
            async with self._lock, child.start_lock:
                if not child.is_up() and not await self._processes.start(
                    child, self._start_timeout
                ):
                    raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, request.name)
        assert child.pid is not None
        return ChildStartReply(name=request.name, pid=child.pid, incarnation=child.incarnation)

    def sandbox_policy(self, name: str) -> dict[str, object]:
        """The confinement of one MiniApp's process (DESIGN §8; see `_sandbox`)."""
        return {
            "profile": "miniapp",
            "app_scope": name.removeprefix("miniapp:"),
            "data_dir": str(self._data_dir),
            "allow_weak": self.allow_weak_sandbox,
        }

    async def stop(self, request: ChildStopRequest) -> ChildStopReply:
        child = self._children.get(request.name)
        if child is None or child.identity.kind is not ActorKind.MINIAPP:
            return ChildStopReply(name=request.name, stopped=False)
        await self._processes.stop(child)
        return ChildStopReply(name=request.name, stopped=True)

    async def ended(self, child: Child) -> None:
        """A MiniApp's host runs until it is stopped; one that ended by itself (exit 0) left its
        instances without a process. They fail and their calls end now, not at their deadlines;
        a later launch starts the app again."""
        self._bus.audit(
            AuditRecord(
                event="supervisor.miniapp_exited",
                actor="supervisor",
                peer=child.identity.name,
                code=ErrorCode.APP_EXITED.value,
            )
        )
        try:
            await self._bus.notify(
                "focus",
                AppFailedEvent(
                    app_scope=child.identity.name.removeprefix("miniapp:"),
                    code=ErrorCode.APP_EXITED.value,
                ),
                timeout=5.0,
            )
        except LineUpError:
            log.info("supervisor.focus_not_told app=%s", child.identity.name)

    async def stop_misbehaving(self, reporter: Identity, event: PeerMisbehavedEvent) -> None:
        child = self._children.get(event.peer)
        self._bus.audit(
            AuditRecord(
                event="supervisor.peer_misbehaved",
                actor="supervisor",
                peer=event.peer,
                code=event.code,
                subject_id=reporter.name,
            )
        )
        if child is None or child.incarnation != event.incarnation:
            return
        log.warning("supervisor.killing_misbehaving name=%s code=%s", event.peer, event.code)
        # A MiniApp that breaks its contract is stopped for good, as Chromium kills a renderer
        # that sends a bad message: not restarted, its instances fail, focus goes back. One
        # whose spec says otherwise (the system app, which must not go dark) is restarted.
        stays_down = child.identity.kind is ActorKind.MINIAPP and not (
            child.spec is not None and child.spec.restart_after_misbehaving
        )
        if stays_down:
            child.expected_exit = True
        signal_child(child, signal.SIGKILL)
        if stays_down:
            with trio.move_on_after(STOP_KILL_WAIT):
                await child.exited.wait()
            child.move("killed")
            try:
                await self._bus.notify(
                    "focus",
                    AppFailedEvent(app_scope=event.peer.removeprefix("miniapp:"), code=event.code),
                    timeout=5.0,
                )
            except LineUpError:
                log.error("supervisor.focus_not_told app=%s", event.peer)


def _secrets_of(data_dir: Path, name: str, asked: object) -> dict[str, str] | None:
    """The env values kept for this server by `lineup app import-mcp`, if it is the server they
    were kept for. Raises `invalid_arguments` when its secrets file is not owner-only."""
    scope = name.removeprefix("miniapp:")
    if not isinstance(asked, dict):
        return None
    command, folder = asked.get("command"), asked.get("folder")
    if not isinstance(command, list | tuple) or not isinstance(folder, str):
        return None
    try:
        return env_for(data_dir, scope, [str(part) for part in command], folder)
    except SecretsUnsafe as exc:
        log.error("supervisor.mcp_secrets_refused app=%s why=%s", scope, exc)
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "mcp: secrets not owner-only") from None


def mcp_server(
    server: object, policy: dict[str, object]
) -> tuple[dict[str, object], dict[str, object]]:
    """An MCP app's server (`{"command": [...], "folder": str}`) with its program resolved on
    the runtime's PATH, and the `mcp` sandbox profile that may execute it and its folder.
    Raises `invalid_arguments` for a server that names no program found, or no absolute folder."""
    if not isinstance(server, dict):
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "mcp")
    command = server.get("command")
    folder = server.get("folder")
    if (
        not isinstance(command, list | tuple)
        or not command
        or not all(isinstance(part, str) for part in command)
        or not isinstance(folder, str)
        or not Path(folder).is_absolute()
    ):
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "mcp")
    program = shutil.which(command[0], path=os.environ.get("PATH", os.defpath))
    if program is None:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "mcp: program not found")
    resolved: dict[str, object] = {"command": [program, *command[1:]], "folder": folder}
    # Hosts it declares: its sandbox gets the proxy's port (`lineup.sdk.mcp_network`).
    proxy = bool(server.get("network"))
    return resolved, {**policy, "profile": "mcp", "exec_paths": [program, folder], "proxy": proxy}
