"""`lineup app import-mcp`'s reading of a desktop host's `mcpServers` block, and the store of
the servers' secrets (`_mcp_import`, `_mcp_secrets`): no server is started here (the e2e test
`tests/e2e/test_mcp_import.py` does that)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.supervisor._mcp_import import (
    ImportedServer,
    ImportRefused,
    folder_of,
    forget_server,
    import_server,
    imported_apps,
    servers_of,
)
from lineup.supervisor._mcp_secrets import SecretsUnsafe, env_for, secrets_dir, store
from lineup.supervisor._miniapps import _secrets_of

COMMAND = ["node", "/srv/weather/index.js"]
FOLDER = "/srv/weather"


def test_a_claude_desktop_block_is_read_in_its_order_with_its_env() -> None:
    text = json.dumps(
        {
            "mcpServers": {
                "weather": {"command": "node", "args": ["/a/b.js"], "env": {"KEY": "v"}},
                "files": {"command": "python"},
            },
            "globalShortcut": "Ctrl+Space",  # the rest of the host's config is not ours
        }
    )
    weather, files = servers_of(text)
    assert (weather.name, weather.command, weather.args, dict(weather.env)) == (
        "weather",
        "node",
        ("/a/b.js",),
        {"KEY": "v"},
    )
    assert (files.args, dict(files.env)) == ((), {})


@pytest.mark.parametrize(
    "config",
    [
        "not json",
        "[]",
        {"mcpServers": {}},
        {"servers": {"a": {"command": "x"}}},
        {"mcpServers": {"a": "node"}},
        {"mcpServers": {"a": {"args": []}}},
        {"mcpServers": {"a": {"command": "x", "args": "one"}}},
        {"mcpServers": {"a": {"command": "x", "env": {"K": 1}}}},
        {"mcpServers": {"a": {"command": "x", "env": ["K=v"]}}},
        {"mcpServers": {"a": {"command": "x", "env": {"K=L": "v"}}}},
        {"mcpServers": {"a": {"url": "https://example.com/mcp"}}},
        {"mcpServers": {"a": {"type": "sse", "command": "x"}}},
    ],
)
def test_a_block_that_is_not_a_set_of_stdio_servers_is_refused(config: object) -> None:
    with pytest.raises(ImportRefused):
        servers_of(config if isinstance(config, str) else json.dumps(config))


def test_a_refusal_and_a_repr_never_hold_an_env_value() -> None:
    with pytest.raises(ImportRefused) as refused:
        servers_of(json.dumps({"mcpServers": {"a": {"command": "x", "env": {"K": ["s3cr3t"]}}}}))
    assert "s3cr3t" not in str(refused.value)
    server = ImportedServer("a", "x", (), {"K": "s3cr3t"})
    assert "s3cr3t" not in repr(server)


def test_the_folder_is_the_first_absolute_path_among_the_args(tmp_path: Path) -> None:
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "index.js").write_text("")
    script = ImportedServer("s", "node", ("--flag", str(tmp_path / "build" / "index.js")))
    assert folder_of(script) == tmp_path / "build"
    directory = ImportedServer("s", "uv", ("--directory", str(tmp_path), "run", "w.py"))
    assert folder_of(directory) == tmp_path
    assert folder_of(ImportedServer("s", "npx", ("-y", "@scope/server"))) is None


def test_secrets_are_kept_owner_only_and_given_only_to_the_server_they_were_kept_for(
    tmp_path: Path,
) -> None:
    before = os.umask(0o022)  # a permissive umask: the store must not depend on the user's
    try:
        store(tmp_path, "weather", {"KEY": "v"}, COMMAND, FOLDER)
    finally:
        os.umask(before)
    where = secrets_dir(tmp_path)
    assert stat.S_IMODE(where.stat().st_mode) == stat.S_IMODE(where.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE((where / "weather.json").stat().st_mode) == 0o600
    assert [p.name for p in where.iterdir()] == ["weather.json"]  # no temporary left
    assert env_for(tmp_path, "weather", COMMAND, FOLDER) == {"KEY": "v"}
    # Another command or folder under the same scope (a bundle installed later): nothing.
    assert env_for(tmp_path, "weather", ["node", "/elsewhere.js"], FOLDER) is None
    assert env_for(tmp_path, "weather", COMMAND, "/srv") is None
    assert env_for(tmp_path, "other", COMMAND, FOLDER) is None
    store(tmp_path, "weather", {}, COMMAND, FOLDER)  # imported again without: none kept
    assert env_for(tmp_path, "weather", COMMAND, FOLDER) is None


def test_a_secrets_file_others_may_read_is_refused_not_used(tmp_path: Path) -> None:
    store(tmp_path, "weather", {"KEY": "v"}, COMMAND, FOLDER)
    kept = secrets_dir(tmp_path) / "weather.json"
    kept.chmod(0o640)
    with pytest.raises(SecretsUnsafe):
        env_for(tmp_path, "weather", COMMAND, FOLDER)
    kept.unlink()
    kept.symlink_to(tmp_path / "elsewhere.json")
    (tmp_path / "elsewhere.json").write_text("{}")
    with pytest.raises(SecretsUnsafe):
        env_for(tmp_path, "weather", COMMAND, FOLDER)


def test_the_imported_apps_are_read_back_and_an_unreadable_one_is_left_out(
    tmp_path: Path,
) -> None:
    for scope, body in (
        ("good", {"app_scope": "good", "dev": "true"}),
        ("bad", "{nope"),
        ("whiteboard", {"app_scope": "whiteboard", "dev": "true"}),  # LineUp's own: never
    ):
        (tmp_path / "mcp-import" / scope).mkdir(parents=True)
        text = json.dumps(body) if isinstance(body, dict) else body
        (tmp_path / "mcp-import" / scope / "entry.json").write_text(text)
    assert imported_apps(tmp_path) == ({"app_scope": "good", "dev": "true"},)
    assert imported_apps(tmp_path / "none") == ()


def test_the_supervisor_starts_no_server_whose_secrets_others_may_read(tmp_path: Path) -> None:
    store(tmp_path, "weather", {"KEY": "v"}, COMMAND, FOLDER)
    asked = {"command": COMMAND, "folder": FOLDER}
    assert _secrets_of(tmp_path, "miniapp:weather", asked) == {"KEY": "v"}
    (secrets_dir(tmp_path) / "weather.json").chmod(0o644)
    with pytest.raises(LineUpError) as refused:
        _secrets_of(tmp_path, "miniapp:weather", asked)
    assert refused.value.code is ErrorCode.INVALID_ARGUMENTS


def test_forgetting_takes_only_an_imported_app_by_its_scope(tmp_path: Path) -> None:
    (tmp_path / "mcp-import" / "good").mkdir(parents=True)
    (tmp_path / "mcp-import" / "good" / "entry.json").write_text("{}")
    store(tmp_path, "good", {"KEY": "v"}, COMMAND, FOLDER)
    assert not forget_server(tmp_path, "../mcp-import/good")
    assert not forget_server(tmp_path, "other")
    assert forget_server(tmp_path, "good")
    assert not (tmp_path / "mcp-import" / "good").exists()
    assert not (secrets_dir(tmp_path) / "good.json").exists()


def test_a_server_named_as_an_app_lineup_ships_is_refused(tmp_path: Path) -> None:
    server = ImportedServer("App Registry", "python", (str(tmp_path),))
    with pytest.raises(ImportRefused):
        import_server(server, tmp_path / "rt")
    assert not (tmp_path / "rt").exists()


def test_a_network_that_is_not_host_and_port_is_refused_before_the_server_runs(
    tmp_path: Path,
) -> None:
    server = ImportedServer("weather", "python", (str(tmp_path),))
    with pytest.raises(ImportRefused):
        import_server(server, tmp_path / "rt", network=("api.example.com",))
    assert not (tmp_path / "rt").exists()
