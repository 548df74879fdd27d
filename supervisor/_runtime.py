"""The runtime's tree as `lineup run` builds it: which children, in which order, told what.

Each child gets only its own configuration: the AppServer address and credentials go to the
transport alone (and to the dev parts that *are* the AppServer and the Agent); the Shell's token
goes to the hostbridge alone. The Shell's port and token are the data dir's (`_shell_address`):
a runtime started again is where it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import lineup
from lineup._early import RUNTIME_LANES, RUNTIME_PRELOAD
from lineup.actors.kernel import ActorKind
from lineup.miniapps import catalogue

from ._ports import free_port
from ._shell_address import shell_address
from ._spec import HOSTBRIDGE_GRACE, ChildSpec, Restart

__all__ = [
    "LANES",
    "PRELOAD",
    "RuntimeOptions",
    "RuntimePlan",
    "ShellSocket",
    "free_port",
    "plan_runtime",
    "shell_socket",
]

PRELOAD: Final = RUNTIME_PRELOAD  # what the zygote imports for the runtime's children
DEV_WATCHER: Final = "lineup.ops.devwatch:DevWatchActor"  # `--dev-app`'s folder watcher
LANES: Final = RUNTIME_LANES  # and the zygotes beside it (see `_spawn`)
# With the AppServer embedded, the tree is ready once the transport's first login is answered
# (milliseconds on loopback): a message sent at "ready" then finds the session. Bounded, as the
# transport's own first start may fail.
EMBEDDED_LINK_WAIT: Final = 5.0


@dataclass(frozen=True)
class RuntimeOptions:
    data_dir: Path
    sqlite_synchronous: str = "normal"
    appserver: str | None = None  # None: the embedded reference AppServer on loopback
    username: str = "demo"
    password: str = "demo"
    agent_id: str = "demo-agent"
    agent_secret: str = "demo-secret"
    conversation_id: str = "conv-demo"
    demo_agent: bool = True
    shell_port: int = 0  # 0: the port of the data dir's last run, else any free one
    new_token: bool = False  # rotate the Shell's token (else the data dir's is used again)
    appserver_port: int = 0
    # More apps for focus's registry, beside the bundled ones (tests, dev): entries shaped
    # like `lineup.miniapps.catalogue.BundledApp.registry_entry()`.
    extra_apps: tuple[dict[str, str], ...] = ()
    allow_weak_sandbox: bool = False  # run MiniApps even where a sandbox layer is missing
    dev_apps: tuple[Path, ...] = ()  # unsigned MiniApp packages loaded from folders
    # The local catalog folder (`--catalog`): its bundles are offered in the App Registry; its
    # `.pub` keys are trusted only with the embedded AppServer (see `focus._catalog`).
    catalog: Path | None = None
    # The transport reaches the AppServer through this URL instead (a drill's fault proxy).
    appserver_via: str | None = None
    # The host's capability configuration (`lineup.actors.gateway._capability_state`):
    # {"unsupported": [names], "policy": {app_scope: {capability: allow|deny|ask}},
    #  "prompt_timeout_s": float, "run_timeout_s": float, "rate_per_minute": {capability: n}};
    # the gateway decides by it, focus leaves out the tools it makes unusable.
    capabilities: dict[str, Any] = field(default_factory=dict)


@dataclass
class RuntimePlan:
    specs: list[ChildSpec]
    shell_url: str
    appserver_url: str
    info: dict[str, str] = field(default_factory=dict)
    link_wait: float = 0.0  # Supervisor(link_wait=…): see EMBEDDED_LINK_WAIT
    notes: tuple[str, ...] = ()  # lines for the user before the tree starts


@dataclass(frozen=True)
class ShellSocket:
    """How a local program (the drill, the bench, the tests) opens the Shell's WebSocket as
    the Shell does: the URL (never with the token, which the hostbridge refuses in a query),
    the Origin a Shell page has, and the subprotocols that offer the token. For
    trio-websocket: `open_websocket_url(s.url, subprotocols=s.subprotocols,
    extra_headers=s.headers)`."""

    url: str
    origin: str
    subprotocols: list[str]

    @classmethod
    def at(cls, netloc: str, token: str) -> ShellSocket:
        """The socket of the Shell served at `netloc` (`127.0.0.1:PORT`) with `token`."""
        # Here, not at the top: the supervisor loads no actor's protocol (tests/test_layout.py).
        from lineup.hostbridge._shell_frame import SHELL_SUBPROTOCOL, TOKEN_SUBPROTOCOL

        return cls(
            url=f"ws://{netloc}/ws",
            origin=f"http://{netloc}",
            subprotocols=[SHELL_SUBPROTOCOL, TOKEN_SUBPROTOCOL + token],
        )

    @property
    def headers(self) -> list[tuple[bytes, bytes]]:
        return [(b"Origin", self.origin.encode())]


def shell_socket(shell_url: str) -> ShellSocket:
    """The Shell's socket, from the `shell_url` a plan prints (`http://127.0.0.1:PORT/#token=…`)."""
    parts = urlsplit(shell_url)
    return ShellSocket.at(parts.netloc, parts.fragment.removeprefix("token="))


