"""`lineup app install|list|enable|disable|rollback|revoke|remove|default`: the registry of a
running runtime, asked of focus over the channel the supervisor opens for the command, as a
user runs it: real subprocesses against the real `lineup run`. What a command says without a
runtime is the CLI's own `main`, in this process (`support/cli.py`)."""

from __future__ import annotations

import functools
import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio
from pydantic import ValidationError

from lineup.actors.focus.messages import (
    FindInstanceRequest,
    InstanceReply,
    RegistryInstallRequest,
    RegistryListRequest,
    RegistryOperateRequest,
)
from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.actors.kernel.control import IntroduceReply, IntroduceRequest
from lineup.sdk.bundle import SigningKey
from lineup.sdk.protocol import AppOperationInfo, RegistryListReply
from lineup.supervisor._app_cli import EXIT_USAGE, main, outcome_line
from lineup.supervisor._control import control_request, focus_request
from lineup.tests.support.bundles import build_bundle, trust
from lineup.tests.support.cli import lineup
from lineup.tests.support.process import run_app, start_lineup_run

# ---------------------------------------------------------------------------------- requests


def test_an_install_request_names_exactly_one_source_and_a_path_only_absolute() -> None:
    RegistryInstallRequest(operation_id="op", path="/tmp/a.lineup")
    RegistryInstallRequest(operation_id="op", url="https://example.org/a.lineup")
    for bad in (
        {},
        {"path": "/tmp/a.lineup", "url": "https://example.org/a.lineup"},
        {"path": "a.lineup"},
        {"url": "https://example.org/a.lineup", "catalog_file": "a.lineup"},
    ):
        with pytest.raises(ValidationError):
            RegistryInstallRequest(operation_id="op", **bad)


def test_an_operation_carries_a_version_for_revoke_and_only_for_revoke() -> None:
    RegistryOperateRequest(operation_id="op", kind="revoke", app_scope="x", version="1.0.0")
    RegistryOperateRequest(operation_id="op", kind="disable", app_scope="x")
    with pytest.raises(ValidationError):
        RegistryOperateRequest(operation_id="op", kind="revoke", app_scope="x")
    with pytest.raises(ValidationError):
        RegistryOperateRequest(operation_id="op", kind="enable", app_scope="x", version="1.0.0")
    with pytest.raises(ValidationError):
        RegistryOperateRequest(operation_id="op", kind="upgrade", app_scope="x")
    assert RegistryListRequest().type == "focus.registry.list"


def test_the_outcome_line_names_the_operation_and_a_failures_code() -> None:
    def op(**fields: object) -> AppOperationInfo:
        base: dict[str, object] = {
            "operation_id": "op-1",
            "app_scope": "draw-and-guess",
            "kind": "install",
            "state": "completed",
            "version": "1.0.0",
            "created_at": 1.0,
            "updated_at": 2.0,
        }
        return AppOperationInfo.model_validate({**base, **fields})

    assert outcome_line(op()) == "install draw-and-guess 1.0.0: completed"
    failed = op(state="failed", code="digest_mismatch")
    assert outcome_line(failed) == "install draw-and-guess 1.0.0: failed (digest_mismatch)"
    assert outcome_line(op(kind="disable", version=None)) == "disable draw-and-guess: completed"


# ------------------------------------------------------------------------------ without a runtime


