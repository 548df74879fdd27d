"""A desktop host's `mcpServers` block imported as LineUp apps (issue 31): `lineup app
import-mcp` (the real CLI, a real process) lists each server in its sandbox and keeps it in the
data dir, its `env` values as owner-only secrets; the next runtime on that data dir runs it,
and its server, and only its server, sees its secret. The secret is in no manifest, log, audit
row, argv or other file of the data dir. No test output holds the secret: the server answers
its SHA-256 (`tests/support/mcp_server/env_server.py`). The first test runs each command as a
process of its own (`lineup app import-mcp`, `--forget`); the others, about what the command
says and writes, call its `main` in the test's process."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import secrets
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from lineup.supervisor import _app_cli
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.runtime import CONVERSATION, agent_client, start_runtime

SERVER = Path(__file__).resolve().parents[1] / "support" / "mcp_server" / "env_server.py"
VARIABLE = "LINEUP_TEST_TOKEN"
LINEUP = (sys.executable, "-m", "lineup")
pytestmark = pytest.mark.timeout(150)


def _import(config: Path, rt: Path, *more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LINEUP, "app", "import-mcp", str(config), "--data-dir", str(rt), *more],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _main(config: Path, rt: Path, *more: str) -> subprocess.CompletedProcess[str]:
    """`lineup app import-mcp` as `_import` runs it, but in this process."""
    out, err = io.StringIO(), io.StringIO()
    argv = ["import-mcp", str(config), "--data-dir", str(rt), *more]
    code = _app_cli.main(argv, data_dir_default=rt, out=out, err=err)
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def _list(rt: Path) -> dict[str, Any]:
    """`lineup app list --json` of the running runtime, in this process."""
    out = io.StringIO()
    argv = ["list", "--json", "--data-dir", str(rt)]
    assert _app_cli.main(argv, data_dir_default=rt, out=out, err=io.StringIO()) == 0
    listed: dict[str, Any] = json.loads(out.getvalue())
    return listed


def _holding(root: Path, secret: bytes, *, skip: Path) -> list[str]:
    """The files under `root` (but `skip`) that hold `secret`: their names only."""
    return [
        str(path.relative_to(root))
        for path in root.rglob("*")
        if path.is_file() and not path.is_relative_to(skip) and secret in path.read_bytes()
    ]


def _argv_holding(secret: bytes) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if secret in (proc / "cmdline").read_bytes():
                    found.append(int(proc.name))
            except OSError:
                continue  # gone meanwhile, or not ours to read
    return found


async def test_an_imported_servers_secret_reaches_its_server_alone_and_nothing_else(
    data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """About ten seconds by what it proves: real `lineup app import-mcp` commands (each server
    probed in the sandbox), a real tree running both imported servers, and every process's
    argv, the data dir and the logs searched for the secret."""
    caplog.set_level(logging.DEBUG)
    secret = secrets.token_hex(24)
    rt = data_dir / "rt"
    config = data_dir / "claude_desktop_config.json"
    server = {"command": sys.executable, "args": [str(SERVER)]}
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "alpha": {**server, "env": {VARIABLE: secret}},
                    "beta": server,  # another app, the same program: it gets nothing
                }
            }
        )
    )
    done = await trio.to_thread.run_sync(_import, config, rt)
    assert done.returncode == 0, done.stderr
    assert "imported alpha as alpha, 1 secret(s)" in done.stdout
    assert secret not in done.stdout + done.stderr

    kept = rt / "secrets" / "mcp"
    assert stat.S_IMODE(kept.stat().st_mode) == stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE((kept / "alpha.json").stat().st_mode) == 0o600
    assert not (kept / "beta.json").exists()
    manifest = json.loads((rt / "mcp-import" / "alpha" / "manifest.json").read_text())
    assert manifest["kind"] == "mcp" and manifest["mcp"]["command"] == [sys.executable, str(SERVER)]

    want = hashlib.sha256(secret.encode()).hexdigest()
    async with trio.open_nursery() as nursery:
        runtime = await start_runtime(nursery, rt, demo_agent=False)
        agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=40.0)
        revision = await agent.revision_with("alpha.has_env")
        await agent.revision_with("beta.has_env")
        answers = {}
        for scope in ("alpha", "beta"):
            call_id = f"env-{scope}"
            await agent.client.call_tool(
                CONVERSATION, f"{scope}.has_env", {"name": VARIABLE}, revision, call_id=call_id
            )
            answers[scope] = (await agent.terminal(call_id))["payload"]["result"]
        argv = _argv_holding(secret.encode())
        listed = await trio.to_thread.run_sync(_list, rt)
        nursery.cancel_scope.cancel()
    assert answers["alpha"] == {"set": "yes", "sha256": want}
    assert answers["beta"] == {"set": "no", "sha256": ""}
    assert argv == []
    apps = {app["app_scope"]: app for app in listed["apps"]}
    assert (apps["alpha"]["kind"], apps["alpha"]["source"]) == ("mcp", "dev")
    assert apps["alpha"]["title"].endswith("(imported)") and "beta" in apps
    # The database (audit, registry, outbox: WAL included), the manifests, the app logs:
    # everything the runtime wrote, but the secret store itself.
    assert _holding(rt, secret.encode(), skip=kept) == []
    assert secret not in caplog.text

    # Forgotten: the app and its secrets leave the data dir.
    forgot = await trio.to_thread.run_sync(
        lambda: subprocess.run(
            [*LINEUP, "app", "import-mcp", "--forget", "alpha", "--data-dir", str(rt)],
            check=False,
            capture_output=True,
        )
    )
    assert forgot.returncode == 0
    assert not (kept / "alpha.json").exists() and not (rt / "mcp-import" / "alpha").exists()


def test_the_import_refuses_a_block_it_cannot_run_and_says_why(data_dir: Path) -> None:
    rt = data_dir / "rt"
    config = data_dir / "config.json"
    config.write_text(json.dumps({"mcpServers": {"web": {"url": "https://example.com/mcp"}}}))
    refused = _main(config, rt)
    assert refused.returncode == 1
    assert refused.stderr.startswith("lineup app import-mcp: mcpServers.web: a remote server")
    config.write_text(json.dumps({"mcpServers": {"npx": {"command": "npx", "args": ["-y", "x"]}}}))
    refused = _main(config, rt)
    assert refused.returncode == 1
    assert "names no folder of its own" in refused.stderr
    assert not (rt / "mcp-import").exists()


def test_only_the_server_named_is_imported(data_dir: Path) -> None:
    rt = data_dir / "rt"
    config = data_dir / "config.json"
    server = {"command": sys.executable, "args": [str(SERVER)]}
    config.write_text(json.dumps({"mcpServers": {"one": server, "two": server}}))
    missing = _main(config, rt, "--server", "three")
    assert missing.returncode == 1
    done = _main(config, rt, "--server", "two")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (rt / "mcp-import").iterdir()) == ["two"]
    assert os.access(rt / "mcp-import" / "two" / "entry.json", os.R_OK)