def dev_app(folder: Path) -> dict[str, str]:
    """The registry entry of an unsigned MiniApp package in `folder` (`lineup run --dev-app`):
    its manifest is read, never its code; the code runs only in its sandboxed process."""
    folder = folder.resolve()
    manifest = folder / "manifest.json"
    if not (folder / "__init__.py").is_file() or not manifest.is_file():
        raise ValueError(
            f"{folder}: not a MiniApp package with a manifest.json "
            f"(write one with: lineup app manifest {folder} --out {manifest})"
        )
    # Checked here, not only by focus: a bad manifest is one line now, and its title is text.
    from lineup.sdk.manifest import ManifestInvalid, load_manifest

    try:
        checked = load_manifest(manifest.read_bytes())
    except ManifestInvalid as exc:
        raise ValueError(f"{manifest}: {exc.reason} {exc.path}".rstrip()) from None
    scope = checked.app_scope
    return {
        "app_scope": scope,
        "manifest": str(manifest),
        "entry": f"{folder.name}:",
        "app_path": str(folder.parent),
        "title": f"{checked.title or scope} (dev)",
        "dev": "true",
    }


def _imported(options: RuntimeOptions, dev_apps: list[dict[str, str]]) -> list[dict[str, str]]:
    from ._mcp_import import imported_apps

    taken = {app["app_scope"] for app in (*options.extra_apps, *dev_apps)}
    return [app for app in imported_apps(options.data_dir) if app["app_scope"] not in taken]


