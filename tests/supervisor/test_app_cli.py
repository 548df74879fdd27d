"""`lineup app install|list|enable|disable|rollback|revoke|remove|default`: the registry of a
running runtime through its control socket (the supervisor relays to focus), as a user runs it:
real subprocesses against the real `lineup run`."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from lineup.actors.kernel.control import (
    InstallRelayRequest,
    ListRelayRequest,
    OperateRelayRequest,
)
from lineup.sdk.protocol import AppOperationInfo
from lineup.supervisor._app_cli import EXIT_USAGE, main, outcome_line


def lineup_app(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lineup", "app", *args, "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        timeout=150,
        stdin=subprocess.DEVNULL,
        check=False,
    )


# ---------------------------------------------------------------------------------- requests


def test_an_install_request_names_exactly_one_source_and_a_path_only_absolute() -> None:
    InstallRelayRequest(operation_id="op", path="/tmp/a.lineup")
    InstallRelayRequest(operation_id="op", url="https://example.org/a.lineup")
    for bad in (
        {},
        {"path": "/tmp/a.lineup", "url": "https://example.org/a.lineup"},
        {"path": "a.lineup"},
    ):
        with pytest.raises(ValidationError):
            InstallRelayRequest(operation_id="op", **bad)


def test_an_operation_carries_a_version_for_revoke_and_only_for_revoke() -> None:
    OperateRelayRequest(operation_id="op", kind="revoke", app_scope="x", version="1.0.0")
    OperateRelayRequest(operation_id="op", kind="disable", app_scope="x")
    with pytest.raises(ValidationError):
        OperateRelayRequest(operation_id="op", kind="revoke", app_scope="x")
    with pytest.raises(ValidationError):
        OperateRelayRequest(operation_id="op", kind="enable", app_scope="x", version="1.0.0")
    with pytest.raises(ValidationError):
        OperateRelayRequest(operation_id="op", kind="upgrade", app_scope="x")  # type: ignore[arg-type]
    assert ListRelayRequest().type == "supervisor.registry.list"


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
    result = subprocess.run(
        [sys.executable, "-m", "lineup", "app", "manifest", "lineup.miniapps.task_dashboard"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert '"app_scope": "task-dashboard"' in result.stdout