def lineup_app(*args: str, data_dir: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`lineup app ARGS [--data-dir DATA_DIR]`, in this process."""
    return lineup("app", *args, *(["--data-dir", str(data_dir)] if data_dir else []))


@pytest.mark.parametrize(
    "args",
    [("list",), ("list", "--json"), ("enable", "whiteboard"), ("revoke", "x", "1.0.0")],
)
def test_without_a_runtime_each_command_says_not_running_and_exits_1(
    data_dir: Path, args: tuple[str, ...]
) -> None:
    result = lineup_app(*args, data_dir=data_dir)
    assert result.returncode == 1
    assert result.stderr == f"lineup: not running (data dir {data_dir})\n"
    assert result.stdout == ""


def test_remove_off_a_terminal_without_yes_is_refused_before_anything_is_sent(
    data_dir: Path,
) -> None:
    # No runtime runs: had it been sent, the answer would be "not running" (exit 1).
    result = lineup_app("remove", "whiteboard", data_dir=data_dir)
    assert result.returncode == EXIT_USAGE
    assert "--yes" in result.stderr and "Traceback" not in result.stderr
    assert "Remove whiteboard" not in result.stdout


def test_remove_asks_the_user_and_a_no_sends_nothing(data_dir: Path) -> None:
    asked: list[str] = []
    err = io.StringIO()

    def answer(question: str) -> bool:
        asked.append(question)
        return False

    code = main(
        ["remove", "whiteboard", "--data-dir", str(data_dir)],
        data_dir_default=data_dir,
        out=io.StringIO(),
        err=err,
        confirm=answer,
    )
    assert asked == ["Remove whiteboard and its data? [y/N] "]
    assert code == 1
    assert "not confirmed" in err.getvalue() and "not running" not in err.getvalue()


@pytest.mark.parametrize("source", ["missing.lineup", "ftp://example.org/a.lineup"])
def test_install_of_no_file_or_another_scheme_is_a_usage_error(data_dir: Path, source: str) -> None:
    result = lineup_app("install", source, data_dir=data_dir)
    assert result.returncode == EXIT_USAGE
    assert result.stderr.startswith("lineup app install: ")
    assert "Traceback" not in result.stderr


def test_the_authoring_commands_still_go_to_the_sdk(data_dir: Path) -> None:
    result = lineup_app("manifest", "lineup.miniapps.task_dashboard")
    assert result.returncode == 0, result.stderr
    assert '"app_scope": "task-dashboard"' in result.stdout


# ------------------------------------------------------------------------------ a real runtime


async def app_main(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    """`lineup app ARGS` through the CLI's own `main`, in this process (in a thread: it waits
    on its socket), against the running runtime."""
    out, err = io.StringIO(), io.StringIO()
    run = functools.partial(main, list(args), data_dir_default=data_dir, out=out, err=err)
    code = await trio.to_thread.run_sync(run)
    argv = ["lineup", "app", *args]
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


async def list_json(data_dir: Path) -> dict[str, Any]:
    result = await app_main("list", "--json", data_dir=data_dir)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert isinstance(document, dict)
    return document


def app_of(document: dict[str, Any], scope: str) -> dict[str, Any] | None:
    return next((app for app in document["apps"] if app["app_scope"] == scope), None)


APP_KEYS = {
    "capabilities",
    "app_scope",
    "title",
    "version",
    "kind",
    "source",
    "enabled",
    "state",
    "predecessor",
    "key_id",
    "removable",
    "operation",
    # Seed 004 §4.3's record (issue 29, item 6).
    "install_state",
    "active_instance_count",
    "installed_at",
    "enabled_at",
}
OPERATION_KEYS = {
    "operation_id",
    "app_scope",
    "kind",
    "state",
    "version",
    "from_version",
    "code",
    "created_at",
    "updated_at",
}


def check_list_shape(document: dict[str, Any]) -> None:
    """The stable document of `lineup app list --json`: RegistryListReply, no message tags."""
    assert set(document) == {"apps", "default_app", "operations", "catalog"}
    assert document["catalog"] == []  # no --catalog
    for app in document["apps"]:
        assert set(app) == APP_KEYS
        assert app["operation"] is None or set(app["operation"]) == OPERATION_KEYS
    for op in document["operations"]:
        assert set(op) == OPERATION_KEYS


def check_records(document: dict[str, Any]) -> None:
    """Seed 004 §4.3's records: the app just installed, enabled since its install, with no
    instance opened yet; the chat, the recovery app, with its one instance."""
    deliver, chat = app_of(document, "deliver"), app_of(document, "chat")
    assert deliver is not None and chat is not None
    assert (deliver["install_state"], deliver["active_instance_count"]) == ("installed", 0)
    assert deliver["enabled_at"] >= deliver["installed_at"] > 0
    assert chat["active_instance_count"] == 1


async def check_table(data_dir: Path) -> None:
    """`lineup app list` without --json: a header, then a row per app."""
    table = await run_app("list", data_dir=data_dir)
    assert table.returncode == 0
    header, *rows = table.stdout.splitlines()
    assert header.split() == [
        "SCOPE", "VERSION", "KIND", "SOURCE", "ENABLED", "STATE", "PREDECESSOR", "OPERATION"
    ]  # fmt: skip
    deliver = ["deliver", "1.0", "installed", "installed", "yes", "active", "-"]
    assert any(row.split()[:7] == deliver for row in rows), rows


async def check_refusals(data_dir: Path) -> None:
    """Each refused operation: its code in the one line on stderr, exit 1; an unknown scope
    (`nosuch`) for every command that names one, and a name that is no app_scope. Through the
    CLI's own `main`, against the running runtime: the test's other steps run `lineup app` as a
    process, and eleven more interpreters were most of its half a minute on a loaded machine."""

    async def refused(args: tuple[str, ...], line: str) -> None:
        out, err = io.StringIO(), io.StringIO()
        run = functools.partial(main, list(args), data_dir_default=data_dir, out=out, err=err)
        code = await trio.to_thread.run_sync(run)
        assert (code, out.getvalue()) == (1, ""), (args, err.getvalue())
        assert err.getvalue() == f"lineup: error: {line}\n", args

    refusals: list[tuple[tuple[str, ...], str]] = [
        (("disable", "chat"), "disable chat: failed (app_protected)"),
        (("remove", "chat", "--yes"), "remove chat: failed (app_protected)"),
        (("rollback", "deliver"), "rollback deliver: failed (no_predecessor)"),
        *(
            ((command, "nosuch"), f"{kind} nosuch: failed (app_not_installed)")
            for command, kind in [
                ("enable", "enable"),
                ("disable", "disable"),
                ("rollback", "rollback"),
                ("default", "set_default"),
            ]
        ),
        (("revoke", "nosuch", "1.0"), "revoke nosuch 1.0: failed (app_not_installed)"),
        (("remove", "nosuch", "--yes"), "remove nosuch: failed (app_not_installed)"),
        (("enable", "No/Such"), "'No/Such' is not an app_scope"),
    ]
    async with trio.open_nursery() as nursery:
        for args, line in refusals:
            nursery.start_soon(refused, args, line)


WAIT = 30.0  # what no answer of a running runtime should come near


def check_focus_alone(data_dir: Path) -> None:
    """A command is introduced to focus and no one else, and may ask focus for the registry
    commands alone: the kernel's ACL, on the real sockets."""
    listed = focus_request(data_dir, RegistryListRequest(), RegistryListReply, timeout=WAIT)
    assert "chat" in {app.app_scope for app in listed.apps}
    with pytest.raises(LineUpError) as denied:
        control_request(data_dir, IntroduceRequest(peer="router"), IntroduceReply, timeout=WAIT)
    assert denied.value.code is ErrorCode.ACL_DENIED
    with pytest.raises(LineUpError) as refused:
        focus_request(data_dir, FindInstanceRequest(app_scope="chat"), InstanceReply, timeout=WAIT)
    assert refused.value.code is ErrorCode.ACL_DENIED


