"""The Shell's address per data dir: the same port and token run after run, owner-only on disk,
another port only when that one is taken (and said), a new token only when asked."""

from __future__ import annotations

import socket
import stat
from pathlib import Path

from lineup.supervisor._shell_address import ADDRESS_FILE, shell_address


def test_a_second_run_on_the_same_data_dir_gets_the_same_port_and_token(tmp_path: Path) -> None:
    first = shell_address(tmp_path)
    second = shell_address(tmp_path)
    assert (second.port, second.token) == (first.port, first.token)
    assert first.note is None and second.note is None
    assert len(first.token) >= 43  # 32 random bytes, URL-safe
    mode = stat.S_IMODE((tmp_path / ADDRESS_FILE).stat().st_mode)
    assert mode == 0o600


def test_a_taken_port_is_replaced_and_said_and_the_token_stays(tmp_path: Path) -> None:
    first = shell_address(tmp_path)
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", first.port))
        squatter.listen()
        moved = shell_address(tmp_path)
    assert moved.port != first.port
    assert moved.token == first.token
    assert moved.note is not None and str(first.port) in moved.note
    assert first.token not in moved.note
    assert shell_address(tmp_path).port == moved.port  # where it listens now, next time too


def test_a_new_token_is_made_only_when_asked_and_kept_after(tmp_path: Path) -> None:
    first = shell_address(tmp_path)
    rotated = shell_address(tmp_path, new_token=True)
    assert rotated.token != first.token and rotated.port == first.port
    assert shell_address(tmp_path).token == rotated.token


def test_a_port_the_user_names_is_used_and_kept(tmp_path: Path) -> None:
    first = shell_address(tmp_path)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        named = probe.getsockname()[1]
    pinned = shell_address(tmp_path, port=named)
    assert (pinned.port, pinned.token) == (named, first.token)
    assert shell_address(tmp_path).port == named


def test_a_damaged_file_gives_a_new_address(tmp_path: Path) -> None:
    (tmp_path / ADDRESS_FILE).write_text('{"port": "x", "token": "short"}')
    fresh = shell_address(tmp_path)
    assert fresh.port > 0 and len(fresh.token) >= 43
    assert shell_address(tmp_path).token == fresh.token


def test_a_data_dir_that_cannot_be_written_still_gets_an_address(tmp_path: Path) -> None:
    missing = tmp_path / "absent"
    address = shell_address(missing)
    assert address.port > 0 and address.token
    assert not missing.exists()