def plan_runtime(options: RuntimeOptions) -> RuntimePlan:
    embedded = options.appserver is None
    dev_apps = [dev_app(folder) for folder in options.dev_apps]
    appserver_port = options.appserver_port or (free_port() if embedded else 0)
    appserver_url = options.appserver or f"http://127.0.0.1:{appserver_port}"
    shell = shell_address(options.data_dir, port=options.shell_port, new_token=options.new_token)
    shell_port, token = shell.port, shell.token

    # The children start together, save what must wait for the embedded AppServer to listen
    # (the transport would back off, the demo Agent is ready only once logged in): the rest
    # wait for their peers where it matters already, as every introduction waits until the
    # peer is ready.
    needs_appserver = ("devserver",) if embedded else ()

    def child(
        name: str,
        kind: ActorKind,
        target: str,
        config: dict[str, Any] | None = None,
        *,
        after: tuple[str, ...] = (),
        **kw: Any,
    ) -> ChildSpec:
        return ChildSpec(name, kind, target, config=config or {}, after=after, **kw)

    specs = [
        child(
            "store",
            ActorKind.STORE,
            "lineup.actors.store:StoreActor",
            {"sqlite_synchronous": options.sqlite_synchronous},
        )
    ]
    if embedded:
        specs.append(
            child(
                "devserver",
                ActorKind.DEV,
                "lineup.ops.devserver.actor:DevServerActor",
                {
                    "port_pinned": bool(options.appserver_port),
                    "devserver": {
                        "host": "127.0.0.1",
                        "port": appserver_port,
                        "db": str(options.data_dir / "devserver.db"),
                        "users": [
                            {
                                "username": options.username,
                                "password": options.password,
                                "user_id": f"user-{options.username}",
                                "conversation_id": options.conversation_id,
                                "agent_id": options.agent_id,
                            }
                        ],
                        "agents": [
                            {
                                "agent_id": options.agent_id,
                                "secret": options.agent_secret,
                                "conversation_ids": [options.conversation_id],
                            }
                        ],
                    },
                },
            )
        )
    specs += [
        child(
            "transport",
            ActorKind.TRANSPORT,
            "lineup.actors.transport:TransportActor",
            {
                "appserver": {
                    "url": options.appserver_via or appserver_url,
                    "username": options.username,
                    "password": options.password,
                }
            },
            after=needs_appserver,
        ),
        child("router", ActorKind.ROUTER, "lineup.actors.router:RouterActor"),
        child(
            "focus",
            ActorKind.FOCUS,
            "lineup.actors.focus:FocusActor",
            # The bundled apps are focus's own. `dev`: the embedded AppServer, development,
            # where an install URL may be loopback HTTP.
            {
                # The servers `lineup app import-mcp` kept in this data dir, after this run's
                # own (a --dev-mcp of the same scope is the one that runs).
                "apps": [*options.extra_apps, *dev_apps, *_imported(options, dev_apps)],
                "capabilities": options.capabilities,
                "dev": embedded,
                **(
                    {"catalog": str(options.catalog.absolute()), "catalog_trusted": embedded}
                    if options.catalog is not None
                    else {}
                ),
            },
        ),
        child(
            "gateway",
            ActorKind.GATEWAY,
            "lineup.actors.gateway:GatewayActor",
            {"capabilities": options.capabilities},
        ),
        child(
            "hostbridge",
            ActorKind.HOSTBRIDGE,
            "lineup.hostbridge:HostbridgeActor",
            # `pinned`: the user named the port, so a bind failure stops the tree at once; a
            # port picked here and taken meanwhile is a child's failure a restart may mend.
            {
                "hostbridge": {
                    "port": shell_port,
                    "token": token,
                    "pinned": bool(options.shell_port),
                }
            },
            shutdown_grace=HOSTBRIDGE_GRACE,
        ),
    ]
    # The apps whose process is part of the tree (the system app): MiniApps like any other,
    # confined the same way (DESIGN §8), but always there, where focus starts the others on
    # demand; restarted even after breaking their contract, so the IM never goes dark.
    specs += [
        child(
            f"miniapp:{app.app_scope}",
            ActorKind.MINIAPP,
            "lineup.sdk:MiniAppHost",
            {
                "app": app.entry,
                "instance_id": app.instance_id or app.app_scope,
                # A resident app ships with the runtime: its version is the runtime's.
                "app_version": lineup.__version__,
                "sandbox": {
                    "profile": "miniapp",
                    "app_scope": app.app_scope,
                    "data_dir": str(options.data_dir),
                    "allow_weak": options.allow_weak_sandbox,
                },
            },
            restart_after_misbehaving=True,
        )
        for app in catalogue.RESIDENT
    ]
    if dev_apps:
        # The folders' watcher (a development tool, as the reference AppServer is), once the
        # tree is ready: what it prints (an app an installed one shadows) follows the Shell's URL.
        folders = [
            {"app_scope": app["app_scope"], "folder": str(Path(app["manifest"]).parent)}
            for app in dev_apps
        ]
        specs.append(
            child("devwatch", ActorKind.DEV, DEV_WATCHER, {"dev_apps": folders}, before_ready=False)
        )
    if embedded and options.demo_agent:
        specs.append(
            child(
                "demo-agent",
                ActorKind.DEV,
                "lineup.ops.agent.demo:DemoAgentActor",
                {
                    "demo_agent": {
                        "appserver_url": appserver_url,
                        "agent_id": options.agent_id,
                        "agent_secret": options.agent_secret,
                    }
                },
                restart=Restart.PERMANENT,
                after=needs_appserver,
                before_ready=False,  # a peer of the runtime's, not a part: the tree is ready first
            )
        )
    shell_url = f"http://127.0.0.1:{shell_port}/#token={token}"
    info = {"shell_url": shell_url}
    if embedded:
        info["appserver_url"] = appserver_url
    if options.catalog is not None:
        info["catalog"] = str(options.catalog.absolute())
    if dev_apps:
        info["dev_apps"] = " ".join(app["app_scope"] for app in dev_apps)
    link_wait = EMBEDDED_LINK_WAIT if embedded else 0.0
    notes = () if shell.note is None else (shell.note,)
    return RuntimePlan(specs, shell_url, appserver_url, info, link_wait, notes)