async def check_reads(data_dir: Path) -> None:
    async with trio.open_nursery() as nursery:  # all only read
        nursery.start_soon(check_table, data_dir)
        nursery.start_soon(check_refusals, data_dir)
        nursery.start_soon(trio.to_thread.run_sync, check_focus_alone, data_dir)


async def test_install_list_default_disable_and_remove_through_the_cli(
    data_dir: Path, tmp_path: Path
) -> None:
    """A real `lineup run` and `lineup app` commands beside it: the installs and the table as
    processes of their own, as a user runs them (their interpreter, imports and connection to
    the running tree are what is tested); the lists and the later operations through the
    CLI's own `main` in this process, which is the same code past its imports."""
    key, stranger = SigningKey.generate(), SigningKey.generate()
    trust(data_dir, key.public)
    good = tmp_path / "deliver-1.0.lineup"
    good.write_bytes(build_bundle(tmp_path / "good", key, scope="deliver", version="1.0"))
    untrusted = tmp_path / "deliver-untrusted.lineup"
    untrusted.write_bytes(build_bundle(tmp_path / "bad", stranger, scope="deliver", version="1.0"))
    process = await start_lineup_run(data_dir)
    try:
        refused = await run_app("install", str(untrusted), data_dir=data_dir)
        assert refused.returncode == 1
        assert refused.stderr.endswith(": failed (unknown_key)\n"), refused.stderr
        assert not (data_dir / "bundles" / "deliver").exists()

        # A relative FILE is resolved here: focus never sees the CLI's working directory.
        installed = await run_app("install", good.name, data_dir=data_dir, cwd=tmp_path)
        assert installed.returncode == 0, installed.stderr
        assert installed.stdout == "install deliver 1.0: completed\n"

        document = await list_json(data_dir)
        check_list_shape(document)
        deliver = app_of(document, "deliver")
        assert deliver is not None
        assert {k: deliver[k] for k in ("version", "source", "enabled", "state", "removable")} == {
            "version": "1.0",
            "source": "installed",
            "enabled": True,
            "state": "active",
            "removable": True,
        }
        assert deliver["key_id"] == key.key_id and deliver["predecessor"] is None
        assert deliver["operation"]["kind"] == "install"
        assert deliver["operation"]["state"] == "completed"
        check_records(document)
        chat = app_of(document, "chat")
        assert chat is not None and chat["removable"] is False

        await check_reads(data_dir)

        made_default = await app_main("default", "deliver", data_dir=data_dir)
        assert made_default.returncode == 0, made_default.stdout
        assert (await list_json(data_dir))["default_app"] == "deliver"

        disabled = await app_main("disable", "deliver", data_dir=data_dir)
        assert (disabled.returncode, disabled.stdout) == (0, "disable deliver: completed\n")
        deliver = app_of(await list_json(data_dir), "deliver")
        assert deliver is not None and deliver["enabled"] is False
        assert deliver["enabled_at"] is None  # not enabled: since no time

        removed = await app_main("remove", "deliver", "--yes", "--json", data_dir=data_dir)
        assert removed.returncode == 0, removed.stdout
        operation = json.loads(removed.stdout)
        assert set(operation) == OPERATION_KEYS and operation["state"] == "completed"
        assert app_of(await list_json(data_dir), "deliver") is None
        assert not (data_dir / "bundles" / "deliver").exists()
        assert not (data_dir / "apps" / "deliver").exists()

        gone = await app_main("revoke", "deliver", "1.0", data_dir=data_dir)
        assert gone.returncode == 1
        assert gone.stderr.endswith(": failed (app_not_installed)\n"), gone.stderr
    finally:
        process.kill()
        await process.wait()
