"""The tree `lineup run` plans: the supervisor passes the registry through, names no app."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

import lineup
from lineup.actors.kernel import ActorKind
from lineup.hostbridge._actor import SHELLS_CLOSE_WAIT
from lineup.miniapps import catalogue
from lineup.supervisor._runtime import RuntimeOptions, dev_app, free_port, plan_runtime
from lineup.supervisor._spec import HOSTBRIDGE_GRACE, SHUTDOWN_GRACE, Restart, runtime_specs

EXTRA = {"app_scope": "probe", "manifest": "/m.json", "entry": "probe:Probe", "title": "Probe"}


def test_focus_is_given_only_the_apps_the_options_add(tmp_path: Path) -> None:
    plan = plan_runtime(RuntimeOptions(data_dir=tmp_path, extra_apps=(EXTRA,)))
    focus = next(s for s in plan.specs if s.name == "focus")
    # The bundled ones are the registry's own (`lineup.miniapps.catalogue`). With the
    # embedded AppServer the runtime runs in development (`dev`: loopback install URLs).
    assert focus.config == {"apps": [EXTRA], "capabilities": {}, "dev": True}
    external = plan_runtime(RuntimeOptions(data_dir=tmp_path, appserver="https://as.example"))
    assert next(s for s in external.specs if s.name == "focus").config["dev"] is False


def test_the_hostbridge_has_the_grace_its_shells_need_to_be_sent_their_last_frames(
    tmp_path: Path,
) -> None:
    """On its way out the hostbridge sends each Shell what was queued for it, for at most
    `SHELLS_CLOSE_WAIT`; the supervisor SIGTERMs it after its grace, so the grace is longer, in
    the tree `lineup run` plans and in the one the tests build alike."""
    assert SHELLS_CLOSE_WAIT < HOSTBRIDGE_GRACE
    for specs in (plan_runtime(RuntimeOptions(data_dir=tmp_path)).specs, runtime_specs()):
        hostbridge = next(s for s in specs if s.kind is ActorKind.HOSTBRIDGE)
        assert hostbridge.shutdown_grace == HOSTBRIDGE_GRACE > SHUTDOWN_GRACE


MANIFEST = {
    "format": "lineup.app.v1",
    "app_scope": "hello",
    "version": "1",
    "kind": "installed",
    "host": {"min_version": "0.1.0"},
}


def dev_folder(tmp_path: Path, manifest: Mapping[str, object]) -> Path:
    folder = tmp_path / "hello_dev"
    folder.mkdir(exist_ok=True)
    (folder / "__init__.py").write_text("")
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def test_a_dev_app_is_named_by_its_manifests_title_else_its_scope(tmp_path: Path) -> None:
    assert dev_app(dev_folder(tmp_path, MANIFEST))["title"] == "hello (dev)"
    titled = dev_app(dev_folder(tmp_path, {**MANIFEST, "title": "Hello World"}))
    assert (titled["app_scope"], titled["title"]) == ("hello", "Hello World (dev)")
    # A manifest the runtime would refuse is one line at start, not a title of any text.
    with pytest.raises(ValueError, match=r"manifest_malformed /title$"):
        dev_app(dev_folder(tmp_path, {**MANIFEST, "title": "Hello\nWorld"}))


def test_the_capability_configuration_goes_to_the_gateway_and_to_focus(tmp_path: Path) -> None:
    conf = {"unsupported": ["file.open"], "policy": {"whiteboard": {"artifact.save": "allow"}}}
    plan = plan_runtime(RuntimeOptions(data_dir=tmp_path, capabilities=conf))
    by_name = {s.name: s for s in plan.specs}
    assert by_name["gateway"].config == {"capabilities": conf}
    assert by_name["focus"].config["capabilities"] == conf


def test_the_system_app_runs_as_a_permanent_confined_child_that_misbehaving_does_not_stop(
    tmp_path: Path,
) -> None:
    plan = plan_runtime(RuntimeOptions(data_dir=tmp_path, allow_weak_sandbox=True))
    miniapps = [s for s in plan.specs if s.kind is ActorKind.MINIAPP]
    assert [s.name for s in miniapps] == ["miniapp:chat"]
    (chat,) = miniapps
    assert chat.target == "lineup.sdk:MiniAppHost"
    assert chat.restart is Restart.PERMANENT
    assert chat.restart_after_misbehaving
    assert chat.config == {
        "app": catalogue.SYSTEM_APP.entry,
        "instance_id": "chat",
        "app_version": lineup.__version__,  # it ships with the runtime
        "sandbox": {
            "profile": "miniapp",
            "app_scope": "chat",
            "data_dir": str(tmp_path),
            "allow_weak": True,
        },
    }
    # Listed after every runtime actor, so stopped before them; it starts with them, as its
    # introductions wait until each peer is ready.
    names = [s.name for s in plan.specs]
    assert names.index("miniapp:chat") > names.index("hostbridge")
    assert chat.after == ()


def test_the_runtime_starts_together_but_the_appservers_clients_wait_for_it(
    tmp_path: Path,
) -> None:
    after = {s.name: s.after for s in plan_runtime(RuntimeOptions(data_dir=tmp_path)).specs}
    waiting = {name: names for name, names in after.items() if names}
    assert waiting == {"transport": ("devserver",), "demo-agent": ("devserver",)}
    assert all(names is not None for names in after.values())  # none waits for all before it
    # With a real AppServer there is nothing to wait for.
    remote = plan_runtime(RuntimeOptions(data_dir=tmp_path, appserver="https://appserver.test"))
    assert {s.after for s in remote.specs} == {()}


def test_only_a_tree_with_its_own_appserver_waits_for_the_transports_first_login(
    tmp_path: Path,
) -> None:
    assert plan_runtime(RuntimeOptions(data_dir=tmp_path)).link_wait > 0
    remote = RuntimeOptions(data_dir=tmp_path, appserver="https://appserver.test")
    assert plan_runtime(remote).link_wait == 0


@pytest.mark.parametrize(("shell_port", "appserver_port"), [(0, 0), (40001, 40002)])
def test_a_port_is_pinned_for_its_child_only_when_the_user_named_it(
    tmp_path: Path, shell_port: int, appserver_port: int
) -> None:
    plan = plan_runtime(
        RuntimeOptions(data_dir=tmp_path, shell_port=shell_port, appserver_port=appserver_port)
    )
    specs = {spec.name: spec for spec in plan.specs}
    assert specs["hostbridge"].config["hostbridge"]["pinned"] is bool(shell_port)
    assert specs["devserver"].config["port_pinned"] is bool(appserver_port)


def test_a_free_port_stays_reserved_for_the_listener_it_was_picked_for() -> None:
    """The probe stays bound: nobody else can take the port (not even a plain bind), yet the
    child's listener, with SO_REUSEADDR as hypercorn and trio set it, binds and listens."""
    import errno
    import socket

    port = free_port()
    with socket.socket() as other:
        with pytest.raises(OSError, match="in use") as taken:
            other.bind(("127.0.0.1", port))
        assert taken.value.errno == errno.EADDRINUSE
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen()
    assert free_port() != port
